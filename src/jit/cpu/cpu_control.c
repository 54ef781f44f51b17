/* SPDX-License-Identifier: MIT */
/*
 * cpu_control.c — FOR, IF and WHILE.
 *
 * FOR is a real loop: scalar carried values are phis, tile carried values
 * live in the slots of the region's block arguments (the loop's results
 * share those slots). Yields copy into them, through temporaries when one
 * yielded value is another carried array (yield(b, a) swaps correctly).
 * A FOR whose step is 0 runs zero times; the loop test never overflows,
 * whatever the bounds. IF is a branch; scalar results are phis, tile
 * results are arrays both branches write.
 *
 * WHILE is a loop whose header runs the ops up to its CONDITION, which
 * branches to the rest of the body or out; its carried values are kept as
 * a FOR's, and its results (the CONDITION's values) are the values there
 * (scalars: the header dominates the exit) or arrays the CONDITION writes.
 */
#include <stdlib.h>

#include "cpu_codegen.h"

static int is_const_op(const codegen *g, int32_t id, int64_t *value)
{
    const tji_value *v = tji_val(g->fn, id);
    if (v->def_op < 0 || g->fn->ops[v->def_op].code != TJI_CONST)
        return 0;
    *value = g->fn->ops[v->def_op].ival;
    return 1;
}

/* Tile yields into the carried arrays of the args from first on; through
 * temporaries (temps) when a yielded value is another carried array. */
static void copy_tile_yields(codegen *g, const tji_region *reg, int first, const tji_op *yield,
                             const int64_t *temps)
{
    for (int k = 0; k < yield->nargs; k++) {
        int32_t arg = reg->args[first + k];
        if (rank_of(g, arg) > 0)
            tjj_cpu_copy_value_to(g, temps ? temps[k] : g->slot[arg], yield->args[k]);
    }
    for (int k = 0; temps && k < yield->nargs; k++) {
        const tji_type *t = tji_typeof(g->fn, reg->args[first + k]);
        if (t->rank > 0)
            LLVMBuildMemCpy(g->b, tjj_cpu_scratch_at(g, g->slot[reg->args[first + k]]), 64,
                            tjj_cpu_scratch_at(g, temps[k]), 64,
                            c_i64(g, numel_of(t) * (int64_t)value_mem_size(t)));
    }
}

void tjj_cpu_emit_for(codegen *g, int32_t opi)
{
    const tji_func *fn = g->fn;
    const tji_op *op = &fn->ops[opi];
    const tji_region *reg = &fn->regions[op->region[0]];
    int ncarried = op->nargs - 3;
    tj_dtype dt = tji_typeof(fn, op->args[0])->dtype;
    int is_signed = tjs_dtype_is_signed(dt);
    LLVMValueRef lo = g->ssa[op->args[0]], hi = g->ssa[op->args[1]], step = g->ssa[op->args[2]];
    LLVMTypeRef it = LLVMTypeOf(lo);
    LLVMValueRef zero = LLVMConstNull(it);

    /* Tile carried values start in the slots of the block arguments. */
    for (int k = 0; k < ncarried; k++) {
        int32_t arg = reg->args[1 + k];
        if (rank_of(g, arg) > 0)
            tjj_cpu_copy_value_to(g, g->slot[arg], op->args[3 + k]);
    }
    LLVMValueRef up = is_signed ? LLVMBuildICmp(g->b, LLVMIntSGT, step, zero, "")
                                : LLVMBuildICmp(g->b, LLVMIntNE, step, zero, "");
    LLVMValueRef down = is_signed ? LLVMBuildICmp(g->b, LLVMIntSLT, step, zero, "")
                                  : LLVMConstNull(g->ty.t_i1);
    LLVMValueRef enter = LLVMBuildSelect(
        g->b, up, LLVMBuildICmp(g->b, is_signed ? LLVMIntSLT : LLVMIntULT, lo, hi, ""),
        LLVMBuildSelect(g->b, down, LLVMBuildICmp(g->b, LLVMIntSGT, lo, hi, ""), LLVMConstNull(g->ty.t_i1), ""),
        "");
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b);
    LLVMBasicBlockRef body = new_block(g, "for"), exit = new_block(g, "for.end");
    LLVMBuildCondBr(g->b, enter, body, exit);

    LLVMPositionBuilderAtEnd(g->b, body);
    LLVMValueRef iv = LLVMBuildPhi(g->b, it, "iv");
    LLVMAddIncoming(iv, &lo, &pre, 1);
    g->ssa[reg->args[0]] = iv;
    LLVMValueRef *phis = tjs_xcalloc((size_t)ncarried + 1, sizeof(LLVMValueRef));
    for (int k = 0; k < ncarried; k++) {
        int32_t arg = reg->args[1 + k];
        if (rank_of(g, arg) > 0)
            continue;
        phis[k] = LLVMBuildPhi(g->b, value_type(g, tji_typeof(fn, arg)), "");
        LLVMAddIncoming(phis[k], &g->ssa[op->args[3 + k]], &pre, 1);
        g->ssa[arg] = phis[k];
    }

    const tji_op *yield = NULL;
    tjj_cpu_emit_region(g, op->region[0], &yield);
    g->cur_op = opi;
    if (!yield || yield->nargs != ncarried) {
        tjj_cpu_fail(g, "internal: loop body does not end with a yield of %d values", ncarried);
        free(phis);
        LLVMBuildBr(g->b, exit);
        LLVMPositionBuilderAtEnd(g->b, exit);
        return;
    }
    copy_tile_yields(g, reg, 1, yield, g->yield_temps[opi]);

    /* Next iteration; the test cannot overflow. */
    int64_t cstep;
    LLVMValueRef next, more;
    if (is_const_op(g, op->args[2], &cstep) && (cstep == 1 || (cstep == -1 && is_signed))) {
        next = LLVMBuildAdd(g->b, iv, step, "");
        if (is_signed)
            LLVMSetNSW(next, 1);
        else
            LLVMSetNUW(next, 1);
        more = LLVMBuildICmp(g->b, cstep == 1 ? (is_signed ? LLVMIntSLT : LLVMIntULT) : LLVMIntSGT,
                             next, hi, "");
    } else {
        next = LLVMBuildAdd(g->b, iv, step, "");
        LLVMValueRef left_up = LLVMBuildSub(g->b, hi, iv, ""), left_down = LLVMBuildSub(g->b, iv, hi, "");
        more = LLVMBuildSelect(g->b, up, LLVMBuildICmp(g->b, LLVMIntUGT, left_up, step, ""),
                               LLVMBuildICmp(g->b, LLVMIntUGT, left_down, LLVMBuildSub(g->b, zero, step, ""), ""),
                               "");
    }
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b);
    LLVMAddIncoming(iv, &next, &latch, 1);
    for (int k = 0; k < ncarried; k++)
        if (phis[k])
            LLVMAddIncoming(phis[k], &g->ssa[yield->args[k]], &latch, 1);
    tjj_llvm_loop_unroll(g->ctx, LLVMBuildCondBr(g->b, more, body, exit), op->unroll);

    LLVMPositionBuilderAtEnd(g->b, exit);
    for (int k = 0; k < ncarried; k++) {
        if (!phis[k])
            continue;
        LLVMValueRef r = LLVMBuildPhi(g->b, LLVMTypeOf(phis[k]), "");
        LLVMValueRef vals[2] = {g->ssa[op->args[3 + k]], g->ssa[yield->args[k]]};
        LLVMBasicBlockRef blocks[2] = {pre, latch};
        LLVMAddIncoming(r, vals, blocks, 2);
        g->ssa[op->result + k] = r;
    }
    free(phis);
}

void tjj_cpu_emit_if(codegen *g, int32_t opi)
{
    const tji_func *fn = g->fn;
    const tji_op *op = &fn->ops[opi];
    int n = op->nresults;
    LLVMBasicBlockRef arms[2], ends[2], merge = new_block(g, "if.end");
    arms[0] = new_block(g, "then");
    arms[1] = new_block(g, "else");
    LLVMBuildCondBr(g->b, g->ssa[op->args[0]], arms[0], arms[1]);
    LLVMValueRef *vals = tjs_xcalloc((size_t)(2 * n + 1), sizeof(LLVMValueRef));
    for (int arm = 0; arm < 2; arm++) {
        LLVMPositionBuilderAtEnd(g->b, arms[arm]);
        const tji_op *yield = NULL;
        if (op->region[arm] >= 0)
            tjj_cpu_emit_region(g, op->region[arm], &yield);
        g->cur_op = opi;
        if (n > 0 && (!yield || yield->nargs != n)) {
            tjj_cpu_fail(g, "internal: branch does not end with a yield of %d values", n);
        } else {
            for (int k = 0; k < n; k++) {
                int32_t r = op->result + k;
                if (rank_of(g, r) > 0)
                    tjj_cpu_copy_value_to(g, g->slot[r], yield->args[k]);
                else
                    vals[arm * n + k] = g->ssa[yield->args[k]];
            }
        }
        ends[arm] = LLVMGetInsertBlock(g->b);
        LLVMBuildBr(g->b, merge);
    }
    LLVMPositionBuilderAtEnd(g->b, merge);
    for (int k = 0; k < n; k++) {
        int32_t r = op->result + k;
        if (rank_of(g, r) > 0)
            continue;
        LLVMTypeRef t = value_type(g, tji_typeof(fn, r));
        LLVMValueRef phi = LLVMBuildPhi(g->b, t, "");
        LLVMValueRef in[2] = {vals[k] ? vals[k] : LLVMGetPoison(t), vals[n + k] ? vals[n + k] : LLVMGetPoison(t)};
        LLVMAddIncoming(phi, in, ends, 2);
        g->ssa[r] = phi;
    }
    free(vals);
}

void tjj_cpu_emit_while(codegen *g, int32_t opi)
{
    const tji_func *fn = g->fn;
    const tji_op *op = &fn->ops[opi];
    const tji_region *reg = &fn->regions[op->region[0]];
    int n = op->nargs;
    for (int k = 0; k < n; k++)
        if (rank_of(g, reg->args[k]) > 0)
            tjj_cpu_copy_value_to(g, g->slot[reg->args[k]], op->args[k]);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b);
    LLVMBasicBlockRef header = new_block(g, "while"), exit = new_block(g, "while.end");
    LLVMBuildBr(g->b, header);
    LLVMPositionBuilderAtEnd(g->b, header);
    LLVMValueRef *phis = tjs_xcalloc((size_t)n + 1, sizeof(LLVMValueRef));
    for (int k = 0; k < n; k++) {
        int32_t arg = reg->args[k];
        if (rank_of(g, arg) > 0)
            continue;
        phis[k] = LLVMBuildPhi(g->b, value_type(g, tji_typeof(fn, arg)), "");
        LLVMAddIncoming(phis[k], &g->ssa[op->args[k]], &pre, 1);
        g->ssa[arg] = phis[k];
    }

    tjj_cpu_while w = {.exit = exit}, *outer = g->cur_while;
    g->cur_while = &w;
    const tji_op *yield = NULL;
    tjj_cpu_emit_region(g, op->region[0], &yield);
    g->cur_while = outer;
    g->cur_op = opi;
    if (g->status == TJ_OK && (!w.emitted || !yield || yield->nargs != n))
        tjj_cpu_fail(g, "internal: while body without its condition or a yield of %d values", n);
    if (g->status == TJ_OK) {
        copy_tile_yields(g, reg, 0, yield, g->yield_temps[opi]);
        LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b);
        for (int k = 0; k < n; k++)
            if (phis[k])
                LLVMAddIncoming(phis[k], &g->ssa[yield->args[k]], &latch, 1);
    }
    LLVMBuildBr(g->b, header);
    LLVMPositionBuilderAtEnd(g->b, exit);
    free(phis);
}

void tjj_cpu_emit_condition(codegen *g, int32_t opi)
{
    const tji_func *fn = g->fn;
    const tji_op *op = &fn->ops[opi];
    const tji_op *loop = &fn->ops[fn->regions[op->parent].parent_op];
    tjj_cpu_while *w = g->cur_while;
    if (!w || w->emitted) {
        tjj_cpu_fail(g, "internal: a condition outside the while it belongs to");
        return;
    }
    for (int k = 0; k < loop->nresults; k++) {
        int32_t r = loop->result + k, v = op->args[1 + k];
        if (rank_of(g, r) == 0)
            g->ssa[r] = g->ssa[v];
        else if (g->slot[r] >= 0)
            tjj_cpu_copy_value_to(g, g->slot[r], v);
    }
    LLVMBasicBlockRef rest = new_block(g, "while.body");
    LLVMBuildCondBr(g->b, g->ssa[op->args[0]], rest, w->exit);
    LLVMPositionBuilderAtEnd(g->b, rest);
    w->emitted = 1;
}
