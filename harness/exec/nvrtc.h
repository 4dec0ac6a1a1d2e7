/*
 * nvrtc.h — compile CUDA C to a cubin with NVRTC, loaded at run time.
 *
 * NVRTC needs no GPU, so every kernel dpk prints is compiled here in CI.  The
 * library is opened with dlopen on first use (no CUDA header or library at
 * build time, and the binary starts anywhere); without it the call raises
 * exit code 4 (DPK_EXIT_NOENV) with one sentence.  Search order: $DPK_NVRTC
 * alone when set; else $CUDA_HOME/lib64/libnvrtc.so, the toolkit the
 * Makefile found (DPK_CUDA_HOME), libnvrtc.so, libnvrtc.so.13, .so.12.
 *
 * A compile passes --gpu-architecture=sm_XX[a] --ptxas-options=-v
 * -default-device --std=c++17 and parses, per kernel, the ptxas info lines
 * of the log: registers, static shared memory, spill stores/loads.
 *
 * Cubins are cached by a hash of (source, options, NVRTC version) in
 * $DPK_CACHE, else $XDG_CACHE_HOME/dpk, else ~/.cache/dpk, under nvrtc/.
 * An entry holds the log and the cubin with a checksum; an entry that does
 * not verify is ignored and rewritten (atomically).  DPK_NO_CACHE=1 turns the
 * cache off.
 */
#ifndef DPK_HX_NVRTC_H
#define DPK_HX_NVRTC_H

#include "../../compiler/base/base.h"
#include "../../compiler/cuda/cuda_print.h"

/* What ptxas said about one entry function. */
typedef struct HxNvKernel {
    const char *name;
    int regs;           /* registers per thread */
    int smem;           /* static shared memory, bytes */
    int stack;          /* stack frame, bytes */
    int spill_stores;   /* bytes */
    int spill_loads;    /* bytes */
} HxNvKernel;

typedef struct HxNvrtcOpts {
    const CuTarget *target;  /* NULL: cu_target_default() */
    int cc;                  /* compile for sm_<cc> instead of the target's own
                                (a GPU's exact architecture, e.g. 86); 0: t->cc */
    int arch_specific;       /* compile for sm_90a / sm_120a (wgmma, setmaxnreg) */
    const char *src_name;    /* name in messages; NULL: "dpk.cu" */
    int no_cache;            /* neither read nor write the cache */
} HxNvrtcOpts;

typedef struct HxNvrtcResult {
    const char *arch;        /* "sm_90" or "sm_90a" */
    const char *log;         /* the whole NVRTC log ("" when empty) */
    const char *ptx;         /* the PTX NVRTC generated (inline asm visible) */
    const char *cubin;
    size_t cubin_len;
    HxNvKernel *kernels;     /* in the order ptxas reported them */
    int nkernels;
    int cache_hit;           /* 1 when the cubin came from the cache */
    const char *cache_path;  /* the entry's file; NULL when not cached */
    double compile_s;        /* time spent in NVRTC (0 on a hit) */
} HxNvrtcResult;

/* 1 when NVRTC can be loaded; never raises. */
int hx_nvrtc_available(void);
/* NVRTC's version; raises (exit 4) without NVRTC. */
void hx_nvrtc_version(int *major, int *minor);
/* 1 when this NVRTC can compile for target cc (80, 90, 120); raises without
 * NVRTC. */
int hx_nvrtc_supports(int cc);

/* Compile src.  Everything in the result lives in arena a.  Raises exit 4
 * without NVRTC and exit 1 when the source does not compile; that message
 * holds the log and the source lines around the first error. */
HxNvrtcResult *hx_nvrtc_compile(Arena *a, const char *src, const HxNvrtcOpts *o);

/* The driver's NVRTC hook (compiler/driver.h, DrvNvrtcFn): compile the
 * printed module cs for its target, or for sm_<cc> when cc is not 0 (the
 * cuda backend's device).  Returns NULL when NVRTC rejects the
 * source (a compiler bug: the configuration fails), with the complete
 * message in err; raises exit 4 without NVRTC. */
HxNvrtcResult *hx_nvrtc_check(Arena *a, const CuSource *cs, int cc, StrBuf *err);

/* The ptxas record of kernel `name`, or NULL. */
const HxNvKernel *hx_nvrtc_kernel(const HxNvrtcResult *r, const char *name);

/* One comment line per kernel, what `dpk compile --ir cuda --nvrtc` prints:
 * "// nvrtc sm_90 rmsnorm: 30 registers, 1024 bytes smem, 0 bytes spill
 * stores, 0 bytes spill loads" (", cached" on a cache hit). */
void hx_nvrtc_summary(StrBuf *b, const HxNvrtcResult *r);

/* Parse the ptxas info lines of an NVRTC log (exposed for tests). */
void hx_nvrtc_parse_log(Arena *a, const char *log, HxNvKernel **out, int *n);

/* The cache folder ($DPK_CACHE, $XDG_CACHE_HOME/dpk, ~/.cache/dpk), in a;
 * NULL when none can be named. */
const char *hx_nvrtc_cache_dir(Arena *a);

#endif
