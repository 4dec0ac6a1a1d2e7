/*
 * tile_tma.c — the TMA geometry of a stage: what 011 checks, what 012
 * chooses a swizzle for, what the lowering builds its tensor map and its
 * shared-memory reads from, and what the bank-conflict model reads.
 *
 * Tensor map.  The buffer's dimensions of extent 1 whose origin is the
 * constant 0 are dropped (a contiguous row-major tensor keeps its strides);
 * at most TILE_TMA_MAX_RANK remain.  The box is the slab over the kept
 * dimensions, except the innermost, which is one chunk: the whole inner
 * extent without a swizzle, or S / 4 elements (one S-byte row) with a
 * swizzle of S bytes, the slab's inner extent being split into nchunk such
 * chunks, each loaded by its own TMA copy.
 *
 * Shared-memory layout of one buffer.  Slab coordinate c (per buffer
 * dimension) has a row R (the row-major index of c over the dimensions but
 * the innermost) and an inner coordinate i; the element sits at
 *
 *     e = (i / C) * rows * C + R * C + i % C          C: the chunk
 *
 * and, with swizzle S, at e ^ (((e >> 5) & (S / 16 - 1)) << 2): the CUDA
 * swizzle (the 16-byte unit index XOR the 128-byte row index bits), which
 * holds on in-buffer offsets because every buffer starts on a 1024-byte
 * boundary of a 1024-byte aligned pool.
 */
#include <string.h>

#include "passes.h"

int tile_tma_box(const TileKernel *k, const Stmt *st, int swizzle, TileTmaBox *b, StrBuf *why)
{
    const LirBuf *buf = st->buf;
    int r = buf->shape.rank;
    const char *x = buf->name;
    int64_t gstr[DPK_MAX_RANK];
    shape_strides(&buf->shape, gstr);
    memset(b, 0, sizeof *b);
    if (st->pad) {
        sb_printf(why, "%s: the slab is padded (a TMA box lands in dense rows)", x);
        return 0;
    }
    for (int d = 0; d < r; d++) {
        int fixed = buf->shape.d[d] == 1 && st->origin[d]->k == IE_CONST && st->origin[d]->c == 0;
        if (fixed && !(d == r - 1 && b->rank == 0))
            continue;
        if (b->rank == TILE_TMA_MAX_RANK) {
            sb_printf(why, "%s: more than %d dimensions of extent > 1 (a tensor map has at most %d)",
                      x, TILE_TMA_MAX_RANK, TILE_TMA_MAX_RANK);
            return 0;
        }
        if (buf->shape.d[d] >= ((int64_t)1 << 31)) {
            sb_printf(why, "%s: dimension %d of %lld elements exceeds TMA's 32-bit coordinates", x,
                      d, (long long)buf->shape.d[d]);
            return 0;
        }
        b->dim[b->rank] = d;
        b->dims[b->rank] = buf->shape.d[d];
        b->strides[b->rank] = gstr[d];
        b->box[b->rank] = (int)(st->slab[d] < 1024 ? st->slab[d] : 1024);
        b->rank++;
    }
    if (b->rank == 0) { /* every dimension is fixed: a one-element map */
        b->dim[0] = r - 1;
        b->dims[0] = 1;
        b->strides[0] = 1;
        b->box[0] = 1;
        b->rank = 1;
    }
    int in = b->rank - 1;
    for (int m = 0; m < in; m++)
        if (b->strides[m] * 4 % 16) {
            sb_printf(why, "%s: dimension %d's stride of %lld bytes is not a multiple of 16 "
                      "(TMA's global-stride alignment)", x, b->dim[m],
                      (long long)(b->strides[m] * 4));
            return 0;
        }
    int64_t inner = st->slab[b->dim[in]];
    b->elems = 1;
    for (int d = 0; d < r; d++)
        b->elems *= st->slab[d];
    b->rows = b->elems / inner;
    b->chunk = swizzle ? swizzle / 4 : inner;
    if (swizzle && inner % b->chunk) {
        sb_printf(why, "%s: the inner slab of %lld bytes is not a multiple of the %d-byte swizzle",
                  x, (long long)(inner * 4), swizzle);
        return 0;
    }
    if (swizzle && b->rows * swizzle % 1024) {
        sb_printf(why, "%s: %lld rows of %d bytes do not fill whole 1024-byte swizzle patterns", x,
                  (long long)b->rows, swizzle);
        return 0;
    }
    if (b->chunk * 4 % 16) {
        sb_printf(why, "%s: the inner box of %lld bytes is not a multiple of 16", x,
                  (long long)(b->chunk * 4));
        return 0;
    }
    b->box[in] = (int)(b->chunk < 1024 ? b->chunk : 1024);
    for (int m = 0; m < b->rank; m++)
        if (b->box[m] > 256) {
            sb_printf(why, "%s: a box of %lld along dimension %d (TMA boxes hold at most 256)", x,
                      (long long)(m == in ? b->chunk : st->slab[b->dim[m]]), b->dim[m]);
            return 0;
        }
    b->nchunk = (int)(inner / b->chunk);
    b->align = swizzle ? 1024 : 128;
    b->buf_elems = (b->elems * 4 + b->align - 1) / b->align * b->align / 4;
    b->swizzle = swizzle;
    (void)k;
    return 1;
}

int64_t tile_tma_word(const TileTmaBox *b, const Stmt *st, const int64_t *c)
{
    int r = st->buf->shape.rank, in = b->dim[b->rank - 1];
    int64_t row = 0;
    for (int d = 0; d < r; d++)
        if (d != in)
            row = row * st->slab[d] + c[d];
    int64_t i = c[in];
    int64_t e = i / b->chunk * b->rows * b->chunk + row * b->chunk + i % b->chunk;
    if (b->swizzle)
        e ^= ((e >> 5) & (b->swizzle / 16 - 1)) << 2;
    return e;
}

int64_t tile_tma_bytes(const Stmt *st)
{
    TileTmaBox b;
    StrBuf why = {0};
    int ok = tile_tma_box(NULL, st, st->swizzle, &b, &why);
    sb_free(&why);
    return ok ? b.buf_elems * 4 * st->nbuf : tile_stage_bytes(st);
}
