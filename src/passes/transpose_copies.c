/* SPDX-License-Identifier: MIT */
/*
 * transpose_copies.c — copies that store a tile transposed into the ring a
 * K-major-only wgmma reads.
 *
 * Hopper's wgmma reads 32-bit (TF32) operands K-major only: no transposed
 * form exists for them, unlike f16's. A matmul with B stored [K, N]
 * row-major (NN) has B's addresses consecutive along N, so its ring must be
 * filled transposed: element (k, n) of global memory lands in row n, column
 * k of the NVMMA tile. TMA cannot do that; cp.async can, four bytes per
 * element, and whether that is fast is a question of which elements one
 * warp's instruction moves. coalesce.c's layout for the copy puts lanes
 * along N with 16-byte vectors: narrowed to four bytes, one instruction
 * then writes 32 different rows of the K-major tile at one k, which the
 * 128-byte swizzle maps to 8 banks — 4- to 16-way conflicts (that ran tf32
 * NN at 80-88 TFLOP/s on an H200, against mma.sync's 216).
 *
 * The layout given here instead: lanes 0-2 along the contiguous dimension
 * (8 consecutive elements: 32 bytes, one sector) and lanes 3-4 along K
 * (4 rows), so one instruction reads four full sectors of global memory,
 * and in shared memory writes 8 rows (chunk k/4 XOR row % 8: eight
 * different 16-byte chunks) x 4 words of a chunk — 32 different banks,
 * one wavefront. Warps go along the contiguous dimension where it has room,
 * registers take the rest. tests/test_transpose_copies.c counts the
 * wavefronts of every such copy against the ring's NVMMA swizzle.
 *
 * The pass runs between accelerate-dot (which chose wgmma for these dots
 * because the copies can be transposed: tjp_wgmma_transposable) and
 * assign-layouts (which anchors the copies and their pointers at the
 * layouts chosen here). Code generation is unchanged: a copy of vector 1
 * is one 4-byte cp.async per register.
 */
#include "passes.h"

int tjp_wgmma_transposable(const tji_func *fn, int32_t v, int elem_bytes)
{
    int ring = tjp_wgmma_operand_ring(fn, v), copies = 0;
    if (ring < 0 || elem_bytes != 4 || tjp_wgmma_operand_trans(fn, v)) /* cp.async moves 4 bytes at least */
        return 0;
    for (int32_t i = 0; i < fn->nops; i++)
        copies += fn->ops[i].parent >= 0 && fn->ops[i].code == TJI_ASYNC_COPY && fn->ops[i].ring == ring;
    return copies > 0;
}

/* The transposing layout of a copy of tile t whose addresses run along
 * dimension d (the other is K), over num_warps warps. */
static int transposing_layout(const tji_type *t, int d, int num_warps, tjp_layout *out)
{
    int k = 1 - d;
    if (t->shape[d] < 8 || t->shape[k] < 4)
        return 0;
    int32_t per_thread[2] = {1, 1}, lanes[2], warps[2], order[2] = {d, k};
    lanes[d] = 8, lanes[k] = 4;
    warps[d] = t->shape[d] / 8 < num_warps ? t->shape[d] / 8 : num_warps;
    warps[k] = num_warps / warps[d];
    return tjp_layout_blocked(out, 2, t->shape, per_thread, lanes, warps, order);
}

/* Do the lanes of layout L (of a rank-2 tile t) start along dimension k? */
static int lanes_along(const tjp_layout *L, const tji_type *t, int k)
{
    uint32_t first = L->nbits[TJP_LANE] ? L->basis[TJP_LANE][0] : 0;
    return first && (first < (uint32_t)t->shape[1]) == (k == 1);
}

tj_status tjp_transpose_copies(const tji_func *fn, const tjp_layout_plan *plan, int num_warps,
                               tjp_coalesce_result *coalesced)
{
    for (int32_t i = 0; plan->dot && coalesced && i < fn->nops && i < coalesced->nops; i++) {
        const tji_op *dot = &fn->ops[i];
        if (dot->code != TJI_DOT || dot->parent < 0 || plan->dot[i].form != TJP_DOT_WGMMA ||
            !tjp_wgmma_k_major_only(fn, dot))
            continue;
        for (int a = 0; a < 2; a++) {
            int ring = tjp_wgmma_reads_ring(&plan->dot[i], a) ? tjp_wgmma_operand_ring(fn, dot->args[a]) : -1;
            int k_dim = (a == 0) != tjp_wgmma_operand_trans(fn, dot->args[a]) ? 1 : 0; /* in the ring's tile */
            for (int32_t c = 0; ring >= 0 && c < fn->nops && c < coalesced->nops; c++) {
                const tji_op *copy = &fn->ops[c];
                tjp_coalesce_choice *ch = &coalesced->of[c];
                if (copy->parent < 0 || copy->code != TJI_ASYNC_COPY || copy->ring != ring || !ch->chosen)
                    continue;
                const tji_type *t = tji_typeof(fn, copy->args[0]);
                if (t->rank != 2 || lanes_along(&ch->layout, t, k_dim))
                    continue;
                tjp_layout L;
                if (!transposing_layout(t, 1 - k_dim, num_warps, &L))
                    return tjs_error(TJ_ERR_BUILD, "%s:%d: internal error: transpose-copies: kernel '%s', "
                                     "copy (#%d): no layout for a %d x %d tile",
                                     copy->loc.file ? copy->loc.file : "?", copy->loc.line, fn->name, c,
                                     (int)t->shape[0], (int)t->shape[1]);
                ch->layout = L;
                ch->vector = ch->addr_run = 1;
            }
        }
    }
    return TJ_OK;
}
