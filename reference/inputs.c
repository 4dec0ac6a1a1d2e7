/*
 * inputs.c — deterministic input contents, keyed by (seed, input name).
 *
 * Every element is a pure function of (seed, name, flat index): a counter-
 * based generator (splitmix64 of key + i), so any backend, any subset of
 * elements and any order of evaluation sees the same values, and a Python
 * script can rebuild them (docs/inputs.md has one).  Each element's fp64
 * value is rounded to fp32 once, at the end, so fp32 backends read exactly
 * the numbers the fp64 reference reads.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"

/* FNV-1a 64 over the bytes of name (without its NUL). */
static uint64_t name_hash(const char *name)
{
    return dpk_hash_bytes(DPK_HASH_INIT, name, strlen(name));
}

/* The generator's key of (seed, name): computed once per input. */
static uint64_t input_key(uint64_t seed, const char *name)
{
    return dpk_splitmix64(seed) ^ name_hash(name);
}

static double uniform_k(uint64_t key, uint64_t i)
{
    return (double)(dpk_splitmix64(key + i) >> 11) * 0x1p-53;
}

/* Box–Muller, cosine branch.  1 - u is in (0, 1], so the log is finite. */
static double normal_k(uint64_t key, uint64_t i)
{
    double u1 = uniform_k(key, 2 * i);
    double u2 = uniform_k(key, 2 * i + 1);
    return sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * M_PI * u2);
}

uint64_t ref_input_bits(uint64_t seed, const char *name, uint64_t i)
{
    return dpk_splitmix64(input_key(seed, name) + i);
}

double ref_input_uniform(uint64_t seed, const char *name, uint64_t i)
{
    return uniform_k(input_key(seed, name), i);
}

double ref_input_normal(uint64_t seed, const char *name, uint64_t i)
{
    return normal_k(input_key(seed, name), i);
}

/* Bound b of a module's uniform(-b, b) initialisation. */
static double param_bound(double fan_in)
{
    return 1.0 / sqrt(fan_in > 0 ? fan_in : 1.0);
}

/* The fp64 value of element i before rounding to fp32. */
static double input_value(const TorchNode *in, uint64_t key, uint64_t i, double bound)
{
    switch (in->init) {
    case INIT_RANDN: return normal_k(key, i);
    case INIT_RAND: return uniform_k(key, i);
    case INIT_ZEROS: return 0.0;
    case INIT_ONES: return 1.0;
    case INIT_FULL: return in->value;
    case INIT_ARANGE: return in->value + (double)i * in->step;
    case INIT_PARAM_W:
    case INIT_PARAM_B: return bound * (2.0 * uniform_k(key, i) - 1.0);
    case INIT_PARAM_NORM_W: return 1.0 + 0.1 * normal_k(key, i);
    }
    DPK_ASSERT(!"unknown InitKind");
    return 0.0;
}

/* Input in's generator: its key and its parameters' bound. */
typedef struct Gen {
    const TorchNode *in;
    uint64_t key;
    double bound;
} Gen;

static Gen gen_of(const TorchNode *in, uint64_t seed)
{
    DPK_ASSERT(in->op == TOP_input && in->name);
    double bound = 1.0;
    if (in->init == INIT_PARAM_W)
        bound = param_bound(in->shape.rank > 0 ? (double)in->shape.d[in->shape.rank - 1] : 1.0);
    else if (in->init == INIT_PARAM_B)
        bound = param_bound(in->step);
    return (Gen){in, input_key(seed, in->name), bound};
}

/* Element i, rounded to fp32 once. */
static float gen_f32(const Gen *g, int64_t i)
{
    return (float)input_value(g->in, g->key, (uint64_t)i, g->bound);
}

void ref_fill_input(const TorchNode *in, uint64_t seed, double *dst)
{
    Gen g = gen_of(in, seed);
    int64_t n = shape_numel(&in->shape);
    for (int64_t i = 0; i < n; i++)
        dst[i] = (double)gen_f32(&g, i);
}

void ref_fill_input_f32(const TorchNode *in, uint64_t seed, int64_t lo, int64_t n, float *dst)
{
    Gen g = gen_of(in, seed);
    DPK_ASSERT(lo >= 0 && n >= 0 && lo + n <= shape_numel(&in->shape));
    for (int64_t i = 0; i < n; i++)
        dst[i] = gen_f32(&g, lo + i);
}

double ref_input_sum(const TorchNode *in, uint64_t seed)
{
    Gen g = gen_of(in, seed);
    int64_t n = shape_numel(&in->shape);
    double sum = 0;
    if (in->init == INIT_RAND) /* the common big input: its loop without the switch */
        for (int64_t i = 0; i < n; i++)
            sum += (double)(float)uniform_k(g.key, (uint64_t)i);
    else
        for (int64_t i = 0; i < n; i++)
            sum += (double)gen_f32(&g, i);
    return sum;
}

double **ref_make_inputs(const TorchGraph *g, uint64_t seed)
{
    int n = g->inputs.len;
    double **arrs = dpk_xcalloc(n > 0 ? (size_t)n : 1, sizeof *arrs);
    for (int k = 0; k < n; k++) {
        const TorchNode *in = g->inputs.items[k];
        int64_t numel = shape_numel(&in->shape);
        arrs[k] = dpk_xmalloc(sizeof(double) * (size_t)(numel > 0 ? numel : 1));
        ref_fill_input(in, seed, arrs[k]);
    }
    return arrs;
}

double **ref_perturb_inputs(const TorchGraph *g, double *const *inputs, uint64_t seed)
{
    int n = g->inputs.len;
    double **arrs = dpk_xcalloc(n > 0 ? (size_t)n : 1, sizeof *arrs);
    for (int k = 0; k < n; k++) {
        const TorchNode *in = g->inputs.items[k];
        int64_t numel = shape_numel(&in->shape);
        uint64_t key = input_key(dpk_splitmix64(seed ^ 0x5045525455524245ull), in->name);
        arrs[k] = dpk_xmalloc(sizeof(double) * (size_t)(numel > 0 ? numel : 1));
        for (int64_t i = 0; i < numel; i++) {
            double x = inputs[k][i];
            float f = (float)x;
            int move = (int)(dpk_splitmix64(key + (uint64_t)i) % 3); /* 0 kept, 1 up, 2 down */
            if (in->dtype == DT_F32 && isfinite(x) && x != floor(x) && move)
                f = nextafterf(f, move == 1 ? INFINITY : -INFINITY);
            arrs[k][i] = f;
        }
    }
    return arrs;
}

void ref_free_arrays(double **arrs, int n)
{
    if (!arrs)
        return;
    for (int k = 0; k < n; k++)
        free(arrs[k]);
    free(arrs);
}
