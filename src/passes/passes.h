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

/* axis_info.c — what is known about the integers and addresses in each tile
 * (Triton's AxisInfo), for coalescing and vectorizing loads and stores.
 * Per value id and per dimension (a scalar counts as one dimension of 1):
 *   contiguity:   runs of this length hold consecutive integers (addresses
 *                 one element apart), runs starting at multiples of it;
 *   divisibility: a power of two (at most TJP_DIV_MAX) dividing the first
 *                 element of every run — of a pointer: its address in bytes;
 *   constancy:    runs of this length hold equal values.
 * has_value/value: every element is this known integer. All three counts are
 * powers of two no larger than the dimension; 1, 1, 1 means nothing known. */
#define TJP_DIV_MAX 4096
typedef struct tjp_axis_value {
    int32_t contiguity[TJ_MAX_RANK];
    int32_t divisibility[TJ_MAX_RANK];
    int32_t constancy[TJ_MAX_RANK];
    int has_value;
    int64_t value;
} tjp_axis_value;
typedef struct tjp_axis_info_result {
    int32_t nvalues;
    tjp_axis_value *of;   /* per value id (index 0 unused) */
} tjp_axis_info_result;
/* What the caller knows about one kernel argument (a specialization key). */
typedef struct tjp_param_spec {
    int ptr_align16;      /* pointer: the address is a multiple of 16 bytes */
    int int_div16;        /* integer: a multiple of 16 */
    int is_one;           /* integer: equal to 1 */
} tjp_param_spec;
/* spec: one entry per kernel parameter, or NULL (nothing known). */
TJI_FUNC tj_status tjp_axis_info(const tji_func *fn, const tjp_param_spec *spec,
                                 tjp_axis_info_result *out);
TJI_FUNC void tjp_axis_info_free(tjp_axis_info_result *r);
/* The coalescing answer for the LOAD/STORE op at index op: dim, the pointer's
 * dimension of greatest contiguity (the last one on ties; 0 for a scalar);
 * vector_bytes, the widest access (at most 16 bytes, at least one element)
 * that the pointer's contiguity and divisibility along dim allow; and
 * mask_constancy, the mask's constancy along dim (the dimension's size
 * without a mask) — a vector wider than that needs per-element predicates. */
typedef struct tjp_access {
    int dim;
    int elem_bytes;
    int vector_bytes;
    int mask_constancy;
} tjp_access;
TJI_FUNC tj_status tjp_access_vector(const tji_func *fn, const tjp_axis_info_result *info,
                                     int32_t op, tjp_access *out);

/* explain.c — the coalescing chain of every LOAD, STORE and atomic made
 * concrete (layout F, the pointer's address facts, vector width, sectors of
 * one warp request against the minimum) and the class of every TJI_CONVERT,
 * as malloc'ed text (TJIT_DUMP=layouts). NULL on a NULL argument. */
TJI_FUNC char *tjp_explain(const tji_func *fn, const tjp_layout_plan *plan,
                           const tjp_axis_info_result *axis);

#endif
