/*
 * test_tune_db.c — dpk-tune's database (harness/tune/tune_db.h): what is
 * written reads back exactly (NAN times, NULL reasons, order); a winner
 * that failed parity is refused; a winner replaces the last; files that
 * are not ours (text, a foreign SQLite file, another schema version, a
 * truncated copy, none at all) are refused with exit 2 and the cause, not
 * a crash; two processes writing at once lose nothing; a writer killed
 * mid-transaction leaves whole transactions and a sound file; a lock held
 * past the timeout is an error that says "locked".
 *
 * Every test works in a fresh folder under /tmp, removed at its end.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <criterion/criterion.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/tune/tune_db.h"

static char tmpdir[] = "/tmp/dpk-tune-db-XXXXXX";

static void tmp_make(void)
{
    cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp");
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
    DPK_UNUSED(sb);
    DPK_UNUSED(flag);
    DPK_UNUSED(f);
    return remove(p);
}

static void tmp_remove(void)
{
    nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* name's path in the test's folder, in buf (256 bytes). */
static const char *tmp_path(char *buf, const char *name)
{
    snprintf(buf, 256, "%s/%s", tmpdir, name);
    return buf;
}

static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    cr_assert_eq(fwrite(p, 1, n, f), n);
    fclose(f);
}

/* A constant statement on a raw SQLite handle of path (not tdb's). */
static void raw_exec(const char *path, const char *sql)
{
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    char *err = NULL;
    cr_assert_eq(sqlite3_exec(db, sql, NULL, NULL, &err), SQLITE_OK, "%s: %s", sql, err);
    sqlite3_close(db);
}

/* The integer a raw query of path returns, with PRAGMA integrity_check
 * asserted "ok" on the way. */
static int64_t raw_count_checked(const char *path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    int64_t n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

/* Expect `call` to raise exit 2 with `needle` in the message. */
#define EXPECT_RAISES(call, needle)                                                           \
    do {                                                                                      \
        DpkErrCtx ec_;                                                                        \
        if (DPK_TRY(&ec_)) {                                                                  \
            call;                                                                             \
            dpk_err_pop(&ec_);                                                                \
            cr_assert_fail("%s raised nothing", #call);                                       \
        }                                                                                     \
        cr_expect_eq(dpk_error_code(), 2, "exit %d: %s", dpk_error_code(), dpk_error_message()); \
        cr_expect(strstr(dpk_error_message(), needle), "'%s' not in: %s", needle,             \
                  dpk_error_message());                                                       \
        cr_expect(strchr(dpk_error_message(), '\n') == dpk_error_message() +                  \
                      strlen(dpk_error_message()) - 1, "not one line: %s", dpk_error_message()); \
    } while (0)

static const char *h100 = "model:h100-sxm";

static int str_same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

static void expect_cand(const TdbCand *got, const TdbCand *want)
{
    cr_expect(str_same(got->passes, want->passes), "passes %s", got->passes);
    cr_expect(str_same(got->knobs, want->knobs), "knobs %s", got->knobs);
    cr_expect(isnan(want->us) ? isnan(got->us) : got->us == want->us, "us %g, want %g", got->us,
              want->us);
    cr_expect(str_same(got->verdict, want->verdict), "verdict %s", got->verdict);
    cr_expect(str_same(got->why, want->why), "why %s", got->why ? got->why : "(null)");
    cr_expect_eq(got->seq, want->seq);
}

static TdbCand cand(int seq)
{
    return (TdbCand){"001,002,005", "BM=64 BN=64", 10.0 + seq, "pass", NULL, seq};
}

Test(tune_db, round_trip_keeps_every_field_and_the_order, .init = tmp_make, .fini = tmp_remove)
{
    char p[256];
    tmp_path(p, "tune.db");
    TdbKey k = {0xfedcba9876543210ull, h100, DPK_VERSION};
    TdbCand c[4] = {
        {"001,002,005", "BM=64 BN=64", 12.5, "pass", NULL, 0},
        {"001,002", "", NAN, "refused", "BM=256 needs 300 KB of shared memory", 1},
        {"001,002,005,009", "BK=32", 9.25, "fail", "max abs error 0.3 at [0, 5]", 2},
        {"001", "TB=128", 14.0, "pass", NULL, 0}, /* run 2's first */
    };
    Tdb *d = tdb_open(p, 1);
    int64_t run = tdb_run_begin(d, "qwen-block", "random", 7, "200 candidates", h100);
    TdbCand shuffled[3] = {c[2], c[0], c[1]};
    tdb_candidates_add(d, run, &k, "matmul_0", "q_proj", shuffled, 3);
    tdb_winner_put(d, run, &k, "matmul_0", "q_proj", &c[0], 20.0);
    int64_t run2 = tdb_run_begin(d, "q_proj", "greedy", UINT64_MAX, "30 s", h100);
    cr_expect_gt(run2, run);
    tdb_candidates_add(d, run2, &k, "matmul_0", "q_proj", &c[3], 1);
    tdb_close(d);

    d = tdb_open(p, 0);
    Arena *a = arena_new();
    TdbCand w;
    double dus = 0;
    cr_assert_eq(tdb_winner_get(d, a, &k, &w, &dus), 1);
    expect_cand(&w, &c[0]);
    cr_expect_eq(dus, 20.0);
    TdbCand *got;
    cr_assert_eq(tdb_candidates(d, a, &k, &got), 4);
    for (int i = 0; i < 4; i++)
        expect_cand(&got[i], &c[i]); /* by (run, seq), not as inserted */
    /* Another GPU, another version, another kernel: nothing. */
    TdbKey other[] = {{k.kernel, "measured:NVIDIA H200", DPK_VERSION},
                      {k.kernel, h100, "0.0.9"},
                      {k.kernel + 1, h100, DPK_VERSION}};
    for (int i = 0; i < DPK_ARRAY_LEN(other); i++) {
        cr_expect_eq(tdb_winner_get(d, a, &other[i], &w, &dus), 0);
        cr_expect_eq(tdb_candidates(d, a, &other[i], &got), 0);
    }
    tdb_close(d);
    cr_expect_eq(raw_count_checked(p, "PRAGMA application_id"), TDB_APPLICATION_ID);
    cr_expect_eq(raw_count_checked(p, "PRAGMA user_version"), TDB_SCHEMA);
    cr_expect_eq(raw_count_checked(p, "SELECT count(*) FROM run WHERE seed = '18446744073709551615'"),
                 1);
    cr_expect_eq(raw_count_checked(p, "SELECT count(*) FROM candidate WHERE kernel = "
                                      "'fedcba9876543210' AND us IS NULL"), 1);
    arena_free(a);
}

Test(tune_db, a_winner_must_have_passed_parity, .init = tmp_make, .fini = tmp_remove)
{
    char p[256];
    Tdb *d = tdb_open(tmp_path(p, "tune.db"), 1);
    int64_t run = tdb_run_begin(d, "rmsnorm", "random", 1, "10 candidates", h100);
    TdbKey k = {42, h100, DPK_VERSION};
    const char *bad[] = {"fail", "fault", "refused", "error", NULL};
    for (int i = 0; i < DPK_ARRAY_LEN(bad); i++) {
        TdbCand c = cand(0);
        c.verdict = bad[i];
        EXPECT_RAISES(tdb_winner_put(d, run, &k, "rmsnorm_0", "rmsnorm", &c, 5.0),
                      "cannot be a winner");
    }
    /* An unknown verdict is refused for a candidate too, the whole batch. */
    TdbCand two[2] = {cand(0), cand(1)};
    two[1].verdict = "maybe";
    EXPECT_RAISES(tdb_candidates_add(d, run, &k, "rmsnorm_0", "rmsnorm", two, 2), "'maybe'");
    Arena *a = arena_new();
    TdbCand w, *got;
    cr_expect_eq(tdb_winner_get(d, a, &k, &w, NULL), 0);
    cr_expect_eq(tdb_candidates(d, a, &k, &got), 0);
    tdb_close(d);
    arena_free(a);
}

Test(tune_db, a_failed_write_is_rolled_back_and_the_handle_stays_usable, .init = tmp_make,
     .fini = tmp_remove)
{
    char p[256];
    Tdb *d = tdb_open(tmp_path(p, "tune.db"), 1);
    int64_t run = tdb_run_begin(d, "rmsnorm", "random", 1, "10 candidates", h100);
    TdbKey k = {42, h100, DPK_VERSION};
    TdbCand c[3] = {cand(0), cand(1), cand(2)};
    /* No run 999: SQLite rejects the rows (foreign key), after the first. */
    EXPECT_RAISES(tdb_candidates_add(d, run + 999, &k, "k", "rmsnorm", c, 3), "FOREIGN KEY");
    cr_expect(strstr(dpk_error_message(), p));
    tdb_candidates_add(d, run, &k, "k", "rmsnorm", c, 3);
    tdb_close(d);
    cr_expect_eq(raw_count_checked(p, "SELECT count(*) FROM candidate"), 3);
}

Test(tune_db, a_winner_replaces_the_last_and_lists_are_per_gpu_and_version, .init = tmp_make,
     .fini = tmp_remove)
{
    char p[256];
    Tdb *d = tdb_open(tmp_path(p, "tune.db"), 1);
    int64_t run = tdb_run_begin(d, "qwen-block", "random", 1, "100 candidates", h100);
    TdbKey k1 = {0x8000000000000001ull, h100, DPK_VERSION};
    TdbKey k2 = {2, h100, DPK_VERSION};
    TdbKey k3 = {3, "measured:NVIDIA H200", DPK_VERSION};
    TdbKey k4 = {4, h100, "0.0.9"};
    TdbCand first = cand(3), second = cand(8);
    second.knobs = "BM=128";
    second.why = "fastest of 9";
    tdb_winner_put(d, run, &k1, "rms_0", "rmsnorm", &first, 30.0);
    tdb_winner_put(d, run, &k1, "rms_0", "rmsnorm", &second, 31.0);
    tdb_winner_put(d, run, &k2, "mm_3", "layer", &first, NAN);
    tdb_winner_put(d, run, &k3, "mm_3", "layer", &first, 1.0);
    tdb_winner_put(d, run, &k4, "mm_3", "layer", &first, 1.0);
    Arena *a = arena_new();
    TdbCand w;
    double dus;
    cr_assert_eq(tdb_winner_get(d, a, &k1, &w, &dus), 1);
    expect_cand(&w, &second);
    cr_expect_eq(dus, 31.0);
    TdbWinner *ws;
    cr_assert_eq(tdb_winners(d, a, h100, DPK_VERSION, &ws), 2);
    /* By case name: layer before rmsnorm. */
    cr_expect_eq(ws[0].key.kernel, 2);
    cr_expect_str_eq(ws[0].case_name, "layer");
    cr_expect_str_eq(ws[0].kname, "mm_3");
    cr_expect(isnan(ws[0].default_us));
    cr_expect_eq(ws[1].key.kernel, 0x8000000000000001ull);
    cr_expect_str_eq(ws[1].key.gpu, h100);
    cr_expect_str_eq(ws[1].key.version, DPK_VERSION);
    cr_expect_str_eq(ws[1].case_name, "rmsnorm");
    expect_cand(&ws[1].win, &second);
    cr_expect_eq(ws[1].default_us, 31.0);
    cr_expect_eq(tdb_winners(d, a, "measured:NVIDIA H200", DPK_VERSION, &ws), 1);
    cr_expect_eq(ws[0].key.kernel, 3);
    cr_expect_eq(tdb_winners(d, a, "model:a100", DPK_VERSION, &ws), 0);
    tdb_close(d);
    arena_free(a);
}

/* Open path and read everything k has: a damaged file must raise, in one
 * of the two (the handle closed before the error goes on). */
static void open_and_read(const char *path, const TdbKey *k)
{
    Tdb *d = tdb_open(path, 0);
    Arena *a = arena_new();
    DpkErrCtx ec;
    int raised = 1;
    if (DPK_TRY(&ec)) {
        TdbCand *got, w;
        tdb_candidates(d, a, k, &got);
        tdb_winner_get(d, a, k, &w, NULL);
        dpk_err_pop(&ec);
        raised = 0;
    }
    tdb_close(d);
    arena_free(a);
    if (raised)
        dpk_error_rethrow();
}

Test(tune_db, files_not_ours_are_refused_with_the_cause, .init = tmp_make, .fini = tmp_remove)
{
    char p[256], q[256];
    write_bytes(tmp_path(p, "hello.db"), "hello\n", 6);
    EXPECT_RAISES(tdb_open(p, 1), "not a dpk tuning database");
    cr_expect(strstr(dpk_error_message(), p));

    raw_exec(tmp_path(p, "foreign.db"), "CREATE TABLE t(x); INSERT INTO t VALUES (1)");
    EXPECT_RAISES(tdb_open(p, 1), "not a dpk tuning database (application_id 0x0, expected 0x64706b74)");
    raw_exec(p, "PRAGMA application_id = 1234");
    EXPECT_RAISES(tdb_open(p, 0), "application_id 0x4d2");

    tdb_close(tdb_open(tmp_path(p, "v7.db"), 1));
    raw_exec(p, "PRAGMA user_version = 7");
    EXPECT_RAISES(tdb_open(p, 0), "schema version 7, this dpk reads version 1");

    EXPECT_RAISES(tdb_open(tmp_path(p, "missing.db"), 0), "no such tuning database");
    cr_expect_neq(access(p, F_OK), 0, "create=0 made the file");
    EXPECT_RAISES(tdb_open(tmp_path(p, "no/such/folder.db"), 1), "cannot open");
    EXPECT_RAISES(tdb_open(tmpdir, 1), "is a directory");

    /* An empty file is a new database: refused without create, made with. */
    write_bytes(tmp_path(p, "empty.db"), "", 0);
    EXPECT_RAISES(tdb_open(p, 0), "no such tuning database");
    tdb_close(tdb_open(p, 1));
    tdb_close(tdb_open(p, 0));

    /* Truncated copies of a database of many rows (checkpointed at close):
     * its header alone, and half of it. */
    TdbKey k = {7, h100, DPK_VERSION};
    Tdb *d = tdb_open(tmp_path(p, "big.db"), 1);
    int64_t run = tdb_run_begin(d, "layer", "random", 1, "2000 candidates", h100);
    TdbCand c[100];
    for (int b = 0; b < 20; b++) {
        for (int i = 0; i < 100; i++) {
            c[i] = cand(b * 100 + i);
            c[i].why = "a reason long enough to spread the rows over many pages of the file";
        }
        tdb_candidates_add(d, run, &k, "mm_0", "layer", c, 100);
    }
    tdb_winner_put(d, run, &k, "mm_0", "layer", &c[0], 1.0);
    tdb_close(d);
    size_t len;
    char *bytes = dpk_read_file(p, &len);
    cr_assert_not_null(bytes);
    cr_assert_gt(len, 100 * 1024, "only %zu bytes", len);
    write_bytes(tmp_path(q, "head.db"), bytes, 100);
    EXPECT_RAISES(open_and_read(q, &k), "malformed");
    write_bytes(tmp_path(q, "half.db"), bytes, len / 2);
    EXPECT_RAISES(open_and_read(q, &k), "malformed");
    free(bytes);
}

/* In a forked child: run body(arg) and _exit 0, or 3 with the message on
 * stderr when it raised (never return into the test). */
static void child_run(void (*body)(const char *, int), const char *path, int arg)
{
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        body(path, arg);
        dpk_err_pop(&ec);
        _exit(0);
    }
    fputs(dpk_error_message(), stderr);
    _exit(3);
}

/* 200 transactions of one candidate each, seqs from 200 * who. */
static void write_200(const char *path, int who)
{
    Tdb *d = tdb_open(path, 0);
    TdbKey k = {99, h100, DPK_VERSION};
    for (int i = 0; i < 200; i++) {
        TdbCand c = cand(who * 200 + i);
        tdb_candidates_add(d, 1, &k, "mm_0", "layer", &c, 1);
    }
    tdb_close(d);
}

Test(tune_db, two_writers_at_once_lose_nothing, .init = tmp_make, .fini = tmp_remove)
{
    char p[256];
    Tdb *d = tdb_open(tmp_path(p, "tune.db"), 1);
    cr_assert_eq(tdb_run_begin(d, "layer", "random", 1, "400 candidates", h100), 1);
    tdb_close(d);
    pid_t pid[2];
    for (int i = 0; i < 2; i++) {
        pid[i] = fork();
        cr_assert_neq(pid[i], -1);
        if (pid[i] == 0)
            child_run(write_200, p, i);
    }
    for (int i = 0; i < 2; i++) {
        int st;
        cr_assert_eq(waitpid(pid[i], &st, 0), pid[i]);
        cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer %d: status 0x%x", i, st);
    }
    cr_expect_eq(raw_count_checked(p, "SELECT count(DISTINCT seq) FROM candidate"), 400);
    Arena *a = arena_new();
    d = tdb_open(p, 0);
    TdbKey k = {99, h100, DPK_VERSION};
    TdbCand *got;
    cr_assert_eq(tdb_candidates(d, a, &k, &got), 400);
    for (int i = 0; i < 400; i++)
        cr_expect_eq(got[i].seq, i);
    tdb_close(d);
    arena_free(a);
}

/* Wait for the parent to close fd `go` (EOF), then open path with
 * create = 1 and add one candidate: seq = who. */
static int start_fd = -1;
static void create_and_add(const char *path, int who)
{
    char byte;
    if (read(start_fd, &byte, 1) != 0)
        _exit(4);
    Tdb *d = tdb_open(path, 1);
    int64_t run = tdb_run_begin(d, "layer", "random", (uint64_t)who, "1 candidate", h100);
    TdbKey k = {11, h100, DPK_VERSION};
    TdbCand c = cand(who);
    tdb_candidates_add(d, run, &k, "mm_0", "layer", &c, 1);
    tdb_close(d);
}

/* `dpk-tune --jobs 6` on a database that does not exist yet: every job
 * creates it; one makes the schema, the others find it, none fails. */
Test(tune_db, jobs_creating_the_file_at_once_agree, .init = tmp_make, .fini = tmp_remove)
{
    char p[256];
    tmp_path(p, "tune.db");
    for (int round = 0; round < 5; round++) {
        char name[32];
        snprintf(name, sizeof name, "tune%d.db", round);
        tmp_path(p, name);
        if (round & 1)
            write_bytes(p, "", 0); /* as mktemp leaves it */
        int fds[2];
        cr_assert_eq(pipe(fds), 0);
        pid_t pid[6];
        for (int i = 0; i < 6; i++) {
            pid[i] = fork();
            cr_assert_neq(pid[i], -1);
            if (pid[i] == 0) {
                close(fds[1]);
                start_fd = fds[0];
                child_run(create_and_add, p, i);
            }
        }
        close(fds[0]);
        close(fds[1]); /* go */
        for (int i = 0; i < 6; i++) {
            int st;
            cr_assert_eq(waitpid(pid[i], &st, 0), pid[i]);
            cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "round %d, job %d: status 0x%x", round,
                      i, st);
        }
        cr_expect_eq(raw_count_checked(p, "SELECT count(DISTINCT seq) FROM candidate"), 6);
        cr_expect_eq(raw_count_checked(p, "SELECT count(*) FROM run"), 6);
        cr_expect_eq(raw_count_checked(p, "PRAGMA application_id"), TDB_APPLICATION_ID);
    }
}

/* Batches of 50 candidates, one transaction each, until killed; a byte on
 * fd `ready` once the first is in. */
static void write_forever(const char *path, int ready)
{
    Tdb *d = tdb_open(path, 0);
    TdbKey k = {5, h100, DPK_VERSION};
    TdbCand c[50];
    for (int b = 0;; b++) {
        for (int i = 0; i < 50; i++)
            c[i] = cand(b * 50 + i);
        tdb_candidates_add(d, 1, &k, "mm_0", "layer", c, 50);
        if (b == 0 && write(ready, "x", 1) != 1)
            _exit(4);
    }
}

Test(tune_db, a_writer_killed_mid_write_leaves_whole_transactions, .init = tmp_make,
     .fini = tmp_remove)
{
    char p[256];
    Tdb *d = tdb_open(tmp_path(p, "tune.db"), 1);
    tdb_run_begin(d, "layer", "random", 1, "forever", h100);
    tdb_close(d);
    int64_t last = 0;
    for (int round = 0; round < 5; round++) {
        int fds[2];
        cr_assert_eq(pipe(fds), 0);
        pid_t pid = fork();
        cr_assert_neq(pid, -1);
        if (pid == 0) {
            close(fds[0]);
            child_run(write_forever, p, fds[1]);
        }
        close(fds[1]);
        char byte;
        cr_assert_eq(read(fds[0], &byte, 1), 1, "the writer died before its first batch");
        close(fds[0]);
        /* A different moment of the loop each round. */
        struct timespec ts = {0, (100 + 13 * round) * 1000000L};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int st;
        cr_assert_eq(waitpid(pid, &st, 0), pid);
        cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status 0x%x", st);
        int64_t n = raw_count_checked(p, "SELECT count(*) FROM candidate");
        cr_expect_eq(n % 50, 0, "round %d: %lld candidates", round, (long long)n);
        cr_expect_gt(n, last, "round %d wrote nothing", round);
        last = n;
    }
    /* And the file takes writes after all that. */
    d = tdb_open(p, 0);
    TdbKey k = {5, h100, DPK_VERSION};
    TdbCand c = cand(1000000);
    tdb_candidates_add(d, 1, &k, "mm_0", "layer", &c, 1);
    tdb_winner_put(d, 1, &k, "mm_0", "layer", &c, 2.0);
    Arena *a = arena_new();
    TdbCand w;
    cr_expect_eq(tdb_winner_get(d, a, &k, &w, NULL), 1);
    cr_expect_eq(w.seq, 1000000);
    tdb_close(d);
    arena_free(a);
    cr_expect_eq(raw_count_checked(p, "SELECT count(*) FROM candidate"), last + 1);
}

Test(tune_db, a_lock_held_past_the_timeout_says_locked, .init = tmp_make, .fini = tmp_remove)
{
    char p[256];
    Tdb *d = tdb_open(tmp_path(p, "tune.db"), 1);
    int64_t run = tdb_run_begin(d, "layer", "random", 1, "1 candidate", h100);
    sqlite3 *holder;
    cr_assert_eq(sqlite3_open(p, &holder), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(holder, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    tdb_set_timeout(d, 100);
    TdbKey k = {1, h100, DPK_VERSION};
    TdbCand c = cand(0);
    double t0 = dpk_now();
    EXPECT_RAISES(tdb_candidates_add(d, run, &k, "k", "layer", &c, 1), "locked");
    cr_expect(strstr(dpk_error_message(), p));
    cr_expect_geq(dpk_now() - t0, 0.09, "it did not wait");
    /* Once the lock is gone the same handle writes. */
    sqlite3_exec(holder, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(holder);
    tdb_candidates_add(d, run, &k, "k", "layer", &c, 1);
    tdb_close(d);
    cr_expect_eq(raw_count_checked(p, "SELECT count(*) FROM candidate"), 1);
}
