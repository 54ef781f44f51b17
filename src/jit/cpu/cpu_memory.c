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

/* A masked store of a tile is emitted twice: a first loop checks whether the
 * whole mask is true (a vectorized and-reduction), and then either an
 * unmasked copy of the store loop runs, with every load under the same mask
 * unmasked too, or the masked loop does. Full tiles, the common case, then
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
    LLVMBasicBlockRef full = new_block(g, "full"), ragged = new_block(g, "ragged"), done = new_block(g, "stored");
    LLVMBuildCondBr(g->b, LLVMBuildLoad2(g->b, g->ty.t_i1, all, ""), full, ragged);
    LLVMPositionBuilderAtEnd(g->b, full);
    g->true_mask = mask;
    emit_store_nest(g, op);
    g->true_mask = 0;
    LLVMBuildBr(g->b, done);
    LLVMPositionBuilderAtEnd(g->b, ragged);
    emit_store_nest(g, op);
    LLVMBuildBr(g->b, done);
    LLVMPositionBuilderAtEnd(g->b, done);
}
