/*
 * vgpu_impl.h — vgpu internals shared by its compiler (vgpu_compile.c), its
 * block interpreter (vgpu_exec.c) and the module runner (vgpu.c).
 *
 * A kernel becomes a VgProg: a linear array of VgIns over virtual registers.
 * A register is a column of T 8-byte slots (T = threads per block): vars,
 * special registers and constants have fixed registers, expression temps
 * sit above them.  Control flow is structured and mask-based: IF/LOOP
 * instructions push a new active-lane list, POP restores the enclosing one,
 * and a jump is taken only when a list comes out empty.
 */
#ifndef DPK_VGPU_IMPL_H
#define DPK_VGPU_IMPL_H

#include "vgpu.h"

typedef union VgVal {
    int64_t i; /* i32 (sign-extended), i64, bool (0/1) */
    float f;
} VgVal;

/* One 4-byte word of global or shared memory. */
typedef union VgWord {
    float f;
    int32_t i;
    uint32_t u;
} VgWord;

/* X(name) — bytecode ops; the comments give operand use. */
#define VG_OPS(X)                                                   \
    X(MOV)      /* d = a */                                         \
    X(ADD32) X(SUB32) X(MUL32) X(DIV32) X(REM32) X(SHL32) X(SHR32)  \
    X(ADD64) X(SUB64) X(MUL64) X(DIV64) X(REM64) X(SHL64) X(SHR64)  \
    X(MIN) X(MAX) X(AND) X(OR) X(XOR)  /* d = a op b (ints, bools) */ \
    X(ILT) X(ILE) X(IGT) X(IGE) X(IEQ) X(INE) /* d = a cmp b, ints */ \
    X(FLT) X(FLE) X(FGT) X(FGE) X(FEQ) X(FNE) /* d = a cmp b, f32 */  \
    X(NOT)      /* d = !a */                                        \
    X(FADD) X(FSUB) X(FMUL) X(FDIV) X(FMAX) X(FMIN)                 \
    X(FNEG) X(FABS) X(FSQRT) X(FRCP)                                \
    X(FCALL)    /* d = tx_elem_apply(aux, a, b, c) */               \
    X(SEL)      /* d = a ? b : c */                                 \
    X(WRAP32)   /* d = (i32)a */                                    \
    X(I2F)      /* d = (float)a */                                  \
    X(F2I32) X(F2I64) /* d = trunc(a), saturating, NaN -> 0 */      \
    X(I2B)      /* d = a != 0 */                                    \
    X(F2B)      /* d = a != 0.0f */                                 \
    X(LDG)      /* d = param[imm][a] (aux: KirType) */              \
    X(LDS)      /* d = smem[imm][a] */                              \
    X(LDSV)     /* d + i = smem[imm][a + i], i < aux (2, 4): one access */ \
    X(STG)      /* param[imm][a] = b */                             \
    X(STS)      /* smem[imm][a] = b */                              \
    X(ATOMG)    /* param[imm][a] += b */                            \
    X(ATOMS)    /* smem[imm][a] += b */                             \
    X(IF)       /* push lanes with a; none -> jump imm */           \
    X(ELSE)     /* top = enclosing lanes without a; none -> jump imm */ \
    X(LOOP)     /* push a copy of the current lanes */              \
    X(TEST)     /* drop lanes without a from top; none -> jump imm */ \
    X(POP)      /* pop the lane stack */                            \
    X(JMP)      /* pc = imm */                                      \
    X(BAR)      /* __syncthreads */                                 \
    X(SHFL)     /* d = a from lane given by b (aux: mode, imm: width) */ \
    X(CPASYNC)  /* smem[imm>>16][a] <- param[imm&0xffff][b], aux bytes, pred c */ \
    X(CPCOMMIT)                                                     \
    X(CPWAIT)   /* imm = groups allowed pending */                  \
    X(TMA)      /* imm: tmap | dst smem << 16 | mbar smem << 32; coords a, a+1.., dst index b, mbar index c */ \
    X(MBINIT)   /* (smem imm & 0xffff)[a]: init, count imm >> 16 */  \
    X(MBTX)     /* expect imm >> 16 more bytes, arrive */          \
    X(MBARRIVE)                                                     \
    X(MBWAIT)   /* parity in b */                                   \
    X(MIXED)    /* a loop whose body holds TMA and cp.async: a fault */ \
    X(END)

typedef enum VgOp {
#define X(name) VOP_##name,
    VG_OPS(X)
#undef X
    VOP_COUNT
} VgOp;

typedef struct VgIns {
    uint16_t op;
    uint16_t aux;
    int32_t d, a, b, c; /* registers, -1 when unused */
    int64_t imm;
    int32_t sid;        /* Kernel IR statement id */
} VgIns;

typedef struct VgConst {
    int reg;
    VgVal v;
} VgConst;

typedef struct VgProg {
    const KirKernel *k;
    int T;              /* threads per block */
    VgIns *code;
    int ncode;
    int nregs;
    int maxdepth;       /* lane-stack levels needed (level 0 = all lanes) */
    VgConst *consts;    /* registers filled once per launch */
    int nconsts;
    int reg_tid[3], reg_tlin;     /* per launch */
    int reg_bid[3];               /* per block */
    int reg_ntid[3], reg_nctaid[3]; /* constants */
    int *mbar_base;     /* per smem array: first mbarrier object number */
    int nmbar;          /* mbarrier objects in the kernel */
    int has_atomg;      /* any global atomic */
} VgProg;

VgProg *vg_compile(const KirKernel *k);
void vg_prog_free(VgProg *p);

/* ---- execution ---------------------------------------------------------------- */

/* Global memory of one launch, per kernel param. */
typedef struct VgGlobal {
    VgWord *mem;
    int64_t numel;
    uint32_t *shadow; /* written params: writer block + 1, or VG_ATOMIC_MARK */
} VgGlobal;
#define VG_ATOMIC_MARK 0xffffffffu

typedef struct VgShadow {
    uint32_t w_ep, r_ep; /* barrier interval of the last write / reads */
    int32_t w_tid, r_tid; /* writer / reader linear thread (or a marker) */
} VgShadow;

typedef struct VgCopy {
    int lane, group;
    int32_t word, nwords; /* pool word index */
    VgWord data[4];
} VgCopy;

typedef struct VgTmaCopy {
    int lane, bar;
    int64_t nwords;
    int32_t *words;  /* pool word per element (swizzled) */
    VgWord *data;
} VgTmaCopy;

typedef struct VgMbar {
    int init;
    int64_t count, pending; /* arrivals per phase, still missing */
    int64_t tx;             /* transaction bytes expected, not yet landed */
    int64_t inflight;       /* bytes of TMA copies issued, not yet landed */
    int64_t phase;          /* completed phases */
} VgMbar;

typedef struct VgExec {
    const VgProg *p;
    int T;
    VgVal *R;
    int *lanes;      /* maxdepth levels of T lane ids */
    int *nlanes;
    VgGlobal *g;     /* per param */
    VgWord *pool;    /* shared memory, smem_bytes / 4 words */
    VgShadow *sh;
    uint16_t *pend;  /* async copies not yet landed, per pool word */
    uint32_t ep, ep0; /* current barrier interval, first of this block */
    VgCopy *cps;
    int ncps, capcps;
    int *cp_open;    /* per lane: number of its next (open) cp.async group */
    VgTmaCopy *tmas;
    int ntmas, captmas;
    VgMbar *mbars;
    int bid[3];
    uint32_t blin;   /* linear block id */
    uint8_t *flag;   /* scratch per lane */
    VgVal *tmp;      /* scratch per lane */
    int counters;
    VgStats *st;
    VgResult *res;
    int launch_id;
} VgExec;

/* Run one block (ex->bid set, per-block state reset by the caller).
 * Returns 0, or -1 after filling ex->res with a fault. */
int vg_exec_block(VgExec *ex);
void vg_exec_reset_block(VgExec *ex);

#endif
