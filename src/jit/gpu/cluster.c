/* SPDX-License-Identifier: MIT */
/*
 * cluster.c — block pairs: two blocks of a cluster that multicast the
 * tiles both load (src/passes/cluster_pairs.c planned which copies may,
 * and from what the producer tells).
 *
 * The kernel is declared with clusters of 2 (nvvm.cluster_dim, kernel.c),
 * so blocks 2c and 2c + 1 run together, each with its rank in the
 * cluster; the peer is rank ^ 1. This file emits what the pair adds:
 *
 *  - the start: both blocks' mbarriers are set up before either block's
 *    copies or releases reach the other (barrier.cluster, all threads);
 *  - the peer's values: the producer evaluates each of the plan's peer
 *    ops twice where the tile body has it, the second time with the
 *    peer's operands (the tile index xor 1 at the bottom), so they are
 *    computed once a tile, in the block that dominates every copy;
 *  - the producer's test at each copy: the copy's roots against the
 *    peer's;
 *  - a consumer warp's release of a slot in the peer block too
 *    (mapa, mbarrier.arrive on the peer's barrier): each "empty" barrier
 *    counts both blocks' consumer warps, so neither producer refills a
 *    slot that the other block still reads. The arrive keeps the default
 *    semantics (release at the block's scope), as CUTLASS's cluster
 *    pipelines do: what it orders are wgmma's reads of the slot, done by
 *    wgmma.wait_group before it, and the peer's TMA writes after it.
 *    `.release.cluster` there cost a memory barrier a release: on an H100
 *    (RESULTS.md, 2026-12-07) the paired kernel's warps spent 61% of
 *    their cycles stalled on it, 469 us against 177 alone;
 *  - the producer's end: it waits until both blocks have released every
 *    slot, so that no release of the peer's arrives in a block that
 *    has exited.
 *
 * The copies themselves (halved, multicast or not) are tma.c's.
 */
#include <stdlib.h>

#include "gen.h"

enum { MOST_ARGS = 3 }; /* of a peer op: an element-wise scalar (where: 3) */

void tjj_gpu_cluster_setup(codegen *c)
{
    LLVMValueRef rank = tjj_gpu_ptx(c, c->g.ty.t_i32, "mov.u32 $0, %cluster_ctarank;", "=r", NULL, 0);
    c->cluster_rank = rank;
    c->peer_ssa = tjs_xcalloc((size_t)c->g.fn->nvalues + 1, sizeof *c->peer_ssa);
    c->peer_rank = LLVMBuildXor(c->g.b, rank, c_i32(c, 1), "peer");
    tjj_gpu_ptx(c, c->g.ty.t_void, "barrier.cluster.arrive.release.aligned;", "", NULL, 0);
    tjj_gpu_ptx(c, c->g.ty.t_void, "barrier.cluster.wait.acquire.aligned;", "", NULL, 0);
}

/* The peer's value of v (the tile index's: xor 1), or NULL where v does
 * not depend on the tile. */
static LLVMValueRef peer_value(codegen *c, int32_t v)
{
    const tjp_pairs *p = c->g.plan->pairs;
    if (v == p->tile)
        return LLVMBuildXor(c->g.b, c->ssa[v], LLVMConstInt(LLVMTypeOf(c->ssa[v]), 1, 0), "peer.tile");
    return v > 0 ? c->peer_ssa[v] : NULL;
}

void tjj_gpu_emit_peer(codegen *c, int32_t opi)
{
    const tji_op *op = &c->g.fn->ops[opi];
    LLVMValueRef own[MOST_ARGS], own_result = c->ssa[op->result];
    int n = op->nargs;
    if (n > MOST_ARGS) {
        FAIL(c, "internal error: peer op %d has %d operands", (int)opi, n);
        return;
    }
    for (int a = 0; a < n; a++) {
        own[a] = c->ssa[op->args[a]];
        LLVMValueRef peer = peer_value(c, op->args[a]);
        if (peer)
            c->ssa[op->args[a]] = peer;
    }
    tjj_gpu_emit_op(c, opi);
    c->peer_ssa[op->result] = c->ssa[op->result];
    for (int a = n - 1; a >= 0; a--) /* backwards: an operand read twice gets its own value back */
        c->ssa[op->args[a]] = own[a];
    c->ssa[op->result] = own_result;
}

LLVMValueRef tjj_gpu_peer_same(codegen *c, int32_t copy)
{
    const tjp_pairs *p = c->g.plan->pairs;
    LLVMValueRef same = LLVMConstInt(c->g.ty.t_i1, 1, 0);
    for (int k = p->root_first[copy]; k < p->root_first[copy + 1]; k++) {
        LLVMValueRef peer = peer_value(c, p->roots[k]);
        if (!peer) {
            FAIL(c, "internal error: root %%%d of a copy has no peer value", (int)p->roots[k]);
            return same;
        }
        same = LLVMBuildAnd(c->g.b, same, LLVMBuildICmp(c->g.b, LLVMIntEQ, tjj_gpu_reg(c, p->roots[k], 0), peer, ""),
                            "");
    }
    return same;
}

void tjj_gpu_release_in_peer(codegen *c, LLVMValueRef bar, LLVMValueRef on)
{
    tjj_gpu_ptx(c, c->g.ty.t_void,
                "{ .reg .pred p; .reg .b32 remote; setp.ne.b32 p, $1, 0; "
                "mapa.shared::cluster.u32 remote, $0, $2; "
                "@p mbarrier.arrive.shared::cluster.b64 _, [remote]; }",
                "r,r,r", (LLVMValueRef[]){bar, on, c->peer_rank}, 3);
}

void tjj_gpu_producer_tail(codegen *c)
{
    const tjp_layout_plan *plan = c->g.plan;
    for (int r = 0; r < plan->nrings; r++) {
        const tjp_ring *R = &plan->rings[r];
        if (R->op < 0 || !R->tma || R->family != r)
            continue;
        for (int s = 0; s < R->slots; s++) {
            LLVMValueRef slot = c_i32(c, s);
            tjj_gpu_mbarrier_wait(c, tjj_gpu_tma_empty_barrier(c, R, slot),
                                  tjj_gpu_next_parity(c, c->empty_phase[r], slot));
        }
    }
}
