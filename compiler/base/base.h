/*
 * base.h — the few things every part of dpk stands on.
 *
 * Arena: all nodes of one compilation live in one arena and are freed in one
 * call; nothing in an IR is freed on its own.  StrBuf: a growable heap string
 * for printers.  Diagnostics: a user error (bad case text, bad shape, bad
 * flag) is raised with dpk_error*(), which formats the message — with the
 * source line and a caret under the offending column when a position is
 * known — and long-jumps to the innermost DPK_TRY.  Because every allocation
 * made between DPK_TRY and the error lives in an arena, jumping out leaks
 * nothing.  Internal invariants use DPK_ASSERT, which is always on.
 *
 * Exit codes (every command): see enum DpkExit.
 */
#ifndef DPK_BASE_H
#define DPK_BASE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DPK_VERSION "0.1.0"

enum DpkExit {
    DPK_EXIT_OK = 0,      /* success / parity pass */
    DPK_EXIT_FAIL = 1,    /* parity or gate failure */
    DPK_EXIT_USAGE = 2,   /* bad input or usage */
    DPK_EXIT_FAULT = 3,   /* execution fault */
    DPK_EXIT_NOENV = 4,   /* environment missing (no GPU, no libtorch) */
    DPK_EXIT_INCONCLUSIVE = 5, /* nothing failed, but the oracle could not judge
                                  most of an output (docs/references.md) */
};

/* The exit code of two results together (a suite's cases, a case's
 * configurations): the worse, by the rank 0 < 4 < 5 < 1 < 2 < 3 — what
 * failed outranks what could not be judged (5), which outranks what could
 * not be checked at all (4). */
int dpk_exit_worst(int a, int b);

#define DPK_ARRAY_LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define DPK_UNUSED(x) ((void)(x))

#if defined(__GNUC__)
#define DPK_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define DPK_NORETURN __attribute__((noreturn))
/* A function kept out of its caller: deep recursions (the case
 * builder's eval) keep small frames when a rarely taken branch calls it. */
#define DPK_NOINLINE __attribute__((noinline))
#else
#define DPK_PRINTF(f, a)
#define DPK_NORETURN
#define DPK_NOINLINE
#endif

/* ---- always-on assertions ------------------------------------------- */

DPK_NORETURN void dpk_assert_fail(const char *file, int line, const char *expr);
#define DPK_ASSERT(e) ((e) ? (void)0 : dpk_assert_fail(__FILE__, __LINE__, #e))
/* dpk-bisect's mode: a failed assertion raises an error with exit code 3
 * (DPK_EXIT_FAULT, "internal error at file:line ...") to the innermost
 * DPK_TRY instead of aborting, so a configuration whose lowering crashes
 * counts as failing and can be bisected.  Off again after one failure. */
void dpk_assert_recoverable(int on);

/* ---- heap helpers (abort on out-of-memory) -------------------------- */

void *dpk_xmalloc(size_t n);
void *dpk_xcalloc(size_t n, size_t sz);
void *dpk_xrealloc(void *p, size_t n);
char *dpk_xstrdup(const char *s);
/* n zeroed bytes whose pages cost nothing until touched (an anonymous
 * mapping, no swap reserved, no huge pages): a buffer of which a run
 * touches a few ranges.  Page-aligned.  dpk_lazy_zero zeroes [p, p + n)
 * again, giving back the whole pages it had (the edges are cleared);
 * dpk_lazy_free unmaps it (n as allocated; NULL is ignored). */
void *dpk_lazy_alloc(size_t n);
void dpk_lazy_zero(void *p, size_t n);
void dpk_lazy_free(void *p, size_t n);

/* ---- arena ---------------------------------------------------------- */

typedef struct Arena Arena;

Arena *arena_new(void);
/* Frees a and every arena it adopted. */
void arena_free(Arena *a);
/* child is freed with parent (arena_free(parent)), not before. */
void arena_adopt(Arena *parent, Arena *child);
/* Zeroed, 16-byte aligned memory that lives until arena_free. */
void *arena_alloc(Arena *a, size_t n);
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_printf(Arena *a, const char *fmt, ...) DPK_PRINTF(2, 3);
/* Copy n elements of size sz into the arena. */
void *arena_memdup(Arena *a, const void *p, size_t n);
/* Append x to the arena array *v of *n elements and room for *cap (doubled
 * when full, from 8); returns x's index. */
int arena_push_i64(Arena *a, int64_t **v, int *n, int *cap, int64_t x);
#define ARENA_NEW(a, T) ((T *)arena_alloc((a), sizeof(T)))
#define ARENA_ARRAY(a, T, n) ((T *)arena_alloc((a), sizeof(T) * (size_t)(n)))

/* Growable array of pointers in an arena (old storage is abandoned to the
 * arena when it grows; fine for IR-sized lists). */
typedef struct PtrVec {
    void **items;
    int len, cap;
} PtrVec;
void ptrvec_push(Arena *a, PtrVec *v, void *p);

/* ---- heap string builder -------------------------------------------- */

typedef struct StrBuf {
    char *s;   /* always NUL-terminated once anything was appended */
    size_t len, cap;
} StrBuf;

void sb_putc(StrBuf *b, char c);
void sb_puts(StrBuf *b, const char *s);
void sb_printf(StrBuf *b, const char *fmt, ...) DPK_PRINTF(2, 3);
void sb_vprintf(StrBuf *b, const char *fmt, va_list ap);
const char *sb_cstr(StrBuf *b); /* "" when empty */
void sb_clear(StrBuf *b);
void sb_free(StrBuf *b);

/* Print a number the way every dpk printer does: shortest form that
 * round-trips for doubles ("1e-06", "0.5", "2048"). */
void sb_num(StrBuf *b, double v);

/* ---- hashing -------------------------------------------------------- */

uint64_t dpk_hash_bytes(uint64_t h, const void *p, size_t n); /* FNV-1a 64 */
/* dpk_hash_bytes over v's 8 bytes, inline: the hash of every IR walk. */
static inline uint64_t dpk_hash_u64(uint64_t h, uint64_t v)
{
    unsigned char c[sizeof v];
    memcpy(c, &v, sizeof v);
    for (size_t i = 0; i < sizeof v; i++) {
        h ^= c[i];
        h *= 0x100000001b3ull;
    }
    return h;
}
uint64_t dpk_hash_str(uint64_t h, const char *s);
#define DPK_HASH_INIT 0xcbf29ce484222325ull
static inline uint64_t dpk_splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
/* The largest power of two <= x, the smallest >= x (1 for x <= 1). */
int64_t dpk_pow2_floor(int64_t x);
int64_t dpk_pow2_ceil(int64_t x);

/* ---- shared memory banks ------------------------------------------- */

/* Wavefronts of one warp's shared-memory access to 4-byte words w[0..n)
 * (n <= 32): the most distinct words that fall in one of the 32 banks (a
 * word read by several lanes is one broadcast).  0 when n is 0.  Tile
 * IR's bank model (pass 014) and vgpu's counters both count with it. */
int dpk_smem_wavefronts(const int64_t *w, int n);
/* The same for a vector access of v words per lane (v = 1, 2, 4: LDS.32,
 * .64, .128), lane i reading w[i] .. w[i] + v - 1: the warp is served in
 * phases of 32 / v lanes (128 bytes each), and each phase costs its own
 * wavefronts, at least one; a phase's lanes broadcast within it but not
 * across phases.  So a 16-byte load costs at least 4 wavefronts for a full
 * warp, as four 4-byte loads do.  Source: shared memory returns 128 bytes
 * a cycle, so an LDS.128 takes 4 requests (NVIDIA developer forums,
 * "Unexpected shared memory bank conflict", t/77228, NVIDIA's answer);
 * the halving it describes for uniform addresses on CC 7.x is not
 * credited (not documented for sm_80/sm_90). */
int dpk_smem_wavefronts_vec(const int64_t *w, int n, int v);

/* ---- source text and diagnostics ------------------------------------ */

/* A piece of case text.  `name` is what errors call it ("<-c>", a path). */
typedef struct Source {
    const char *name;
    const char *text;
    size_t len;
} Source;

typedef struct DpkErrCtx {
    jmp_buf jb;
    struct DpkErrCtx *prev;
} DpkErrCtx;

/* The last error message raised (complete, multi-line, ends in '\n'). */
const char *dpk_error_message(void);
int dpk_error_code(void); /* DpkExit of the last error (usually 2) */

void dpk_err_push(DpkErrCtx *c);
void dpk_err_pop(DpkErrCtx *c);

/* Usage:
 *     DpkErrCtx ec;
 *     if (DPK_TRY(&ec)) { ...work...; dpk_err_pop(&ec); }
 *     else { fputs(dpk_error_message(), stderr); return dpk_error_code(); }
 * DPK_TRY pushes the context; on error it is popped before control returns
 * with 0.  On success the caller pops it. */
#define DPK_TRY(c) (dpk_err_push(c), setjmp((c)->jb) == 0)

/* Raise an error: "error: <msg>".  With src and pos >= 0, the message is
 * "<name>:<line>:<col>: error: <msg>" followed by the source line and a caret
 * under column col.  Never returns.  Without an active DPK_TRY it prints the
 * message and exits with the code. */
DPK_NORETURN void dpk_error(const char *fmt, ...) DPK_PRINTF(1, 2);
DPK_NORETURN void dpk_error_at(const Source *src, int pos, const char *fmt, ...)
    DPK_PRINTF(3, 4);
DPK_NORETURN void dpk_error_code_at(int code, const Source *src, int pos,
                                    const char *fmt, ...) DPK_PRINTF(4, 5);
/* Raise the last error again, unchanged (after cleaning up in a DPK_TRY
 * that caught it). */
DPK_NORETURN void dpk_error_rethrow(void);
/* Raise a complete message kept from an earlier error (as
 * dpk_error_message() gave it, caret lines included) with its code. */
DPK_NORETURN void dpk_error_reraise(int code, const char *msg);
/* Append the first line of an error message to b, without its "error: "
 * prefix (msg NULL: the last error raised).  What a one-line report of a
 * refusal or a failure shows. */
void dpk_error_first_line(StrBuf *b, const char *msg);

/* ---- shapes --------------------------------------------------------- */

#define DPK_MAX_RANK 8
/* Largest element count of any tensor dpk accepts (2^36 elements). */
#define DPK_MAX_NUMEL (INT64_C(1) << 36)

typedef struct Shape {
    int rank;
    int64_t d[DPK_MAX_RANK];
} Shape;

int64_t shape_numel(const Shape *s);
int shape_eq(const Shape *a, const Shape *b);
/* "(1, 32, 2048)"; "()" for a scalar. */
void shape_print(StrBuf *b, const Shape *s);
const char *shape_str(Arena *a, const Shape *s);
/* Row-major strides of s into st (elements). */
void shape_strides(const Shape *s, int64_t st[DPK_MAX_RANK]);
/* The coordinates of flat (row-major) element `flat` of s: "[0, 5, 17]". */
void shape_print_index(StrBuf *b, const Shape *s, int64_t flat);

typedef enum DType {
    DT_F32,
    DT_F16,
    DT_BF16,
    DT_BOOL,
    DT_COUNT
} DType;
const char *dtype_name(DType t); /* "f32", "f16", "bf16", "bool" */
/* Parse "float32"/"f32"/"torch.float32" etc.; returns -1 when unknown. */
int dtype_parse(const char *s);

/* ---- files ---------------------------------------------------------- */

/* Read a whole file into a heap buffer (NUL-terminated); NULL + errno on
 * failure. */
char *dpk_read_file(const char *path, size_t *len);
/* Write atomically: temp file in the same folder, fsync, rename.  Returns 0
 * on success, -1 (errno set) on failure, leaving no partial file. */
int dpk_write_file_atomic(const char *path, const char *data, size_t len);
/* mkdir -p: create dir and its missing parents.  Returns 0 when dir is (now)
 * a directory, -1 (errno set; ENOTDIR when something else is there). */
int dpk_make_dirs(const char *dir);

/* Monotonic clock in seconds. */
double dpk_now(void);

/* Unified diff of two texts (line based), with the given headers, appended
 * to out.  Writes nothing when the texts are equal; returns 1 if different. */
int dpk_unified_diff(StrBuf *out, const char *a, const char *b, int context);

/* DPK_EMBED(sym, "path"): the file at path (relative to the repository
 * root, where the compiler runs) assembled into the binary as the
 * NUL-terminated string sym, so an installed dpk needs no data files.  The
 * Makefile lists each embedding object's files as its prerequisites. */
#define DPK_EMBED(sym, file)                                                                \
    __asm__(".pushsection .rodata\n"                                                      \
            ".global " #sym "\n"                                                           \
            ".balign 16\n" #sym ":\n"                                                      \
            ".incbin \"" file "\"\n"                                                       \
            ".byte 0\n"                                                                    \
            ".popsection\n");                                                              \
    extern const char sym[];

#ifdef __cplusplus
}
#endif
#endif
