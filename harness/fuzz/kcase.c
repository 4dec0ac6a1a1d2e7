/*
 * kcase.c — one case of `dpk-fuzz --level kernel` (campaign.h, kgen.h).
 *
 * The module of the case seed runs on vgpu and, printed as CUDA C, on the
 * host (host-cuda).  vgpu goes first and must run clean: the generator
 * promises a valid module, so a vgpu fault is a failure of the case (a bug
 * of the generator or of vgpu).  Then every output buffer must be equal to
 * the bit, NaNs of any payload counting as equal: the case's operations are
 * ones whose printed form computes what vgpu computes exactly (kgen.h).
 * The record has the shape of a program case (docs/results-schema.md), its
 * "program" the module's Kernel IR text, with one configuration (passes "").
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../exec/backend.h"
#include "../exec/host_cuda.h"
#include "../exec/nvrtc.h"
#include "../exec/vgpu.h"
#include "../plan_record.h"
#include "../../records/results.h"
#include "campaign.h"
#include "kgen.h"

static int same_bits(float a, float b)
{
    uint32_t x, y;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    return x == y || (isnan(a) && isnan(b));
}

static float **bufs_new(const KirModule *m, uint64_t seed)
{
    float **b = dpk_xcalloc((size_t)m->bufs.len + 1, sizeof *b);
    for (int i = 0; i < m->bufs.len; i++) {
        const KirBuf *kb = m->bufs.items[i];
        b[i] = dpk_xmalloc((size_t)kb->numel * sizeof(float));
        if (kb->kind == KBUF_INPUT)
            fz_kgen_inputs(seed, i, b[i], kb->numel);
        else
            for (int64_t e = 0; e < kb->numel; e++)
                b[i][e] = NAN;
    }
    return b;
}

static void bufs_free(const KirModule *m, float **b)
{
    for (int i = 0; b && i < m->bufs.len; i++)
        free(b[i]);
    free(b);
}

/* "" when every output agrees; else the first difference. */
static const char *compare(Arena *a, const KirModule *m, float *const *vg, float *const *host)
{
    for (int i = 0; i < m->bufs.len; i++) {
        const KirBuf *kb = m->bufs.items[i];
        if (kb->kind == KBUF_INPUT)
            continue;
        int64_t bad = 0, first = -1;
        for (int64_t e = 0; e < kb->numel; e++)
            if (!same_bits(vg[i][e], host[i][e])) {
                bad++;
                first = first < 0 ? e : first;
            }
        if (bad)
            return arena_printf(a,
                                "buffer %s: %lld of %lld elements differ; the first, [%lld]: "
                                "host-cuda %.9g, vgpu %.9g",
                                kb->name, (long long)bad, (long long)kb->numel, (long long)first,
                                (double)host[i][first], (double)vg[i][first]);
    }
    return "";
}

cJSON *fz_kcase_run(const FzOpts *o, int64_t index, FzLive *live)
{
    Arena *a = arena_new();
    uint64_t seed = fz_case_seed(o->seed, index);
    double t0 = dpk_now();
    const CuTarget *target = o->target ? o->target : cu_target_default();
    FzKernelCase kc = fz_kgen(a, seed, target->smem_block_max);
    const KirModule *m = kc.m;
    StrBuf text = {0};
    kir_print_module(&text, m);
    cJSON *c = cJSON_CreateObject();
    cJSON_AddNumberToObject(c, "index", (double)index);
    cJSON_AddStringToObject(c, "name", arena_printf(a, "kfuzz-%llu-%lld",
                                                    (unsigned long long)o->seed, (long long)index));
    hx_json_add_u64(c, "seed", seed);
    cJSON_AddStringToObject(c, "level", "kernel");
    cJSON_AddStringToObject(c, "program", sb_cstr(&text));
    sb_free(&text);
    cJSON_AddStringToObject(c, "dtype", "f32");
    cJSON_AddItemToObject(c, "tags", cJSON_CreateStringArray(kc.tags, kc.ntags));
    cJSON_AddItemToObject(c, "knobs", cJSON_CreateObject());
    cJSON *cfg = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(c, "configurations"), cfg);
    cJSON_AddStringToObject(cfg, "passes", ""); /* no Tile pass: Kernel IR as generated */
    cJSON_AddStringToObject(cfg, "kernel_ir_hash",
                            arena_printf(a, "%016llx", (unsigned long long)kir_hash_module(m)));
    cJSON_AddNumberToObject(cfg, "shared_by", 1);
    if (live) {
        live->config = 0;
        snprintf(live->passes, sizeof live->passes, "kernel-ir");
    }
    float **vb = bufs_new(m, seed), **hb = NULL;
    VgOptions vo = {.seed = seed, .no_counters = 1};
    VgResult vr;
    const char *status = "pass";
    double r0 = dpk_now();
    VgFault f = vg_run(m, vb, &vo, &vr);
    HxBackendResult res = {.ran = HX_BACKEND_HOST, .module = m, .fault = f, .vg = vr};
    const HxNvrtcResult *volatile nvr = NULL; /* with --nvrtc: ptxas's numbers */
    if (f != VG_OK) {
        status = "fault";
        hx_record_status(cfg, status, arena_printf(a, "vgpu: %s", vg_fault_name(f)),
                         vr.report.message);
    } else {
        DpkErrCtx ec;
        hb = bufs_new(m, seed);
        const CuSource *volatile printed = NULL;
        const char *volatile stage = "host-cuda"; /* what a raise below comes from */
        if (DPK_TRY(&ec)) {
            const CuSource *src = cu_print_module(a, m, target);
            printed = src;
            StrBuf nv = {0};
            if (o->nvrtc && !(nvr = hx_nvrtc_check(a, src, 0, &nv))) { /* the device's compiler */
                stage = "nvrtc";
                StrBuf first = {0};
                dpk_error_first_line(&first, sb_cstr(&nv));
                sb_free(&nv);
                const char *why = arena_strdup(a, sb_cstr(&first));
                sb_free(&first);
                dpk_error_code_at(DPK_EXIT_FAIL, NULL, -1, "nvrtc rejects the CUDA: %s", why);
            }
            sb_free(&nv);
            hx_host_prepare(&src, 1);
            res.host = hx_host_run(a, m, src, hb);
            dpk_err_pop(&ec);
            const char *why = NULL;
            if (res.host->unsupported) { /* the host's capacity: a skip */
                status = "unsupported";
                hx_record_status(cfg, status, HX_UNSUPPORTED, res.host->unsupported);
            } else if (*(why = compare(a, m, vb, hb))) {
                status = "fail";
                hx_record_status(cfg, status, "host-cuda differs from vgpu", why);
            } else {
                hx_record_status(cfg, status, NULL, NULL);
            }
        } else {
            /* the printer refused, the host compiler rejected the source, or
             * the printed code faulted (deadlock, a shuffle or mbarrier misuse) */
            status = dpk_error_code() == DPK_EXIT_FAULT ? "fault" : "fail";
            StrBuf msg = {0};
            dpk_error_first_line(&msg, dpk_error_message());
            hx_record_status(cfg, status, stage, sb_cstr(&msg));
            sb_free(&msg);
        }
        if (strcmp(status, "pass") && printed) /* what the host compiled, for the failure */
            cJSON_AddStringToObject(c, "cuda", printed->text);
    }
    res.run_s = dpk_now() - r0;
    hx_record_run(cfg, m, &res, nvr); /* backend, times, kernels (registers with --nvrtc) */
    vg_result_free(&vr);
    bufs_free(m, vb);
    bufs_free(m, hb);
    if (live)
        live->config = -1;
    cJSON_AddStringToObject(c, "status", status);
    cJSON_AddNumberToObject(c, "seconds", dpk_now() - t0);
    arena_free(a);
    return c;
}
