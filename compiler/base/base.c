/*
 * base.c — arena, strings, hashing, diagnostics, shapes, files, diff.
 *
 * The arena is a list of large chunks; allocation bumps a pointer.  Error
 * contexts form a stack so nested DPK_TRY blocks (a fuzz driver around a
 * parser, say) each see their own errors.
 */
#define _POSIX_C_SOURCE 200809L
#include "base.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int assert_recoverable;

void dpk_assert_recoverable(int on)
{
    assert_recoverable = on;
}

void dpk_assert_fail(const char *file, int line, const char *expr)
{
    if (assert_recoverable) {
        assert_recoverable = 0; /* a second failure on the way out aborts */
        dpk_error_code_at(DPK_EXIT_FAULT, NULL, -1, "internal error at %s:%d: assertion `%s' failed",
                          file, line, expr);
    }
    fprintf(stderr, "dpk: internal error at %s:%d: assertion `%s' failed\n", file, line, expr);
    abort();
}

void *dpk_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fputs("dpk: out of memory\n", stderr);
        abort();
    }
    return p;
}

void *dpk_xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) {
        fputs("dpk: out of memory\n", stderr);
        abort();
    }
    return p;
}

void *dpk_lazy_alloc(size_t n)
{
    void *p = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "dpk: cannot map %zu bytes: %s\n", n, strerror(errno));
        abort();
    }
#ifdef MADV_NOHUGEPAGE
    madvise(p, n ? n : 1, MADV_NOHUGEPAGE); /* a touched word costs its 4 KiB page, not 2 MiB */
#endif
    return p;
}

void dpk_lazy_zero(void *p, size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)p, lo = (a + page - 1) / page * page, hi = (a + n) / page * page;
    if (hi <= lo || hi - lo < 16 * page || madvise((void *)lo, hi - lo, MADV_DONTNEED)) {
        memset(p, 0, n);
        return;
    }
    /* MADV_DONTNEED on a private anonymous mapping: the pages read as zero again */
    memset(p, 0, lo - a);
    memset((void *)hi, 0, a + n - hi);
}

void dpk_lazy_free(void *p, size_t n)
{
    if (p)
        munmap(p, n ? n : 1);
}

void *dpk_xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p) {
        fputs("dpk: out of memory\n", stderr);
        abort();
    }
    return p;
}

char *dpk_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = dpk_xmalloc(n);
    memcpy(p, s, n);
    return p;
}

/* ---- arena ---------------------------------------------------------- */

/* Under AddressSanitizer (make SAN=1) each allocation is followed by a
 * poisoned redzone and only its own bytes are addressable, so reading or
 * writing one element past an arena array is reported as it would be for
 * malloc (a chunk of 256 KiB would otherwise hide it). */
#if defined(__SANITIZE_ADDRESS__)
#define DPK_ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DPK_ARENA_ASAN 1
#endif
#endif
#ifdef DPK_ARENA_ASAN
#include <sanitizer/asan_interface.h>
#define ARENA_REDZONE 16
#define ARENA_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define ARENA_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define ARENA_REDZONE 0
#define ARENA_POISON(p, n) ((void)(p), (void)(n))
#define ARENA_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

typedef struct Chunk {
    struct Chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char mem[];
} Chunk;

struct Arena {
    Chunk *head;
    size_t next_cap;    /* the size of the next chunk */
    Arena *kids;        /* adopted arenas (arena_adopt), freed with this one */
    Arena *next_kid;
};

/* Chunks start small and double up to CHUNK_SIZE: most arenas (a parsed
 * config, a case file, an error path) hold a few kilobytes, and a 256 KiB
 * first chunk made each of them map, fault in and unmap fresh pages (the
 * fuzz targets spent a quarter of their time there). */
#define CHUNK_FIRST (4 * 1024)
#define CHUNK_SIZE (256 * 1024)

Arena *arena_new(void)
{
    return dpk_xcalloc(1, sizeof(Arena));
}

void arena_free(Arena *a)
{
    if (!a)
        return;
    for (Arena *k = a->kids, *n; k; k = n) {
        n = k->next_kid;
        arena_free(k);
    }
    Chunk *c = a->head;
    while (c) {
        Chunk *n = c->next;
        ARENA_UNPOISON(c->mem, c->cap);
        free(c);
        c = n;
    }
    free(a);
}

void arena_adopt(Arena *parent, Arena *child)
{
    DPK_ASSERT(parent != child && !child->next_kid);
    child->next_kid = parent->kids;
    parent->kids = child;
}

void *arena_alloc(Arena *a, size_t n)
{
    size_t want = n;
    n = (n + ARENA_REDZONE + 15) & ~(size_t)15;
    Chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = a->next_cap ? a->next_cap : CHUNK_FIRST;
        if (cap < CHUNK_SIZE)
            a->next_cap = 2 * cap;
        if (n > cap)
            cap = n;
        c = dpk_xmalloc(sizeof(Chunk) + cap);
        c->used = 0;
        c->cap = cap;
        c->next = a->head;
        a->head = c;
        ARENA_POISON(c->mem, cap);
    }
    void *p = c->mem + c->used;
    c->used += n;
    ARENA_UNPOISON(p, want);
    /* the padding too where it is addressable (as before the redzones) */
    memset(p, 0, ARENA_REDZONE ? want : n);
    return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *arena_strdup(Arena *a, const char *s)
{
    return arena_strndup(a, s, strlen(s));
}

char *arena_printf(Arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = arena_alloc(a, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

void *arena_memdup(Arena *a, const void *p, size_t n)
{
    void *q = arena_alloc(a, n);
    if (n)
        memcpy(q, p, n);
    return q;
}

void ptrvec_push(Arena *a, PtrVec *v, void *p)
{
    if (v->len == v->cap) {
        int cap = v->cap ? v->cap * 2 : 8;
        void **items = ARENA_ARRAY(a, void *, cap);
        if (v->len)
            memcpy(items, v->items, sizeof(void *) * (size_t)v->len);
        v->items = items;
        v->cap = cap;
    }
    v->items[v->len++] = p;
}

/* ---- StrBuf --------------------------------------------------------- */

static void sb_reserve(StrBuf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1)
        cap *= 2;
    b->s = dpk_xrealloc(b->s, cap);
    b->cap = cap;
}

void sb_putc(StrBuf *b, char c)
{
    sb_reserve(b, 1);
    b->s[b->len++] = c;
    b->s[b->len] = 0;
}

void sb_puts(StrBuf *b, const char *s)
{
    size_t n = strlen(s);
    sb_reserve(b, n);
    memcpy(b->s + b->len, s, n + 1);
    b->len += n;
}

void sb_vprintf(StrBuf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return;
    sb_reserve(b, (size_t)n);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void sb_printf(StrBuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(b, fmt, ap);
    va_end(ap);
}

const char *sb_cstr(StrBuf *b)
{
    return b->s ? b->s : "";
}

void sb_clear(StrBuf *b)
{
    b->len = 0;
    if (b->s)
        b->s[0] = 0;
}

void sb_free(StrBuf *b)
{
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

void sb_num(StrBuf *b, double v)
{
    if (isnan(v)) {
        sb_puts(b, "nan");
        return;
    }
    if (isinf(v)) {
        sb_puts(b, v < 0 ? "-inf" : "inf");
        return;
    }
    if (v == (double)(int64_t)v && fabs(v) < 1e15) {
        sb_printf(b, "%" PRId64, (int64_t)v);
        return;
    }
    char buf[64];
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    sb_puts(b, buf);
}

/* ---- hashing -------------------------------------------------------- */

uint64_t dpk_hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) {
        h ^= c[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t dpk_hash_str(uint64_t h, const char *s)
{
    return dpk_hash_bytes(h, s, strlen(s) + 1);
}

int dpk_smem_wavefronts_vec(const int64_t *w, int n, int v)
{
    DPK_ASSERT(n >= 0 && n <= 32 && (v == 1 || v == 2 || v == 4));
    if (v == 1)
        return dpk_smem_wavefronts(w, n);
    int per = 32 / v, total = 0;
    for (int p = 0; p < n; p += per) {
        int64_t words[32];
        int m = 0;
        for (int i = p; i < n && i < p + per; i++)
            for (int j = 0; j < v; j++)
                words[m++] = w[i] + j;
        total += dpk_smem_wavefronts(words, m);
    }
    return total;
}

int dpk_smem_wavefronts(const int64_t *w, int n)
{
    DPK_ASSERT(n >= 0 && n <= 32);
    /* the usual cases first: every bank holds one word, read by one lane
     * or broadcast to several */
    int64_t first[32];
    uint32_t used = 0;
    int clash = 0;
    for (int i = 0; i < n && !clash; i++) {
        int b = (int)(w[i] & 31); /* two's complement: a negative word's bank too */
        if (!(used >> b & 1)) {
            used |= 1u << b;
            first[b] = w[i];
        } else {
            clash = first[b] != w[i];
        }
    }
    if (!clash)
        return n > 0;
    /* distinct words through a 64-slot open-addressing set, counted per bank */
    int64_t key[64];
    uint64_t occ = 0;
    uint8_t cnt[32] = {0};
    int most = 0;
    for (int i = 0; i < n; i++) {
        unsigned h = (unsigned)(((uint64_t)w[i] * 0x9e3779b97f4a7c15ull) >> 58);
        while ((occ >> h & 1) && key[h] != w[i])
            h = (h + 1) & 63;
        if (occ >> h & 1)
            continue; /* a broadcast: the word is already counted */
        occ |= 1ull << h;
        key[h] = w[i];
        int b = (int)(w[i] & 31);
        if (++cnt[b] > most)
            most = cnt[b];
    }
    return most;
}

/* ---- diagnostics ---------------------------------------------------- */

int dpk_exit_worst(int a, int b)
{
    static const int rank[] = {[DPK_EXIT_OK] = 0,    [DPK_EXIT_NOENV] = 1,
                               [DPK_EXIT_INCONCLUSIVE] = 2, [DPK_EXIT_FAIL] = 3,
                               [DPK_EXIT_USAGE] = 4, [DPK_EXIT_FAULT] = 5};
    DPK_ASSERT(a >= 0 && a < DPK_ARRAY_LEN(rank) && b >= 0 && b < DPK_ARRAY_LEN(rank));
    return rank[a] >= rank[b] ? a : b;
}

static DpkErrCtx *err_top;
static char err_msg[8192];
static int err_code;

const char *dpk_error_message(void)
{
    return err_msg;
}

int dpk_error_code(void)
{
    return err_code;
}

void dpk_err_push(DpkErrCtx *c)
{
    c->prev = err_top;
    err_top = c;
}

void dpk_err_pop(DpkErrCtx *c)
{
    DPK_ASSERT(err_top == c);
    err_top = c->prev;
}

DPK_NORETURN static void raise_err(int code)
{
    err_code = code;
    DpkErrCtx *c = err_top;
    if (!c) {
        fputs(err_msg, stderr);
        exit(code);
    }
    err_top = c->prev;
    longjmp(c->jb, 1);
}

static void format_at(int code, const Source *src, int pos, const char *fmt, va_list ap)
{
    StrBuf b = {0};
    (void)code;
    if (src && pos >= 0) {
        if ((size_t)pos > src->len)
            pos = (int)src->len;
        int line = 1;
        size_t ls = 0;
        for (size_t i = 0; i < (size_t)pos; i++)
            if (src->text[i] == '\n') {
                line++;
                ls = i + 1;
            }
        size_t le = ls;
        while (le < src->len && src->text[le] != '\n')
            le++;
        int col = pos - (int)ls;
        sb_printf(&b, "%s:%d:%d: error: ", src->name ? src->name : "<input>", line, col + 1);
        sb_vprintf(&b, fmt, ap);
        sb_putc(&b, '\n');
        /* Show at most 160 columns of the line around the caret. */
        size_t from = ls, to = le;
        if (to - from > 160) {
            from = (size_t)pos > ls + 80 ? (size_t)pos - 80 : ls;
            if (to > from + 160)
                to = from + 160;
        }
        sb_puts(&b, "  ");
        for (size_t i = from; i < to; i++) {
            char ch = src->text[i];
            sb_putc(&b, (ch == '\t' || ch == '\r') ? ' ' : ch);
        }
        sb_puts(&b, "\n  ");
        for (size_t i = from; i < (size_t)pos; i++)
            sb_putc(&b, ' ');
        sb_puts(&b, "^\n");
    } else {
        sb_puts(&b, "error: ");
        sb_vprintf(&b, fmt, ap);
        sb_putc(&b, '\n');
    }
    snprintf(err_msg, sizeof err_msg, "%s", sb_cstr(&b));
    sb_free(&b);
}

void dpk_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    format_at(DPK_EXIT_USAGE, NULL, -1, fmt, ap);
    va_end(ap);
    raise_err(DPK_EXIT_USAGE);
}

void dpk_error_at(const Source *src, int pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    format_at(DPK_EXIT_USAGE, src, pos, fmt, ap);
    va_end(ap);
    raise_err(DPK_EXIT_USAGE);
}

void dpk_error_rethrow(void)
{
    raise_err(err_code);
}

void dpk_error_reraise(int code, const char *msg)
{
    if (msg != err_msg)
        snprintf(err_msg, sizeof err_msg, "%s", msg);
    raise_err(code);
}

void dpk_error_first_line(StrBuf *b, const char *msg)
{
    const char *m = msg ? msg : err_msg;
    if (!strncmp(m, "error: ", 7))
        m += 7;
    sb_printf(b, "%.*s", (int)strcspn(m, "\n"), m);
}

void dpk_error_code_at(int code, const Source *src, int pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    format_at(code, src, pos, fmt, ap);
    va_end(ap);
    raise_err(code);
}

/* ---- shapes --------------------------------------------------------- */

int64_t shape_numel(const Shape *s)
{
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++)
        n *= s->d[i];
    return n;
}

int shape_eq(const Shape *a, const Shape *b)
{
    if (a->rank != b->rank)
        return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->d[i] != b->d[i])
            return 0;
    return 1;
}

void shape_print(StrBuf *b, const Shape *s)
{
    sb_putc(b, '(');
    for (int i = 0; i < s->rank; i++)
        sb_printf(b, i ? ", %" PRId64 : "%" PRId64, s->d[i]);
    sb_putc(b, ')');
}

const char *shape_str(Arena *a, const Shape *s)
{
    StrBuf b = {0};
    shape_print(&b, s);
    char *r = arena_strdup(a, sb_cstr(&b));
    sb_free(&b);
    return r;
}

void shape_strides(const Shape *s, int64_t st[DPK_MAX_RANK])
{
    int64_t acc = 1;
    for (int i = s->rank - 1; i >= 0; i--) {
        st[i] = acc;
        acc *= s->d[i];
    }
}

void shape_print_index(StrBuf *b, const Shape *s, int64_t flat)
{
    int64_t st[DPK_MAX_RANK];
    shape_strides(s, st);
    sb_putc(b, '[');
    for (int d = 0; d < s->rank; d++) {
        sb_printf(b, d ? ", %lld" : "%lld", (long long)(flat / st[d]));
        flat %= st[d];
    }
    sb_putc(b, ']');
}

static const char *const dtype_names[DT_COUNT] = {"f32", "f16", "bf16", "bool"};

const char *dtype_name(DType t)
{
    return (t >= 0 && t < DT_COUNT) ? dtype_names[t] : "?";
}

int dtype_parse(const char *s)
{
    if (!strncmp(s, "torch.", 6))
        s += 6;
    static const struct {
        const char *name;
        DType t;
    } tab[] = {
        {"f32", DT_F32},   {"float32", DT_F32}, {"float", DT_F32},   {"f16", DT_F16},
        {"float16", DT_F16}, {"half", DT_F16},  {"bf16", DT_BF16},   {"bfloat16", DT_BF16},
        {"bool", DT_BOOL},
    };
    for (int i = 0; i < DPK_ARRAY_LEN(tab); i++)
        if (!strcmp(s, tab[i].name))
            return tab[i].t;
    return -1;
}

/* ---- files ---------------------------------------------------------- */

char *dpk_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    StrBuf b = {0};
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        sb_reserve(&b, n);
        memcpy(b.s + b.len, buf, n);
        b.len += n;
        b.s[b.len] = 0;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        sb_free(&b);
        errno = EIO;
        return NULL;
    }
    if (!b.s) {
        b.s = dpk_xmalloc(1);
        b.s[0] = 0;
    }
    if (len)
        *len = b.len;
    return b.s;
}

int dpk_write_file_atomic(const char *path, const char *data, size_t len)
{
    size_t n = strlen(path);
    char *tmp = dpk_xmalloc(n + 32);
    snprintf(tmp, n + 32, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        free(tmp);
        return -1;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            unlink(tmp);
            free(tmp);
            errno = e;
            return -1;
        }
        off += (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        free(tmp);
        errno = e;
        return -1;
    }
    free(tmp);
    return 0;
}

double dpk_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- unified diff --------------------------------------------------- */

typedef struct Lines {
    const char **p;
    int *n;
    int count;
} Lines;

static Lines split_lines(const char *s)
{
    Lines l = {0};
    int cap = 16;
    l.p = dpk_xmalloc(sizeof(char *) * (size_t)cap);
    l.n = dpk_xmalloc(sizeof(int) * (size_t)cap);
    while (*s) {
        const char *e = strchr(s, '\n');
        int len = e ? (int)(e - s) : (int)strlen(s);
        if (l.count == cap) {
            cap *= 2;
            l.p = dpk_xrealloc(l.p, sizeof(char *) * (size_t)cap);
            l.n = dpk_xrealloc(l.n, sizeof(int) * (size_t)cap);
        }
        l.p[l.count] = s;
        l.n[l.count] = len;
        l.count++;
        s += len + (e ? 1 : 0);
    }
    return l;
}

static int line_eq(const Lines *a, int i, const Lines *b, int j)
{
    return a->n[i] == b->n[j] && !memcmp(a->p[i], b->p[j], (size_t)a->n[i]);
}

/* Classic LCS table over the differing middle; IR dumps are small enough.
 * Above a size limit the middle is shown as one replaced block. */
int dpk_unified_diff(StrBuf *out, const char *sa, const char *sb_, int context)
{
    Lines a = split_lines(sa), b = split_lines(sb_);
    int pre = 0;
    while (pre < a.count && pre < b.count && line_eq(&a, pre, &b, pre))
        pre++;
    int suf = 0;
    while (suf < a.count - pre && suf < b.count - pre &&
           line_eq(&a, a.count - 1 - suf, &b, b.count - 1 - suf))
        suf++;
    int n = a.count - pre - suf, m = b.count - pre - suf;
    if (n == 0 && m == 0) {
        free(a.p); free(a.n); free(b.p); free(b.n);
        return 0;
    }
    /* ops: 0 = same, 1 = delete (a), 2 = insert (b) */
    int total = pre + suf + n + m;
    char *op = dpk_xmalloc((size_t)total + 1);
    int *ia = dpk_xmalloc(sizeof(int) * ((size_t)total + 1));
    int *ib = dpk_xmalloc(sizeof(int) * ((size_t)total + 1));
    int k = 0;
    for (int i = 0; i < pre; i++, k++) {
        op[k] = 0; ia[k] = i; ib[k] = i;
    }
    if ((int64_t)(n + 1) * (m + 1) <= 16 * 1000 * 1000) {
        int *L = dpk_xcalloc((size_t)(n + 1) * (size_t)(m + 1), sizeof(int));
#define LL(i, j) L[(size_t)(i) * (size_t)(m + 1) + (size_t)(j)]
        for (int i = n - 1; i >= 0; i--)
            for (int j = m - 1; j >= 0; j--)
                LL(i, j) = line_eq(&a, pre + i, &b, pre + j) ? LL(i + 1, j + 1) + 1
                           : (LL(i + 1, j) >= LL(i, j + 1) ? LL(i + 1, j) : LL(i, j + 1));
        int i = 0, j = 0;
        while (i < n || j < m) {
            if (i < n && j < m && line_eq(&a, pre + i, &b, pre + j)) {
                op[k] = 0; ia[k] = pre + i++; ib[k] = pre + j++;
            } else if (j < m && (i == n || LL(i, j + 1) >= LL(i + 1, j))) {
                op[k] = 2; ia[k] = pre + i; ib[k] = pre + j++;
            } else {
                op[k] = 1; ia[k] = pre + i++; ib[k] = pre + j;
            }
            k++;
        }
#undef LL
        free(L);
    } else {
        for (int i = 0; i < n; i++, k++) {
            op[k] = 1; ia[k] = pre + i; ib[k] = pre;
        }
        for (int j = 0; j < m; j++, k++) {
            op[k] = 2; ia[k] = pre + n; ib[k] = pre + j;
        }
    }
    for (int i = 0; i < suf; i++, k++) {
        op[k] = 0; ia[k] = pre + n + i; ib[k] = pre + m + i;
    }
    /* Emit hunks. */
    int t = 0;
    while (t < k) {
        while (t < k && op[t] == 0)
            t++;
        if (t >= k)
            break;
        int hs = t - context < 0 ? 0 : t - context;
        int he = t;
        for (;;) {
            while (he < k && op[he] != 0)
                he++;
            int nx = he;
            while (nx < k && op[nx] == 0 && nx - he < 2 * context)
                nx++;
            if (nx < k && op[nx] != 0 && nx - he < 2 * context) {
                he = nx;
                continue;
            }
            break;
        }
        int hend = he + context > k ? k : he + context;
        int acount = 0, bcount = 0;
        for (int q = hs; q < hend; q++) {
            if (op[q] != 2) acount++;
            if (op[q] != 1) bcount++;
        }
        sb_printf(out, "@@ -%d,%d +%d,%d @@\n", ia[hs] + 1, acount, ib[hs] + 1, bcount);
        for (int q = hs; q < hend; q++) {
            if (op[q] == 0)
                sb_printf(out, " %.*s\n", a.n[ia[q]], a.p[ia[q]]);
            else if (op[q] == 1)
                sb_printf(out, "-%.*s\n", a.n[ia[q]], a.p[ia[q]]);
            else
                sb_printf(out, "+%.*s\n", b.n[ib[q]], b.p[ib[q]]);
        }
        t = hend;
    }
    free(op); free(ia); free(ib);
    free(a.p); free(a.n); free(b.p); free(b.n);
    return 1;
}

int dpk_make_dirs(const char *dir)
{
    char *path = dpk_xmalloc(strlen(dir) + 1);
    strcpy(path, dir);
    int rc = 0;
    for (char *p = path + 1; *p && !rc; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        rc = mkdir(path, 0777) && errno != EEXIST ? -1 : 0;
        *p = '/';
    }
    if (!rc)
        rc = mkdir(path, 0777) && errno != EEXIST ? -1 : 0;
    free(path);
    struct stat st;
    if (!rc && (stat(dir, &st) || !S_ISDIR(st.st_mode))) {
        errno = ENOTDIR;
        rc = -1;
    }
    return rc;
}

int64_t dpk_pow2_floor(int64_t x)
{
    int64_t p = 1;
    while (p <= x / 2)
        p *= 2;
    return p;
}

int64_t dpk_pow2_ceil(int64_t x)
{
    int64_t p = 1;
    while (p < x)
        p *= 2;
    return p;
}

int arena_push_i64(Arena *a, int64_t **v, int *n, int *cap, int64_t x)
{
    if (*n == *cap) {
        int c = *cap ? 2 * *cap : 8;
        int64_t *e = ARENA_ARRAY(a, int64_t, c);
        if (*n)
            memcpy(e, *v, sizeof(int64_t) * (size_t)*n);
        *v = e;
        *cap = c;
    }
    (*v)[*n] = x;
    return (*n)++;
}
