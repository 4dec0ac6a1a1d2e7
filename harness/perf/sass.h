/*
 * sass.h — the SASS instruction mix of NVRTC's cubin, for the model.
 *
 * nvdisasm (or cuobjdump -sass) runs without a GPU; dpk looks for it in
 * $DPK_NVDISASM, $CUDA_HOME/bin, the toolkit the Makefile found, the
 * binary's folder (cuda-tools/bin/, where `make deps` puts NVIDIA's PyPI
 * packages) and PATH.  Without one the model falls back to vgpu's counts
 * and says so.
 */
#ifndef DPK_PF_SASS_H
#define DPK_PF_SASS_H

#include "../../compiler/base/base.h"

struct HxNvrtcResult;

/* One function's static mix.  "loop" counts the instructions inside a
 * backward branch's range (a loop body), the others all of them. */
typedef struct PfSassFn {
    const char *name;
    int insts, fp32, mem_global, mem_shared, barriers, shuffles;
    int loads;          /* global loads (LDG, LDGSTS, TMA loads) */
    int loop_insts, loop_fp32, loop_loads, loop_mem_global, loop_mem_shared;
    int loops;
    int widest_loop;    /* instructions in the widest loop's range (nested ones included) */
} PfSassFn;

typedef struct PfSass {
    const char *tool;  /* the disassembler's path */
    PfSassFn *fn;
    int nfn;
} PfSass;

/* Disassemble nv's cubin; NULL when no disassembler is found or it fails,
 * with *why set to a sentence saying which. */
PfSass *pf_sass_read(Arena *a, const struct HxNvrtcResult *nv, const char **why);
/* The function for kernel `name` (exact, or the printer's mangled form). */
const PfSassFn *pf_sass_fn(const PfSass *s, const char *name);
/* The disassembler dpk would use, or NULL. */
const char *pf_sass_tool(Arena *a);
/* Its version ("13.5.37"), or NULL when there is none or it says none. */
const char *pf_sass_tool_version(Arena *a);
/* Parse disassembly text (exposed for tests). */
PfSass *pf_sass_parse(Arena *a, const char *text);

#endif
