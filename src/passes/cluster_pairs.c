/* SPDX-License-Identifier: MIT */
/*
 * cluster_pairs.c — two blocks of a cluster that share what both load
 * (passes.h: tjp_pair_ctas).
 *
 * A persistent matmul's resident blocks each walk their tiles and copy
 * their operands' tiles from L2: at 4096^3 in bf16, 132 blocks each pull
 * a 128x64 tile of A and a 64x256 tile of B per K step, and the copies'
 * waits, not the tensor cores, bound the kernel (Nsight Compute, RESULTS.md,
 * 2026-12-06: tjit's consumers wait for TMA data twice as long as cuBLAS's).
 * In the grouped order two neighbouring tiles mostly read the same B tile,
 * so cuBLAS runs its blocks as clusters of two (Hopper's thread-block
 * clusters) and TMA's multicast writes one copy into both blocks' shared
 * memory: each block issues half of the shared tile, and both receive the
 * whole, at half the L2 traffic for that operand.
 *
 * tjit does the same to a persistent, warp-specialized kernel. Its blocks
 * 2c and 2c + 1 are one cluster; block b walks tiles b, b + P, ... with P
 * even, so the pair's tiles are t and t ^ 1, and a pair walks equally many
 * where the tile count is even (the launch asks for pairs only then).
 * Which operand the two tiles share is the kernel's own arithmetic — the
 * grouped order shares B, a group that ends between the two tiles shares
 * nothing, another order may share A — so the producer decides at each
 * copy, at run time, from values it can compute for both blocks: the
 * copy's *roots*, the tile body's values that its coordinates come from
 * and that depend on the tile. Its own are at hand; the peer's are the
 * same scalar ops evaluated again with the tile index xor 1 (peer_op). A
 * copy whose roots equal the peer's reads the same box: its block issues
 * half of the boxes with .multicast::cluster; any other issues all of its
 * own. Both blocks see the same comparison, so they decide alike. A root
 * lies outside the loop that copies: inside, the coordinates move by
 * steps that do not depend on the tile (a carried offset starts from a
 * root and grows by a constant), so equal roots mean equal coordinates
 * at every iteration.
 *
 * The blocks must also fill and read their rings in lockstep, since a
 * block's copy now writes the peer's slot too: each slot's "empty"
 * mbarrier counts the consumer warps of both blocks (each releases its
 * slot in both), so a producer refills a slot only once both blocks have
 * read it. That holds only where the two blocks run the same copies: so
 * the loops around the copies, each copy's slot and whether its
 * iteration exists, may not depend on the tile. The code generator
 * (src/jit/gpu/warp_spec.c, tma.c) executes this plan.
 *
 * Where: warp-specialized persistent kernels (a tile loop from
 * persistent.c) on sm_90a whose copies lie in the tile loop's body or in
 * a loop directly inside it, whose peer values are scalar arithmetic, and
 * whose launch has an even tile count; forced off or required by the
 * launch (tj_launch_cfg.cluster).
 */
#include <stdlib.h>

#include "passes.h"

enum { PAIR = 2, SWIZZLE_ATOM_BYTES = 1024 };

void tjp_pairs_free(tjp_pairs *p)
{
    if (!p)
        return;
    free(p->peer_op);
    free(p->root_first);
    free(p->roots);
    free(p->multicast);
    free(p);
}

void tjp_pair_boxes(const tjp_ring *R, const tji_type *tile, int paired, uint32_t box[2], int *ncols,
                    int *splits)
{
    tjp_tma_box(R, tile, box, ncols);
    *splits = 1;
    if (paired && *ncols % PAIR) {
        box[1 - R->tma_contiguous] /= PAIR;
        *splits = PAIR;
    }
}

/* Can ring R's copy of tile t be halved: an even number of column
 * blocks, or rows that halve into whole swizzle atoms (TMA's swizzle
 * follows the address bits, so a half must start on an atom). */
static int can_halve(const tjp_ring *R, const tji_type *t)
{
    uint32_t box[2];
    int ncols;
    tjp_tma_box(R, t, box, &ncols);
    if (ncols % PAIR == 0)
        return 1;
    uint64_t half = (uint64_t)box[1 - R->tma_contiguous] / PAIR * box[R->tma_contiguous] * R->elem_bytes;
    return box[1 - R->tma_contiguous] % PAIR == 0 && half % SWIZZLE_ATOM_BYTES == 0;
}

static const tji_op *yield_of(const tji_func *fn, int32_t region)
{
    const tji_region *r = &fn->regions[region];
    return r->nops ? &fn->ops[r->ops[r->nops - 1]] : NULL;
}

static int set(uint8_t *flags, int32_t v)
{
    if (v <= 0 || flags[v])
        return 0;
    flags[v] = 1;
    return 1;
}

/* Marks (dep, per value id) every value that depends on the tile index:
 * forward, to a fixed point (carried values close cycles). Loops are FOR
 * alone: warp specialization, which pairs need, refuses a TJ_WHILE. */
static void find_dependence(const tji_func *fn, int32_t tile, uint8_t *dep)
{
    dep[tile] = 1;
    for (int changed = 1; changed;) {
        changed = 0;
        for (int32_t i = 0; i < fn->nops; i++) {
            const tji_op *op = &fn->ops[i];
            if (op->parent < 0)
                continue;
            int any = 0;
            for (int a = 0; a < op->nargs && !any; a++)
                any = op->args[a] > 0 && dep[op->args[a]];
            if (op->code == TJI_FOR) {
                const tji_region *body = &fn->regions[op->region[0]];
                const tji_op *y = yield_of(fn, op->region[0]);
                int bounds = dep[op->args[0]] || dep[op->args[1]] || dep[op->args[2]];
                if (bounds)
                    changed |= set(dep, body->args[0]);
                for (int k = 0; k < op->nresults; k++) {
                    int carried = dep[op->args[3 + k]] || (y && k < y->nargs && dep[y->args[k]]);
                    if (carried)
                        changed |= set(dep, body->args[1 + k]);
                    if (carried || bounds)
                        changed |= set(dep, op->result + k);
                }
                continue;
            }
            if (op->code == TJI_IF) {
                for (int arm = 0; arm < 2; arm++) {
                    const tji_op *y = op->region[arm] >= 0 ? yield_of(fn, op->region[arm]) : NULL;
                    for (int k = 0; y && k < y->nargs && k < op->nresults; k++)
                        if (dep[y->args[k]])
                            changed |= set(dep, op->result + k);
                }
            }
            for (int r = 0; any && r < op->nresults; r++)
                changed |= set(dep, op->result + r);
        }
    }
}

/* May the code generator evaluate op again for the peer: an element-wise
 * scalar, without memory or regions (a constant never depends on the tile). */
static int peer_can_run(const tji_func *fn, const tji_op *op)
{
    return tji_is_pure_elementwise(op) && tji_results_scalar(fn, op);
}

typedef struct walk {
    const tji_func *fn;
    const uint8_t *dep;
    int32_t body;          /* the tile loop's body region */
    uint8_t *seen;         /* per value id, for one copy */
    int32_t *roots;
    int nroots, cap;
    const char *why;
} walk;

static void add_root(walk *w, int32_t v)
{
    if (w->nroots == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 16;
        w->roots = tjs_xrealloc(w->roots, (size_t)w->cap * sizeof *w->roots);
    }
    w->roots[w->nroots++] = v;
}

/* Copy-side walk from v (a value its coordinates read) to the tile body:
 * inside the loop that copies, through its ops and carried values; a
 * tile-body value that depends on the tile is a root. */
static void walk_to_roots(walk *w, int32_t v)
{
    const tji_func *fn = w->fn;
    if (v <= 0 || !w->dep[v] || w->seen[v] || w->why)
        return;
    w->seen[v] = 1;
    const tji_value *val = tji_val(fn, v);
    if (val->def_region == w->body || (val->def_op >= 0 && fn->ops[val->def_op].parent == w->body)) {
        add_root(w, v);
        return;
    }
    if (val->def_op < 0) { /* a block argument of the copying loop: a carried value */
        int32_t owner = fn->regions[val->def_region].parent_op;
        const tji_region *r = &fn->regions[val->def_region];
        const tji_op *loop = &fn->ops[owner];
        for (int a = 1; a < r->nargs; a++)
            if (r->args[a] == v) {
                const tji_op *y = yield_of(fn, loop->region[0]);
                walk_to_roots(w, loop->args[3 + a - 1]);
                if (y && a - 1 < y->nargs)
                    walk_to_roots(w, y->args[a - 1]);
            }
        return;
    }
    const tji_op *op = &fn->ops[val->def_op];
    if (!peer_can_run(fn, op)) {
        w->why = "a copy's coordinates depend on the tile through a loop, a branch or memory";
        return;
    }
    for (int a = 0; a < op->nargs; a++)
        walk_to_roots(w, op->args[a]);
}

/* The tile-body ops that compute root v from the tile, marked peer_op. */
static void mark_peer_ops(const tji_func *fn, const uint8_t *dep, int32_t tile, int32_t v, uint8_t *peer_op,
                          const char **why)
{
    if (v <= 0 || !dep[v] || v == tile || *why)
        return;
    int32_t d = tji_val(fn, v)->def_op;
    if (d < 0 || !peer_can_run(fn, &fn->ops[d])) {
        *why = "a copy's coordinates depend on the tile through a loop, a branch or memory";
        return;
    }
    if (peer_op[d])
        return;
    peer_op[d] = 1;
    for (int a = 0; a < fn->ops[d].nargs; a++)
        mark_peer_ops(fn, dep, tile, fn->ops[d].args[a], peer_op, why);
}

/* Is copy op (of the tile body, or of a FOR directly in it) run alike by
 * both blocks: its loop's bounds, its slot and its existence free of the
 * tile? */
static const char *lockstep(const tji_func *fn, const uint8_t *dep, int32_t body, const tji_op *op)
{
    if (op->parent != body) {
        int32_t loop = fn->regions[op->parent].parent_op;
        const tji_op *l = loop >= 0 ? &fn->ops[loop] : NULL;
        if (!l || l->code != TJI_FOR || l->parent != body)
            return "a copy lies deeper than a loop inside the tile loop";
        if (dep[l->args[0]] || dep[l->args[1]] || dep[l->args[2]])
            return "the trips of a loop that copies depend on the tile";
    }
    if (dep[op->args[1]])
        return "a copy's slot depends on the tile";
    if (dep[op->args[TJI_TMA_FIRST + 3 * op->tma_rank + 1]])
        return "whether a copy runs depends on the tile";
    return NULL;
}

static tjp_pairs *plan_pairs(const tji_func *fn, const tjp_target *t, const tjp_layout_plan *plan,
                             const char **why)
{
    int32_t loop = tjp_tile_loop(fn);
    if (!t->arch_specific || t->sm != 90) {
        *why = "block pairs need the sm_90a target (clusters, TMA multicast)";
        return NULL;
    }
    if (!plan->warp_spec) {
        *why = "the kernel is not warp-specialized (a producer warpgroup issues the shared copies)";
        return NULL;
    }
    if (loop < 0) {
        *why = "the kernel is not persistent (a pair walks its tiles together)";
        return NULL;
    }
    for (int32_t i = 0; i < fn->nops; i++)
        if (fn->ops[i].parent >= 0 && fn->ops[i].code == TJI_STREAM_K_ARRIVE) {
            *why = "stream-K splits tiles into pieces (a pair walks whole tiles together)";
            return NULL;
        }
    tjp_pairs *p = tjs_xcalloc(1, sizeof *p);
    int32_t body = fn->ops[loop].region[0];
    p->tile = fn->regions[body].args[0];
    p->peer_op = tjs_xcalloc((size_t)fn->nops + 1, 1);
    p->root_first = tjs_xcalloc((size_t)fn->nops + 1, sizeof *p->root_first);
    p->multicast = tjs_xcalloc((size_t)plan->nrings + 1, 1);
    uint8_t *dep = tjs_xcalloc((size_t)fn->nvalues + 1, 1);
    find_dependence(fn, p->tile, dep);
    walk w = {fn, dep, body, tjs_xcalloc((size_t)fn->nvalues + 1, 1), NULL, 0, 0, NULL};
    for (int32_t i = 0; i < fn->nops && !w.why; i++) {
        const tji_op *op = &fn->ops[i];
        p->root_first[i] = w.nroots;
        if (op->parent < 0 || op->code != TJI_ASYNC_COPY)
            continue;
        if ((w.why = lockstep(fn, dep, body, op)))
            break;
        for (int32_t v = 1; v <= fn->nvalues; v++)
            w.seen[v] = 0;
        const int32_t *offsets = op->args + TJI_TMA_FIRST + 1 + 2 * op->tma_rank;
        for (int d = 0; d < op->tma_rank; d++)
            walk_to_roots(&w, offsets[d]);
        for (int k = p->root_first[i]; k < w.nroots && !w.why; k++)
            mark_peer_ops(fn, dep, p->tile, w.roots[k], p->peer_op, &w.why);
        p->multicast[op->ring] = can_halve(&plan->rings[op->ring], tji_typeof(fn, op->args[0]));
    }
    p->root_first[fn->nops] = w.nroots;
    p->roots = w.roots;
    free(w.seen);
    free(dep);
    int any = 0;
    for (int r = 0; r < plan->nrings; r++)
        any |= p->multicast[r];
    if (!w.why && !any)
        w.why = "no copy can be halved (a box of one column block whose rows halve into no whole swizzle atoms)";
    if (w.why) {
        *why = w.why;
        tjp_pairs_free(p);
        return NULL;
    }
    return p;
}

tj_status tjp_pair_ctas(const tji_func *fn, const tjp_target *t, int mode, int pairs_allowed,
                        tjp_layout_plan *plan)
{
    const char *why = NULL;
    tjp_pairs_free(plan->pairs);
    plan->pairs = NULL;
    if (mode == TJ_CLUSTER_OFF)
        why = "turned off by the launch (cluster)";
    else if (!pairs_allowed)
        why = "the launch's tile count is odd, or its grid is not one persistent axis";
    else
        plan->pairs = plan_pairs(fn, t, plan, &why);
    plan->why_not_paired = plan->pairs ? NULL : why;
    if (!plan->pairs && mode == TJ_CLUSTER_ON)
        return tji_error_at(fn, -1, TJ_ERR_UNSUPPORTED,
                            "block pairs were asked for (cluster = TJ_CLUSTER_ON) but cannot be made: %s", why);
    return TJ_OK;
}
