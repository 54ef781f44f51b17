/* SPDX-License-Identifier: MIT */
/*
 * control.c — FOR, IF, WHILE and the regions they hold.
 *
 * FOR and IF are real branches on uniform scalars (every thread takes the
 * same way), with phis per register for carried values, which keep one
 * layout wherever they appear (checked). The barriers that memory order
 * needs across them (a loop body's writes seen by the next trip's reads)
 * are in the plan already (src/passes/barriers.c). A WHILE's header runs
 * its body up to the CONDITION, which branches to the rest or out: its
 * results are the CONDITION's values, whose block dominates the exit.
 *
 * In a warp-specialized kernel (warp_spec.c) each side emits the ops it
 * runs, and the producer's loops carry only the values it computes.
 */
#include "gen.h"

/* --- control flow ------------------------------------------------------------------------------ */


/* Phis (in the current block) for value id's registers, or its scalar. */
static void make_phis(codegen *c, int32_t id)
{
    LLVMTypeRef t = tjj_gpu_value_type(&c->g, type_of(c, id));
    if (rank_of(c, id) == 0) {
        c->ssa[id] = LLVMBuildPhi(c->g.b, t, "");
        return;
    }
    LLVMValueRef *out = tjj_gpu_regs_for(c, id);
    for (int r = 0; r < nregs_of(c, id); r++)
        out[r] = LLVMBuildPhi(c->g.b, t, "");
}

/* phi_of's phis get src's values coming from block `from`. */
static void add_incoming(codegen *c, int32_t phi_of, int32_t src, LLVMBasicBlockRef from)
{
    int n = rank_of(c, phi_of) > 0 ? nregs_of(c, phi_of) : 1;
    for (int r = 0; r < n; r++) {
        LLVMValueRef phi = tjj_gpu_reg(c, phi_of, (uint32_t)r), v = tjj_gpu_reg(c, src, (uint32_t)r);
        LLVMAddIncoming(phi, &v, &from, 1);
    }
}

/* phi_of's phis get undefined values from block `from`: a wgmma
 * accumulator that the first iteration overwrites (wgmma.c). */
static void undefined_incoming(codegen *c, int32_t phi_of, LLVMBasicBlockRef from)
{
    for (int r = 0; r < nregs_of(c, phi_of); r++) {
        LLVMValueRef phi = tjj_gpu_reg(c, phi_of, (uint32_t)r), v = LLVMGetPoison(LLVMTypeOf(phi));
        LLVMAddIncoming(phi, &v, &from, 1);
    }
}

/* Carried values share a layout wherever they appear (the plan's promise). */
static int check_carried(codegen *c, int32_t a, int32_t b)
{
    if (rank_of(c, a) != rank_of(c, b) || (rank_of(c, a) > 0 && !tjp_layout_equal(layout_of(c, a), layout_of(c, b)))) {
        FAIL(c, "internal error: a carried value changes layout (values %d and %d)", (int)a, (int)b);
        return 0;
    }
    return 1;
}

/* Does FOR opi's carried value k enter the loop undefined (a wgmma
 * accumulator whose first step skips its initial value) in this role? */
static int entered_undefined(codegen *c, int32_t opi, int k)
{
    const tji_func *fn = c->g.fn;
    return tjj_gpu_computes(c, fn->regions[fn->ops[opi].region[0]].args[1 + k]) &&
           tjj_gpu_wgmma_skips_init(c, opi, k);
}

void tjj_gpu_emit_for(codegen *c, int32_t opi)
{
    const tji_func *fn = c->g.fn;
    const tji_op *op = &fn->ops[opi];
    const tji_region *region = &fn->regions[op->region[0]];
    LLVMBuilderRef b = c->g.b;
    int ncarried = op->nargs - 3;
    int is_signed = tjs_dtype_is_signed(type_of(c, op->args[0])->dtype);
    LLVMValueRef lo = tjj_gpu_reg(c, op->args[0], 0), hi = tjj_gpu_reg(c, op->args[1], 0), step = tjj_gpu_reg(c, op->args[2], 0);
    LLVMValueRef zero = LLVMConstNull(LLVMTypeOf(lo));
    for (int k = 0; k < ncarried; k++)
        if (!check_carried(c, op->args[3 + k], region->args[1 + k]) ||
            !check_carried(c, op->args[3 + k], op->result + k))
            return;

    /* Enter when the step moves lo toward hi; a zero step runs zero times. */
    LLVMValueRef up = is_signed ? LLVMBuildICmp(b, LLVMIntSGT, step, zero, "") : LLVMBuildICmp(b, LLVMIntNE, step, zero, "");
    LLVMValueRef down = is_signed ? LLVMBuildICmp(b, LLVMIntSLT, step, zero, "") : LLVMConstNull(c->g.ty.t_i1);
    LLVMValueRef enter = LLVMBuildSelect(
        b, up, LLVMBuildICmp(b, is_signed ? LLVMIntSLT : LLVMIntULT, lo, hi, ""),
        LLVMBuildSelect(b, down, LLVMBuildICmp(b, LLVMIntSGT, lo, hi, ""), LLVMConstNull(c->g.ty.t_i1), ""), "");
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(b), body = new_block(c, "for"), exit = new_block(c, "for.end");
    LLVMBuildCondBr(b, enter, body, exit);

    LLVMPositionBuilderAtEnd(b, body);
    int32_t iv_id = region->args[0];
    make_phis(c, iv_id);
    LLVMValueRef iv = c->ssa[iv_id];
    LLVMAddIncoming(iv, &lo, &pre, 1);
    for (int k = 0; k < ncarried; k++) {
        if (!tjj_gpu_computes(c, region->args[1 + k]))
            continue;
        make_phis(c, region->args[1 + k]);
        if (tjj_gpu_wgmma_skips_init(c, opi, k))
            undefined_incoming(c, region->args[1 + k], pre);
        else
            add_incoming(c, region->args[1 + k], op->args[3 + k], pre);
    }

    const tji_op *yield = NULL;
    tjj_gpu_emit_region(c, op->region[0], &yield);
    c->g.cur_op = opi;
    if (c->g.status != TJ_OK)
        return;
    if (!yield || yield->nargs != ncarried) {
        FAIL(c, "internal error: the loop body does not end with a yield of %d values", ncarried);
        return;
    }
    for (int k = 0; k < ncarried; k++)
        if (!check_carried(c, yield->args[k], op->result + k))
            return;

    /* The next iteration; the test cannot overflow whatever the bounds. */
    LLVMValueRef next = LLVMBuildAdd(b, iv, step, "");
    LLVMValueRef left_up = LLVMBuildSub(b, hi, iv, ""), left_down = LLVMBuildSub(b, iv, hi, "");
    LLVMValueRef more = LLVMBuildSelect(b, up, LLVMBuildICmp(b, LLVMIntUGT, left_up, step, ""),
                                        LLVMBuildICmp(b, LLVMIntUGT, left_down, LLVMBuildSub(b, zero, step, ""), ""), "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
    LLVMAddIncoming(iv, &next, &latch, 1);
    for (int k = 0; k < ncarried; k++)
        if (tjj_gpu_computes(c, region->args[1 + k]))
            add_incoming(c, region->args[1 + k], yield->args[k], latch);
    tjj_llvm_loop_unroll(c->g.ctx, LLVMBuildCondBr(b, more, body, exit), op->unroll);

    LLVMPositionBuilderAtEnd(b, exit);
    for (int k = 0; k < ncarried; k++) {
        int32_t res = op->result + k;
        if (!tjj_gpu_computes(c, region->args[1 + k]))
            continue;
        make_phis(c, res);
        if (tjj_gpu_wgmma_skips_init(c, opi, k))
            undefined_incoming(c, res, pre);
        else
            add_incoming(c, res, op->args[3 + k], pre);
        add_incoming(c, res, yield->args[k], latch);
    }
    tjj_gpu_wgmma_after_loop(c, opi);
    tjj_gpu_tma_store_after_loop(c, opi);
    /* An accumulator the loop entered undefined is its initial value where
     * the loop did not run, chosen after the wgmma wait on a branch of its
     * own: a phi at the loop's exit would put the zeros in the
     * accumulator's registers on a path that ptxas takes for part of the
     * pipeline (C7515), and a select a register is an instruction a
     * register on every trip through the loop's exit (128 a thread per
     * tile of a persistent matmul). */
    int any_undefined = 0;
    for (int k = 0; k < ncarried && !any_undefined; k++)
        any_undefined = entered_undefined(c, opi, k);
    if (!any_undefined || c->g.status != TJ_OK)
        return;
    LLVMBasicBlockRef ran = LLVMGetInsertBlock(b), none = new_block(c, "for.none"), joined = new_block(c, "for.acc");
    LLVMBuildCondBr(b, enter, joined, none);
    LLVMPositionBuilderAtEnd(b, none);
    LLVMBuildBr(b, joined);
    LLVMPositionBuilderAtEnd(b, joined);
    for (int k = 0; k < ncarried; k++) {
        if (!entered_undefined(c, opi, k))
            continue;
        LLVMValueRef *regs = tjj_gpu_regs_for(c, op->result + k);
        for (int r = 0; r < nregs_of(c, op->result + k); r++) {
            LLVMValueRef phi = LLVMBuildPhi(b, LLVMTypeOf(regs[r]), "");
            LLVMAddIncoming(phi, (LLVMValueRef[]){regs[r], tjj_gpu_reg(c, op->args[3 + k], (uint32_t)r)},
                            (LLVMBasicBlockRef[]){ran, none}, 2);
            regs[r] = phi;
        }
    }
}

/* One arm of an IF; 0 on failure. */
static int emit_if_arm(codegen *c, int32_t opi, int arm, LLVMBasicBlockRef block, LLVMBasicBlockRef merge,
                       const tji_op **yield, LLVMBasicBlockRef *end)
{
    const tji_op *op = &c->g.fn->ops[opi];
    int n = op->nresults;
    LLVMPositionBuilderAtEnd(c->g.b, block);
    if (op->region[arm] >= 0)
        tjj_gpu_emit_region(c, op->region[arm], yield);
    c->g.cur_op = opi;
    if (c->g.status != TJ_OK)
        return 0;
    if (n > 0 && (!*yield || (*yield)->nargs != n)) {
        FAIL(c, "internal error: a branch does not end with a yield of %d values", n);
        return 0;
    }
    for (int k = 0; k < n; k++)
        if (tjj_gpu_computes(c, op->result + k) && !check_carried(c, (*yield)->args[k], op->result + k))
            return 0;
    *end = LLVMGetInsertBlock(c->g.b);
    LLVMBuildBr(c->g.b, merge);
    return 1;
}

void tjj_gpu_emit_if(codegen *c, int32_t opi)
{
    const tji_func *fn = c->g.fn;
    const tji_op *op = &fn->ops[opi];
    LLVMBuilderRef b = c->g.b;
    int n = op->nresults;
    LLVMBasicBlockRef arms[2] = {new_block(c, "then"), new_block(c, "else")}, ends[2];
    LLVMBasicBlockRef merge = new_block(c, "if.end");
    const tji_op *yields[2] = {NULL, NULL};
    LLVMBuildCondBr(b, tjj_gpu_reg(c, op->args[0], 0), arms[0], arms[1]);
    int ok = emit_if_arm(c, opi, 0, arms[0], merge, &yields[0], &ends[0]);
    ok = ok && emit_if_arm(c, opi, 1, arms[1], merge, &yields[1], &ends[1]);
    if (!ok)
        return;
    LLVMPositionBuilderAtEnd(b, merge);
    for (int k = 0; k < n; k++) {
        if (!tjj_gpu_computes(c, op->result + k))
            continue;
        make_phis(c, op->result + k);
        for (int arm = 0; arm < 2; arm++)
            add_incoming(c, op->result + k, yields[arm]->args[k], ends[arm]);
    }
}

void tjj_gpu_emit_while(codegen *c, int32_t opi)
{
    const tji_func *fn = c->g.fn;
    const tji_op *op = &fn->ops[opi];
    const tji_region *region = &fn->regions[op->region[0]];
    LLVMBuilderRef b = c->g.b;
    int n = op->nargs;
    for (int k = 0; k < n; k++)
        if (!check_carried(c, op->args[k], region->args[k]) || !check_carried(c, op->args[k], op->result + k))
            return;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(b), header = new_block(c, "while"), exit = new_block(c, "while.end");
    LLVMBuildBr(b, header);
    LLVMPositionBuilderAtEnd(b, header);
    for (int k = 0; k < n; k++) {
        if (!tjj_gpu_computes(c, region->args[k]))
            continue;
        make_phis(c, region->args[k]);
        add_incoming(c, region->args[k], op->args[k], pre);
    }
    LLVMBasicBlockRef outer = c->while_exit;
    c->while_exit = exit;
    const tji_op *yield = NULL;
    tjj_gpu_emit_region(c, op->region[0], &yield);
    int emitted = c->while_exit == NULL;
    c->while_exit = outer;
    c->g.cur_op = opi;
    if (c->g.status != TJ_OK)
        return;
    if (!emitted || !yield || yield->nargs != n) {
        FAIL(c, "internal error: the while body has no condition or no yield of %d values", n);
        return;
    }
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
    for (int k = 0; k < n; k++) {
        if (!tjj_gpu_computes(c, region->args[k]))
            continue;
        if (!check_carried(c, yield->args[k], op->result + k))
            return;
        add_incoming(c, region->args[k], yield->args[k], latch);
    }
    LLVMBuildBr(b, header);
    LLVMPositionBuilderAtEnd(b, exit);
}

void tjj_gpu_emit_condition(codegen *c, int32_t opi)
{
    const tji_func *fn = c->g.fn;
    const tji_op *op = &fn->ops[opi];
    const tji_op *loop = &fn->ops[fn->regions[op->parent].parent_op];
    if (!c->while_exit) {
        FAIL(c, "internal error: a condition outside the while it belongs to");
        return;
    }
    for (int k = 0; k < loop->nresults; k++) {
        int32_t r = loop->result + k, v = op->args[1 + k];
        if (!tjj_gpu_computes(c, r))
            continue;
        if (!check_carried(c, v, r))
            return;
        if (rank_of(c, r) == 0) {
            c->ssa[r] = tjj_gpu_reg(c, v, 0);
            continue;
        }
        LLVMValueRef *out = tjj_gpu_regs_for(c, r);
        for (int i = 0; i < nregs_of(c, r); i++)
            out[i] = tjj_gpu_reg(c, v, (uint32_t)i);
    }
    LLVMBasicBlockRef rest = new_block(c, "while.body");
    LLVMBuildCondBr(c->g.b, tjj_gpu_reg(c, op->args[0], 0), rest, c->while_exit);
    LLVMPositionBuilderAtEnd(c->g.b, rest);
    c->while_exit = NULL;
}


void tjj_gpu_emit_region(codegen *c, int32_t rid, const tji_op **yield)
{
    const tji_region *region = &c->g.fn->regions[rid];
    *yield = NULL;
    for (int32_t i = 0; i < region->nops && c->g.status == TJ_OK; i++) {
        const tji_op *op = &c->g.fn->ops[region->ops[i]];
        if (op->code == TJI_YIELD)
            *yield = op;
        else if (tjj_gpu_runs(c, region->ops[i])) {
            tjj_gpu_emit_op(c, region->ops[i]);
            if (c->peer_ssa && c->role == TJP_ROLE_PRODUCER && c->g.plan->pairs->peer_op[region->ops[i]])
                tjj_gpu_emit_peer(c, region->ops[i]);
        }
    }
}
