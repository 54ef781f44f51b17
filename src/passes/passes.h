/*
 * passes.h — analyses and rewrites on the tile IR, one file each.
 *
 * The pipeline (src/jit/device.c) reads as a straight list:
 *     tji_build(...); tji_verify(fn);
 *     tjp_materialize(fn, &plan);          (CPU back end)
 * with the verifier run after every pass that rewrites the IR.
 */
#ifndef TJIT_PASSES_H
#define TJIT_PASSES_H

#include "../builder/ir.h"

/* materialize.c — the CPU back end's fusion plan. A tile value is either
 * materialized (computed once into a scratch array, in a loop nest of its
 * own) or fused (recomputed element by element inside each loop nest that
 * reads it). Sinks (stores, atomics, prints, asserts, yields) and ops that
 * are not element-wise are materialized; so are loads whose value is read
 * after a later side effect, from a nested region, or more than once, and
 * costly element-wise values read more than once. Everything else is fused,
 * so a chain of element-wise ops becomes one loop. */
typedef struct tjp_plan {
    uint8_t *materialize;  /* per value id: 1 = materialized */
    int32_t *uses;         /* per value id: number of uses */
} tjp_plan;
TJI_FUNC void tjp_materialize(const tji_func *fn, tjp_plan *plan);
TJI_FUNC void tjp_plan_free(tjp_plan *plan);

/* layout_assign.c — the GPU's distributed layouts (F of the design's chain).
 * Every tile value gets a linear layout (layout.h) for the kernel's
 * num_warps, so that each op's operands are in the layout the op needs to
 * work in registers:
 *   element-wise ops, LOAD, STORE, ATOMIC*, CUMSUM, PRINT, ASSERT: all tile
 *     operands in the result's (or, without a result, the pointer's) layout;
 *   BROADCAST: the operand in the result's layout with broadcast dims folded
 *     to 0; EXPAND_DIMS: the slice of the result's layout; RESHAPE: the same
 *     bases (row-major index is unchanged); PERMUTE: bases with coordinates
 *     permuted; REDUCE: the result in the slice of the operand's layout along
 *     the axis; FOR/IF: init values, block args, yields and results of one
 *     carried variable share a layout.
 * Where a value is needed in two layouts, a TJI_CONVERT op is inserted right
 * before the use that disagrees. Nothing else in the IR changes. */
#include "layout.h"

typedef struct tjp_layout_plan {
    int num_warps;
    int32_t nvalues;      /* values of fn after the pass */
    tjp_layout *of;       /* per value id; unused for scalars (rank 0) */
} tjp_layout_plan;
TJI_FUNC tj_status tjp_assign_layouts(tji_func *fn, int num_warps, tjp_layout_plan *plan);
TJI_FUNC void tjp_layout_plan_free(tjp_layout_plan *plan);
/* Checks a plan slot by slot: every op's operands hold, register for
 * register, the elements the op needs. A failure is a tjit bug. */
TJI_FUNC tj_status tjp_check_layouts(const tji_func *fn, const tjp_layout_plan *plan);
/* The default layout of a tile shape: one element per thread per register,
 * lanes along the fastest (last) dimension first, warps along the slowest. */
TJI_FUNC void tjp_layout_default(tjp_layout *out, int rank, const int32_t *shape,
                                 int num_warps);

#endif
