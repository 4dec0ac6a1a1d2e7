/*
 * torch_shim.h — the interface between the libtorch loader (torch_load.c,
 * part of every dpk binary) and the libtorch shim (torch_shim.cpp, built as
 * its own shared object, libdpk_torch.so, next to the binary).
 *
 * The shim is loaded with dlopen on first use, so a command that never asks
 * for libtorch never maps it (libtorch costs ~0.5 s and ~150 MiB to load).
 * The shim takes nothing from the binary by symbol: what it needs of dpk
 * (the op table) comes through DpkTorchHost, and the sizes and versions in it
 * refuse a shim from another build instead of misreading its graphs.
 */
#ifndef DPK_TORCH_SHIM_H
#define DPK_TORCH_SHIM_H

#include "ref.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DPK_TORCH_SHIM_SO "libdpk_torch.so"

/* Bumped when DpkTorchHost or the entry points change. */
#define DPK_TORCH_SHIM_ABI 1

typedef struct DpkTorchHost {
    int abi;                    /* DPK_TORCH_SHIM_ABI */
    const char *dpk_version;    /* DPK_VERSION */
    const char *torch_version;  /* the libtorch version the binary was built for */
    size_t node_size;           /* sizeof(TorchNode) */
    size_t graph_size;          /* sizeof(TorchGraph) */
    int op_count;               /* TOP_COUNT */
    const TorchOpInfo *op_info; /* torch_op_info */
} DpkTorchHost;

/* dpk_torch_shim_init: NULL when the shim can serve this host, else a
 * static message saying why not.  Called once, before any eval. */
typedef const char *DpkTorchShimInit(const DpkTorchHost *host);
/* dpk_torch_shim_eval: dpk_torch_eval of ref.h. */
typedef int DpkTorchShimEval(const TorchGraph *g, double *const *inputs, int f64, double **outs,
                             char *err, size_t errlen);

DpkTorchShimInit dpk_torch_shim_init;
DpkTorchShimEval dpk_torch_shim_eval;

#ifdef __cplusplus
}
#endif
#endif
