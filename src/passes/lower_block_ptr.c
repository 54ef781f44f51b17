/* SPDX-License-Identifier: MIT */
/*
 * lower_block_ptr.c — block pointers become pointer tiles and masks.
 *
 * A block pointer (tj_make_block_ptr) stays one value from the builder to
 * here, so that the IR says "a block of a strided tensor" for as long as a
 * pass may want to know it. This pass, first in
 * both back ends' pipelines, turns every one into the ops the back ends
 * already know, as Triton's RewriteTensorPointer does:
 *
 *   the pointer tile  base + sum_d (offset_d + arange(0, B_d)) * stride_d,
 *     each term in i64 (offsets are widened before they are added, so a
 *     large matrix does not overflow 32 bits), expanded along the other
 *     dimensions and broadcast to the block; a stride that is the literal 1
 *     is no multiply at all;
 *   the mask  0 <= offset_d + arange_d < shape_d  for each dimension named
 *     in boundary_check, computed on the expanded [1.., B_d, ..1] tile and
 *     broadcast, ANDed over the dimensions;
 *   other  NaN where the load asked for NaN padding, else none (zero);
 *   on Hopper (tma_spec), for a load or store whose tensor the
 *     tensor-memory accelerator can reach at every launch of the variant
 *     (tma.c), the tensor itself too: base, shape, strides and offsets as
 *     the op's tma operands, so that the pipeliner can make a load one TMA
 *     copy and the shared-memory plan a store a TMA store — but for a TF32
 *     dot's operand whose addresses run along M or N, which wgmma needs
 *     stored K-major: the threads' copies can transpose it, TMA cannot.
 *
 * So the axis analysis sees what it sees in a hand-written kernel: along
 * the block's fast dimension, an arange plus constants, times a stride it
 * knows to be 1 (a literal, or a parameter the launch specialized as 1), and
 * the GPU vectorizes the access.
 *
 * MAKE_BLOCK_PTR and ADVANCE leave the program: each block pointer is kept
 * here as its parts (base, shape, strides, offsets: scalar value ids), and
 * ADVANCE is an i32 add per offset. A FOR or IF that carries a block pointer
 * carries its offsets and only those other parts that may change, so that
 * constants stay constants inside the loop and a stride of 1 is still seen
 * as 1. Only the offsets when the loop's yield is its block argument moved
 * by ADVANCE (through nested loops and branches as well), or an IF's two
 * yields come from one pointer: that "root" of each block pointer is found
 * first, on the unchanged program. Otherwise (the body yields a pointer it
 * made, or the branches two different ones) a part is left out where the
 * make_block_ptr behind the yield has the init's very value (a FOR) or the
 * two branches' have one value (an IF); Triton carries every part.
 *
 * The ops are rewritten in place: a LOAD or STORE keeps its index (the
 * bounds-check sites and the user's line stay its own), FOR and IF get new
 * operands, block arguments and results, and the replaced values are
 * renamed in every op after them (program order: a use follows its
 * definition). Every value the program no longer holds is retired
 * (tji_retire_value), and fn->block_ptrs_lowered tells the verifier that
 * none may come back.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

/* A block pointer's parts: scalar value ids. */
typedef struct parts {
    int32_t base, shape[TJ_MAX_RANK], strides[TJ_MAX_RANK], offsets[TJ_MAX_RANK];
} parts;

typedef struct lowering {
    tji_func *fn;
    int32_t nvalues, nops;  /* of the program as given: the arrays below */
    int32_t *root;          /* per block pointer: see the essay */
    parts *of;              /* per block pointer */
    int32_t *rename;        /* per value: its replacement, 0 if none */
    uint8_t *retire;        /* per value: no longer in the program */
    int32_t *old_result;    /* per FOR/IF op that carried a block pointer: its first */
    int32_t *old_nresults;  /*   old result and their number, for its yields */
    uint32_t *carry;        /* per carried block pointer (FOR/IF result): which of
                               base, shape and strides its op carries */
    uint8_t *made;          /* per op: a reshape this pass made a load (lowered) */
    const tjp_param_spec *tma_spec; /* tjp_lower_block_ptrs's */
    int32_t region, pos;    /* where new ops go: before the op being lowered */
    tji_loc loc;            /* the user's line of that op */
} lowering;

static int is_block(const lowering *L, int32_t v)
{
    return v > 0 && tji_is_block_ptr(tji_typeof(L->fn, v));
}

static const tji_op *yield_of(const tji_func *fn, int32_t region)
{
    const tji_region *r = &fn->regions[region];
    return &fn->ops[r->ops[r->nops - 1]];
}

/* --- roots ------------------------------------------------------------------ */

static void find_roots(lowering *L, int32_t region)
{
    tji_func *fn = L->fn;
    for (int32_t i = 0; i < fn->regions[region].nops; i++) {
        const tji_op *op = &fn->ops[fn->regions[region].ops[i]];
        for (int r = 0; r < 2; r++)
            if (op->region[r] >= 0)
                find_roots(L, op->region[r]);
        if (op->code == TJI_MAKE_BLOCK_PTR)
            L->root[op->result] = op->result;
        else if (op->code == TJI_ADVANCE)
            L->root[op->result] = L->root[op->args[0]];
        if (op->code != TJI_FOR && op->code != TJI_IF)
            continue;
        const tji_region *body = &fn->regions[op->region[0]];
        for (int k = 0; k < op->nresults; k++) {
            int32_t res = op->result + k;
            if (!is_block(L, res))
                continue;
            int32_t then = L->root[yield_of(fn, op->region[0])->args[k]];
            if (op->code == TJI_FOR)
                L->root[res] = then == body->args[k + 1] ? L->root[op->args[3 + k]] : res;
            else
                L->root[res] = then == L->root[yield_of(fn, op->region[1])->args[k]] ? then : res;
        }
    }
}

/* A block argument is its own root until its loop is seen: find_roots
 * visits the body first, so roots are set here, before. */
static void root_block_args(lowering *L)
{
    for (int32_t v = 1; v <= L->nvalues; v++)
        if (is_block(L, v) && L->fn->values[v].def_op < 0)
            L->root[v] = v;
}

/* Are only the offsets of carried block pointer res (a FOR or IF result)
 * carried? */
static int offsets_only(const lowering *L, int32_t res) { return L->root[res] != res; }

/* --- emitting ops ---------------------------------------------------------------- */

static int32_t emit(lowering *L, tji_opcode code, const int32_t *args, int n, tji_type t)
{
    int32_t op = tji_insert_op(L->fn, code, L->region, L->pos++, L->loc);
    tji_set_operands(L->fn, op, args, n);
    return tji_new_results(L->fn, op, &t, 1);
}

static tji_op *def(lowering *L, int32_t v) { return &L->fn->ops[L->fn->values[v].def_op]; }
static tji_type type(lowering *L, int32_t v) { return *tji_typeof(L->fn, v); }

static tji_type shaped(tj_dtype dt, int is_ptr, int rank, const int32_t *dims)
{
    tji_type t = {.dtype = dt, .is_ptr = (uint8_t)is_ptr, .rank = (uint8_t)rank};
    for (int d = 0; d < rank; d++)
        t.shape[d] = dims[d];
    return t;
}

static int32_t binary(lowering *L, tji_opcode code, int32_t a, int32_t b)
{
    return emit(L, code, (int32_t[]){a, b}, 2, type(L, a));
}

static int32_t cmp(lowering *L, tji_pred pred, int32_t a, int32_t b)
{
    tji_type t = type(L, a);
    t.dtype = TJ_I1;
    int32_t v = emit(L, TJI_CMP, (int32_t[]){a, b}, 2, t);
    def(L, v)->pred = pred;
    return v;
}

/* x (a scalar or a tile of rank dims) as a tile of shape t's. */
static int32_t to_shape(lowering *L, int32_t x, const tji_type *t)
{
    tji_type xt = type(L, x), want = shaped(xt.dtype, xt.is_ptr, t->rank, t->shape);
    if (tji_same_shape(&xt, &want))
        return x;
    return emit(L, xt.rank ? TJI_BROADCAST : TJI_SPLAT, &x, 1, want);
}

static int32_t constant(lowering *L, tj_dtype dt, int64_t ival, double fval)
{
    int32_t v = emit(L, TJI_CONST, NULL, 0, (tji_type){.dtype = dt});
    def(L, v)->ival = ival;
    def(L, v)->fval = fval;
    return v;
}

static int is_const(lowering *L, int32_t v, int64_t ival)
{
    const tji_value *val = tji_val(L->fn, v);
    return val->def_op >= 0 && def(L, v)->code == TJI_CONST && def(L, v)->ival == ival;
}

/* --- accesses --------------------------------------------------------------------- */

/* offset_d + arange(0, B_d) in i64, shaped [1.., B_d, ..1] for a block of
 * type bt. */
static int32_t positions(lowering *L, const parts *p, const tji_type *bt, int d)
{
    int32_t n = bt->shape[d];
    int32_t range = emit(L, TJI_ARANGE, NULL, 0, shaped(TJ_I32, 0, 1, &n));
    range = emit(L, TJI_CAST, &range, 1, shaped(TJ_I64, 0, 1, &n));
    int32_t off = emit(L, TJI_CAST, &p->offsets[d], 1, (tji_type){.dtype = TJ_I64});
    int32_t pos = binary(L, TJI_ADD, to_shape(L, off, tji_typeof(L->fn, range)), range);
    int32_t dims[TJ_MAX_RANK] = {n}, rank = 1;
    for (int j = 0; j < bt->rank; j++) {
        if (j == d)
            continue;
        memmove(dims + j + 1, dims + j, sizeof(int32_t) * (size_t)(rank - j));
        dims[j] = 1;
        rank++;
        pos = emit(L, TJI_EXPAND_DIMS, &pos, 1, shaped(TJ_I64, 0, rank, dims));
        def(L, pos)->axis = j;
    }
    return pos;
}

/* A batched descriptor's [1, R, C] block as the 2-D tile it is (TMA then
 * copies it as a box of a 3-D tensor into a 2-D ring). For the LOAD at idx
 * whose one use reshapes it to [R, C]: that use, which becomes the load;
 * else -1. */
static int32_t squeezed_use(lowering *L, int32_t idx)
{
    tji_func *fn = L->fn;
    int32_t v = fn->ops[idx].result, use = -1;
    for (int32_t i = 0; i < fn->nops; i++)
        for (int k = 0; i != idx && fn->ops[i].parent >= 0 && k < fn->ops[i].nargs; k++)
            if (fn->ops[i].args[k] == v) {
                if (use >= 0 || fn->ops[i].code != TJI_RESHAPE)
                    return -1;
                use = i;
            }
    const tji_type *bt = tji_typeof(fn, v), *rt = use >= 0 ? tji_typeof(fn, fn->ops[use].result) : NULL;
    return rt && fn->ops[use].parent == fn->ops[idx].parent && rt->rank == 2 && rt->shape[0] == bt->shape[1] &&
           rt->shape[1] == bt->shape[2] ? use : -1;
}

/* For a STORE's value of type [1, R, C] made from an [R, C] tile by a
 * reshape, expand_dims or broadcast: that tile; else 0. */
static int32_t squeezed_value(lowering *L, int32_t value)
{
    tji_func *fn = L->fn;
    int32_t d = fn->values[value].def_op;
    if (d < 0)
        return 0;
    const tji_op *op = &fn->ops[d];
    const tji_type *src = op->nargs ? tji_typeof(fn, op->args[0]) : NULL, *t = tji_typeof(fn, value);
    int flat = op->code == TJI_RESHAPE || (op->code == TJI_EXPAND_DIMS && op->axis == 0) || op->code == TJI_BROADCAST;
    return flat && src->rank == 2 && src->dtype == t->dtype && src->shape[0] == t->shape[1] &&
           src->shape[1] == t->shape[2] ? op->args[0] : 0;
}

/* Is load ld's tile (contiguous along dimension `contiguous`) an operand
 * of a TF32 dot in its region that runs along M or N? wgmma reads TF32
 * K-major only and TMA cannot transpose: such a load stays a load, whose
 * cp.async copies store it transposed (transpose_copies.c) — wgmma
 * rather than mma.sync at half the tensor cores. */
static int tf32_operand_along_mn(const tji_func *fn, const tji_op *ld, int contiguous)
{
    const tji_type *t = tji_typeof(fn, ld->result);
    for (int32_t i = 0; t->rank == 2 && t->dtype == TJ_F32 && i < fn->nops; i++) {
        const tji_op *d = &fn->ops[i];
        if (d->code != TJI_DOT || d->parent != ld->parent || d->precision != TJ_PRECISION_TF32)
            continue;
        if ((d->args[0] == ld->result && contiguous != 1) || (d->args[1] == ld->result && contiguous != 0))
            return 1;
    }
    return 0;
}

/* The LOAD or STORE at idx of block pointer bp: operand 1 becomes the
 * pointer tile, the mask and other its boundary check and padding. */
static void lower_access(lowering *L, int32_t idx)
{
    tji_func *fn = L->fn;
    int32_t bp = fn->ops[idx].args[0];
    const parts *p = &L->of[bp];
    tji_type bt = type(L, bp);
    unsigned check = fn->ops[idx].boundary_check;
    int nan = fn->ops[idx].padding == TJ_PADDING_NAN;
    tji_type full = shaped(TJ_I64, 0, bt.rank, bt.shape);
    int32_t offs = 0, mask = 0;
    for (int d = 0; d < bt.rank; d++) {
        int32_t pos = positions(L, p, &bt, d);
        int32_t term = is_const(L, p->strides[d], 1)
                           ? pos : binary(L, TJI_MUL, pos, to_shape(L, p->strides[d], tji_typeof(fn, pos)));
        term = to_shape(L, term, &full);
        offs = offs ? binary(L, TJI_ADD, offs, term) : term;
        if (!(check >> d & 1))
            continue;
        int32_t zero = to_shape(L, constant(L, TJ_I64, 0, 0), tji_typeof(fn, pos));
        int32_t above = cmp(L, TJI_GE, pos, zero);
        int32_t below = cmp(L, TJI_LT, pos, to_shape(L, p->shape[d], tji_typeof(fn, pos)));
        int32_t in = binary(L, TJI_AND, above, below);
        in = to_shape(L, in, &full);
        mask = mask ? binary(L, TJI_AND, mask, in) : in;
    }
    int32_t base = to_shape(L, p->base, &full);
    int32_t ptr = emit(L, TJI_ADDPTR, (int32_t[]){base, offs}, 2, shaped(bt.dtype, 1, bt.rank, bt.shape));
    tji_op *op = &fn->ops[idx];
    int load = op->code == TJI_LOAD;
    int contiguous = nan ? -1 : tjp_tma_access(fn, L->tma_spec, op, bt.rank, p->base, p->shape, p->strides, bt.dtype);
    if (contiguous >= 0 && load && tf32_operand_along_mn(fn, op, contiguous))
        contiguous = -1;
    if (contiguous >= 0) { /* the tensor too, for TMA (tma.c) */
        int32_t r = bt.rank, target = idx, value = load ? 0 : op->args[1];
        int32_t use = r == 3 && contiguous == 2 && bt.shape[0] == 1 && load ? squeezed_use(L, idx) : -1;
        int32_t flat = r == 3 && contiguous == 2 && bt.shape[0] == 1 && !load ? squeezed_value(L, value) : 0;
        if (use >= 0 || flat) {
            tji_type t2 = shaped(bt.dtype, 1, 2, bt.shape + 1);
            ptr = emit(L, TJI_RESHAPE, &ptr, 1, t2);
            t2.dtype = TJ_I1;
            t2.is_ptr = 0;
            mask = mask ? emit(L, TJI_RESHAPE, &mask, 1, t2) : 0;
            value = flat ? flat : value;
        }
        if (use >= 0) { /* the reshape becomes the load */
            tji_op *u = &fn->ops[use], *o = &fn->ops[idx];
            u->code = TJI_LOAD;
            u->cache = o->cache;
            u->evict = o->evict;
            u->loc = o->loc;
            L->retire[o->result] = 1;
            L->made[use] = 1;
            tji_detach_op(fn, idx);
            target = use;
        }
        int32_t args[TJI_TMA_FIRST + TJI_TMA_OPERANDS(TJ_MAX_RANK)] = {ptr, load ? mask : value, load ? 0 : mask,
                                                                        p->base};
        for (int d = 0; d < r; d++) {
            args[TJI_TMA_FIRST + 1 + d] = p->shape[d];
            args[TJI_TMA_FIRST + 1 + r + d] = d == contiguous ? constant(L, TJ_I64, 1, 0) : p->strides[d];
            args[TJI_TMA_FIRST + 1 + 2 * r + d] = p->offsets[d];
        }
        tji_set_operands(fn, target, args, TJI_TMA_FIRST + TJI_TMA_OPERANDS(r));
        fn->ops[target].tma_rank = r;
        fn->ops[target].boundary_check = 0;
        fn->ops[target].padding = TJ_PADDING_ZERO;
    } else if (load) {
        int32_t other = nan ? to_shape(L, constant(L, bt.dtype, 0, NAN), &full) : 0;
        tji_set_operands(fn, idx, (int32_t[]){ptr, mask, other}, 3);
    } else {
        tji_set_operands(fn, idx, (int32_t[]){ptr, op->args[1], mask}, 3);
    }
    fn->ops[idx].boundary_check = 0;
    fn->ops[idx].padding = TJ_PADDING_ZERO;
}

/* --- carried block pointers -------------------------------------------------------- */

/* Part i of p for rank r: 0 the base, 1..r the shape, r+1..2r the strides
 * (MAKE_BLOCK_PTR's operand i); the offsets are always carried. */
static int32_t *part(parts *p, int i, int r)
{
    return i == 0 ? &p->base : i <= r ? &p->shape[i - 1] : &p->strides[i - 1 - r];
}

static int32_t renamed(const lowering *L, int32_t v)
{
    return v <= L->nvalues && L->rename[v] ? L->rename[v] : v;
}

/* Operand i of the MAKE_BLOCK_PTR that made root (renamed as its op will
 * be), or 0 when root is no such value. */
static int32_t made_with(const lowering *L, int32_t root, int i)
{
    const tji_value *v = tji_val(L->fn, root);
    if (v->def_op < 0 || L->fn->ops[v->def_op].code != TJI_MAKE_BLOCK_PTR)
        return 0;
    return renamed(L, L->fn->ops[v->def_op].args[i]);
}

/* Which parts the FOR or IF at op carries for its block-pointer result k
 * (L->carry[res], bit i: part i), and the values of the others (*inv). A
 * FOR: those a re-made pointer takes from the init as they are; an IF:
 * those both branches make from one value. */
static void plan_slot(lowering *L, const tji_op *op, int k, parts *inv)
{
    const tji_func *fn = L->fn;
    int32_t res = op->result + k;
    int r = tji_typeof(fn, res)->rank;
    int32_t then = L->root[yield_of(fn, op->region[0])->args[k]];
    if (op->code == TJI_FOR)
        *inv = L->of[op->args[3 + k]];
    else if (offsets_only(L, res))
        *inv = L->of[L->root[res]];
    L->carry[res] = 0;
    if (offsets_only(L, res))
        return;
    int32_t other = op->code == TJI_IF ? L->root[yield_of(fn, op->region[1])->args[k]] : 0;
    for (int i = 0; i <= 2 * r; i++) {
        int32_t a = made_with(L, then, i);
        int same = op->code == TJI_FOR ? a && a == *part(inv, i, r) : a && a == made_with(L, other, i);
        if (same)
            *part(inv, i, r) = a;
        else
            L->carry[res] |= 1u << i;
    }
}

/* The parts of block pointer v that its FOR or IF carries (res: the op's
 * old result for v), appended to ids (and their types to types). */
static int carried_parts(lowering *L, int32_t v, int32_t res, int32_t *ids, tji_type *types)
{
    const tji_type *t = tji_typeof(L->fn, res);
    int n = 0, r = t->rank;
    for (int i = 0; i <= 2 * r; i++) {
        if (!(L->carry[res] >> i & 1))
            continue;
        ids[n] = *part(&L->of[v], i, r);
        types[n++] = i ? (tji_type){.dtype = TJ_I64} : (tji_type){.dtype = t->dtype, .is_ptr = 1};
    }
    for (int d = 0; d < r; d++) {
        ids[n] = L->of[v].offsets[d];
        types[n++] = (tji_type){.dtype = TJ_I32};
    }
    return n;
}

/* The parts of the block pointer old (a block argument or result for the
 * op's old result res): the carried ones from the new values at vals, the
 * others from inv. Returns how many values it took. */
static int take_parts(lowering *L, int32_t old, int32_t res, const parts *inv, const int32_t *vals)
{
    int r = tji_typeof(L->fn, res)->rank, n = 0;
    parts *p = &L->of[old];
    for (int i = 0; i <= 2 * r; i++)
        *part(p, i, r) = L->carry[res] >> i & 1 ? vals[n++] : *part((parts *)inv, i, r);
    for (int d = 0; d < r; d++)
        p->offsets[d] = vals[n++];
    return n;
}

static int carries_block(const lowering *L, const tji_op *op)
{
    for (int k = 0; k < op->nresults; k++)
        if (is_block(L, op->result + k))
            return 1;
    return 0;
}

/* New results for the FOR or IF at idx: per old result k a non-block
 * value, or the parts of a block pointer (inv[k] the uncarried ones). */
static void replace_results(lowering *L, int32_t idx, const tji_type *types, int n,
                            const parts *inv)
{
    tji_func *fn = L->fn;
    int32_t first = fn->ops[idx].result, count = fn->ops[idx].nresults;
    int32_t v = tji_new_results(fn, idx, types, n);
    int32_t *vals = tjs_xmalloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++)
        vals[i] = v + i;
    for (int k = 0, j = 0; k < count; k++) {
        int32_t res = first + k;
        L->retire[res] = 1;
        if (is_block(L, res))
            j += take_parts(L, res, res, &inv[k], vals + j);
        else
            L->rename[res] = vals[j++];
    }
    free(vals);
}

static void lower_region(lowering *L, int32_t region);

/* Rewrites the FOR or IF at idx to carry parts (its regions are lowered
 * after, by the caller). */
static void lower_carrier(lowering *L, int32_t idx)
{
    tji_func *fn = L->fn;
    tji_op *op = &fn->ops[idx];
    int is_for = op->code == TJI_FOR;
    int32_t first = op->result, count = op->nresults, body = op->region[0];
    size_t most = (size_t)count * (1 + 3 * TJ_MAX_RANK) + 4;
    int32_t *ids = tjs_xmalloc(sizeof(int32_t) * most);   /* FOR: lo, hi, step, inits */
    tji_type *types = tjs_xmalloc(sizeof(tji_type) * most); /* FOR: iv, carried */
    parts *inv = tjs_xcalloc((size_t)count + 1, sizeof *inv);
    int n = 0, nids = 0;
    if (is_for) {
        memcpy(ids, op->args, 3 * sizeof(int32_t));
        nids = 3;
        types[n++] = type(L, op->args[0]);
    }
    for (int k = 0; k < count; k++) {
        int32_t res = first + k;
        if (!is_block(L, res)) {
            if (is_for)
                ids[nids++] = op->args[3 + k];
            types[n++] = type(L, res);
            continue;
        }
        plan_slot(L, op, k, &inv[k]);
        int m = carried_parts(L, is_for ? op->args[3 + k] : first + k, res, ids + nids, types + n);
        n += m;
        nids += m;
    }
    L->old_result[idx] = first;
    L->old_nresults[idx] = count;
    if (is_for) {
        tji_set_operands(fn, idx, ids, nids);
        tji_region *r = &fn->regions[body];
        int32_t *old_args = tjs_xmalloc(sizeof(int32_t) * (size_t)r->nargs);
        memcpy(old_args, r->args, sizeof(int32_t) * (size_t)r->nargs);
        tji_set_block_args(fn, body, types, n);
        const int32_t *vals = fn->regions[body].args;
        L->rename[old_args[0]] = vals[0];
        L->retire[old_args[0]] = 1;
        for (int k = 0, j = 1; k < count; k++) {
            int32_t a = old_args[k + 1];
            L->retire[a] = 1;
            if (is_block(L, a))
                j += take_parts(L, a, first + k, &inv[k], vals + j);
            else
                L->rename[a] = vals[j++];
        }
        free(old_args);
        replace_results(L, idx, types + 1, n - 1, inv);
    } else {
        replace_results(L, idx, types, n, inv);
    }
    free(ids);
    free(types);
    free(inv);
}

/* The YIELD at idx ending region: the parts of each block pointer it
 * yields, as its FOR or IF now carries them. */
static void lower_yield(lowering *L, int32_t idx, int32_t region)
{
    tji_func *fn = L->fn;
    int32_t owner = fn->regions[region].parent_op;
    int32_t first = L->old_result[owner], count = L->old_nresults[owner];
    if (!first)
        return;
    int32_t *ids = tjs_xmalloc(sizeof(int32_t) * (size_t)(count * (1 + 3 * TJ_MAX_RANK) + 1));
    tji_type *types = tjs_xmalloc(sizeof(tji_type) * (size_t)(count * (1 + 3 * TJ_MAX_RANK) + 1));
    int n = 0;
    for (int k = 0; k < count; k++) {
        int32_t y = fn->ops[idx].args[k];
        if (is_block(L, first + k))
            n += carried_parts(L, y, first + k, ids + n, types + n);
        else
            ids[n++] = y;
    }
    tji_set_operands(fn, idx, ids, n);
    free(ids);
    free(types);
}

/* --- the walk ------------------------------------------------------------------------ */

static void lower_op(lowering *L, int32_t idx)
{
    tji_func *fn = L->fn;
    if (L->made[idx]) /* its operands are this pass's */
        return;
    tji_rename_operands(fn, idx, L->rename);
    tji_op *op = &fn->ops[idx];
    L->loc = op->loc;
    switch (op->code) {
    case TJI_MAKE_BLOCK_PTR: {
        int r = tji_typeof(fn, op->result)->rank;
        parts *p = &L->of[op->result];
        p->base = op->args[0];
        for (int d = 0; d < r; d++) {
            p->shape[d] = op->args[1 + d];
            p->strides[d] = op->args[1 + r + d];
            p->offsets[d] = op->args[1 + 2 * r + d];
        }
        L->retire[op->result] = 1;
        tji_detach_op(fn, idx);
        return;
    }
    case TJI_ADVANCE: {
        int32_t bp = op->args[0], res = op->result, r = tji_typeof(fn, res)->rank;
        parts p = L->of[bp];
        for (int d = 0; d < r; d++) /* by a literal 0: the same offset */
            if (!is_const(L, fn->ops[idx].args[1 + d], 0))
                p.offsets[d] = binary(L, TJI_ADD, p.offsets[d], fn->ops[idx].args[1 + d]);
        L->of[res] = p;
        L->retire[res] = 1;
        tji_detach_op(fn, idx);
        return;
    }
    case TJI_LOAD: case TJI_STORE:
        if (is_block(L, op->args[0]))
            lower_access(L, idx);
        return;
    case TJI_YIELD:
        lower_yield(L, idx, op->parent);
        return;
    case TJI_FOR: case TJI_IF: case TJI_WHILE: { /* a WHILE carries none (the builder) */
        if (carries_block(L, op))
            lower_carrier(L, idx);
        int32_t region = L->region, pos = L->pos;
        for (int r = 0; r < 2; r++)
            if (fn->ops[idx].region[r] >= 0)
                lower_region(L, fn->ops[idx].region[r]);
        L->region = region;
        L->pos = pos;
        return;
    }
    default:
        return;
    }
}

static void lower_region(lowering *L, int32_t region)
{
    tji_func *fn = L->fn;
    int32_t n = fn->regions[region].nops;
    int32_t *ops = tjs_xmalloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    memcpy(ops, fn->regions[region].ops, sizeof(int32_t) * (size_t)n);
    L->region = region;
    L->pos = 0;
    for (int32_t i = 0; i < n; i++) {
        while (fn->regions[region].ops[L->pos] != ops[i])
            L->pos++; /* past the ops inserted before it */
        lower_op(L, ops[i]);
        L->region = region;
        L->pos++;
    }
    free(ops);
    tji_drop_detached(fn, region);
}

tj_status tjp_lower_block_ptrs(tji_func *fn, const tjp_param_spec *tma_spec)
{
    lowering L = {.fn = fn, .nvalues = fn->nvalues, .nops = fn->nops, .tma_spec = tma_spec};
    int any = 0;
    for (int32_t v = 1; v <= L.nvalues && !any; v++)
        any = is_block(&L, v);
    fn->block_ptrs_lowered = 1;
    if (!any)
        return TJ_OK;
    size_t nv = (size_t)L.nvalues + 1, no = (size_t)L.nops + 1;
    L.root = tjs_xcalloc(nv, sizeof *L.root);
    L.of = tjs_xcalloc(nv, sizeof *L.of);
    L.rename = tjs_xcalloc(nv, sizeof *L.rename);
    L.retire = tjs_xcalloc(nv, 1);
    L.old_result = tjs_xcalloc(no, sizeof *L.old_result);
    L.old_nresults = tjs_xcalloc(no, sizeof *L.old_nresults);
    L.carry = tjs_xcalloc(nv, sizeof *L.carry);
    L.made = tjs_xcalloc(no, 1);
    root_block_args(&L);
    find_roots(&L, 0);
    lower_region(&L, 0);
    for (int32_t v = 1; v <= L.nvalues; v++)
        if (L.retire[v] || is_block(&L, v))
            tji_retire_value(fn, v);
    free(L.root);
    free(L.of);
    free(L.rename);
    free(L.retire);
    free(L.old_result);
    free(L.old_nresults);
    free(L.carry);
    free(L.made);
    return TJ_OK;
}
