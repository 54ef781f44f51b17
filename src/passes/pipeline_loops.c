/* SPDX-License-Identifier: MIT */
/*
 * pipeline_loops.c — software pipelining of the loads that feed a dot
 * (Triton's loop pipeliner, simplified), a GPU pass run before axis info.
 *
 * In a TJ_FOR whose step is a positive constant (bounds of 32 or 64
 * bits), a LOAD directly in the body whose result reaches a DOT operand
 * (directly or through CONVERTs; through tj_trans too where the dot can
 * run as wgmma, which reads the ring through the transpose: wgmma.c) is
 * issued num_stages - 1 iterations
 * ahead (num_stages: the loop's own where TJ_FOR_OPTS gave one, as
 * Triton's tl.range, else the launch's; 1 leaves the loop alone): its tile
 * goes into a ring of S = num_stages shared buffers with
 * ASYNC_COPY (cp.async), and where the load was read, a LOCAL_LOAD reads
 * the slot of the current iteration.
 *
 * Which loads qualify: the load's pointer and mask come from a slice of
 * the body (pure ops: arithmetic, shapes, constants, addptr) that depends
 * only on the induction variable, values from outside the loop and
 * carried values that the slice alone updates (the tutorial's
 * `a_ptrs += BK`): no value of the slice is used by anything but the
 * slice, the loads and the yield of its own carried values, and the loop's
 * results for those carried values are unused. Such a slice can be run
 * S - 1 iterations early without changing anything else: the pass moves it
 * there in place. A load whose address depends on a loaded value or the
 * accumulator, a volatile load, a load with a non-zero `other` (the copy
 * fills zeros) stay as they are, and so do all the loads of a loop that a
 * store or atomic runs inside of, or before and into a buffer the loop may
 * read (a copy issued ahead must not read what another thread may still
 * write). The loads of one loop are
 * taken together where their slices allow it, else one by one.
 *
 * The rewrite, for iterations i = 0, 1, ... (iv = lo + i * step):
 *   before the loop, for j = 0 .. S-2: the slice cloned with iv = lo + j *
 *     step and the carried values of iteration j, a copy into slot j masked
 *     also by "iteration j exists", a commit; the loop's initial values of
 *     the slice's carried values become those of iteration S-1;
 *   at the top of the body: wait until at most S-2 groups are in flight
 *     (iteration i's copies have landed; the code generator adds the
 *     barrier that makes every thread's copies visible, after which nobody
 *     still reads slot (i-1) % S), then LOCAL_LOAD of slot i % S;
 *   the slice, now for iv + (S-1) * step, and the copies for iteration
 *     i+S-1 into slot (i+S-1) % S, masked by "that iteration exists";
 *     a commit before the yield;
 *   after the loop: wait for every group (the last copies write nothing
 *     anyone reads, but shared memory must be quiet before it is reused).
 * The slot read is a carried i32 that wraps by a compare and select, not
 * (iv - lo) / step % S: LLVM strength-reduces that remainder times the
 * slot size into a subtraction from every shared address register, each
 * iteration (32 more instructions and registers in a tf32 loop, enough to
 * spill). "Iteration exists" is an unsigned comparison of hi - iv with the
 * distance ahead, which cannot overflow.
 *
 * A loop whose dot will run as wgmma (wgmma.c: both operands from the
 * loads chosen here, the target sm_90a) gets rings of S + 1 slots, still
 * S - 1 iterations ahead: its wgmma group stays in flight until the next
 * iteration's has been issued (accelerate_dot.c), so the slot iteration
 * i-1 read must not be the one iteration i refills. With one slot more,
 * iteration i writes the slot of i-2, whose wgmma every warpgroup waited
 * for before the barrier at the top of iteration i (Triton, too, gives
 * asynchronous wgmma loops one buffer more). A load that carries its
 * tensor (a block pointer's, lower_block_ptr.c) and feeds a dot that can
 * run as wgmma hands it and "the iteration exists" to its copies, which
 * the shared-memory plan may then run as TMA (tma.c); elsewhere the
 * tensor is dropped.
 */
#include <stdlib.h>
#include <string.h>

#include "passes.h"

/* --- emitting ops ------------------------------------------------------------ */

/* Where new ops go: region at position *pos, which moves on past them. */
typedef struct cursor {
    tji_func *fn;
    int32_t region;
    int pos;
    tji_loc loc;
} cursor;

static int32_t emit(cursor *c, tji_opcode code, const int32_t *args, int nargs,
                    const tji_type *rt)
{
    int32_t op = tji_insert_op(c->fn, code, c->region, c->pos++, c->loc);
    tji_set_operands(c->fn, op, args, nargs);
    return rt ? tji_new_results(c->fn, op, rt, 1) : 0;
}

static tji_type scalar(tj_dtype dt) { return (tji_type){.dtype = dt}; }

static int32_t emit_const(cursor *c, tj_dtype dt, int64_t v)
{
    tji_type t = scalar(dt);
    int32_t r = emit(c, TJI_CONST, NULL, 0, &t);
    c->fn->ops[c->fn->values[r].def_op].ival = v;
    return r;
}

static int32_t emit2(cursor *c, tji_opcode code, int32_t a, int32_t b, const tji_type *rt)
{
    return emit(c, code, (int32_t[]){a, b}, 2, rt);
}

static void emit_wait(cursor *c, int in_flight)
{
    emit(c, TJI_ASYNC_WAIT, NULL, 0, NULL);
    c->fn->ops[c->fn->regions[c->region].ops[c->pos - 1]].ival = in_flight;
}

static int32_t emit_cmp(cursor *c, tji_pred pred, int32_t a, int32_t b)
{
    tji_type t = scalar(TJ_I1);
    int32_t r = emit2(c, TJI_CMP, a, b, &t);
    c->fn->ops[c->fn->values[r].def_op].pred = pred;
    return r;
}

static int32_t emit_cast(cursor *c, int32_t x, tj_dtype to)
{
    if (tji_typeof(c->fn, x)->dtype == to)
        return x;
    tji_type t = scalar(to);
    return emit(c, TJI_CAST, &x, 1, &t);
}

static tj_dtype unsigned_of(tj_dtype dt)
{
    switch (dt) {
    case TJ_I8: return TJ_U8;
    case TJ_I16: return TJ_U16;
    case TJ_I32: return TJ_U32;
    case TJ_I64: return TJ_U64;
    default: return dt;
    }
}

/* --- the loop and its loads --------------------------------------------------- */

typedef struct loop {
    tji_func *fn;
    int32_t op, body;           /* the FOR and its body region */
    int32_t iv;
    tj_dtype dt, udt;           /* the bounds' dtype and its unsigned twin */
    int64_t step;
    int32_t yield;              /* the body's YIELD op */
    int ncarried;
    int32_t nops;               /* ops before the rewrite: what the sets below index */
    const tjp_target *t;        /* the target (NULL: none) */
} loop;

/* Op i is in set (indexed by the ops before the rewrite). */
static int has(const loop *L, const uint8_t *set, int32_t i) { return i < L->nops && set[i]; }

/* Is v zero in every element (a zero constant, splat or not)? */
static int is_zero(const tji_func *fn, int32_t v)
{
    int32_t d = fn->values[v].def_op;
    if (d >= 0 && fn->ops[d].code == TJI_SPLAT)
        d = fn->values[fn->ops[d].args[0]].def_op;
    return d >= 0 && fn->ops[d].code == TJI_CONST && fn->ops[d].ival == 0 && fn->ops[d].fval == 0;
}

/* Can target t (NULL: any) run DOT op as wgmma? */
static int wgmma_dot(const tji_func *fn, const tji_op *op, const tjp_target *t)
{
    return !t || tjp_wgmma_runs(fn, op, t);
}

/* Does value v reach operand a or b of a DOT, through CONVERTs at most
 * (with wgmma non-NULL: of a DOT that target can run as wgmma, also
 * through tj_trans, which wgmma reads from the ring as it is)? */
static int reaches_dot(const tji_func *fn, int32_t v, int depth, const tjp_target *wgmma)
{
    for (int32_t i = 0; i < fn->nops && depth < 8; i++) {
        const tji_op *u = &fn->ops[i];
        if (u->parent < 0)
            continue;
        for (int k = 0; k < u->nargs; k++)
            if (u->args[k] == v &&
                ((u->code == TJI_DOT && k < 2 && wgmma_dot(fn, u, wgmma)) ||
                 ((u->code == TJI_CONVERT || (wgmma && tjp_is_trans2(fn, u))) &&
                  reaches_dot(fn, u->result, depth + 1, wgmma))))
                return 1;
    }
    return 0;
}

/* A load to pipeline: its result feeds a dot (a wgmma dot of target t
 * also through tj_trans), its mask fills zeros. */
static int is_candidate(const loop *L, int32_t i)
{
    const tji_op *op = &L->fn->ops[i];
    return op->code == TJI_LOAD && !op->is_volatile && tji_typeof(L->fn, op->args[0])->rank > 0 &&
           (!op->args[2] || is_zero(L->fn, op->args[2])) &&
           (reaches_dot(L->fn, op->result, 0, NULL) || (L->t && reaches_dot(L->fn, op->result, 0, L->t)));
}

/* Ops a slice may hold: pure, one result, no region. */
static int sliceable(const tji_op *op)
{
    tji_opcode c = op->code;
    return c == TJI_CONST || c == TJI_PROGRAM_ID || c == TJI_NUM_PROGRAMS ||
           c == TJI_LOGICAL_PROGRAMS || c == TJI_ARANGE ||
           c == TJI_BROADCAST || c == TJI_EXPAND_DIMS || c == TJI_RESHAPE || c == TJI_PERMUTE ||
           c == TJI_ASSUME || tji_is_pure_elementwise(op);
}

/* The slice of a set of loads: per op index, in_slice; per carried value k,
 * carried[k]. */
typedef struct slice {
    uint8_t *op;        /* per op index */
    uint8_t *carried;   /* per carried value */
} slice;

/* Adds v and what it depends on inside the body; 0 where something it
 * depends on cannot move ahead. */
static int add_value(const loop *L, slice *s, int32_t v)
{
    const tji_func *fn = L->fn;
    const tji_value *val = &fn->values[v];
    if (v == L->iv)
        return 1;
    if (val->def_op < 0) {
        if (val->def_region != L->body)
            return 1; /* from outside the loop */
        int k = 0;
        while (fn->regions[L->body].args[k + 1] != v)
            k++;
        if (s->carried[k])
            return 1;
        s->carried[k] = 1;
        return add_value(L, s, fn->ops[L->yield].args[k]);
    }
    const tji_op *op = &fn->ops[val->def_op];
    if (!tji_region_within(fn, op->parent, L->body))
        return 1;
    if (op->parent != L->body || !sliceable(op))
        return 0;
    if (s->op[val->def_op])
        return 1;
    s->op[val->def_op] = 1;
    for (int k = 0; k < op->nargs; k++)
        if (op->args[k] && !add_value(L, s, op->args[k]))
            return 0;
    return 1;
}

/* Operand k of a candidate load is part of its address (the pointer, the
 * mask, its tensor's for TMA: every one but `other`, zero). */
static int address_operand(int k) { return k != 2; }

/* Adds what the address of candidate load op depends on. */
static int add_load(const loop *L, slice *s, const tji_op *op)
{
    for (int k = 0; k < op->nargs; k++)
        if (address_operand(k) && op->args[k] && !add_value(L, s, op->args[k]))
            return 0;
    return 1;
}

/* Is value v one the slice defines (a result of its ops, a carried value)? */
static int slice_defines(const loop *L, const slice *s, int32_t v)
{
    const tji_value *val = &L->fn->values[v];
    if (val->def_op >= 0)
        return s->op[val->def_op];
    if (val->def_region != L->body || v == L->iv)
        return 0;
    int k = 0;
    while (L->fn->regions[L->body].args[k + 1] != v)
        k++;
    return s->carried[k];
}

/* The slice of the loads marked in chosen, in *s; 0 where it does not
 * qualify (the essay's conditions). */
static int make_slice(const loop *L, const uint8_t *chosen, slice *s)
{
    const tji_func *fn = L->fn;
    memset(s->op, 0, (size_t)fn->nops);
    memset(s->carried, 0, (size_t)L->ncarried + 1);
    for (int32_t i = 0; i < fn->nops; i++)
        if (chosen[i] && !add_load(L, s, &fn->ops[i]))
            return 0;
    for (int32_t i = 0; i < fn->nops; i++) {
        const tji_op *u = &fn->ops[i];
        if (u->parent < 0)
            continue;
        for (int k = 0; k < u->nargs; k++) {
            int32_t a = u->args[k];
            if (!a || !slice_defines(L, s, a) || s->op[i] || (chosen[i] && address_operand(k)))
                continue;
            if (i == L->yield && s->carried[k])
                continue;
            return 0; /* the slice's value is used elsewhere */
        }
        for (int k = 0; k < L->ncarried; k++)
            for (int a = 0; s->carried[k] && a < u->nargs; a++)
                if (u->args[a] == fn->ops[L->op].result + k)
                    return 0; /* the loop's result would be S-1 iterations ahead */
    }
    return 1;
}

/* The copy, made before position *pos of the body, of slice value v (an
 * op result computed from the induction variable and outside values
 * alone) and of the slice ops it needs; copy[] maps the ones made. */
static int32_t copy_of(loop *L, const slice *s, int32_t v, int *pos, int32_t *copy)
{
    tji_func *fn = L->fn;
    int32_t d = fn->values[v].def_op;
    if (d < 0 || !has(L, s->op, d))
        return v;
    if (copy[v])
        return copy[v];
    tji_op orig = fn->ops[d];
    int32_t args[TJ_MAX_RANK] = {0}; /* a sliceable op has at most 4 operands (INLINE_ASM's) */
    for (int k = 0; k < orig.nargs && k < TJ_MAX_RANK; k++)
        args[k] = orig.args[k] ? copy_of(L, s, orig.args[k], pos, copy) : 0;
    int32_t op = tji_insert_clone(fn, &orig, L->body, (*pos)++, args);
    return copy[v] = tji_new_results(fn, op, tji_typeof(fn, v), 1);
}

/* Does slice value v depend on a carried value (through the slice)? */
static int on_carried(const loop *L, const slice *s, int32_t v, int depth)
{
    const tji_func *fn = L->fn;
    const tji_value *val = &fn->values[v];
    if (v == L->iv || (val->def_op < 0 && val->def_region != L->body))
        return 0;
    if (val->def_op < 0 || depth > 64)
        return 1;
    const tji_op *op = &fn->ops[val->def_op];
    for (int k = 0; has(L, s->op, val->def_op) && k < op->nargs; k++)
        if (op->args[k] && on_carried(L, s, op->args[k], depth + 1))
            return 1;
    return 0;
}

/* Values of the candidate loads' slice that other ops of the body read too
 * (attention's key indices mask both the loads of K and V and the scores)
 * would keep the slice from moving ahead; where one is computed from the
 * induction variable and outside values alone, those readers get a copy
 * of its ops of their own, in place. Ops are added: L->nops grows. */
static void unshare_slice(loop *L)
{
    tji_func *fn = L->fn;
    int32_t n = fn->nops;
    uint8_t *chosen = tjs_xcalloc((size_t)n + 1, 1);
    slice s = {tjs_xcalloc((size_t)n + 1, 1), tjs_xcalloc((size_t)L->ncarried + 1, 1)};
    int ok = 1;
    for (int p = 0; p < fn->regions[L->body].nops; p++)
        chosen[fn->regions[L->body].ops[p]] = (uint8_t)is_candidate(L, fn->regions[L->body].ops[p]);
    for (int32_t i = 0; ok && i < n; i++)
        if (chosen[i])
            ok = add_load(L, &s, &fn->ops[i]);
    int32_t *copy = ok ? tjs_xcalloc((size_t)fn->nvalues + 1, sizeof *copy) : NULL;
    for (int pos = 0; ok && pos < fn->regions[L->body].nops; pos++) {
        int32_t u = fn->regions[L->body].ops[pos];
        if (has(L, s.op, u))
            continue;
        for (int k = 0; k < fn->ops[u].nargs; k++) {
            int32_t v = fn->ops[u].args[k], d = v ? fn->values[v].def_op : -1;
            if (d < 0 || !has(L, s.op, d) || (has(L, chosen, u) && address_operand(k)) || on_carried(L, &s, v, 0))
                continue;
            int at = pos; /* u moves right past the copies */
            int32_t c = copy_of(L, &s, v, &at, copy);
            pos = at;
            tji_set_operand(fn, u, k, c);
        }
    }
    free(copy);
    free(s.op);
    free(s.carried);
    free(chosen);
    L->nops = fn->nops;
}

/* --- the rewrite ----------------------------------------------------------------- */

/* The copy of load orig (its operands args) into slot of its ring (the
 * constant j where slot is 0), at c: masked by the load's mask and "the
 * iteration exists"; with the load's tensor (for TMA, tma.c) where tma. */
static void emit_copy(cursor *c, const tji_op *orig, const int32_t *args, int32_t slot, int j, int32_t exists,
                      int ring, int slots, const tjp_target *t)
{
    tji_func *fn = c->fn;
    /* only wgmma's rings are in the layout TMA writes (tma.c) */
    int tma = orig->tma_rank && t && reaches_dot(fn, orig->result, 0, t);
    tji_type mt = *tji_typeof(fn, orig->args[0]);
    mt.is_ptr = 0;
    mt.dtype = TJ_I1;
    int32_t mask = emit(c, TJI_SPLAT, &exists, 1, &mt);
    if (args[1])
        mask = emit2(c, TJI_AND, args[1], mask, &mt);
    if (!slot)
        slot = emit_const(c, TJ_I32, j);
    int32_t ops[TJI_TMA_FIRST + TJI_TMA_OPERANDS(TJ_MAX_RANK) + 1] = {args[0], slot, mask};
    int n = TJI_TMA_FIRST, r = tma ? orig->tma_rank : 0;
    for (int k = 0; r && k < TJI_TMA_OPERANDS(r); k++)
        ops[n++] = args[TJI_TMA_FIRST + k];
    if (r)
        ops[n++] = exists;
    c->loc = orig->loc;
    int32_t copy = tji_insert_op(fn, TJI_ASYNC_COPY, c->region, c->pos++, orig->loc);
    tji_set_operands(fn, copy, ops, n);
    fn->ops[copy].ring = ring;
    fn->ops[copy].ring_slots = slots;
    fn->ops[copy].cache = orig->cache;
    fn->ops[copy].tma_rank = r;
}

/* The slice's ops cloned before the loop for iteration j (rename maps the
 * body's values to this iteration's), then its copies and a commit. */
static void emit_prologue_stage(loop *L, const slice *s, const uint8_t *chosen,
                                const int32_t *ring, int slots, const tjp_target *t, int j, int32_t *rename,
                                cursor *c)
{
    tji_func *fn = L->fn;
    int32_t lo = fn->ops[L->op].args[0], hi = fn->ops[L->op].args[1];
    tji_loc loop_loc = fn->ops[L->op].loc;
    c->loc = loop_loc;
    rename[L->iv] = j ? emit2(c, TJI_ADD, lo, emit_const(c, L->dt, j * L->step),
                              tji_typeof(fn, lo))
                      : lo;
    /* iteration j exists: lo < hi and (unsigned)(hi - lo) > j * step */
    int32_t exists = emit_cmp(c, TJI_LT, lo, hi);
    if (j) {
        int32_t left = emit_cast(c, emit2(c, TJI_SUB, hi, lo, tji_typeof(fn, lo)), L->udt);
        tji_type i1 = scalar(TJ_I1);
        exists = emit2(c, TJI_AND, exists,
                       emit_cmp(c, TJI_GT, left, emit_const(c, L->udt, j * L->step)), &i1);
    }
    const tji_region *body = &fn->regions[L->body];
    for (int32_t p = 0; p < body->nops; p++) {
        int32_t i = fn->regions[L->body].ops[p];
        if (!has(L, s->op, i) && !has(L, chosen, i))
            continue;
        tji_op orig = fn->ops[i];
        if (!has(L, chosen, i)) {
            int32_t op = tji_insert_clone(fn, &orig, c->region, c->pos++, orig.args);
            tji_rename_operands(fn, op, rename);
            rename[orig.result] = tji_new_results(fn, op, tji_typeof(fn, orig.result), 1);
            continue;
        }
        int32_t args[TJI_TMA_FIRST + TJI_TMA_OPERANDS(TJ_MAX_RANK)];
        for (int k = 0; k < orig.nargs; k++)
            args[k] = orig.args[k] && rename[orig.args[k]] ? rename[orig.args[k]] : orig.args[k];
        emit_copy(c, &orig, args, 0, j, exists, ring[i], slots, t);
    }
    c->loc = loop_loc;
    emit(c, TJI_ASYNC_COMMIT, NULL, 0, NULL);
    for (int k = 0; k < L->ncarried; k++) {
        int32_t arg = body->args[k + 1], next = fn->ops[L->yield].args[k];
        if (s->carried[k])
            rename[arg] = rename[next] ? rename[next] : next;
    }
}

/* The slots of this iteration from the one it reads, r (a carried i32):
 * *next_read = r + 1 wrapped at slots, *write = r + ahead wrapped (the
 * copies run ahead iterations early: with ahead = slots - 1 into the slot
 * read last, r - 1). */
static void emit_slots(cursor *c, int32_t r, int slots, int ahead, int32_t *next_read, int32_t *write)
{
    tji_type t = scalar(TJ_I32);
    int32_t zero = emit_const(c, TJ_I32, 0);
    int32_t up = emit2(c, TJI_ADD, r, emit_const(c, TJ_I32, 1), &t);
    *next_read = emit(c, TJI_WHERE,
                      (int32_t[]){emit_cmp(c, TJI_EQ, up, emit_const(c, TJ_I32, slots)), zero, up}, 3,
                      &t);
    if (ahead == slots - 1) {
        int32_t down = emit2(c, TJI_SUB, r, emit_const(c, TJ_I32, 1), &t);
        *write = emit(c, TJI_WHERE,
                      (int32_t[]){emit_cmp(c, TJI_EQ, r, zero), emit_const(c, TJ_I32, slots - 1), down},
                      3, &t);
        return;
    }
    int32_t fwd = emit2(c, TJI_ADD, r, emit_const(c, TJ_I32, ahead), &t);
    int32_t wrapped = emit2(c, TJI_SUB, fwd, emit_const(c, TJ_I32, slots), &t);
    *write = emit(c, TJI_WHERE,
                  (int32_t[]){emit_cmp(c, TJI_GE, fwd, emit_const(c, TJ_I32, slots)), wrapped, fwd}, 3,
                  &t);
}

static void rewrite(loop *L, const slice *s, const uint8_t *chosen, int slots, int ahead, const tjp_target *t,
                    int *nrings)
{
    tji_func *fn = L->fn;
    int32_t *ring = tjs_xcalloc((size_t)L->nops + 1, sizeof *ring);
    for (int32_t i = 0; i < L->nops; i++)
        if (chosen[i])
            ring[i] = (*nrings)++;

    /* the prologue, right before the loop */
    int32_t parent = fn->ops[L->op].parent;
    int pos = 0;
    while (fn->regions[parent].ops[pos] != L->op)
        pos++;
    cursor c = {fn, parent, pos, fn->ops[L->op].loc};
    /* rename and next are indexed by the body's values, all older than the
     * rewrite */
    size_t nold = (size_t)fn->nvalues + 1;
    int32_t *rename = tjs_xcalloc(nold, sizeof *rename);
    for (int j = 0; j < ahead; j++) {
        int32_t *next = tjs_xcalloc(nold, sizeof *next);
        for (int k = 0; k < L->ncarried; k++) /* the carried values of iteration j */
            if (s->carried[k]) {
                int32_t arg = fn->regions[L->body].args[k + 1];
                next[arg] = j ? rename[arg] : fn->ops[L->op].args[3 + k];
            }
        free(rename);
        rename = next;
        emit_prologue_stage(L, s, chosen, ring, slots, t, j, rename, &c);
    }
    for (int k = 0; k < L->ncarried; k++)
        if (s->carried[k])
            tji_set_operand(fn, L->op, 3 + k, rename[fn->regions[L->body].args[k + 1]]);
    free(rename);
    /* the slot that iteration 0 reads, carried from there */
    c.loc = fn->ops[L->op].loc;
    int32_t read_slot = tji_add_carried(fn, L->op, emit_const(&c, TJ_I32, 0));
    c.pos++; /* past the loop */
    emit_wait(&c, 0);

    /* the top of the body: wait, read this iteration's slots */
    int32_t lo = fn->ops[L->op].args[0], hi = fn->ops[L->op].args[1];
    tji_loc loop_loc = fn->ops[L->op].loc;
    cursor b = {fn, L->body, 0, loop_loc};
    emit_wait(&b, ahead - 1);
    int32_t next_read, write_slot;
    emit_slots(&b, read_slot, slots, ahead, &next_read, &write_slot);
    tji_append_operand(fn, L->yield, next_read);
    int32_t *local = tjs_xcalloc((size_t)L->nops + 1, sizeof *local); /* per load */
    for (int32_t i = 0; i < L->nops; i++) {
        if (!chosen[i])
            continue;
        tji_loc loc = fn->ops[i].loc;
        int32_t orig_result = fn->ops[i].result;
        int32_t ll = tji_insert_op(fn, TJI_LOCAL_LOAD, L->body, b.pos++, loc);
        tji_set_operands(fn, ll, &read_slot, 1);
        fn->ops[ll].ring = ring[i];
        fn->ops[ll].ring_slots = slots;
        local[i] = tji_new_results(fn, ll, tji_typeof(fn, orig_result), 1);
    }
    /* the slice moves S-1 iterations ahead */
    int64_t distance = (int64_t)ahead * L->step;
    int32_t iv_ahead = emit2(&b, TJI_ADD, L->iv, emit_const(&b, L->dt, distance), tji_typeof(fn, lo));
    int32_t left = emit_cast(&b, emit2(&b, TJI_SUB, hi, L->iv, tji_typeof(fn, lo)), L->udt);
    int32_t exists = emit_cmp(&b, TJI_GT, left, emit_const(&b, L->udt, distance));
    int32_t *to_ahead = tjs_xcalloc(nold, sizeof *to_ahead);
    to_ahead[L->iv] = iv_ahead;
    for (int p = b.pos; p < fn->regions[L->body].nops; p++) {
        int32_t i = fn->regions[L->body].ops[p];
        if (has(L, s->op, i)) {
            tji_rename_operands(fn, i, to_ahead);
            continue;
        }
        if (!has(L, chosen, i))
            continue;
        /* the load becomes the copy for iteration i+S-1 */
        tji_op orig = fn->ops[i];
        cursor at = {fn, L->body, p, orig.loc};
        emit_copy(&at, &orig, orig.args, write_slot, 0, exists, ring[i], slots, t);
        tji_detach_op(fn, i);
        p = at.pos; /* past the detached load */
    }
    tji_drop_detached(fn, L->body);
    /* every use of a load now reads its slot */
    int32_t *loaded = tjs_xcalloc((size_t)fn->nvalues + 1, sizeof *loaded);
    for (int32_t i = 0; i < L->nops; i++)
        if (local[i])
            loaded[fn->ops[i].result] = local[i];
    for (int32_t i = 0; i < fn->nops; i++)
        if (fn->ops[i].parent >= 0 && tji_region_within(fn, fn->ops[i].parent, L->body))
            tji_rename_operands(fn, i, loaded);
    cursor end = {fn, L->body, fn->regions[L->body].nops - 1, loop_loc};
    emit(&end, TJI_ASYNC_COMMIT, NULL, 0, NULL);
    free(to_ahead);
    free(loaded);
    free(local);
    free(ring);
}

/* Emission order: each op's position, its regions' ops right after it;
 * *last gets the position of the last op inside it. */
static void number_ops(const tji_func *fn, int32_t rid, int32_t *pos, int32_t *last, int32_t *next)
{
    const tji_region *r = &fn->regions[rid];
    for (int32_t i = 0; i < r->nops; i++) {
        int32_t o = r->ops[i];
        pos[o] = (*next)++;
        for (int k = 0; k < 2; k++)
            if (fn->ops[o].region[k] >= 0)
                number_ops(fn, fn->ops[o].region[k], pos, last, next);
        last[o] = *next - 1;
    }
}

/* May write w (a store, an atomic, a volatile asm) touch what a load of
 * the body of loop op reads? A write with no pointer may touch anything. */
static int may_touch_loads(const tji_func *fn, const tjp_provenance *prov, const tji_op *w, int32_t op)
{
    if (w->code == TJI_INLINE_ASM)
        return 1;
    const tji_region *body = &fn->regions[fn->ops[op].region[0]];
    for (int32_t p = 0; p < body->nops; p++) {
        const tji_op *load = &fn->ops[body->ops[p]];
        if (load->code == TJI_LOAD && tjp_may_alias(fn, prov, load->args[0], w->args[0]))
            return 1;
    }
    return 0;
}

/* Does a global write run before loop op ends that a copy issued ahead
 * must not overtake? Inside the loop, any: a copy must not read what a
 * write of another thread may still change. Before it, one that may touch
 * what the loop's loads read (alias.c: a store into another buffer, such
 * as attention's backward storing dK and dV before its dQ loops, leaves
 * them alone). Such loops keep their loads (and barriers.c's order). */
static int written_before_end(const tji_func *fn, int32_t op)
{
    int32_t *pos = tjs_xcalloc((size_t)fn->nops + 1, sizeof *pos);
    int32_t *last = tjs_xcalloc((size_t)fn->nops + 1, sizeof *last), next = 0;
    number_ops(fn, 0, pos, last, &next);
    tjp_provenance prov = {0}; /* found at the first write before the loop */
    int written = 0;
    for (int32_t i = 0; i < fn->nops && !written; i++) {
        const tji_op *w = &fn->ops[i];
        if (w->parent < 0 || pos[i] > last[op] || !tji_writes_memory(w))
            continue;
        if (pos[i] >= pos[op]) {
            written = 1;
            break;
        }
        if (!prov.sets)
            tjp_find_provenance(fn, &prov);
        written = may_touch_loads(fn, &prov, w, op);
    }
    tjp_provenance_free(&prov);
    free(pos);
    free(last);
    return written;
}

/* Pipelines loop op if it has loads that qualify. */
/* Does a dot of the loop body take both operands from chosen loads and
 * run as wgmma on target t? Its rings then get one slot more. */
static int feeds_wgmma(const loop *L, const uint8_t *chosen, const tjp_target *t)
{
    const tji_func *fn = L->fn;
    const tji_region *body = &fn->regions[L->body];
    for (int32_t p = 0; p < body->nops; p++) {
        const tji_op *op = &fn->ops[body->ops[p]];
        int loaded = 0;
        if (op->code != TJI_DOT || !tjp_wgmma_runs(fn, op, t))
            continue;
        for (int a = 0; a < 2; a++) {
            int32_t def = tji_val(fn, op->args[a])->def_op;
            if (def >= 0 && tjp_is_trans2(fn, &fn->ops[def]))
                def = tji_val(fn, fn->ops[def].args[0])->def_op;
            loaded += def >= 0 && has(L, chosen, def);
        }
        if (loaded == 2)
            return 1;
    }
    return 0;
}

static void pipeline_loop(tji_func *fn, int32_t op, int stages, const tjp_target *t, int *nrings)
{
    const tji_op *f = &fn->ops[op];
    int32_t step_def = fn->values[f->args[2]].def_op;
    const tji_region *body = &fn->regions[f->region[0]];
    tj_dtype dt = tji_typeof(fn, f->args[0])->dtype; /* narrower bounds: S * step may not fit */
    if (tjs_dtype_bits(dt) < 32 || step_def < 0 || fn->ops[step_def].code != TJI_CONST ||
        fn->ops[step_def].ival <= 0 ||
        fn->ops[step_def].ival > INT32_MAX / 8 || written_before_end(fn, op))
        return;
    loop L = {fn, op, f->region[0], body->args[0], dt, 0,
              fn->ops[step_def].ival, body->ops[body->nops - 1], f->nresults, fn->nops, t};
    L.udt = unsigned_of(L.dt);
    unshare_slice(&L); /* fn->ops and the regions' lists may have moved */
    f = &fn->ops[op];
    body = &fn->regions[f->region[0]];
    uint8_t *chosen = tjs_xcalloc((size_t)fn->nops + 1, 1);
    slice s = {tjs_xcalloc((size_t)fn->nops + 1, 1), tjs_xcalloc((size_t)L.ncarried + 1, 1)};
    int any = 0;
    /* all candidates together where they fit, else one at a time */
    for (int32_t p = 0; p < body->nops; p++)
        chosen[body->ops[p]] = is_candidate(&L, body->ops[p]);
    if (!make_slice(&L, chosen, &s)) {
        memset(chosen, 0, (size_t)fn->nops);
        for (int32_t p = 0; p < body->nops; p++) {
            int32_t i = body->ops[p];
            if (!is_candidate(&L, i))
                continue;
            chosen[i] = 1;
            chosen[i] = (uint8_t)make_slice(&L, chosen, &s);
        }
    }
    for (int32_t i = 0; i < fn->nops; i++)
        any |= chosen[i];
    if (any && make_slice(&L, chosen, &s))
        rewrite(&L, &s, chosen, stages + feeds_wgmma(&L, chosen, t), stages - 1, t, nrings);
    free(s.op);
    free(s.carried);
    free(chosen);
}

/* The loads left as they are drop their tensors: only copies use them. */
static void drop_tensors(tji_func *fn)
{
    for (int32_t i = 0; i < fn->nops; i++)
        if (fn->ops[i].parent >= 0 && fn->ops[i].code == TJI_LOAD && fn->ops[i].tma_rank) {
            tji_set_operands(fn, i, fn->ops[i].args, TJI_TMA_FIRST);
            fn->ops[i].tma_rank = 0;
        }
}

tj_status tjp_pipeline_loops(tji_func *fn, int num_stages, const tjp_target *t)
{
    if (num_stages < 1 || num_stages > TJP_MAX_STAGES)
        return tjs_error(TJ_ERR_INVALID_ARG, "num_stages %d is not between 1 and %d", num_stages,
                         TJP_MAX_STAGES);
    int nrings = 0;
    for (int32_t i = 0; i < fn->nops; i++)
        if ((fn->ops[i].code == TJI_ASYNC_COPY || fn->ops[i].code == TJI_LOCAL_LOAD) &&
            fn->ops[i].ring >= nrings)
            nrings = fn->ops[i].ring + 1;
    int32_t nloops = fn->nops;
    for (int32_t i = 0; i < nloops; i++) {
        int stages = fn->ops[i].num_stages ? fn->ops[i].num_stages : num_stages; /* tl.range's first */
        if (fn->ops[i].parent >= 0 && fn->ops[i].code == TJI_FOR && stages > 1)
            pipeline_loop(fn, i, stages, t, &nrings);
    }
    drop_tensors(fn);
    return TJ_OK;
}
