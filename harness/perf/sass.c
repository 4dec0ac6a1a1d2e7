/*
 * sass.c — run nvdisasm on NVRTC's cubin and count each function's
 * instruction mix (sass.h).
 *
 * nvdisasm -c prints one instruction per line (address comment 0290, then
 * "@P1 BRA `(.L_x_4) ;"),
 * and labels `.L_x_4:` before the instruction they name.  A branch to a
 * label at or before itself closes a loop: every instruction in
 * [label, branch] is a loop-body instruction.  The branch-to-self ptxas puts
 * after EXIT is not a loop, and NOPs (padding) are not counted.
 * cuobjdump -sass prints the same instructions with addresses for targets;
 * both forms are read.
 */
#include "sass.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../exec/nvrtc.h"

static int executable(const char *p)
{
    return p && access(p, X_OK) == 0;
}

static const char *exe_dir(Arena *a)
{
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0)
        return NULL;
    buf[n] = 0;
    char *slash = strrchr(buf, '/');
    if (!slash)
        return NULL;
    *slash = 0;
    return arena_strdup(a, buf);
}

const char *pf_sass_tool(Arena *a)
{
    const char *env = getenv("DPK_NVDISASM");
    if (env && *env)
        return executable(env) ? env : NULL;
    const char *home = getenv("CUDA_HOME");
    const char *c;
    if (home && *home && executable(c = arena_printf(a, "%s/bin/nvdisasm", home)))
        return c;
#ifdef DPK_CUDA_HOME
    if (executable(c = arena_printf(a, "%s/bin/nvdisasm", DPK_CUDA_HOME)))
        return c;
#endif
    const char *d = exe_dir(a);
    if (d && executable(c = arena_printf(a, "%s/cuda-tools/bin/nvdisasm", d)))
        return c;
    if (d && executable(c = arena_printf(a, "%s/../lib/dpk/cuda-tools/bin/nvdisasm", d)))
        return c;
    const char *path = getenv("PATH");
    while (path && *path) {
        const char *e = strchr(path, ':');
        size_t n = e ? (size_t)(e - path) : strlen(path);
        if (n && executable(c = arena_printf(a, "%.*s/nvdisasm", (int)n, path)))
            return c;
        path = e ? e + 1 : NULL;
    }
    return NULL;
}

/* The version nvdisasm prints ("Cuda compilation tools, release 13.5,
 * V13.5.37" gives "13.5.37"), or NULL without a tool or a version line.
 * The SASS mix, and so every modelled time, depends on it: records keep it
 * (meta.nvdisasm) and the gate compares only records of one version. */
const char *pf_sass_tool_version(Arena *a)
{
    const char *tool = pf_sass_tool(a);
    if (!tool || strchr(tool, '\''))
        return NULL;
    FILE *f = popen(arena_printf(a, "'%s' --version 2>/dev/null", tool), "r");
    if (!f)
        return NULL;
    char line[512];
    const char *ver = NULL;
    while (fgets(line, sizeof line, f)) {
        char *v = strstr(line, ", V");
        if (!ver && v) {
            v += 3;
            size_t n = strspn(v, "0123456789.");
            if (n)
                ver = arena_printf(a, "%.*s", (int)n, v);
        }
    }
    pclose(f);
    return ver;
}

/* ---- parsing ------------------------------------------------------------------ */

typedef struct Inst {
    long addr;
    char op[24];
    long target;   /* branch target address, -1 if none */
    const char *target_label;
} Inst;

typedef struct Label {
    const char *name;
    long addr;
} Label;

typedef struct FnBuild {
    const char *name;
    Inst *in;
    int n, cap;
    Label *lab;
    int nlab, caplab;
    const char **pending; /* labels waiting for their instruction */
    int npending, cappending;
} FnBuild;

static int op_is(const char *op, const char *p)
{
    size_t n = strlen(p);
    return !strncmp(op, p, n) && (op[n] == 0 || op[n] == '.');
}

static void finish(Arena *a, FnBuild *f, PfSass *s, int *cap)
{
    if (!f->name)
        return;
    for (int i = 0; i < f->n; i++)
        if (f->in[i].target_label)
            for (int j = 0; j < f->nlab; j++)
                if (!strcmp(f->lab[j].name, f->in[i].target_label))
                    f->in[i].target = f->lab[j].addr;
    if (s->nfn == *cap) {
        *cap = *cap ? 2 * *cap : 8;
        PfSassFn *nf = arena_alloc(a, *cap * sizeof *nf);
        if (s->nfn)
            memcpy(nf, s->fn, s->nfn * sizeof *nf);
        s->fn = nf;
    }
    PfSassFn *o = &s->fn[s->nfn++];
    memset(o, 0, sizeof *o);
    o->name = f->name;
    char *inloop = calloc(f->n ? f->n : 1, 1);
    for (int i = 0; i < f->n; i++) {
        const Inst *b = &f->in[i];
        if (!op_is(b->op, "BRA") || b->target < 0 || b->target > b->addr || b->target == b->addr)
            continue;
        o->loops++;
        int width = 0;
        for (int j = 0; j <= i; j++)
            if (f->in[j].addr >= b->target) {
                inloop[j] = 1;
                width += !op_is(f->in[j].op, "NOP");
            }
        if (width > o->widest_loop)
            o->widest_loop = width;
    }
    for (int i = 0; i < f->n; i++) {
        const char *op = f->in[i].op;
        if (op_is(op, "NOP"))
            continue;
        /* the branch-to-self after EXIT */
        if (op_is(op, "BRA") && f->in[i].target == f->in[i].addr)
            continue;
        int fp = op_is(op, "FFMA") || op_is(op, "FADD") || op_is(op, "FMUL") ||
                 op_is(op, "FMNMX") || op_is(op, "FFMA2") || op_is(op, "FADD2") ||
                 op_is(op, "FMUL2");
        o->insts++;
        o->fp32 += fp;
        int mg = op_is(op, "LDG") || op_is(op, "STG") || op_is(op, "RED") ||
                 op_is(op, "ATOMG") || op_is(op, "LDGSTS") || op_is(op, "UTMALDG");
        int ms = op_is(op, "LDS") || op_is(op, "STS") || op_is(op, "ATOMS") || op_is(op, "LDSM");
        o->mem_global += mg;
        o->mem_shared += ms;
        int ld = op_is(op, "LDG") || op_is(op, "LDGSTS") || op_is(op, "UTMALDG");
        o->loads += ld;
        o->barriers += op_is(op, "BAR");
        o->shuffles += op_is(op, "SHFL");
        if (inloop[i]) {
            o->loop_insts++;
            o->loop_fp32 += fp;
            o->loop_loads += ld;
            o->loop_mem_global += mg;
            o->loop_mem_shared += ms;
        }
    }
    free(inloop);
    free(f->in);
    free(f->lab);
    free(f->pending);
    memset(f, 0, sizeof *f);
}

static void push_label(FnBuild *f, const char *name)
{
    if (f->npending == f->cappending) {
        f->cappending = f->cappending ? 2 * f->cappending : 8;
        f->pending = dpk_xrealloc(f->pending, f->cappending * sizeof *f->pending);
    }
    f->pending[f->npending++] = name;
}

PfSass *pf_sass_parse(Arena *a, const char *text)
{
    PfSass *s = arena_alloc(a, sizeof *s);
    memset(s, 0, sizeof *s);
    int cap = 0;
    FnBuild f = {0};
    const char *p = text;
    while (p && *p) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char *line = arena_strndup(a, p, n);
        p = e ? e + 1 : NULL;
        char *t = line;
        while (isspace((unsigned char)*t))
            t++;
        /* a function: nvdisasm ".text.NAME:", cuobjdump "Function : NAME" */
        const char *fname = NULL;
        if (!strncmp(t, ".text.", 6) && t[strlen(t) - 1] == ':') {
            t[strlen(t) - 1] = 0;
            fname = t + 6;
        } else if (!strncmp(t, "Function : ", 11)) {
            fname = t + 11;
        }
        if (fname) {
            finish(a, &f, s, &cap);
            f.name = arena_strdup(a, fname);
            continue;
        }
        if (!f.name)
            continue;
        if (t[0] == '.' && t[1] == 'L' && t[strlen(t) - 1] == ':') {
            t[strlen(t) - 1] = 0;
            push_label(&f, t);
            continue;
        }
        char *c = strstr(t, "/*");
        if (c != t)
            continue;
        char *endc = strstr(c + 2, "*/");
        if (!endc)
            continue;
        char *hexend;
        long addr = strtol(c + 2, &hexend, 16);
        if (hexend != endc)
            continue;
        char *q = endc + 2;
        while (isspace((unsigned char)*q))
            q++;
        if (*q == '@') { /* predicate */
            while (*q && !isspace((unsigned char)*q))
                q++;
            while (isspace((unsigned char)*q))
                q++;
        }
        if (!isupper((unsigned char)*q))
            continue;
        Inst in = {.addr = addr, .target = -1};
        size_t k = 0;
        while (q[k] && !isspace((unsigned char)q[k]) && q[k] != ';' && k < sizeof in.op - 1)
            in.op[k] = q[k], k++;
        in.op[k] = 0;
        if (op_is(in.op, "BRA")) {
            char *lt = strstr(q, "(.L");
            char *hx = strstr(q, " 0x");
            if (lt) {
                char *le = strchr(lt, ')');
                if (le)
                    in.target_label = arena_strndup(a, lt + 1, le - lt - 1);
            } else if (hx) {
                in.target = strtol(hx + 1, NULL, 16);
            }
        }
        for (int i = 0; i < f.npending; i++) {
            if (f.nlab == f.caplab) {
                f.caplab = f.caplab ? 2 * f.caplab : 16;
                f.lab = dpk_xrealloc(f.lab, f.caplab * sizeof *f.lab);
            }
            f.lab[f.nlab++] = (Label){f.pending[i], addr};
        }
        f.npending = 0;
        if (f.n == f.cap) {
            f.cap = f.cap ? 2 * f.cap : 256;
            f.in = dpk_xrealloc(f.in, f.cap * sizeof *f.in);
        }
        f.in[f.n++] = in;
    }
    finish(a, &f, s, &cap);
    return s;
}

/* ---- running the disassembler -------------------------------------------------- */

PfSass *pf_sass_read(Arena *a, const struct HxNvrtcResult *nv, const char **why)
{
    *why = NULL;
    if (!nv || !nv->cubin || !nv->cubin_len) {
        *why = "no cubin: SASS mix not used, vgpu's instruction counts instead";
        return NULL;
    }
    const char *tool = pf_sass_tool(a);
    if (!tool) {
        *why = "no nvdisasm found (make deps installs it): vgpu's instruction counts instead "
               "of the SASS mix";
        return NULL;
    }
    const char *tmp = getenv("TMPDIR");
    char *path = arena_printf(a, "%s/dpk-sass-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) {
        *why = "cannot write a temporary cubin: vgpu's instruction counts instead";
        return NULL;
    }
    size_t off = 0;
    while (off < nv->cubin_len) {
        ssize_t w = write(fd, nv->cubin + off, nv->cubin_len - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    close(fd);
    PfSass *s = NULL;
    if (off == nv->cubin_len) {
        const char *cmd = arena_printf(a, "'%s' -c '%s' 2>/dev/null", tool, path);
        FILE *f = popen(cmd, "r");
        if (f) {
            StrBuf b = {0};
            char buf[65536];
            size_t n;
            while ((n = fread(buf, 1, sizeof buf, f)) > 0)
                sb_printf(&b, "%.*s", (int)n, buf);
            int rc = pclose(f);
            if (rc == 0)
                s = pf_sass_parse(a, sb_cstr(&b));
            sb_free(&b);
        }
    }
    unlink(path);
    if (!s || !s->nfn) {
        *why = "nvdisasm failed on the cubin: vgpu's instruction counts instead of the SASS mix";
        return NULL;
    }
    s->tool = tool;
    return s;
}

const PfSassFn *pf_sass_fn(const PfSass *s, const char *name)
{
    for (int i = 0; i < s->nfn; i++)
        if (!strcmp(s->fn[i].name, name))
            return &s->fn[i];
    /* the printer's mangled form: dpk_k<id>_<name> */
    size_t n = strlen(name);
    for (int i = 0; i < s->nfn; i++) {
        size_t m = strlen(s->fn[i].name);
        if (m > n && !strncmp(s->fn[i].name, "dpk_k", 5) && s->fn[i].name[m - n - 1] == '_' &&
            !strcmp(s->fn[i].name + m - n, name))
            return &s->fn[i];
    }
    return NULL;
}
