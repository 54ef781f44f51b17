/* SPDX-License-Identifier: MIT */
/*
 * alias.c — may a load and a later write of one program touch the same
 * memory at different elements?
 *
 * A program's loads happen before its later stores, as written. The CPU
 * back end fuses a load into the loop nest of the store that reads it, and
 * the GPU lets every warp run ahead on its own; both are right only where
 * no element a store writes is one that the load reads for another
 * element. This pass answers that question for both back ends, cheaply
 * and conservatively:
 *
 *  - Every pointer value is traced back to the kernel parameters it may
 *    be an offset of (provenance.c: through addptr, reshapes, casts,
 *    layout conversions, where, and loop-carried and if-joined values).
 *    Pointers that may share a parameter may alias; one whose parameter
 *    is unknown may alias everything.
 *  - Two pointers of different parameters do not alias unless the launch
 *    passed one buffer for several pointer parameters: the host knows that,
 *    and it is part of the variant key (TJF_SPEC_ALIASED, tji_func's
 *    params_may_alias), so distinct buffers keep the fused code. tjit
 *    buffers never overlap (there are no views), so distinct handles are
 *    distinct memory.
 *  - Pointers that may alias are still harmless when they are the same
 *    expression (x[o] = f(x[o])): element i then reads and writes only its
 *    own address. The comparison is structural (the builder makes a new
 *    splat and addptr each time the user writes x + o) and bounded, so a
 *    huge expression compares as different, which is the safe answer.
 *    What the back ends add to this (the CPU: the value reaches the store
 *    at the same index; the GPU: the same thread holds the element) is
 *    theirs to check.
 */
#include <string.h>

#include "passes.h"

enum { SAME_BUDGET = 256 };

int tjp_may_alias(const tji_func *fn, const tjp_provenance *prov, int32_t ptr_a, int32_t ptr_b)
{
    if (!tjp_provenance_known(prov, ptr_a) || !tjp_provenance_known(prov, ptr_b) ||
        tjp_provenance_overlap(prov, ptr_a, ptr_b))
        return 1;
    return fn->params_may_alias;
}

static int same_attrs(const tji_op *x, const tji_op *y)
{
    if (x->code != y->code || x->nargs != y->nargs || x->nresults != 1 || y->nresults != 1)
        return 0;
    switch (x->code) {
    case TJI_CONST: return x->ival == y->ival && memcmp(&x->fval, &y->fval, sizeof x->fval) == 0;
    case TJI_ARANGE: return x->ival == y->ival;
    case TJI_PROGRAM_ID: case TJI_NUM_PROGRAMS: case TJI_EXPAND_DIMS: return x->axis == y->axis;
    case TJI_PERMUTE: return memcmp(x->perm, y->perm, sizeof x->perm) == 0;
    case TJI_CMP: return x->pred == y->pred;
    case TJI_ASSUME: return x->assume == y->assume && x->ival == y->ival;
    case TJI_CAST: return x->round_to_zero == y->round_to_zero;
    case TJI_SPLAT: case TJI_BROADCAST: case TJI_RESHAPE: case TJI_CONVERT: case TJI_BITCAST:
    case TJI_ADD: case TJI_SUB: case TJI_MUL: case TJI_IDIV: case TJI_REM: case TJI_AND:
    case TJI_OR: case TJI_XOR: case TJI_SHL: case TJI_SHR: case TJI_MIN: case TJI_MAX:
    case TJI_ADDPTR: case TJI_NEG: case TJI_NOT: case TJI_ABS: case TJI_POPC: case TJI_CLZ: case TJI_BREV:
    case TJI_WHERE:
        return 1;
    default:
        return 0; /* loads, reductions, control flow: not a pure function of operands */
    }
}

/* Structural equality with an explicit work list of pairs and a budget. */
int tjp_same_value(const tji_func *fn, int32_t a, int32_t b)
{
    int32_t todo[2 * SAME_BUDGET];
    int n = 0, steps = 0;
    todo[n++] = a, todo[n++] = b;
    while (n > 0) {
        int32_t y = todo[--n], x = todo[--n];
        if (x == y)
            continue;
        if (++steps > SAME_BUDGET || x <= 0 || y <= 0)
            return 0;
        const tji_value *vx = tji_val(fn, x), *vy = tji_val(fn, y);
        if (vx->def_op < 0 || vy->def_op < 0 || !tji_type_equal(&vx->type, &vy->type))
            return 0;
        const tji_op *ox = &fn->ops[vx->def_op], *oy = &fn->ops[vy->def_op];
        if (!same_attrs(ox, oy))
            return 0;
        for (int i = 0; i < ox->nargs; i++) {
            if (n + 2 > 2 * SAME_BUDGET)
                return 0;
            todo[n++] = ox->args[i], todo[n++] = oy->args[i];
        }
    }
    return 1;
}
