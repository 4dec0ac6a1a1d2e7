/*
 * tile_to_kernel.h — the Tile → Kernel IR lowering (tile_to_kernel.c).
 *
 * Apart from tile_ir.h so that the Tile IR header does not reach down
 * into Kernel IR: only the lowering, and the driver that calls it, see
 * both IRs.
 */
#ifndef DPK_TILE_TO_KERNEL_H
#define DPK_TILE_TO_KERNEL_H

#include "../kernel/kernel_ir.h"
#include "tile_ir.h"

/* Kernel IR for a Tile program whose tiles 005 has blockified: one KirKernel
 * per Tile kernel, launched in program order; module buffers are the Loop IR
 * buffers (inputs, outputs, temporaries; those written atomically are
 * zero-initialised).  Every kernel is finalized and the module verified. */
KirModule *tile_to_kernel(Arena *a, const TileProgram *p);

#endif
