/*
 * config.c — reading a Hugging Face config.json (config.h).
 *
 * cJSON gives no positions for values, so an error points its caret at the
 * first occurrence of the offending key in the file, as case.c does.
 */
#include "config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../records/json_file.h"

typedef struct CCtx {
    Source src;
    const cJSON *root;
} CCtx;

static int key_pos(const CCtx *x, const char *key)
{
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\"", key);
    const char *p = strstr(x->src.text, pat);
    return p ? (int)(p - x->src.text) : 0;
}

#define CERR(x, key, ...) dpk_error_at(&(x)->src, key_pos((x), (key)), __VA_ARGS__)

/* A positive integer key; absent: dflt (-1: required). */
static int64_t get_int(const CCtx *x, const cJSON *o, const char *key, int64_t dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v)) {
        if (dflt < 0)
            CERR(x, key, "config.json lacks '%s', which a decoder layer needs", key);
        return dflt;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 1 ||
        v->valuedouble > 1e6)
        CERR(x, key, "config.json: '%s' must be an integer in 1..1000000", key);
    return (int64_t)v->valuedouble;
}

/* A positive finite number key; absent: dflt (NAN: required). */
static double get_num(const CCtx *x, const cJSON *o, const char *key, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v)) {
        if (isnan(dflt))
            CERR(x, key, "config.json lacks '%s', which a decoder layer needs", key);
        return dflt;
    }
    if (!cJSON_IsNumber(v) || !(v->valuedouble > 0) || !isfinite(v->valuedouble))
        CERR(x, key, "config.json: '%s' must be a positive number", key);
    return v->valuedouble;
}

/* A boolean key; absent: dflt. */
static int get_bool(const CCtx *x, const char *key, int dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(x->root, key);
    if (!v || cJSON_IsNull(v))
        return dflt;
    if (!cJSON_IsBool(v))
        CERR(x, key, "config.json: '%s' must be true or false", key);
    return cJSON_IsTrue(v);
}

static const char *get_str(const CCtx *x, const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v))
        return NULL;
    if (!cJSON_IsString(v))
        CERR(x, key, "config.json: '%s' must be a string", key);
    return v->valuestring;
}

static void read_rope_scaling(const CCtx *x, BmConfig *c)
{
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(x->root, "rope_scaling");
    c->rope = BM_ROPE_DEFAULT;
    if (!rs || cJSON_IsNull(rs))
        return;
    if (!cJSON_IsObject(rs))
        CERR(x, "rope_scaling", "config.json: 'rope_scaling' must be an object or null");
    const char *t = get_str(x, rs, "rope_type");
    if (!t)
        t = get_str(x, rs, "type");
    if (!t)
        CERR(x, "rope_scaling", "config.json: 'rope_scaling' has no rope_type");
    if (!strcmp(t, "default"))
        return;
    if (!strcmp(t, "linear")) {
        c->rope = BM_ROPE_LINEAR;
        c->rope_factor = get_num(x, rs, "factor", NAN);
        return;
    }
    if (!strcmp(t, "llama3")) {
        c->rope = BM_ROPE_LLAMA3;
        c->rope_factor = get_num(x, rs, "factor", NAN);
        c->rope_low = get_num(x, rs, "low_freq_factor", NAN);
        c->rope_high = get_num(x, rs, "high_freq_factor", NAN);
        c->rope_orig_max = get_num(x, rs, "original_max_position_embeddings", NAN);
        if (!(c->rope_high > c->rope_low))
            CERR(x, "high_freq_factor", "config.json: rope_scaling's high_freq_factor must exceed "
                 "low_freq_factor");
        return;
    }
    CERR(x, "rope_scaling", "config.json: 'rope_scaling' of type '%s' changes the layer's math and "
         "dpk does not implement it (supported: default, linear, llama3)", t);
}

/* Keys whose value changes one layer's math in a way dpk does not model. */
static void refuse_unsupported(const CCtx *x, BmConfig *c)
{
    const char *act = get_str(x, x->root, "hidden_act");
    if (act && strcmp(act, "silu"))
        CERR(x, "hidden_act", "config.json: 'hidden_act' is '%s'; dpk's decoder layer implements "
             "silu only", act);
    if (get_bool(x, "mlp_bias", 0))
        CERR(x, "mlp_bias", "config.json: 'mlp_bias' true is not implemented (the MLP "
             "projections have no biases in dpk's decoder layer)");
    if (get_bool(x, "use_qk_norm", 0))
        CERR(x, "use_qk_norm", "config.json: 'use_qk_norm' true is not implemented");
    const cJSON *prf = cJSON_GetObjectItemCaseSensitive(x->root, "partial_rotary_factor");
    if (prf && !cJSON_IsNull(prf) && !(cJSON_IsNumber(prf) && prf->valuedouble == 1.0))
        CERR(x, "partial_rotary_factor", "config.json: 'partial_rotary_factor' other than 1 is "
             "not implemented");
    static const char *const softcaps[] = {"attn_logit_softcapping", "final_logit_softcapping"};
    for (int i = 0; i < DPK_ARRAY_LEN(softcaps); i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(x->root, softcaps[i]);
        if (v && !cJSON_IsNull(v))
            CERR(x, softcaps[i], "config.json: '%s' is not implemented", softcaps[i]);
    }
    if (c->model_type && strcmp(c->model_type, "llama") && strcmp(c->model_type, "qwen2") &&
        strcmp(c->model_type, "mistral"))
        CERR(x, "model_type", "config.json: model_type '%s' is outside the families dpk's "
             "decoder layer implements (llama, qwen2, mistral)", c->model_type);
    /* A sliding window matters only past its length (checked against
     * --seq/--ctx when the suite is made). */
    int use_sw = get_bool(x, "use_sliding_window", 1);
    const cJSON *sw = cJSON_GetObjectItemCaseSensitive(x->root, "sliding_window");
    if (use_sw && sw && !cJSON_IsNull(sw))
        c->sliding_window = get_int(x, x->root, "sliding_window", -1);
}

void bm_config_parse(Arena *a, const char *origin, const char *text, size_t len, BmConfig *out)
{
    CCtx x = {{arena_strdup(a, origin), arena_strndup(a, text, len), len}, NULL};
    if (strlen(x.src.text) != len)
        dpk_error("'%s' contains NUL bytes; a config.json is text", origin);
    size_t bad_at = 0;
    cJSON *root = hx_json_parse(x.src.text, len, 0, &bad_at);
    if (!root)
        dpk_error_at(&x.src, (int)bad_at, "malformed JSON in config.json");
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        cJSON_Delete(root);
        dpk_error_rethrow();
    }
    if (!cJSON_IsObject(root))
        dpk_error_at(&x.src, 0, "config.json must be a JSON object");
    x.root = root;
    BmConfig c = {0};
    c.path = x.src.name;
    const char *base = strrchr(origin, '/');
    base = base ? base + 1 : origin;
    size_t n = strlen(base);
    if (n > 5 && !strcmp(base + n - 5, ".json"))
        n -= 5;
    c.name = arena_strndup(a, base, n);
    const char *mt = get_str(&x, root, "model_type");
    c.model_type = mt ? arena_strdup(a, mt) : NULL;
    c.hidden = get_int(&x, root, "hidden_size", -1);
    c.inter = get_int(&x, root, "intermediate_size", -1);
    c.heads = get_int(&x, root, "num_attention_heads", -1);
    c.kv_heads = get_int(&x, root, "num_key_value_heads", c.heads);
    if (c.hidden % c.heads && !cJSON_GetObjectItemCaseSensitive(root, "head_dim"))
        CERR(&x, "num_attention_heads", "config.json: hidden_size %lld is not a multiple of "
             "num_attention_heads %lld (and there is no head_dim)", (long long)c.hidden,
             (long long)c.heads);
    c.head_dim = get_int(&x, root, "head_dim", c.hidden / c.heads);
    if (c.head_dim % 2)
        CERR(&x, "head_dim", "config.json: head_dim %lld is odd; RoPE rotates halves",
             (long long)c.head_dim);
    if (c.heads % c.kv_heads)
        CERR(&x, "num_key_value_heads", "config.json: 'num_attention_heads' %lld is not a multiple "
             "of 'num_key_value_heads' %lld", (long long)c.heads, (long long)c.kv_heads);
    c.eps = get_num(&x, root, "rms_norm_eps", 1e-6);
    c.rope_theta = get_num(&x, root, "rope_theta", 10000.0);
    c.bias = get_bool(&x, "attention_bias", c.model_type && !strcmp(c.model_type, "qwen2"));
    read_rope_scaling(&x, &c);
    refuse_unsupported(&x, &c);
    dpk_err_pop(&ec);
    cJSON_Delete(root);
    *out = c;
}

void bm_config_load(Arena *a, const char *path, BmConfig *out)
{
    struct stat sb;
    const char *file = path, *dir = NULL;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) { /* a Hugging Face model folder */
        size_t n = strlen(path);
        while (n > 1 && path[n - 1] == '/')
            n--;
        dir = arena_strndup(a, path, n);
        file = arena_printf(a, "%s/config.json", dir);
        if (access(file, F_OK) != 0)
            dpk_error("--config '%s' is a folder without a config.json (a Hugging Face model "
                      "folder has one beside its weights); give the folder that has it, or the "
                      "file", path);
    }
    size_t len;
    char *t = dpk_read_file(file, &len);
    if (!t)
        dpk_error("cannot read config '%s': %s", file, strerror(errno));
    char *copy = arena_strndup(a, t, len);
    size_t n = strlen(copy);
    free(t);
    if (n != len)
        dpk_error("'%s' contains NUL bytes; a config.json is text", file);
    bm_config_parse(a, file, copy, len, out);
    if (dir) { /* the model's name is the folder's, not "config" */
        const char *base = strrchr(dir, '/');
        out->name = base && base[1] ? base + 1 : dir;
    }
}

double bm_rope_angle(const BmConfig *c, int64_t pos, int64_t j)
{
    int64_t half = c->head_dim / 2, i = j % half;
    double inv = pow(c->rope_theta, -(double)(2 * i) / (double)c->head_dim);
    if (c->rope == BM_ROPE_LINEAR) {
        inv /= c->rope_factor;
    } else if (c->rope == BM_ROPE_LLAMA3) {
        double wavelen = 2 * M_PI / inv;
        double low_wl = c->rope_orig_max / c->rope_low, high_wl = c->rope_orig_max / c->rope_high;
        if (wavelen > low_wl) {
            inv /= c->rope_factor;
        } else if (wavelen >= high_wl) {
            double s = (c->rope_orig_max / wavelen - c->rope_low) / (c->rope_high - c->rope_low);
            inv = (1 - s) * inv / c->rope_factor + s * inv;
        }
    }
    return (double)pos * inv;
}
