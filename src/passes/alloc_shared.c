/* SPDX-License-Identifier: MIT */
/*
 * alloc_shared.c — the kernel's one shared-memory allocation: which bytes of
 * it each step through shared memory uses (passes.h, tjp_alloc_shared).
 *
 * The steps. The swizzle pass found the CONVERTs, REDUCEs and CUMSUMs that
 * go through shared memory; this pass adds the BROADCASTs: an atomic whose
 * old value is read, where copies of an element live in other warps than
 * its owner (a scalar at num_warps > 1, a tile whose layout repeats it over
 * warps), hands the value over through shared memory (GPU code
 * generation's broadcast_scalar and broadcast_from_owners). Every step then
 * gets its buffers: a CONVERT one of the tile's elements, a REDUCE one of
 * parts x result elements of its combine type (argmax/argmin a second of
 * i32 indices), a CUMSUM one of the tile in its compute type (16-bit floats
 * as f32), a BROADCAST one of the value's elements, a TMA_STORE one of the
 * block in the NVMMA layout (its copy engine's reads end inside the op:
 * thread 0 waits for them; in a persistent kernel's tile loop they end
 * before the next trip's store, see Rings, and the buffer may hold two
 * boxes of the block at a time, tma.c); i1 as a byte.
 *
 * Liveness. A buffer is live from its step's first write to its last read,
 * and both happen inside the step's op: the code generator writes, waits
 * at the step's SHARED_READ barrier, reads, and is done before the next
 * op. Buffers of one step are live together; buffers of different ops
 * never are, because the SHARED_WRITE barrier before a step's writes
 * (barriers.c) makes every earlier reader finish first. Each buffer gets
 * the live interval [p, p] of its op's position in emission order (a loop
 * body's ops in order, once), and buffers are placed first-fit in that
 * order, at the lowest offset, aligned to their element size, that no
 * placed buffer with an overlapping interval covers. So today every step
 * starts at byte 0 and the allocation is the largest step; a later pass
 * that keeps buffers alive across ops (software pipelining) only widens
 * their intervals and the same placement keeps them apart.
 *
 * Rings. The pipelined loads' rings (pipeline_loops.c) are planned here too
 * (plan_rings: one swizzle per ring for every layout that writes or reads
 * it) and are buffers live from the wait that ends an earlier loop's
 * rings (ring_start; else the kernel's start) to the wait after their own
 * loop (ring_end), placed first: an
 * epilogue after the loop (the accumulator's conversion for its store)
 * reuses their bytes, as Triton's does, which is what lets a 128x256x64
 * tile take 3 stages, and so do the rings of a later loop (attention's
 * second stage of keys). The wait's barrier orders the last ring reads
 * before those writes. Not so for a ring whose loop runs inside another
 * (a persistent kernel's tile loop): the next trip's prologue copies would
 * overwrite the epilogue's buffer while slower warps still read it (and a
 * producer warpgroup fills them a whole tile ahead), so such a ring is
 * live across the whole outermost loop around it (ring_span). A TMA
 * store's block in a persistent kernel's tile loop is live across that
 * loop too: the engine still reads it while the next tile is computed
 * (tma.c).
 *
 * Ring families. A TMA ring of a loop that follows another in the same
 * region, with the same slots of the same size as one of that loop's TMA
 * rings, joins its family (ring_families): one buffer, live from the first
 * member's start to the last one's end, one set of mbarriers, and in the
 * code one phase word — the later loop's fills continue the earlier's slot
 * by slot. Attention's two stages of keys read K and V so. Without it a
 * producer warpgroup (warp_specialize.c) would start the second loop's
 * copies into bytes the consumers still read in the first, guarded by
 * barriers of their own that nothing ever waited on.
 *
 * The limit. The allocation is the kernel's dynamic shared memory: a launch
 * above 48 KiB opts in (cuFuncSetAttribute) up to the device's maximum.
 * More than any GPU gives a block (TJP_SHARED_MAX) is refused here, naming
 * the op of the largest step — after the blocks staged for TMA stores
 * (tma.c; 1024-byte aligned, live at their store) have been given back to
 * the threads' stores, where dropping them makes the rest fit.
 */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

typedef struct buffer {
    int32_t op;
    int index;            /* argmax/argmin's index buffer */
    uint64_t bytes, align;
    int32_t live_first, live_last;
    uint64_t offset;
} buffer;

/* Bytes of one element of type t in shared memory: i1 as a byte, pointers
 * 8; computed, 16-bit floats as f32 (the swizzle pass's elem_bytes). */
static uint64_t elem_bytes(const tji_type *t, int computed)
{
    if (t->is_ptr)
        return 8;
    int bits = tjs_dtype_bits(t->dtype);
    if (computed && tjs_dtype_is_float(t->dtype) && bits < 32)
        return 4;
    return bits < 8 ? 1 : (uint64_t)bits / 8;
}

/* Warps of num_warps (warp_bits of them) that L repeats an element over. */
static int repeats_over_warps(const tjp_layout *L, int warp_bits)
{
    for (int b = 0; b < warp_bits; b++)
        if (b >= L->nbits[TJP_WARP] || !L->basis[TJP_WARP][b])
            return 1;
    return 0;
}

/* Positions of ops in emission order: region by region, depth first. */
static void number_ops(const tji_func *fn, int32_t rid, int32_t *pos, int32_t *next)
{
    const tji_region *region = &fn->regions[rid];
    for (int32_t i = 0; i < region->nops; i++) {
        const tji_op *op = &fn->ops[region->ops[i]];
        pos[region->ops[i]] = (*next)++;
        for (int k = 0; k < 2; k++)
            if (op->region[k] >= 0)
                number_ops(fn, op->region[k], pos, next);
    }
}

/* The BROADCAST steps of atomics whose old value is read. */
static void add_broadcasts(const tji_func *fn, tjp_layout_plan *plan)
{
    int warp_bits = 0;
    while ((1 << warp_bits) < plan->num_warps)
        warp_bits++;
    int32_t *uses = tjs_xcalloc((size_t)fn->nvalues + 1, sizeof *uses);
    for (int32_t i = 0; i < fn->nops; i++)
        for (int a = 0; a < fn->ops[i].nargs; a++)
            if (fn->ops[i].args[a] > 0 && fn->ops[i].args[a] <= fn->nvalues)
                uses[fn->ops[i].args[a]]++;
    for (int32_t i = 0; i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        if ((op->code != TJI_ATOMIC && op->code != TJI_ATOMIC_CAS) || !uses[op->result])
            continue;
        const tji_type *t = tji_typeof(fn, op->result);
        int across = t->rank == 0 ? plan->num_warps > 1
                                  : repeats_over_warps(&plan->of[op->args[0]], warp_bits);
        if (across && plan->shared[i].kind == TJP_STEP_NONE)
            plan->shared[i].kind = TJP_STEP_BROADCAST;
    }
    free(uses);
}

/* --- the rings of pipelined loads --------------------------------------------- */

static int is_ring_op(const tji_op *op)
{
    return op->parent >= 0 && (op->code == TJI_ASYNC_COPY || op->code == TJI_LOCAL_LOAD);
}

static int log2_of(int64_t v)
{
    int b = 0;
    while ((1ll << (b + 1)) <= v)
        b++;
    return b;
}

/* A ring's slots start at multiples of this: 128 bytes, 1024 for wgmma's
 * NVMMA layout (its XOR pattern repeats every 1024 bytes, and the hardware
 * applies it to the address). */
static uint64_t ring_align(const tjp_ring *R)
{
    return R->wgmma ? 1024 : 128;
}

/* plan->rings: each ring's size and its one swizzle, for every layout
 * that writes or reads it: the NVMMA layout where wgmma reads it
 * (tjp_wgmma_ring; then TMA may fill it, tjp_tma_ring, each such ring
 * reading a tensor map of its own), the 16-byte-row swizzle of ldmatrix
 * reads where the ring feeds an mma dot and that is free of conflicts
 * (tjp_ldmatrix_ring), else one searched for all its layouts, identity on
 * the bits of the smallest copy vector (so cp.async writes stay whole: a
 * swizzle only XORs higher bits into higher bits). */
static void plan_rings(const tji_func *fn, tjp_layout_plan *plan)
{
    free(plan->rings);
    plan->rings = NULL;
    plan->nrings = 0;
    for (int32_t i = 0; i < fn->nops; i++)
        if (is_ring_op(&fn->ops[i]) && fn->ops[i].ring >= plan->nrings)
            plan->nrings = fn->ops[i].ring + 1;
    if (!plan->nrings)
        return;
    plan->rings = tjs_xcalloc((size_t)plan->nrings, sizeof *plan->rings);
    const tjp_layout **layouts = tjs_xcalloc((size_t)fn->nops + 1, sizeof *layouts);
    int *vectors = tjs_xcalloc((size_t)fn->nops + 1, sizeof *vectors), tma_maps = 0;
    for (int ring = 0; ring < plan->nrings; ring++) {
        tjp_ring *R = &plan->rings[ring];
        int n = 0;
        R->op = -1;
        R->vector_bits = 4; /* at most 16 elements */
        for (int32_t i = 0; i < fn->nops; i++) {
            const tji_op *op = &fn->ops[i];
            if (!is_ring_op(op) || op->ring != ring)
                continue;
            int copy = op->code == TJI_ASYNC_COPY;
            int32_t v = copy ? op->args[0] : op->result;
            tji_type t = *tji_typeof(fn, v);
            t.is_ptr = 0;
            if (R->op < 0) {
                R->op = i;
                R->slots = op->ring_slots;
                R->numel = tji_numel(&t);
                R->elem_bytes = (int)elem_bytes(&t, 0);
            }
            layouts[n] = &plan->of[v];
            vectors[n++] = copy && plan->vector ? plan->vector[i] : 1;
            if (copy && log2_of(vectors[n - 1]) < R->vector_bits)
                R->vector_bits = log2_of(vectors[n - 1]);
        }
        if (R->op < 0)
            continue;
        if (!tjp_wgmma_ring(fn, plan, ring, R) && !tjp_ldmatrix_ring(fn, plan, ring, R)) {
            tjp_swizzle_choose_vectors(&R->swizzle, layouts, vectors, n, R->elem_bytes);
            R->read_at_use = tjp_wgmma_register_ring(fn, plan, ring);
        }
        if (tjp_tma_ring(fn, ring, R))
            R->tma_map = tma_maps++;
        R->slot_bytes = ((uint64_t)R->numel * (uint64_t)R->elem_bytes + ring_align(R) - 1) / ring_align(R) *
                        ring_align(R);
    }
    free(layouts);
    free(vectors);
}

/* The TMA stores' tensor maps, in op order after the rings'. */
static void number_store_maps(const tji_func *fn, tjp_layout_plan *plan)
{
    int maps = 0;
    for (int r = 0; r < plan->nrings; r++)
        if (plan->rings[r].op >= 0 && plan->rings[r].tma && plan->rings[r].tma_map + 1 > maps)
            maps = plan->rings[r].tma_map + 1;
    for (int32_t i = 0; i < fn->nops; i++)
        if (plan->shared[i].kind == TJP_STEP_TMA_STORE)
            plan->shared[i].tma_map = maps++;
}

/* Where the blocks staged for TMA stores do not fit beside the rest, the
 * threads store them instead (their STOREs keep the pointers and masks). */
static int drop_tma_stores(const tji_func *fn, tjp_layout_plan *plan)
{
    int dropped = 0;
    for (int32_t i = 0; i < fn->nops; i++)
        if (plan->shared[i].kind == TJP_STEP_TMA_STORE) {
            memset(&plan->shared[i], 0, sizeof plan->shared[i]);
            dropped = 1;
        }
    return dropped;
}

/* The FOR whose body reads ring, -1 where none does. */
static int32_t ring_loop(const tji_func *fn, int ring)
{
    for (int32_t i = 0; i < fn->nops; i++)
        if (fn->ops[i].parent >= 0 && fn->ops[i].code == TJI_LOCAL_LOAD && fn->ops[i].ring == ring) {
            int32_t loop = fn->regions[fn->ops[i].parent].parent_op;
            return loop >= 0 && fn->ops[loop].code == TJI_FOR ? loop : -1;
        }
    return -1;
}

/* Each ring's family (the essay): a TMA ring joins the first earlier
 * family of the same geometry whose rings are read in sibling loops other
 * than its own, one ring per loop. */
static void ring_families(const tji_func *fn, tjp_layout_plan *plan)
{
    int32_t *loop = tjs_xcalloc((size_t)plan->nrings, sizeof *loop);
    for (int r = 0; r < plan->nrings; r++) {
        plan->rings[r].family = r;
        loop[r] = plan->rings[r].op >= 0 && plan->rings[r].tma ? ring_loop(fn, r) : -1;
    }
    for (int b = 0; b < plan->nrings; b++) {
        const tjp_ring *B = &plan->rings[b];
        for (int a = 0; a < b && loop[b] >= 0 && B->family == b; a++) {
            const tjp_ring *A = &plan->rings[a];
            if (A->family != a || loop[a] < 0 || fn->ops[loop[a]].parent != fn->ops[loop[b]].parent ||
                A->slots != B->slots || A->slot_bytes != B->slot_bytes)
                continue;
            int taken = 0;
            for (int m = a; m < b && !taken; m++)
                taken = plan->rings[m].family == a && loop[m] == loop[b];
            if (!taken)
                plan->rings[b].family = a;
        }
    }
    free(loop);
}

/* Where ring stops being live: at the ASYNC_WAIT that follows the loop
 * of its reads (pipeline_loops.c puts one there, and until it the last
 * copies, masked off, still write zeros); the kernel's end where there is
 * none. */
static int32_t ring_end(const tji_func *fn, int ring, const int32_t *pos)
{
    int32_t end = -1;
    for (int32_t i = 0; i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        if (op->parent < 0 || op->code != TJI_LOCAL_LOAD || op->ring != ring)
            continue;
        int32_t loop = fn->regions[op->parent].parent_op;
        if (loop < 0 || fn->ops[loop].code != TJI_FOR)
            return INT32_MAX;
        const tji_region *outer = &fn->regions[fn->ops[loop].parent];
        int32_t k = 0;
        while (k < outer->nops && outer->ops[k] != loop)
            k++;
        if (k + 1 >= outer->nops || fn->ops[outer->ops[k + 1]].code != TJI_ASYNC_WAIT)
            return INT32_MAX;
        if (pos[outer->ops[k + 1]] > end)
            end = pos[outer->ops[k + 1]];
    }
    return end < 0 ? INT32_MAX : end;
}

/* Where ring starts being live: at the wait that ends the last loop of
 * rings before its own first copy (the first of its loop's prologue), else
 * at the kernel's start. Not at that copy itself: nothing orders a copy
 * after the reads of a step before it (a tile converted for the dot ahead
 * of the loop), whereas the wait's barrier orders every read before it. */
static int32_t ring_start(const tji_func *fn, const tjp_layout_plan *plan, int ring, const int32_t *pos)
{
    int32_t first = INT32_MAX, start = 0;
    for (int32_t i = 0; i < fn->nops; i++)
        if (fn->ops[i].parent >= 0 && is_ring_op(&fn->ops[i]) && fn->ops[i].ring == ring && pos[i] < first)
            first = pos[i];
    for (int other = 0; other < plan->nrings; other++) {
        int32_t end = other == ring || plan->rings[other].op < 0 ? INT32_MAX : ring_end(fn, other, pos);
        if (end < first && end + 1 > start)
            start = end + 1; /* just after: the wait's own position is the other ring's */
    }
    return start;
}

/* Ops nested in op's regions, at any depth. */
static int32_t nested_ops(const tji_func *fn, int32_t opi)
{
    int32_t n = 0;
    for (int k = 0; k < 2; k++) {
        int32_t rid = fn->ops[opi].region[k];
        for (int32_t i = 0; rid >= 0 && i < fn->regions[rid].nops; i++)
            n += 1 + nested_ops(fn, fn->regions[rid].ops[i]);
    }
    return n;
}

/* A ring read in a loop inside another loop is live across the outermost
 * one (the liveness essay above): widens [*first, *last]. */
static void ring_span(const tji_func *fn, int ring, const int32_t *pos, int32_t *first, int32_t *last)
{
    for (int32_t i = 0; i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        if (op->parent < 0 || op->code != TJI_LOCAL_LOAD || op->ring != ring)
            continue;
        int32_t loop = fn->regions[op->parent].parent_op, outer = -1;
        for (int32_t at = loop; at >= 0 && fn->ops[at].parent >= 0;) {
            at = fn->regions[fn->ops[at].parent].parent_op;
            if (at >= 0 && (fn->ops[at].code == TJI_FOR || fn->ops[at].code == TJI_WHILE))
                outer = at;
        }
        if (outer < 0)
            continue;
        int32_t end = pos[outer] + nested_ops(fn, outer);
        if (pos[outer] < *first)
            *first = pos[outer];
        if (end > *last)
            *last = end;
    }
}

/* The step's buffers (1 or 2) into out; returns how many. */
static int buffers_of(const tji_func *fn, const tjp_layout_plan *plan, int32_t i, buffer *out)
{
    const tji_op *op = &fn->ops[i];
    const tjp_shared_step *step = &plan->shared[i];
    if (step->kind == TJP_STEP_NONE)
        return 0;
    const tji_type *t = tji_typeof(fn, op->args[0]), *rt = tji_typeof(fn, op->result);
    out[0] = (buffer){.op = i};
    switch (step->kind) {
    case TJP_STEP_CONVERT:
        out[0].align = elem_bytes(t, 0);
        out[0].bytes = (uint64_t)step->use.numel * out[0].align;
        return 1;
    case TJP_STEP_CUMSUM:
        out[0].align = elem_bytes(t, 1);
        out[0].bytes = (uint64_t)step->use.numel * out[0].align;
        return 1;
    case TJP_STEP_REDUCE: {
        uint64_t slots = (uint64_t)step->use.parts * (uint64_t)step->use.numel;
        out[0].align = elem_bytes(t, 1);
        out[0].bytes = slots * out[0].align;
        if (!step->use.has_index)
            return 1;
        out[1] = (buffer){.op = i, .index = 1, .align = 4, .bytes = slots * 4};
        return 2;
    }
    case TJP_STEP_TMA_STORE: /* the NVMMA layout repeats every 1024 bytes */
        out[0].align = 1024;
        out[0].bytes = tjp_tma_store_bytes(step, tji_typeof(fn, op->args[1]));
        return 1;
    case TJP_STEP_BROADCAST:
        out[0].align = elem_bytes(rt, 0);
        out[0].bytes = (uint64_t)tji_numel(rt) * out[0].align;
        return 1;
    default:
        return 0;
    }
}

tj_status tjp_alloc_shared(const tji_func *fn, tjp_layout_plan *plan)
{
    if (!fn || !plan || !plan->shared || plan->nops < fn->nops)
        return tjs_error(TJ_ERR_INVALID_ARG, "tjp_alloc_shared: no program or no swizzle plan");
    add_broadcasts(fn, plan);
    plan_rings(fn, plan);
    number_store_maps(fn, plan);
    int32_t *pos = tjs_xcalloc((size_t)fn->nops + 1, sizeof *pos), next = 0;
    number_ops(fn, 0, pos, &next);
    buffer *bufs = tjs_xcalloc(2 * (size_t)fn->nops + 2 * (size_t)plan->nrings + 1, sizeof *bufs);
    int32_t n = 0, largest = -1;
    uint64_t total = 0, largest_bytes = 0, ring_bytes = 0;
    /* a ring is live from the wait that ends an earlier loop's rings (or
     * the kernel's start) to the wait after its loop, placed first
     * (index = -1 - ring); a family is one buffer, its first ring's */
    ring_families(fn, plan);
    for (int ring = 0; ring < plan->nrings; ring++)
        if (plan->rings[ring].op >= 0 && plan->rings[ring].family == ring) {
            bufs[n] = (buffer){.op = plan->rings[ring].op, .index = -1 - ring,
                               .align = ring_align(&plan->rings[ring]),
                               .bytes = plan->rings[ring].slot_bytes * (uint64_t)plan->rings[ring].slots,
                               .live_first = INT32_MAX, .live_last = -1};
            for (int m = ring; m < plan->nrings; m++) {
                if (plan->rings[m].op < 0 || plan->rings[m].family != ring)
                    continue;
                int32_t first = ring_start(fn, plan, m, pos), last = ring_end(fn, m, pos);
                ring_span(fn, m, pos, &first, &last);
                if (first < bufs[n].live_first)
                    bufs[n].live_first = first;
                if (last > bufs[n].live_last)
                    bufs[n].live_last = last;
            }
            n++;
        }
    /* a TMA ring's mbarriers live for the whole kernel: they are set up
     * once, and each slot's phase runs on across every run of the loop
     * (index = -1 - nrings - ring); per slot a "full" one, and an "empty"
     * one that only a warp-specialized kernel uses (warp_specialize.c
     * runs after this pass) */
    for (int ring = 0; ring < plan->nrings; ring++)
        if (plan->rings[ring].op >= 0 && plan->rings[ring].tma && plan->rings[ring].family == ring)
            bufs[n++] = (buffer){.op = plan->rings[ring].op, .index = -1 - plan->nrings - ring, .align = 8,
                                 .bytes = 16 * (uint64_t)plan->rings[ring].slots, .live_first = 0,
                                 .live_last = INT32_MAX};
    for (int32_t i = 0; i < fn->nops; i++) {
        int k = buffers_of(fn, plan, i, bufs + n);
        int32_t loop = k && plan->shared[i].kind == TJP_STEP_TMA_STORE ? tjp_tma_store_tile_loop(fn, i) : -1;
        for (int j = 0; j < k; j++) {
            bufs[n + j].live_first = loop >= 0 ? pos[loop] : pos[i];
            bufs[n + j].live_last = loop >= 0 ? pos[loop] + nested_ops(fn, loop) : pos[i];
        }
        n += k;
    }
    /* first fit, in emission order (bufs are in op order; sort by position) */
    for (int32_t a = 1; a < n; a++)
        for (int32_t b = a; b > 0 && bufs[b - 1].live_first > bufs[b].live_first; b--) {
            buffer tmp = bufs[b];
            bufs[b] = bufs[b - 1];
            bufs[b - 1] = tmp;
        }
    for (int32_t a = 0; a < n; a++) {
        uint64_t at = 0;
        for (int moved = 1; moved;) {
            moved = 0;
            at = (at + bufs[a].align - 1) / bufs[a].align * bufs[a].align;
            for (int32_t b = 0; b < a; b++)
                if (bufs[b].live_first <= bufs[a].live_last && bufs[a].live_first <= bufs[b].live_last &&
                    bufs[b].offset < at + bufs[a].bytes && at < bufs[b].offset + bufs[b].bytes) {
                    at = bufs[b].offset + bufs[b].bytes;
                    moved = 1;
                }
        }
        bufs[a].offset = at;
        if (bufs[a].index < -plan->nrings) {
            plan->rings[-1 - plan->nrings - bufs[a].index].barriers = at;
            if (at + bufs[a].bytes > total)
                total = at + bufs[a].bytes;
            continue;
        }
        if (bufs[a].index < 0) {
            plan->rings[-1 - bufs[a].index].offset = at;
            ring_bytes += bufs[a].bytes;
            if (at + bufs[a].bytes > total)
                total = at + bufs[a].bytes;
            continue;
        }
        tjp_shared_step *step = &plan->shared[bufs[a].op];
        if (bufs[a].index) {
            step->index_offset = at;
            step->index_bytes = bufs[a].bytes;
        } else {
            step->offset = at;
            step->bytes = bufs[a].bytes;
        }
        uint64_t end = at + bufs[a].bytes, step_end = step->offset + step->bytes;
        if (step->index_bytes && step->index_offset + step->index_bytes > step_end)
            step_end = step->index_offset + step->index_bytes;
        if (end > total)
            total = end;
        if (step_end > largest_bytes) {
            largest_bytes = step_end;
            largest = bufs[a].op;
        }
    }
    for (int ring = 0; ring < plan->nrings; ring++) {
        tjp_ring *R = &plan->rings[ring];
        R->offset = plan->rings[R->family].offset;
        R->barriers = plan->rings[R->family].barriers;
    }
    free(bufs);
    free(pos);
    plan->shared_bytes = total;
    plan->shared_allocated = 1;
    if (total > TJP_SHARED_MAX && drop_tma_stores(fn, plan))
        return tjp_alloc_shared(fn, plan);
    if (total > TJP_SHARED_MAX && ring_bytes)
        return tji_error_at(fn, plan->rings[0].op, TJ_ERR_COMPILE,
                            "needs %llu bytes of shared memory, %llu of them for the rings of "
                            "the pipelined loads (%d slots each); no GPU gives a block more than %d "
                            "(227 KiB): lower num_stages or use a smaller tile",
                            (unsigned long long)total, (unsigned long long)ring_bytes,
                            plan->rings[0].slots, TJP_SHARED_MAX);
    if (total > TJP_SHARED_MAX)
        return tji_error_at(fn, largest, TJ_ERR_COMPILE,
                            "needs %llu bytes of shared memory; no GPU gives a block more than %d "
                            "(227 KiB; use a smaller tile)", (unsigned long long)total, TJP_SHARED_MAX);
    return TJ_OK;
}
