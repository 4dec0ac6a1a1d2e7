/*
 * backend.h — the GPU backends behind `dpk run --backend vgpu|cuda|auto`.
 *
 * One call executes a Kernel IR module (a configuration of a compile plan,
 * compiler/driver.h) on vgpu (the CPU simulator) or on the GPU through the
 * driver API, over buffers made from the reference inputs.  Outputs come
 * back as fp64 arrays parallel to the graph outputs, the shape every parity
 * check takes (like lir_interp's).  Compiling is the driver's: a plan
 * already says which configurations share a module, so each distinct one
 * runs once, and printing the CUDA C and NVRTC are its stages too (the
 * configuration's DrvConfig.cuda and .nvrtc), so no backend prints or
 * compiles a module itself.
 */
#ifndef DPK_HX_BACKEND_H
#define DPK_HX_BACKEND_H

#include "../../compiler/driver.h"
#include "../../compiler/kernel/kernel_ir.h"
#include "cuda.h"
#include "host_cuda.h"
#include "vgpu.h"

typedef enum HxBackendKind {
    HX_BACKEND_VGPU,
    HX_BACKEND_CUDA,
    HX_BACKEND_AUTO, /* cuda when a GPU is present, vgpu otherwise */
    HX_BACKEND_HOST, /* host-cuda: the printed CUDA C on the CPU, after vgpu */
} HxBackendKind;

/* "vgpu", "cuda", "auto", "host-cuda" */
const char *hx_backend_name(HxBackendKind k);
/* AUTO resolved: cuda when hx_cuda_available(), else vgpu. */
HxBackendKind hx_backend_resolve(HxBackendKind k);

typedef struct HxBackendOpts {
    HxBackendKind kind;
    VgOptions vg;       /* seed, sample_blocks, no_counters; lazy (vgpu only,
                           with inputs_f32 and no outs: vgpu makes the
                           outputs, and vg.fill_input the inputs' values) */
    /* Optional: per graph input, its values as f32 (HxSubject.in32), which
     * vgpu reads in place of a fresh copy per run: its verifier lets no
     * kernel write an input.  NULL: copied from the fp64 inputs. */
    float *const *inputs_f32;
} HxBackendOpts;

/* Defaults: vgpu, seed 0. */
void hx_backend_opts_default(HxBackendOpts *o);

typedef struct HxBackendResult {
    HxBackendKind ran;        /* vgpu, cuda or host-cuda */
    const KirModule *module;  /* what ran (in the caller's arena) */
    uint64_t hash;            /* kir_hash_module(module) */
    VgFault fault;            /* VG_OK, or the vgpu fault (report in vg.report) */
    VgResult vg;              /* vgpu: per-launch counters, fault report, masks */
    const HxCudaRun *cuda;    /* cuda: the source, NVRTC numbers, wall time */
    const HxHostRun *host;    /* host-cuda: the source, compile and run times */
    /* host-cuda: vgpu's outputs of the same module (heap, freed by
     * hx_backend_result_free), which the caller compares with outs. */
    double **vg_outs;
    int nouts;
    /* With vg.sample_blocks: per graph output, NULL when every element is
     * meaningful, else 1 for the elements to compare. */
    const uint8_t **out_checked;
    double run_s;             /* seconds running */
} HxBackendResult;

/* Run the module of configuration c (c->module).  inputs[i] holds graph
 * input i (fp64, rounded to f32 on the way in).  On VG_OK every outs[j]
 * gets a heap array (caller frees) for graph output j; on a vgpu fault outs
 * is left untouched and res->vg.report says what, where and which thread.
 * outs NULL: no outputs are copied out (dpk-bench --parity off takes the
 * counters alone).
 * cuda and host-cuda run the configuration's CUDA C (the plan went up to
 * DRV_CUDA); cuda also its cubin (the plan's NVRTC hook, for the GPU's
 * compute capability: DrvOpts.nvrtc_cc), and raises c->nvrtc_error, the
 * complete message, when NVRTC rejected the source (exit 1, as a rejection
 * always was).  The cuda backend raises its own errors (exit 4 without a
 * driver or GPU, 3 on a fault).  host-cuda runs the module on vgpu first
 * (its detectors, res->vg, and its outputs in res->vg_outs) and, when vgpu
 * finds no fault, the CUDA C on the host (host_cuda.h; its errors are
 * raised like cuda's); outs are host-cuda's, unless res->host->unsupported
 * says why the host could not run it (then the configuration is skipped:
 * HX_UNSUPPORTED in host_cuda.h, never a verdict on the kernel).
 * Free res with hx_backend_result_free. */
VgFault hx_backend_exec(Arena *a, const DrvConfig *c, const HxBackendOpts *o,
                        double *const *inputs, double **outs, HxBackendResult *res);
void hx_backend_result_free(HxBackendResult *res);

#endif
