/* SPDX-License-Identifier: MIT */
/*
 * axis_info.c — contiguity, divisibility and constancy of every tile value.
 *
 * A GPU load is fast when each thread reads several consecutive, aligned
 * elements in one vector instruction. Whether it may do so is a fact about
 * the pointer tile: along which dimension the addresses run consecutively
 * (contiguity), how well the first address of each run is aligned
 * (divisibility, in bytes), and — for masks — along which stretches the
 * values are equal (constancy). This forward analysis computes the three
 * per value and per dimension, in the spirit of Triton's AxisInfo lattice.
 *
 * Seeds: ARANGE is contiguous over its length and its start's divisibility;
 * a CONST is constant everywhere and remembered as a known value; program
 * ids know nothing; kernel parameters know what the caller's specialization
 * says (16-byte aligned, a multiple of 16, equal to 1); the user's hints
 * (ASSUME: tj_multiple_of, tj_max_contiguous, tj_max_constancy) add what
 * they state to what is known of their operand.
 *
 * Every count is a power of two, and runs start at indices that are
 * multiples of their length. That alignment is what lets the rules split a
 * run: the elements at multiples of L < C inside a contiguous run whose first
 * element is a multiple of D are multiples of min(D, L) (run_div below).
 * Rules, per dimension (K constancy, C contiguity, D divisibility):
 *   ADD/ADDPTR: C = max(gcd(Ca, Kb), gcd(Ka, Cb)); SUB: gcd(Ca, Kb) only;
 *     D = min of both sides' divisibility at the new runs (an offset's in
 *     elements times the element size for ADDPTR); K = gcd(Ka, Kb).
 *   MUL: by a known 1 the other side; else C = 1, D = product of the
 *     per-element divisibilities.
 *   SHL by k: D times 2^k. SHR (floor) and unsigned IDIV by 2^k: runs of
 *     2^k aligned consecutive integers become constant; signed IDIV
 *     truncates toward zero, which breaks that alignment, so it keeps only
 *     constancy and exact divisibility. Unsigned REM and AND by 2^k - 1
 *     keep aligned runs of up to 2^k consecutive integers.
 *   CMP: K = gcd(Ka, Kb), and a consecutive run compared against a constant
 *     that is a multiple of the run flips at most at a run boundary (x < c,
 *     x >= c, and mirrored).
 *   SPLAT, BROADCAST: constant along the new extent; EXPAND_DIMS,
 *     PERMUTE, CONVERT: moved along with the dimensions.
 *   WHERE, CAST: equal inputs stay equal; widening integer and same-size
 *     pointer casts keep everything; an address cast (int <-> pointer)
 *     keeps each element's divisibility, and runs only of bytes. The WHERE
 *     that ends the builder's floored modulo (tj_mod of signed integers) by
 *     an n never 0 keeps aligned runs of x as long as n's divisibility:
 *     Triton's rule for `offs % N`, which is what lets the tutorial
 *     matmul's wrapped column offsets load 16-byte vectors. "Never 0" comes
 *     from constants and from the specialization "a multiple of 16", which
 *     a launch gives only to nonzero integers (tj_multiple_of says nothing
 *     of 0), and from a promise (tj_assume(n > 0), n != 0 and the like)
 *     made in the region that defines n, after it.
 *   FOR: its induction variable (lo + i * step, wrapping) is divisible by
 *     what both lo and step are; a carried value holds what its initial and
 *     its yielded value both hold (visit_loop: the body is visited until
 *     that is stable).
 * Everything else — loads, reductions, FOR and IF results —
 * knows nothing: a wrong claim here would become a misaligned vector access,
 * so every rule errs towards "unknown".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

typedef tjp_axis_value info;

static int ndims(const tji_type *t) { return t->rank ? t->rank : 1; }
static int32_t dim_size(const tji_type *t, int d) { return t->rank ? t->shape[d] : 1; }
static int32_t min32(int32_t a, int32_t b) { return a < b ? a : b; }
static int32_t max32(int32_t a, int32_t b) { return a > b ? a : b; }
/* All counts are powers of two, so gcd is the minimum. */
static int32_t gcd32(int32_t a, int32_t b) { return min32(a, b); }

static int elem_bytes(const tji_type *t)
{
    int bits = tjs_dtype_bits(t->dtype);
    return bits < 8 ? 1 : bits / 8;
}

/* The largest power of two dividing v, at most TJP_DIV_MAX (0: the cap). */
static int32_t pow2_div(int64_t v)
{
    if (v == 0)
        return TJP_DIV_MAX;
    uint64_t low = (uint64_t)v & (~(uint64_t)v + 1);
    return low >= TJP_DIV_MAX ? TJP_DIV_MAX : (int32_t)low;
}

static int32_t cap_div(int64_t d) { return d >= TJP_DIV_MAX ? TJP_DIV_MAX : (int32_t)d; }

static void set_unknown(info *r)
{
    memset(r, 0, sizeof *r);
    for (int d = 0; d < TJ_MAX_RANK; d++)
        r->contiguity[d] = r->divisibility[d] = r->constancy[d] = 1;
}

static void set_known(info *r, const tji_type *t, int64_t value)
{
    set_unknown(r);
    for (int d = 0; d < ndims(t); d++) {
        r->constancy[d] = dim_size(t, d);
        r->divisibility[d] = pow2_div(value);
    }
    r->has_value = 1;
    r->value = value;
    r->nonzero = value != 0;
}

/* Divisibility of the elements at indices that are multiples of L along d,
 * where consecutive elements of a run differ by unit. */
static int32_t run_div(const info *x, int d, int32_t L, int32_t unit)
{
    if (L >= x->contiguity[d])
        return x->divisibility[d];
    return min32(x->divisibility[d], cap_div((int64_t)L * unit));
}

/* A bound that holds for every element along d. */
static int32_t elem_div(const info *x, int d) { return run_div(x, d, 1, 1); }

/* A bound that holds for every element, whichever dimension one looks at. */
static int32_t any_elem_div(const info *x, const tji_type *t)
{
    int32_t best = 1;
    for (int d = 0; d < ndims(t); d++)
        best = max32(best, elem_div(x, d));
    return best;
}

static int known(const info *x, int64_t v) { return x->has_value && x->value == v; }

/* A known positive power of two: its log2, else -1. */
static int known_log2(const info *x)
{
    if (!x->has_value || x->value <= 0 || (x->value & (x->value - 1)))
        return -1;
    return __builtin_ctzll((uint64_t)x->value);
}

/* ADD, SUB and ADDPTR: a + b, where b's unit (element size for ADDPTR) is
 * scaled to a's. */
static void add_rule(info *r, const tji_type *t, const info *a, const info *b, int32_t a_unit,
                     int32_t b_scale, int is_sub)
{
    for (int d = 0; d < ndims(t); d++) {
        int32_t c = gcd32(a->contiguity[d], b->constancy[d]);
        if (!is_sub)
            c = max32(c, gcd32(a->constancy[d], b->contiguity[d]));
        r->contiguity[d] = c;
        int64_t bd = (int64_t)run_div(b, d, c, 1) * b_scale;
        r->divisibility[d] = min32(run_div(a, d, c, a_unit), cap_div(bd));
        r->constancy[d] = gcd32(a->constancy[d], b->constancy[d]);
    }
}

/* Floor division by 2^k (SHR, unsigned IDIV): aligned runs of 2^k
 * consecutive integers share a quotient. */
static void floor_div_rule(info *r, const tji_type *t, const info *a, int k)
{
    int32_t p = k >= 12 ? TJP_DIV_MAX : (int32_t)1 << k;
    for (int d = 0; d < ndims(t); d++) {
        int32_t g = min32(a->contiguity[d], p);
        int32_t k_run = a->divisibility[d] >= g ? g : 1;
        r->constancy[d] = max32(a->constancy[d], k_run);
        int32_t e = elem_div(a, d);
        r->divisibility[d] = e >= p && e < TJP_DIV_MAX ? e / p : 1;
    }
}

/* a mod 2^k with a floor (non-negative) remainder: aligned runs of up to
 * 2^k consecutive integers stay consecutive. */
static void floor_rem_rule(info *r, const tji_type *t, const info *a, int k)
{
    int32_t p = k >= 12 ? TJP_DIV_MAX : (int32_t)1 << k;
    for (int d = 0; d < ndims(t); d++) {
        int32_t g = min32(a->contiguity[d], p);
        int32_t c = a->divisibility[d] >= g ? g : 1;
        r->contiguity[d] = c;
        r->divisibility[d] = min32(run_div(a, d, c, 1), p);
        r->constancy[d] = a->constancy[d];
    }
}

/* x < c or x >= c for consecutive x and constant c: constant on aligned
 * groups that c's divisibility also respects. */
static int32_t cmp_runs(const info *x, const info *c, int d)
{
    int32_t g = min32(x->contiguity[d], c->divisibility[d]);
    if (c->constancy[d] < g || x->divisibility[d] < g)
        return 1;
    return g;
}

static void cmp_rule(info *r, const tji_type *t, const tji_op *op, const info *a, const info *b)
{
    for (int d = 0; d < ndims(t); d++) {
        int32_t k = gcd32(a->constancy[d], b->constancy[d]);
        if (op->pred == TJI_LT || op->pred == TJI_GE)
            k = max32(k, cmp_runs(a, b, d));
        if (op->pred == TJI_LE || op->pred == TJI_GT)
            k = max32(k, cmp_runs(b, a, d));
        r->constancy[d] = k;
    }
}

/* The op defining v when it is an op of code (else NULL). */
static const tji_op *def_of(const tji_func *fn, int32_t v, tji_opcode code)
{
    int32_t d = v > 0 && v <= fn->nvalues ? fn->values[v].def_op : -1;
    return d >= 0 && fn->ops[d].code == code ? &fn->ops[d] : NULL;
}

static int is_cmp_with_zero(const tji_func *fn, const info *of, int32_t v, tji_pred pred,
                            int32_t lhs)
{
    const tji_op *c = def_of(fn, v, TJI_CMP);
    return c && c->pred == pred && c->args[0] == lhs && known(&of[c->args[1]], 0);
}

/* Whether op is the builder's floored modulo of x by n (ops.c,
 * floor_divmod): where(r != 0 && (r < 0) ^ (n < 0), r + n, r) with
 * r = rem(x, n). Only that exact form: a WHERE choosing between r + n and
 * r on any other condition has no runs. */
static int floored_mod(const tji_func *fn, const info *of, const tji_op *op, int32_t *x,
                       int32_t *n)
{
    const tji_op *rem = def_of(fn, op->args[2], TJI_REM);
    const tji_op *plus = def_of(fn, op->args[1], TJI_ADD);
    const tji_op *both = def_of(fn, op->args[0], TJI_AND);
    if (!rem || !plus || !both)
        return 0;
    int32_t r = op->args[2];
    *x = rem->args[0];
    *n = rem->args[1];
    const tji_op *signs = def_of(fn, both->args[1], TJI_XOR);
    return plus->args[0] == r && plus->args[1] == *n && signs &&
           is_cmp_with_zero(fn, of, both->args[0], TJI_NE, r) &&
           is_cmp_with_zero(fn, of, signs->args[0], TJI_LT, r) &&
           is_cmp_with_zero(fn, of, signs->args[1], TJI_LT, *n);
}

/* x mod n, floored, n never 0: with n a multiple of L and constant over an
 * aligned run of L consecutive x, no multiple of n lies inside the run
 * (past its first element), so the quotient is constant and the run stays
 * consecutive, for either sign of x and n. */
static void floored_mod_rule(info *r, const tji_type *t, const info *x, const info *n)
{
    for (int d = 0; d < ndims(t); d++) {
        int32_t g = min32(x->contiguity[d], min32(elem_div(n, d), n->constancy[d]));
        int32_t c = x->divisibility[d] >= g ? g : 1;
        r->contiguity[d] = c;
        r->divisibility[d] = min32(run_div(x, d, c, 1), elem_div(n, d));
        r->constancy[d] = gcd32(x->constancy[d], n->constancy[d]);
    }
}

static void visit(const tji_func *fn, info *of, int32_t opi);

/* Does x pred c (c a known constant, x of dtype dt) rule out x == 0? */
static int cmp_excludes_zero(tji_pred pred, int64_t c, tj_dtype dt)
{
    int sig = tjs_dtype_is_signed(dt);
    switch (pred) {
    case TJI_NE: return c == 0;
    case TJI_EQ: return c != 0;
    case TJI_GT: return !sig || c >= 0;
    case TJI_GE: return c != 0 && (!sig || c > 0);
    case TJI_LT: return sig && c <= 0;
    case TJI_LE: return sig && c < 0;
    }
    return 0;
}

static tji_pred mirrored(tji_pred p)
{
    switch (p) {
    case TJI_LT: return TJI_GT;
    case TJI_LE: return TJI_GE;
    case TJI_GT: return TJI_LT;
    case TJI_GE: return TJI_LE;
    default: return p;
    }
}

/* A promise (tj_assume) of cond, made in region reg: an integer compared
 * with a constant so that it cannot be 0 (an AND of such: each) is nonzero
 * from here on. Only a value defined in reg itself: there every execution
 * that computes it reaches the promise, none leaves the region between. */
static void promise(const tji_func *fn, info *of, int32_t cond, int32_t reg)
{
    const tji_op *both = def_of(fn, cond, TJI_AND);
    if (both) {
        promise(fn, of, both->args[0], reg);
        promise(fn, of, both->args[1], reg);
        return;
    }
    const tji_op *cmp = def_of(fn, cond, TJI_CMP);
    if (!cmp)
        return;
    int32_t x = cmp->args[0], c = cmp->args[1];
    tji_pred pred = cmp->pred;
    if (!of[c].has_value) {
        x = cmp->args[1];
        c = cmp->args[0];
        pred = mirrored(pred);
    }
    const tji_type *t = tji_typeof(fn, x);
    if (of[c].has_value && !t->is_ptr && tjs_dtype_is_int(t->dtype) &&
        cmp_excludes_zero(pred, of[c].value, t->dtype) && tji_value_region(fn, x) == reg)
        of[x].nonzero = 1;
}

/* What holds for both x and y (a tile of t): runs as short as the shorter,
 * their first elements divisible as both are there. */
static info meet(const info *x, const info *y, const tji_type *t)
{
    info m;
    set_unknown(&m);
    int32_t unit = t->is_ptr ? elem_bytes(t) : 1;
    for (int d = 0; d < ndims(t); d++) {
        m.contiguity[d] = min32(x->contiguity[d], y->contiguity[d]);
        m.divisibility[d] = min32(run_div(x, d, m.contiguity[d], unit),
                                  run_div(y, d, m.contiguity[d], unit));
        m.constancy[d] = min32(x->constancy[d], y->constancy[d]);
    }
    m.has_value = x->has_value && y->has_value && x->value == y->value;
    m.value = m.has_value ? x->value : 0;
    m.nonzero = x->nonzero && y->nonzero;
    return m;
}

static int same_info(const info *x, const info *y, const tji_type *t)
{
    for (int d = 0; d < ndims(t); d++)
        if (x->contiguity[d] != y->contiguity[d] || x->divisibility[d] != y->divisibility[d] ||
            x->constancy[d] != y->constancy[d])
            return 0;
    return x->has_value == y->has_value && (!x->has_value || x->value == y->value) &&
           x->nonzero == y->nonzero;
}

static void visit_region(const tji_func *fn, info *of, int32_t reg);

/* A FOR: the induction variable lo + i * step (wrapping) is divisible as
 * both are; a carried value holds what both its initial value and its
 * yielded value hold, found by visiting the body until that stops
 * changing (facts only shrink, so it ends; past the bound, unknown). */
static void visit_loop(const tji_func *fn, info *of, const tji_op *op)
{
    const tji_region *body = &fn->regions[op->region[0]];
    const tji_op *yield = &fn->ops[body->ops[body->nops - 1]];
    info *iv = &of[body->args[0]];
    iv->divisibility[0] = min32(of[op->args[0]].divisibility[0], of[op->args[2]].divisibility[0]);
    for (int k = 0; k < op->nresults; k++)
        of[body->args[k + 1]] = of[op->args[3 + k]];
    enum { MAX_ROUNDS = 16 };
    int changed = 1;
    for (int round = 0; changed && round < MAX_ROUNDS; round++) {
        visit_region(fn, of, op->region[0]);
        changed = 0;
        for (int k = 0; k < op->nresults; k++) {
            int32_t arg = body->args[k + 1];
            info m = meet(&of[arg], &of[yield->args[k]], tji_typeof(fn, arg));
            if (!same_info(&m, &of[arg], tji_typeof(fn, arg))) {
                of[arg] = m;
                changed = 1;
            }
        }
    }
    if (!changed)
        return;
    for (int k = 0; k < op->nresults; k++)
        set_unknown(&of[body->args[k + 1]]);
    visit_region(fn, of, op->region[0]);
}

static void visit_region(const tji_func *fn, info *of, int32_t reg)
{
    const tji_region *R = &fn->regions[reg];
    for (int32_t i = 0; i < R->nops; i++)
        visit(fn, of, R->ops[i]);
}

static void visit(const tji_func *fn, info *of, int32_t opi)
{
    const tji_op *op = &fn->ops[opi];
    if (op->code == TJI_FOR) {
        visit_loop(fn, of, op);
        return; /* its results stay unknown */
    }
    if (op->code == TJI_ASSUME_TRUE) {
        promise(fn, of, op->args[0], op->parent);
        return;
    }
    for (int s = 0; s < 2; s++)
        if (op->region[s] >= 0)
            visit_region(fn, of, op->region[s]);
    if (op->nresults != 1)
        return; /* FOR, IF and WHILE results stay unknown (a WHILE's
                   block arguments too: nothing bounds its trips) */
    info *r = &of[op->result];
    const tji_type *t = tji_typeof(fn, op->result);
    const info *a = op->nargs > 0 && op->args[0] > 0 ? &of[op->args[0]] : NULL;
    const info *b = op->nargs > 1 && op->args[1] > 0 ? &of[op->args[1]] : NULL;
    const tji_type *at = a ? tji_typeof(fn, op->args[0]) : NULL;
    set_unknown(r);
    int is_int = tjs_dtype_is_int(t->dtype) && !t->is_ptr;
    int unsig = is_int && !tjs_dtype_is_signed(t->dtype);

    switch (op->code) {
    case TJI_CONST:
        if (tjs_dtype_is_int(t->dtype))
            set_known(r, t, op->ival);
        return; /* a float scalar: nothing to say about integers */
    case TJI_ARANGE:
        r->contiguity[0] = t->shape[0];
        r->divisibility[0] = pow2_div(op->ival);
        return;
    case TJI_SPLAT:
        if (a->has_value) {
            set_known(r, t, a->value);
            return;
        }
        for (int d = 0; d < ndims(t); d++) {
            r->constancy[d] = dim_size(t, d);
            r->divisibility[d] = a->divisibility[0];
        }
        r->nonzero = a->nonzero;
        return;
    case TJI_BROADCAST:
        *r = *a;
        for (int d = 0; d < ndims(t); d++)
            if (at->shape[d] != t->shape[d]) {
                r->constancy[d] = t->shape[d];
                r->contiguity[d] = 1;
            }
        return;
    case TJI_EXPAND_DIMS: {
        int32_t every = any_elem_div(a, at);
        for (int d = 0, s = 0; d < t->rank; d++) {
            if (d == op->axis) {
                r->divisibility[d] = every;
                continue;
            }
            if (at->rank) {
                r->contiguity[d] = a->contiguity[s];
                r->divisibility[d] = a->divisibility[s];
                r->constancy[d] = a->constancy[s];
                s++;
            } else {
                r->divisibility[d] = every;
            }
        }
        r->has_value = a->has_value;
        r->value = a->value;
        r->nonzero = a->nonzero;
        return;
    }
    case TJI_PERMUTE:
        for (int d = 0; d < t->rank; d++) {
            r->contiguity[d] = a->contiguity[op->perm[d]];
            r->divisibility[d] = a->divisibility[op->perm[d]];
            r->constancy[d] = a->constancy[op->perm[d]];
        }
        r->has_value = a->has_value;
        r->value = a->value;
        r->nonzero = a->nonzero;
        return;
    case TJI_RESHAPE:
        if (a->has_value) {
            set_known(r, t, a->value);
            return;
        }
        for (int d = 0; d < ndims(t); d++)
            r->divisibility[d] = any_elem_div(a, at);
        r->nonzero = a->nonzero;
        return;
    case TJI_CONVERT:
        *r = *a;
        return;
    case TJI_ASSUME: {
        int last = ndims(t) - 1;
        *r = *a;
        if (op->assume == TJI_ASSUME_MULTIPLE_OF)
            for (int d = 0; d < ndims(t); d++)
                r->divisibility[d] = max32(r->divisibility[d], pow2_div(op->ival));
        else if (op->assume == TJI_ASSUME_CONTIGUOUS)
            r->contiguity[last] = max32(r->contiguity[last], (int32_t)op->ival);
        else
            r->constancy[last] = max32(r->constancy[last], (int32_t)op->ival);
        return;
    }
    case TJI_ADD:
    case TJI_SUB:
        if (!is_int)
            break;
        add_rule(r, t, a, b, 1, 1, op->code == TJI_SUB);
        return;
    case TJI_ADDPTR: {
        int es = elem_bytes(t);
        add_rule(r, t, a, b, es, es, 0);
        return;
    }
    case TJI_MUL:
        if (!is_int)
            break;
        if (known(b, 1) || known(a, 1)) {
            *r = known(b, 1) ? *a : *b;
            return;
        }
        for (int d = 0; d < ndims(t); d++) {
            r->divisibility[d] = cap_div((int64_t)elem_div(a, d) * elem_div(b, d));
            r->constancy[d] = gcd32(a->constancy[d], b->constancy[d]);
        }
        return;
    case TJI_SHL: {
        int k = b->has_value && b->value >= 0 && b->value < 63 ? (int)b->value : -1;
        for (int d = 0; d < ndims(t); d++) {
            r->constancy[d] = gcd32(a->constancy[d], b->constancy[d]);
            if (k == 0) {
                r->contiguity[d] = a->contiguity[d];
                r->divisibility[d] = a->divisibility[d];
            } else if (k > 0) {
                r->divisibility[d] = cap_div((int64_t)elem_div(a, d) << (k < 13 ? k : 13));
            }
        }
        return;
    }
    case TJI_SHR:
        if (b->has_value && b->value == 0) {
            *r = *a;
            return;
        }
        if (b->has_value && b->value > 0 && b->value < 63) {
            floor_div_rule(r, t, a, (int)b->value);
            return;
        }
        break;
    case TJI_IDIV: {
        int k = known_log2(b);
        if (k == 0) {
            *r = *a;
        } else if (k > 0 && unsig) {
            floor_div_rule(r, t, a, k);
        } else if (k > 0) { /* truncating: only exact quotients are safe */
            for (int d = 0; d < ndims(t); d++) {
                r->constancy[d] = a->constancy[d];
                int32_t e = elem_div(a, d);
                r->divisibility[d] = k < 12 && e >= ((int32_t)1 << k) && e < TJP_DIV_MAX
                                         ? e >> k : 1;
            }
        } else {
            break;
        }
        return;
    }
    case TJI_REM: {
        int k = is_int ? known_log2(b) : -1;
        if (k > 0 && unsig) {
            floor_rem_rule(r, t, a, k);
            return;
        }
        if (k > 0) { /* C remainder: its sign follows a, runs may break at 0 */
            for (int d = 0; d < ndims(t); d++) {
                r->constancy[d] = a->constancy[d];
                r->divisibility[d] = min32(elem_div(a, d), k < 12 ? (int32_t)1 << k : TJP_DIV_MAX);
            }
            return;
        }
        break;
    }
    case TJI_AND:
        if (is_int && b->has_value && b->value > 0 &&
            !((uint64_t)b->value & ((uint64_t)b->value + 1))) {
            floor_rem_rule(r, t, a, __builtin_ctzll((uint64_t)b->value + 1));
            return;
        }
        break;
    case TJI_CMP:
        cmp_rule(r, t, op, a, b);
        return;
    case TJI_WHERE: {
        int32_t x, n;
        if (is_int && floored_mod(fn, of, op, &x, &n) && of[n].nonzero) {
            floored_mod_rule(r, t, &of[x], &of[n]);
            return;
        }
        const info *c = &of[op->args[2]];
        for (int d = 0; d < ndims(t); d++) {
            r->constancy[d] = gcd32(a->constancy[d], gcd32(b->constancy[d], c->constancy[d]));
            r->divisibility[d] = min32(elem_div(b, d), elem_div(c, d));
        }
        return;
    }
    case TJI_CAST: {
        int same_ptr = t->is_ptr && at->is_ptr && elem_bytes(t) == elem_bytes(at);
        int widen = is_int && tjs_dtype_is_int(at->dtype) && !at->is_ptr &&
                    tjs_dtype_bits(t->dtype) >= tjs_dtype_bits(at->dtype) &&
                    tjs_dtype_bits(at->dtype) > 1;
        if (same_ptr || widen) {
            *r = *a;
            return;
        }
        if (t->is_ptr != at->is_ptr) { /* an address: a run of bytes is not one of elements */
            int es = elem_bytes(t->is_ptr ? t : at);
            for (int d = 0; d < ndims(t); d++) {
                r->constancy[d] = a->constancy[d];
                r->contiguity[d] = es == 1 ? a->contiguity[d] : 1;
                r->divisibility[d] = es == 1 ? a->divisibility[d] : run_div(a, d, 1, at->is_ptr ? es : 1);
            }
            return;
        }
        for (int d = 0; d < ndims(t); d++)
            r->constancy[d] = a->constancy[d];
        return;
    }
    default:
        break;
    }
    /* Any other op: equal inputs of a pure element-wise op give equal outputs. */
    if (tji_is_pure_elementwise(op) && op->code != TJI_SPLAT && op->nargs > 0) {
        for (int d = 0; d < ndims(t); d++) {
            int32_t k = dim_size(t, d);
            for (int i = 0; i < op->nargs; i++)
                k = gcd32(k, of[op->args[i]].constancy[d]);
            r->constancy[d] = k;
        }
    }
}

static void dump(const tji_func *fn, const info *of)
{
    tjs_buf b = {0};
    tjs_buf_printf(&b, "// TJIT_DUMP=axis: kernel '%s'\n", fn->name);
    for (int32_t v = 1; v <= fn->nvalues; v++) {
        const tji_type *t = tji_typeof(fn, v);
        tjs_buf_printf(&b, "%%%d ", (int)v);
        tji_print_type(&b, t);
        const char *names[3] = {" contiguity", " divisibility", " constancy"};
        const int32_t *rows[3] = {of[v].contiguity, of[v].divisibility, of[v].constancy};
        for (int k = 0; k < 3; k++) {
            tjs_buf_printf(&b, "%s", names[k]);
            for (int d = 0; d < ndims(t); d++)
                tjs_buf_printf(&b, "%c%d", d ? ',' : '=', (int)rows[k][d]);
        }
        if (of[v].has_value)
            tjs_buf_printf(&b, " value=%lld", (long long)of[v].value);
        tjs_buf_printf(&b, "\n");
    }
    fputs(b.data, stderr);
    tjs_buf_free(&b);
}

tj_status tjp_axis_info(const tji_func *fn, const tjp_param_spec *spec, tjp_axis_info_result *out)
{
    if (!fn || !out)
        return tjs_error(TJ_ERR_INVALID_ARG, "tjp_axis_info: no function or no result");
    info *of = tjs_xcalloc((size_t)fn->nvalues + 1, sizeof *of);
    for (int32_t v = 0; v <= fn->nvalues; v++)
        set_unknown(&of[v]);
    for (int p = 0; spec && p < fn->nparams; p++) {
        const tji_param *P = &fn->params[p];
        info *r = &of[P->value];
        if (P->is_ptr && spec[p].ptr_align16)
            r->divisibility[0] = 16;
        else if (!P->is_ptr && spec[p].is_one)
            set_known(r, tji_typeof(fn, P->value), 1);
        else if (!P->is_ptr && spec[p].int_div16) {
            r->divisibility[0] = 16;
            r->nonzero = 1;
        }
    }
    visit_region(fn, of, 0);
    out->nvalues = fn->nvalues;
    out->of = of;
    if (tjs_dump_enabled("axis"))
        dump(fn, of);
    return TJ_OK;
}

void tjp_axis_info_free(tjp_axis_info_result *r)
{
    free(r->of);
    r->of = NULL;
    r->nvalues = 0;
}

tj_status tjp_access_vector(const tji_func *fn, const tjp_axis_info_result *info_r, int32_t opi,
                            tjp_access *out)
{
    if (!fn || !info_r || !out || opi < 0 || opi >= fn->nops ||
        (fn->ops[opi].code != TJI_LOAD && fn->ops[opi].code != TJI_STORE &&
         fn->ops[opi].code != TJI_ASYNC_COPY))
        return tjs_error(TJ_ERR_INVALID_ARG, "tjp_access_vector: op %d is not a load or store",
                         (int)opi);
    const tji_op *op = &fn->ops[opi];
    int32_t ptr = op->args[0], mask = op->code == TJI_LOAD ? op->args[1] : op->args[2];
    if (ptr > info_r->nvalues || mask > info_r->nvalues)
        return tjs_error(TJ_ERR_INVALID_ARG, "tjp_access_vector: the analysis predates op %d",
                         (int)opi);
    const tji_type *t = tji_typeof(fn, ptr);
    const info *p = &info_r->of[ptr];
    int dim = 0;
    for (int d = 1; d < ndims(t); d++)
        if (p->contiguity[d] >= p->contiguity[dim])
            dim = d;
    int es = elem_bytes(t);
    int32_t v = 1;
    while (v * 2 <= p->contiguity[dim] && v * 2 * es <= 16 && p->divisibility[dim] >= v * 2 * es)
        v *= 2;
    out->dim = dim;
    out->elem_bytes = es;
    out->vector_bytes = v * es;
    out->mask_constancy = mask ? info_r->of[mask].constancy[dim] : dim_size(t, dim);
    return TJ_OK;
}
