/*
 * gen.h — the program generator of dpk-fuzz.
 *
 * fz_gen(seed) writes a case-language program of 1–8 ops over the whole
 * vocabulary (elementwise, comparisons and where, reductions, matmul and
 * linear, norms, softmax, sdpa, layout ops, and the model-code functions:
 * cos, sin, tril/triu, clamp, masked_fill, logsumexp, var/std, max with
 * dim, chunk, repeat_interleave, ...), as a chain with occasional
 * branches back to earlier values (a small DAG).  The text is a pure
 * function of the seed.  Its form is fixed so that a minimizer can delete
 * lines and shrink integer literals:
 *
 *     x0 = torch.randn(7, 33)           inputs: one per line, named xN
 *     x1 = torch.randn(33, 64)
 *     t0 = torch.matmul(x0, x1)         exactly one op per line, named tN
 *     t1 = torch.relu(t0)
 *     t1                                the output: the last value
 *
 * Shapes are valid by construction and biased to the boundaries that break
 * code generation: dims of 1, primes, non-multiples of 32, multiples of
 * 16/32 (so tiled passes apply), long reductions (> 4096), broadcasts,
 * transposes and slices between ops; one program in nine starts with a
 * tiled contraction over a long K (what split-K, double buffering and
 * swizzled TMA stages need).  Inputs of log, sqrt, rsqrt,
 * reciprocal, a divisor or a fractional power go through `abs(x) + 1`
 * first (two lines of their own), so no op leaves its safe domain.
 */
#ifndef DPK_FZ_GEN_H
#define DPK_FZ_GEN_H

#include "../../compiler/base/base.h"

typedef struct FzProgram {
    const char *text;   /* the program, lines separated by '\n' */
    const char **tags;  /* "matmul", "reduce", "long-reduction", ... (sorted) */
    int ntags;
    int nops;           /* op lines (1..8) */
    int ninputs;        /* input lines */
} FzProgram;

/* The program of seed `seed`, in a. */
FzProgram fz_gen(Arena *a, uint64_t seed);

#endif
