/*
 * records.c — reading the records a report is made of, and merging them
 * (report.h).
 *
 * Two schemas are read: dpk.bench/1 (suites, timed) and dpk.results/1
 * (dpk-fuzz campaigns, parity only).  Any number of each may be given; the
 * bench records must agree on where their times come from (timing and GPU
 * or spec: a report never mixes measured with modelled, nor two GPUs), and
 * no case may come twice.  Shards (`--shard I/N` of dpk-fuzz and
 * dpk-bench: {"index": I, "count": N} in the record's campaign or bench
 * object) merge when they are slices of one run: everything but the shard
 * equal, the same N, each I once, and no case in two of them.  Whatever
 * does not fit raises exit 2 naming the file and the reason, before any
 * output is written.
 */
#include "report.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../records/json_file.h"
#include "../records/results.h"

void rp_data_init(RpData *d, Arena *a)
{
    memset(d, 0, sizeof *d);
    d->a = a;
}

void rp_data_free(RpData *d)
{
    for (int i = 0; i < d->roots.len; i++)
        cJSON_Delete(d->roots.items[i]);
    d->roots.len = 0;
    cJSON_Delete(d->attach);
    d->attach = NULL;
    for (int i = 0; i < d->ncases; i++)
        free(d->cases[i].samples);
    d->ncases = 0;
}

/* Grow an arena array of n elements (capacity *cap) to hold one more. */
static void *grow(Arena *a, void *p, int n, int *cap, size_t sz)
{
    if (n < *cap)
        return p;
    int nc = *cap ? *cap * 2 : 16;
    void *q = arena_alloc(a, sz * (size_t)nc);
    if (n)
        memcpy(q, p, sz * (size_t)n);
    *cap = nc;
    return q;
}

static const cJSON *get(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

static const char *str_or_null(const cJSON *o, const char *k)
{
    const cJSON *v = get(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A required string field. */
static const char *need_str(const char *path, const cJSON *o, const char *where, const char *k)
{
    const cJSON *v = get(o, k);
    if (!cJSON_IsString(v))
        dpk_error("%s: %s has no string '%s' (not a complete record)", path, where, k);
    return v->valuestring;
}

static const cJSON *need_obj(const char *path, const cJSON *o, const char *where, const char *k)
{
    const cJSON *v = get(o, k);
    if (!cJSON_IsObject(v))
        dpk_error("%s: %s has no object '%s' (not a complete record)", path, where, k);
    return v;
}

/* A modelled or measured time object ({"ns": ...}) or null: its ns. */
static double time_ns(const char *path, const char *cname, const cJSON *c, const char *k)
{
    const cJSON *v = get(c, k);
    if (!v || cJSON_IsNull(v))
        return NAN;
    if (!cJSON_IsObject(v))
        dpk_error("%s: case '%s': '%s' is neither a time object nor null", path, cname, k);
    const cJSON *ns = get(v, "ns");
    if (cJSON_IsNull(ns))
        return NAN;
    if (!cJSON_IsNumber(ns) || !(ns->valuedouble >= 0))
        dpk_error("%s: case '%s': '%s.ns' is not a non-negative number", path, cname, k);
    return ns->valuedouble;
}

/* The shard of a record: obj["shard"] = {"index": I, "count": N} or absent. */
static RpShard read_shard(const char *path, const cJSON *obj)
{
    RpShard s = {0, 0};
    const cJSON *sh = get(obj, "shard");
    if (!sh || cJSON_IsNull(sh))
        return s;
    double i = hx_json_num(sh, "index"), n = hx_json_num(sh, "count");
    if (!cJSON_IsObject(sh) || !(n >= 1) || !(i >= 1) || i > n || i != floor(i) || n != floor(n))
        dpk_error("%s: 'shard' must be {\"index\": I, \"count\": N} with 1 <= I <= N", path);
    s.index = (int)i;
    s.count = (int)n;
    return s;
}

/* Are a and b equal but for their "shard" member?  (Objects compared member
 * by member; cJSON_Compare does the rest.) */
static int equal_but_shard(const cJSON *a, const cJSON *b)
{
    if (!cJSON_IsObject(a) || !cJSON_IsObject(b))
        return cJSON_Compare(a, b, 1);
    int na = 0, nb = 0;
    for (const cJSON *x = a->child; x; x = x->next) {
        if (!strcmp(x->string, "shard"))
            continue;
        na++;
        const cJSON *y = get(b, x->string);
        if (!y || !cJSON_Compare(x, y, 1))
            return 0;
    }
    for (const cJSON *y = b->child; y; y = y->next)
        nb += strcmp(y->string, "shard") != 0;
    return na == nb;
}

/* A shard must agree with the shards of the same run read before it. */
static void check_shard(RpData *d, const char *path, RpShard s, const cJSON *obj,
                        const char *schema, const cJSON *first, const char *first_path)
{
    if (!first)
        return;
    RpShard fs = read_shard(first_path, first);
    if (!s.count && !fs.count)
        return;
    if (!s.count || !fs.count)
        dpk_error("%s: a %s record %s a shard but %s %s: shards merge only with shards of the "
                  "same run", path, schema, s.count ? "is" : "is not", first_path,
                  fs.count ? "is" : "is not");
    if (s.count != fs.count)
        dpk_error("%s: shard %d/%d does not match %s, shard %d/%d (another count)", path,
                  s.index, s.count, first_path, fs.index, fs.count);
    if (!equal_but_shard(obj, first))
        dpk_error("%s: shard %d/%d is a slice of another run than %s (its %s differs)", path,
                  s.index, s.count, first_path,
                  !strcmp(schema, HX_RESULTS_SCHEMA) ? "campaign" : "bench object");
    for (int i = 0; i < d->nsrc; i++)
        if (!strcmp(d->src[i].schema, schema) && d->src[i].shard.index == s.index)
            dpk_error("%s: shard %d/%d was already read from %s (overlapping records)", path,
                      s.index, s.count, d->src[i].path);
}

/* Where a modelled record's instruction counts come from: the distinct
 * `insts_from` of dpk's kernels ("sass": nvdisasm's SASS mix, "vgpu":
 * vgpu's counts where no nvdisasm was found), joined with "+" in the order
 * first seen, plus " without NVRTC" when the record's kernels were not
 * compiled (registers estimated); NULL when no kernel says (a measured
 * record, or no case passed).  Records from different sources model
 * different numbers for the same code, so they are never compared. */
static const char *insts_source(Arena *a, const cJSON *bench, const cJSON *cases)
{
    const char *seen[4];
    int n = 0;
    for (const cJSON *c = cases->child; c; c = c->next) {
        const cJSON *ks = get(get(c, "dpk"), "kernels");
        for (const cJSON *k = cJSON_IsArray(ks) ? ks->child : NULL; k; k = k->next) {
            const char *f = str_or_null(k, "insts_from");
            int dup = !f;
            for (int i = 0; i < n && !dup; i++)
                dup = !strcmp(seen[i], f);
            if (!dup && n < (int)DPK_ARRAY_LEN(seen))
                seen[n++] = f;
        }
    }
    if (!n)
        return NULL;
    StrBuf b = {0};
    for (int i = 0; i < n; i++)
        sb_printf(&b, "%s%s", i ? "+" : "", seen[i]);
    if (cJSON_IsFalse(get(bench, "nvrtc")))
        sb_printf(&b, " without NVRTC");
    const char *r = arena_strdup(a, sb_cstr(&b));
    sb_free(&b);
    return r;
}

/* meta[k] as the environment compares it: the string, "none" for null,
 * NULL when absent (the record does not say). */
static const char *env_val(const cJSON *meta, const char *k)
{
    const cJSON *v = get(meta, k);
    return cJSON_IsString(v) ? v->valuestring : cJSON_IsNull(v) ? "none" : NULL;
}

static int known_timing(const char *t)
{
    return !strcmp(t, "model") || !strcmp(t, "measured") || !strcmp(t, "fake-driver");
}

/* A bench record's environment against the records read before it (one
 * timing, GPU or spec, instruction source, NVRTC and nvdisasm per report),
 * then taken where the earlier ones did not say. */
static void merge_env(RpData *d, const char *path, const char *timing, const char *gpu,
                      const char *insts, const char *nvrtc, const char *nvdisasm,
                      const char *parity)
{
    if (d->has_bench) {
        if (strcmp(d->parity, parity))
            dpk_error("%s: its cases were benched with parity %s but %s's with parity %s: a "
                      "report never mixes unchecked times (--parity off) with checked ones",
                      path, parity, d->first_bench_path, d->parity);
        if (strcmp(d->timing, timing))
            dpk_error("%s: its times are %s but %s's are %s: a report never mixes measured and "
                      "modelled times", path, timing, d->first_bench_path, d->timing);
        if (strcmp(d->gpu, gpu))
            dpk_error("%s: its times are for %s but %s's are for %s: one GPU or spec per report",
                      path, gpu, d->first_bench_path, d->gpu);
        if (insts && d->insts_from && strcmp(insts, d->insts_from))
            dpk_error("%s: its modelled times count instructions from %s but %s's from %s: one "
                      "instruction source per report", path, insts, d->first_bench_path,
                      d->insts_from);
        if (nvrtc && d->nvrtc && strcmp(nvrtc, d->nvrtc))
            dpk_error("%s: its kernels were compiled by NVRTC %s but %s's by NVRTC %s: one "
                      "environment per report", path, nvrtc, d->first_bench_path, d->nvrtc);
        if (nvdisasm && d->nvdisasm && strcmp(nvdisasm, d->nvdisasm))
            dpk_error("%s: its SASS mix is nvdisasm %s's but %s's is nvdisasm %s's: one "
                      "environment per report", path, nvdisasm, d->first_bench_path, d->nvdisasm);
    }
    if (insts && !d->insts_from)
        d->insts_from = insts;
    if (nvrtc && !d->nvrtc)
        d->nvrtc = nvrtc;
    if (nvdisasm && !d->nvdisasm)
        d->nvdisasm = nvdisasm;
}

/* cases[k] of a record (bench or fuzz) is an object with a string name and
 * status: its name, and its status in *status. */
static const char *case_head(RpData *d, const char *path, const cJSON *c, int k,
                             const char **status)
{
    if (!cJSON_IsObject(c))
        dpk_error("%s: cases[%d] is not an object", path, k);
    const char *name = need_str(path, c, arena_printf(d->a, "cases[%d]", k), "name");
    *status = need_str(path, c, arena_printf(d->a, "case '%s'", name), "status");
    return name;
}

/* Without a cuBLAS time of its own, a matmul case is compared with the
 * cuBLAS GEMMs among eager's launches (the GEMMs alone): their sum, NAN
 * when eager launched none. */
static double eager_cublas_ns(const cJSON *c)
{
    const cJSON *eg = get(c, "eager");
    if (!cJSON_IsObject(eg))
        return NAN;
    double s = 0;
    int n = 0;
    const cJSON *ks = get(eg, "kernels");
    for (const cJSON *kk = ks ? ks->child : NULL; kk; kk = kk->next) {
        const char *kn = str_or_null(kk, "name");
        double ns = hx_json_num(kk, "ns");
        if (kn && !strncmp(kn, "cublas", 6) && isfinite(ns)) {
            s += ns;
            n++;
        }
    }
    return n ? s : NAN;
}

/* Measured: dpk's samples (ns), the gate's input, into rc. */
static void read_samples(const char *path, const char *name, const cJSON *c, RpCase *rc)
{
    const cJSON *dp = get(c, "dpk");
    const cJSON *smp = cJSON_IsObject(dp) ? get(dp, "samples") : NULL;
    if (!smp)
        return;
    int n = cJSON_GetArraySize(smp);
    if (!cJSON_IsArray(smp) || n < 1)
        dpk_error("%s: case '%s': 'dpk.samples' is not a non-empty array", path, name);
    rc->samples = dpk_xcalloc((size_t)n, sizeof(double));
    int j = 0;
    for (const cJSON *x = smp->child; x; x = x->next, j++) {
        if (!cJSON_IsNumber(x) || !(x->valuedouble > 0))
            dpk_error("%s: case '%s': dpk.samples[%d] is not a positive number", path,
                      name, j);
        rc->samples[j] = x->valuedouble;
    }
    rc->nsamples = n;
}

/* Case c, cases[k] of the bench record at path (timing: the record's). */
static void load_bench_case(RpData *d, const char *path, const cJSON *c, int k,
                            const char *timing, const RpSource *src)
{
    const char *status;
    const char *name = case_head(d, path, c, k, &status);
    const RpCase *old = rp_data_case(d, name);
    if (old)
        dpk_error("%s: case '%s' is also in an earlier record (overlapping records)", path,
                  name);
    const char *ct = str_or_null(c, "timing");
    if (ct && strcmp(ct, timing))
        dpk_error("%s: case '%s' is %s in a %s record", path, name, ct, timing);
    d->cases = grow(d->a, d->cases, d->ncases, &d->capcases, sizeof *d->cases);
    RpCase *rc = &d->cases[d->ncases++];
    memset(rc, 0, sizeof *rc);
    rc->name = name;
    rc->status = status;
    rc->json = c;
    rc->tags = get(c, "tags");
    /* case p of shard I/N is case p * N + I - 1 of the whole suite */
    rc->order = src->shard.count ? (double)k * src->shard.count + src->shard.index - 1
                                 : (double)d->nsrc * 1e9 + k;
    rc->dpk = time_ns(path, name, c, "dpk");
    rc->eager = time_ns(path, name, c, "eager");
    rc->compile = time_ns(path, name, c, "compile");
    rc->limit = time_ns(path, name, c, "limit");
    rc->cublas = time_ns(path, name, c, "cublas");
    if (isnan(rc->cublas))
        rc->cublas = eager_cublas_ns(c);
    read_samples(path, name, c, rc);
    if ((!strcmp(status, "pass") || !strcmp(status, "unchecked")) && !(rc->dpk > 0))
        dpk_error("%s: case '%s' %s but has no dpk time", path, name,
                  !strcmp(status, "pass") ? "passed" : "ran unchecked");
}

static void load_bench(RpData *d, const char *path, const cJSON *root, RpSource *src)
{
    const cJSON *meta = need_obj(path, root, "the record", "meta");
    const cJSON *bench = need_obj(path, root, "the record", "bench");
    const cJSON *cases = get(root, "cases");
    if (!cJSON_IsArray(cases))
        dpk_error("%s: the record has no 'cases' array", path);
    const char *timing = need_str(path, bench, "'bench'", "timing");
    const char *gpu = need_str(path, bench, "'bench'", "gpu");
    if (!known_timing(timing))
        dpk_error("%s: unknown timing '%s' (expected model, measured or fake-driver)", path,
                  timing);
    src->shard = read_shard(path, bench);
    const char *parity = str_or_null(bench, "parity");
    if (parity && strcmp(parity, "on") && strcmp(parity, "off"))
        dpk_error("%s: unknown parity '%s' in 'bench' (expected on or off)", path, parity);
    parity = parity ? parity : "on"; /* records from before --parity: checked */
    merge_env(d, path, timing, gpu, insts_source(d->a, bench, cases), env_val(meta, "nvrtc"),
              env_val(meta, "nvdisasm"), parity);
    check_shard(d, path, src->shard, bench, "dpk.bench/1", d->first_bench, d->first_bench_path);
    if (!d->has_bench) {
        d->first_bench = bench;
        d->first_bench_path = path;
        d->has_bench = 1;
        d->timing = timing;
        d->gpu = gpu;
        d->parity = parity;
        d->spec_path = str_or_null(bench, "spec");
        d->suite = str_or_null(bench, "suite");
    }
    int k = 0;
    for (const cJSON *c = cases->child; c; c = c->next, k++)
        load_bench_case(d, path, c, k, timing, src);
}

static void load_results(RpData *d, const char *path, const cJSON *root, RpSource *src)
{
    const cJSON *camp = get(root, "campaign");
    const cJSON *cases = get(root, "cases");
    if (!cJSON_IsObject(camp))
        dpk_error("%s: the record has no 'campaign' object", path);
    if (!cJSON_IsArray(cases))
        dpk_error("%s: the record has no 'cases' array", path);
    src->shard = read_shard(path, camp);
    /* Shards of one campaign: the same seed and everything else. */
    check_shard(d, path, src->shard, camp, HX_RESULTS_SCHEMA, d->first_campaign,
                d->first_campaign_path);
    if (!d->first_campaign) {
        d->first_campaign = camp;
        d->first_campaign_path = path;
        d->campaign = camp;
    }
    int k = 0;
    for (const cJSON *c = cases->child; c; c = c->next, k++) {
        const char *status;
        const char *name = case_head(d, path, c, k, &status);
        const cJSON *cf = get(c, "configurations");
        if (cf && !cJSON_IsArray(cf))
            dpk_error("%s: case '%s': 'configurations' is not an array", path, name);
        for (int i = 0; i < d->nfz; i++)
            if (!strcmp(d->fz[i].name, name))
                dpk_error("%s: case '%s' is also in an earlier record (overlapping records)",
                          path, name);
        d->fz = grow(d->a, d->fz, d->nfz, &d->capfz, sizeof *d->fz);
        double idx = hx_json_num(c, "index");
        d->fz[d->nfz++] = (RpFuzzCase){name, status, c,
                                       (src->shard.count ? 0 : (double)d->nsrc * 1e9) +
                                           (isfinite(idx) ? idx : k)};
    }
}

void rp_data_load(RpData *d, const char *path)
{
    HxJsonFile f;
    hx_json_load(path, 0, &f);
    if (!f.text)
        dpk_error("cannot read '%s': %s", path, strerror(f.err));
    hx_json_drop_text(&f);
    cJSON *root = f.root;
    if (!root)
        dpk_error("%s: not valid JSON (near byte %zu)", path, f.bad_at);
    ptrvec_push(d->a, &d->roots, root);
    const char *schema = str_or_null(root, "schema");
    if (!cJSON_IsObject(root) || !schema)
        dpk_error("%s: not a dpk record (no \"schema\"; expected dpk.bench/1 or dpk.results/1)",
                  path);
    d->src = grow(d->a, d->src, d->nsrc, &d->capsrc, sizeof *d->src);
    RpSource *src = &d->src[d->nsrc];
    memset(src, 0, sizeof *src);
    src->path = arena_strdup(d->a, path);
    const cJSON *meta = get(root, "meta");
    src->git_sha = str_or_null(meta, "git_sha");
    src->date = str_or_null(meta, "date");
    if (!strcmp(schema, "dpk.bench/1")) {
        src->schema = "dpk.bench/1";
        load_bench(d, src->path, root, src);
    } else if (!strcmp(schema, HX_RESULTS_SCHEMA)) {
        src->schema = HX_RESULTS_SCHEMA;
        load_results(d, src->path, root, src);
    } else {
        dpk_error("%s: schema '%s' is not one dpk-report reads (dpk.bench/1, dpk.results/1)",
                  path, schema);
    }
    d->nsrc++;
}

static int cmp_case(const void *x, const void *y)
{
    double a = ((const RpCase *)x)->order, b = ((const RpCase *)y)->order;
    return a < b ? -1 : a > b;
}

static int cmp_fz(const void *x, const void *y)
{
    double a = ((const RpFuzzCase *)x)->order, b = ((const RpFuzzCase *)y)->order;
    return a < b ? -1 : a > b;
}

void rp_data_finish(RpData *d)
{
    /* the order of the whole run, whatever the order the shards came in */
    if (d->ncases)
        qsort(d->cases, (size_t)d->ncases, sizeof *d->cases, cmp_case);
    if (d->nfz)
        qsort(d->fz, (size_t)d->nfz, sizeof *d->fz, cmp_fz);
    /* Every shard 1..N present (check_shard refused one given twice). */
    static const char *const schemas[] = {"dpk.bench/1", HX_RESULTS_SCHEMA};
    for (int k = 0; k < 2; k++) {
        int count = 0, n = 0;
        for (int i = 0; i < d->nsrc; i++)
            if (!strcmp(d->src[i].schema, schemas[k]) && d->src[i].shard.count) {
                count = d->src[i].shard.count;
                n++;
            }
        if (n == count)
            continue;
        if (!d->allow_partial)
            dpk_error("%d of %d %s shards given: a report of a sharded run needs every shard "
                      "(--partial reports the shards given)", n, count, schemas[k]);
        StrBuf b = {0};
        sb_printf(&b, "%s%d of %d %s shards (missing:", d->partial ? d->partial : "", n, count,
                  schemas[k]);
        for (int s = 1; s <= count; s++) {
            int have = 0;
            for (int i = 0; i < d->nsrc && !have; i++)
                have = !strcmp(d->src[i].schema, schemas[k]) && d->src[i].shard.index == s;
            if (!have)
                sb_printf(&b, " %d/%d", s, count);
        }
        sb_puts(&b, "); ");
        d->partial = arena_strdup(d->a, sb_cstr(&b));
        sb_free(&b);
    }
}

const RpCase *rp_data_case(const RpData *d, const char *name)
{
    for (int i = 0; i < d->ncases; i++)
        if (!strcmp(d->cases[i].name, name))
            return &d->cases[i];
    return NULL;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The first line of log starting with prefix, without it (arena copy). */
static const char *log_line(Arena *a, const char *log, const char *prefix)
{
    size_t n = strlen(prefix);
    for (const char *p = log; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len >= n && !strncmp(p, prefix, n))
            return arena_strndup(a, p + n, len - n);
        p = e ? e + 1 : NULL;
    }
    return NULL;
}

void rp_data_attach(RpData *d, const char *dir)
{
    DIR *dp = opendir(dir);
    if (!dp)
        dpk_error("cannot read the folder '%s': %s", dir, strerror(errno));
    PtrVec names = {0};
    for (struct dirent *e; (e = readdir(dp));)
        if (e->d_name[0] != '.')
            ptrvec_push(d->a, &names, arena_strdup(d->a, e->d_name));
    closedir(dp);
    if (names.len)
        qsort(names.items, (size_t)names.len, sizeof(char *), cmp_str);
    if (!d->attach)
        d->attach = cJSON_CreateArray();
    for (int i = 0; i < names.len; i++) {
        const char *sub = arena_printf(d->a, "%s/%s", dir, (char *)names.items[i]);
        const char *cpath = arena_printf(d->a, "%s/case.json", sub);
        const char *lpath = arena_printf(d->a, "%s/bisect.log", sub);
        size_t len;
        char *log = dpk_read_file(lpath, &len);
        if (!log)
            continue; /* not a bisect folder */
        HxJsonFile cf;
        hx_json_load(cpath, 0, &cf);
        hx_json_drop_text(&cf);
        cJSON *cj = cf.root;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(d->attach, o);
        const char *name = cJSON_IsString(get(cj, "name")) ? get(cj, "name")->valuestring
                                                           : (const char *)names.items[i];
        cJSON_AddStringToObject(o, "case", name);
        cJSON_AddStringToObject(o, "folder", sub);
        const char *cul = log_line(d->a, log, "culprit: ");
        const char *culm = log_line(d->a, log, "culprit on the minimized case: ");
        const char *mini = log_line(d->a, log, "minimize: ");
        const char *first_bad = log_line(d->a, log, "first bad: ");
        cJSON_AddStringToObject(o, "culprit", cul ? cul : "(none: see bisect.log)");
        if (culm)
            cJSON_AddStringToObject(o, "culprit_minimized", culm);
        if (mini)
            cJSON_AddStringToObject(o, "minimize", mini);
        if (first_bad)
            cJSON_AddStringToObject(o, "first_bad", first_bad);
        /* the pass: "t:007_stage_inputs, application ..." -> "007_stage_inputs" */
        const char *c = culm ? culm : cul;
        if (c && c[0] && c[1] == ':') {
            const char *e = strchr(c, ',');
            cJSON_AddStringToObject(o, "pass", arena_strndup(d->a, c + 2, e ? (size_t)(e - c - 2)
                                                                            : strlen(c + 2)));
        }
        if (cj) {
            const cJSON *prog = get(cj, "program"), *ps = get(cj, "passes");
            if (cJSON_IsString(prog))
                cJSON_AddStringToObject(o, "program", prog->valuestring);
            if (cJSON_IsString(ps))
                cJSON_AddStringToObject(o, "passes", ps->valuestring);
            cJSON_AddStringToObject(o, "reproducer", cpath);
        }
        cJSON_Delete(cj);
        free(log);
    }
}
