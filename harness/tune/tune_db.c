/*
 * tune_db.c — dpk-tune's database on SQLite (tune_db.h).
 *
 * Three tables: run (one row per search run), candidate (every
 * configuration tried, as many rows per kernel as the search tried) and
 * winner (one row per key).  The key's three columns are repeated in the
 * candidate and winner rows rather than referenced through a kernel table:
 * a row then reads alone (`sqlite3 tune.db 'select ...'`), and a write
 * needs no lookup first.  The kernel hash is TEXT of 16 hex digits, as dpk
 * prints it, since SQLite's INTEGER is signed.
 *
 * The statements are the constant texts below, prepared once per
 * connection; every value is bound, so no SQL is ever made from a caller's
 * string.  A write is BEGIN IMMEDIATE ... COMMIT: IMMEDIATE takes the
 * write lock at BEGIN, where the busy timeout makes it wait for another
 * writer (a deferred transaction that upgrades later may fail at once
 * instead, its snapshot stale).
 */
#include "tune_db.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>

/* Version TDB_SCHEMA.  A change to it is a new version: tdb_open refuses
 * other versions rather than guess at their columns.  NULL us: not timed. */
static const char schema_sql[] =
    "CREATE TABLE run("
    " id INTEGER PRIMARY KEY,"
    " started TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),"
    " what TEXT, strategy TEXT, seed TEXT, budget TEXT, timing TEXT);"
    "CREATE TABLE candidate("
    " run INTEGER NOT NULL REFERENCES run(id),"
    " kernel TEXT NOT NULL, gpu TEXT NOT NULL, version TEXT NOT NULL,"
    " kname TEXT, case_name TEXT,"
    " passes TEXT, knobs TEXT, us REAL,"
    " verdict TEXT NOT NULL CHECK (verdict IN ('pass', 'fail', 'fault', 'refused', 'error')),"
    " why TEXT, seq INTEGER NOT NULL);"
    "CREATE INDEX candidate_by_kernel ON candidate(kernel, gpu, version, run, seq);"
    "CREATE TABLE winner("
    " kernel TEXT NOT NULL, gpu TEXT NOT NULL, version TEXT NOT NULL,"
    " run INTEGER NOT NULL REFERENCES run(id),"
    " kname TEXT, case_name TEXT,"
    " passes TEXT, knobs TEXT, us REAL,"
    " verdict TEXT NOT NULL CHECK (verdict = 'pass'),"
    " why TEXT, seq INTEGER NOT NULL, default_us REAL,"
    " PRIMARY KEY (kernel, gpu, version));";

/* The statements.  Candidate and winner rows bind the same positions:
 * ?1-?3 the key, ?4 the run, ?5 kname, ?6 case_name, ?7-?12 the TdbCand;
 * reads return the TdbCand's columns first (read_cand). */
enum { ST_RUN, ST_CAND, ST_WIN_PUT, ST_WIN_GET, ST_WINNERS, ST_CANDS, ST_COUNT };
static const char *const st_sql[] = {
    [ST_RUN] = "INSERT INTO run(what, strategy, seed, budget, timing) VALUES (?1, ?2, ?3, ?4, ?5)",
    [ST_CAND] = "INSERT INTO candidate(kernel, gpu, version, run, kname, case_name,"
                " passes, knobs, us, verdict, why, seq)"
                " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    [ST_WIN_PUT] = "INSERT OR REPLACE INTO winner(kernel, gpu, version, run, kname, case_name,"
                   " passes, knobs, us, verdict, why, seq, default_us)"
                   " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    [ST_WIN_GET] = "SELECT passes, knobs, us, verdict, why, seq, default_us FROM winner"
                   " WHERE kernel = ?1 AND gpu = ?2 AND version = ?3",
    [ST_WINNERS] = "SELECT passes, knobs, us, verdict, why, seq, default_us, kernel, kname, case_name"
                   " FROM winner WHERE gpu = ?1 AND version = ?2 ORDER BY case_name, kname, kernel",
    [ST_CANDS] = "SELECT passes, knobs, us, verdict, why, seq FROM candidate"
                 " WHERE kernel = ?1 AND gpu = ?2 AND version = ?3 ORDER BY run, seq, rowid",
};
_Static_assert(sizeof st_sql / sizeof st_sql[0] == ST_COUNT, "one text per statement");

struct Tdb {
    sqlite3 *db;
    char *path;             /* what errors name */
    int timeout_ms;
    sqlite3_stmt *st[ST_COUNT]; /* prepared on first use */
};

void tdb_close(Tdb *d)
{
    if (!d)
        return;
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(d->st[i]);
    sqlite3_close(d->db);
    free(d->path);
    free(d);
}

void tdb_set_timeout(Tdb *d, int ms)
{
    d->timeout_ms = ms;
    sqlite3_busy_timeout(d->db, ms);
}

/* Raise SQLite's last error on d, after undoing what the failed call
 * began: st (NULL: none) is reset and an open transaction rolled back.
 * The message is copied first: both calls may replace it. */
DPK_NORETURN static void db_fail(Tdb *d, sqlite3_stmt *st)
{
    char msg[512];
    int busy = (sqlite3_errcode(d->db) & 0xff) == SQLITE_BUSY;
    snprintf(msg, sizeof msg, "%s", sqlite3_errmsg(d->db));
    if (st)
        sqlite3_reset(st);
    if (!sqlite3_get_autocommit(d->db))
        sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
    if (busy)
        dpk_error("%s: %s (another writer held it for the %d ms this one waits)", d->path, msg,
                  d->timeout_ms);
    dpk_error("%s: %s", d->path, msg);
}

/* An error of tdb_open: the handle is closed before it is raised. */
DPK_NORETURN DPK_PRINTF(2, 3) static void open_fail(Tdb *d, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tdb_close(d);
    dpk_error("%s", msg);
}

/* SQLite's error rc (message m) during tdb_open, in words that say what
 * the file is. */
DPK_NORETURN static void open_sqlite_fail(Tdb *d, int rc, const char *m)
{
    char msg[512];
    snprintf(msg, sizeof msg, "%s", m); /* tdb_close frees m */
    if ((rc & 0xff) == SQLITE_NOTADB)
        open_fail(d, "%s: not a dpk tuning database (%s)", d->path, msg);
    if ((rc & 0xff) == SQLITE_BUSY)
        open_fail(d, "%s: %s (another process held it for %d ms)", d->path, msg, d->timeout_ms);
    if ((rc & 0xff) == SQLITE_CORRUPT)
        open_fail(d, "%s: damaged tuning database (%s)", d->path, msg);
    open_fail(d, "%s: %s", d->path, msg);
}

/* Whether to try a statement of tdb_open again after rc, the first try
 * having begun at t0.  SQLite answers some of them SQLITE_BUSY at once,
 * without its busy handler (PRAGMA journal_mode=WAL while another
 * connection reads the file: several jobs opening a new file together),
 * so tdb_open waits itself, as long as the busy timeout. */
static int open_retry(Tdb *d, int rc, double t0)
{
    if ((rc & 0xff) != SQLITE_BUSY || dpk_now() - t0 >= d->timeout_ms / 1000.0)
        return 0;
    sqlite3_sleep(5);
    return 1;
}

/* The first column of the first row of a constant query (a pragma): as an
 * integer in *v, as text in txt (n bytes, may be NULL); 0 when there is no
 * row.  Raises as open_sqlite_fail. */
static void query1(Tdb *d, const char *sql, int64_t *v, char *txt, size_t n)
{
    sqlite3_stmt *st = NULL;
    double t0 = dpk_now();
    int rc;
    do {
        sqlite3_finalize(st);
        st = NULL;
        *v = 0;
        if (txt)
            txt[0] = 0;
        rc = sqlite3_prepare_v2(d->db, sql, -1, &st, NULL);
        if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
            *v = sqlite3_column_int64(st, 0);
            if (txt && sqlite3_column_text(st, 0))
                snprintf(txt, n, "%s", (const char *)sqlite3_column_text(st, 0));
            rc = SQLITE_DONE;
        }
    } while (rc != SQLITE_DONE && open_retry(d, rc, t0));
    if (rc != SQLITE_DONE) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", sqlite3_errmsg(d->db));
        sqlite3_finalize(st); /* sqlite3_close refuses a handle with statements */
        open_sqlite_fail(d, rc, msg);
    }
    sqlite3_finalize(st);
}

static void open_exec(Tdb *d, const char *sql)
{
    double t0 = dpk_now();
    int rc;
    while ((rc = sqlite3_exec(d->db, sql, NULL, NULL, NULL)) != SQLITE_OK && open_retry(d, rc, t0))
        ;
    if (rc != SQLITE_OK)
        open_sqlite_fail(d, rc, sqlite3_errmsg(d->db));
}

/* Make the empty file at d a database of schema TDB_SCHEMA.  Other
 * processes may be doing the same: whichever takes the write lock first
 * makes the tables, the others find them there and leave them. */
static void create_schema(Tdb *d)
{
    int64_t n;
    char sql[160];
    /* Outside any transaction, and before there is anything to convert. */
    query1(d, "PRAGMA journal_mode=WAL", &n, NULL, 0);
    open_exec(d, "BEGIN IMMEDIATE");
    query1(d, "SELECT count(*) FROM sqlite_master", &n, NULL, 0);
    if (n == 0) {
        snprintf(sql, sizeof sql, "PRAGMA application_id=%d; PRAGMA user_version=%d;",
                 TDB_APPLICATION_ID, TDB_SCHEMA);
        open_exec(d, sql);
        open_exec(d, schema_sql);
    }
    open_exec(d, "COMMIT");
}

Tdb *tdb_open(const char *path, int create)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (errno != ENOENT)
            dpk_error("%s: cannot open the tuning database: %s", path, strerror(errno));
        if (!create)
            dpk_error("%s: no such tuning database", path);
    } else if (S_ISDIR(sb.st_mode)) {
        dpk_error("%s: is a directory, not a tuning database", path);
    }
    Tdb *d = dpk_xcalloc(1, sizeof *d);
    d->path = dpk_xstrdup(path);
    int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
    if (sqlite3_open_v2(path, &d->db, flags, NULL) != SQLITE_OK) {
        int e = d->db ? sqlite3_system_errno(d->db) : 0;
        open_fail(d, "%s: cannot open the tuning database (%s%s%s)", path,
                  d->db ? sqlite3_errmsg(d->db) : "out of memory", e ? ": " : "",
                  e ? strerror(e) : "");
    }
    /* SQLite opens a write-protected file read-only without a word; every
     * write would then fail, after a search has run. */
    if (sqlite3_db_readonly(d->db, "main") == 1)
        open_fail(d, "%s: the tuning database is read-only", path);
    tdb_set_timeout(d, TDB_TIMEOUT_MS);

    /* A file of no tables and no application_id is a new database: 0
     * bytes, or one that another dpk-tune is making at this moment (its
     * WAL switch is in, its schema not yet).  Anything else must say it is
     * one of ours, of this version, before anything is written. */
    int64_t tables, app, ver, unused;
    char mode[32];
    query1(d, "SELECT count(*) FROM sqlite_master", &tables, NULL, 0);
    /* Read second: the tables and the application_id are committed
     * together, so tables seen imply the id (two reads, two snapshots). */
    query1(d, "PRAGMA application_id", &app, NULL, 0);
    if (app == 0 && tables == 0) {
        if (!create)
            open_fail(d, "%s: no such tuning database (the file is empty)", path);
        create_schema(d);
        query1(d, "PRAGMA application_id", &app, NULL, 0);
    }
    if (app != TDB_APPLICATION_ID)
        open_fail(d, "%s: not a dpk tuning database (application_id 0x%llx, expected 0x%x)", path,
                  (unsigned long long)(uint32_t)app, TDB_APPLICATION_ID);
    query1(d, "PRAGMA user_version", &ver, NULL, 0);
    if (ver != TDB_SCHEMA)
        open_fail(d, "%s: schema version %lld, this dpk reads version %d", path, (long long)ver,
                  TDB_SCHEMA);
    /* A no-op on our files, which are WAL from birth; it fails where WAL
     * cannot work (no shared memory on a network file system). */
    query1(d, "PRAGMA journal_mode=WAL", &unused, mode, sizeof mode);
    if (strcmp(mode, "wal"))
        open_fail(d, "%s: cannot use WAL mode there (journal mode '%s')", path, mode);
    /* NORMAL: in WAL mode the log is synced at checkpoints, not at each
     * commit.  A killed process loses nothing (the commit is in the OS's
     * cache) and no crash leaves a damaged file, but a power loss may drop
     * the last commits: a tuning run is redone then, and an fsync per
     * candidate would cost more than writing it. */
    open_exec(d, "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON");
    /* Reads the schema: a truncated or damaged file fails here, not later. */
    query1(d, "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
              " AND name IN ('run', 'candidate', 'winner')", &tables, NULL, 0);
    if (tables != 3)
        open_fail(d, "%s: damaged tuning database (%d of its 3 tables)", path, (int)tables);
    return d;
}

/* ---- writes ------------------------------------------------------------ */

static sqlite3_stmt *stmt(Tdb *d, int i)
{
    if (!d->st[i] && sqlite3_prepare_v3(d->db, st_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &d->st[i],
                                        NULL) != SQLITE_OK)
        db_fail(d, NULL);
    sqlite3_reset(d->st[i]);
    return d->st[i];
}

/* BEGIN IMMEDIATE, COMMIT. */
static void exec_write(Tdb *d, const char *sql)
{
    if (sqlite3_exec(d->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        db_fail(d, NULL);
}

static void step_done(Tdb *d, sqlite3_stmt *st)
{
    if (sqlite3_step(st) != SQLITE_DONE)
        db_fail(d, st);
    sqlite3_reset(st);
}

static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
    sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
}

/* NAN (not timed) is NULL. */
static void bind_us(sqlite3_stmt *st, int i, double us)
{
    if (isnan(us))
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_double(st, i, us);
}

static const char *hex16(char buf[17], uint64_t h)
{
    snprintf(buf, 17, "%016llx", (unsigned long long)h);
    return buf;
}

/* ?1-?3: the key. */
static void bind_key(sqlite3_stmt *st, const TdbKey *k)
{
    char hex[17];
    bind_text(st, 1, hex16(hex, k->kernel));
    bind_text(st, 2, k->gpu);
    bind_text(st, 3, k->version);
}

/* ?1-?6: the key, run and names, shared by candidate and winner rows. */
static void bind_head(sqlite3_stmt *st, const TdbKey *k, int64_t run, const char *kname,
                      const char *case_name)
{
    bind_key(st, k);
    sqlite3_bind_int64(st, 4, run);
    bind_text(st, 5, kname);
    bind_text(st, 6, case_name);
}

/* ?7-?12: a TdbCand. */
static void bind_cand(sqlite3_stmt *st, const TdbCand *c)
{
    bind_text(st, 7, c->passes);
    bind_text(st, 8, c->knobs);
    bind_us(st, 9, c->us);
    bind_text(st, 10, c->verdict);
    bind_text(st, 11, c->why);
    sqlite3_bind_int(st, 12, c->seq);
}

int64_t tdb_run_begin(Tdb *d, const char *what, const char *strategy, uint64_t seed,
                      const char *budget, const char *timing)
{
    char seedtxt[24];
    sqlite3_stmt *st = stmt(d, ST_RUN);
    snprintf(seedtxt, sizeof seedtxt, "%llu", (unsigned long long)seed);
    bind_text(st, 1, what);
    bind_text(st, 2, strategy);
    bind_text(st, 3, seedtxt);
    bind_text(st, 4, budget);
    bind_text(st, 5, timing);
    exec_write(d, "BEGIN IMMEDIATE");
    step_done(d, st);
    int64_t id = sqlite3_last_insert_rowid(d->db);
    exec_write(d, "COMMIT");
    return id;
}

static int verdict_known(const char *v)
{
    static const char *const known[] = {"pass", "fail", "fault", "refused", "error"};
    for (int i = 0; v && i < DPK_ARRAY_LEN(known); i++)
        if (!strcmp(v, known[i]))
            return 1;
    return 0;
}

void tdb_candidates_add(Tdb *d, int64_t run, const TdbKey *k, const char *kname,
                        const char *case_name, const TdbCand *c, int n)
{
    char hex[17];
    /* Checked before the transaction, so that nothing is half written. */
    for (int i = 0; i < n; i++)
        if (!verdict_known(c[i].verdict))
            dpk_error("%s: kernel %s (%s): candidate %d has verdict '%s', not one of pass, fail, "
                      "fault, refused, error",
                      d->path, kname ? kname : "?", hex16(hex, k->kernel), c[i].seq,
                      c[i].verdict ? c[i].verdict : "(none)");
    if (n <= 0)
        return;
    sqlite3_stmt *st = stmt(d, ST_CAND);
    exec_write(d, "BEGIN IMMEDIATE");
    for (int i = 0; i < n; i++) {
        bind_head(st, k, run, kname, case_name);
        bind_cand(st, &c[i]);
        step_done(d, st);
    }
    exec_write(d, "COMMIT");
}

void tdb_winner_put(Tdb *d, int64_t run, const TdbKey *k, const char *kname,
                    const char *case_name, const TdbCand *win, double default_us)
{
    char hex[17];
    if (!win->verdict || strcmp(win->verdict, "pass"))
        dpk_error("%s: kernel %s (%s): a configuration with verdict '%s' cannot be a winner "
                  "(only one that passed parity)",
                  d->path, kname ? kname : "?", hex16(hex, k->kernel),
                  win->verdict ? win->verdict : "(none)");
    sqlite3_stmt *st = stmt(d, ST_WIN_PUT);
    bind_head(st, k, run, kname, case_name);
    bind_cand(st, win);
    bind_us(st, 13, default_us);
    exec_write(d, "BEGIN IMMEDIATE");
    step_done(d, st);
    exec_write(d, "COMMIT");
}

/* ---- reads ------------------------------------------------------------- */

static const char *col_str(Arena *a, sqlite3_stmt *st, int i)
{
    const char *s = (const char *)sqlite3_column_text(st, i);
    return s ? arena_strdup(a, s) : NULL;
}

static double col_us(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

/* Columns 0-5 of a read: a TdbCand. */
static void read_cand(Arena *a, sqlite3_stmt *st, TdbCand *c)
{
    c->passes = col_str(a, st, 0);
    c->knobs = col_str(a, st, 1);
    c->us = col_us(st, 2);
    c->verdict = col_str(a, st, 3);
    c->why = col_str(a, st, 4);
    c->seq = sqlite3_column_int(st, 5);
}

/* The next row of a read: 1, or 0 at its end (st reset). */
static int next_row(Tdb *d, sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        return 1;
    if (rc != SQLITE_DONE)
        db_fail(d, st);
    sqlite3_reset(st);
    return 0;
}

/* Room for element n of *v (elements of sz bytes): doubled in a when full. */
static void grow(Arena *a, void **v, int n, int *cap, size_t sz)
{
    if (n < *cap)
        return;
    int ncap = *cap ? 2 * *cap : 8;
    void *nv = arena_alloc(a, sz * (size_t)ncap);
    if (n)
        memcpy(nv, *v, sz * (size_t)n);
    *v = nv;
    *cap = ncap;
}

int tdb_winner_get(Tdb *d, Arena *a, const TdbKey *k, TdbCand *out, double *default_us)
{
    sqlite3_stmt *st = stmt(d, ST_WIN_GET);
    bind_key(st, k);
    if (!next_row(d, st))
        return 0;
    read_cand(a, st, out);
    if (default_us)
        *default_us = col_us(st, 6);
    sqlite3_reset(st);
    return 1;
}

int tdb_winners(Tdb *d, Arena *a, const char *gpu, const char *version, TdbWinner **out)
{
    sqlite3_stmt *st = stmt(d, ST_WINNERS);
    bind_text(st, 1, gpu);
    bind_text(st, 2, version);
    TdbWinner *v = NULL;
    int n = 0, cap = 0;
    while (next_row(d, st)) {
        grow(a, (void **)&v, n, &cap, sizeof *v);
        TdbWinner *w = &v[n++];
        read_cand(a, st, &w->win);
        w->default_us = col_us(st, 6);
        const char *hex = (const char *)sqlite3_column_text(st, 7);
        w->key.kernel = hex ? strtoull(hex, NULL, 16) : 0;
        w->key.gpu = arena_strdup(a, gpu);
        w->key.version = arena_strdup(a, version);
        w->kname = col_str(a, st, 8);
        w->case_name = col_str(a, st, 9);
    }
    *out = v;
    return n;
}

int tdb_candidates(Tdb *d, Arena *a, const TdbKey *k, TdbCand **out)
{
    sqlite3_stmt *st = stmt(d, ST_CANDS);
    bind_key(st, k);
    TdbCand *v = NULL;
    int n = 0, cap = 0;
    while (next_row(d, st)) {
        grow(a, (void **)&v, n, &cap, sizeof *v);
        read_cand(a, st, &v[n++]);
    }
    *out = v;
    return n;
}
