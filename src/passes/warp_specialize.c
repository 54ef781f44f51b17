/* SPDX-License-Identifier: MIT */
/*
 * warp_specialize.c — a producer warpgroup for the TMA copies of a loop
 * (passes.h: tjp_specialize_warps).
 *
 * Without it, every warp runs the whole pipelined loop: thread 0 issues
 * the TMA copies of iteration i + S - 1 between the wgmma of iteration i,
 * and a bar.sync at the top of each iteration tells it that every
 * warpgroup is done with the slot it refills. That barrier puts the
 * warpgroups in lockstep, and the warp that issues copies stalls its own
 * warpgroup's tensor-core work (the top stall in Nsight Compute).
 *
 * With it (Triton's and CUTLASS's warp specialization), the block gets one
 * warpgroup more after the num_warps computing ("consumer") warps. Its
 * first warp runs only what the copies need — their coordinates, slots
 * and the loop around them, all scalars — and issues them; the consumers
 * run everything else and never issue a copy. Each slot has two
 * mbarriers: "full" (the copy's bytes have landed; the consumers wait on
 * it as before) and "empty" (each consumer warp arrives once its wgmma
 * group reading the slot is complete; the producer waits on it before it
 * refills the slot). The per-iteration bar.sync is gone; the one after
 * the loop stays, among consumers only (a named barrier), since the
 * epilogue reuses the rings' bytes — except after a loop nested in
 * another (a persistent kernel's tile loop), whose rings no other bytes
 * share (alloc_shared.c). setmaxnreg moves registers from the
 * producer (which needs few) to the consumers (whose accumulators need
 * many) where the block's registers would not otherwise give them 255.
 *
 * This pass decides and records the plan: which ops each side runs (the
 * producer's: the backward slice of the copies' operands and the loops
 * around them; the loop's waits and commits: nobody), the register
 * budgets, or why not. Code generation executes it (src/jit/gpu/
 * warp_spec.c). It specializes only a plain shape, which is the matmul
 * loop's and attention's: every ring of the kernel is a TMA ring (so no
 * cp.async needs the barrier), each filled in the loop that reads it (and
 * its prologue), the loops inside nothing but loops — a persistent
 * kernel's tile loop, whose next trip the producer starts while the
 * consumers store this one's C: that is why a ring in a nested loop never
 * shares bytes with the epilogue (alloc_shared.c) — a later sibling
 * loop's rings in the families of the first loop's (alloc_shared.c: one
 * set of bytes and mbarriers, whose fills continue from loop to loop),
 * and the slice is scalars computed without memory
 * (the producer holds no tile and reads nothing), and nothing the kernel
 * writes may be what a copy reads (alias.c): the producer's copies are
 * ordered after no write of the consumers.
 */
#include <stdlib.h>

#include "passes.h"

enum {
    PRODUCER_WARPS = 4,     /* a warpgroup: setmaxnreg acts on whole warpgroups */
    REGISTER_FILE = 65536,  /* 32-bit registers per SM (sm_90) */
    MAX_THREAD_REGS = 255,
    PRODUCER_REGS = 40      /* CUTLASS's producer budget */
};

typedef struct slice {
    const tji_func *fn;
    uint8_t *need_value, *need_op;
    int32_t *stack, nstack;
} slice;

static void need_value(slice *s, int32_t v)
{
    if (v > 0 && !s->need_value[v]) {
        s->need_value[v] = 1;
        s->stack[s->nstack++] = v;
    }
}

static const tji_op *yield_of(const tji_func *fn, int32_t region)
{
    const tji_region *r = &fn->regions[region];
    return r->nops ? &fn->ops[r->ops[r->nops - 1]] : NULL;
}

/* Op opi runs in the producer, and so do the loops and branches around it
 * (with their bounds and conditions). */
static void need_op(slice *s, int32_t opi)
{
    const tji_func *fn = s->fn;
    while (opi >= 0 && !s->need_op[opi]) {
        const tji_op *op = &fn->ops[opi];
        s->need_op[opi] = 1;
        if (op->code == TJI_FOR)
            for (int a = 0; a < 3; a++)
                need_value(s, op->args[a]);
        else if (op->code == TJI_IF)
            need_value(s, op->args[0]);
        opi = op->parent >= 0 ? fn->regions[op->parent].parent_op : -1;
    }
}

/* Carried value k of FOR op: its initial value, what the body yields, the
 * block argument and the result are one variable. */
static void need_carried(slice *s, int32_t opi, int k)
{
    const tji_op *op = &s->fn->ops[opi];
    const tji_op *y = yield_of(s->fn, op->region[0]);
    need_op(s, opi);
    need_value(s, op->args[3 + k]);
    need_value(s, s->fn->regions[op->region[0]].args[1 + k]);
    need_value(s, op->result + k);
    if (y && k < y->nargs)
        need_value(s, y->args[k]);
}

static void close_slice(slice *s)
{
    const tji_func *fn = s->fn;
    while (s->nstack) {
        int32_t v = s->stack[--s->nstack];
        const tji_value *val = tji_val(fn, v);
        if (val->def_op < 0) { /* a block argument: a kernel parameter, an iv or a carried value */
            int32_t owner = fn->regions[val->def_region].parent_op;
            const tji_region *r = &fn->regions[val->def_region];
            if (owner < 0)
                continue;
            for (int a = 0; a < r->nargs; a++)
                if (r->args[a] == v) {
                    if (a == 0)
                        need_op(s, owner);
                    else
                        need_carried(s, owner, a - 1);
                }
            continue;
        }
        const tji_op *op = &fn->ops[val->def_op];
        if (op->code == TJI_FOR) {
            need_carried(s, val->def_op, v - op->result);
        } else if (op->code == TJI_IF) {
            need_op(s, val->def_op);
            for (int arm = 0; arm < 2; arm++) {
                const tji_op *y = op->region[arm] >= 0 ? yield_of(fn, op->region[arm]) : NULL;
                if (y && v - op->result < y->nargs)
                    need_value(s, y->args[v - op->result]);
            }
        } else {
            need_op(s, val->def_op);
            for (int a = 0; a < op->nargs; a++)
                need_value(s, op->args[a]);
        }
    }
}

/* May the producer run op (in its slice)? Scalars without memory only
 * (a loop or branch carries only the values the producer needs). */
static int producer_can_run(const tji_func *fn, const tji_op *op)
{
    switch (op->code) {
    case TJI_FOR: case TJI_IF: case TJI_ASYNC_COPY:
        return 1;
    case TJI_CONST: case TJI_PROGRAM_ID: case TJI_NUM_PROGRAMS: case TJI_LOGICAL_PROGRAMS:
    case TJI_ASSUME:
        break;
    default:
        if (!tji_is_pure_elementwise(op))
            return 0;
    }
    return tji_results_scalar(fn, op);
}

/* Is opi inside nothing but loops? */
static int only_loops_around(const tji_func *fn, int32_t opi)
{
    for (int32_t at = fn->regions[fn->ops[opi].parent].parent_op; at >= 0;
         at = fn->regions[fn->ops[at].parent].parent_op)
        if (fn->ops[at].code != TJI_FOR)
            return 0;
    return 1;
}

/* Does region rid read a ring (the body of a pipelined loop)? */
static int reads_rings(const tji_func *fn, int32_t rid)
{
    if (rid < 0)
        return 0;
    for (int32_t k = 0; k < fn->regions[rid].nops; k++)
        if (fn->ops[fn->regions[rid].ops[k]].code == TJI_LOCAL_LOAD)
            return 1;
    return 0;
}

/* The FORs that read the rings, each ring a TMA ring, each loop inside
 * nothing but loops, every copy in the body of one of them or just before
 * one (its prologue), and every ring of a later loop in the family of a
 * ring of the first (alloc_shared.c). The producer starts at once and runs
 * ahead of the consumers, so every ring must be live from the kernel's
 * start, as the first loop's rings and their families are; a later loop's
 * ring of its own is live only from the wait after the loop before, and
 * may share bytes with what the consumers still use. Returns how many
 * loops (the first in *first), 0 with *why where the kernel is not so. */
static int copy_loops(const tji_func *fn, const tjp_layout_plan *plan, int32_t *first, const char **why)
{
    int32_t *loop_of = tjs_xcalloc((size_t)plan->nrings + 1, sizeof *loop_of);
    int nloops = 0;
    *first = -1;
    for (int r = 0; r < plan->nrings; r++)
        loop_of[r] = -1;
    for (int32_t i = 0; i < fn->nops && !*why; i++) {
        const tji_op *op = &fn->ops[i];
        if (op->parent < 0 || (op->code != TJI_ASYNC_COPY && op->code != TJI_LOCAL_LOAD))
            continue;
        if (!plan->rings[op->ring].tma) {
            *why = "a ring of the kernel is filled by cp.async, not TMA";
        } else if (op->code == TJI_LOCAL_LOAD) {
            int32_t owner = fn->regions[op->parent].parent_op;
            if (owner < 0 || fn->ops[owner].code != TJI_FOR)
                *why = "a ring is read outside a loop";
            else if (!only_loops_around(fn, owner))
                *why = "a TMA loop is inside a branch";
            else
                loop_of[op->ring] = owner;
        }
    }
    for (int r = 0; r < plan->nrings && !*why; r++) {
        int seen = 0;
        for (int q = 0; q < r && !seen; q++)
            seen = loop_of[q] == loop_of[r];
        if (loop_of[r] >= 0 && !seen && nloops++ == 0)
            *first = loop_of[r];
        if (loop_of[r] >= 0 && loop_of[plan->rings[r].family] != *first)
            *why = "a later loop's ring is in no family of the first loop's rings (its tile or slots differ): "
                   "a producer would fill it before its bytes are free";
    }
    for (int32_t i = 0; i < fn->nops && !*why; i++) {
        const tji_op *op = &fn->ops[i];
        if (op->parent < 0 || op->code != TJI_ASYNC_COPY)
            continue;
        int32_t loop = loop_of[op->ring];
        if (loop < 0 || (op->parent != fn->ops[loop].region[0] && op->parent != fn->ops[loop].parent))
            *why = "a TMA copy is neither in the loop that reads its ring nor just before it";
    }
    free(loop_of);
    if (!*why && !nloops)
        *why = "no loop has TMA copies (block pointers or tensor descriptors feeding a wgmma dot, "
               "pipelined, on sm_90a)";
    return *why ? 0 : nloops;
}

/* Does the kernel write memory that a TMA copy may read? The producer's
 * copies are ordered after no consumer's write (the unspecialized kernel's
 * barrier before a load that follows a store, barriers.c, has no
 * counterpart across the two sides). */
static int writes_what_copies_read(const tji_func *fn)
{
    tjp_provenance prov;
    tjp_find_provenance(fn, &prov);
    int found = 0;
    for (int32_t w = 0; w < fn->nops && !found; w++) {
        const tji_op *wr = &fn->ops[w];
        if (wr->parent < 0 || !tji_writes_memory(wr))
            continue;
        int unseen = wr->code == TJI_INLINE_ASM; /* its addresses are in the PTX */
        for (int32_t r = 0; r < fn->nops && !found; r++)
            found = fn->ops[r].parent >= 0 && fn->ops[r].code == TJI_ASYNC_COPY &&
                    (unseen || tjp_may_alias(fn, &prov, wr->args[0], fn->ops[r].args[0]));
    }
    tjp_provenance_free(&prov);
    return found;
}

void tjp_warp_spec_free(tjp_warp_spec *ws)
{
    if (!ws)
        return;
    free(ws->role);
    free(ws->producer_value);
    free(ws);
}

/* The registers of each side: none moved where every thread of the
 * bigger block can still have 255. setmaxnreg.inc takes registers only
 * from those the block's other warps gave back: the block keeps what it
 * got at launch (entry_regs per thread), so both sides' budgets together
 * must fit in that, not in the register file — with the file as the
 * bound, 16 consumer warps asked for 112 where 104 fit, and the H200 hung
 * in setmaxnreg.inc. */
static void budget(tjp_warp_spec *ws, int num_warps)
{
    int threads = 32 * (num_warps + PRODUCER_WARPS);
    if (threads * MAX_THREAD_REGS <= REGISTER_FILE)
        return;
    ws->entry_regs = REGISTER_FILE / threads / 8 * 8;
    ws->producer_regs = PRODUCER_REGS;
    int consumer = (ws->entry_regs * threads - 32 * PRODUCER_WARPS * PRODUCER_REGS) / (32 * num_warps) / 8 * 8;
    ws->consumer_regs = consumer > 256 ? 256 : consumer; /* setmaxnreg's range is 24 .. 256 */
}

/* The plan, or NULL with *why. */
static tjp_warp_spec *plan_specialization(const tji_func *fn, const tjp_target *t, const tjp_layout_plan *plan,
                                          const char **why)
{
    if (t->sm != 90 || !t->arch_specific) {
        *why = "warp specialization needs the sm_90a target (TMA and wgmma)";
        return NULL;
    }
    if (t->num_warps < 4 || t->num_warps > 16) {
        /* num_warps is a power of two; with 32 the producer's 4 would pass a block's 32 */
        *why = "warp specialization takes num_warps 4, 8 or 16 (whole consumer warpgroups)";
        return NULL;
    }
    if (!plan->rings || !plan->nrings) {
        *why = "the kernel has no pipelined loop";
        return NULL;
    }
    for (int32_t i = 0; i < fn->nops; i++)
        if (fn->ops[i].parent >= 0 && (fn->ops[i].code == TJI_WHILE || fn->ops[i].code == TJI_BARRIER)) {
            /* the producer would skip a bar.sync the consumers wait at */
            *why = fn->ops[i].code == TJI_WHILE ? "the kernel has a TJ_WHILE loop"
                                                : "the kernel has a tj_debug_barrier";
            return NULL;
        }
    int32_t loop;
    int nloops = copy_loops(fn, plan, &loop, why);
    if (!nloops)
        return NULL;
    if (writes_what_copies_read(fn)) {
        *why = "the kernel writes memory that its TMA copies may read (one buffer for several pointers, "
               "or a pointer both written and copied)";
        return NULL;
    }
    slice s = {fn, tjs_xcalloc((size_t)fn->nvalues + 1, 1), tjs_xcalloc((size_t)fn->nops + 1, 1),
               tjs_xcalloc(4 * (size_t)fn->nvalues + 4, sizeof(int32_t)), 0};
    for (int32_t i = 0; i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        if (op->parent < 0 || op->code != TJI_ASYNC_COPY)
            continue;
        need_op(&s, i);
        for (int a = 1; a < op->nargs; a++) /* not the pointer tile nor the mask: TMA reads the tensor */
            if (a != 2)
                need_value(&s, op->args[a]);
        close_slice(&s);
    }
    for (int32_t i = 0; i < fn->nops && !*why; i++)
        if (s.need_op[i] && fn->ops[i].parent >= 0 && !producer_can_run(fn, &fn->ops[i]))
            *why = "the TMA copies' coordinates come from a tile or from memory";
    if (*why) {
        free(s.need_value);
        free(s.need_op);
        free(s.stack);
        return NULL;
    }
    tjp_warp_spec *ws = tjs_xcalloc(1, sizeof *ws);
    ws->producer_warps = PRODUCER_WARPS;
    ws->loop = loop;
    ws->nloops = nloops;
    ws->producer_value = s.need_value;
    ws->role = tjs_xcalloc((size_t)fn->nops + 1, 1);
    for (int32_t i = 0; i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        if (op->code == TJI_ASYNC_COPY)
            ws->role[i] = TJP_ROLE_PRODUCER;
        else if (op->code == TJI_ASYNC_COMMIT || (op->code == TJI_ASYNC_WAIT && reads_rings(fn, op->parent)))
            ws->role[i] = 0; /* no cp.async; the empty barriers free the slots */
        else if (op->code == TJI_ASYNC_WAIT && fn->regions[op->parent].parent_op >= 0)
            ws->role[i] = 0; /* the end of a loop nested in another: its rings' bytes are no one
                                else's (alloc_shared.c), so no barrier to wait for their readers */
        else
            ws->role[i] = (uint8_t)(TJP_ROLE_CONSUMER | (s.need_op[i] ? TJP_ROLE_PRODUCER : 0));
    }
    budget(ws, t->num_warps);
    free(s.need_op);
    free(s.stack);
    return ws;
}

tj_status tjp_specialize_warps(const tji_func *fn, const tjp_target *t, int mode, tjp_layout_plan *plan)
{
    const char *reason = NULL;
    tjp_warp_spec_free(plan->warp_spec);
    plan->warp_spec = NULL;
    if (mode == TJ_WARP_SPECIALIZE_OFF)
        reason = "turned off by the launch (warp_specialize)";
    else
        plan->warp_spec = plan_specialization(fn, t, plan, &reason);
    plan->why_not_specialized = plan->warp_spec ? NULL : reason;
    if (!plan->warp_spec && mode == TJ_WARP_SPECIALIZE_ON)
        return tji_error_at(fn, -1, TJ_ERR_UNSUPPORTED, "warp specialization was asked for (warp_specialize "
                            "= TJ_WARP_SPECIALIZE_ON) but cannot be done: %s", reason);
    return TJ_OK;
}
