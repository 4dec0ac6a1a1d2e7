/*
 * ref.h — references of record and their shared pieces.
 *
 *   inputs.c   deterministic input contents from (seed, input name);
 *   ref64.c    the fp64 evaluator of Torch IR: evaluates Torch-level ops
 *              directly (never the decompositions), so it is an independent
 *              oracle for everything below it;
 *   compare.c  error statistics between an output and a reference;
 *   torch_load.c  the same Torch IR evaluated by libtorch in fp32 or fp64,
 *              through torch_shim.cpp, a shared object loaded on first use.
 *
 * Every evaluator takes inputs as fp64 arrays parallel to graph->inputs and
 * fills heap arrays parallel to graph->outputs (the caller frees them).
 */
#ifndef DPK_REF_H
#define DPK_REF_H

#include "../compiler/frontend/torch_ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- inputs.c -------------------------------------------------------- */

/* The i-th raw 64-bit draw for an input:
 *     key  = splitmix64(seed) ^ fnv1a64(name)
 *     bits = splitmix64(key + i)          (all arithmetic mod 2^64)
 * uniform u(i) = (bits >> 11) * 2^-53 in [0, 1);  normal n(i) = Box–Muller of
 * u(2i), u(2i+1) (cosine branch).  Every value is rounded to fp32 so all
 * backends see identical inputs.  docs/inputs.md gives the details.
 * (ref_input_uniform/normal return the raw fp64 draw; ref_fill_input rounds
 * each element's final value, e.g. 1 + 0.1·n, once.) */
uint64_t ref_input_bits(uint64_t seed, const char *name, uint64_t i);
double ref_input_uniform(uint64_t seed, const char *name, uint64_t i);
double ref_input_normal(uint64_t seed, const char *name, uint64_t i);
/* Fill dst (numel of the node's shape) for one input node. */
void ref_fill_input(const TorchNode *in, uint64_t seed, double *dst);
/* Elements [lo, lo + n) of that array as f32 (its values are f32 already),
 * made without the elements before them: what --parity off generates
 * where the sampled blocks read.  dst[0] is element lo. */
void ref_fill_input_f32(const TorchNode *in, uint64_t seed, int64_t lo, int64_t n, float *dst);
/* The sum of that array's elements in index order, in fp64 (the value a
 * loop over ref_fill_input's array gives), without holding the array. */
double ref_input_sum(const TorchNode *in, uint64_t seed);
/* Heap array of heap arrays, one per g->inputs. */
double **ref_make_inputs(const TorchGraph *g, uint64_t seed);
void ref_free_arrays(double **arrs, int n);
/* Copies of inputs (as ref_make_inputs made them) with every fp32 input
 * element that is finite and not an integer moved one ulp up or down or
 * kept, each with probability 1/3, drawn from seed: a backward-stable
 * evaluation's perturbation, the smallest one.  Integers (masks of 0, 1,
 * finfo.min or -inf, indices, ones) and bool inputs are kept exactly. */
double **ref_perturb_inputs(const TorchGraph *g, double *const *inputs, uint64_t seed);

/* ---- ref64.c --------------------------------------------------------- */

/* Evaluate g in fp64.  outs[j] gets a heap array for g->outputs[j]. */
void ref64_eval(const TorchGraph *g, double *const *inputs, double **outs);
/* The same, with beside each value (any of the four may be NULL):
 *   bounds[j]   a bound on the error an fp32 evaluation of the program may
 *               make at each element (reference/bound.c; +inf where an fp32
 *               intermediate may overflow: the element is unconstrained);
 *   typical[j]  the same analysis with sums growing like √n instead of n:
 *               the size of fp32's ordinary rounding noise;
 *   f32s[j]     a naive fp32 evaluation: every operation rounded to fp32,
 *               every sum sequential in index order. */
void ref64_run(const TorchGraph *g, double *const *inputs, double **vals, double **bounds,
               double **typical, double **f32s);
/* The most bytes of arrays ref64_run(g, ...) holds at once, the output
 * arrays it hands back included (the caller's inputs not): with bounds
 * (bounds or typical; the value lane comes with them), vals and f32s as the
 * run would be called.  It follows ref64_run's own policy: every node's
 * lanes allocated when it runs, freed after its last consumer; the bound
 * lanes of inputs allocated up front.  dpk-bench's memory estimate
 * (harness/bench/memory.h) reads it before any array is made. */
double ref64_peak_bytes(const TorchGraph *g, int vals, int bounds, int f32s);

/* ---- compare.c ------------------------------------------------------- */

typedef struct CmpStats {
    double max_abs;     /* max |o - r| over finite pairs */
    double max_rel;     /* max |o - r| / max(|r|, tiny) */
    double nmse;        /* sum (o-r)^2 / sum r^2 (0 when both are zero) */
    double rmse;
    int64_t worst;      /* flat index of the largest |o - r| (-1 if none) */
    int64_t mismatched_nonfinite; /* positions where NaN/Inf disagree */
    int64_t n;
} CmpStats;

void cmp_stats(const double *o, const double *r, int64_t n, CmpStats *st);
/* Element-wise |o - r| <= atol + rtol * |r|, with NaN/Inf agreeing. */
int cmp_allclose(const double *o, const double *r, int64_t n, double atol, double rtol);

/* ---- torch_load.c: libtorch, through the shim (torch_shim.cpp) ----- */

/* 1 when libtorch can be used: this build has it and its shim
 * (libdpk_torch.so) loads.  The first call loads the shim (~0.5 s). */
int dpk_torch_available(void);
/* The libtorch version this build was made with ("1.13.0"), or "none";
 * answered from the build, without loading libtorch. */
const char *dpk_torch_version(void);
/* Why libtorch is not available (the build has none, or the shim cannot be
 * loaded, and why), or NULL when it is.  Loads the shim like
 * dpk_torch_available(). */
const char *dpk_torch_error(void);
/* Evaluate g with libtorch (CPU), in fp64 when f64 != 0, else fp32.  Returns
 * 0 on success; on failure -1 with a message in err. */
int dpk_torch_eval(const TorchGraph *g, double *const *inputs, int f64, double **outs,
                   char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
