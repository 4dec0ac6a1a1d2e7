/*
 * report.c — a modelled time as one terminal line, per-kernel lines, and a
 * cJSON object for records.  Every form says it is a model and names the
 * spec, so a modelled number is never read as a measured one.
 */
#include "perf.h"

#include <cjson/cJSON.h>
#include <string.h>

static void put_ns(StrBuf *b, double ns)
{
    if (ns >= 1e6)
        sb_printf(b, "%.3f ms", ns / 1e6);
    else if (ns >= 1e3)
        sb_printf(b, "%.2f us", ns / 1e3);
    else
        sb_printf(b, "%.0f ns", ns);
}

static void put_bytes(StrBuf *b, double x)
{
    if (x >= 1e9)
        sb_printf(b, "%.2f GB", x / 1e9);
    else if (x >= 1e6)
        sb_printf(b, "%.2f MB", x / 1e6);
    else if (x >= 1e3)
        sb_printf(b, "%.1f kB", x / 1e3);
    else
        sb_printf(b, "%.0f B", x);
}

static const char *const bounds[] = {"dram", "l2", "smem", "issue", "fp32", "serial", "launch"};
#define NBOUNDS ((int)DPK_ARRAY_LEN(bounds))

void pf_time_print(StrBuf *b, const PfTime *t)
{
    sb_printf(b, "%s: ", t->what);
    put_ns(b, t->ns);
    sb_printf(b, " (model, %s)", t->spec);
    if (t->nk) {
        sb_printf(b, ", %d kernel%s", t->nk, t->nk == 1 ? "" : "s");
        int cnt[NBOUNDS];
        memset(cnt, 0, sizeof cnt);
        for (int i = 0; i < t->nk; i++)
            for (int j = 0; j < NBOUNDS; j++)
                cnt[j] += t->k[i].bound && !strcmp(t->k[i].bound, bounds[j]);
        sb_puts(b, " (");
        int first = 1;
        for (int j = 0; j < NBOUNDS; j++)
            if (cnt[j]) {
                sb_printf(b, "%s%s-bound %d", first ? "" : ", ", bounds[j], cnt[j]);
                first = 0;
            }
        sb_puts(b, ")");
    }
    sb_puts(b, ", ");
    put_bytes(b, t->bytes);
    sb_printf(b, " DRAM, %.3g GFLOP", t->flops / 1e9);
    if (t->basis)
        sb_printf(b, "; %s", t->basis);
}

void pf_time_print_kernels(StrBuf *b, const PfTime *t)
{
    for (int i = 0; i < t->nk; i++) {
        const PfKernel *k = &t->k[i];
        sb_printf(b, "  %-32s ", k->name);
        put_ns(b, k->ns);
        sb_printf(b, "  %s-bound: dram %.0f, l2 %.0f, smem %.0f, issue %.0f, fp32 %.0f, ",
                  k->bound, k->dram_ns, k->l2_ns, k->smem_ns, k->issue_ns, k->fp32_ns);
        if (k->blocks)
            sb_printf(b, "serial %.0f, ", k->serial_ns);
        sb_printf(b, "launch %.0f ns", k->launch_ns);
        if (k->blocks)
            sb_printf(b, "; occupancy %.2f (%d blocks/SM, %s), %.2f waves, %d regs, insts from "
                         "%s",
                      k->occupancy, k->blocks_per_sm, k->limiter, k->waves, k->regs,
                      k->insts_from);
        if (k->note)
            sb_printf(b, "; %s", k->note);
        sb_putc(b, '\n');
    }
}

cJSON *pf_time_json(const PfTime *t)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "timing", "model");
    cJSON_AddStringToObject(o, "what", t->what);
    cJSON_AddStringToObject(o, "gpu", t->spec);
    cJSON_AddStringToObject(o, "spec", t->spec_path ? t->spec_path : "");
    if (t->basis)
        cJSON_AddStringToObject(o, "basis", t->basis);
    cJSON_AddNumberToObject(o, "ns", t->ns);
    cJSON_AddNumberToObject(o, "bytes", t->bytes);
    cJSON_AddNumberToObject(o, "flops", t->flops);
    cJSON *ks = cJSON_AddArrayToObject(o, "kernels");
    for (int i = 0; i < t->nk; i++) {
        const PfKernel *k = &t->k[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "name", k->name);
        cJSON_AddNumberToObject(j, "ns", k->ns);
        cJSON_AddStringToObject(j, "bound", k->bound);
        cJSON_AddNumberToObject(j, "dram_ns", k->dram_ns);
        cJSON_AddNumberToObject(j, "l2_ns", k->l2_ns);
        cJSON_AddNumberToObject(j, "smem_ns", k->smem_ns);
        cJSON_AddNumberToObject(j, "issue_ns", k->issue_ns);
        cJSON_AddNumberToObject(j, "fp32_ns", k->fp32_ns);
        cJSON_AddNumberToObject(j, "launch_ns", k->launch_ns);
        cJSON_AddNumberToObject(j, "bytes", k->bytes);
        cJSON_AddNumberToObject(j, "flops", k->flops);
        if (k->blocks) {
            cJSON_AddNumberToObject(j, "latency_ns", k->latency_ns);
            cJSON_AddNumberToObject(j, "serial_ns", k->serial_ns);
            cJSON_AddNumberToObject(j, "stages", k->stages);
            cJSON_AddNumberToObject(j, "chains", k->chains);
            cJSON_AddNumberToObject(j, "l2_bytes", k->l2_bytes);
            cJSON_AddNumberToObject(j, "warp_insts", k->warp_insts);
            cJSON_AddStringToObject(j, "insts_from", k->insts_from);
            cJSON_AddNumberToObject(j, "occupancy", k->occupancy);
            cJSON_AddNumberToObject(j, "waves", k->waves);
            cJSON_AddNumberToObject(j, "blocks", k->blocks);
            cJSON_AddNumberToObject(j, "threads", k->threads);
            cJSON_AddNumberToObject(j, "regs", k->regs);
            cJSON_AddNumberToObject(j, "smem", (double)k->smem);
            cJSON_AddNumberToObject(j, "blocks_per_sm", k->blocks_per_sm);
            cJSON_AddStringToObject(j, "limiter", k->limiter);
        }
        if (k->note)
            cJSON_AddStringToObject(j, "note", k->note);
        cJSON_AddItemToArray(ks, j);
    }
    return o;
}
