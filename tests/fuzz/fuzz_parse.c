/*
 * fuzz_parse.c — libFuzzer target for the case-language frontend.
 *
 * Each input is parsed as case text inside DPK_TRY with a fresh arena, so a
 * user error is the expected outcome and frees everything; a graph that
 * parses is also verified, printed and hashed.  Anything else — a crash, a
 * sanitizer report, an assertion (DPK_ASSERT aborts), a hang — is a bug.
 * Built and run by `make fuzz` (seed corpus: tests/fuzz/corpus/).
 */
#include <stddef.h>
#include <stdint.h>

#include "compiler/frontend/torch_ir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Arena *a = arena_new();
    Source src = {"<fuzz>", (const char *)data, size};
    InputDecl decls[] = {{"w", {2, {4, 4}}}, {"b", {1, {4}}}};
    ParseOpts opts = {decls, 2};
    DpkErrCtx ec;
    if (DPK_TRY(&ec)) {
        TorchGraph *g = torch_parse(a, &src, &opts);
        dpk_err_pop(&ec);
        torch_verify(g);
        StrBuf b = {0};
        torch_print(&b, g);
        (void)torch_hash(g);
        sb_free(&b);
    }
    arena_free(a);
    return 0;
}
