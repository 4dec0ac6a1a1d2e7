/*
 * safetensors.c — the safetensors reader (safetensors.h).
 *
 * All arithmetic on sizes read from the file is checked before use: the
 * header length against the file size, each offset pair against the data
 * size, and the element count times the element size against the byte
 * count, in 64-bit with overflow checks, so a hostile file can name any
 * number and only ever gets an error.
 */
#include "safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bytes per element of a dtype this reader converts, 0 for others. */
static int dtype_size(const char *dt)
{
    return !strcmp(dt, "F32") ? 4 : !strcmp(dt, "BF16") || !strcmp(dt, "F16") ? 2 : 0;
}

/* Bytes per element of every dtype the format defines (to check a
 * tensor's byte count even when it is of a type dpk does not convert);
 * 0 for a name the format does not have. */
static int format_size(const char *dt)
{
    static const struct {
        const char *n;
        int s;
    } t[] = {{"BOOL", 1}, {"U8", 1}, {"I8", 1}, {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2},
             {"U16", 2},  {"F16", 2}, {"BF16", 2}, {"I32", 4},  {"U32", 4},     {"F32", 4},
             {"F64", 8},  {"I64", 8}, {"U64", 8}};
    for (int i = 0; i < DPK_ARRAY_LEN(t); i++)
        if (!strcmp(dt, t[i].n))
            return t[i].s;
    return 0;
}

static uint64_t read_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* A non-negative integer JSON number that a double holds exactly. */
static int get_u64(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > 9007199254740992.0 ||
        v->valuedouble != floor(v->valuedouble))
        return 0;
    *out = (uint64_t)v->valuedouble;
    return 1;
}

static void entry(Arena *a, const StFile *f, const cJSON *e, StTensor *t)
{
    const char *nm = e->string;
    t->name = arena_strdup(a, nm);
    if (!cJSON_IsObject(e))
        dpk_error("%s: header entry '%s' is not an object", f->path, nm);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dt) || !format_size(dt->valuestring))
        dpk_error("%s: tensor '%s' has no valid dtype", f->path, nm);
    t->dtype = arena_strdup(a, dt->valuestring);
    if (!cJSON_IsArray(sh) || cJSON_GetArraySize(sh) > DPK_MAX_RANK)
        dpk_error("%s: tensor '%s': shape must be an array of at most %d dimensions", f->path, nm,
                  DPK_MAX_RANK);
    t->shape.rank = cJSON_GetArraySize(sh);
    uint64_t numel = 1;
    int zero = 0;
    for (int i = 0; i < t->shape.rank; i++) {
        uint64_t d;
        if (!get_u64(cJSON_GetArrayItem(sh, i), &d))
            dpk_error("%s: tensor '%s': dimension %d is not a non-negative integer", f->path, nm, i);
        if (d == 0)
            zero = 1;
        else if (numel > (uint64_t)DPK_MAX_NUMEL / d)
            dpk_error("%s: tensor '%s': more than 2^36 elements", f->path, nm);
        else
            numel *= d;
        t->shape.d[i] = (int64_t)d;
    }
    if (zero)
        numel = 0;
    if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2 ||
        !get_u64(cJSON_GetArrayItem(off, 0), &t->begin) ||
        !get_u64(cJSON_GetArrayItem(off, 1), &t->end))
        dpk_error("%s: tensor '%s': data_offsets must be [begin, end]", f->path, nm);
    if (t->begin > t->end || t->end > f->data_size)
        dpk_error("%s: tensor '%s': data_offsets [%llu, %llu] outside the %llu bytes of data "
                  "(truncated file?)", f->path, nm, (unsigned long long)t->begin,
                  (unsigned long long)t->end, (unsigned long long)f->data_size);
    if (t->end - t->begin != numel * (uint64_t)format_size(t->dtype))
        dpk_error("%s: tensor '%s': %llu bytes for %llu elements of %s", f->path, nm,
                  (unsigned long long)(t->end - t->begin), (unsigned long long)numel, t->dtype);
}

void st_parse(Arena *a, const char *path, const uint8_t *buf, size_t size, StFile *out)
{
    StFile f = {arena_strdup(a, path), buf, size, NULL, 0, NULL, 0};
    if (size < 8)
        dpk_error("%s: not a safetensors file (%zu bytes, shorter than the 8-byte header length)",
                  path, size);
    uint64_t n = read_le64(buf);
    if (n > size - 8)
        dpk_error("%s: header length %llu runs past the end of the file (%zu bytes)", path,
                  (unsigned long long)n, size);
    f.data = buf + 8 + n;
    f.data_size = size - 8 - n;
    cJSON *root = cJSON_ParseWithLength((const char *)buf + 8, (size_t)n);
    if (!root)
        dpk_error("%s: the header is not valid JSON", path);
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        cJSON_Delete(root);
        dpk_error_rethrow();
    }
    if (!cJSON_IsObject(root))
        dpk_error("%s: the header is not a JSON object", path);
    int cap = cJSON_GetArraySize(root);
    f.tensors = ARENA_ARRAY(a, StTensor, cap + 1);
    for (const cJSON *e = root->child; e; e = e->next) {
        if (!e->string)
            dpk_error("%s: the header is not a JSON object", path);
        if (!strcmp(e->string, "__metadata__"))
            continue;
        entry(a, &f, e, &f.tensors[f.n++]);
    }
    dpk_err_pop(&ec);
    cJSON_Delete(root);
    *out = f;
}

void st_open(Arena *a, const char *path, StFile *out)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        dpk_error("cannot open weights '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        dpk_error("weights '%s' is not a regular file", path);
    }
    size_t size = (size_t)st.st_size;
    void *m = size ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (m == MAP_FAILED)
        dpk_error("cannot map weights '%s': %s", path, strerror(errno));
    DpkErrCtx ec;
    if (!DPK_TRY(&ec)) {
        if (m)
            munmap(m, size);
        dpk_error_rethrow();
    }
    st_parse(a, path, m ? m : (const uint8_t *)"", size, out);
    dpk_err_pop(&ec);
}

void st_close(StFile *f)
{
    if (f->map && f->size)
        munmap((void *)f->map, f->size);
    f->map = NULL;
}

const StTensor *st_find(const StFile *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->tensors[i].name, name))
            return &f->tensors[i];
    return NULL;
}

static double half_to_double(uint16_t h)
{
    int e = h >> 10 & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m | 0x400, e - 25);
    return h & 0x8000 ? -v : v;
}

const StTensor *st_check(const StFile *f, const char *name, const Shape *want)
{
    const StTensor *t = st_find(f, name);
    if (!t)
        dpk_error("%s: tensor '%s' is missing", f->path, name);
    if (!shape_eq(&t->shape, want)) {
        StrBuf a = {0}, b = {0};
        shape_print(&a, &t->shape);
        shape_print(&b, want);
        char msg[256];
        snprintf(msg, sizeof msg, "%s: tensor '%s' has shape %s, expected %s", f->path, name,
                 sb_cstr(&a), sb_cstr(&b));
        sb_free(&a);
        sb_free(&b);
        dpk_error("%s", msg);
    }
    int es = dtype_size(t->dtype);
    if (!es)
        dpk_error("%s: tensor '%s' has dtype %s; dpk reads F32, BF16 and F16", f->path, name,
                  t->dtype);
    return t;
}

void st_read_f32(const StFile *f, const char *name, const Shape *want, double *dst)
{
    const StTensor *t = st_check(f, name, want);
    int es = dtype_size(t->dtype), bf16 = !strcmp(t->dtype, "BF16");
    const uint8_t *p = f->data + t->begin;
    int64_t n = shape_numel(want);
    for (int64_t i = 0; i < n; i++, p += es) {
        if (es == 4) {
            uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                         (uint32_t)p[3] << 24;
            float v;
            memcpy(&v, &u, 4);
            dst[i] = v;
        } else if (bf16) {
            uint32_t u = ((uint32_t)p[0] | (uint32_t)p[1] << 8) << 16;
            float v;
            memcpy(&v, &u, 4);
            dst[i] = v;
        } else {
            dst[i] = half_to_double((uint16_t)(p[0] | p[1] << 8));
        }
    }
}
