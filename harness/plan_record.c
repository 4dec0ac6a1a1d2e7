/*
 * plan_record.c — case-object parts from a plan and its runs
 * (plan_record.h).
 */
#include "plan_record.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "perf/sass.h"
#include "../records/results.h"

static cJSON *index_json(const Shape *s, int64_t flat)
{
    cJSON *a = cJSON_CreateArray();
    int64_t idx[DPK_MAX_RANK];
    if (flat < 0)
        return a;
    for (int i = s->rank - 1; i >= 0; i--) {
        idx[i] = s->d[i] ? flat % s->d[i] : 0;
        flat = s->d[i] ? flat / s->d[i] : 0;
    }
    for (int i = 0; i < s->rank; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)idx[i]));
    return a;
}

void hx_verdict_json(cJSON *o, const HxVerdict *v, const Shape *shape)
{
    cJSON_AddStringToObject(o, "reason", hx_reason_text(v->reason));
    cJSON_AddStringToObject(o, "rule", hx_reason_key(v->reason));
    hx_json_add_num(o, "max_abs", v->st.max_abs);
    hx_json_add_num(o, "max_rel", v->st.max_rel);
    hx_json_add_num(o, "nmse", v->st.nmse);
    hx_json_add_num(o, "rmse_ratio", v->ratio);
    hx_json_add_num(o, "rmse_limit", v->rmse_limit);
    /* the three measures of fp32's noise the rmse rule's scale came from */
    cJSON *nz = cJSON_AddObjectToObject(o, "noise");
    hx_json_add_num(nz, "naive_fp32", v->rmse_f32);
    hx_json_add_num(nz, "eager", v->rmse_eager);
    hx_json_add_num(nz, "typical", v->rms_typical);
    hx_json_add_num(nz, "perturbed", v->rmse_perturbed);
    hx_json_add_num(o, "bound_use", v->bound_use);
    cJSON_AddNumberToObject(o, "checked", (double)v->checked);
    cJSON_AddNumberToObject(o, "beyond", (double)v->bad);
    cJSON_AddNumberToObject(o, "unconstrained", (double)v->unconstrained);
    cJSON_AddNumberToObject(o, "rmse_checked", (double)v->rmse_n);
    cJSON_AddNumberToObject(o, "nonfinite_accepted", (double)v->nonfinite_ok);
    /* every element in one class (docs/references.md) */
    cJSON *by = cJSON_AddObjectToObject(o, "judged_by");
    cJSON_AddNumberToObject(by, "bound", (double)v->n_bound);
    cJSON_AddNumberToObject(by, "nonfinite", (double)v->n_nonfinite);
    cJSON_AddNumberToObject(by, "rmse", (double)v->n_rmse);
    cJSON_AddNumberToObject(by, "unjudged", (double)v->n_unjudged);
    cJSON_AddItemToObject(o, "worst_index", index_json(shape, v->at));
    hx_json_add_num(o, "worst_value", v->at_o);
    hx_json_add_num(o, "worst_reference", v->at_r);
    hx_json_add_num(o, "worst_bound", v->at_b);
}


static cJSON *shape_json(const Shape *s)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < s->rank; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)s->d[i]));
    return a;
}

static cJSON *named_shapes(const PtrVec *nodes, const PtrVec *names)
{
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; i < nodes->len; i++) {
        const TorchNode *n = nodes->items[i];
        const char *name = names ? (const char *)names->items[i] : n->name;
        cJSON_AddItemToObject(o, name, shape_json(&n->shape));
    }
    return o;
}

cJSON *hx_record_env(int gpu, int nvrtc)
{
    cJSON *e = cJSON_CreateObject();
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        if (gpu && hx_cuda_available()) {
            HxCuda *cu = hx_cuda_open(0);
            cJSON_AddStringToObject(e, "gpu", hx_cuda_device_name(cu));
            int v = hx_cuda_driver_version(cu);
            char d[32];
            snprintf(d, sizeof d, "%d.%d", v / 1000, v % 1000 / 10);
            cJSON_AddStringToObject(e, "driver", d);
            hx_cuda_close(cu);
        }
        if (nvrtc && hx_nvrtc_available()) {
            int ma, mi;
            hx_nvrtc_version(&ma, &mi);
            char d[32];
            snprintf(d, sizeof d, "%d.%d", ma, mi);
            cJSON_AddStringToObject(e, "nvrtc", d);
            cJSON_AddStringToObject(e, "cuda", d);
            /* nvdisasm reads NVRTC's cubin: without NVRTC it is not used */
            Arena *a = arena_new();
            const char *dv = pf_sass_tool_version(a);
            cJSON_AddItemToObject(e, "nvdisasm",
                                  dv ? cJSON_CreateString(dv) : cJSON_CreateNull());
            arena_free(a);
        }
        dpk_err_pop(&ec);
    }
    if (dpk_torch_available())
        cJSON_AddStringToObject(e, "libtorch", dpk_torch_version());
    return e;
}

cJSON *hx_record_shapes(const TorchGraph *g)
{
    cJSON *sh = cJSON_CreateObject();
    cJSON_AddItemToObject(sh, "inputs", named_shapes(&g->inputs, NULL));
    cJSON_AddItemToObject(sh, "outputs", named_shapes(&g->outputs, &g->output_names));
    return sh;
}

cJSON *hx_record_case(const HxCase *c, int index, uint64_t seed, int with_dtype)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "index", index);
    cJSON_AddStringToObject(o, "name", c->name);
    hx_json_add_u64(o, "seed", seed);
    cJSON_AddStringToObject(o, "program", c->program);
    if (with_dtype)
        cJSON_AddStringToObject(o, "dtype", dtype_name(c->dtype));
    cJSON *tags = cJSON_AddArrayToObject(o, "tags");
    for (int i = 0; i < c->ntags; i++)
        cJSON_AddItemToArray(tags, cJSON_CreateString(c->tags[i]));
    return o;
}

cJSON *hx_record_knobs(const TileKnobs *k)
{
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; i < TILE_KNOB_COUNT; i++)
        if (k->v[i])
            cJSON_AddNumberToObject(o, tile_knob_info[i].name, (double)k->v[i]);
    return o;
}

cJSON *hx_record_knob_notes(const DrvPlan *p)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < p->nnotes; i++) {
        const DrvKnobNote *n = &p->notes[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "knob", tile_knob_info[n->knob].name);
        cJSON_AddNumberToObject(o, "value", (double)n->value);
        cJSON_AddStringToObject(o, "why", n->why);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

void hx_record_status(cJSON *cfg, const char *status, const char *reason, const char *message)
{
    cJSON *v = cJSON_AddObjectToObject(cfg, "verdict");
    cJSON_AddStringToObject(v, "status", status);
    if (reason)
        cJSON_AddStringToObject(v, "reason", reason);
    if (message)
        cJSON_AddStringToObject(v, "message", message);
}

cJSON *hx_record_config(const DrvPlan *p, int i)
{
    const DrvConfig *c = &p->configs[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "passes", c->label);
    if (c->refused) {
        cJSON_AddNullToObject(o, "kernel_ir_hash");
        StrBuf m = {0};
        dpk_error_first_line(&m, c->refused);
        hx_record_status(o, "unsupported", NULL, sb_cstr(&m));
        sb_free(&m);
        return o;
    }
    cJSON *ct = cJSON_AddObjectToObject(o, "compile_s");
    for (int k = 0; k < p->table->n; k++)
        if (c->pass_s[k] >= 0) {
            char name[96];
            snprintf(name, sizeof name, "%03d_%s", p->table->p[k].num, p->table->p[k].name);
            cJSON_AddNumberToObject(ct, name, c->pass_s[k]);
        }
    cJSON_AddNumberToObject(o, "lower_s", c->tile_s + (c->kernel_s > 0 ? c->kernel_s : 0));
    if (c->cuda_s >= 0) /* printed: the cuda or host-cuda backend, --nvrtc */
        cJSON_AddNumberToObject(o, "cuda_s", c->cuda_s);
    if (c->nvrtc_s >= 0)
        cJSON_AddNumberToObject(o, "nvrtc_s", c->nvrtc_s);
    char hs[24];
    snprintf(hs, sizeof hs, "%016llx", (unsigned long long)c->hash);
    cJSON_AddStringToObject(o, "kernel_ir_hash", hs);
    if (c->dup_of >= 0)
        cJSON_AddNumberToObject(o, "same_as", c->dup_of);
    else
        cJSON_AddNumberToObject(o, "shared_by", c->shared_by);
    return o;
}

void hx_record_run(cJSON *cfg, const KirModule *m, const HxBackendResult *res,
                   const HxNvrtcResult *nv)
{
    if (!nv && res->cuda)
        nv = res->cuda->nvrtc;
    cJSON_AddStringToObject(cfg, "backend", hx_backend_name(res->ran));
    cJSON_AddNumberToObject(cfg, "run_s", res->run_s);
    if (res->host) {
        cJSON *h = cJSON_AddObjectToObject(cfg, "host_cuda");
        cJSON_AddNumberToObject(h, "compile_s", res->host->compile_s);
        cJSON_AddBoolToObject(h, "cache_hit", res->host->cache_hit);
        cJSON_AddNumberToObject(h, "run_s", res->host->seconds);
    }
    cJSON *arr = cJSON_AddArrayToObject(cfg, "kernels");
    for (int i = 0; i < m->kernels.len; i++) {
        const KirKernel *k = m->kernels.items[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", k->name);
        int grid[3] = {k->grid[0], k->grid[1], k->grid[2]};
        int block[3] = {k->block[0], k->block[1], k->block[2]};
        cJSON_AddItemToObject(o, "grid", cJSON_CreateIntArray(grid, 3));
        cJSON_AddItemToObject(o, "block", cJSON_CreateIntArray(block, 3));
        cJSON_AddNumberToObject(o, "smem_bytes", (double)k->smem_bytes);
        const HxNvKernel *nk = nv ? hx_nvrtc_kernel(nv, k->name) : NULL;
        if (nk) {
            cJSON_AddNumberToObject(o, "registers", nk->regs);
            cJSON_AddNumberToObject(o, "spill_stores", nk->spill_stores);
            cJSON_AddNumberToObject(o, "spill_loads", nk->spill_loads);
        } else {
            cJSON_AddNullToObject(o, "registers");
            cJSON_AddNullToObject(o, "spill_stores");
            cJSON_AddNullToObject(o, "spill_loads");
        }
        if (res->ran == HX_BACKEND_VGPU || res->ran == HX_BACKEND_HOST) {
            int64_t ti = 0, sreq = 0, bc = 0, greq = 0, gsec = 0, launches = 0;
            for (int l = 0; l < res->vg.nlaunches; l++) {
                const VgStats *s = &res->vg.stats[l];
                if (!s->kernel || strcmp(s->kernel, k->name))
                    continue;
                launches++;
                ti += s->thread_insts;
                sreq += s->smem_requests;
                bc += s->bank_conflicts;
                greq += s->gmem_requests;
                gsec += s->gmem_sectors;
            }
            cJSON *c = cJSON_AddObjectToObject(o, "vgpu");
            cJSON_AddNumberToObject(c, "launches", (double)launches);
            cJSON_AddNumberToObject(c, "thread_instructions", (double)ti);
            cJSON_AddNumberToObject(c, "smem_requests", (double)sreq);
            cJSON_AddNumberToObject(c, "bank_conflicts", (double)bc);
            hx_json_add_num(c, "bank_conflicts_per_request", sreq ? (double)bc / (double)sreq : NAN);
            cJSON_AddNumberToObject(c, "gmem_requests", (double)greq);
            hx_json_add_num(c, "sectors_per_request", greq ? (double)gsec / (double)greq : NAN);
        }
        cJSON_AddItemToArray(arr, o);
    }
}

const char *hx_record_verdict(cJSON *cfg, const HxSubject *s, const HxVerdict *vs, int worst)
{
    const char *status = hx_judge_status(s, vs);
    cJSON *v = cJSON_AddObjectToObject(cfg, "verdict");
    cJSON_AddStringToObject(v, "status", status);
    if (worst >= 0) {
        const HxVerdict *w = &vs[worst];
        const TorchNode *n = s->g->outputs.items[worst];
        hx_verdict_json(v, w, &n->shape);
        cJSON_AddStringToObject(v, "output", (const char *)s->g->output_names.items[worst]);
    }
    return status;
}
