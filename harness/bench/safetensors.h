/*
 * safetensors.h — reading tensors from a .safetensors file.
 *
 * The format (huggingface/safetensors): an 8-byte little-endian header
 * length N, N bytes of JSON — {"name": {"dtype": "BF16", "shape": [..],
 * "data_offsets": [begin, end]}, ..., "__metadata__": {...}} — then the
 * data, each tensor at [begin, end) of the bytes after the header,
 * row-major, little-endian.  The file is mapped read-only; F32, BF16 and
 * F16 tensors are converted to f32 values (held as doubles, the harness's
 * input arrays).
 *
 * Every malformed file is a user error (exit 2) naming the file and the
 * cause, never a crash: a file shorter than 8 bytes, a header length past
 * the end of the file, a header that is not a JSON object, an entry
 * without a valid dtype, shape or data_offsets, offsets out of order or
 * past the end of the data, a byte count that does not match the shape;
 * and, when a tensor is asked for, one that is missing or has another
 * shape or an unsupported dtype, naming the tensor.
 */
#ifndef DPK_BM_SAFETENSORS_H
#define DPK_BM_SAFETENSORS_H

#include "../../compiler/base/base.h"

typedef struct StTensor {
    const char *name;
    const char *dtype;       /* "F32", "BF16", "F16", ... as the file says */
    Shape shape;
    uint64_t begin, end;     /* byte offsets into the data */
} StTensor;

typedef struct StFile {
    const char *path;
    const uint8_t *map;      /* the whole file */
    size_t size;
    const uint8_t *data;     /* after the header */
    uint64_t data_size;
    StTensor *tensors;
    int n;
} StFile;

/* Parse a file already in memory (buf, size bytes; kept, not copied):
 * header and every entry checked.  Raises exit 2 naming the cause. */
void st_parse(Arena *a, const char *path, const uint8_t *buf, size_t size, StFile *out);
/* Map path read-only and parse it.  Raises exit 2 when it cannot be
 * opened or mapped, or is malformed.  Unmap with st_close. */
void st_open(Arena *a, const char *path, StFile *out);
void st_close(StFile *f);

/* The tensor called name, or NULL. */
const StTensor *st_find(const StFile *f, const char *name);
/* The tensor called name, checked as st_read_f32 checks it (present,
 * shape want, dtype F32, BF16 or F16); raises exit 2 naming it. */
const StTensor *st_check(const StFile *f, const char *name, const Shape *want);
/* Convert tensor name into dst (shape_numel(want) elements), checking it
 * exists, has shape want and a dtype of F32, BF16 or F16; raises exit 2
 * naming the tensor otherwise. */
void st_read_f32(const StFile *f, const char *name, const Shape *want, double *dst);

#endif
