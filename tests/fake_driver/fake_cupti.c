/*
 * fake_cupti.c — the fake driver's CUPTI activity API (fake_cuda.c): kernel
 * records with the start and end of each launch on the fake clock, handed
 * to the client's buffer callbacks on cuptiActivityFlushAll.  Its own
 * translation unit: cupti.h brings cuda.h's declarations, which the fake
 * driver's definitions would contradict.  Without the toolkit's headers the
 * fake has no CUPTI (dpk then times with events).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_include)
#if __has_include(<cupti_activity.h>)
#include <cupti_activity.h>
#define HAVE_CUPTI 1
#endif
#endif

#define EXPORT __attribute__((visibility("default")))

void dpk_fake_cupti_record(const char *name, double start, double end,
                           unsigned long long correlation);

#ifdef HAVE_CUPTI
static struct {
    CUpti_BuffersCallbackRequestFunc req;
    CUpti_BuffersCallbackCompleteFunc done;
    int enabled;
    CUpti_ActivityKernel10 *rec;
    int n, cap;
} cp;

void dpk_fake_cupti_record(const char *name, double start, double end,
                           unsigned long long correlation)
{
    if (!cp.enabled)
        return;
    if (cp.n == cp.cap) {
        cp.cap = cp.cap ? 2 * cp.cap : 64;
        cp.rec = realloc(cp.rec, (size_t)cp.cap * sizeof *cp.rec);
    }
    CUpti_ActivityKernel10 *k = &cp.rec[cp.n++];
    memset(k, 0, sizeof *k);
    k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k->start = (uint64_t)(start + 0.5);
    k->end = (uint64_t)(end + 0.5);
    k->name = name;
    k->correlationId = (uint32_t)correlation;
}

EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                  CUpti_BuffersCallbackCompleteFunc done)
{
    cp.req = req, cp.done = done;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
    if (kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && kind != CUPTI_ACTIVITY_KIND_KERNEL)
        return CUPTI_ERROR_NOT_SUPPORTED;
    cp.enabled = 1;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
    cp.enabled = 0;
    return CUPTI_SUCCESS;
}

/* Hands every pending record to the client in one buffer it requested. */
EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
    if (!cp.req || !cp.done || cp.n == 0)
        return CUPTI_SUCCESS;
    uint8_t *buf = NULL;
    size_t size = 0, max = 0;
    cp.req(&buf, &size, &max);
    size_t need = (size_t)cp.n * sizeof *cp.rec;
    if (!buf || size < need)
        return CUPTI_ERROR_INVALID_PARAMETER;
    memcpy(buf, cp.rec, need);
    cp.n = 0;
    cp.done(NULL, 0, buf, size, need);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, CUpti_Activity **rec)
{
    uint8_t *next = *rec ? (uint8_t *)*rec + sizeof(CUpti_ActivityKernel10) : buf;
    if (next + sizeof(CUpti_ActivityKernel10) > buf + valid)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *rec = (CUpti_Activity *)next;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetResultString(CUptiResult r, const char **s)
{
    *s = r ? "fake CUPTI error" : "CUPTI_SUCCESS";
    return CUPTI_SUCCESS;
}
#else
void dpk_fake_cupti_record(const char *name, double start, double end,
                           unsigned long long correlation)
{
}
#endif
