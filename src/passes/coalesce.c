/* SPDX-License-Identifier: MIT */
/*
 * coalesce.c — the layout each global access wants (GPU).
 *
 * A warp's load or store is fast when its 32 lanes touch few 32-byte
 * sectors and each lane moves as many bytes per instruction as it can (up
 * to 16). Both are choices of the access's distributed layout: which tile
 * dimension the lanes run along (it should be the one along which the
 * addresses are consecutive), and how many consecutive elements each thread
 * holds in its lowest registers (the width of one vector instruction). Axis
 * info (axis_info.c, tjp_access_vector) answers what the pointer allows;
 * this pass turns that into one blocked layout per access:
 *
 *  - order: the pointer's dimension of greatest contiguity first, then the
 *    others from the last to the first (row-major), so a pointer tile whose
 *    strides were swapped (a transposed store) gets lanes down its columns;
 *  - vector: the elements one instruction moves — what contiguity and
 *    divisibility allow, at most 16 bytes, and no more than the mask's
 *    constancy along that dimension, so one predicate guards the whole
 *    vector; atomics have no vector form and volatile loads go element
 *    by element, so both take 1;
 *  - elements per thread along the order's first dimension: a store takes
 *    its vector (more would leave gaps in each warp's writes); a load takes
 *    the widest vector of the accesses with its shape and fastest
 *    dimension, as Triton does, so that, say, a misaligned load next to
 *    aligned ones lands in their layout (its own instructions stay narrow;
 *    the L1 cache absorbs the spread) instead of costing a conversion;
 *    either way no more than the tile has per thread, so a small tile is
 *    spread over all threads rather than packed into a few;
 *  - lanes then go along the order, fastest dimension first; warps along
 *    the slowest dimension with room, as in tjp_layout_default — with one
 *    element per thread and a row-major order the two layouts coincide, so
 *    an access that cannot be vectorized keeps the default layout.
 *
 * The result is a table by op index; tjp_assign_layouts uses it to anchor
 * loads, stores and atomics and records each access's vector width in the
 * plan for the code generator. Op indices stay valid: that pass only
 * appends ops.
 */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

enum { LANES = 32 };

static int is_access(tji_opcode c)
{
    return c == TJI_LOAD || c == TJI_STORE || c == TJI_ATOMIC || c == TJI_ATOMIC_CAS ||
           c == TJI_ASYNC_COPY;
}

/* What one access asks for before the accesses are compared. */
typedef struct wish {
    int order[TJ_MAX_RANK];
    int32_t vector;
    int32_t contiguity;   /* of the pointer along order[0] */
} wish;

/* order[0] = dim, then the other dims from the last to the first. */
static void order_from(int *order, int rank, int dim)
{
    order[0] = dim;
    for (int d = rank - 1, k = 1; d >= 0; d--)
        if (d != dim)
            order[k++] = d;
}

static tj_status wish_of(const tji_func *fn, const tjp_axis_info_result *axis, int32_t i, wish *w)
{
    w->contiguity = 1;
    const tji_op *op = &fn->ops[i];
    const tji_type *t = tji_typeof(fn, op->args[0]);
    if (op->code == TJI_LOAD || op->code == TJI_STORE || op->code == TJI_ASYNC_COPY) {
        tjp_access acc;
        tj_status st = tjp_access_vector(fn, axis, i, &acc);
        if (st != TJ_OK)
            return st;
        int32_t v = acc.vector_bytes / acc.elem_bytes;
        w->vector = acc.mask_constancy < v ? acc.mask_constancy : v;
        if (w->vector < 1 || op->is_volatile) /* volatile: element by element */
            w->vector = 1;
        order_from(w->order, t->rank, acc.dim);
        w->contiguity = axis->of[op->args[0]].contiguity[acc.dim];
        return TJ_OK;
    }
    /* Atomics: element by element, lanes along the most contiguous dim. */
    const tjp_axis_value *p = &axis->of[op->args[0]];
    int dim = 0;
    for (int d = 1; d < t->rank; d++)
        if (p->contiguity[d] >= p->contiguity[dim])
            dim = d;
    w->vector = 1;
    order_from(w->order, t->rank, dim);
    return TJ_OK;
}

/* The blocked layout of the design: spt elements per thread along order[0],
 * lanes along the order, warps from the slowest dimension with room. */
static void coalesced_layout(tjp_layout *out, const tji_type *t, const int *order, int32_t spt0,
                             int num_warps)
{
    int rank = t->rank;
    int32_t spt[TJ_MAX_RANK], tpw[TJ_MAX_RANK], wpc[TJ_MAX_RANK], ord[TJ_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        spt[d] = 1;
        ord[d] = order[d];
    }
    spt[order[0]] = spt0;
    int32_t lanes = LANES, warps = num_warps;
    for (int k = 0; k < rank; k++) {
        int d = order[k];
        int32_t room = t->shape[d] / spt[d] > 0 ? t->shape[d] / spt[d] : 1;
        tpw[d] = lanes < room ? lanes : room;
        lanes /= tpw[d];
    }
    tpw[order[0]] *= lanes; /* a tile smaller than a warp: copies */
    for (int k = rank - 1; k >= 0; k--) {
        int d = order[k];
        int32_t room = t->shape[d] / (spt[d] * tpw[d]);
        if (room < 1)
            room = 1;
        wpc[d] = warps < room ? warps : room;
        warps /= wpc[d];
    }
    wpc[order[rank - 1]] *= warps;
    tjp_layout_blocked(out, rank, t->shape, spt, tpw, wpc, ord);
}

tj_status tjp_coalesce(const tji_func *fn, const tjp_axis_info_result *axis, int num_warps,
                       tjp_coalesce_result *out)
{
    if (!fn || !axis || !out)
        return tjs_error(TJ_ERR_INVALID_ARG, "tjp_coalesce: no function, axis info or result");
    if (num_warps < 1 || num_warps > 32 || (num_warps & (num_warps - 1)))
        return tjs_error(TJ_ERR_LAUNCH, "kernel '%s': num_warps %d is not a power of two in 1..32",
                         fn->name, num_warps);
    wish *wishes = tjs_xcalloc((size_t)fn->nops + 1, sizeof *wishes);
    uint8_t *tiled = tjs_xcalloc((size_t)fn->nops + 1, 1);
    tj_status st = TJ_OK;
    for (int32_t i = 0; i < fn->nops && st == TJ_OK; i++) {
        const tji_op *op = &fn->ops[i];
        if (op->parent < 0 || !is_access(op->code) || tji_typeof(fn, op->args[0])->rank == 0)
            continue;
        tiled[i] = 1;
        st = wish_of(fn, axis, i, &wishes[i]);
    }
    out->nops = fn->nops;
    out->of = tjs_xcalloc((size_t)fn->nops + 1, sizeof *out->of);
    int32_t threads = 32 * num_warps;
    for (int32_t i = 0; i < fn->nops && st == TJ_OK; i++) {
        if (!tiled[i])
            continue;
        const tji_op *op = &fn->ops[i];
        const tji_type *t = tji_typeof(fn, op->args[0]);
        int32_t spt = wishes[i].vector;
        if (op->code == TJI_LOAD || op->code == TJI_ASYNC_COPY)
            for (int32_t j = 0; j < fn->nops; j++) {
                const tji_type *u = tiled[j] ? tji_typeof(fn, fn->ops[j].args[0]) : NULL;
                if (u && u->rank == t->rank && !memcmp(u->shape, t->shape, sizeof(int32_t) * (size_t)t->rank) &&
                    wishes[j].order[0] == wishes[i].order[0] && wishes[j].vector > spt)
                    spt = wishes[j].vector;
            }
        int64_t per_thread = tji_numel(t) / threads;
        if (spt > per_thread)
            spt = per_thread > 1 ? (int32_t)per_thread : 1;
        if (spt > t->shape[wishes[i].order[0]])
            spt = t->shape[wishes[i].order[0]];
        tjp_coalesce_choice *ch = &out->of[i];
        ch->chosen = 1;
        ch->vector = wishes[i].vector < spt ? wishes[i].vector : spt;
        /* runs start at multiples of both: a thread's spt fit in one */
        ch->addr_run = wishes[i].contiguity < spt ? wishes[i].contiguity : spt;
        coalesced_layout(&ch->layout, t, wishes[i].order, spt, num_warps);
    }
    free(wishes);
    free(tiled);
    if (st != TJ_OK)
        tjp_coalesce_free(out);
    return st;
}

void tjp_coalesce_free(tjp_coalesce_result *r)
{
    free(r->of);
    r->of = NULL;
    r->nops = 0;
}

void tjp_coalesce_print(tjs_buf *b, const tji_func *fn, const tjp_coalesce_result *r)
{
    for (int32_t i = 0; i < r->nops; i++) {
        const tjp_coalesce_choice *ch = &r->of[i];
        if (!ch->chosen)
            continue;
        tjs_buf_printf(b, "op %d %s: vector %d, ", (int)i, tji_opcode_name(fn->ops[i].code),
                       (int)ch->vector);
        tjp_layout_print(b, &ch->layout);
        tjs_buf_printf(b, "\n");
    }
}
