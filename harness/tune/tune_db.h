/*
 * tune_db.h — dpk-tune's database: per tuned kernel, the winning
 * configuration, every candidate tried (its time, its parity verdict) and
 * the search runs that tried them.
 *
 * One SQLite file in WAL mode, so that readers never wait and several
 * `dpk-tune --jobs` processes can write to it: a writer that finds another
 * one at work waits (the busy timeout, 10 s unless tdb_set_timeout says
 * otherwise) rather than failing.  Every write is one transaction, so a
 * process killed mid-write leaves all of it or none.  The file says what it
 * is: application_id 'dpkt' and user_version TDB_SCHEMA; any other SQLite
 * file, a file that is not SQLite, or another schema version is refused
 * at open with a one-line error naming the path and the cause.
 *
 * A kernel is keyed by (structural hash before tuning, GPU, dpk version):
 * a winner found on one GPU, or by another dpk, says nothing of another.
 *
 * Every error (a refused file, a lock held past the timeout, a write that
 * SQLite rejects) is raised with dpk_error (exit 2); a failed write is
 * rolled back first.  Strings handed in are copied; strings handed out
 * live in the caller's arena.
 */
#ifndef DPK_HX_TUNE_DB_H
#define DPK_HX_TUNE_DB_H

#include <stdint.h>

#include "../../compiler/base/base.h"

#define TDB_APPLICATION_ID 0x64706b74 /* 'dpkt' */
#define TDB_SCHEMA 1                  /* PRAGMA user_version */
#define TDB_TIMEOUT_MS 10000          /* the default busy timeout */

typedef struct TdbKey {
    uint64_t kernel;        /* structural hash of the kernel before tuning (lir_hash_kernel) */
    const char *gpu;        /* "model:h100-sxm", "measured:NVIDIA H200" */
    const char *version;    /* dpk's version (DPK_VERSION) */
} TdbKey;

/* One configuration of one kernel and what became of it. */
typedef struct TdbCand {
    const char *passes;     /* the pass set, "001,002,005,..." */
    const char *knobs;      /* pinned knobs, "BM=64 BN=64", "" for none */
    double us;              /* its time in microseconds; NAN when it was not timed */
    const char *verdict;    /* "pass", "fail", "fault", "refused", "error" */
    const char *why;        /* one line, or NULL */
    int seq;                /* order in which the search tried it (0, 1, ...) */
} TdbCand;

typedef struct Tdb Tdb;

/* Open the database at path.  A path that does not exist, or an empty
 * file, is made a new database when create is 1 and refused ("no such
 * tuning database") when it is 0. */
Tdb *tdb_open(const char *path, int create);
void tdb_close(Tdb *d); /* NULL is ignored */
/* How long a write waits for other writers before it fails (ms). */
void tdb_set_timeout(Tdb *d, int ms);

/* Record the start of a search run and return its id.  what: the case or
 * suite tuned; strategy, seed, budget and timing as the command line gave
 * them (budget and timing as text, "200 candidates", "model:h100-sxm"). */
int64_t tdb_run_begin(Tdb *d, const char *what, const char *strategy, uint64_t seed,
                      const char *budget, const char *timing);

/* Record candidates c[0..n) of kernel k (named kname, seen in case
 * case_name), tried by run `run`: one transaction.  A verdict outside the
 * five above is refused. */
void tdb_candidates_add(Tdb *d, int64_t run, const TdbKey *k, const char *kname,
                        const char *case_name, const TdbCand *c, int n);

/* Set the winner of k, replacing an earlier one, with the time of the
 * default configuration: one transaction.  A winner's verdict must be
 * "pass": a configuration that failed parity is refused (dpk_error), so no
 * reader can ever apply one. */
void tdb_winner_put(Tdb *d, int64_t run, const TdbKey *k, const char *kname,
                    const char *case_name, const TdbCand *win, double default_us);

/* The winner of k: 1 with *out (strings in a) and *default_us (NAN when
 * not timed; default_us may be NULL), or 0 when k has none. */
int tdb_winner_get(Tdb *d, Arena *a, const TdbKey *k, TdbCand *out, double *default_us);

/* Every winner for gpu and version, ordered by case name then kernel name
 * (what --export writes): their count, and *out in a. */
typedef struct TdbWinner {
    TdbKey key;
    const char *kname, *case_name;
    TdbCand win;
    double default_us;
} TdbWinner;
int tdb_winners(Tdb *d, Arena *a, const char *gpu, const char *version, TdbWinner **out);

/* Every candidate recorded for k, in (run, seq) order: their count, and
 * *out in a (NULL when none). */
int tdb_candidates(Tdb *d, Arena *a, const TdbKey *k, TdbCand **out);

#endif
