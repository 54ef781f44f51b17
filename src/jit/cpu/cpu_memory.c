/* SPDX-License-Identifier: MIT */
/*
 * cpu_memory.c — loads and stores of global memory.
 *
 * A load is one element load behind a branch on its mask, so an address
 * whose lane is masked off is never touched; in the bounds-checked mode
 * (bounds.h) the mask also excludes addresses outside their buffer. Stores
 * run a loop nest over the pointer tile, evaluating pointer and mask first
 * and the stored value only on the lanes whose mask is true. A masked
 * store whose mask is plain index arithmetic is emitted twice, behind a
 * check that the whole mask is true: full tiles take the copy without
 * masks (plain vector loads and stores), ragged edges the masked one.
 *
 * In that full-tile copy, addresses whose i32 offset is add/sub/mul of
 * aranges, constants and i32 scalars are formed in i64 where a check before
 * the loop proves no intermediate leaves i32 (below): an i32 offset wraps,
 * so p + sext(a*i + b) is no affine function of the loop index to LLVM,
 * which then multiplies and sign-extends per element instead of stepping a
 * pointer; a strided gather's inner loop went from about ten instructions
 * an element, with spills, to a load, a store and a pointer add.
 */
#include "cpu_codegen.h"

/* A checked variant's mask of the access of op (index) at ptr, an element
 * of pointer value ptr_id: off where the address is outside its buffers,
 * the first such lane reported (bounds.h). Unchecked: mask itself. */
LLVMValueRef tjj_cpu_bounds_mask(codegen *g, int32_t op, int32_t ptr_id, LLVMValueRef ptr,
                                 const tji_type *t, LLVMValueRef mask)
{
    if (!g->bounds)
        return mask;
    mask = tjj_bounds_check(g->bounds, g->b, ptr_id, ptr, value_mem_size(t), value_mem_size(t), mask);
    tjj_bounds_flush(g->bounds, g->b, op);
    return mask;
}

/* A masked element load: the address is touched only where mask is true. */
LLVMValueRef tjj_cpu_masked_load(codegen *g, const tji_type *t, LLVMValueRef ptr, LLVMValueRef mask,
                                 LLVMValueRef other, int is_volatile)
{
    LLVMTypeRef mt = value_mem_type(g, t);
    if (!other)
        other = LLVMConstNull(value_type(g, t));
    LLVMBasicBlockRef cur = NULL, then = NULL, merge = NULL;
    if (mask) {
        cur = LLVMGetInsertBlock(g->b);
        then = new_block(g, "load");
        merge = new_block(g, "load.end");
        LLVMBuildCondBr(g->b, mask, then, merge);
        LLVMPositionBuilderAtEnd(g->b, then);
    }
    LLVMValueRef ld = LLVMBuildLoad2(g->b, mt, ptr, "");
    LLVMSetAlignment(ld, (unsigned)value_mem_size(t));
    if (is_volatile)
        LLVMSetVolatile(ld, 1);
    LLVMValueRef v = tjj_ls_from_mem(&g->ls, ld, t);
    if (!mask)
        return v;
    LLVMBasicBlockRef then_end = LLVMGetInsertBlock(g->b);
    LLVMBuildBr(g->b, merge);
    LLVMPositionBuilderAtEnd(g->b, merge);
    LLVMValueRef phi = LLVMBuildPhi(g->b, value_type(g, t), "");
    LLVMValueRef vals[2] = {v, other};
    LLVMBasicBlockRef blocks[2] = {then_end, cur};
    LLVMAddIncoming(phi, vals, blocks, 2);
    return phi;
}

static void emit_store_nest(codegen *g, const tji_op *op)
{
    const tji_type *pt = tji_typeof(g->fn, op->args[0]);
    const tji_type *vt = tji_typeof(g->fn, op->args[1]);
    nest n;
    LLVMValueRef idx[TJ_MAX_RANK];
    tjj_cpu_nest_begin(g, &n, pt->rank, pt->shape, idx);
    LLVMValueRef mask = op->nargs > 2 && op->args[2] ? tjj_cpu_elem(g, op->args[2], idx) : NULL;
    if (mask && LLVMIsAConstantInt(mask) && LLVMConstIntGetZExtValue(mask))
        mask = NULL;
    LLVMValueRef ptr = tjj_cpu_elem(g, op->args[0], idx);
    mask = tjj_cpu_bounds_mask(g, (int32_t)(op - g->fn->ops), op->args[0], ptr, vt, mask);
    size_t mark = memo_mark(g);
    LLVMBasicBlockRef cont = tjj_llvm_guard_begin(g->b, mask, "store");
    LLVMValueRef v = tjj_cpu_elem(g, op->args[1], idx);
    LLVMValueRef st = LLVMBuildStore(g->b, tjj_ls_to_mem(&g->ls, v, vt), ptr);
    LLVMSetAlignment(st, (unsigned)value_mem_size(vt));
    memo_release(g, mark);
    tjj_llvm_guard_end(g->b, cont);
    tjj_cpu_nest_end(g, &n);
}

/* A mask computed from indices and scalars only (no loads), so evaluating
 * it once more is cheap and has no effect. */
static int mask_is_arithmetic(const codegen *g, int32_t id, int depth)
{
    const tji_value *v = tji_val(g->fn, id);
    if (v->type.rank == 0 || g->slot[id] >= 0)
        return 1;
    if (v->def_op < 0 || depth > 64)
        return 0;
    const tji_op *op = &g->fn->ops[v->def_op];
    if (op->code == TJI_LOAD)
        return 0;
    for (int i = 0; i < op->nargs; i++)
        if (op->args[i] && !mask_is_arithmetic(g, op->args[i], depth + 1))
            return 0;
    return 1;
}

/* --- i64 addresses of i32 offsets -------------------------------------------
 * Where an offset is add/sub/mul of aranges, constants and i32 scalars, the
 * check before the full-tile loop computes every intermediate's range from
 * the scalars; when none leaves i32 nothing wraps, the exact value equals
 * the wrapped one, and that loop forms the address from it in i64 with nsw.
 * Values are untouched; only the address's form changes. */

static int wide_offset_ok(const codegen *g, int32_t id, int depth, int *nodes)
{
    const tji_value *v = tji_val(g->fn, id);
    if (v->type.is_ptr || v->type.dtype != TJ_I32 || --*nodes < 0)
        return 0;
    if (v->type.rank == 0)
        return g->ssa[id] != NULL;
    if (g->slot[id] >= 0 || v->def_op < 0 || depth > WIDE_DEPTH)
        return 0;
    const tji_op *op = &g->fn->ops[v->def_op];
    switch (op->code) {
    case TJI_CONST: case TJI_ARANGE:
        return 1;
    case TJI_SPLAT: case TJI_BROADCAST: case TJI_EXPAND_DIMS:
        return wide_offset_ok(g, op->args[0], depth + 1, nodes);
    case TJI_ADD: case TJI_SUB: case TJI_MUL:
        return wide_offset_ok(g, op->args[0], depth + 1, nodes) &&
               wide_offset_ok(g, op->args[1], depth + 1, nodes);
    default:
        return 0;
    }
}

/* Records the fused ADDPTR tiles under value id (the values a store nest
 * evaluates) whose offsets wide_offset_ok accepts; *budget bounds the walk. */
static void wide_collect(codegen *g, int32_t id, int depth, int *budget)
{
    const tji_value *v = tji_val(g->fn, id);
    if (v->type.rank == 0 || g->slot[id] >= 0 || v->def_op < 0 || depth > 64 || --*budget < 0)
        return;
    const tji_op *op = &g->fn->ops[v->def_op];
    int nodes = WIDE_NODES;
    if (op->code == TJI_ADDPTR && g->nwide < WIDE_MAX && wide_offset_ok(g, op->args[1], 0, &nodes)) {
        int seen = 0;
        for (int w = 0; w < g->nwide; w++)
            seen |= g->wide_ptr[w] == id;
        if (!seen)
            g->wide_ptr[g->nwide++] = id;
    }
    for (int i = 0; i < op->nargs; i++)
        if (op->args[i])
            wide_collect(g, op->args[i], depth + 1, budget);
}

static LLVMValueRef select_cmp(codegen *g, LLVMIntPredicate p, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, p, a, b, ""), a, b, "");
}

/* The exact range [*lo, *hi] (i64) of offset id's elements, valid where
 * *fits stays true: it is and-ed with "in i32" for every intermediate. */
static void wide_range(codegen *g, int32_t id, LLVMValueRef *lo, LLVMValueRef *hi, LLVMValueRef *fits)
{
    const tji_value *v = tji_val(g->fn, id);
    if (v->type.rank == 0) {
        *lo = *hi = LLVMBuildSExt(g->b, g->ssa[id], g->ty.t_i64, "");
        return;
    }
    const tji_op *op = &g->fn->ops[v->def_op];
    LLVMValueRef l[2], h[2];
    switch (op->code) {
    case TJI_CONST:
        *lo = *hi = c_i64(g, (int32_t)op->ival);
        return;
    case TJI_ARANGE:
        *lo = c_i64(g, (int32_t)op->ival);
        *hi = c_i64(g, (int64_t)(int32_t)op->ival + v->type.shape[0] - 1);
        break;
    case TJI_SPLAT: case TJI_BROADCAST: case TJI_EXPAND_DIMS:
        wide_range(g, op->args[0], lo, hi, fits);
        return;
    default: /* add, sub, mul of operands in i32: no i64 overflow */
        for (int i = 0; i < 2; i++)
            wide_range(g, op->args[i], &l[i], &h[i], fits);
        if (op->code == TJI_ADD) {
            *lo = LLVMBuildAdd(g->b, l[0], l[1], "");
            *hi = LLVMBuildAdd(g->b, h[0], h[1], "");
        } else if (op->code == TJI_SUB) {
            *lo = LLVMBuildSub(g->b, l[0], h[1], "");
            *hi = LLVMBuildSub(g->b, h[0], l[1], "");
        } else {
            LLVMValueRef p[4] = {LLVMBuildMul(g->b, l[0], l[1], ""), LLVMBuildMul(g->b, l[0], h[1], ""),
                                 LLVMBuildMul(g->b, h[0], l[1], ""), LLVMBuildMul(g->b, h[0], h[1], "")};
            *lo = select_cmp(g, LLVMIntSLT, select_cmp(g, LLVMIntSLT, p[0], p[1]),
                             select_cmp(g, LLVMIntSLT, p[2], p[3]));
            *hi = select_cmp(g, LLVMIntSGT, select_cmp(g, LLVMIntSGT, p[0], p[1]),
                             select_cmp(g, LLVMIntSGT, p[2], p[3]));
        }
        break;
    }
    LLVMValueRef in = LLVMBuildAnd(g->b, LLVMBuildICmp(g->b, LLVMIntSGE, *lo, c_i64(g, INT32_MIN), ""),
                                   LLVMBuildICmp(g->b, LLVMIntSLE, *hi, c_i64(g, INT32_MAX), ""), "");
    *fits = LLVMBuildAnd(g->b, *fits, in, "");
}

/* The exact (unwrapped) element of offset id at idx, in i64. */
static LLVMValueRef wide_elem(codegen *g, int32_t id, LLVMValueRef *idx)
{
    const tji_value *v = tji_val(g->fn, id);
    if (v->type.rank == 0)
        return LLVMBuildSExt(g->b, g->ssa[id], g->ty.t_i64, "");
    const tji_op *op = &g->fn->ops[v->def_op];
    LLVMValueRef sidx[TJ_MAX_RANK] = {0};
    switch (op->code) {
    case TJI_CONST:
        return c_i64(g, (int32_t)op->ival);
    case TJI_ARANGE: {
        LLVMValueRef r = LLVMBuildAdd(g->b, idx[0], c_i64(g, (int32_t)op->ival), "");
        if (LLVMIsAInstruction(r))
            LLVMSetNSW(r, 1);
        return r;
    }
    case TJI_SPLAT:
        return wide_elem(g, op->args[0], NULL);
    case TJI_BROADCAST: {
        const tji_type *st = tji_typeof(g->fn, op->args[0]);
        for (int d = 0; d < st->rank; d++)
            sidx[d] = st->shape[d] == 1 ? c_i64(g, 0) : idx[d];
        return wide_elem(g, op->args[0], sidx);
    }
    case TJI_EXPAND_DIMS:
        for (int d = 0, s = 0; d < v->type.rank; d++)
            if (d != op->axis)
                sidx[s++] = idx[d];
        return wide_elem(g, op->args[0], sidx);
    default: {
        LLVMValueRef a = wide_elem(g, op->args[0], idx), b = wide_elem(g, op->args[1], idx);
        LLVMValueRef r = op->code == TJI_ADD   ? LLVMBuildAdd(g->b, a, b, "")
                         : op->code == TJI_SUB ? LLVMBuildSub(g->b, a, b, "")
                                               : LLVMBuildMul(g->b, a, b, "");
        if (LLVMIsAInstruction(r))
            LLVMSetNSW(r, 1);
        return r;
    }
    }
}

LLVMValueRef tjj_cpu_wide_addptr(codegen *g, int32_t id, LLVMValueRef *idx)
{
    for (int w = 0; w < g->nwide; w++)
        if (g->wide_ptr[w] == id) {
            const tji_op *op = &g->fn->ops[tji_val(g->fn, id)->def_op];
            const tji_type *t = tji_typeof(g->fn, id);
            LLVMValueRef off = wide_elem(g, op->args[1], idx);
            return LLVMBuildGEP2(g->b, tjj_ls_mem_type(&g->ls, t->dtype), tjj_cpu_elem(g, op->args[0], idx),
                                 &off, 1, "");
        }
    return NULL;
}

/* A masked store of a tile is emitted twice: a first loop checks whether the
 * whole mask is true (a vectorized and-reduction), and then either an
 * unmasked copy of the store loop runs, with every load under the same mask
 * unmasked too and i64 addresses where no offset can wrap (above), or the
 * masked loop does. Full tiles, the common case, then
 * use plain vector loads and stores; only ragged edges pay for masks. */
void tjj_cpu_emit_store(codegen *g, const tji_op *op)
{
    int32_t mask = op->nargs > 2 ? op->args[2] : 0;
    const tji_type *pt = tji_typeof(g->fn, op->args[0]);
    if (!mask || pt->rank == 0 || g->true_mask || !mask_is_arithmetic(g, mask, 0)) {
        emit_store_nest(g, op);
        return;
    }
    LLVMValueRef all = tjj_cpu_entry_alloca(g, g->ty.t_i1, "all");
    LLVMBuildStore(g->b, LLVMConstInt(g->ty.t_i1, 1, 0), all);
    nest n;
    LLVMValueRef idx[TJ_MAX_RANK];
    tjj_cpu_nest_begin(g, &n, pt->rank, pt->shape, idx);
    LLVMValueRef m = tjj_cpu_elem(g, mask, idx);
    LLVMBuildStore(g->b, LLVMBuildAnd(g->b, LLVMBuildLoad2(g->b, g->ty.t_i1, all, ""), m, ""), all);
    tjj_cpu_nest_end(g, &n);
    LLVMValueRef full_fast = LLVMBuildLoad2(g->b, g->ty.t_i1, all, "");
    int budget = 256;
    g->nwide = 0;
    if (!g->bounds) {
        wide_collect(g, op->args[0], 0, &budget);
        wide_collect(g, op->args[1], 0, &budget);
    }
    for (int w = 0; w < g->nwide; w++) {
        LLVMValueRef lo, hi;
        wide_range(g, g->fn->ops[tji_val(g->fn, g->wide_ptr[w])->def_op].args[1], &lo, &hi, &full_fast);
    }
    LLVMBasicBlockRef full = new_block(g, "full"), ragged = new_block(g, "ragged"), done = new_block(g, "stored");
    LLVMBuildCondBr(g->b, full_fast, full, ragged);
    LLVMPositionBuilderAtEnd(g->b, full);
    g->true_mask = mask;
    emit_store_nest(g, op);
    g->true_mask = 0;
    g->nwide = 0;
    LLVMBuildBr(g->b, done);
    LLVMPositionBuilderAtEnd(g->b, ragged);
    emit_store_nest(g, op);
    LLVMBuildBr(g->b, done);
    LLVMPositionBuilderAtEnd(g->b, done);
}
