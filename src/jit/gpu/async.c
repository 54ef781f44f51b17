/* SPDX-License-Identifier: MIT */
/*
 * async.c — the rings of pipelined loads: ASYNC_COPY, ASYNC_COMMIT,
 * ASYNC_WAIT and LOCAL_LOAD (made by src/passes/pipeline_loops.c).
 *
 * A ring lives in the kernel's shared array at the offset alloc_shared.c
 * gave it (plan->rings), slot s at s * slot_bytes, each element at its
 * swizzled index (the ring's one swizzle, chosen for every layout that
 * writes or reads it and identity on the copies' vector bits).
 *
 * A copy moves each vector its layout gives the thread (the coalescing
 * layout of the load it replaced) with cp.async: .cg for 16 bytes (L2
 * only, Triton's choice for a tile that is read once per block), .ca for 4
 * and 8 (and for 16 when the load asked for .ca); the src-size operand is
 * 0 where the mask is off, so the hardware reads nothing there and writes
 * zeros. A vector cp.async cannot take (under 4 bytes, or not consecutive
 * in the ring) goes element by element: zero, then the loaded value where
 * the mask is on, plain shared stores that the next barrier publishes as
 * well as a cp.async group would be.
 *
 * A wait is cp.async.wait_group(n) followed by bar.sync: the wait covers
 * this thread's copies only, the barrier makes every thread's visible and
 * also guarantees that nobody still reads the slot the copies after it
 * refill (the pass puts every LOCAL_LOAD right after the wait). A
 * LOCAL_LOAD reads its registers from the slot, in its own layout, through
 * the same swizzle: with ldmatrix where the plan says so (a dot's operand,
 * ldmatrix.c), else element by element — where the plan says read_at_use,
 * each where its first reader needs it (a dot's mma instructions, or the
 * register operand of a transposed wgmma: its fragments K step by K
 * step, shared.c's deferred reads); a ring that wgmma reads
 * (src/passes/wgmma.c) has no LOCAL_LOAD code at all, and its waits add
 * fence.proxy.async.shared::cta before the barrier: cp.async and plain
 * stores write through the generic proxy, wgmma reads through the async
 * one, and each thread must order its own writes before the barrier
 * tells the warpgroups they are there. In a warp-specialized kernel
 * (warp_spec.c) the producer issues the copies; the consumers run only
 * the waits after loops, as a barrier among themselves.
 */
#include <stdio.h>

#include "gen.h"

/* The plan's ring of the op being emitted; NULL after a failure. */
static const tjp_ring *ring_of(codegen *c, const tji_op *op)
{
    const tjp_layout_plan *p = c->g.plan;
    if (!p->rings || op->ring < 0 || op->ring >= p->nrings || p->rings[op->ring].op < 0) {
        FAIL(c, "internal error: the shared-memory plan has no ring %d", op->ring);
        return NULL;
    }
    return &p->rings[op->ring];
}

/* Element index of the first element of `slot` (an i32) in the ring. */
static LLVMValueRef slot_start(codegen *c, const tjp_ring *R, int32_t slot)
{
    int64_t per_slot = (int64_t)(R->slot_bytes / (uint64_t)R->elem_bytes);
    return LLVMBuildNUWMul(c->g.b, tjj_gpu_reg(c, slot, 0), c_i32(c, per_slot), "");
}

/* A pointer to element `index` (i32) of the ring. */
static LLVMValueRef ring_address(codegen *c, const tjp_ring *R, LLVMValueRef index)
{
    /* No step wraps (the ring lies within shared memory), which lets LLVM
     * fold each constant part into the access's immediate offset. */
    LLVMValueRef bytes = LLVMBuildNUWAdd(c->g.b, c_i64(c, (int64_t)R->offset),
                                         LLVMBuildNUWMul(c->g.b, LLVMBuildZExt(c->g.b, index, c->g.ty.t_i64, ""),
                                                         c_i64(c, R->elem_bytes), ""), "");
    return LLVMBuildInBoundsGEP2(c->g.b, c->g.ty.t_i8, tjj_gpu_shared(c), &bytes, 1, "");
}

/* Elements per cp.async for the copy: the plan's vector, narrowed until
 * its registers land at consecutive indices of the ring (the swizzle's
 * images of register bases 1, 2, 4, ... are 1, 2, 4, ...: the tile's own
 * order, or a ring that stores it transposed) and it is 16 bytes at most;
 * 0 where no cp.async fits (under 4 bytes). */
static int copy_width(codegen *c, const tjp_layout *L, const tjp_ring *R)
{
    int32_t opi = c->g.cur_op;
    int v = c->g.plan->vector && opi < c->g.plan->nops ? c->g.plan->vector[opi] : 1;
    while (v > 1 && (v > (1 << R->vector_bits) || v * R->elem_bytes > 16))
        v /= 2;
    for (int b = 0; (1 << b) < v; b++)
        if (b >= L->nbits[TJP_REG] || tjp_swizzle_apply(&R->swizzle, L->basis[TJP_REG][b]) != 1u << b) {
            v = 1 << b;
            break;
        }
    int bytes = v * R->elem_bytes;
    return bytes == 4 || bytes == 8 || bytes == 16 ? v : 0;
}

/* One element of the copy without cp.async: zero, or the loaded value
 * where the mask is on. */
static void copy_element(codegen *c, const tji_type *et, LLVMValueRef src, LLVMValueRef mask,
                         LLVMValueRef dst)
{
    LLVMTypeRef mem = tjj_gpu_mem_type(&c->g, et);
    LLVMValueRef zero = LLVMBuildStore(c->g.b, LLVMConstNull(mem), dst);
    LLVMSetAlignment(zero, (unsigned)type_bytes(c, mem));
    LLVMBasicBlockRef cont = tjj_llvm_guard_begin(c->g.b, mask, "ring.copy");
    LLVMValueRef ld = LLVMBuildLoad2(c->g.b, mem, src, "");
    LLVMSetAlignment(ld, (unsigned)type_bytes(c, mem));
    LLVMValueRef st = LLVMBuildStore(c->g.b, ld, dst);
    LLVMSetAlignment(st, (unsigned)type_bytes(c, mem));
    tjj_llvm_guard_end(c->g.b, cont);
}

void tjj_gpu_emit_async_copy(codegen *c, const tji_op *op)
{
    const tjp_ring *R = ring_of(c, op);
    int32_t ptr = op->args[0], mask = op->args[2];
    if (R && R->tma && c->role == TJP_ROLE_PRODUCER) {
        tjj_gpu_produce(c, op, R);
        return;
    }
    if (R && R->tma) {
        tjj_gpu_emit_tma_copy(c, op, R);
        return;
    }
    if (!R || (mask && !tjj_gpu_check_same_layout(c, mask, ptr)))
        return;
    tji_type et = *type_of(c, ptr);
    et.is_ptr = 0;
    const tjp_layout *L = layout_of(c, ptr);
    int v = copy_width(c, L, R), bytes = v * R->elem_bytes;
    uint32_t n = (uint32_t)nregs_of(c, ptr), rdup = reg_dup_mask(L), step = v ? (uint32_t)v : 1;
    LLVMValueRef thread = tjj_gpu_swizzled_thread_index(c, &R->swizzle, L);
    LLVMValueRef start = slot_start(c, R, op->args[1]);
    char name[64];
    snprintf(name, sizeof name, "llvm.nvvm.cp.async.%s.shared.global.%d.s",
             bytes == 16 && op->cache != TJ_CACHE_CA ? "cg" : "ca", bytes);
    for (uint32_t r = 0; r < n && c->g.status == TJ_OK; r += step) {
        if (r & rdup)
            continue; /* a copy of an element another register moves */
        LLVMValueRef index = LLVMBuildNUWAdd(c->g.b, tjj_gpu_swizzled_index(c, &R->swizzle, thread, L, r),
                                             start, "");
        LLVMValueRef dst = ring_address(c, R, index), src = tjj_gpu_reg(c, ptr, r);
        LLVMValueRef on = mask ? live_cond(tjj_gpu_reg(c, mask, r)) : NULL;
        if (!v) {
            copy_element(c, &et, src, on, dst);
            continue;
        }
        LLVMValueRef size = on ? LLVMBuildSelect(c->g.b, on, c_i32(c, bytes), c_i32(c, 0), "")
                               : c_i32(c, bytes);
        tjj_gpu_intrinsic(&c->g, name, NULL, 0, (LLVMValueRef[]){dst, src, size}, 3);
    }
}

void tjj_gpu_emit_async_commit(codegen *c)
{
    tjj_gpu_intrinsic(&c->g, "llvm.nvvm.cp.async.commit.group", NULL, 0, NULL, 0);
}

/* Does any ring have wgmma readers (the async proxy)? */
static int rings_read_by_wgmma(const codegen *c)
{
    for (int r = 0; c->g.plan->rings && r < c->g.plan->nrings; r++)
        if (c->g.plan->rings[r].wgmma)
            return 1;
    return 0;
}

void tjj_gpu_emit_async_wait(codegen *c, const tji_op *op)
{
    if (c->role == TJP_ROLE_CONSUMER) { /* a loop's end: no cp.async, only TMA's barriers */
        tjj_gpu_bar_sync(c);
        return;
    }
    LLVMValueRef n = c_i32(c, op->ival);
    tjj_gpu_intrinsic(&c->g, "llvm.nvvm.cp.async.wait.group", NULL, 0, &n, 1);
    if (rings_read_by_wgmma(c)) /* this thread's copies, seen by wgmma's async proxy */
        tjj_gpu_intrinsic(&c->g, "llvm.nvvm.fence.proxy.async.shared_cta", NULL, 0, NULL, 0);
    tjj_gpu_bar_sync(c);
}

void tjj_gpu_emit_local_load(codegen *c, const tji_op *op)
{
    const tjp_ring *R = ring_of(c, op);
    if (R && R->tma)
        tjj_gpu_tma_wait(c, op, R);
    if (!R || R->wgmma) /* wgmma reads the slot itself (wgmma.c) */
        return;
    int32_t id = op->result;
    const tji_type *t = type_of(c, id);
    const tjp_layout *L = layout_of(c, id);
    LLVMTypeRef mem = tjj_gpu_mem_type(&c->g, t);
    uint32_t n = (uint32_t)nregs_of(c, id), rdup = reg_dup_mask(L);
    LLVMValueRef *out = tjj_gpu_regs_for(c, id);
    LLVMValueRef start = slot_start(c, R, op->args[0]);
    if (R->ldmatrix && R->read_at_use) {
        tjj_gpu_defer_ldmatrix_reads(c, id, &R->swizzle, R->ldmatrix, R->ldmatrix_trans, ring_address(c, R, start),
                                     tjj_gpu_value_type(&c->g, t));
        return;
    }
    if (R->read_at_use) {
        tjj_gpu_defer_element_reads(c, id, &R->swizzle, ring_address(c, R, start));
        return;
    }
    if (R->ldmatrix) {
        tjj_gpu_ldmatrix_reads(c, &R->swizzle, R->ldmatrix, R->ldmatrix_trans, ring_address(c, R, start), L,
                               tjj_gpu_value_type(&c->g, t), out);
        return;
    }
    LLVMValueRef thread = tjj_gpu_swizzled_thread_index(c, &R->swizzle, L);
    for (uint32_t r = 0; r < n; r++) {
        if (r & rdup) {
            out[r] = out[r & ~rdup];
            continue;
        }
        LLVMValueRef index = LLVMBuildNUWAdd(c->g.b, tjj_gpu_swizzled_index(c, &R->swizzle, thread, L, r), start, "");
        LLVMValueRef ld = LLVMBuildLoad2(c->g.b, mem, ring_address(c, R, index), "");
        LLVMSetAlignment(ld, (unsigned)type_bytes(c, mem));
        out[r] = tjj_gpu_from_mem(&c->g, ld, t);
    }
}
