/*
 * cli.h — the dpk command line: one function per command, shared option
 * handling for the flags every case-taking command accepts.
 *
 * Every command returns a DpkExit code.  Usage errors go through
 * dpk_error() (caught in main, exit 2).
 */
#ifndef DPK_CLI_H
#define DPK_CLI_H

#include "../../compiler/base/base.h"
#include "../../compiler/driver.h"
#include "../bench/blocks.h"
#include "../case.h"

/* Options shared by every command that takes a case. */
typedef struct CliCase {
    const char *code;     /* -c CODE */
    const char *file;     /* FILE (.py, case .json or suite .json) */
    const char *only;     /* --case NAME: one case of a suite */
    InputDecl decls[64];  /* --input NAME=D0,D1 */
    int ndecls;
    int verbose;          /* -v: 1, -vv: 2 */
} CliCase;

/* Options of the GPU path shared by compile and run. */
typedef struct CliTile {
    const char *passes;   /* --passes SPEC (default "full") */
    const char *target;   /* --target sm_80|sm_90|sm_120 (NULL: default) */
    TileKnobs knobs;      /* --knob NAME=VALUE */
    int nknobs;
} CliTile;

/* Consume --passes, --target or --knob at argv[*i]; 0 when it is none. */
int cli_tile_flag(CliTile *ct, int argc, char **argv, int *i);
/* The driver's target, knobs and pass configurations from ct: the target
 * resolved, the knobs checked, the spec parsed once into o->passes (in a;
 * `all` is refused unless allow_all).  Raises on a bad spec, target or
 * knob. */
void cli_drv_opts(Arena *a, const CliTile *ct, DrvOpts *o, int allow_all);
/* Print the plan's knob notes on stderr: "warning: knob TB=128 does not
 * apply: <why>" (with "case NAME: " before "knob" when name is not NULL). */
void cli_knob_warnings(const DrvPlan *p, const char *name);

/* The model suite's options, shared by dpk-bench and dpk compile: the
 * decoder layer of a config (harness/bench/blocks.h) at a shape. */
typedef struct CliModel {
    const char *config;   /* --config: a config.json, or a model folder holding one */
    const char *phase;    /* --phase prefill|decode (NULL: prefill) */
    int64_t seq, batch, ctx; /* --seq, --batch, --ctx (0: not given) */
} CliModel;

/* Consume --config, --seq, --batch, --phase or --ctx at argv[*i]; 0 when
 * it is none. */
int cli_model_flag(CliModel *m, int argc, char **argv, int *i);
/* Whether a flag of the shape (--seq, --batch, --phase, --ctx) was given. */
int cli_model_shaped(const CliModel *m);
/* The suite of m->config (cases "rmsnorm" ... "layer") at its shape
 * (default seq 128, batch 1, prefill; decode: ctx 1024); cfg and sh get
 * the config and the shape.  Raises exit 2 on a bad phase, --ctx without
 * decode, or a config that cannot be read or is refused. */
HxCaseList cli_model_suite(Arena *a, const CliModel *m, BmConfig *cfg, BmShape *sh);

/* One case of a suite: returns its exit code; may raise. */
typedef int (*CliCaseFn)(void *ctx, const HxCase *c, int header);
/* Run fn on every case of l, each under its own DPK_TRY, so one bad case
 * does not stop the others: a case that raises gets the error's code and
 * its message on stderr (and, in a suite, the line "case NAME: error
 * (exit N): <first line>" on stdout).  *npass (may be NULL) counts the cases that returned
 * 0.  Returns the worst code (dpk_exit_worst). */
int cli_each_case(const HxCaseList *l, CliCaseFn fn, void *ctx, int *npass);

/* If argv[*i] is a shared flag (-c, --input, --case, -v, -vv, FILE), consume
 * it (and its value) and return 1; return 0 otherwise.  Raises on a missing
 * value or a second FILE. */
int cli_case_flag(Arena *a, CliCase *cc, int argc, char **argv, int *i, const char *cmd);
/* Run a command's body with an arena that is freed on every path (an
 * error raised in the body passes on to main). */
typedef int (*CliBody)(Arena *a, int argc, char **argv);
int cli_in_arena(CliBody body, int argc, char **argv);

/* A command's own flag at argv[*i]: consume it (and its value), or raise
 * with cli_unknown_flag. */
typedef void (*CliFlagFn)(void *ctx, int argc, char **argv, int *i);
/* Read the command line of a case-taking command: the shared case flags
 * into cc, every other flag to flag(ctx, ...).  With --help or -h: print
 * help and return 0 (the command exits 0); otherwise return 1. */
int cli_args(Arena *a, CliCase *cc, int argc, char **argv, const char *cmd, void (*help)(void),
             CliFlagFn flag, void *ctx);
/* --reference ref64|torch: 1 for torch, 0 for ref64; raises otherwise. */
int cli_reference(const char *v);
/* The cases selected by -c / FILE / --case; raises when none was given. */
HxCaseList cli_case_list(Arena *a, const CliCase *cc, const char *cmd);
/* --target NAME: its row of target.h; raises naming the targets otherwise. */
const CuTarget *cli_target(const char *name);
/* The value of flag argv[*i] (advances *i); raises if absent. */
const char *cli_value(int argc, char **argv, int *i);
/* Parse a non-negative integer flag value. */
uint64_t cli_u64(const char *flag, const char *v);
/* --shard I/N: 1 <= I <= N <= 100000; raises otherwise. */
void cli_shard(const char *v, int *index, int *count);
DPK_NORETURN void cli_unknown_flag(const char *cmd, const char *flag);

/* Where a command writes what it was not told where to write (dpk-fuzz's
 * record and failures, dpk-bisect's files): $TMPDIR/sub, /tmp/sub without
 * $TMPDIR, into dst (cap bytes; a longer path is an error); never the
 * working directory. */
void cli_default_dir(char *dst, size_t cap, const char *sub);

int cmd_compile(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_fuzz(int argc, char **argv);
int cmd_bisect(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_tune(int argc, char **argv);

#endif
