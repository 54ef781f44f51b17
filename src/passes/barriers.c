/* SPDX-License-Identifier: MIT */
/*
 * barriers.c — where a kernel's bar.sync instructions go (passes.h,
 * tjp_place_barriers): per op, in the plan, which the code generator
 * executes.
 *
 * A barrier (bar.sync 0) waits for every thread of the CTA and makes each
 * thread's earlier memory accesses, global ones included, visible to the
 * others. The pass walks the kernel in the code generator's emission
 * order, keeping what a barrier would settle: the kinds of global writes
 * since the last one (stores, atomics), the loads since the last one, and
 * whether shared memory has been read yet. The rules:
 *
 *   BEFORE a load, after a store or an atomic, so that it sees what another
 *   thread wrote earlier in the program (as in the CPU's program order);
 *   before an atomic after a store. Atomics need none among themselves:
 *   each is one indivisible step on the memory. A store after a load gets
 *   none (a barrier in nearly every kernel): a load and a store of one
 *   element in the same layout are in one thread, and a stored value that
 *   came through a conversion was ordered by its barriers. But a store or
 *   atomic to a pointer that a pending load may read at another element
 *   (alias.c: an in-place reversal or transpose) waits for that load, unless
 *   the load is of the same address expression, in the same layout, each
 *   element held by one thread only (then every element is loaded and
 *   overwritten by one thread, in order).
 *
 *   SHARED_WRITE before a step through shared memory writes its buffer, so
 *   that the readers of an earlier step are done with those bytes (and
 *   alloc_shared.c may reuse them) — unless nothing has read shared memory
 *   yet and no loop can bring an earlier step back. SHARED_READ between the
 *   step's writes and its reads, always.
 *
 * Loops and branches: what a loop body writes, the next trip's reads must
 * see, so the body starts with its own writes and loads pending (and the
 * writes before the loop stay pending after it: it may run zero times). The
 * arms of an IF start from the state before it and the state after is the
 * union of theirs. A WHILE is walked as a FOR (its body's ops before the
 * condition run once more, which adds nothing to what is pending). Every
 * barrier empties the pending writes and loads, tj_debug_barrier's
 * (BARRIER) included: it is one, placed where the user wrote it.
 */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

enum { STORED_PLAIN = 1, STORED_ATOMIC = 2 };

typedef struct order {
    const tji_func *fn;
    tjp_layout_plan *plan;
    tjp_provenance prov;
    int warp_bits;
    int stored;            /* STORED_* since the last barrier */
    int32_t *loads;        /* LOAD ops since the last barrier */
    int32_t nloads;
    uint8_t *is_pending;   /* per op: in loads */
    int smem_read;         /* shared memory has been read */
    int loop_depth;        /* FOR bodies around the op */
} order;

static void barrier(order *s, int32_t opi, int flag)
{
    s->plan->barrier[opi] |= (uint8_t)flag;
    s->stored = 0;
    for (int32_t i = 0; i < s->nloads; i++)
        s->is_pending[s->loads[i]] = 0;
    s->nloads = 0;
}

static void load_pending(order *s, int32_t opi)
{
    if (s->is_pending[opi])
        return;
    s->is_pending[opi] = 1;
    s->loads[s->nloads++] = opi;
}

/* The pending loads, copied (malloc'ed; *n of them), to add back later. */
static int32_t *loads_save(const order *s, int32_t *n)
{
    *n = s->nloads;
    int32_t *copy = tjs_xmalloc(sizeof(int32_t) * ((size_t)s->nloads + 1));
    memcpy(copy, s->loads, sizeof(int32_t) * (size_t)s->nloads);
    return copy;
}

static void loads_restore(order *s, int32_t *saved, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        load_pending(s, saved[i]);
    free(saved);
}

/* The loads of region rid and the regions inside it. */
static void region_loads(order *s, int32_t rid)
{
    const tji_region *region = &s->fn->regions[rid];
    for (int32_t i = 0; i < region->nops; i++) {
        const tji_op *op = &s->fn->ops[region->ops[i]];
        if (op->code == TJI_LOAD)
            load_pending(s, region->ops[i]);
        for (int k = 0; k < 2; k++)
            if (op->region[k] >= 0)
                region_loads(s, op->region[k]);
    }
}

/* The STORED_* kinds of the writes in region rid and the regions inside it. */
static int region_writes(const tji_func *fn, int32_t rid)
{
    const tji_region *region = &fn->regions[rid];
    int kinds = 0;
    for (int32_t i = 0; i < region->nops; i++) {
        const tji_op *op = &fn->ops[region->ops[i]];
        if (op->code == TJI_STORE)
            kinds |= STORED_PLAIN;
        else if (op->code == TJI_ATOMIC || op->code == TJI_ATOMIC_CAS)
            kinds |= STORED_ATOMIC;
        for (int k = 0; k < 2; k++)
            if (op->region[k] >= 0)
                kinds |= region_writes(fn, op->region[k]);
    }
    return kinds;
}

/* Does L hold some element in two threads (zero lane or warp bases, or
 * lanes and warps beyond its own)? */
static int threads_repeat(const order *s, const tjp_layout *L)
{
    for (int level = TJP_LANE; level <= TJP_WARP; level++) {
        int width = level == TJP_LANE ? 5 : s->warp_bits;
        for (int b = 0; b < width; b++)
            if (b >= L->nbits[level] || !L->basis[level][b])
                return 1;
    }
    return 0;
}

static void after_stores(order *s, int32_t opi, int kinds)
{
    if (s->stored & kinds)
        barrier(s, opi, TJP_BARRIER_BEFORE);
}

static void after_loads(order *s, int32_t opi, int32_t ptr)
{
    const tji_func *fn = s->fn;
    for (int32_t i = 0; i < s->nloads; i++) {
        const tji_op *load = &fn->ops[s->loads[i]];
        int32_t lptr = load->args[0];
        if (!tjp_may_alias(fn, &s->prov, lptr, ptr))
            continue;
        if (tji_typeof(fn, ptr)->rank > 0 && tji_typeof(fn, lptr)->rank > 0 && tjp_same_value(fn, lptr, ptr)) {
            const tjp_layout *L = &s->plan->of[load->result];
            if (tjp_layout_equal(L, &s->plan->of[ptr]) && !threads_repeat(s, L))
                continue;
        }
        barrier(s, opi, TJP_BARRIER_BEFORE);
        return;
    }
}

static void shared_step(order *s, int32_t opi)
{
    if (s->smem_read || s->loop_depth)
        barrier(s, opi, TJP_BARRIER_SHARED_WRITE);
    barrier(s, opi, TJP_BARRIER_SHARED_READ);
    s->smem_read = 1;
}

static void walk_region(order *s, int32_t rid);

static void walk_for(order *s, const tji_op *op)
{
    int stored_before = s->stored;
    s->stored |= region_writes(s->fn, op->region[0]);
    int32_t nloads_before, *loads_before = loads_save(s, &nloads_before);
    region_loads(s, op->region[0]);
    s->loop_depth++;
    walk_region(s, op->region[0]);
    s->loop_depth--;
    s->stored |= stored_before; /* the loop may run zero times */
    loads_restore(s, loads_before, nloads_before);
}

static void walk_if(order *s, const tji_op *op)
{
    int stored_before = s->stored;
    int32_t nloads_before, *loads_before = loads_save(s, &nloads_before), nloads_then;
    if (op->region[0] >= 0)
        walk_region(s, op->region[0]);
    int stored_after = s->stored;
    int32_t *loads_then = loads_save(s, &nloads_then);
    s->stored = stored_before; /* the else arm starts where the then arm did */
    for (int32_t i = 0; i < nloads_before; i++)
        load_pending(s, loads_before[i]);
    if (op->region[1] >= 0)
        walk_region(s, op->region[1]);
    stored_after |= s->stored;
    loads_restore(s, loads_then, nloads_then);
    loads_restore(s, loads_before, nloads_before);
    s->stored = stored_after;
}

static void walk_op(order *s, int32_t opi)
{
    const tji_op *op = &s->fn->ops[opi];
    int step = s->plan->shared[opi].kind != TJP_STEP_NONE;
    switch (op->code) {
    case TJI_LOAD:
        after_stores(s, opi, STORED_PLAIN | STORED_ATOMIC);
        load_pending(s, opi);
        return;
    case TJI_STORE:
        after_loads(s, opi, op->args[0]);
        if (step) /* a TMA store: the block staged, then read by the copy engine */
            shared_step(s, opi);
        s->stored |= STORED_PLAIN;
        return;
    case TJI_ATOMIC: case TJI_ATOMIC_CAS:
        after_stores(s, opi, STORED_PLAIN);
        after_loads(s, opi, op->args[0]);
        if (step) /* the old value to the copies in other warps */
            shared_step(s, opi);
        s->stored |= STORED_ATOMIC;
        return;
    case TJI_FOR: case TJI_WHILE: walk_for(s, op); return;
    case TJI_IF: walk_if(s, op); return;
    case TJI_BARRIER: barrier(s, opi, TJP_BARRIER_BEFORE); return;
    default:
        if (step)
            shared_step(s, opi);
        return;
    }
}

static void walk_region(order *s, int32_t rid)
{
    const tji_region *region = &s->fn->regions[rid];
    for (int32_t i = 0; i < region->nops; i++)
        if (s->fn->ops[region->ops[i]].code != TJI_YIELD)
            walk_op(s, region->ops[i]);
}

tj_status tjp_place_barriers(const tji_func *fn, tjp_layout_plan *plan)
{
    if (!fn || !plan || !plan->shared || plan->nops < fn->nops)
        return tjs_error(TJ_ERR_INVALID_ARG, "tjp_place_barriers: no program or no shared-memory plan");
    free(plan->barrier);
    plan->barrier = tjs_xcalloc((size_t)fn->nops + 1, 1);
    order s = {.fn = fn, .plan = plan};
    while ((1 << s.warp_bits) < plan->num_warps)
        s.warp_bits++;
    s.loads = tjs_xmalloc(sizeof(int32_t) * ((size_t)fn->nops + 1));
    s.is_pending = tjs_xcalloc((size_t)fn->nops + 1, 1);
    tjp_find_provenance(fn, &s.prov);
    walk_region(&s, 0);
    tjp_provenance_free(&s.prov);
    free(s.loads);
    free(s.is_pending);
    return TJ_OK;
}
