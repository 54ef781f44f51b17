/* SPDX-License-Identifier: MIT */
/*
 * carried_offsets.c — a loop's pointer tile that only moves by a scalar
 * becomes its starting tile plus one carried offset.
 *
 * Triton's matmul walks its operands with carried pointer tiles:
 *
 *     a_ptrs = a + rm[:, None] * lda + rk[None, :]
 *     for k: acc = dot(load(a_ptrs), ...); a_ptrs += BK
 *
 * Carried as they are, such tiles are arrays of addresses on the CPU: every
 * iteration rewrites the array and every load gathers through it, element
 * by element, which costs more than the dot itself. But a tile that each
 * iteration moves by one scalar (p' = p + splat(s)) is always its start
 * plus the sum of the steps so far. This pass carries that sum instead: the
 * variable becomes an i64 scalar o (0 at entry, o + s per iteration), and
 * each use of the tile inside the loop, or of its value after the loop,
 * reads p_init + splat(o). p_init is an expression of the kernel's values,
 * which the CPU back end fuses into each load, so the load becomes the
 * contiguous, vectorized loop it is in C. The sum is taken in 64 bits (the
 * offsets of addresses), so no step sequence that the pointers could walk
 * overflows it.
 *
 * The rewrite keeps the loop's shape (the same carried variables, one of
 * them now a scalar) and changes the program only where the pattern holds:
 * a carried pointer tile whose yielded value is ADDPTR(itself, SPLAT(s))
 * with s a scalar integer, that ADDPTR read by the yield alone. Loops
 * nested in loops are rewritten the same way.
 */
#include <stdlib.h>

#include "passes.h"

/* Value id's uses in ops within region outer renamed to to, except op keep. */
static void rename_within(tji_func *fn, int32_t outer, int32_t id, int32_t to, const int32_t *keep,
                          int nkeep)
{
    for (int32_t i = 0; i < fn->nops; i++) {
        tji_op *op = &fn->ops[i];
        if (op->parent < 0 || !tji_region_within(fn, op->parent, outer))
            continue;
        int skip = 0;
        for (int k = 0; k < nkeep; k++)
            skip |= keep[k] == i;
        for (int a = 0; !skip && a < op->nargs; a++)
            if (op->args[a] == id)
                tji_set_operand(fn, i, a, to);
    }
}

static int position_of(const tji_func *fn, int32_t region, int32_t op)
{
    const tji_region *r = &fn->regions[region];
    for (int i = 0; i < r->nops; i++)
        if (r->ops[i] == op)
            return i;
    return -1;
}

static int count_uses(const tji_func *fn, int32_t id)
{
    int n = 0;
    for (int32_t i = 0; i < fn->nops; i++)
        if (fn->ops[i].parent >= 0)
            for (int a = 0; a < fn->ops[i].nargs; a++)
                n += fn->ops[i].args[a] == id;
    return n;
}

/* The scalar step s of carried variable j of FOR op f, when its yield is
 * ADDPTR(arg, SPLAT(s)) read by the yield alone; else 0. *step_op gets the
 * ADDPTR. */
static int32_t scalar_step(const tji_func *fn, int32_t f, int j, int32_t *step_op)
{
    const tji_op *op = &fn->ops[f];
    const tji_region *body = &fn->regions[op->region[0]];
    int32_t arg = body->args[1 + j];
    const tji_type *t = tji_typeof(fn, arg);
    if (!t->is_ptr || t->rank == 0 || body->nops == 0)
        return 0;
    const tji_op *yield = &fn->ops[body->ops[body->nops - 1]];
    if (yield->code != TJI_YIELD || j >= yield->nargs)
        return 0;
    int32_t y = yield->args[j], def = tji_val(fn, y)->def_op;
    if (def < 0 || fn->ops[def].code != TJI_ADDPTR || fn->ops[def].parent != op->region[0] ||
        fn->ops[def].args[0] != arg || count_uses(fn, y) != 1)
        return 0;
    int32_t off = fn->ops[def].args[1], off_def = tji_val(fn, off)->def_op;
    if (off_def < 0 || fn->ops[off_def].code != TJI_SPLAT)
        return 0;
    int32_t s = fn->ops[off_def].args[0];
    const tji_type *st = tji_typeof(fn, s);
    if (st->rank != 0 || st->is_ptr || !tjs_dtype_is_int(st->dtype) || st->dtype == TJ_I1)
        return 0;
    *step_op = def;
    return s;
}

/* p_init + splat(offset), inserted at position pos of region; returns the tile. */
static int32_t offset_tile(tji_func *fn, int32_t region, int pos, int32_t p_init, int32_t offset,
                           tji_loc loc)
{
    tji_type pt = *tji_typeof(fn, p_init);
    tji_type ot = pt;
    ot.is_ptr = 0;
    ot.dtype = TJ_I64;
    int32_t sp = tji_insert_op(fn, TJI_SPLAT, region, pos, loc);
    tji_set_operands(fn, sp, &offset, 1);
    int32_t spv = tji_new_results(fn, sp, &ot, 1);
    int32_t add = tji_insert_op(fn, TJI_ADDPTR, region, pos + 1, loc);
    tji_set_operands(fn, add, (int32_t[]){p_init, spv}, 2);
    return tji_new_results(fn, add, &pt, 1);
}

static const tji_type scalar_i64 = {.dtype = TJ_I64};

static void rewrite(tji_func *fn, int32_t f, int j, int32_t step, int32_t step_op)
{
    tji_loc loc = fn->ops[f].loc;
    int32_t body = fn->ops[f].region[0], parent = fn->ops[f].parent;
    int32_t arg = fn->regions[body].args[1 + j], result = fn->ops[f].result + j;
    int32_t p_init = fn->ops[f].args[3 + j];

    /* entry: o = 0 */
    int32_t zero = tji_insert_op(fn, TJI_CONST, parent, position_of(fn, parent, f), loc);
    tji_set_operands(fn, zero, NULL, 0);
    tji_new_results(fn, zero, &scalar_i64, 1);
    tji_set_operand(fn, f, 3 + j, fn->ops[zero].result);

    /* each iteration: o + s (s widened to i64) */
    int pos = position_of(fn, body, step_op);
    int32_t s64 = step;
    if (tji_typeof(fn, step)->dtype != TJ_I64) {
        int32_t cast = tji_insert_op(fn, TJI_CAST, body, pos++, fn->ops[step_op].loc);
        tji_set_operands(fn, cast, &step, 1);
        s64 = tji_new_results(fn, cast, &scalar_i64, 1);
    }
    int32_t next = tji_insert_op(fn, TJI_ADD, body, pos, fn->ops[step_op].loc);
    tji_set_operands(fn, next, (int32_t[]){arg, s64}, 2);
    int32_t next_v = tji_new_results(fn, next, &scalar_i64, 1);
    const tji_region *reg = &fn->regions[body];
    tji_set_operand(fn, reg->ops[reg->nops - 1], j, next_v);
    tji_detach_op(fn, step_op);
    tji_drop_detached(fn, body);

    /* the tile, read inside the loop and after it */
    tji_set_type(fn, arg, scalar_i64);
    tji_set_type(fn, result, scalar_i64);
    int32_t inside = offset_tile(fn, body, 0, p_init, arg, loc);
    int32_t keep_in[3] = {next, fn->values[inside].def_op, fn->values[fn->ops[fn->values[inside].def_op].args[1]].def_op};
    rename_within(fn, body, arg, inside, keep_in, 3);
    if (count_uses(fn, result) == 0)
        return;
    int32_t after = offset_tile(fn, parent, position_of(fn, parent, f) + 1, p_init, result, loc);
    int32_t keep_out[2] = {fn->values[after].def_op, fn->values[fn->ops[fn->values[after].def_op].args[1]].def_op};
    for (int32_t i = 0; i < fn->nops; i++) {
        tji_op *op = &fn->ops[i];
        if (op->parent < 0 || i == keep_out[0] || i == keep_out[1] ||
            tji_region_within(fn, op->parent, body))
            continue;
        for (int a = 0; a < op->nargs; a++)
            if (op->args[a] == result)
                tji_set_operand(fn, i, a, after);
    }
}

tj_status tjp_carry_offsets(tji_func *fn)
{
    int32_t nops = fn->nops; /* the ops the rewrite adds are never FORs */
    for (int32_t f = 0; f < nops; f++) {
        if (fn->ops[f].code != TJI_FOR || fn->ops[f].parent < 0)
            continue;
        int ncarried = fn->ops[f].nargs - 3;
        for (int j = 0; j < ncarried; j++) {
            int32_t step_op = -1, step = scalar_step(fn, f, j, &step_op);
            if (step)
                rewrite(fn, f, j, step, step_op);
        }
    }
    return TJ_OK;
}
