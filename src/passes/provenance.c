/* SPDX-License-Identifier: MIT */
/*
 * provenance.c — which buffer parameters each pointer value may point into.
 *
 * Two users ask where a pointer comes from: the bounds-checked mode
 * (src/jit/llvm/bounds.h) checks every load, store and atomic against the
 * buffer its pointer comes from, and the aliasing question (alias.c) —
 * may a load and a later store touch one address? — tells pointers of
 * different buffers apart. A tile pointer is always a pointer parameter
 * moved by offsets (ADDPTR) and reshaped (SPLAT, BROADCAST, EXPAND_DIMS,
 * RESHAPE, PERMUTE, CONVERT, a pointer CAST; a block pointer made from it,
 * MAKE_BLOCK_PTR, and moved, ADVANCE), so its buffer is a fact of
 * the program, not of the addresses: this pass follows those ops from the
 * parameters. Where two origins meet — a WHERE between pointers of two
 * parameters, a loop-carried pointer whose yield comes from another
 * parameter, the two branches of an IF — the value may point into either,
 * and the set holds both. A pointer no rule reaches has the empty set: its
 * buffer is unknown (the bounds checks find it in none, alias.c lets it
 * alias everything). A pointer made from an integer (tj_int_to_ptr) may
 * point anywhere: its set holds one more bit, after the parameters', that
 * says so; alias.c lets it alias everything and the bounds checks leave its
 * accesses alone, as no buffer of the launch is known to hold them.
 *
 * Sets are bitsets over parameter indices, one per value. Carried values of
 * FOR, IF and WHILE make the relation cyclic, so the rules are applied to every op
 * until nothing changes (sets only grow, so this ends). Each round walks
 * the regions in program order, with an explicit stack (a 100,000-op
 * kernel must not recurse), so that operands are seen before their uses —
 * also the conversions the GPU's layout pass appends to the op array — and
 * a round or two beyond the first suffice.
 */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

static uint64_t *set_of(tjp_provenance *p, int32_t id)
{
    return p->sets + (size_t)id * (size_t)p->nwords;
}

/* to |= from; returns whether to grew. */
static int join(tjp_provenance *p, int32_t to, int32_t from)
{
    if (to <= 0 || from <= 0 || to > p->nvalues || from > p->nvalues || to == from)
        return 0;
    uint64_t *t = set_of(p, to);
    const uint64_t *f = set_of(p, from);
    int grew = 0;
    for (int w = 0; w < p->nwords; w++) {
        uint64_t next = t[w] | f[w];
        grew |= next != t[w];
        t[w] = next;
    }
    return grew;
}

/* The YIELD that ends region rid, or NULL. */
static const tji_op *yield_of(const tji_func *fn, int32_t rid)
{
    if (rid < 0 || rid >= fn->nregions)
        return NULL;
    const tji_region *r = &fn->regions[rid];
    const tji_op *last = r->nops > 0 ? &fn->ops[r->ops[r->nops - 1]] : NULL;
    return last && last->code == TJI_YIELD ? last : NULL;
}

/* The rules of one op; returns whether a set grew. */
static int apply(const tji_func *fn, tjp_provenance *p, const tji_op *op)
{
    int grew = 0;
    if (op->code == TJI_CAST && op->nargs > 0 && tji_typeof(fn, op->result)->is_ptr &&
        !tji_typeof(fn, op->args[0])->is_ptr) { /* an address made a pointer */
        uint64_t *w = &set_of(p, op->result)[p->nparams / 64], bit = UINT64_C(1) << (p->nparams % 64);
        grew = !(*w & bit);
        *w |= bit;
        return grew;
    }
    switch (op->code) {
    case TJI_ADDPTR: case TJI_SPLAT: case TJI_BROADCAST: case TJI_EXPAND_DIMS:
    case TJI_RESHAPE: case TJI_PERMUTE: case TJI_CONVERT: case TJI_CAST:
    case TJI_MAKE_BLOCK_PTR: case TJI_ADVANCE:
        if (op->nargs > 0)
            grew |= join(p, op->result, op->args[0]);
        break;
    case TJI_WHERE:
        if (op->nargs > 2)
            grew |= join(p, op->result, op->args[1]) | join(p, op->result, op->args[2]);
        break;
    case TJI_FOR: {
        /* args (lo, hi, step, init...), block args (iv, carried...) */
        const tji_op *y = yield_of(fn, op->region[0]);
        const tji_region *r = op->region[0] >= 0 ? &fn->regions[op->region[0]] : NULL;
        for (int k = 0; r && k < op->nresults; k++) {
            int32_t carried = k + 1 < r->nargs ? r->args[k + 1] : 0;
            int32_t init = 3 + k < op->nargs ? op->args[3 + k] : 0;
            int32_t next = y && k < y->nargs ? y->args[k] : 0;
            grew |= join(p, carried, init) | join(p, carried, next);
            grew |= join(p, op->result + k, carried) | join(p, op->result + k, next);
        }
        break;
    }
    case TJI_WHILE: {
        /* args (init...), block args (carried...), results the CONDITION's */
        const tji_op *y = yield_of(fn, op->region[0]);
        const tji_region *r = op->region[0] >= 0 ? &fn->regions[op->region[0]] : NULL;
        for (int k = 0; r && k < op->nresults && k < r->nargs && k < op->nargs; k++) {
            grew |= join(p, r->args[k], op->args[k]);
            if (y && k < y->nargs)
                grew |= join(p, r->args[k], y->args[k]);
            for (int32_t i = 0; i < r->nops; i++) {
                const tji_op *c = &fn->ops[r->ops[i]];
                if (c->code == TJI_CONDITION && k + 1 < c->nargs)
                    grew |= join(p, op->result + k, c->args[k + 1]);
            }
        }
        break;
    }
    case TJI_IF:
        for (int side = 0; side < 2; side++) {
            const tji_op *y = yield_of(fn, op->region[side]);
            for (int k = 0; y && k < op->nresults && k < y->nargs; k++)
                grew |= join(p, op->result + k, y->args[k]);
        }
        break;
    default:
        break;
    }
    return grew;
}

typedef struct walk_frame {
    int32_t region, next; /* the region, and the position of its next op */
} walk_frame;

/* One round of the rules over every op, in program order; returns whether a
 * set grew. An op with regions is applied after them (its results join its
 * yields); stack holds up to nregions frames, each region being entered once. */
static int propagate(const tji_func *fn, tjp_provenance *p, walk_frame *stack)
{
    int grew = 0, depth = 0;
    stack[depth++] = (walk_frame){0, 0};
    while (depth > 0) {
        walk_frame *f = &stack[depth - 1];
        const tji_region *r = &fn->regions[f->region];
        if (f->next >= r->nops) {
            depth--;
            if (depth > 0) { /* the op that owns the region just walked, once its last region is done */
                walk_frame *up = &stack[depth - 1];
                const tji_op *owner = &fn->ops[fn->regions[up->region].ops[up->next]];
                int last = owner->region[1] < 0 || owner->region[1] == f->region;
                if (last) {
                    grew |= apply(fn, p, owner);
                    up->next++;
                } else {
                    stack[depth++] = (walk_frame){owner->region[1], 0};
                }
            }
            continue;
        }
        const tji_op *op = &fn->ops[r->ops[f->next]];
        int32_t first = op->region[0] >= 0 ? op->region[0] : op->region[1];
        if (first >= 0 && first < fn->nregions && depth < fn->nregions) {
            grew |= apply(fn, p, op); /* carried values from the inits before the body */
            stack[depth++] = (walk_frame){first, 0};
            continue;
        }
        grew |= apply(fn, p, op);
        f->next++;
    }
    return grew;
}

void tjp_find_provenance(const tji_func *fn, tjp_provenance *out)
{
    out->nvalues = fn->nvalues;
    out->nparams = fn->nparams;
    out->nwords = (fn->nparams + 1 + 63) / 64; /* the parameters, then "from an integer" */
    out->sets = tjs_xcalloc((size_t)(fn->nvalues + 1) * (size_t)out->nwords, sizeof *out->sets);
    for (int i = 0; i < fn->nparams; i++) {
        int32_t id = fn->params[i].value;
        if (fn->params[i].is_ptr && id > 0 && id <= fn->nvalues)
            set_of(out, id)[i / 64] |= UINT64_C(1) << (i % 64);
    }
    if (fn->nregions < 1)
        return;
    walk_frame *stack = tjs_xmalloc((size_t)fn->nregions * sizeof *stack);
    while (propagate(fn, out, stack))
        ;
    free(stack);
}

int tjp_provenance_has(const tjp_provenance *p, int32_t id, int param)
{
    if (id <= 0 || id > p->nvalues || param < 0 || param >= p->nparams)
        return 0;
    return (int)(p->sets[(size_t)id * (size_t)p->nwords + (size_t)(param / 64)] >> (param % 64) & 1);
}

int tjp_provenance_from_int(const tjp_provenance *p, int32_t id)
{
    if (id <= 0 || id > p->nvalues)
        return 0;
    return (int)(p->sets[(size_t)id * (size_t)p->nwords + (size_t)(p->nparams / 64)] >> (p->nparams % 64) & 1);
}

int tjp_provenance_known(const tjp_provenance *p, int32_t id)
{
    if (id <= 0 || id > p->nvalues || tjp_provenance_from_int(p, id))
        return 0;
    for (int w = 0; w < p->nwords; w++)
        if (p->sets[(size_t)id * (size_t)p->nwords + (size_t)w])
            return 1;
    return 0;
}

int tjp_provenance_overlap(const tjp_provenance *p, int32_t a, int32_t b)
{
    if (a <= 0 || b <= 0 || a > p->nvalues || b > p->nvalues)
        return 0;
    if (tjp_provenance_from_int(p, a) || tjp_provenance_from_int(p, b))
        return 1;
    for (int w = 0; w < p->nwords; w++)
        if (p->sets[(size_t)a * (size_t)p->nwords + (size_t)w] & p->sets[(size_t)b * (size_t)p->nwords + (size_t)w])
            return 1;
    return 0;
}

void tjp_provenance_free(tjp_provenance *p)
{
    free(p->sets);
    memset(p, 0, sizeof *p);
}
