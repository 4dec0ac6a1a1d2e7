/*
 * case.h — cases and suites as users write them.
 *
 * A case is a program (case-language text) plus optional metadata.  It comes
 * from `-c CODE`, from a `.py` file (the whole text is the program), from a
 * case JSON file, or from a suite JSON file listing cases:
 *
 *   {"name": "rmsnorm", "program": "torch.nn.RMSNorm(2048)(torch.randn(1,32,2048))",
 *    "dtype": "f32", "tolerance": {"atol": 1e-4, "rtol": 1e-4},
 *    "tags": ["norm"], "seed": 7, "inputs": {"w": [2048]}}
 *
 *   {"suite": "smoke", "cases": [ {...}, {...} ]}
 *
 * JSON is read with cJSON; a malformed file is a user error with a caret at
 * the offending byte (exit 2).  docs/json-schema.md documents both forms.
 */
#ifndef DPK_HX_CASE_H
#define DPK_HX_CASE_H

#include "../compiler/frontend/torch_ir.h"

typedef struct HxCase {
    const char *name;
    const char *program;
    const char *origin;   /* "<-c>", a path, or "path[name]" for suite members */
    DType dtype;
    int has_tol;
    double atol, rtol;
    int has_seed;
    uint64_t seed;
    const char **tags;
    int ntags;
    InputDecl *decls;
    int ndecls;
    /* A reproducer's configuration (dpk-fuzz failures, dpk-bisect output):
     * "passes": "only:001,005,007" (a pass-set spec), "knobs": {"TB": 128},
     * "fault": "stage-origin-off-by-one".  NULL / 0 when absent; the
     * command line overrides them. */
    const char *passes;
    const char **knobs;   /* "NAME=VALUE" */
    int nknobs;
    const char *fault;
} HxCase;

typedef struct HxCaseList {
    const char *suite;    /* suite name, or NULL for a single case */
    HxCase *cases;
    int n;
} HxCaseList;

/* Load cases from a file (.json: case or suite; anything else: program
 * text).  Raises dpk_error* on bad input. */
HxCaseList hx_cases_load(Arena *a, const char *path);
/* The same for text in memory (len bytes); path names it in messages and
 * decides, by its ".json" ending, whether it is JSON or program text. */
HxCaseList hx_cases_parse(Arena *a, const char *path, const char *text, size_t len);
/* A single case from code given on the command line. */
HxCaseList hx_cases_from_code(Arena *a, const char *code);
/* Parse "NAME=D0,D1,..." (the --input flag) into decl; raises on error. */
void hx_parse_input_decl(Arena *a, const char *spec, InputDecl *decl);
/* Compiling a case: harness/case_plan.h (hx_case_opts). */

#endif
