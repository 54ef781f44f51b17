/* SPDX-License-Identifier: MIT */
/*
 * warp_spec.c — a warp-specialized kernel: the plan's producer warpgroup
 * issues the TMA copies, the num_warps consumer warps do the rest
 * (src/passes/warp_specialize.c decided which op runs where).
 *
 * The body is emitted twice, behind one branch on the warp:
 *
 *   warps num_warps ..      setmaxnreg.dec; the first of them runs the
 *   (the producer)          ops of role PRODUCER — scalars, loops, the
 *                           copies — and the others leave at once
 *   warps 0 .. num_warps-1  setmaxnreg.inc; every op of role CONSUMER
 *   (the consumers)
 *
 * A copy of the producer waits on its slot's "empty" mbarrier (the
 * parity of its previous fill of that slot; a fresh barrier passes
 * parity 1 at once, so the first fill of each slot does not wait) and then
 * lane 0 issues it as tma.c always did, onto the slot's "full" barrier.
 * A copy of an iteration that does not exist is neither waited for nor
 * issued, so the producer's fills and the consumers' reads of each slot
 * stay in step.
 *
 * The consumers wait on "full" as before. Each consumer warp's lane 0
 * arrives on "empty" once every wgmma that read the slot has completed
 * (where several dots read it, the last of them arrives: wgmma.c): at
 * once after a wait for 0 groups, or, where the wgmma's group stays in
 * flight across iterations, at the next wait (which completes it) — the
 * slot still unreleased is kept per ring in an alloca (registers after
 * mem2reg), and the wait after the loop releases the last one. The
 * barriers among consumers are named barrier 1 with their thread count:
 * bar.sync 0 would wait for the producer warps, which never come.
 */
#include <stdio.h>

#include "gen.h"

static const tjp_warp_spec *spec_of(const codegen *c) { return c->g.plan->warp_spec; }

int tjj_gpu_runs(const codegen *c, int32_t opi)
{
    return !c->role || (spec_of(c)->role[opi] & c->role);
}

int tjj_gpu_computes(const codegen *c, int32_t id)
{
    return c->role != TJP_ROLE_PRODUCER || spec_of(c)->producer_value[id];
}

void tjj_gpu_bar_sync(codegen *c)
{
    if (c->role == TJP_ROLE_CONSUMER) {
        tjj_gpu_intrinsic(&c->g, "llvm.nvvm.barrier.cta.sync.aligned.count", NULL, 0,
                          (LLVMValueRef[]){c_i32(c, 1), c_i32(c, 32 * c->num_warps)}, 2);
        return;
    }
    tjj_gpu_intrinsic(&c->g, "llvm.nvvm.barrier.cta.sync.aligned.all", NULL, 0, (LLVMValueRef[]){c_i32(c, 0)}, 1);
}

void tjj_gpu_warp_spec_setup(codegen *c)
{
    /* all ones: each slot's first fill waits for parity 1, which a fresh
     * barrier has already completed */
    c->empty_phase = tjj_gpu_ring_words(c, -1, "empty.phase");
    c->unreleased = tjj_gpu_ring_words(c, -1, "unreleased");
}

static void set_regs(codegen *c, const char *dir, int regs)
{
    if (!regs)
        return;
    char text[64];
    snprintf(text, sizeof text, "setmaxnreg.%s.sync.aligned.u32 %d;", dir, regs);
    tjj_gpu_ptx(c, c->g.ty.t_void, text, "", NULL, 0);
}

void tjj_gpu_emit_specialized(codegen *c)
{
    const tjp_warp_spec *ws = spec_of(c);
    const tji_func *fn = c->g.fn;
    LLVMBuilderRef b = c->g.b;
    LLVMBasicBlockRef producer = new_block(c, "producer"), issuer = new_block(c, "producer.issue"),
                      done = new_block(c, "producer.done"), consumer = new_block(c, "consumer");
    LLVMValueRef num_warps = c_i32(c, c->num_warps);
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntUGE, c->warp, num_warps, ""), producer, consumer);

    LLVMPositionBuilderAtEnd(b, producer);
    set_regs(c, "dec", ws->producer_regs);
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, c->warp, num_warps, ""), issuer, done);
    LLVMPositionBuilderAtEnd(b, issuer);
    c->role = TJP_ROLE_PRODUCER;
    const tji_op *yield = NULL;
    tjj_gpu_emit_region(c, 0, &yield);
    if (c->g.status != TJ_OK)
        return;
    if (c->g.plan->pairs)
        tjj_gpu_producer_tail(c);
    LLVMBuildBr(b, done);
    LLVMPositionBuilderAtEnd(b, done);
    LLVMBuildRetVoid(b);

    /* the producer's values belong to its blocks: the consumers compute
     * their own (the kernel's parameters, in the entry block, are shared) */
    for (int32_t id = 1; id <= fn->nvalues; id++)
        if (ws->producer_value[id] && (tji_val(fn, id)->def_op >= 0 || tji_val(fn, id)->def_region != 0))
            c->ssa[id] = NULL;

    LLVMPositionBuilderAtEnd(b, consumer);
    set_regs(c, "inc", ws->consumer_regs);
    c->role = TJP_ROLE_CONSUMER;
    tjj_gpu_emit_region(c, 0, &yield);
}

void tjj_gpu_produce(codegen *c, const tji_op *op, const tjp_ring *R)
{
    LLVMBuilderRef b = c->g.b;
    LLVMValueRef exists = tjj_gpu_tma_exists(c, op), slot = tjj_gpu_reg(c, op->args[1], 0);
    LLVMBasicBlockRef cont = exists ? tjj_llvm_guard_begin(b, exists, "produce") : NULL;
    int ring = (int)(R - c->g.plan->rings);
    tjj_gpu_mbarrier_wait(c, tjj_gpu_tma_empty_barrier(c, R, slot), tjj_gpu_next_parity(c, c->empty_phase[ring], slot));
    const tjp_pairs *pairs = c->g.plan->pairs;
    LLVMValueRef shared = pairs && pairs->multicast[ring] ? tjj_gpu_peer_same(c, (int32_t)(op - c->g.fn->ops)) : NULL;
    tjj_gpu_issue_tma_copy(c, op, R, LLVMBuildICmp(b, LLVMIntEQ, c->lane, c_i32(c, 0), ""), shared);
    if (cont)
        tjj_llvm_guard_end(b, cont);
}

/* Lane 0 of each consumer warp arrives on slot's empty barrier where on (i1). */
static void release(codegen *c, const tjp_ring *R, LLVMValueRef slot, LLVMValueRef on)
{
    LLVMBuilderRef b = c->g.b;
    LLVMValueRef go = LLVMBuildAnd(b, on, LLVMBuildICmp(b, LLVMIntEQ, c->lane, c_i32(c, 0), ""), "");
    LLVMValueRef bar = tjj_gpu_tma_empty_barrier(c, R, slot), on32 = LLVMBuildZExt(b, go, c->g.ty.t_i32, "");
    tjj_gpu_ptx(c, c->g.ty.t_void,
                "{ .reg .pred p; setp.ne.b32 p, $1, 0; @p mbarrier.arrive.shared::cta.b64 _, [$0]; }", "r,r",
                (LLVMValueRef[]){bar, on32}, 2);
    if (c->g.plan->pairs) /* the peer's producer writes this slot of ours too */
        tjj_gpu_release_in_peer(c, bar, on32);
}

/* The slot still unreleased, released (where there is one). */
static void release_unreleased(codegen *c, const tjp_ring *R, LLVMValueRef at)
{
    LLVMBuilderRef b = c->g.b;
    LLVMValueRef prev = LLVMBuildLoad2(b, c->g.ty.t_i32, at, "");
    LLVMValueRef some = LLVMBuildICmp(b, LLVMIntSGE, prev, c_i32(c, 0), "");
    release(c, R, LLVMBuildSelect(b, some, prev, c_i32(c, 0), ""), some);
}

void tjj_gpu_release_after_wait(codegen *c, const tjp_ring *R, LLVMValueRef slot, int async)
{
    if (c->role != TJP_ROLE_CONSUMER || !R->tma)
        return;
    if (!async) {
        release(c, R, slot, LLVMConstInt(c->g.ty.t_i1, 1, 0));
        return;
    }
    LLVMValueRef at = c->unreleased[R - c->g.plan->rings];
    release_unreleased(c, R, at);
    LLVMBuildStore(c->g.b, slot, at);
}

void tjj_gpu_release_pending(codegen *c, const tjp_ring *R)
{
    if (c->role != TJP_ROLE_CONSUMER || !R->tma)
        return;
    LLVMValueRef at = c->unreleased[R - c->g.plan->rings];
    release_unreleased(c, R, at);
    LLVMBuildStore(c->g.b, c_i32(c, -1), at);
}
