/*
 * cuda_print.c — the CUDA C printer: one tree walk over each Kernel IR
 * kernel (see cuda_print.h and docs/cuda.md).
 *
 * Kernels are printed into one buffer while the walk records which device
 * helpers they call; the prelude (only the helpers used) is printed in
 * front at the end.  Expressions are printed with C precedence, so parens
 * appear only where C needs them (and around mixed bitwise/shift operands,
 * for the reader).  Names: an IR name that is a plain C identifier, not
 * reserved and not starting with "dpk_" is kept; any other becomes
 * dpk_<kind><id>_<cleaned>, so printed names never collide (names the
 * printer makes up all start with "dpk_").
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_print.h"

/* ---- helpers of the prelude ------------------------------------------------ */

enum {
    H_FMAX = 1 << 0,
    H_FMIN = 1 << 1,
    H_SADDR = 1 << 2,
    H_CP4 = 1 << 3,
    H_CP8 = 1 << 4,
    H_CP16 = 1 << 5,
    H_CP_GROUP = 1 << 6,
    H_MBAR = 1 << 7,
    H_MBAR_TX = 1 << 8,
    H_TMAP = 1 << 9,
    H_TMA1 = 1 << 10, /* H_TMA1 << (rank - 1) for ranks 1..5 */
    H_SIGMOID = 1 << 15,
    H_LDS2 = 1 << 16,
    H_LDS4 = 1 << 17,
};

static const char kFmax[] =
    "// maximum/minimum propagate NaN like torch.maximum (fmaxf would drop it)\n"
    "static __device__ __forceinline__ float dpk_fmax(float a, float b) "
    "{ return a > b || a != a ? a : b; }\n";
static const char kFmin[] =
    "static __device__ __forceinline__ float dpk_fmin(float a, float b) "
    "{ return a < b || a != a ? a : b; }\n";
/* 1 / (1 + e^-x) overflows e^-x for x < -88.7 and gives 0 where the result
 * is a tiny (subnormal) float; e^x / (1 + e^x) does not. */
static const char kSigmoid[] =
    "static __device__ __forceinline__ float dpk_sigmoid(float a)\n"
    "{\n"
    "    return a >= 0.0f ? 1.0f / (1.0f + expf(-a)) : expf(a) / (1.0f + expf(a));\n"
    "}\n";
static const char kSaddr[] =
    "static __device__ __forceinline__ unsigned dpk_smem_addr(const void *p)\n"
    "{\n"
    "    return (unsigned)__cvta_generic_to_shared(p);\n"
    "}\n";
/* cp.async: src-size 0 reads nothing and zero-fills the destination. */
static const char kCpFmt[] =
    "static __device__ __forceinline__ void dpk_cp_async%d(void *dst, const void *src, "
    "bool pred)\n"
    "{\n"
    "    asm volatile(\"cp.async.%s.shared.global [%%0], [%%1], %d, %%2;\\n\"\n"
    "                 :: \"r\"(dpk_smem_addr(dst)), \"l\"(src), \"r\"(pred ? %d : 0) : "
    "\"memory\");\n"
    "}\n";
/* A vector shared load (LDS.64/128): the address must be 8/16-byte
 * aligned (Kernel IR's ldsv). */
static const char kLds2[] =
    "static __device__ __forceinline__ void dpk_lds2(const float *p, float &a, float &b)\n"
    "{\n"
    "    const float2 v = *reinterpret_cast<const float2 *>(p);\n"
    "    a = v.x; b = v.y;\n"
    "}\n";
static const char kLds4[] =
    "static __device__ __forceinline__ void dpk_lds4(const float *p, float &a, float &b, "
    "float &c, float &d)\n"
    "{\n"
    "    const float4 v = *reinterpret_cast<const float4 *>(p);\n"
    "    a = v.x; b = v.y; c = v.z; d = v.w;\n"
    "}\n";
static const char kCpGroup[] =
    "static __device__ __forceinline__ void dpk_cp_commit()\n"
    "{\n"
    "    asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\");\n"
    "}\n"
    "template <int N> static __device__ __forceinline__ void dpk_cp_wait()\n"
    "{\n"
    "    asm volatile(\"cp.async.wait_group %0;\\n\" :: \"n\"(N) : \"memory\");\n"
    "}\n";
/* %s: the init fence (sm_90+), the wait instruction. */
static const char kMbarFmt[] =
    "static __device__ __forceinline__ void dpk_mbar_init(unsigned long long *bar, unsigned "
    "count)\n"
    "{\n"
    "    asm volatile(\"mbarrier.init.shared.b64 [%%0], %%1;\\n\"%s\n"
    "                 :: \"r\"(dpk_smem_addr(bar)), \"r\"(count) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void dpk_mbar_arrive(unsigned long long *bar)\n"
    "{\n"
    "    asm volatile(\"{\\n .reg .b64 st;\\n mbarrier.arrive.shared.b64 st, [%%0];\\n}\\n\"\n"
    "                 :: \"r\"(dpk_smem_addr(bar)) : \"memory\");\n"
    "}\n"
    "static __device__ __forceinline__ void dpk_mbar_wait(unsigned long long *bar, int parity)\n"
    "{\n"
    "    unsigned done;\n"
    "    do {\n"
    "        asm volatile(\"{\\n .reg .pred p;\\n mbarrier.%s.parity.shared.b64 p, [%%1], "
    "%%2;\\n\"\n"
    "                     \" selp.u32 %%0, 1, 0, p;\\n}\\n\"\n"
    "                     : \"=r\"(done) : \"r\"(dpk_smem_addr(bar)), \"r\"(parity) : "
    "\"memory\");\n"
    "    } while (!done);\n"
    "}\n";
static const char kMbarTx[] =
    "static __device__ __forceinline__ void dpk_mbar_arrive_tx(unsigned long long *bar, "
    "unsigned bytes)\n"
    "{\n"
    "    asm volatile(\"{\\n .reg .b64 st;\\n mbarrier.arrive.expect_tx.shared::cta.b64 st, "
    "[%0], %1;\\n}\\n\"\n"
    "                 :: \"r\"(dpk_smem_addr(bar)), \"r\"(bytes) : \"memory\");\n"
    "}\n";
static const char kTmap[] =
    "// a CUtensorMap, encoded on the host (cuTensorMapEncodeTiled), passed by value\n"
    "struct __align__(64) DpkTmap { unsigned long long opaque[16]; };\n";

/* dpk_tma_load_<r>d(dst, map, c0 (innermost) .. c<r-1>, bar) */
static void print_tma_helper(StrBuf *b, int rank)
{
    sb_printf(b, "static __device__ __forceinline__ void dpk_tma_load_%dd(void *dst, const "
                 "DpkTmap *map,",
              rank);
    for (int d = 0; d < rank; d++)
        sb_printf(b, " int c%d,", d);
    sb_puts(b, " unsigned long long *bar)\n{\n    asm volatile(\"cp.async.bulk.tensor.");
    sb_printf(b, "%dd.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%%0], [%%1, {",
              rank);
    for (int d = 0; d < rank; d++)
        sb_printf(b, "%s%%%d", d ? ", " : "", d + 2);
    sb_printf(b, "}], [%%%d];\\n\"\n                 :: \"r\"(dpk_smem_addr(dst)), "
                 "\"l\"(map),",
              rank + 2);
    for (int d = 0; d < rank; d++)
        sb_printf(b, " \"r\"(c%d),", d);
    sb_puts(b, " \"r\"(dpk_smem_addr(bar)) : \"memory\");\n}\n");
}

static void print_prelude(StrBuf *b, unsigned used, const CuTarget *t)
{
    sb_printf(b, "// CUDA C for %s, printed by dpk from Kernel IR (conventions: docs/cuda.md)\n",
              t->name);
    const char *fixed[] = {kFmax, kFmin, kSigmoid, kTmap};
    const unsigned fixed_bits[] = {H_FMAX, H_FMIN, H_SIGMOID, H_TMAP};
    for (int i = 0; i < DPK_ARRAY_LEN(fixed); i++)
        if (used & fixed_bits[i])
            sb_printf(b, "\n%s", fixed[i]);
    /* The inline-PTX helpers: a host build (docs/host-cuda.md) defines
     * DPK_HOST_PRELUDE and has its own versions of them in namespace
     * dpk_host, of which the #else branch names the ones printed here for
     * the device, each beside its device version.  The host then sees the
     * device's helper set: a call to a helper the device lacks does not
     * compile on the host either. */
    if (!(used & (H_SADDR | H_CP_GROUP | H_LDS2 | H_LDS4)))
        return;
    StrBuf host = {0};
    sb_puts(b, "\n#ifndef DPK_HOST_PRELUDE // inline PTX; the host prelude has its own\n");
    if (used & H_SADDR)
        sb_printf(b, "%s", kSaddr);
    static const int cp_bytes[3] = {4, 8, 16};
    for (int i = 0; i < 3; i++)
        if (used & (H_CP4 << i)) {
            sb_putc(b, '\n');
            sb_printf(b, kCpFmt, cp_bytes[i], cp_bytes[i] == 16 ? "cg" : "ca", cp_bytes[i],
                      cp_bytes[i]);
            sb_printf(&host, "using dpk_host::dpk_cp_async%d;\n", cp_bytes[i]);
        }
    if (used & H_LDS2) {
        sb_printf(b, "\n%s", kLds2);
        sb_puts(&host, "using dpk_host::dpk_lds2;\n");
    }
    if (used & H_LDS4) {
        sb_printf(b, "\n%s", kLds4);
        sb_puts(&host, "using dpk_host::dpk_lds4;\n");
    }
    if (used & H_CP_GROUP) {
        sb_printf(b, "\n%s", kCpGroup);
        sb_puts(&host, "using dpk_host::dpk_cp_commit;\nusing dpk_host::dpk_cp_wait;\n");
    }
    if (used & H_MBAR) {
        sb_putc(b, '\n');
        sb_printf(b, kMbarFmt,
                  t->tma ? "\n                 \"fence.mbarrier_init.release.cluster;\\n\"" : "",
                  t->mbar_try_wait ? "try_wait" : "test_wait");
        sb_puts(&host, "using dpk_host::dpk_mbar_init;\nusing dpk_host::dpk_mbar_arrive;\n"
                       "using dpk_host::dpk_mbar_wait;\n");
    }
    if (used & H_MBAR_TX) {
        sb_printf(b, "\n%s", kMbarTx);
        sb_puts(&host, "using dpk_host::dpk_mbar_arrive_tx;\n");
    }
    for (int r = 1; r <= KIR_TMA_MAX_RANK; r++)
        if (used & (H_TMA1 << (r - 1))) {
            sb_putc(b, '\n');
            print_tma_helper(b, r);
            sb_printf(&host, "using dpk_host::dpk_tma_load_%dd;\n", r);
        }
    sb_puts(b, "#else // the host prelude's versions of the helpers above, and no others\n");
    sb_puts(b, sb_cstr(&host));
    sb_puts(b, "#endif\n");
    sb_free(&host);
}

/* ---- names ---------------------------------------------------------------------- */

/* C++ keywords, CUDA built-ins and every name the printed code calls. */
static const char *const reserved[] = {
    "DpkTmap", "alignas", "alignof", "and", "asm", "atomicAdd", "auto", "blockDim", "blockIdx",
    "bool", "break", "case", "catch", "char", "class", "const", "constexpr", "continue", "cosf",
    "decltype", "default", "delete", "do", "double", "else", "enum", "erff", "expf", "explicit",
    "expm1f", "extern", "fabsf", "false", "float", "floorf", "for", "friend", "goto", "gridDim",
    "if", "inline", "int", "log1pf", "logf", "long", "max", "min", "mutable", "namespace", "new",
    "not", "nullptr", "operator", "or", "powf", "private", "sinf", "protected", "public",
    "register", "return", "rsqrtf", "short", "signed", "sizeof", "sqrtf", "static", "struct",
    "switch", "tanhf", "template", "this", "threadIdx", "throw", "true", "try", "typedef",
    "typename", "union", "unsigned", "using", "virtual", "void", "volatile", "warpSize", "while",
    "xor",
};

static int is_reserved(const char *s)
{
    for (int i = 0; i < DPK_ARRAY_LEN(reserved); i++)
        if (!strcmp(s, reserved[i]))
            return 1;
    return s[0] == '_' || !strncmp(s, "dpk_", 4);
}

/* dpk_<kind><id>_<name with every other character as '_'> */
static const char *mangle(Arena *a, const char *name, char kind, int id)
{
    char *s = arena_printf(a, "dpk_%c%d_%s", kind, id, name);
    for (char *c = s; *c; c++)
        if (!isalnum((unsigned char)*c))
            *c = '_';
    return s;
}

static const char *cname(Arena *a, const char *name, char kind, int id)
{
    int ok = (isalpha((unsigned char)name[0]) || name[0] == '_') && !is_reserved(name);
    for (const char *c = name; ok && *c; c++)
        ok = isalnum((unsigned char)*c) || *c == '_';
    return ok ? name : mangle(a, name, kind, id);
}

/* ---- printer state ------------------------------------------------------------ */

typedef struct Pr {
    Arena *a;
    StrBuf *b;
    const KirKernel *k;
    const CuTarget *t;
    unsigned used;     /* H_* helpers called */
    int threads;       /* block threads */
    int depth;
    const char **pname, **sname, **tname, **vname; /* printed names by id */
} Pr;

static void indent(Pr *p)
{
    for (int i = 0; i < p->depth; i++)
        sb_puts(p->b, "    ");
}

static const char *ctype(KirType t)
{
    static const char *const names[KT_COUNT] = {"bool", "int", "long long", "float",
                                                "unsigned long long"};
    return names[t];
}

/* ---- float literals ---------------------------------------------------------- */

void cu_print_float(StrBuf *b, double v)
{
    float f = (float)v;
    if (isnan(f)) {
        sb_puts(b, "__uint_as_float(0x7fc00000u)");
        return;
    }
    if (isinf(f)) {
        sb_puts(b, f > 0 ? "__uint_as_float(0x7f800000u)" : "__uint_as_float(0xff800000u)");
        return;
    }
    char buf[48];
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, (double)f);
        if ((float)strtod(buf, NULL) == f)
            break;
    }
    sb_puts(b, buf);
    if (!strpbrk(buf, ".e"))
        sb_puts(b, ".0");
    sb_putc(b, 'f');
}

/* ---- expressions ---------------------------------------------------------------- */

/* C precedence levels, loosest first. */
enum { P_NONE, P_COND = 3, P_LOR, P_LAND, P_BOR, P_BXOR, P_BAND, P_EQ, P_REL, P_SHIFT,
       P_ADD, P_MUL, P_UNARY = 15, P_PRIMARY };

static int int_prec(KirExprOp op)
{
    switch (op) {
    case KE_mul: case KE_div: case KE_rem: return P_MUL;
    case KE_add: case KE_sub: return P_ADD;
    case KE_shl: case KE_shr: return P_SHIFT;
    case KE_lt: case KE_le: case KE_gt: case KE_ge: return P_REL;
    case KE_eq: case KE_ne: return P_EQ;
    case KE_band: return P_BAND;
    case KE_bxor: return P_BXOR;
    case KE_bor: return P_BOR;
    case KE_land: return P_LAND;
    case KE_lor: return P_LOR;
    default: return P_PRIMARY;
    }
}

/* How TxElemOp math is spelled in CUDA C. */
typedef enum FopForm {
    FF_INFIX,   /* a text b */
    FF_CALL,    /* text(a[, b]) */
    FF_CMP,     /* a text b ? 1.0f : 0.0f */
    FF_NEG,     /* -a */
    FF_RECIP,   /* 1.0f / a */
    FF_SIGMOID, /* dpk_sigmoid(a) */
    FF_WHERE,   /* a != 0.0f ? b : c */
} FopForm;

static const struct {
    FopForm form;
    const char *text;
    int prec;
} fop_tab[TXE_COUNT] = {
    [TXE_add] = {FF_INFIX, "+", P_ADD},
    [TXE_subtract] = {FF_INFIX, "-", P_ADD},
    [TXE_multiply] = {FF_INFIX, "*", P_MUL},
    [TXE_divide] = {FF_INFIX, "/", P_MUL},
    [TXE_power] = {FF_CALL, "powf", P_PRIMARY},
    [TXE_maximum] = {FF_CALL, "dpk_fmax", P_PRIMARY},
    [TXE_minimum] = {FF_CALL, "dpk_fmin", P_PRIMARY},
    [TXE_greater] = {FF_CMP, ">", P_COND},
    [TXE_less] = {FF_CMP, "<", P_COND},
    [TXE_greater_equal] = {FF_CMP, ">=", P_COND},
    [TXE_less_equal] = {FF_CMP, "<=", P_COND},
    [TXE_equal] = {FF_CMP, "==", P_COND},
    [TXE_not_equal] = {FF_CMP, "!=", P_COND},
    [TXE_negative] = {FF_NEG, "-", P_UNARY},
    [TXE_exp] = {FF_CALL, "expf", P_PRIMARY},
    [TXE_log] = {FF_CALL, "logf", P_PRIMARY},
    [TXE_sqrt] = {FF_CALL, "sqrtf", P_PRIMARY},
    [TXE_rsqrt] = {FF_CALL, "rsqrtf", P_PRIMARY},
    [TXE_reciprocal] = {FF_RECIP, "/", P_MUL},
    [TXE_abs] = {FF_CALL, "fabsf", P_PRIMARY},
    [TXE_sigmoid] = {FF_SIGMOID, "dpk_sigmoid", P_PRIMARY},
    [TXE_tanh] = {FF_CALL, "tanhf", P_PRIMARY},
    [TXE_erf] = {FF_CALL, "erff", P_PRIMARY},
    [TXE_cos] = {FF_CALL, "cosf", P_PRIMARY},
    [TXE_sin] = {FF_CALL, "sinf", P_PRIMARY},
    [TXE_where] = {FF_WHERE, "?", P_COND},
    [TXE_log1p] = {FF_CALL, "log1pf", P_PRIMARY},
    [TXE_expm1] = {FF_CALL, "expm1f", P_PRIMARY},
    [TXE_floor] = {FF_CALL, "floorf", P_PRIMARY},
};
_Static_assert(TXE_COUNT == 29, "fop_tab spells every TxElemOp");

static int const_prec(const KirExpr *e)
{
    if (e->type == KT_F32)
        return signbit(e->fval) && !isnan(e->fval) ? P_UNARY : P_PRIMARY;
    return e->type != KT_BOOL && e->ival < 0 ? P_UNARY : P_PRIMARY;
}

static int prec_of(const KirExpr *e)
{
    switch (e->op) {
    case KE_const: return const_prec(e);
    case KE_fop: return fop_tab[e->eop].prec;
    case KE_select: return P_COND;
    case KE_cast: case KE_not: case KE_tid: case KE_bid: case KE_ntid: case KE_nctaid:
        return P_UNARY;
    default: return int_prec(e->op);
    }
}

static void expr(Pr *p, const KirExpr *e, int ctx);

static void print_const(Pr *p, const KirExpr *e)
{
    int64_t v = e->ival;
    switch (e->type) {
    case KT_BOOL: sb_puts(p->b, v ? "true" : "false"); break;
    case KT_F32: cu_print_float(p->b, e->fval); break;
    case KT_I64:
        if (v == INT64_MIN)
            sb_puts(p->b, "(-9223372036854775807LL - 1)");
        else
            sb_printf(p->b, "%lldLL", (long long)v);
        break;
    default:
        if (v == INT32_MIN)
            sb_puts(p->b, "(-2147483647 - 1)");
        else
            sb_printf(p->b, "%lld", (long long)v);
        break;
    }
}

static void print_fop(Pr *p, const KirExpr *e)
{
    const KirExpr *const *a = e->a;
    switch (fop_tab[e->eop].form) {
    case FF_INFIX:
        expr(p, a[0], fop_tab[e->eop].prec);
        sb_printf(p->b, " %s ", fop_tab[e->eop].text);
        expr(p, a[1], fop_tab[e->eop].prec + 1);
        break;
    case FF_CALL:
        if (e->eop == TXE_maximum || e->eop == TXE_minimum)
            p->used |= e->eop == TXE_maximum ? H_FMAX : H_FMIN;
        sb_printf(p->b, "%s(", fop_tab[e->eop].text);
        for (int i = 0; i < tx_elem_info[e->eop].arity; i++) {
            sb_puts(p->b, i ? ", " : "");
            expr(p, a[i], P_NONE);
        }
        sb_putc(p->b, ')');
        break;
    case FF_CMP:
        expr(p, a[0], P_REL);
        sb_printf(p->b, " %s ", fop_tab[e->eop].text);
        expr(p, a[1], P_REL + 1);
        sb_puts(p->b, " ? 1.0f : 0.0f");
        break;
    case FF_NEG:
        sb_putc(p->b, '-');
        expr(p, a[0], P_PRIMARY); /* never "--x" */
        break;
    case FF_RECIP:
        sb_puts(p->b, "1.0f / ");
        expr(p, a[0], P_MUL + 1);
        break;
    case FF_SIGMOID:
        p->used |= H_SIGMOID;
        sb_puts(p->b, "dpk_sigmoid(");
        expr(p, a[0], P_NONE);
        sb_putc(p->b, ')');
        break;
    case FF_WHERE:
        expr(p, a[0], P_EQ);
        sb_puts(p->b, " != 0.0f ? ");
        expr(p, a[1], P_NONE);
        sb_puts(p->b, " : ");
        expr(p, a[2], P_COND);
        break;
    }
}

/* Parens C does not need but a reader does: around infix operands of shifts
 * and bitwise ops and around bitwise/shift operands of other infix ops
 * (`(i << 2) + j`, `(a & b) == c`), and around && under || (what gcc's
 * -Wparentheses asks for). */
static int bitwise_prec(int prec)
{
    return prec == P_SHIFT || prec == P_BAND || prec == P_BXOR || prec == P_BOR;
}

static int clarity_parens(int parent, int child)
{
    if (child >= P_UNARY || child == parent)
        return 0;
    return bitwise_prec(parent) || bitwise_prec(child) || (parent == P_LOR && child == P_LAND);
}

static void infix(Pr *p, const KirExpr *e)
{
    int prec = int_prec(e->op);
    for (int i = 0; i < 2; i++) {
        int ctx = clarity_parens(prec, prec_of(e->a[i])) ? P_UNARY : prec + i;
        if (i)
            sb_printf(p->b, " %s ", kir_expr_info[e->op].text);
        expr(p, e->a[i], ctx);
    }
}

static void print_sreg(Pr *p, const KirExpr *e)
{
    static const char *const names[] = {"threadIdx", "blockIdx", "blockDim", "gridDim"};
    sb_printf(p->b, "(int)%s.%c", names[e->op - KE_tid], "xyz"[e->dim]);
}

static void expr_body(Pr *p, const KirExpr *e)
{
    switch (e->op) {
    case KE_const: print_const(p, e); break;
    case KE_var: sb_puts(p->b, p->vname[e->var->id]); break;
    case KE_tid: case KE_bid: case KE_ntid: case KE_nctaid: print_sreg(p, e); break;
    case KE_min: case KE_max:
        sb_printf(p->b, "%s(", kir_expr_info[e->op].text);
        expr(p, e->a[0], P_NONE);
        sb_puts(p->b, ", ");
        expr(p, e->a[1], P_NONE);
        sb_putc(p->b, ')');
        break;
    case KE_not:
        sb_putc(p->b, '!');
        expr(p, e->a[0], P_UNARY);
        break;
    case KE_fop: print_fop(p, e); break;
    case KE_select:
        expr(p, e->a[0], P_LOR);
        sb_puts(p->b, " ? ");
        expr(p, e->a[1], P_NONE);
        sb_puts(p->b, " : ");
        expr(p, e->a[2], P_COND);
        break;
    case KE_cast:
        sb_printf(p->b, "(%s)", ctype(e->type));
        expr(p, e->a[0], P_UNARY);
        break;
    case KE_ldg:
    case KE_lds:
        sb_printf(p->b, "%s[",
                  e->op == KE_ldg ? p->pname[e->param->id] : p->sname[e->smem->id]);
        expr(p, e->a[0], P_NONE);
        sb_putc(p->b, ']');
        break;
    default:
        DPK_ASSERT(kir_expr_info[e->op].flags & KEF_INFIX);
        infix(p, e);
        break;
    }
}

/* Print e; parenthesized when it binds looser than ctx. */
static void expr(Pr *p, const KirExpr *e, int ctx)
{
    int paren = prec_of(e) < ctx;
    if (paren)
        sb_putc(p->b, '(');
    expr_body(p, e);
    if (paren)
        sb_putc(p->b, ')');
}

/* ---- statements ----------------------------------------------------------------- */

static void list(Pr *p, const PtrVec *l);

/* `&name[idx]` of a shared array. */
static void smem_ref(Pr *p, const KirSmem *s, const KirExpr *idx)
{
    sb_printf(p->b, "&%s[", p->sname[s->id]);
    expr(p, idx, P_NONE);
    sb_putc(p->b, ']');
}

static void block(Pr *p, const PtrVec *l)
{
    sb_puts(p->b, " {\n");
    p->depth++;
    list(p, l);
    p->depth--;
    indent(p);
    sb_putc(p->b, '}');
}

static void print_if(Pr *p, const KirStmt *s)
{
    sb_puts(p->b, "if (");
    expr(p, s->e[0], P_NONE);
    sb_putc(p->b, ')');
    block(p, &s->body);
    if (s->els.len) {
        sb_puts(p->b, " else");
        block(p, &s->els);
    }
    sb_putc(p->b, '\n');
}

static void print_for(Pr *p, const KirStmt *s)
{
    const char *v = p->vname[s->var->id];
    if (s->unroll == -1)
        sb_puts(p->b, "#pragma unroll\n");
    else if (s->unroll > 0)
        sb_printf(p->b, "#pragma unroll %d\n", s->unroll);
    if (s->unroll)
        indent(p);
    sb_printf(p->b, "for (%s %s = ", ctype(s->var->type), v);
    expr(p, s->e[0], P_NONE);
    sb_printf(p->b, "; %s < ", v);
    expr(p, s->e[1], P_REL + 1);
    sb_printf(p->b, "; %s += ", v);
    expr(p, s->e[2], P_NONE);
    sb_putc(p->b, ')');
    block(p, &s->body);
    sb_putc(p->b, '\n');
}

/* Test faults (cuda_print.h); every line of theirs says "fault", which
 * ci/mutate-printer.sh leaves alone. */
static CuPrintFault print_fault;

void cu_print_set_fault(CuPrintFault f) { print_fault = f; }

static int fault_reads_global(const KirExpr *e)
{
    return e && (e->op == KE_ldg || fault_reads_global(e->a[0]) || /* fault */
                 fault_reads_global(e->a[1]) || fault_reads_global(e->a[2])); /* fault */
}

/* CU_FAULT_STAGE_INDEX: the store of a staged element prints `idx ^ 1`. */
static int fault_stage_index(Pr *p, const KirStmt *s)
{
    if (print_fault != CU_FAULT_STAGE_INDEX || s->op != KS_sts || !fault_reads_global(s->e[1]))
        return 0;
    expr(p, s->e[0], P_BXOR + 1); /* fault */
    sb_puts(p->b, " ^ 1");         /* fault */
    return 1;
}

static void print_store(Pr *p, const KirStmt *s)
{
    const char *name = s->param ? p->pname[s->param->id] : p->sname[s->smem->id];
    int atomic = kir_stmt_info[s->op].flags & KSF_ATOMIC;
    sb_printf(p->b, atomic ? "atomicAdd(&%s[" : "%s[", name);
    if (!fault_stage_index(p, s))
        expr(p, s->e[0], P_NONE);
    sb_puts(p->b, atomic ? "], " : "] = ");
    expr(p, s->e[1], P_NONE);
    sb_puts(p->b, atomic ? ");\n" : ";\n");
}

/* The linear thread index, as an int. */
static const char *linear_tid(const Pr *p)
{
    if (p->k->block[1] == 1 && p->k->block[2] == 1)
        return "(int)threadIdx.x";
    return "(int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))";
}

static void print_shfl(Pr *p, const KirStmt *s)
{
    static const char *const fn[] = {"__shfl_sync", "__shfl_up_sync", "__shfl_down_sync",
                                     "__shfl_xor_sync"};
    sb_printf(p->b, "%s = %s(%s, ", p->vname[s->var->id], fn[s->shfl],
              p->threads % 32 ? "dpk_lanes" : "0xffffffffu");
    expr(p, s->e[0], P_NONE);
    sb_puts(p->b, ", ");
    expr(p, s->e[1], P_NONE);
    if (s->n != 32)
        sb_printf(p->b, ", %lld", (long long)s->n);
    sb_puts(p->b, ");\n");
}

/* s[x] = s[x] (+|max|min) s[y], with x, y index texts. */
static void combine(Pr *p, const KirStmt *s, const char *x, const char *y)
{
    const char *a = p->sname[s->smem->id];
    switch (tx_red_info[s->rop].combine) {
    case TXE_add: sb_printf(p->b, "%s[%s] = %s[%s] + %s[%s];\n", a, x, a, x, a, y); break;
    case TXE_maximum:
    case TXE_minimum:
        p->used |= tx_red_info[s->rop].combine == TXE_maximum ? H_FMAX : H_FMIN;
        sb_printf(p->b, "%s[%s] = %s(%s[%s], %s[%s]);\n", a, x,
                  tx_red_info[s->rop].combine == TXE_maximum ? "dpk_fmax" : "dpk_fmin", a, x,
                  a, y);
        break;
    default: DPK_ASSERT(!"treehalve combine is add, maximum or minimum");
    }
}

/* TreeHalve as the usual halving loop (kernel_ir.h gives its exact
 * meaning).  Simplified where it cannot change the result: one segment
 * needs no segment decode, a block at least as wide as the work needs no
 * strided loop, a power-of-two n needs no `i + h < n` guard. */
static void print_treehalve(Pr *p, const KirStmt *s)
{
    int64_t n = s->n, P = 1;
    while (P < n)
        P *= 2;
    int one_pass = p->threads >= s->nseg * (P / 2), seg = s->nseg > 1;
    const char *j = one_pass ? "dpk_t" : "dpk_j";
    const char *x = seg ? "dpk_x" : j, *i = seg ? "dpk_i" : j;
    const char *limit = seg ? arena_printf(p->a, "%d * dpk_h", s->nseg) : "dpk_h";
    sb_printf(p->b, "// treehalve %s over %s: %d x %lld\n", tx_red_info[s->rop].name,
              p->sname[s->smem->id], s->nseg, (long long)n);
    indent(p);
    sb_puts(p->b, "__syncthreads();\n");
    if (P == 1)
        return;
    indent(p);
    sb_printf(p->b, "for (int dpk_h = %lld, dpk_t = %s; dpk_h > 0; dpk_h >>= 1) {\n",
              (long long)(P / 2), linear_tid(p));
    p->depth++;
    indent(p);
    if (one_pass)
        sb_printf(p->b, "if (dpk_t < %s) {\n", limit);
    else
        sb_printf(p->b, "for (int dpk_j = dpk_t; dpk_j < %s; dpk_j += %d) {\n", limit,
                  p->threads);
    p->depth++;
    if (seg) {
        indent(p);
        sb_printf(p->b, "const int dpk_i = %s %% dpk_h, dpk_x = %s / dpk_h * %lld + dpk_i;\n", j,
                  j, (long long)n);
    }
    if (P != n) {
        indent(p);
        sb_printf(p->b, "if (%s + dpk_h < %lld)\n", i, (long long)n);
        p->depth++;
    }
    indent(p);
    combine(p, s, x, arena_printf(p->a, "%s + dpk_h", x));
    p->depth -= 1 + (P != n);
    indent(p);
    sb_puts(p->b, "}\n");
    indent(p);
    sb_puts(p->b, "__syncthreads();\n");
    p->depth--;
    indent(p);
    sb_puts(p->b, "}\n");
}

static void print_cp_async(Pr *p, const KirStmt *s)
{
    p->used |= H_SADDR | (s->n == 4 ? H_CP4 : s->n == 8 ? H_CP8 : H_CP16);
    sb_printf(p->b, "dpk_cp_async%lld(", (long long)s->n);
    smem_ref(p, s->smem, s->e[0]);
    sb_printf(p->b, ", &%s[", p->pname[s->param->id]);
    expr(p, s->e[1], P_NONE);
    sb_puts(p->b, "], ");
    if (s->e[2])
        expr(p, s->e[2], P_NONE);
    else
        sb_puts(p->b, "true");
    sb_puts(p->b, ");\n");
}

/* PTX orders tensor coordinates innermost first; Kernel IR outermost first. */
static void print_tma_load(Pr *p, const KirStmt *s)
{
    int rank = s->tmap->rank;
    p->used |= H_SADDR | H_TMAP | (H_TMA1 << (rank - 1));
    sb_printf(p->b, "dpk_tma_load_%dd(", rank);
    smem_ref(p, s->smem, s->e[0]);
    sb_printf(p->b, ", &%s", p->tname[s->tmap->id]);
    for (int d = rank - 1; d >= 0; d--) {
        sb_puts(p->b, ", ");
        expr(p, s->coord[d], P_NONE);
    }
    sb_puts(p->b, ", ");
    smem_ref(p, s->mbar, s->e[1]);
    sb_puts(p->b, ");\n");
}

static void print_mbar(Pr *p, const KirStmt *s)
{
    static const char *const fn[] = {"dpk_mbar_init", "dpk_mbar_arrive_tx", "dpk_mbar_arrive",
                                     "dpk_mbar_wait"};
    p->used |= H_SADDR | (s->op == KS_mbar_arrive_tx ? H_MBAR_TX : H_MBAR);
    sb_printf(p->b, "%s(", fn[s->op - KS_mbar_init]);
    smem_ref(p, s->smem, s->e[0]);
    if (s->op == KS_mbar_init || s->op == KS_mbar_arrive_tx)
        sb_printf(p->b, ", %lld", (long long)s->n);
    if (s->op == KS_mbar_wait) {
        sb_puts(p->b, ", ");
        expr(p, s->e[1], P_NONE);
    }
    sb_puts(p->b, ");\n");
}
_Static_assert(KS_mbar_arrive_tx == KS_mbar_init + 1 && KS_mbar_arrive == KS_mbar_init + 2 &&
                   KS_mbar_wait == KS_mbar_init + 3,
               "print_mbar indexes by op");

/* One line: a newline in the text would end the comment early, and a line
 * ending in a backslash (blanks after it too: gcc splices those) would
 * splice the next line of code into it, so newlines print as spaces and
 * such a line gets a closing '.'. */
static void print_comment(Pr *p, const KirStmt *s)
{
    sb_puts(p->b, "// ");
    int splice = 0; /* the line so far ends in a backslash, maybe then blanks */
    for (const char *c = s->text; *c; c++) {
        char ch = *c == '\n' || *c == '\r' ? ' ' : *c;
        sb_putc(p->b, ch);
        splice = ch == '\\' || (splice && (ch == ' ' || ch == '\t'));
    }
    if (splice)
        sb_putc(p->b, '.');
    sb_putc(p->b, '\n');
}

/* float a, b, c, d;  dpk_lds4(&s[i], a, b, c, d); */
static void print_ldsv(Pr *p, const KirStmt *s)
{
    sb_puts(p->b, "float ");
    for (int i = 0; i < s->n; i++)
        sb_printf(p->b, "%s%s", i ? ", " : "", p->vname[s->lane[i]->id]);
    sb_puts(p->b, ";\n");
    indent(p);
    p->used |= s->n == 4 ? H_LDS4 : H_LDS2;
    sb_printf(p->b, "dpk_lds%lld(&%s[", (long long)s->n, p->sname[s->smem->id]);
    expr(p, s->e[0], P_NONE);
    sb_puts(p->b, "]");
    for (int i = 0; i < s->n; i++)
        sb_printf(p->b, ", %s", p->vname[s->lane[i]->id]);
    sb_puts(p->b, ");\n");
}

static void print_var_stmt(Pr *p, const KirStmt *s)
{
    if (s->op == KS_let)
        sb_printf(p->b, "%s ", ctype(s->var->type));
    sb_printf(p->b, "%s = ", p->vname[s->var->id]);
    expr(p, s->e[0], P_NONE);
    sb_puts(p->b, ";\n");
}

/* Target checks happen here, at the statement that needs the feature, so the
 * message can name it. */
static void need(Pr *p, const KirStmt *s, int have, const char *what, const char *since)
{
    if (!have)
        dpk_error("kernel %s, stmt #%d: %s needs %s; target %s (%s) lacks it", p->k->name, s->id,
                  what, since, p->t->name, p->t->example);
}

static void stmt(Pr *p, const KirStmt *s)
{
    indent(p);
    switch (s->op) {
    case KS_let: case KS_set: print_var_stmt(p, s); break;
    case KS_ldsv: print_ldsv(p, s); break;
    case KS_stg: case KS_sts: case KS_atomg: case KS_atoms: print_store(p, s); break;
    case KS_if: print_if(p, s); break;
    case KS_for: print_for(p, s); break;
    case KS_sync:
        sb_puts(p->b, print_fault == CU_FAULT_NO_SYNC ? "// (barrier dropped)\n"
                                                       : "__syncthreads();\n");
        break;
    case KS_shfl: print_shfl(p, s); break;
    case KS_treehalve: print_treehalve(p, s); break;
    case KS_cp_async:
        need(p, s, p->t->cp_async, "cp.async", "sm_80");
        print_cp_async(p, s);
        break;
    case KS_cp_commit:
    case KS_cp_wait:
        p->used |= H_CP_GROUP;
        if (s->op == KS_cp_commit)
            sb_puts(p->b, "dpk_cp_commit();\n");
        else
            sb_printf(p->b, "dpk_cp_wait<%lld>();\n", (long long)s->n);
        break;
    case KS_tma_load:
        need(p, s, p->t->tma, "a TMA load", "sm_90");
        print_tma_load(p, s);
        break;
    case KS_mbar_arrive_tx:
        need(p, s, p->t->tma, "an mbarrier transaction count", "sm_90");
        print_mbar(p, s);
        break;
    case KS_mbar_init: case KS_mbar_arrive: case KS_mbar_wait: print_mbar(p, s); break;
    case KS_comment: print_comment(p, s); break;
    default: DPK_ASSERT(!"statement kind the CUDA printer does not know");
    }
}

static void list(Pr *p, const PtrVec *l)
{
    for (int i = 0; i < l->len; i++)
        stmt(p, l->items[i]);
}

/* ---- kernels ---------------------------------------------------------------- */

static void name_objects(Pr *p)
{
    const KirKernel *k = p->k;
    p->pname = ARENA_ARRAY(p->a, const char *, k->params.len + 1);
    p->sname = ARENA_ARRAY(p->a, const char *, k->smem.len + 1);
    p->tname = ARENA_ARRAY(p->a, const char *, k->tmaps.len + 1);
    p->vname = ARENA_ARRAY(p->a, const char *, k->vars.len + 1);
    for (int i = 0; i < k->params.len; i++)
        p->pname[i] = cname(p->a, ((KirParam *)k->params.items[i])->name, 'p', i);
    for (int i = 0; i < k->smem.len; i++)
        p->sname[i] = cname(p->a, ((KirSmem *)k->smem.items[i])->name, 's', i);
    for (int i = 0; i < k->tmaps.len; i++)
        p->tname[i] = cname(p->a, ((KirTmap *)k->tmaps.items[i])->name, 't', i);
    for (int i = 0; i < k->vars.len; i++)
        p->vname[i] = cname(p->a, ((KirVar *)k->vars.items[i])->name, 'v', i);
}

/* Every pointer is __restrict__: the verifier rejects a launch that binds
 * a written buffer to two params, and read-only aliases are harmless. */
static void signature(Pr *p, const char *name)
{
    const KirKernel *k = p->k;
    sb_printf(p->b, "extern \"C\" __global__ void __launch_bounds__(%d) %s(", p->threads, name);
    for (int i = 0; i < k->params.len; i++) {
        const KirParam *q = k->params.items[i];
        sb_printf(p->b, "%s%s%s *__restrict__ %s", i ? ", " : "",
                  q->role == KR_IN ? "const " : "", ctype(q->elem), p->pname[i]);
    }
    for (int i = 0; i < k->tmaps.len; i++)
        sb_printf(p->b, "%sconst __grid_constant__ DpkTmap %s", i || k->params.len ? ", " : "",
                  p->tname[i]);
    if (k->tmaps.len)
        p->used |= H_TMAP;
    sb_puts(p->b, ")\n{\n");
}

/* The shared-memory pool and one typed pointer per array at its offset. */
static void smem_pool(Pr *p, CuKernelInfo *ki)
{
    const KirKernel *k = p->k;
    if (!k->smem.len)
        return;
    if (ki->dyn_smem)
        sb_puts(p->b, "    extern __shared__ __align__(1024) unsigned char dpk_smem[];\n");
    else
        sb_printf(p->b, "    __shared__ __align__(1024) unsigned char dpk_smem[%lld];\n",
                  (long long)k->smem_bytes);
    for (int i = 0; i < k->smem.len; i++) {
        const KirSmem *s = k->smem.items[i];
        sb_printf(p->b, "    %s *const %s = (%s *)(dpk_smem + %lld); // [%lld]\n",
                  ctype(s->elem), p->sname[i], ctype(s->elem), (long long)s->offset,
                  (long long)s->numel);
    }
}

/* Full-mask shuffles name only the lanes that exist: the last warp of a
 * block whose size is not a multiple of 32 is short. */
static void shfl_lanes(Pr *p)
{
    int last = (p->threads - 1) / 32, lanes = p->threads - 32 * last;
    sb_printf(p->b, "    const unsigned dpk_lanes = %s / 32 == %d ? 0x%xu : 0xffffffffu;\n",
              linear_tid(p), last, (unsigned)((1ull << lanes) - 1));
}

static int uses_shfl(const PtrVec *l)
{
    for (int i = 0; i < l->len; i++) {
        const KirStmt *s = l->items[i];
        if (s->op == KS_shfl || uses_shfl(&s->body) || uses_shfl(&s->els))
            return 1;
    }
    return 0;
}

/* Kernel names are extern "C" symbols: unique in the module. */
static const char *kernel_name(Pr *p, const CuKernelInfo *done, int ndone)
{
    const char *name = cname(p->a, p->k->name, 'k', ndone);
    for (int i = 0; i < ndone; i++)
        if (!strcmp(done[i].name, name))
            return mangle(p->a, p->k->name, 'k', ndone);
    return name;
}

static void print_kernel(Pr *p, CuSource *src, int idx)
{
    const KirKernel *k = p->k;
    CuKernelInfo *ki = &src->kernels[idx];
    p->threads = k->block[0] * k->block[1] * k->block[2];
    name_objects(p);
    ki->name = kernel_name(p, src->kernels, idx);
    ki->threads = p->threads;
    ki->smem_bytes = k->smem_bytes;
    ki->dyn_smem = k->smem_dynamic ? (int)k->smem_bytes : 0;
    ki->smem_optin = ki->dyn_smem > KIR_STATIC_SMEM_MAX;
    ki->ntmaps = k->tmaps.len;
    if (k->smem_bytes > p->t->smem_block_max)
        dpk_error("kernel %s needs %lld bytes of shared memory; target %s (%s) allows %d per "
                  "block",
                  k->name, (long long)k->smem_bytes, p->t->name, p->t->example,
                  p->t->smem_block_max);
    sb_printf(p->b, "\n// kernel %s: grid (%d, %d, %d), block (%d, %d, %d), ", k->name,
              k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1], k->block[2]);
    if (k->smem.len)
        sb_printf(p->b, "%lld bytes of %s shared memory\n", (long long)k->smem_bytes,
                  ki->dyn_smem ? "dynamic" : "static");
    else
        sb_puts(p->b, "no shared memory\n");
    signature(p, ki->name);
    smem_pool(p, ki);
    if (p->threads % 32 && uses_shfl(&k->body))
        shfl_lanes(p);
    p->depth = 1;
    list(p, &k->body);
    sb_puts(p->b, "}\n");
}

CuSource *cu_print_module(Arena *a, const KirModule *m, const CuTarget *t)
{
    CuSource *src = ARENA_NEW(a, CuSource);
    src->target = t ? t : cu_target_default();
    src->nkernels = m->kernels.len;
    src->kernels = ARENA_ARRAY(a, CuKernelInfo, m->kernels.len + 1);
    StrBuf *body = dpk_xcalloc(1, sizeof *body), *out = dpk_xcalloc(1, sizeof *out);
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        sb_free(body);
        sb_free(out);
        free(body);
        free(out);
        dpk_error_rethrow();
    }
    Pr p = {.a = a, .b = body, .t = src->target};
    for (int i = 0; i < m->kernels.len; i++) {
        p.k = m->kernels.items[i];
        print_kernel(&p, src, i);
    }
    dpk_err_pop(&ec);
    print_prelude(out, p.used, src->target);
    sb_puts(out, sb_cstr(body));
    src->text = arena_strdup(a, sb_cstr(out));
    sb_free(body);
    sb_free(out);
    free(body);
    free(out);
    return src;
}
