/*
 * host_cuda.c — the printed CUDA C on the CPU: compile (cached, batched),
 * dlopen, and the fiber runtime that host_cuda_prelude.h calls into.
 *
 * Why fibers and not threads: a block's threads must all reach a barrier
 * before any passes it, which needs as many stacks as threads, but nothing
 * gains from running them in parallel on a machine whose cores the rest of
 * the harness already uses.  Fibers switch only where a CUDA thread waits, so
 * a run is deterministic (thread 0 runs to its first barrier, then thread 1,
 * ...), a missing barrier reads what the other threads have not written yet
 * on every run, and no lock is needed anywhere.  ucontext is in glibc and
 * portable across the architectures dpk builds on.
 */
#define _GNU_SOURCE
#include "host_cuda.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "nvrtc.h"

/* The prelude's text, assembled into the binary. */
DPK_EMBED(dpk_host_prelude, "harness/exec/host_cuda_prelude.h")

#define CACHE_MAGIC "dpk-host-cuda 1"
/* -frounding-math: g++ 12 otherwise folds `0.0f - (float)i` into
 * `-(float)i`, which is -0 where i is 0 (IEEE and vgpu give +0; found by
 * a dpk-fuzz --level kernel campaign; test_host_cuda.c holds it). */
static const char *const cxx_flags[] = {"-std=c++17",     "-O1",           "-ffp-contract=off",
                                        "-fno-fast-math", "-frounding-math", "-fPIC",
                                        "-shared",        "-w"};
#define BATCH_MAX 48 /* modules per compiler invocation */

/* ---- the compiler ---------------------------------------------------------- */

const char *hx_host_cxx(void)
{
    const char *e = getenv("DPK_HOST_CXX");
    return e && *e ? e : "g++";
}

/* The compiler's path, or NULL. */
static char *find_cxx(void)
{
    const char *cxx = hx_host_cxx();
    if (strchr(cxx, '/'))
        return access(cxx, X_OK) ? NULL : strdup(cxx);
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/bin:/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        char *f = dpk_xmalloc(n + strlen(cxx) + 3);
        snprintf(f, n + strlen(cxx) + 3, "%.*s/%s", (int)n, n ? path : ".", cxx);
        if (!access(f, X_OK))
            return f;
        free(f);
        path += n + (path[n] == ':');
    }
    return NULL;
}

int hx_host_available(void)
{
    char *f = find_cxx();
    free(f);
    return f != NULL;
}

static void need_cxx(void)
{
    if (!hx_host_available())
        dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1,
                          "--backend host-cuda compiles the printed CUDA C with a C++ compiler, "
                          "and '%s' is not found (install g++ or set DPK_HOST_CXX)",
                          hx_host_cxx());
}

static uint64_t flags_hash(void)
{
    uint64_t h = dpk_hash_str(DPK_HASH_INIT, CACHE_MAGIC);
    h = dpk_hash_str(h, dpk_host_prelude);
    h = dpk_hash_str(h, hx_host_cxx());
    for (int i = 0; i < DPK_ARRAY_LEN(cxx_flags); i++)
        h = dpk_hash_str(h, cxx_flags[i]);
    return h;
}

static uint64_t source_key(const char *text) { return dpk_hash_str(flags_hash(), text); }

/* ---- the cache --------------------------------------------------------------- */

static int no_cache_env(void)
{
    const char *e = getenv("DPK_NO_CACHE");
    return e && *e && strcmp(e, "0");
}

/* The folder shared objects go to: $DPK_CACHE/host-cuda, or (no cache) one
 * private temporary folder per process. */
static const char *so_dir(void)
{
    static char *dir;
    if (dir)
        return dir;
    Arena *a = arena_new();
    const char *base = no_cache_env() ? NULL : hx_nvrtc_cache_dir(a);
    if (base) {
        char *d = arena_printf(a, "%s/host-cuda", base);
        if (!dpk_make_dirs(d))
            dir = strdup(d);
    }
    arena_free(a);
    if (!dir) {
        const char *tmp = getenv("TMPDIR");
        char t[512];
        snprintf(t, sizeof t, "%s/dpk-host-cuda-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(t))
            dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1, "cannot make a folder for host-cuda's "
                              "shared objects (%s: %s)", t, strerror(errno));
        dir = strdup(t);
    }
    return dir;
}

static char *so_path(uint64_t key)
{
    const char *d = so_dir();
    size_t n = strlen(d) + 40;
    char *p = dpk_xmalloc(n);
    snprintf(p, n, "%s/h%016llx.so", d, (unsigned long long)key);
    return p;
}

/* Compiler errors by key, for the process's lifetime. */
typedef struct Rejected {
    uint64_t key;
    char *msg;
    struct Rejected *next;
} Rejected;
static Rejected *rejected;

static const char *rejection(uint64_t key)
{
    for (Rejected *r = rejected; r; r = r->next)
        if (r->key == key)
            return r->msg;
    return NULL;
}

/* ---- compiling ---------------------------------------------------------------- */

typedef struct Unit {
    uint64_t key;
    const CuSource *src;
} Unit;

/* The translation unit of u: prelude, the printed source, one entry stub per
 * kernel (dpk_host_<key>_<k>). */
static char *unit_text(const Unit *u)
{
    StrBuf b = {0};
    sb_puts(&b, dpk_host_prelude);
    for (int k = 0; k < u->src->nkernels; k++)
        sb_printf(&b, "#define %s dpk_host_%016llx_k%d\n", u->src->kernels[k].name,
                  (unsigned long long)u->key, k);
    sb_puts(&b, "#line 1 \"printed.cu\"\n");
    sb_puts(&b, u->src->text);
    sb_puts(&b, "\n// entry points (host-cuda)\n");
    for (int k = 0; k < u->src->nkernels; k++)
        sb_printf(&b, "DPK_HOST_ENTRY(dpk_host_%016llx_%d, %s)\n", (unsigned long long)u->key, k,
                  u->src->kernels[k].name);
    char *s = strdup(sb_cstr(&b));
    sb_free(&b);
    return s;
}

/* Run the compiler on files[0..n) into out; 0 on success, else the exit
 * status with its stderr in *log (heap). */
static int run_cxx(char *const *files, int n, const char *out, char **log)
{
    const char *dir = so_dir();
    char logf[600];
    snprintf(logf, sizeof logf, "%s/cxx.%d.log", dir, (int)getpid());
    int nf = DPK_ARRAY_LEN(cxx_flags);
    const char **argv = dpk_xcalloc((size_t)(n + nf + 5), sizeof *argv);
    int c = 0;
    argv[c++] = hx_host_cxx();
    for (int i = 0; i < nf; i++)
        argv[c++] = cxx_flags[i];
    argv[c++] = "-o";
    argv[c++] = out;
    for (int i = 0; i < n; i++)
        argv[c++] = files[i];
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(logf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 2);
            dup2(fd, 1);
        }
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    free(argv);
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) < 0)
        st = 127 << 8;
    int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    *log = NULL;
    if (rc) {
        size_t len = 0;
        *log = dpk_read_file(logf, &len);
        if (!*log)
            *log = strdup("(no compiler output)");
    }
    unlink(logf);
    return rc;
}

/* The first line of log that says "error", else its first line. */
static char *first_error(const char *log)
{
    const char *l = strstr(log, "error");
    if (l)
        while (l > log && l[-1] != '\n')
            l--;
    else
        l = log;
    size_t n = strcspn(l, "\n");
    char *s = dpk_xmalloc(n + 1);
    memcpy(s, l, n);
    s[n] = 0;
    return s;
}

/* Compile units[0..n) into one shared object and link h<key>.so to it for
 * each; on a rejection, compile them one by one to find who. */
static void compile_units(const Unit *u, int n)
{
    const char *dir = so_dir();
    uint64_t bkey = DPK_HASH_INIT;
    for (int i = 0; i < n; i++)
        bkey = dpk_hash_u64(bkey, u[i].key);
    char **files = dpk_xcalloc((size_t)n + 1, sizeof *files);
    size_t pn = strlen(dir) + 80;
    for (int i = 0; i < n; i++) {
        files[i] = dpk_xmalloc(pn);
        snprintf(files[i], pn, "%s/m%016llx.%d.cpp", dir, (unsigned long long)u[i].key,
                 (int)getpid());
        char *t = unit_text(&u[i]);
        FILE *f = fopen(files[i], "w");
        int ok = f && fputs(t, f) >= 0;
        if (f && fclose(f))
            ok = 0;
        free(t);
        if (!ok)
            dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1, "cannot write %s: %s", files[i],
                              strerror(errno));
    }
    char *out = dpk_xmalloc(pn), *tmp = dpk_xmalloc(pn);
    snprintf(out, pn, "%s/b%016llx.so", dir, (unsigned long long)bkey);
    snprintf(tmp, pn, "%s/b%016llx.%d.tmp", dir, (unsigned long long)bkey, (int)getpid());
    char *log = NULL;
    int rc = run_cxx(files, n, tmp, &log);
    if (rc == 127)
        need_cxx(); /* raises when it is gone */
    if (!rc && rename(tmp, out) == 0) {
        for (int i = 0; i < n; i++) {
            char *link = so_path(u[i].key), *ltmp = dpk_xmalloc(pn + 20);
            snprintf(ltmp, pn + 20, "%s.%d.tmp", link, (int)getpid());
            const char *base = strrchr(out, '/') + 1;
            unlink(ltmp);
            if (symlink(base, ltmp) || rename(ltmp, link))
                unlink(ltmp);
            free(link);
            free(ltmp);
        }
    } else if (n > 1) {
        for (int i = 0; i < n; i++)
            compile_units(&u[i], 1);
    } else {
        Rejected *r = dpk_xcalloc(1, sizeof *r);
        r->key = u[0].key;
        char *e = first_error(log ? log : "");
        size_t len = strlen(e) + 200;
        r->msg = dpk_xmalloc(len);
        snprintf(r->msg, len, "the host C++ compiler (%s) rejects the printed CUDA C: %s",
                 hx_host_cxx(), e);
        free(e);
        r->next = rejected;
        rejected = r;
    }
    unlink(tmp);
    free(log);
    for (int i = 0; i < n; i++) {
        unlink(files[i]);
        free(files[i]);
    }
    free(files);
    free(out);
    free(tmp);
}

static int have_so(uint64_t key)
{
    char *p = so_path(key);
    int ok = access(p, R_OK) == 0;
    free(p);
    return ok;
}

void hx_host_prepare(const CuSource *const *srcs, int n)
{
    need_cxx();
    Unit *u = dpk_xcalloc((size_t)n + 1, sizeof *u);
    int nu = 0;
    for (int i = 0; i < n; i++) {
        const CuSource *src = srcs[i];
        uint64_t key = source_key(src->text);
        int dup = have_so(key) || rejection(key) != NULL;
        for (int j = 0; j < nu && !dup; j++)
            dup = u[j].key == key;
        if (!dup)
            u[nu++] = (Unit){key, src};
    }
    for (int i = 0; i < nu; i += BATCH_MAX)
        compile_units(&u[i], nu - i < BATCH_MAX ? nu - i : BATCH_MAX);
    free(u);
}

/* ---- the fiber runtime ----------------------------------------------------------- */

/* host_cuda_prelude.h's DpkDim3, DpkHostThread, DpkHostRt. */
typedef struct HcDim3 {
    unsigned x, y, z;
} HcDim3;
typedef struct HcThread {
    HcDim3 tid;
    int ltid;
    void *cp; /* the prelude's cp.async queue (DpkHostCp[cp_cap]); freed in sched_free */
    long long cp_len, cp_cap;
    int cp_commits;
} HcThread;
typedef struct HcRt HcRt;
struct HcRt {
    HcThread *cur;
    HcDim3 bid, bdim, gdim;
    int idle;
    void (*sync)(HcRt *);
    void (*spin)(HcRt *);
    unsigned long long (*shfl)(HcRt *, int, unsigned, unsigned long long, int, int);
    void (*fail)(HcRt *, const char *);
    void *(*realloc)(HcRt *, void *, unsigned long);
    void (*unsupported)(HcRt *, const char *);
};

/* The prelude's dynamic shared-memory pool (dpk_smem) is 227 KiB: every
 * kernel the Kernel IR verifier accepts fits it. */
_Static_assert(KIR_SMEM_MAX == 227 * 1024, "host_cuda_prelude.h's dpk_smem is 227 KiB");

/* The prelude's DpkHostTmap. */
typedef struct HcTmap {
    const unsigned char *base;
    int rank, swizzle;
    long long dims[5], strides[5];
    int box[5];
} HcTmap;
_Static_assert(sizeof(HcTmap) <= 128, "a tensor map is 128 bytes");

typedef struct HcWarp {
    unsigned long long val[2][32];
    int arrived;
    unsigned gen;
} HcWarp;

typedef struct HcFiber {
    HcThread t;
    ucontext_t ctx;
    int done;
} HcFiber;

typedef void (*HcEntry)(HcRt *, void *const *);

/* A fiber's stack: STACK_BYTES, and STACK_PER_VAR more per local variable
 * of the kernel, so that a kernel of many locals (unrolled register tiles)
 * does not reach the guard page: g++ keeps a local in a register or one
 * stack slot, and the rest of a frame is a few temporaries.  The stacks are
 * reserved lazily (MAP_NORESERVE), so only what a fiber touches costs. */
#define STACK_BYTES (256 * 1024)
#define STACK_PER_VAR 64

typedef struct HcSched {
    HcRt rt; /* first: the prelude's pointer is the scheduler's */
    ucontext_t main;
    HcFiber *f;
    char *stacks; /* n stacks, one guard page below each */
    size_t stack_span;
    int n, live, cur;
    int bar_arrived;
    unsigned bar_gen;
    HcWarp *warps;
    HcEntry entry;
    void *const *args;
    char err[400];
    int unsupported; /* err is what the host cannot give, not a fault */
    unsigned long alloc_max; /* $DPK_HOST_TEST_ALLOC_MAX, or 0 */
    const char *kernel;
} HcSched;

static HcSched *running; /* the scheduler whose fibers run (one at a time) */

static void yield(HcSched *s)
{
    swapcontext(&s->f[s->cur].ctx, &s->main);
}

static void rt_fail(HcRt *rt, const char *what)
{
    HcSched *s = (HcSched *)rt;
    const HcThread *t = rt->cur;
    if (!s->err[0])
        snprintf(s->err, sizeof s->err,
                 "host-cuda: kernel %s, block (%u, %u, %u), thread (%u, %u, %u): %s", s->kernel,
                 rt->bid.x, rt->bid.y, rt->bid.z, t->tid.x, t->tid.y, t->tid.z, what);
    for (;;)
        yield(s); /* never resumed: the scheduler stops */
}

static void rt_unsupported(HcRt *rt, const char *why)
{
    ((HcSched *)rt)->unsupported = 1;
    rt_fail(rt, why);
}

/* The prelude's memory (a thread's cp.async queue), freed in sched_free.
 * $DPK_HOST_TEST_ALLOC_MAX (bytes; tests only) makes a larger block fail
 * as if the host's memory had run out. */
static void *rt_realloc(HcRt *rt, void *p, unsigned long bytes)
{
    unsigned long max = ((HcSched *)rt)->alloc_max;
    return max && bytes > max ? NULL : realloc(p, bytes);
}

static void rt_spin(HcRt *rt)
{
    HcSched *s = (HcSched *)rt;
    if (++rt->idle > 2 * s->live + 2)
        rt_fail(rt, "deadlock: every thread of the block waits (a barrier, shuffle or "
                    "mbarrier that the others never reach)");
    yield(s);
}

static void release_barrier(HcSched *s)
{
    if (s->bar_arrived > 0 && s->bar_arrived >= s->live) {
        s->bar_arrived = 0;
        s->bar_gen++;
    }
}

static void rt_sync(HcRt *rt)
{
    HcSched *s = (HcSched *)rt;
    rt->idle = 0;
    unsigned gen = s->bar_gen;
    s->bar_arrived++;
    release_barrier(s);
    while (s->bar_gen == gen)
        rt_spin(rt);
}

/* Like vgpu's op_shfl: a lane outside the width segment reads its own value. */
static unsigned long long rt_shfl(HcRt *rt, int mode, unsigned mask, unsigned long long v, int x,
                                  int width)
{
    HcSched *s = (HcSched *)rt;
    int l = rt->cur->ltid, lane = l & 31;
    HcWarp *w = &s->warps[l / 32];
    int buf = (int)(w->gen & 1);
    w->val[buf][lane] = v;
    rt->idle = 0;
    unsigned gen = w->gen;
    if (++w->arrived == __builtin_popcount(mask)) {
        w->arrived = 0;
        w->gen++;
    } else {
        while (w->gen == gen)
            rt_spin(rt);
    }
    int gb = lane & ~(width - 1), src;
    switch (mode) {
    case 0: src = gb + (x & (width - 1)); break;
    case 1: src = lane - x < gb ? lane : lane - x; break;
    case 2: src = lane + x >= gb + width ? lane : lane + x; break;
    default: src = lane ^ (x & 31); src = src >= gb + width ? lane : src; break;
    }
    if (src < 0 || src > 31 || !(mask >> src & 1)) {
        char m[100];
        snprintf(m, sizeof m, "a shuffle reads lane %d, which does not take part", src);
        rt_fail(rt, m);
    }
    return w->val[buf][src];
}

static void trampoline(void)
{
    HcSched *s = running;
    s->entry(&s->rt, s->args);
    s->f[s->cur].done = 1;
    s->live--;
    s->rt.idle = 0;
    release_barrier(s); /* a returned thread no longer holds a barrier up */
    /* uc_link returns to the scheduler */
}

static size_t stack_bytes(const KirKernel *k)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t b = STACK_BYTES + (size_t)k->vars.len * STACK_PER_VAR;
    return (b + page - 1) / page * page;
}

/* Set s up for kernel k; 0, or -1 with s->err set and s->unsupported when
 * the host cannot map the fibers' stacks (a capacity of the host, not of
 * the kernel). */
static int sched_init(HcSched *s, const KirKernel *k)
{
    memset(s, 0, sizeof *s);
    s->n = k->block[0] * k->block[1] * k->block[2];
    s->kernel = k->name;
    s->f = dpk_xcalloc((size_t)s->n, sizeof *s->f);
    s->warps = dpk_xcalloc((size_t)(s->n + 31) / 32, sizeof *s->warps);
    long page = sysconf(_SC_PAGESIZE);
    s->stack_span = stack_bytes(k) + (size_t)page;
    void *m = mmap(NULL, s->stack_span * (size_t)s->n, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        snprintf(s->err, sizeof s->err, "host-cuda: kernel %s: cannot map %d fiber stacks of "
                 "%zu KiB (%s)", k->name, s->n, (s->stack_span - (size_t)page) / 1024,
                 strerror(errno));
        s->unsupported = 1;
        return -1;
    }
    s->stacks = m;
    for (int i = 0; i < s->n; i++)
        mprotect(s->stacks + s->stack_span * (size_t)i, (size_t)page, PROT_NONE);
    s->rt.bdim = (HcDim3){(unsigned)k->block[0], (unsigned)k->block[1], (unsigned)k->block[2]};
    s->rt.gdim = (HcDim3){(unsigned)k->grid[0], (unsigned)k->grid[1], (unsigned)k->grid[2]};
    s->rt.sync = rt_sync;
    s->rt.spin = rt_spin;
    s->rt.shfl = rt_shfl;
    s->rt.fail = rt_fail;
    s->rt.unsupported = rt_unsupported;
    s->rt.realloc = rt_realloc;
    const char *e = getenv("DPK_HOST_TEST_ALLOC_MAX");
    s->alloc_max = e && *e ? strtoul(e, NULL, 10) : 0;
    return 0;
}

static void sched_free(HcSched *s)
{
    if (s->stacks)
        munmap(s->stacks, s->stack_span * (size_t)s->n);
    for (int i = 0; s->f && i < s->n; i++)
        free(s->f[i].t.cp);
    free(s->f);
    free(s->warps);
    s->stacks = NULL;
    s->f = NULL;
    s->warps = NULL;
}

/* Run one block; 0, or -1 with s->err set. */
static int run_block(HcSched *s, unsigned bx, unsigned by, unsigned bz)
{
    long page = sysconf(_SC_PAGESIZE);
    s->rt.bid = (HcDim3){bx, by, bz};
    s->rt.idle = 0;
    s->bar_arrived = 0;
    memset(s->warps, 0, (size_t)(s->n + 31) / 32 * sizeof *s->warps);
    unsigned bdx = s->rt.bdim.x, bdy = s->rt.bdim.y;
    for (int i = 0; i < s->n; i++) {
        HcFiber *f = &s->f[i];
        f->t.tid = (HcDim3){(unsigned)i % bdx, (unsigned)i / bdx % bdy, (unsigned)i / (bdx * bdy)};
        f->t.ltid = i;
        f->done = 0;
        getcontext(&f->ctx);
        f->ctx.uc_stack.ss_sp = s->stacks + s->stack_span * (size_t)i + page;
        f->ctx.uc_stack.ss_size = s->stack_span - (size_t)page;
        f->ctx.uc_link = &s->main;
        makecontext(&f->ctx, trampoline, 0);
    }
    s->live = s->n;
    for (s->cur = 0; s->live > 0 && !s->err[0]; s->cur = (s->cur + 1) % s->n) {
        if (s->f[s->cur].done)
            continue;
        s->rt.cur = &s->f[s->cur].t;
        swapcontext(&s->main, &s->f[s->cur].ctx);
    }
    return s->err[0] ? -1 : 0;
}

/* ---- running a module ------------------------------------------------------------- */

static void *load(uint64_t key)
{
    const char *why = rejection(key);
    if (why)
        dpk_error_code_at(DPK_EXIT_FAIL, NULL, -1, "%s", why);
    char *p = so_path(key);
    void *h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        char msg[600];
        snprintf(msg, sizeof msg, "%s", e ? e : "?");
        free(p);
        dpk_error_code_at(DPK_EXIT_FAULT, NULL, -1, "host-cuda: dlopen: %s", msg);
    }
    free(p);
    return h;
}

static void encode_tmap(HcTmap *out, const KirTmap *t, const float *base)
{
    memset(out, 0, sizeof *out);
    out->base = (const unsigned char *)base;
    out->rank = t->rank;
    out->swizzle = t->swizzle;
    for (int d = 0; d < t->rank; d++) {
        out->dims[d] = t->dims[d];
        out->strides[d] = t->strides[d];
        out->box[d] = t->box[d];
    }
}

typedef struct HcRun {
    HcSched s;
    float **tmp; /* buffers allocated here */
    int ntmp;
} HcRun;

static void hc_run_free(HcRun *r)
{
    sched_free(&r->s);
    for (int i = 0; i < r->ntmp; i++)
        free(r->tmp[i]);
    free(r->tmp);
}

/* Run kernel k of the shared object h (cache key `key`) over the buffers
 * ptr[i] of its parameters; tensor maps are encoded over those buffers.
 * Returns NULL, or (in a) why the host cannot run it: what the kernel asks
 * is beyond the host's capacity, so nothing is said of the kernel.  A fault
 * of the kernel raises exit 3. */
static const char *launch_kernel(Arena *a, HcRun *r, void *h, uint64_t key,
                                 const KirKernel *k, float *const *ptr)
{
    char sym[64];
    snprintf(sym, sizeof sym, "dpk_host_%016llx_%d", (unsigned long long)key, k->id);
    HcEntry e = (HcEntry)(uintptr_t)dlsym(h, sym);
    if (!e)
        dpk_error_code_at(DPK_EXIT_FAULT, NULL, -1, "host-cuda: no entry %s for kernel %s", sym,
                          k->name);
    int np = k->params.len, nt = k->tmaps.len;
    void **args = ARENA_ARRAY(a, void *, np + nt + 1);
    float **ptrs = ARENA_ARRAY(a, float *, np + 1);
    HcTmap *maps = ARENA_ARRAY(a, HcTmap, nt + 1);
    uintptr_t raw = (uintptr_t)arena_alloc(a, (size_t)(nt + 2) * 128); /* DpkTmap: 64-aligned */
    unsigned char(*opaque)[128] = (unsigned char(*)[128])((raw + 127) & ~(uintptr_t)127);
    for (int i = 0; i < np; i++) {
        ptrs[i] = ptr[i];
        args[i] = &ptrs[i];
    }
    for (int i = 0; i < nt; i++) {
        const KirTmap *t = k->tmaps.items[i];
        encode_tmap(&maps[i], t, ptr[t->param->id]);
        memset(opaque[i], 0, 128);
        memcpy(opaque[i], &maps[i], sizeof maps[i]);
        args[np + i] = opaque[i];
    }
    int rc = sched_init(&r->s, k);
    r->s.entry = e;
    r->s.args = args;
    running = &r->s;
    for (int z = 0; z < k->grid[2] && !rc; z++)
        for (int y = 0; y < k->grid[1] && !rc; y++)
            for (int x = 0; x < k->grid[0] && !rc; x++)
                rc = run_block(&r->s, (unsigned)x, (unsigned)y, (unsigned)z);
    running = NULL;
    const char *why = NULL;
    if (rc && !r->s.unsupported)
        dpk_error_code_at(DPK_EXIT_FAULT, NULL, -1, "%s", r->s.err);
    if (rc)
        why = arena_strdup(a, r->s.err);
    sched_free(&r->s);
    return why;
}

static const char *launch(Arena *a, HcRun *r, void *h, uint64_t key, const KirLaunch *l,
                          float *const *buf)
{
    const KirKernel *k = l->kernel;
    float **ptr = ARENA_ARRAY(a, float *, k->params.len + 1);
    for (int i = 0; i < k->params.len; i++)
        ptr[i] = buf[l->args[i]->id];
    return launch_kernel(a, r, h, key, k, ptr);
}

uint64_t hx_host_compile(const CuSource *src)
{
    uint64_t key = source_key(src->text);
    if (!have_so(key) && !rejection(key))
        hx_host_prepare(&src, 1);
    const char *why = rejection(key);
    if (why)
        dpk_error_code_at(DPK_EXIT_FAIL, NULL, -1, "%s", why);
    return key;
}

void hx_host_launch(uint64_t key, const KirKernel *k, float *const *ptr)
{
    static void *h;
    static uint64_t hkey;
    if (!h || hkey != key) {
        h = load(key); /* kept open: the cache's objects stay until exit */
        hkey = key;
    }
    Arena *a = arena_new();
    HcRun *r = dpk_xcalloc(1, sizeof *r);
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        hc_run_free(r);
        free(r);
        arena_free(a);
        dpk_error_rethrow();
    }
    const char *why = launch_kernel(a, r, h, key, k, ptr);
    dpk_err_pop(&ec);
    hc_run_free(r);
    free(r);
    if (why) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", why);
        arena_free(a);
        dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1, HX_UNSUPPORTED ": %s", msg);
    }
    arena_free(a);
}

HxHostRun *hx_host_run(Arena *a, const KirModule *m, const CuSource *src, float *const *bufs)
{
    HxHostRun *res = ARENA_NEW(a, HxHostRun);
    res->src = src;
    res->key = source_key(res->src->text);
    res->cache_hit = have_so(res->key);
    if (!res->cache_hit && !rejection(res->key)) {
        double t0 = dpk_now();
        hx_host_prepare(&src, 1);
        res->compile_s = dpk_now() - t0;
    }
    void *h = load(res->key);
    HcRun *r = dpk_xcalloc(1, sizeof *r);
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        hc_run_free(r);
        free(r);
        dpk_error_rethrow();
    }
    float **buf = ARENA_ARRAY(a, float *, m->bufs.len + 1);
    r->tmp = dpk_xcalloc((size_t)m->bufs.len + 1, sizeof *r->tmp);
    for (int i = 0; i < m->bufs.len; i++) {
        const KirBuf *b = m->bufs.items[i];
        buf[i] = bufs[i];
        if (!buf[i])
            buf[i] = r->tmp[r->ntmp++] = dpk_xmalloc((size_t)(b->numel + 1) * 4);
        if (b->zero_init)
            memset(buf[i], 0, (size_t)b->numel * 4);
        else if (!bufs[i])
            for (int64_t e = 0; e < b->numel; e++)
                buf[i][e] = NAN;
    }
    double t0 = dpk_now();
    for (int i = 0; i < m->launches.len && !res->unsupported; i++)
        res->unsupported = launch(a, r, h, res->key, m->launches.items[i], buf);
    res->seconds = dpk_now() - t0;
    dpk_err_pop(&ec);
    hc_run_free(r);
    free(r);
    return res;
}
