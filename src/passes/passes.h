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

#endif
