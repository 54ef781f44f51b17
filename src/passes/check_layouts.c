/* SPDX-License-Identifier: MIT */
/*
 * check_layouts.c — the checker between the layout passes
 * (tjp_check_layouts).
 *
 * The layout pass (layout_assign.c) chooses a layout per tile value and
 * inserts conversions where choices meet; the passes after it (swizzles,
 * the allocation, barriers, warp specialization) only add to the plan.
 * This checker reads the result independently of how it was made: for
 * every op, slot by slot (register, lane, warp), the operand holds the
 * element the same slot of the result needs — the same element for
 * element-wise ops, the corresponding one through EXPAND_DIMS, BROADCAST,
 * PERMUTE and RESHAPE — and a tensor-core DOT's result and operands are in
 * its form's layouts. A failure is a tjit bug, reported as an internal
 * error at the user's line, never a wrong answer computed in silence.
 */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

static int is_tile(const tji_func *fn, int32_t v) { return v > 0 && tji_typeof(fn, v)->rank > 0; }

static uint32_t element_of(const tjp_layout *L, uint32_t r, uint32_t l, uint32_t w)
{
    return tjp_layout_apply(L, r, l, w);
}

static void coords_of(uint32_t e, const tjp_layout *L, int64_t *c)
{
    memset(c, 0, sizeof(int64_t) * TJ_MAX_RANK);
    for (int d = L->rank - 1; d >= 0; d--) {
        c[d] = e % (uint32_t)L->shape[d];
        e /= (uint32_t)L->shape[d];
    }
}

/* Does slot (r, l, w) of the operand hold what the same slot of the result needs? */
static int slot_agrees(const tji_op *op, const tjp_layout *res, const tjp_layout *arg, uint32_t r, uint32_t l,
                       uint32_t w)
{
    int64_t cr[TJ_MAX_RANK], ca[TJ_MAX_RANK], want[TJ_MAX_RANK] = {0};
    if (op->code == TJI_RESHAPE)
        return element_of(res, r, l, w) == element_of(arg, r, l, w);
    coords_of(element_of(res, r, l, w), res, cr);
    coords_of(element_of(arg, r, l, w), arg, ca);
    switch (op->code) {
    case TJI_BROADCAST:
        for (int d = 0; d < arg->rank; d++)
            want[d] = arg->shape[d] == 1 ? 0 : cr[d];
        break;
    case TJI_EXPAND_DIMS:
        for (int d = 0, k = 0; d < res->rank; d++)
            if (d != op->axis)
                want[k++] = cr[d];
        break;
    case TJI_PERMUTE: /* result dim d is operand dim perm[d] */
        for (int d = 0; d < res->rank; d++)
            want[op->perm[d]] = cr[d];
        break;
    default:
        memcpy(want, cr, sizeof want);
    }
    return memcmp(want, ca, sizeof want) == 0;
}

static int power_of_two_shape(const tjp_layout *L)
{
    for (int d = 0; d < L->rank; d++)
        if (tjp_log2_exact(L->shape[d]) < 0)
            return 0;
    return 1;
}

/* Does every slot of the operand hold what the same slot of the result
 * needs? A layout maps a slot's bits to an element index by XOR of basis
 * vectors; with power-of-two shapes an element's coordinates are bit fields
 * of its index, and what each op needs of them (the same, some zeroed, one
 * dropped, permuted) is linear over GF(2) as well. Two linear maps agree
 * everywhere iff they agree on the slots of one bit each, so those are all
 * that need checking: a few dozen instead of every slot of the tile. */
static int slots_agree(const tji_op *op, const tjp_layout *res, const tjp_layout *arg)
{
    if (memcmp(res->nbits, arg->nbits, sizeof res->nbits))
        return 0;
    if (power_of_two_shape(res) && power_of_two_shape(arg)) {
        for (int in = 0; in < TJP_NIN; in++)
            for (int b = 0; b < res->nbits[in]; b++) {
                uint32_t slot[TJP_NIN] = {0};
                slot[in] = 1u << b;
                if (!slot_agrees(op, res, arg, slot[TJP_REG], slot[TJP_LANE], slot[TJP_WARP]))
                    return 0;
            }
        return 1;
    }
    for (uint32_t w = 0; w < 1u << res->nbits[TJP_WARP]; w++)
        for (uint32_t l = 0; l < 1u << res->nbits[TJP_LANE]; l++)
            for (uint32_t r = 0; r < 1u << res->nbits[TJP_REG]; r++)
                if (!slot_agrees(op, res, arg, r, l, w))
                    return 0;
    return 1;
}

/* A DOT's result is in its form's layout (MMA) and its operands in the
 * layouts the form derives from the result's. */
static tj_status check_dot(const tji_func *fn, const tjp_layout_plan *plan, int32_t i)
{
    const tji_op *op = &fn->ops[i];
    tjp_dot_choice fma = {.form = TJP_DOT_FMA};
    const tjp_dot_choice *ch = plan->dot && plan->dot[i].form ? &plan->dot[i] : &fma;
    tjp_layout want[3];
    if (tjp_dot_result_layout(fn, op, ch, plan->num_warps, &want[2])) {
        if (!tjp_layout_equal(&want[2], &plan->of[op->result]))
            return TJ_ERR_BUILD;
    } else {
        want[2] = plan->of[op->result];
    }
    if (!tjp_dot_operand_layouts(fn, op, ch, plan->num_warps, &want[2], &want[0], &want[1]))
        return TJ_ERR_BUILD;
    for (int k = 0; k < op->nargs && k < 3; k++)
        if (op->args[k] && !tjp_layout_equal(&want[k], &plan->of[op->args[k]]))
            return TJ_ERR_BUILD;
    return TJ_OK;
}

tj_status tjp_check_layouts(const tji_func *fn, const tjp_layout_plan *plan)
{
    for (int32_t i = 0; i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        if (op->parent < 0 || op->code == TJI_CONVERT || op->code == TJI_FOR ||
            op->code == TJI_IF || op->code == TJI_YIELD || op->code == TJI_WHILE ||
            op->code == TJI_CONDITION)
            continue;
        int32_t anchor = op->nresults == 1 && is_tile(fn, op->result) ? op->result
                         : op->nargs && is_tile(fn, op->args[0]) ? op->args[0] : 0;
        if (!anchor)
            continue;
        const tjp_layout *L = &plan->of[anchor];
        if (op->code == TJI_DOT) {
            if (check_dot(fn, plan, i) != TJ_OK)
                return tjs_error(TJ_ERR_BUILD, "%s:%d: internal error: layouts: kernel '%s', dot (#%d): "
                                 "the result or an operand is not in the layout of its form",
                                 op->loc.file ? op->loc.file : "?", op->loc.line, fn->name, i);
            continue;
        }
        for (int k = 0; k < op->nargs; k++) {
            int32_t v = op->args[k];
            if (!is_tile(fn, v) || v == anchor)
                continue;
            int ok;
            if (op->code == TJI_REDUCE) {
                tjp_layout s;
                tjp_layout_slice(&s, &plan->of[v], op->axis);
                ok = tjp_layout_equal(&s, L);
            } else {
                ok = slots_agree(op, L, &plan->of[v]);
            }
            if (!ok)
                return tjs_error(TJ_ERR_BUILD,
                                 "%s:%d: internal error: layouts: kernel '%s', op '%s' "
                                 "(#%d): operand %d is not where the op needs it",
                                 op->loc.file ? op->loc.file : "?", op->loc.line, fn->name,
                                 tji_opcode_name(op->code), i, k + 1);
        }
    }
    return TJ_OK;
}
