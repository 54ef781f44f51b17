/* SPDX-License-Identifier: MIT */
/*
 * combine.c — reductions and scans with the user's combine function
 * (Triton's tl.reduce and tl.associative_scan), and tj_cummax/tj_cummin,
 * which are such scans.
 *
 * In Triton the combine function is a JIT function of scalars that the
 * compiler inlines at every step of its reduction and scan trees. In tjit
 * the combine function is C code that builds ops, so it can be called
 * with whole tiles: each step views the tile so that the pairs to combine
 * sit in two tiles a and b (sort.c's tji_partners: a reshape and a pick
 * along an axis of 2), calls the function once on a and b, and puts the
 * result back. Nothing below the builder learns a new op, the passes lay
 * out the steps like any other ops, and the function's ops carry the
 * user's own source lines.
 *
 *   reduce  a tree of neighbours: step one combines elements 2i and 2i+1,
 *           the next the results of that, and so on (log2(n) calls, each
 *           on half the elements of the one before). Neighbours keep the
 *           order, so a combine that is associative but not commutative
 *           (composing linear maps) gets the product in index order.
 *   scan    Sklansky's: at step s (1, 2, 4, ..) the axis is seen as blocks
 *           of 2s, and the upper half of each block becomes combine(last
 *           of the lower half, itself): after the step every block holds
 *           its own inclusive scan. log2(n) calls on n/2 elements each,
 *           with the earlier part always the combine's first operand.
 *
 * tj_xor_sum and tj_softmax (Triton's tl.xor_sum and tl.softmax) are here
 * too: a reduction with xor as its combine, and max, exp, sum, divide.
 *
 * Several tiles can be combined together (the _n forms: a value and its
 * index, a recurrence's pair of coefficients); they are broadcast to one
 * shape and viewed alike, each keeping its dtype. .reverse flips the axis
 * before and after (tj_flip: bit for bit).
 */
#include "build.h"

/* The most tiles one combine may take at once (Triton's tuples are small). */
enum { MAX_COMBINED = 16 };

typedef struct combiner {
    tj_combine_fn one;   /* a single tile: the function of tj_reduce */
    tj_combine_n_fn many; /* else this one, with ctx */
    void *ctx;
    const char *name;
    tj_loc loc;
} combiner;

/* Calls the combine function on n pairs of tiles of one shape and checks
 * what it gave: a value of this build for each, in its operand's dtype and
 * of the operands' shape, or a scalar (a constant), broadcast to it. */
static int combine(const combiner *c, int n, const tj_val *a, const tj_val *b, tj_val *out)
{
    for (int i = 0; i < n; i++)
        out[i] = NONE;
    if (c->one)
        out[0] = c->one(a[0], b[0]);
    else
        c->many(a, b, out, c->ctx);
    /* the function's ops set the builder's line and op name to theirs */
    B.loc = c->loc;
    B.opname = c->name;
    if (B.status != TJ_OK)
        return 0;
    for (int i = 0; i < n; i++) {
        int32_t id = vid(out[i]);
        tji_type want = type_of(vid(a[i]));
        if (id == 0)
            return tji_fail(TJ_ERR_INVALID_ARG, "the combine function gave no value for result %d", i);
        if (!tji_check_value(id, "the combine function's result", i))
            return 0;
        tji_type got = type_of(id);
        if (got.is_ptr || got.dtype != want.dtype)
            return tji_fail(TJ_ERR_TYPE, "the combine function gave %s for result %d, whose operands are %s",
                            tji_type_text(&got), i, tji_type_text(&want));
        if (got.rank && !tji_same_shape(&got, &want))
            return tji_fail(TJ_ERR_SHAPE, "the combine function gave %s for result %d; it combines element by "
                            "element, so the result must have its operands' shape %s (or be a scalar)",
                            tji_type_text(&got), i, tji_shape_text(&want));
        out[i] = got.rank ? out[i] : val(tji_broadcast_shape(id, want.rank, want.shape));
    }
    return 1;
}

/* Checks the operands and views each with the axis last, as [rows, len].
 * orig gets their common type before the view (per dtype: xs[i]'s). */
static int as_rows_n(const combiner *c, int n, const tj_val *xs, int *axis, tj_val *y, tji_type *orig,
                     int64_t *rows, int64_t *len)
{
    if (!tji_enter(c->loc, c->name, 0, NULL))
        return 0;
    if (n < 1 || n > MAX_COMBINED)
        return tji_fail(TJ_ERR_INVALID_ARG, "%s combines 1 to %d tiles, got %d", c->name, MAX_COMBINED, n);
    if (!xs)
        return tji_fail(TJ_ERR_INVALID_ARG, "%s: no operands (xs is NULL)", c->name);
    if (!c->one && !c->many)
        return tji_fail(TJ_ERR_INVALID_ARG, "%s: no combine function (NULL)", c->name);
    if (!tji_enter(c->loc, c->name, n, xs))
        return 0;
    int32_t ids[MAX_COMBINED];
    for (int i = 0; i < n; i++)
        ids[i] = vid(xs[i]);
    if (!tji_broadcast_all(ids, n))
        return 0;
    for (int i = 0; i < n; i++) {
        int a = *axis;
        orig[i] = type_of(ids[i]);
        y[i] = val(ids[i]);
        if (!tji_enter(c->loc, c->name, 0, NULL) || !tji_as_rows(c->name, c->loc, &y[i], &a, rows, len))
            return 0;
        y[i] = tj__reshape(c->loc, y[i], TJ_SHAPE(*rows, *len));
        if (i == n - 1)
            *axis = a;
    }
    return B.status == TJ_OK;
}

/* Clears out[0..n-1] (as far as n is valid) and checks that it exists. */
static int has_out(const combiner *c, int n, tj_val *out)
{
    if (!tji_enter(c->loc, c->name, 0, NULL))
        return 0;
    if (!out)
        return tji_fail(TJ_ERR_INVALID_ARG, "%s: no place for the results (out is NULL)", c->name);
    for (int i = 0; i < n && i < MAX_COMBINED; i++)
        out[i] = NONE;
    return 1;
}

/* r with its axis of 1 removed: a reshape, or for [1] the scalar. */
static tj_val without_axis(tj_loc loc, tj_val r, int axis)
{
    tji_type t = type_of(vid(r));
    if (t.rank == 1)
        return val(tji_pick(tji_index_is(1, t.shape, 0, 0), vid(r), 0));
    tj_shape dropped = {t.rank - 1, {0}};
    for (int i = 0, j = 0; i < t.rank; i++)
        if (i != axis)
            dropped.dims[j++] = t.shape[i];
    return tj__reshape(loc, r, dropped);
}

static int reduce_n(const combiner *c, int n, const tj_val *xs, tj_val *out, int axis, tj_reduce_opts opts)
{
    tj_val y[MAX_COMBINED], a[MAX_COMBINED], b[MAX_COMBINED];
    tji_type orig[MAX_COMBINED];
    int64_t rows, len;
    if (!has_out(c, n, out))
        return 0;
    if (opts.propagate_nan)
        return tji_fail(TJ_ERR_BUILD, ".propagate_nan is for max, min, argmax and argmin; a combine function "
                        "handles NaNs itself");
    if (!as_rows_n(c, n, xs, &axis, y, orig, &rows, &len))
        return 0;
    for (int64_t m = len; m > 1; m /= 2) {
        for (int i = 0; i < n; i++)
            tji_partners(c->loc, y[i], rows, m, 1, &a[i], &b[i]);
        if (B.status != TJ_OK || !combine(c, n, a, b, y))
            return 0;
        for (int i = 0; i < n; i++)
            y[i] = tj__reshape(c->loc, y[i], TJ_SHAPE(rows, m / 2));
    }
    for (int i = 0; i < n; i++) {
        tji_type kept = orig[i];
        kept.shape[axis] = 1;
        tj_val r = tji_from_rows(c->loc, y[i], kept, axis);
        out[i] = B.status != TJ_OK || opts.keep_dims ? r : without_axis(c->loc, r, axis);
    }
    return B.status == TJ_OK;
}

/* Of a [rows, blocks, s], the last element of each block broadcast over it. */
static tj_val last_of_block(tj_loc loc, tj_val a, int64_t s)
{
    if (s == 1)
        return a;
    tji_type t = type_of(vid(a));
    int32_t last = tji_pick(tji_index_is(3, t.shape, 2, (int)s - 1), vid(a), 2);
    tj_val w = last ? tj__expand_dims(loc, val(last), 2) : NONE;
    return B.status == TJ_OK ? val(tji_broadcast_shape(vid(w), 3, t.shape)) : NONE;
}

static int scan_n(const combiner *c, int n, const tj_val *xs, tj_val *out, int axis, tj_scan_opts opts)
{
    tj_val y[MAX_COMBINED], a[MAX_COMBINED], b[MAX_COMBINED], last[MAX_COMBINED], upper[MAX_COMBINED];
    tji_type orig[MAX_COMBINED];
    int64_t rows, len;
    if (!has_out(c, n, out) || !as_rows_n(c, n, xs, &axis, y, orig, &rows, &len))
        return 0;
    if (opts.reverse)
        for (int i = 0; i < n; i++)
            y[i] = tj__flip(c->loc, y[i], 1);
    for (int64_t s = 1; s < len; s *= 2) {
        for (int i = 0; i < n; i++) {
            tji_partners(c->loc, y[i], rows, len, s, &a[i], &b[i]);
            last[i] = B.status == TJ_OK ? last_of_block(c->loc, a[i], s) : NONE;
        }
        if (B.status != TJ_OK || !combine(c, n, last, b, upper))
            return 0;
        for (int i = 0; i < n; i++)
            y[i] = tji_joined(c->loc, a[i], upper[i], rows, len);
    }
    for (int i = 0; i < n; i++) {
        if (opts.reverse)
            y[i] = tj__flip(c->loc, y[i], 1);
        out[i] = B.status == TJ_OK ? tji_from_rows(c->loc, y[i], orig[i], axis) : NONE;
    }
    return B.status == TJ_OK;
}

tj_val tj__reduce_with(tj_loc loc, tj_val x, int axis, tj_combine_fn fn, tj_reduce_opts opts)
{
    combiner c = {.one = fn, .name = "reduce", .loc = loc};
    tj_val r = NONE;
    reduce_n(&c, 1, &x, &r, axis, opts);
    return r;
}

void tj__reduce_n(tj_loc loc, int n, const tj_val *xs, tj_val *out, int axis, tj_combine_n_fn fn, void *ctx,
                  tj_reduce_opts opts)
{
    combiner c = {.many = fn, .ctx = ctx, .name = "reduce", .loc = loc};
    reduce_n(&c, n, xs, out, axis, opts);
}

tj_val tj__scan_with(tj_loc loc, tj_val x, int axis, tj_combine_fn fn, tj_scan_opts opts)
{
    combiner c = {.one = fn, .name = "associative_scan", .loc = loc};
    tj_val r = NONE;
    scan_n(&c, 1, &x, &r, axis, opts);
    return r;
}

void tj__scan_n(tj_loc loc, int n, const tj_val *xs, tj_val *out, int axis, tj_combine_n_fn fn, void *ctx,
                tj_scan_opts opts)
{
    combiner c = {.many = fn, .ctx = ctx, .name = "associative_scan", .loc = loc};
    scan_n(&c, n, xs, out, axis, opts);
}

/* cummax and cummin: a scan whose combine is tj_maximum (tj_minimum). */
typedef struct minmax_ctx {
    tj_loc loc;
    tj_binop op;
} minmax_ctx;

static void minmax_combine(const tj_val *a, const tj_val *b, tj_val *out, void *ctx)
{
    const minmax_ctx *m = ctx;
    out[0] = tj__minmax(m->loc, m->op, a[0], b[0], (tj_minmax_opts){TJ_PROPAGATE_NAN_NONE});
}

tj_val tji_scan_minmax(tj_loc loc, tj_reduce_op op, tj_val x, int axis, tj_scan_opts opts)
{
    minmax_ctx m = {loc, op == TJ_REDUCE_MAX ? TJ_OP_MAXIMUM : TJ_OP_MINIMUM};
    combiner c = {.many = minmax_combine, .ctx = &m, .name = op == TJ_REDUCE_MAX ? "cummax" : "cummin", .loc = loc};
    tj_val r = NONE;
    scan_n(&c, 1, &x, &r, axis, opts);
    return r;
}

/* xor_sum: a reduction whose combine is tj_xor (integers only). */
static void xor_combine(const tj_val *a, const tj_val *b, tj_val *out, void *ctx)
{
    out[0] = tj__binary(*(const tj_loc *)ctx, TJ_OP_XOR, a[0], b[0]);
}

tj_val tj__xor_sum(tj_loc loc, tj_val x, int axis, tj_reduce_opts opts)
{
    if (!tji_enter(loc, "xor_sum", 1, &x))
        return NONE;
    tji_type t = type_of(vid(x));
    if (t.is_ptr || !tjs_dtype_is_int(t.dtype))
        return tji_fail(TJ_ERR_TYPE, "xor_sum takes integers, got %s", tji_type_text(&t)), NONE;
    combiner c = {.many = xor_combine, .ctx = &loc, .name = "xor_sum", .loc = loc};
    tj_val r = NONE;
    reduce_n(&c, 1, &x, &r, axis, opts);
    return r;
}

/* softmax: exp(x - max) / sum(exp(x - max)) along axis, as Triton's. */
tj_val tj__softmax(tj_loc loc, tj_val x, int axis)
{
    if (!tji_enter(loc, "softmax", 1, &x))
        return NONE;
    tji_type t = type_of(vid(x));
    if (t.is_ptr || !is_float(t.dtype))
        return tji_fail(TJ_ERR_TYPE, "softmax takes floats, got %s", tji_type_text(&t)), NONE;
    tj_reduce_opts keep = {.keep_dims = 1};
    tj_val z = tj__binary(loc, TJ_OP_SUB, x, tj__reduce_opts(loc, TJ_REDUCE_MAX, x, axis, keep));
    tj_val num = tj__unary(loc, TJ_OP_EXP, z);
    tj_val den = tj__reduce_opts(loc, TJ_REDUCE_SUM, num, axis, keep);
    return tj__binary(loc, TJ_OP_DIV, num, den);
}
