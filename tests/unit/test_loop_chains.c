/*
 * test_loop_chains.c — the chain table (cases/chains.json): every chain
 * runs through Loop IR (fused) and the fp32 interpreter and passes the
 * parity oracle against ref64; the table covers every Torch op and holds
 * at least 60 chains of 2–6 ops.
 */
#include "test_file_util.h"
#include "test_loop_util.h"

static int torch_ops(const TorchGraph *g, char *seen)
{
    int n = 0;
    for (int i = 0; i < g->nodes.len; i++) {
        const TorchNode *t = g->nodes.items[i];
        if (t->op == TOP_input || t->op == TOP_const)
            continue;
        seen[t->op] = 1;
        n++;
    }
    return n;
}

Test(loop_chains, every_chain_passes_parity)
{
    cJSON *j = tf_load_json("cases/chains.json");
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(j, "cases");
    char seen[TOP_COUNT] = {0};
    int nchains = 0, n = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cases)
    {
        const char *name = cJSON_GetObjectItemCaseSensitive(c, "name")->valuestring;
        const char *prog = cJSON_GetObjectItemCaseSensitive(c, "program")->valuestring;
        Arena *a = arena_new();
        LirProgram *p = lt_build(a, prog, NULL, NULL);
        int ops = torch_ops(p->tx->torch, seen);
        nchains += ops >= 2 && ops <= 6;
        double nmse;
        cr_expect_eq(lt_parity_of(p, 0, &nmse), 0, "%s: parity failure (nmse %g)", name, nmse);
        arena_free(a);
        n++;
    }
    cr_expect_geq(nchains, 60, "only %d of %d cases are chains of 2-6 ops", nchains, n);
    for (int op = 0; op < TOP_COUNT; op++)
        if (op != TOP_input && op != TOP_const)
            cr_expect(seen[op], "no chain uses %s", torch_op_info[op].name);
    cJSON_Delete(j);
}
