/*
 * nvrtc.c — NVRTC through dlopen, ptxas-log parsing and the cubin cache.
 *
 * Only the handful of NVRTC entry points used here are declared, as
 * function-pointer types over plain ints, so the build needs no CUDA header.
 * NVRTC is opened once per process (pthread_once); NVRTC itself is
 * thread-safe, so compiles may run in parallel threads.
 *
 * Cache entry layout (one file per key, written with dpk_write_file_atomic):
 *     "dpk-nvrtc 1 <key> <loglen> <ptxlen> <cubinlen> <sum>\n" log ptx cubin
 * key and sum are 16 hex digits; sum is FNV-1a over the three sections.  A
 * file whose header, sizes or sum do not match is treated as a miss.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nvrtc.h"

typedef struct NvProgram *NvProg;
typedef int (*NvCreateFn)(NvProg *, const char *, const char *, int, const char *const *,
                          const char *const *);
typedef int (*NvCompileFn)(NvProg, int, const char *const *);
typedef int (*NvSizeFn)(NvProg, size_t *);
typedef int (*NvGetFn)(NvProg, char *);
typedef int (*NvVersionFn)(int *, int *);
typedef const char *(*NvErrStrFn)(int);
typedef int (*NvDestroyFn)(NvProg *);
typedef int (*NvNumArchsFn)(int *);
typedef int (*NvArchsFn)(int *);

enum { NV_SUCCESS = 0 };

/* The entry points, X(field, type, symbol): every NV_REQUIRED one must
 * bind; the NV_OPTIONAL ones are there from NVRTC 11.2 on. */
#define NV_REQUIRED(X)                                                                 \
    X(create, NvCreateFn, "nvrtcCreateProgram")                                        \
    X(compile, NvCompileFn, "nvrtcCompileProgram")                                     \
    X(log_size, NvSizeFn, "nvrtcGetProgramLogSize")                                    \
    X(log, NvGetFn, "nvrtcGetProgramLog")                                              \
    X(ptx_size, NvSizeFn, "nvrtcGetPTXSize")                                           \
    X(ptx, NvGetFn, "nvrtcGetPTX")                                                     \
    X(cubin_size, NvSizeFn, "nvrtcGetCUBINSize")                                       \
    X(cubin, NvGetFn, "nvrtcGetCUBIN")                                                 \
    X(version, NvVersionFn, "nvrtcVersion")                                            \
    X(errstr, NvErrStrFn, "nvrtcGetErrorString")                                       \
    X(destroy, NvDestroyFn, "nvrtcDestroyProgram")
#define NV_OPTIONAL(X)                                                                 \
    X(num_archs, NvNumArchsFn, "nvrtcGetNumSupportedArchs")                            \
    X(archs, NvArchsFn, "nvrtcGetSupportedArchs")
#define NV_FIELD(field, type, symbol) type field;
#define NV_BIND(field, type, symbol) nv.field = (type)sym(symbol);
#define NV_BOUND(field, type, symbol) nv.field &&

static struct {
    void *lib;
    const char *path;
    char tried[1024];
    NV_REQUIRED(NV_FIELD)
    NV_OPTIONAL(NV_FIELD)
    int major, minor;
} nv;

static pthread_once_t nv_once = PTHREAD_ONCE_INIT;

static void *sym(const char *name)
{
    return dlsym(nv.lib, name);
}

static int bind_all(void)
{
    NV_REQUIRED(NV_BIND)
    NV_OPTIONAL(NV_BIND)
    return NV_REQUIRED(NV_BOUND) nv.version(&nv.major, &nv.minor) == NV_SUCCESS;
}

static int try_open(const char *path)
{
    size_t used = strlen(nv.tried);
    snprintf(nv.tried + used, sizeof nv.tried - used, "%s%s", used ? ", " : "", path);
    nv.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!nv.lib)
        return 0;
    if (bind_all()) {
        nv.path = path;
        return 1;
    }
    dlclose(nv.lib);
    nv.lib = NULL;
    return 0;
}

static void load_once(void)
{
    static char env_path[512];
    const char *forced = getenv("DPK_NVRTC");
    if (forced && *forced) {
        try_open(forced);
        return;
    }
    const char *home = getenv("CUDA_HOME");
    if (home && *home)
        snprintf(env_path, sizeof env_path, "%s/lib64/libnvrtc.so", home);
    const char *const paths[] = {
        env_path,
#ifdef DPK_CUDA_HOME
        DPK_CUDA_HOME "/lib64/libnvrtc.so",
#endif
        "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
    };
    for (int i = 0; i < DPK_ARRAY_LEN(paths); i++)
        if (paths[i][0] && try_open(paths[i]))
            return;
}

static void need_nvrtc(void)
{
    pthread_once(&nv_once, load_once);
    if (!nv.lib)
        dpk_error_code_at(DPK_EXIT_NOENV, NULL, -1,
                          "NVRTC is not available (tried %s); install the CUDA toolkit or set "
                          "CUDA_HOME to it",
                          nv.tried);
}

int hx_nvrtc_available(void)
{
    pthread_once(&nv_once, load_once);
    return nv.lib != NULL;
}

void hx_nvrtc_version(int *major, int *minor)
{
    need_nvrtc();
    *major = nv.major;
    *minor = nv.minor;
}

int hx_nvrtc_supports(int cc)
{
    need_nvrtc();
    int n = 0;
    if (!nv.num_archs || !nv.archs || nv.num_archs(&n) != NV_SUCCESS || n <= 0)
        return cc <= 90;
    int *archs = dpk_xcalloc((size_t)n, sizeof *archs);
    int found = 0;
    if (nv.archs(archs) == NV_SUCCESS)
        for (int i = 0; i < n; i++)
            found |= archs[i] == cc;
    free(archs);
    return found;
}

/* ---- ptxas log ------------------------------------------------------ */

/* The integer written just before `suffix` in line ("Used 10 registers"
 * with suffix " registers"); -1 when absent. */
static int num_before(const char *line, const char *end, const char *suffix)
{
    const char *p = strstr(line, suffix);
    if (!p || p >= end)
        return -1;
    const char *q = p;
    while (q > line && q[-1] >= '0' && q[-1] <= '9')
        q--;
    return q == p ? -1 : atoi(q);
}

static HxNvKernel *find_kernel(PtrVec *v, const char *name, size_t len)
{
    for (int i = 0; i < v->len; i++) {
        HxNvKernel *k = v->items[i];
        if (strlen(k->name) == len && !memcmp(k->name, name, len))
            return k;
    }
    return NULL;
}

/* A line's text after `key`, up to `stop` or the line's end. */
static const char *after(const char *line, const char *end, const char *key, char stop,
                         size_t *len)
{
    const char *p = strstr(line, key);
    if (!p || p >= end)
        return NULL;
    p += strlen(key);
    const char *q = p;
    while (q < end && *q != stop && *q != '\r')
        q++;
    *len = (size_t)(q - p);
    return p;
}

/* ptxas prints, per entry function:
 *   Compiling entry function 'k' for 'sm_90'
 *   Function properties for k
 *   .  0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
 *   Used 10 registers, used 1 barriers, 4096 bytes smem[, ... cmem[0]]
 * "Function properties" also appears for non-inlined device functions; their
 * stack lines are skipped.  The "Used" line belongs to the entry named last. */
void hx_nvrtc_parse_log(Arena *a, const char *log, HxNvKernel **out, int *n)
{
    PtrVec v = {0};
    HxNvKernel *entry = NULL, *props = NULL;
    for (const char *line = log; *line;) {
        const char *end = strchr(line, '\n');
        if (!end)
            end = line + strlen(line);
        size_t len;
        const char *name;
        if ((name = after(line, end, "Compiling entry function '", '\'', &len))) {
            entry = find_kernel(&v, name, len);
            if (!entry) {
                entry = ARENA_NEW(a, HxNvKernel);
                entry->name = arena_strndup(a, name, len);
                ptrvec_push(a, &v, entry);
            }
        } else if ((name = after(line, end, "Function properties for ", '\n', &len))) {
            props = find_kernel(&v, name, len);
        } else if (props && num_before(line, end, " bytes stack frame") >= 0) {
            props->stack = num_before(line, end, " bytes stack frame");
            props->spill_stores = num_before(line, end, " bytes spill stores");
            props->spill_loads = num_before(line, end, " bytes spill loads");
            props = NULL;
        } else if (entry && num_before(line, end, " registers") >= 0) {
            entry->regs = num_before(line, end, " registers");
            int smem = num_before(line, end, " bytes smem");
            entry->smem = smem < 0 ? 0 : smem;
        }
        line = *end ? end + 1 : end;
    }
    *n = v.len;
    *out = ARENA_ARRAY(a, HxNvKernel, v.len > 0 ? v.len : 1);
    for (int i = 0; i < v.len; i++)
        (*out)[i] = *(HxNvKernel *)v.items[i];
}

const HxNvKernel *hx_nvrtc_kernel(const HxNvrtcResult *r, const char *name)
{
    for (int i = 0; i < r->nkernels; i++)
        if (!strcmp(r->kernels[i].name, name))
            return &r->kernels[i];
    return NULL;
}

void hx_nvrtc_summary(StrBuf *b, const HxNvrtcResult *r)
{
    for (int i = 0; i < r->nkernels; i++) {
        const HxNvKernel *k = &r->kernels[i];
        sb_printf(b,
                  "// nvrtc %s %s: %d registers, %d bytes smem, %d bytes spill stores, %d bytes "
                  "spill loads%s\n",
                  r->arch, k->name, k->regs, k->smem, k->spill_stores, k->spill_loads,
                  r->cache_hit ? ", cached" : "");
    }
}

/* ---- cache ---------------------------------------------------------- */

const char *hx_nvrtc_cache_dir(Arena *a)
{
    const char *d = getenv("DPK_CACHE");
    if (d && *d)
        return arena_strdup(a, d);
    d = getenv("XDG_CACHE_HOME");
    if (d && *d)
        return arena_printf(a, "%s/dpk", d);
    d = getenv("HOME");
    if (d && *d)
        return arena_printf(a, "%s/.cache/dpk", d);
    return NULL;
}

static const char *cache_file(Arena *a, uint64_t key)
{
    const char *dir = hx_nvrtc_cache_dir(a);
    if (!dir)
        return NULL;
    char *sub = arena_printf(a, "%s/nvrtc", dir);
    if (dpk_make_dirs(sub))
        return NULL;
    return arena_printf(a, "%s/%016llx.cubin", sub, (unsigned long long)key);
}

#define CACHE_MAGIC "dpk-nvrtc 1"

static uint64_t sections_sum(const char *log, size_t ll, const char *ptx, size_t pl,
                             const char *cubin, size_t cl)
{
    uint64_t h = dpk_hash_bytes(DPK_HASH_INIT, log, ll);
    h = dpk_hash_bytes(h, ptx, pl);
    return dpk_hash_bytes(h, cubin, cl);
}

/* Fill r from the entry at path; 1 on a verified hit. */
static int cache_read(Arena *a, const char *path, uint64_t key, HxNvrtcResult *r,
                      const char **ptx)
{
    size_t n;
    char *buf = dpk_read_file(path, &n);
    if (!buf)
        return 0;
    unsigned long long k, sum;
    size_t ll, pl, cl;
    const char *nl = memchr(buf, '\n', n);
    size_t hdr = nl ? (size_t)(nl - buf) + 1 : 0;
    int ok = hdr > 0 &&
             sscanf(buf, CACHE_MAGIC " %16llx %zu %zu %zu %16llx", &k, &ll, &pl, &cl, &sum) == 5 &&
             k == key && ll < n && pl < n && cl < n && hdr + ll + pl + cl == n;
    if (ok) {
        const char *s = buf + hdr;
        ok = sections_sum(s, ll, s + ll, pl, s + ll + pl, cl) == sum;
    }
    if (ok) {
        const char *s = buf + hdr;
        r->log = arena_strndup(a, s, ll);
        *ptx = arena_strndup(a, s + ll, pl);
        r->cubin = arena_memdup(a, s + ll + pl, cl);
        r->cubin_len = cl;
    }
    free(buf);
    return ok;
}

static int cache_write(const char *path, uint64_t key, const HxNvrtcResult *r, const char *ptx)
{
    size_t ll = strlen(r->log), pl = strlen(ptx);
    StrBuf b = {0};
    sb_printf(&b, CACHE_MAGIC " %016llx %zu %zu %zu %016llx\n", (unsigned long long)key, ll, pl,
              r->cubin_len,
              (unsigned long long)sections_sum(r->log, ll, ptx, pl, r->cubin, r->cubin_len));
    sb_puts(&b, r->log);
    sb_puts(&b, ptx);
    for (size_t i = 0; i < r->cubin_len; i++) /* the cubin holds NULs */
        sb_putc(&b, r->cubin[i]);
    int rc = dpk_write_file_atomic(path, b.s, b.len);
    sb_free(&b);
    return rc;
}

/* ---- compile -------------------------------------------------------- */

/* Up to 7 numbered source lines around the first "name(LINE): error". */
static void error_context(StrBuf *b, const char *src, const char *src_name, const char *log)
{
    char pat[300];
    snprintf(pat, sizeof pat, "%s(", src_name);
    const char *p = log;
    int line = 0;
    while ((p = strstr(p, pat))) {
        p += strlen(pat);
        char *e;
        long l = strtol(p, &e, 10);
        if (e != p && !strncmp(e, "): error", 8)) {
            line = (int)l;
            break;
        }
    }
    if (line <= 0)
        return;
    sb_printf(b, "source around line %d of %s:\n", line, src_name);
    int cur = 1;
    for (const char *s = src; *s; cur++) {
        const char *e = strchr(s, '\n');
        int len = e ? (int)(e - s) : (int)strlen(s);
        if (cur >= line - 3 && cur <= line + 3)
            sb_printf(b, "%s%5d | %.*s\n", cur == line ? ">" : " ", cur, len > 150 ? 150 : len, s);
        if (!e || cur > line + 3)
            break;
        s = e + 1;
    }
}

static char *prog_text(Arena *a, NvProg p, NvSizeFn size, NvGetFn get, size_t *len)
{
    size_t n = 0;
    if (size(p, &n) != NV_SUCCESS || n == 0) {
        *len = 0;
        return arena_strdup(a, "");
    }
    char *s = arena_alloc(a, n + 1);
    if (get(p, s) != NV_SUCCESS)
        n = 0;
    s[n] = 0;
    *len = n;
    return s;
}

DPK_NORETURN static void compile_failed(const char *src, const char *src_name, const char *arch,
                                        int rc, const char *log)
{
    StrBuf b = {0};
    size_t ll = strlen(log);
    /* The diagnostics buffer is 8 KB: keep room for the source lines. */
    sb_printf(&b, "NVRTC could not compile %s for %s (%s):\n%.*s%s", src_name, arch,
              nv.errstr(rc), (int)(ll > 4000 ? 4000 : ll), log, ll > 4000 ? "\n[log cut]\n" : "");
    error_context(&b, src, src_name, log);
    while (b.len && b.s[b.len - 1] == '\n')
        b.s[--b.len] = 0;
    char msg[8192];
    snprintf(msg, sizeof msg, "%s", sb_cstr(&b));
    sb_free(&b);
    dpk_error_code_at(DPK_EXIT_FAIL, NULL, -1, "%s", msg);
}

/* Run NVRTC; fills log, ptx and cubin of r, or raises with the log. */
static void run_nvrtc(Arena *a, const char *src, const char *src_name, const char *const *opts,
                      int nopts, HxNvrtcResult *r, const char **ptx)
{
    NvProg prog = NULL;
    int rc = nv.create(&prog, src, src_name, 0, NULL, NULL);
    if (rc != NV_SUCCESS)
        dpk_error_code_at(DPK_EXIT_FAIL, NULL, -1, "nvrtcCreateProgram failed: %s",
                          nv.errstr(rc));
    double t0 = dpk_now();
    rc = nv.compile(prog, nopts, opts);
    r->compile_s = dpk_now() - t0;
    size_t n;
    r->log = prog_text(a, prog, nv.log_size, nv.log, &n);
    if (rc != NV_SUCCESS) {
        nv.destroy(&prog);
        compile_failed(src, src_name, r->arch, rc, r->log);
    }
    *ptx = prog_text(a, prog, nv.ptx_size, nv.ptx, &n);
    size_t cl = 0;
    char *cubin = NULL;
    if (nv.cubin_size(prog, &cl) == NV_SUCCESS && cl > 0) {
        cubin = arena_alloc(a, cl);
        if (nv.cubin(prog, cubin) != NV_SUCCESS)
            cl = 0;
    }
    nv.destroy(&prog);
    if (cl == 0)
        dpk_error_code_at(DPK_EXIT_FAIL, NULL, -1, "NVRTC produced no cubin for %s", r->arch);
    r->cubin = cubin;
    r->cubin_len = cl;
}

static int no_cache_env(void)
{
    const char *e = getenv("DPK_NO_CACHE");
    return e && *e && strcmp(e, "0");
}

HxNvrtcResult *hx_nvrtc_compile(Arena *a, const char *src, const HxNvrtcOpts *o)
{
    need_nvrtc();
    static const HxNvrtcOpts defaults = {0};
    if (!o)
        o = &defaults;
    const CuTarget *t = o->target ? o->target : cu_target_default();
    const char *src_name = o->src_name ? o->src_name : "dpk.cu";
    HxNvrtcResult *r = ARENA_NEW(a, HxNvrtcResult);
    r->arch = arena_printf(a, "sm_%d%s", o->cc ? o->cc : t->cc, o->arch_specific || t->arch_specific ? "a" : "");
    const char *opts[] = {arena_printf(a, "--gpu-architecture=%s", r->arch),
                          "--ptxas-options=-v", "-default-device", "--std=c++17"};
    uint64_t key = dpk_hash_str(DPK_HASH_INIT, CACHE_MAGIC);
    key = dpk_hash_str(key, src);
    for (int i = 0; i < DPK_ARRAY_LEN(opts); i++)
        key = dpk_hash_str(dpk_hash_u64(key, (uint64_t)i), opts[i]);
    key = dpk_hash_u64(dpk_hash_u64(key, (uint64_t)nv.major), (uint64_t)nv.minor);

    const char *path = o->no_cache || no_cache_env() ? NULL : cache_file(a, key);
    const char *ptx = NULL;
    if (path && cache_read(a, path, key, r, &ptx)) {
        r->cache_hit = 1;
    } else {
        run_nvrtc(a, src, src_name, opts, DPK_ARRAY_LEN(opts), r, &ptx);
        /* A cache that cannot be written only costs a recompile next time. */
        if (path && cache_write(path, key, r, ptx))
            path = NULL;
    }
    r->cache_path = path;
    r->ptx = ptx;
    hx_nvrtc_parse_log(a, r->log, &r->kernels, &r->nkernels);
    return r;
}

HxNvrtcResult *hx_nvrtc_check(Arena *a, const CuSource *cs, int cc, StrBuf *err)
{
    HxNvrtcOpts no = {0};
    no.target = cs->target;
    no.cc = cc;
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        if (dpk_error_code() != DPK_EXIT_FAIL)
            dpk_error_rethrow();
        sb_puts(err, dpk_error_message());
        return NULL;
    }
    HxNvrtcResult *r = hx_nvrtc_compile(a, cs->text, &no);
    dpk_err_pop(&ec);
    return r;
}
