/* SPDX-License-Identifier: MIT */
/*
 * layout_assign.c — give every tile value a distributed layout (GPU).
 *
 * On the GPU a tile lives spread over the registers of num_warps * 32
 * threads; its layout (layout.h) says which slot holds which element. Ops
 * work in registers only when their operands sit in matching layouts, so
 * this pass chooses layouts that make most ops free and inserts a
 * TJI_CONVERT where two choices meet.
 *
 * The walk goes backwards through each region, users before definitions,
 * the way Triton propagates layouts from its anchors:
 *
 *  - A value takes the layout its last user (in program order) asks for;
 *    an earlier user that wants another gets a copy in its own layout.
 *  - Anchors pick their layout themselves: a LOAD (and an atomic) takes
 *    the layout the coalescing pass (coalesce.c) chose for it — lanes along
 *    the pointer's contiguous dimension, a vector per thread — or, without
 *    that table, the default layout of its shape (one element per thread
 *    per register, lanes along the last dimension); a STORE works in its
 *    own coalesced layout, so the value and the pointer are brought to it;
 *    a REDUCE yields the slice of its operand's layout. Where users want
 *    something else, a CONVERT follows the op: this is how a transpose
 *    ends up going through shared memory, whether it is a PERMUTE or a
 *    store whose pointer strides were swapped.
 *  - Other ops ask for their operands in the layout that makes the op a
 *    register-for-register copy: the same layout for element-wise ops, the
 *    slice for EXPAND_DIMS, broadcast dims folded to zero for BROADCAST,
 *    permuted coordinates for PERMUTE, the same bases for RESHAPE.
 *  - A copy in another layout is made by recomputing cheap values (aranges,
 *    splats, index arithmetic) in that layout; anything else is converted.
 *    A value never gets a copy in the layout it already has, a copy of a
 *    conversion's result is made from its source (the source itself when
 *    that is the layout wanted: no convert(convert(x)), no conversion
 *    back), and at the end conversions of one value to one layout that a
 *    first one dominates are merged into it.
 *  - A loop-carried variable has one layout for its initial value, block
 *    argument, yield and result; so does each result of an IF.
 *
 * The pass changes the IR by inserting ops and by taking merged
 * conversions out of their regions, through the IR core's rewrite API
 * (ir.h); tji_verify still holds. The plan also
 * records each LOAD's and STORE's vector width for the code generator.
 */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

typedef struct assigner {
    tji_func *fn;
    int num_warps;
    const tjp_coalesce_result *co; /* may be NULL */
    tjp_layout *of;      /* per value id */
    uint8_t *set;        /* per value id: layout chosen */
    int32_t *equal_to;   /* per value id: the value a new one equals (plan.equal_to) */
    int32_t cap;
    tjp_layout **yield_layouts; /* per region: layouts its YIELD must give */
    const tjp_dot_choice *dot;  /* per op index (tjp_accelerate_dots) */
} assigner;

static void ensure(assigner *A)
{
    int32_t need = A->fn->nvalues + 1;
    if (need <= A->cap)
        return;
    int32_t cap = A->cap ? A->cap : 64;
    while (cap < need)
        cap *= 2;
    A->of = tjs_xrealloc(A->of, sizeof *A->of * (size_t)cap);
    A->set = tjs_xrealloc(A->set, (size_t)cap);
    memset(A->set + A->cap, 0, (size_t)(cap - A->cap));
    A->equal_to = tjs_xrealloc(A->equal_to, sizeof *A->equal_to * (size_t)cap);
    memset(A->equal_to + A->cap, 0, sizeof *A->equal_to * (size_t)(cap - A->cap));
    A->cap = cap;
}

static int is_tile(const tji_func *fn, int32_t v) { return v > 0 && tji_typeof(fn, v)->rank > 0; }

void tjp_layout_default(tjp_layout *out, int rank, const int32_t *shape, int num_warps)
{
    int32_t spt[TJ_MAX_RANK] = {0}, tpw[TJ_MAX_RANK] = {0}, wpc[TJ_MAX_RANK] = {0},
            order[TJ_MAX_RANK] = {0};
    int lanes = 32, warps = num_warps;
    if (rank < 1 || rank > TJ_MAX_RANK) {
        memset(out, 0, sizeof *out);
        return;
    }
    for (int d = 0; d < rank; d++) {
        spt[d] = 1;
        order[d] = rank - 1 - d;
    }
    for (int d = rank - 1; d >= 0; d--) { /* lanes: fastest dimension first */
        tpw[d] = lanes < shape[d] ? lanes : shape[d];
        lanes /= tpw[d];
    }
    tpw[rank - 1] *= lanes; /* a tile smaller than a warp: copies */
    for (int d = 0; d < rank; d++) { /* warps: slowest dimension first */
        int32_t room = shape[d] / tpw[d] > 0 ? shape[d] / tpw[d] : 1;
        wpc[d] = warps < room ? warps : room;
        warps /= wpc[d];
    }
    wpc[0] *= warps;
    tjp_layout_blocked(out, rank, shape, spt, tpw, wpc, order);
}

/* The same slots, holding for each element of `to` the element of `from`
 * that map(coords) names: bases are single bits, so mapping each basis maps
 * the layout. */
typedef void (*coord_map)(const int64_t *in, int rank, int64_t *out, const tji_op *op);

static void remap(tjp_layout *out, const tjp_layout *from, const tji_type *to, coord_map map,
                  const tji_op *op)
{
    *out = *from;
    out->rank = to->rank;
    memset(out->shape, 0, sizeof out->shape);
    for (int d = 0; d < to->rank; d++)
        out->shape[d] = to->shape[d];
    for (int in = 0; in < TJP_NIN; in++)
        for (int b = 0; b < from->nbits[in]; b++) {
            uint32_t e = from->basis[in][b];
            int64_t c[TJ_MAX_RANK] = {0}, t[TJ_MAX_RANK] = {0};
            for (int d = from->rank - 1; d >= 0; d--) {
                c[d] = e % (uint32_t)from->shape[d];
                e /= (uint32_t)from->shape[d];
            }
            map(c, from->rank, t, op);
            uint32_t x = 0;
            for (int d = 0; d < to->rank; d++)
                x = x * (uint32_t)to->shape[d] + (uint32_t)(t[d] % to->shape[d]);
            out->basis[in][b] = x;
        }
}

/* Result dim i is operand dim perm[i] (perm has `rank` entries). */
static void map_permute(const int64_t *res, int rank, int64_t *x, const tji_op *op)
{
    for (int i = 0; i < rank; i++)
        x[op->perm[i]] = res[i];
}

/* Broadcast dims have size 1 in the operand: remap's "% 1" folds them. */
static void map_identity(const int64_t *res, int rank, int64_t *x, const tji_op *op)
{
    (void)rank, (void)op;
    memcpy(x, res, sizeof(int64_t) * TJ_MAX_RANK);
}

/* The layout operand k of op must have so that the op, with its result in
 * layout L, works register for register. Returns 0 for scalar operands. */
static int operand_layout(const tji_func *fn, const tji_op *op, int k, const tjp_layout *L,
                          tjp_layout *out)
{
    int32_t v = op->args[k];
    if (!is_tile(fn, v))
        return 0;
    const tji_type *t = tji_typeof(fn, v);
    switch (op->code) {
    case TJI_BROADCAST:
        remap(out, L, t, map_identity, op);
        return 1;
    case TJI_EXPAND_DIMS:
        tjp_layout_slice(out, L, op->axis);
        return 1;
    case TJI_RESHAPE:
        remap(out, L, t, map_identity, op);
        /* row-major order is kept: the bases stay the same indices */
        for (int in = 0; in < TJP_NIN; in++)
            memcpy(out->basis[in], L->basis[in], sizeof(uint32_t) * (size_t)L->nbits[in]);
        return 1;
    case TJI_PERMUTE:
        remap(out, L, t, map_permute, op);
        return 1;
    default:
        *out = *L;
        return 1;
    }
}

/* Ops whose result may take an operand's layout as it is: element-wise
 * ops, and the sum of a stream-K tile's pieces (stream_k.c: its pieces meet
 * by element index, in any layout). */
static int keeps_layout(tji_opcode c)
{
    return tji_is_elementwise(c) || c == TJI_ASSUME || c == TJI_STREAM_K_ADD;
}

/* Ops whose copy in another layout is cheaper to recompute than to move. */
static int recomputable(tji_opcode c)
{
    switch (c) {
    case TJI_ARANGE: case TJI_SPLAT: case TJI_BROADCAST: case TJI_EXPAND_DIMS:
    case TJI_RESHAPE: case TJI_PERMUTE: case TJI_ADD: case TJI_SUB: case TJI_MUL:
    case TJI_AND: case TJI_OR: case TJI_XOR: case TJI_SHL: case TJI_SHR: case TJI_MIN:
    case TJI_MAX: case TJI_CMP: case TJI_ADDPTR: case TJI_NEG: case TJI_NOT:
    case TJI_WHERE: case TJI_BITCAST: case TJI_CAST: case TJI_ASSUME:
        return 1;
    default:
        return 0;
    }
}

static int can_recompute(const tji_func *fn, int32_t v, int depth)
{
    const tji_value *val = tji_val(fn, v);
    if (val->def_op < 0 || depth > 12)
        return 0;
    const tji_op *op = &fn->ops[val->def_op];
    if (!recomputable(op->code))
        return 0;
    for (int k = 0; k < op->nargs; k++)
        if (is_tile(fn, op->args[k]) && !can_recompute(fn, op->args[k], depth + 1))
            return 0;
    return 1;
}

/* A copy of tile v in layout L, placed at position *pos of region r (which
 * advances past what is inserted). */
static int32_t copy_in_layout(assigner *A, int32_t v, const tjp_layout *L, int32_t r, int *pos)
{
    tji_func *fn = A->fn;
    int32_t def = tji_val(fn, v)->def_op;
    if (A->set[v] && tjp_layout_equal(&A->of[v], L))
        return v;
    /* A copy of a conversion's result is a conversion of its source (or the
     * source itself): never convert(convert(x)). */
    if (def >= 0 && fn->ops[def].code == TJI_CONVERT && A->set[fn->ops[def].args[0]])
        return copy_in_layout(A, fn->ops[def].args[0], L, r, pos);
    tji_type type = *tji_typeof(fn, v);
    int32_t idx;
    if (can_recompute(fn, v, 0)) {
        tji_op orig = fn->ops[def];
        int32_t *args = tjs_xmalloc(sizeof(int32_t) * (size_t)(orig.nargs ? orig.nargs : 1));
        for (int k = 0; k < orig.nargs; k++) {
            tjp_layout want;
            args[k] = orig.args[k];
            if (operand_layout(fn, &orig, k, L, &want))
                args[k] = copy_in_layout(A, orig.args[k], &want, r, pos);
        }
        idx = tji_insert_clone(fn, &orig, r, *pos, args);
        free(args);
    } else {
        idx = tji_insert_op(fn, TJI_CONVERT, r, *pos, fn->ops[def >= 0 ? def : 0].loc);
        if (def < 0) /* a block argument: blame the op owning its region */
            fn->ops[idx].loc = fn->ops[fn->regions[tji_val(fn, v)->def_region].parent_op].loc;
        tji_set_operands(fn, idx, &v, 1);
    }
    (*pos)++;
    int32_t res = tji_new_results(fn, idx, &type, 1);
    ensure(A);
    A->of[res] = *L;
    A->set[res] = 1;
    A->equal_to[res] = v;
    return res;
}

/* Operand k of the op at position *pos of region r must be in layout L. */
static void request(assigner *A, int32_t r, int *pos, int32_t opidx, int k, const tjp_layout *L)
{
    int32_t v = A->fn->ops[opidx].args[k];
    if (!A->set[v]) {
        A->of[v] = *L;
        A->set[v] = 1;
    } else if (!tjp_layout_equal(&A->of[v], L)) {
        int32_t c = copy_in_layout(A, v, L, r, pos);
        tji_set_operand(A->fn, opidx, k, c);
    }
}

static void default_of(assigner *A, int32_t v, tjp_layout *out)
{
    const tji_type *t = tji_typeof(A->fn, v);
    tjp_layout_default(out, t->rank, t->shape, A->num_warps);
}

/* The coalescing pass's layout for the access at op index opidx, if any. */
static const tjp_layout *coalesced_of(const assigner *A, int32_t opidx)
{
    if (!A->co || opidx >= A->co->nops || !A->co->of[opidx].chosen)
        return NULL;
    return &A->co->of[opidx].layout;
}

/* The layout to give a value no user has asked for yet: that of the load
 * it is computed from element by element (so that, say, a tile loaded and
 * only reduced is reduced where the load put it), else the default. */
static void unasked_of(assigner *A, int32_t v, tjp_layout *out)
{
    const tji_func *fn = A->fn;
    int32_t from = v;
    for (int depth = 0; depth < 16; depth++) {
        int32_t def = tji_val(fn, from)->def_op;
        if (def < 0)
            break;
        const tji_op *op = &fn->ops[def];
        if ((op->code == TJI_LOAD || op->code == TJI_ATOMIC || op->code == TJI_ATOMIC_CAS) &&
            coalesced_of(A, def)) {
            *out = *coalesced_of(A, def);
            return;
        }
        if (!keeps_layout(op->code))
            break;
        int32_t next = 0; /* the first operand of the same shape */
        for (int k = 0; k < op->nargs && !next; k++)
            if (is_tile(fn, op->args[k]) &&
                !memcmp(tji_typeof(fn, op->args[k])->shape, tji_typeof(fn, v)->shape,
                        sizeof(int32_t) * TJ_MAX_RANK))
                next = op->args[k];
        if (!next)
            break;
        from = next;
    }
    default_of(A, v, out);
}

/* An anchor's result is `natural`; users that asked for another layout get
 * a CONVERT right after the op. *pos is the op's position. */
static void anchor_result(assigner *A, int32_t r, int *pos, int32_t opidx, const tjp_layout *natural)
{
    tji_func *fn = A->fn;
    int32_t res = fn->ops[opidx].result;
    if (!A->set[res]) {
        A->of[res] = *natural;
        A->set[res] = 1;
        return;
    }
    if (tjp_layout_equal(&A->of[res], natural))
        return;
    /* The op now defines a fresh value; the old one becomes the CONVERT's. */
    tji_type type = *tji_typeof(fn, res);
    int32_t fresh = tji_new_results(fn, opidx, &type, 1);
    ensure(A);
    A->of[fresh] = *natural;
    A->set[fresh] = 1;
    A->equal_to[fresh] = res;
    int32_t cv = tji_insert_op(fn, TJI_CONVERT, r, *pos + 1, fn->ops[opidx].loc);
    tji_set_operands(fn, cv, &fresh, 1);
    tji_set_result(fn, cv, res);
}

static void assign_region(assigner *A, int32_t r);

/* Uses of `from` in the ops of region r from position pos on (and in their
 * regions) read `to` instead. */
static void rename_after(tji_func *fn, int32_t r, int pos, const int32_t *rename)
{
    for (int k = pos; k < fn->regions[r].nops; k++) {
        int32_t o = fn->regions[r].ops[k];
        tji_rename_operands(fn, o, rename);
        for (int n = 0; n < 2; n++)
            if (fn->ops[o].region[n] >= 0)
                rename_after(fn, fn->ops[o].region[n], 0, rename);
    }
}

/* Whether every use of v after position pos of region r is a CAST there to
 * a narrower float in layout L (the epilogue's `tj_cast(acc, f16)` before
 * its store): then the casts, not v, take the conversion, which moves half
 * the bytes through shared memory. */
static int only_narrowing_casts(assigner *A, int32_t r, int pos, int32_t v, const tjp_layout *L)
{
    tji_func *fn = A->fn;
    int any = 0;
    for (int32_t i = 0; i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        int uses = 0;
        for (int k = 0; k < op->nargs; k++)
            uses += op->args[k] == v;
        if (!uses || op->parent < 0)
            continue;
        if (op->code != TJI_CAST || op->parent != r)
            return 0;
        int at = 0;
        while (at < fn->regions[r].nops && fn->regions[r].ops[at] != i)
            at++;
        const tji_type *from = tji_typeof(fn, v), *to = tji_typeof(fn, op->result);
        if (at <= pos || !tjs_dtype_is_float(to->dtype) || !tjs_dtype_is_float(from->dtype) ||
            tjs_dtype_bits(to->dtype) >= tjs_dtype_bits(from->dtype) || !A->set[op->result] ||
            !tjp_layout_equal(&A->of[op->result], L))
            return 0;
        any = 1;
    }
    return any;
}

/* The casts of v (only_narrowing_casts) compute in layout L and convert
 * their results to the layout their users asked for. */
static void convert_after_casts(assigner *A, int32_t r, int32_t v, const tjp_layout *L)
{
    tji_func *fn = A->fn;
    for (int at = 0; at < fn->regions[r].nops; at++) {
        int32_t i = fn->regions[r].ops[at];
        if (fn->ops[i].code == TJI_CAST && fn->ops[i].args[0] == v)
            anchor_result(A, r, &at, i, L);
    }
}

/* Is operand a (0: none) a tile of v's shape? */
static int same_shape(const tji_func *fn, int32_t a, int32_t v)
{
    const tji_type *x = a > 0 ? tji_typeof(fn, a) : NULL, *t = tji_typeof(fn, v);
    return x && x->rank == t->rank && !memcmp(x->shape, t->shape, sizeof x->shape[0] * (size_t)t->rank);
}

/* The layout a value of a loop body has for free when it is computed from
 * a tensor-core dot's result there: the accumulator layout for the dot,
 * its slice for a reduction of such a value, an element-wise op's for an
 * operand's (attention's row maxima and sums, l * alpha + sum(p)); 0 where
 * no dot is on the way. */
static int dot_derived_layout(const assigner *A, int32_t body, int32_t v, tjp_layout *out, int depth)
{
    const tji_func *fn = A->fn;
    int32_t def = v > 0 ? tji_val(fn, v)->def_op : -1;
    if (def < 0 || depth > 8 || fn->ops[def].parent != body || !is_tile(fn, v))
        return 0;
    const tji_op *op = &fn->ops[def];
    if (op->code == TJI_DOT)
        return tjp_dot_result_layout(fn, op, &A->dot[def], A->num_warps, out);
    if (op->code == TJI_REDUCE) {
        tjp_layout x;
        if (!dot_derived_layout(A, body, op->args[0], &x, depth + 1))
            return 0;
        tjp_layout_slice(out, &x, op->axis);
        return 1;
    }
    for (int k = 0; keeps_layout(op->code) && k < op->nargs; k++)
        if (same_shape(fn, op->args[k], v) && dot_derived_layout(A, body, op->args[k], out, depth + 1))
            return 1;
    return 0;
}

/* A FOR whose body yields values computed from a tensor-core dot (an
 * accumulator carried along the loop, attention's running maxima and
 * sums) carries them in the layout they are computed in
 * (dot_derived_layout), so that the loop converts nothing per iteration;
 * users after the loop that asked for
 * another layout read a CONVERT placed right after it, or, where they are
 * all narrowing casts, right after each cast (after the wait
 * that ends a pipelined loop: its shared buffer may then reuse the rings'
 * bytes, alloc_shared.c). */
static void carry_dot_layouts(assigner *A, int32_t r, int pos, int32_t opidx)
{
    tji_func *fn = A->fn;
    const tji_region *body = &fn->regions[fn->ops[opidx].region[0]];
    if (!body->nops || fn->ops[body->ops[body->nops - 1]].code != TJI_YIELD)
        return;
    int32_t yield = body->ops[body->nops - 1];
    for (int i = 0; i < fn->ops[opidx].nresults && i < fn->ops[yield].nargs; i++) {
        tjp_layout acc;
        if (!dot_derived_layout(A, fn->ops[opidx].region[0], fn->ops[yield].args[i], &acc, 0))
            continue;
        int32_t res = fn->ops[opidx].result + i;
        int other = A->set[res] && !tjp_layout_equal(&A->of[res], &acc);
        if (other && only_narrowing_casts(A, r, pos, res, &A->of[res])) {
            convert_after_casts(A, r, res, &acc);
        } else if (other) {
            tji_type type = *tji_typeof(fn, res);
            int at = pos + 1;
            while (at < fn->regions[r].nops && fn->ops[fn->regions[r].ops[at]].code == TJI_ASYNC_WAIT)
                at++;
            int32_t cv = tji_insert_op(fn, TJI_CONVERT, r, at, fn->ops[opidx].loc);
            tji_set_operands(fn, cv, &res, 1);
            int32_t x = tji_new_results(fn, cv, &type, 1);
            ensure(A);
            int32_t *rename = tjs_xcalloc((size_t)fn->nvalues + 1, sizeof *rename);
            rename[res] = x;
            rename_after(fn, r, at + 1, rename);
            free(rename);
            A->of[x] = A->of[res];
            A->set[x] = 1;
            A->equal_to[x] = res;
        }
        A->of[res] = acc;
        A->set[res] = 1;
    }
}

/* The layout a TMA store of v takes: v's own where it has one; for a
 * loop's result computed from a tensor-core dot (an accumulator, which the
 * walk reaches after its store), the layout the loop will carry it in
 * (carry_dot_layouts); through element-wise ops (C's cast, a bias) that
 * value's. The threads only write it to shared memory, so a conversion
 * first would be a second round trip through it. */
static int tma_store_layout(const assigner *A, int32_t v, tjp_layout *out, int depth)
{
    const tji_func *fn = A->fn;
    int32_t def = v > 0 ? tji_val(fn, v)->def_op : -1;
    if (A->set[v]) {
        *out = A->of[v];
        return 1;
    }
    if (def < 0 || depth > 8)
        return 0;
    const tji_op *op = &fn->ops[def];
    if (op->code == TJI_FOR) {
        const tji_region *body = &fn->regions[op->region[0]];
        const tji_op *yield = body->nops ? &fn->ops[body->ops[body->nops - 1]] : NULL;
        int32_t k = v - op->result;
        return yield && yield->code == TJI_YIELD && k < yield->nargs &&
               dot_derived_layout(A, op->region[0], yield->args[k], out, 0);
    }
    for (int k = 0; keeps_layout(op->code) && k < op->nargs; k++)
        if (same_shape(fn, op->args[k], v) && tma_store_layout(A, op->args[k], out, depth + 1))
            return 1;
    return 0;
}

/* The coalesced layout of an access in a FOR's body whose pointer is
 * carried value k, if any: a pointer tile advanced by the loop stays where
 * the access reads it, instead of being converted there every iteration. */
static int access_carried_layout(const assigner *A, const tji_op *op, int k, tjp_layout *out)
{
    const tji_region *body = &A->fn->regions[op->region[0]];
    for (int32_t p = 0; p < body->nops; p++) {
        int32_t i = body->ops[p];
        const tji_op *u = &A->fn->ops[i];
        if (u->nargs > 0 && u->args[0] == body->args[k + 1] && coalesced_of(A, i)) {
            *out = *coalesced_of(A, i);
            return 1;
        }
    }
    return 0;
}

/* Layouts of the results of a FOR, IF or WHILE: what users asked for, else (a
 * FOR) that of an access through the carried pointer, else default. */
static tjp_layout *carried_layouts(assigner *A, int32_t opidx)
{
    const tji_op *op = &A->fn->ops[opidx];
    tjp_layout *L = tjs_xcalloc((size_t)(op->nresults ? op->nresults : 1), sizeof *L);
    for (int i = 0; i < op->nresults; i++) {
        int32_t res = op->result + i;
        if (!is_tile(A->fn, res))
            continue;
        if (!A->set[res]) {
            if (op->code != TJI_FOR || !access_carried_layout(A, op, i, &A->of[res]))
                default_of(A, res, &A->of[res]);
            A->set[res] = 1;
        }
        L[i] = A->of[res];
    }
    return L;
}

/* A DOT: its result in the accumulator layout (MMA) or where its users
 * want it (FMA; the default layout where FMA cannot work in that one), the
 * operands in the layouts the form derives from it, acc in the result's. */
static void assign_dot(assigner *A, int32_t r, int *pos, int32_t opidx)
{
    tji_func *fn = A->fn;
    tji_op op = fn->ops[opidx];
    const tjp_dot_choice *ch = &A->dot[opidx];
    tjp_layout want[3];
    if (tjp_dot_result_layout(fn, &op, ch, A->num_warps, &want[2])) {
        anchor_result(A, r, pos, opidx, &want[2]);
    } else {
        if (!A->set[op.result]) {
            unasked_of(A, op.result, &A->of[op.result]);
            A->set[op.result] = 1;
        }
        want[2] = A->of[op.result];
        if (!tjp_dot_operand_layouts(fn, &op, ch, A->num_warps, &want[2], &want[0], &want[1])) {
            default_of(A, op.result, &want[2]);
            anchor_result(A, r, pos, opidx, &want[2]);
        }
    }
    tjp_dot_operand_layouts(fn, &op, ch, A->num_warps, &want[2], &want[0], &want[1]);
    int at = *pos;
    for (int k = 0; k < op.nargs && k < 3; k++)
        if (op.args[k]) {
            int before = at;
            request(A, r, &at, opidx, k, &want[k]);
            *pos += at - before;
        }
}

static void assign_op(assigner *A, int32_t r, int *pos)
{
    tji_func *fn = A->fn;
    int32_t opidx = fn->regions[r].ops[*pos];
    tji_op op = fn->ops[opidx];
    int at = *pos; /* operand copies go before the op; it moves right */
    tjp_layout L;

    switch (op.code) {
    case TJI_DOT:
        assign_dot(A, r, pos, opidx);
        return;
    case TJI_FOR: case TJI_IF: case TJI_WHILE: {
        /* a loop's carried values: its operands and block arguments from */
        int init = op.code == TJI_FOR ? 3 : 0, arg = op.code == TJI_FOR ? 1 : 0;
        if (op.code == TJI_FOR)
            carry_dot_layouts(A, r, *pos, opidx);
        tjp_layout *carried = carried_layouts(A, opidx);
        if (op.code != TJI_IF) {
            const tji_region *body = &fn->regions[op.region[0]];
            for (int i = 0; i < op.nresults; i++)
                if (is_tile(fn, body->args[i + arg])) {
                    A->of[body->args[i + arg]] = carried[i];
                    A->set[body->args[i + arg]] = 1;
                }
        }
        for (int k = 0; k < 2; k++)
            if (op.region[k] >= 0) {
                A->yield_layouts[op.region[k]] = carried;
                assign_region(A, op.region[k]);
            }
        if (op.code != TJI_IF)
            for (int i = 0; i < op.nresults; i++)
                if (is_tile(fn, op.args[init + i]))
                    request(A, r, &at, opidx, init + i, &carried[i]);
        free(carried);
        *pos = at;
        return;
    }
    case TJI_YIELD: case TJI_CONDITION: { /* a CONDITION's values from operand 1 */
        const tjp_layout *carried = A->yield_layouts[r];
        int first = op.code == TJI_CONDITION;
        for (int k = first; k < op.nargs; k++)
            if (is_tile(fn, op.args[k]))
                request(A, r, &at, opidx, k, &carried[k - first]);
        *pos = at;
        return;
    }
    case TJI_STORE: case TJI_PRINT: case TJI_ASSERT: case TJI_ASSUME_TRUE: case TJI_ASYNC_COPY:
        /* No result: a store works in its coalesced layout (a TMA store in
         * the value's: the threads only write it to shared memory);
         * otherwise in whatever layout the first operand already has. */
        if (!is_tile(fn, op.args[0]))
            return;
        if (op.code == TJI_STORE && tjp_tma_store_fits(fn, opidx) && tma_store_layout(A, op.args[1], &L, 0))
            break;
        if (coalesced_of(A, opidx))
            L = *coalesced_of(A, opidx);
        else if (A->set[op.args[0]])
            L = A->of[op.args[0]];
        else
            default_of(A, op.args[0], &L);
        break;
    case TJI_LOAD: case TJI_ATOMIC: case TJI_ATOMIC_CAS:
        if (!is_tile(fn, op.result))
            return;
        if (coalesced_of(A, opidx))
            L = *coalesced_of(A, opidx);
        else
            default_of(A, op.result, &L);
        anchor_result(A, r, pos, opidx, &L);
        break;
    case TJI_REDUCE: {
        int32_t x = op.args[0];
        if (!A->set[x]) {
            unasked_of(A, x, &A->of[x]);
            A->set[x] = 1;
        }
        if (is_tile(fn, op.result)) {
            tjp_layout natural;
            tjp_layout_slice(&natural, &A->of[x], op.axis);
            anchor_result(A, r, pos, opidx, &natural);
        }
        return;
    }
    default:
        if (op.nresults != 1 || !is_tile(fn, op.result))
            return; /* scalar ops */
        if (!A->set[op.result]) {
            unasked_of(A, op.result, &A->of[op.result]);
            A->set[op.result] = 1;
        }
        L = A->of[op.result];
        break;
    }
    for (int k = 0; k < op.nargs; k++) {
        tjp_layout want;
        if (op.args[k] && operand_layout(fn, &op, k, &L, &want)) {
            int before = at;
            request(A, r, &at, opidx, k, &want);
            *pos += at - before;
        }
    }
}

static void assign_region(assigner *A, int32_t r)
{
    /* Backwards; inserted ops land at or after the current position, which
     * has been handled already. */
    for (int pos = A->fn->regions[r].nops - 1; pos >= 0; pos--) {
        int p = pos;
        assign_op(A, r, &p);
    }
}

/* --- one conversion per value and layout -------------------------------- */

/* Conversions of one value to one layout made for different users: the
 * first in program order serves every later one it dominates, which are
 * taken out of their regions (parent -1) and their results renamed. The
 * walk goes forwards; `seen` holds the conversions visible at each point
 * (earlier ones of this region and of the enclosing regions). */
typedef struct seen_list {
    int32_t n, cap;
    int32_t *op;
} seen_list;

static void merge_converts(assigner *A, int32_t r, seen_list *seen, int32_t *rename)
{
    tji_func *fn = A->fn;
    int32_t outer = seen->n;
    const tji_region *reg = &fn->regions[r];
    for (int32_t i = 0; i < reg->nops; i++) {
        int32_t opi = reg->ops[i];
        tji_rename_operands(fn, opi, rename);
        const tji_op *op = &fn->ops[opi];
        if (op->code == TJI_CONVERT) {
            int32_t same = 0;
            for (int32_t j = 0; j < seen->n && !same; j++) {
                const tji_op *other = &fn->ops[seen->op[j]];
                if (other->args[0] == op->args[0] && tjp_layout_equal(&A->of[other->result], &A->of[op->result]))
                    same = other->result;
            }
            if (same) {
                rename[op->result] = same;
                tji_detach_op(fn, opi);
                continue;
            }
            if (seen->n == seen->cap) {
                seen->cap = seen->cap ? 2 * seen->cap : 16;
                seen->op = tjs_xrealloc(seen->op, sizeof *seen->op * (size_t)seen->cap);
            }
            seen->op[seen->n++] = opi;
        }
        for (int k = 0; k < 2; k++)
            if (op->region[k] >= 0)
                merge_converts(A, op->region[k], seen, rename);
    }
    tji_drop_detached(fn, r);
    seen->n = outer;
}

/* Elements per global access and per run of consecutive addresses: the
 * coalescing pass's where the access ended up in the layout it was chosen
 * for (always, for a table made for this function), else 1. */
static void access_widths(const assigner *A, tjp_layout_plan *plan)
{
    const tji_func *fn = A->fn;
    plan->vector = tjs_xcalloc((size_t)fn->nops + 1, 1);
    plan->addr_run = tjs_xcalloc((size_t)fn->nops + 1, 1);
    for (int32_t i = 0; i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        const tjp_layout *L = coalesced_of(A, i);
        plan->vector[i] = plan->addr_run[i] = 1;
        if (!L || op->parent < 0 ||
            (op->code != TJI_LOAD && op->code != TJI_STORE && op->code != TJI_ASYNC_COPY))
            continue;
        int32_t anchor = op->code == TJI_LOAD ? op->result : op->args[0];
        if (tjp_layout_equal(&A->of[anchor], L) && tjp_layout_equal(&A->of[op->args[0]], L)) {
            plan->vector[i] = (uint8_t)A->co->of[i].vector;
            plan->addr_run[i] = (uint8_t)A->co->of[i].addr_run;
        }
    }
}

tj_status tjp_assign_layouts(tji_func *fn, int num_warps, const tjp_coalesce_result *coalesced,
                             tjp_layout_plan *plan)
{
    if (num_warps < 1 || num_warps > 32 || (num_warps & (num_warps - 1)))
        return tjs_error(TJ_ERR_LAUNCH, "kernel '%s': num_warps %d is not a power of two in 1..32",
                         fn->name, num_warps);
    if (!plan->dot) /* no choices made: every DOT in the FMA form */
        tjp_accelerate_dots(fn, &(tjp_target){.num_warps = num_warps}, NULL, plan);
    int32_t nops_before = fn->nops;
    assigner A = {.fn = fn, .num_warps = num_warps, .co = coalesced, .dot = plan->dot};
    ensure(&A);
    A.yield_layouts = tjs_xcalloc((size_t)fn->nregions + 1, sizeof *A.yield_layouts);
    assign_region(&A, 0);
    free(A.yield_layouts);
    ensure(&A);
    for (int32_t v = 1; v <= fn->nvalues; v++)
        if (is_tile(fn, v) && !A.set[v])
            default_of(&A, v, &A.of[v]);
    seen_list seen = {0};
    int32_t *rename = tjs_xcalloc((size_t)fn->nvalues + 1, sizeof *rename);
    merge_converts(&A, 0, &seen, rename);
    free(rename);
    free(seen.op);
    free(A.set);
    plan->num_warps = num_warps;
    plan->nvalues = fn->nvalues;
    plan->of = A.of;
    plan->equal_to = A.equal_to;
    /* ops the pass added have no choice */
    plan->dot = tjs_xrealloc(plan->dot, sizeof *plan->dot * ((size_t)fn->nops + 1));
    memset(plan->dot + nops_before, 0, sizeof *plan->dot * ((size_t)(fn->nops - nops_before) + 1));
    plan->nops = fn->nops;
    access_widths(&A, plan);
    return TJ_OK;
}

void tjp_layout_plan_free(tjp_layout_plan *plan)
{
    free(plan->of);
    free(plan->equal_to);
    plan->equal_to = NULL;
    free(plan->vector);
    free(plan->addr_run);
    free(plan->shared);
    free(plan->barrier);
    free(plan->dot);
    plan->dot = NULL;
    free(plan->rings);
    plan->rings = NULL;
    tjp_warp_spec_free(plan->warp_spec);
    plan->warp_spec = NULL;
    tjp_pairs_free(plan->pairs);
    plan->pairs = NULL;
    plan->nrings = 0;
    plan->of = NULL;
    plan->vector = NULL;
    plan->addr_run = NULL;
    plan->shared = NULL;
    plan->shared_bytes = 0;
    plan->shared_allocated = 0;
    plan->barrier = NULL;
}
