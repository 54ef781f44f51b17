/* SPDX-License-Identifier: MIT */
/*
 * cpu_control.c — FOR and IF.
 *
 * FOR is a real loop: scalar carried values are phis, tile carried values
 * live in the slots of the region's block arguments (the loop's results
 * share those slots). Yields copy into them, through temporaries when one
 * yielded value is another carried array (yield(b, a) swaps correctly).
 * A FOR whose step is 0 runs zero times; the loop test never overflows,
 * whatever the bounds. IF is a branch; scalar results are phis, tile
 * results are arrays both branches write.
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
    /* Tile yields: through temporaries when a yielded value is another
     * carried array, so that yield(b, a) swaps. */
    int64_t *temps = g->yield_temps[opi];
    for (int k = 0; k < ncarried; k++) {
        int32_t arg = reg->args[1 + k];
        if (rank_of(g, arg) > 0)
            tjj_cpu_copy_value_to(g, temps ? temps[k] : g->slot[arg], yield->args[k]);
    }
    if (temps)
        for (int k = 0; k < ncarried; k++) {
            int32_t arg = reg->args[1 + k];
            const tji_type *t = tji_typeof(fn, arg);
            if (t->rank > 0)
                LLVMBuildMemCpy(g->b, tjj_cpu_scratch_at(g, g->slot[arg]), 64,
                                tjj_cpu_scratch_at(g, temps[k]), 64,
                                c_i64(g, numel_of(t) * (int64_t)value_mem_size(t)));
        }

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
    LLVMBuildCondBr(g->b, more, body, exit);

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
