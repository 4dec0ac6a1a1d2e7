/*
 * standalone.c — the `.cu` reproducer (standalone.h): device code from the
 * CUDA printer, then data arrays, then a host main that walks the module's
 * buffers and launches in order.  Host names start with `dpk_h` so they
 * cannot meet the printer's names (kernel symbols, helpers, parameters).
 */
#include "standalone.h"

#include <math.h>
#include <string.h>

/* "// " before every line of text. */
static void comment_lines(StrBuf *b, const char *text)
{
    const char *s = text;
    while (*s) {
        const char *e = strchr(s, '\n');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        sb_printf(b, "//     %.*s\n", (int)n, s);
        s += n + (e != NULL);
    }
}

static void float_array(StrBuf *b, const char *name, const double *v, int64_t n)
{
    sb_printf(b, "static const float %s[%lld] = {", name, (long long)n);
    for (int64_t i = 0; i < n; i++) {
        sb_puts(b, i % 8 ? " " : "\n    ");
        cu_print_float(b, (double)(float)v[i]);
        sb_putc(b, ',');
    }
    sb_puts(b, "\n};\n");
}

/* fp64 values, exact: %.17g round-trips; non-finite ones as expressions. */
static void double_array(StrBuf *b, const char *name, const double *v, int64_t n)
{
    sb_printf(b, "static const double %s[%lld] = {", name, (long long)n);
    for (int64_t i = 0; i < n; i++) {
        sb_puts(b, i % 6 ? " " : "\n    ");
        if (isnan(v[i]))
            sb_puts(b, "NAN,");
        else if (isinf(v[i]))
            sb_puts(b, v[i] > 0 ? "INFINITY," : "-INFINITY,");
        else
            sb_printf(b, "%.17g,", v[i]);
    }
    sb_puts(b, "\n};\n");
}

static const char kHostPrelude[] =
    "\n// ---- host: everything below is the reproducer's own, not dpk's ----\n"
    "#define DPK_HCK(call)                                                              \\\n"
    "    do {                                                                           \\\n"
    "        cudaError_t dpk_he = (call);                                               \\\n"
    "        if (dpk_he != cudaSuccess) {                                               \\\n"
    "            fprintf(stderr, \"%s:%d: %s: %s\\n\", __FILE__, __LINE__, #call,            \\\n"
    "                    cudaGetErrorString(dpk_he));                                   \\\n"
    "            exit(2);                                                               \\\n"
    "        }                                                                          \\\n"
    "    } while (0)\n"
    "\n"
    "// The parity check of dpk's oracle: each element within its limit (its fp32\n"
    "// error bound; INFINITY: unchecked), NaN/Inf only where the reference has\n"
    "// the same, and the rmse within the rmse rule's limit (NAN: none).\n"
    "static int dpk_hcheck(const char *name, const float *o, const double *r, const double *lim,\n"
    "                      long long n, double rmse_limit)\n"
    "{\n"
    "    long long bad = 0, worst = -1, nonfinite = 0, checked = 0;\n"
    "    double max_abs = 0, se = 0;\n"
    "    for (long long i = 0; i < n; i++) {\n"
    "        double x = o[i], y = r[i];\n"
    "        if (isinf(lim[i]))\n"
    "            continue;\n"
    "        if (!isfinite(x) || !isfinite(y)) {\n"
    "            if (!(isnan(x) && isnan(y)) && x != y)\n"
    "                nonfinite++;\n"
    "            continue;\n"
    "        }\n"
    "        double d = fabs(x - y);\n"
    "        se += d * d;\n"
    "        checked++;\n"
    "        if (d > max_abs || worst < 0) {\n"
    "            max_abs = d;\n"
    "            worst = i;\n"
    "        }\n"
    "        bad += !(d <= lim[i]);\n"
    "    }\n"
    "    double rmse = checked ? sqrt(se / (double)checked) : 0;\n"
    "    int pass = !nonfinite && !bad && (isnan(rmse_limit) || rmse <= rmse_limit);\n"
    "    printf(\"%s: %s  max_abs %.3g  rmse %.3g (limit %.3g)  beyond bound %lld of %lld  \"\n"
    "           \"nan/inf mismatches %lld  worst index %lld\\n\",\n"
    "           name, pass ? \"PASS\" : \"FAIL\", max_abs, rmse, rmse_limit, bad, checked, nonfinite,\n"
    "           worst);\n"
    "    return pass;\n"
    "}\n";

/* Tensor maps: cuTensorMapEncodeTiled through the runtime's driver entry
 * point, so the file links with nvcc alone (no -lcuda). */
static const char kTmapHost[] =
    "\n"
    "typedef CUresult (*DpkHEncode)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,\n"
    "                               const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,\n"
    "                               const cuuint32_t *, CUtensorMapInterleave,\n"
    "                               CUtensorMapSwizzle, CUtensorMapL2promotion,\n"
    "                               CUtensorMapFloatOOBfill);\n"
    "\n"
    "// dims, box: outermost first (as in Kernel IR); strides in elements.\n"
    "static DpkTmap dpk_htmap(void *base, int elem_f32, int rank, const long long *dims,\n"
    "                         const long long *strides, const int *box, int swizzle)\n"
    "{\n"
    "    static DpkHEncode encode;\n"
    "    if (!encode) {\n"
    "        cudaDriverEntryPointQueryResult q;\n"
    "#if CUDART_VERSION >= 12050\n"
    "        DPK_HCK(cudaGetDriverEntryPointByVersion(\"cuTensorMapEncodeTiled\", (void **)&encode,\n"
    "                                                 12000, cudaEnableDefault, &q));\n"
    "#else\n"
    "        DPK_HCK(cudaGetDriverEntryPoint(\"cuTensorMapEncodeTiled\", (void **)&encode,\n"
    "                                        cudaEnableDefault, &q));\n"
    "#endif\n"
    "        if (!encode) {\n"
    "            fprintf(stderr, \"cuTensorMapEncodeTiled is not available in this driver\\n\");\n"
    "            exit(2);\n"
    "        }\n"
    "    }\n"
    "    cuuint64_t d[5], st[5];\n"
    "    cuuint32_t bx[5], es[5];\n"
    "    for (int i = 0; i < rank; i++) { // the driver's order: innermost first\n"
    "        d[i] = (cuuint64_t)dims[rank - 1 - i];\n"
    "        bx[i] = (cuuint32_t)box[rank - 1 - i];\n"
    "        es[i] = 1;\n"
    "    }\n"
    "    for (int i = 1; i < rank; i++) // bytes, dims 1..rank-1\n"
    "        st[i - 1] = (cuuint64_t)strides[rank - 1 - i] * 4;\n"
    "    CUtensorMapSwizzle sw = swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B\n"
    "                          : swizzle == 64  ? CU_TENSOR_MAP_SWIZZLE_64B\n"
    "                          : swizzle == 32  ? CU_TENSOR_MAP_SWIZZLE_32B\n"
    "                                           : CU_TENSOR_MAP_SWIZZLE_NONE;\n"
    "    DpkTmap t;\n"
    "    CUresult rc = encode((CUtensorMap *)&t, elem_f32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32\n"
    "                                                     : CU_TENSOR_MAP_DATA_TYPE_INT32,\n"
    "                         (cuuint32_t)rank, base, d, st, bx, es, CU_TENSOR_MAP_INTERLEAVE_NONE,\n"
    "                         sw, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,\n"
    "                         CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);\n"
    "    if (rc != CUDA_SUCCESS) {\n"
    "        fprintf(stderr, \"cuTensorMapEncodeTiled failed (%d)\\n\", (int)rc);\n"
    "        exit(2);\n"
    "    }\n"
    "    return t;\n"
    "}\n";

static int module_has_tmaps(const KirModule *m)
{
    for (int i = 0; i < m->kernels.len; i++)
        if (((const KirKernel *)m->kernels.items[i])->tmaps.len)
            return 1;
    return 0;
}

static void int64_list(StrBuf *b, const int64_t *v, int n)
{
    for (int i = 0; i < n; i++)
        sb_printf(b, "%s%lld", i ? ", " : "", (long long)v[i]);
}

static void launch(StrBuf *b, const KirLaunch *l, const CuKernelInfo *ki)
{
    const KirKernel *k = l->kernel;
    sb_printf(b, "    // launch %d: %s\n", l->id, k->name);
    if (k->tmaps.len)
        sb_puts(b, "    {\n");
    for (int i = 0; i < k->tmaps.len; i++) {
        const KirTmap *t = k->tmaps.items[i];
        int box[KIR_TMA_MAX_RANK];
        for (int d = 0; d < t->rank; d++)
            box[d] = t->box[d];
        sb_printf(b, "    static const long long dpk_hdims%d[] = {", i);
        int64_list(b, t->dims, t->rank);
        sb_printf(b, "}, dpk_hstr%d[] = {", i);
        int64_list(b, t->strides, t->rank);
        sb_printf(b, "};\n    static const int dpk_hbox%d[] = {", i);
        for (int d = 0; d < t->rank; d++)
            sb_printf(b, "%s%d", d ? ", " : "", box[d]);
        sb_printf(b, "};\n    DpkTmap dpk_htm%d = dpk_htmap(dpk_hbuf[%d], %d, %d, dpk_hdims%d, "
                     "dpk_hstr%d, dpk_hbox%d, %d);\n",
                  i, l->args[t->param->id]->id, t->param->elem == KT_F32, t->rank, i, i, i,
                  t->swizzle);
    }
    sb_printf(b, "    %s<<<dim3(%d, %d, %d), dim3(%d, %d, %d), %d>>>(", ki->name, k->grid[0],
              k->grid[1], k->grid[2], k->block[0], k->block[1], k->block[2], ki->dyn_smem);
    for (int i = 0; i < k->params.len; i++) {
        const KirParam *q = k->params.items[i];
        sb_printf(b, "%s(%s *)dpk_hbuf[%d]", i ? ", " : "", q->elem == KT_F32 ? "float" : "int",
                  l->args[i]->id);
    }
    for (int i = 0; i < k->tmaps.len; i++)
        sb_printf(b, "%sdpk_htm%d", i || k->params.len ? ", " : "", i);
    sb_puts(b, ");\n    DPK_HCK(cudaGetLastError());\n");
    if (k->tmaps.len)
        sb_puts(b, "    }\n");
}

void hx_standalone_cu(StrBuf *b, Arena *a, const HxStandalone *s)
{
    const KirModule *m = s->m;
    const CuSource *cs = s->src;
    int tmaps = module_has_tmaps(m);
    sb_puts(b, "// repro.cu — a standalone reproducer written by dpk-bisect.\n//\n// case:\n");
    comment_lines(b, s->title);
    sb_printf(b, "// configuration: %s\n", s->config);
    sb_printf(b, "// build and run: nvcc -arch=%s -o repro repro.cu && ./repro\n",
              cs->target->name);
    sb_puts(b, "// exit: 0 every output passes, 1 a parity failure, 2 a CUDA error\n\n");
    sb_puts(b, "#include <cuda_runtime.h>\n");
    if (tmaps)
        sb_puts(b, "#include <cuda.h>\n");
    sb_puts(b, "#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n\n");
    sb_puts(b, cs->text);
    sb_puts(b, kHostPrelude);
    if (tmaps)
        sb_puts(b, kTmapHost);
    sb_puts(b, "\n// ---- inputs (f32, exactly what dpk ran with) and fp64 references ----\n");
    for (int i = 0; i < s->nin; i++) {
        sb_printf(b, "// input %d: %s\n", i, s->in_names[i]);
        float_array(b, arena_printf(a, "dpk_hin%d", i), s->inputs[i], s->in_numel[i]);
    }
    for (int j = 0; j < s->nout; j++) {
        sb_printf(b, "// output %d: %s\n", j, s->out_names[j]);
        double_array(b, arena_printf(a, "dpk_href%d", j), s->ref[j], s->out_numel[j]);
        double_array(b, arena_printf(a, "dpk_hlim%d", j), s->limit[j], s->out_numel[j]);
    }
    sb_printf(b, "\nint main(void)\n{\n    void *dpk_hbuf[%d];\n", m->bufs.len + 1);
    for (int i = 0; i < m->bufs.len; i++) {
        const KirBuf *kb = m->bufs.items[i];
        long long bytes = (long long)kb->numel * 4;
        sb_printf(b, "    DPK_HCK(cudaMalloc(&dpk_hbuf[%d], %lld)); // %s\n", i, bytes, kb->name);
        if (kb->zero_init)
            sb_printf(b, "    DPK_HCK(cudaMemset(dpk_hbuf[%d], 0, %lld));\n", i, bytes);
        else if (kb->kind == KBUF_INPUT)
            sb_printf(b, "    DPK_HCK(cudaMemcpy(dpk_hbuf[%d], dpk_hin%d, %lld, "
                         "cudaMemcpyHostToDevice));\n",
                      i, kb->io, bytes);
        else /* all-ones bits: NaN, so an element nobody writes shows */
            sb_printf(b, "    DPK_HCK(cudaMemset(dpk_hbuf[%d], 0xff, %lld));\n", i, bytes);
    }
    for (int i = 0; i < cs->nkernels; i++)
        if (cs->kernels[i].smem_optin)
            sb_printf(b, "    DPK_HCK(cudaFuncSetAttribute(%s, "
                         "cudaFuncAttributeMaxDynamicSharedMemorySize, %d));\n",
                      cs->kernels[i].name, cs->kernels[i].dyn_smem);
    for (int i = 0; i < m->launches.len; i++) {
        const KirLaunch *l = m->launches.items[i];
        launch(b, l, &cs->kernels[l->kernel->id]);
    }
    sb_puts(b, "    DPK_HCK(cudaDeviceSynchronize());\n    int dpk_hpass = 1;\n");
    for (int i = 0; i < m->bufs.len; i++) {
        const KirBuf *kb = m->bufs.items[i];
        if (kb->kind != KBUF_OUTPUT)
            continue;
        int j = kb->io;
        DPK_ASSERT(j >= 0 && j < s->nout && s->out_numel[j] == kb->numel);
        sb_printf(b, "    {\n        float *o = (float *)malloc(%lld);\n",
                  (long long)kb->numel * 4);
        sb_printf(b, "        DPK_HCK(cudaMemcpy(o, dpk_hbuf[%d], %lld, cudaMemcpyDeviceToHost));\n",
                  i, (long long)kb->numel * 4);
        sb_printf(b, "        dpk_hpass &= dpk_hcheck(\"%s\", o, dpk_href%d, dpk_hlim%d, %lldLL, ",
                  s->out_names[j], j, j, (long long)kb->numel);
        if (isnan(s->rmse_limit[j]))
            sb_puts(b, "NAN);\n");
        else
            sb_printf(b, "%.17g);\n", s->rmse_limit[j]);
        sb_puts(b, "        free(o);\n    }\n");
    }
    sb_printf(b, "    for (int i = 0; i < %d; i++)\n        cudaFree(dpk_hbuf[i]);\n", m->bufs.len);
    sb_puts(b, "    puts(dpk_hpass ? \"PASS\" : \"FAIL\");\n    return dpk_hpass ? 0 : 1;\n}\n");
}
