/* SPDX-License-Identifier: MIT */
/*
 * sort.c — tile algorithms of Triton's standard library, built from ops:
 * tj_sort, tj_topk, tj_bitonic_merge, tj_flip, tj_gather, tj_histogram and
 * tj_swizzle2d.
 *
 * Like Triton, which writes tl.sort and tl.flip in Python over reshapes,
 * tjit writes them over ops every pass and back end knows, so nothing
 * below the builder changes:
 *
 *   sort      a bitonic network along the last dimension: for each pair
 *             distance s, the tile is seen as [rows, n/2s, 2, s] (a
 *             reshape, which the layout algebra makes free), the two
 *             partners picked along the axis of 2, compared, exchanged by
 *             where, and put back side by side. n log2(n)^2 / 4
 *             compare-exchanges. Floats order NaN above every number (so
 *             ascending puts NaN last, as torch.sort does) and -0 equal to
 *             +0; no value is lost or duplicated.
 *   topk      the k largest of each row, largest first (Triton's tl.topk,
 *             the selection of Shanbhag et al.'s bitonic top-k): the
 *             sort's first log2(k) rounds leave runs of k sorted up and
 *             down in turn; then, until one run is left, each up run and
 *             the down run after it are replaced by their elementwise
 *             maximum — the k largest of those 2k, in a bitonic order — and
 *             the halved row is merged back into runs of k sorted up and
 *             down in turn (the last one down). n log2(k)^2 / 4 + about
 *             n log2(k) compare-exchanges instead of the sort's
 *             n log2(n)^2 / 4; the same order as the sort, NaN first.
 *   bitonic_merge  the sort's last round alone: a row that rises then
 *             falls (or any rotation of that) comes out sorted; any other
 *             row comes out as that network leaves it (Triton's
 *             tl.bitonic_merge, which a streaming top-k uses between two
 *             topk results).
 *   flip      the same view for each s: the partners swapped, which
 *             reverses the index bit by bit.
 *   gather    out[..i..] = src[..index[..i..]..] along an axis: a one-hot
 *             compare of index against every position of the axis, the
 *             element picked bit for bit (join.c's tji_pick). Its work
 *             is the index tile's size times the axis's length, as a tile
 *             operation must be without shared memory; an index outside
 *             [0, n) picks the dtype's lowest value (-inf for floats).
 *   histogram the counts of 0 .. num_bins-1 in an integer tile: a one-hot
 *             compare and a sum (values outside are not counted; masked
 *             elements neither).
 *   swizzle2d Triton's tl.swizzle2d: (i, j) of a row-major grid renumbered
 *             column-major within groups of size_g rows, for L2 reuse.
 */
#include <math.h>

#include "build.h"

static tj_val weak(long long v) { return tj__weak_int(v); }

/* a > b, with NaN above every number (floats) */
static tj_val greater(tj_loc loc, tj_val a, tj_val b, int is_float_dt)
{
    tj_val gt = tj__binary(loc, TJ_OP_GT, a, b);
    if (!is_float_dt)
        return gt;
    tj_val a_nan = tj__unary(loc, TJ_OP_ISNAN, a), b_num = tj__unary(loc, TJ_OP_NOT, tj__unary(loc, TJ_OP_ISNAN, b));
    return tj__binary(loc, TJ_OP_OR, gt, tj__binary(loc, TJ_OP_AND, a_nan, b_num));
}

/* x [rows, n] seen as its pairs at distance s, [rows, n/2s, 2, s] (a
 * reshape, which moves no data): a = the elements whose bit s is clear,
 * b = their partners, both [rows, n/2s, s], picked along axis 2 where
 * they stand (no permute, so no layout conversion for it). */
void tji_partners(tj_loc loc, tj_val x, int64_t rows, int64_t n, int64_t s, tj_val *a, tj_val *b)
{
    tj_val y = tj__reshape(loc, x, TJ_SHAPE(rows, n / (2 * s), 2, s));
    if (B.status != TJ_OK)
        return;
    tji_type t = type_of(vid(y));
    int32_t c0 = tji_index_is(4, t.shape, 2, 0), c1 = c0 ? tji_index_is(4, t.shape, 2, 1) : 0;
    int32_t pa = c1 ? tji_pick(c0, vid(y), 2) : 0, pb = pa ? tji_pick(c1, vid(y), 2) : 0;
    *a = val(pa), *b = val(pb);
}

/* The inverse of partners: a and b side by side along axis 2, [rows, n]. */
tj_val tji_joined(tj_loc loc, tj_val a, tj_val b, int64_t rows, int64_t n)
{
    tj_val wa = tj__expand_dims(loc, a, 2), wb = tj__expand_dims(loc, b, 2);
    if (B.status != TJ_OK)
        return NONE;
    int32_t dims[4] = {type_of(vid(wa)).shape[0], type_of(vid(wa)).shape[1], 2, type_of(vid(wa)).shape[3]};
    int32_t c0 = tji_index_is(4, dims, 2, 0);
    int32_t ids[3] = {c0, tji_broadcast_shape(vid(wa), 4, dims), tji_broadcast_shape(vid(wb), 4, dims)};
    if (!c0)
        return NONE;
    int32_t y = tji_emit(TJI_WHERE, ids, 3, type_of(ids[1]));
    return tj__reshape(loc, val(y), TJ_SHAPE(rows, n));
}

/* Checks x for sort/flip and views it with axis last (a permute where it
 * was not): rows of n elements, rows * n the tile's size. */
int tji_as_rows(const char *name, tj_loc loc, tj_val *x, int *axis, int64_t *rows, int64_t *n)
{
    tji_type t = type_of(vid(*x));
    if (t.is_ptr)
        return tji_fail(TJ_ERR_TYPE, "no rule for '%s' of %s", name, tji_type_text(&t)), 0;
    if (t.rank == 0)
        return tji_fail(TJ_ERR_SHAPE, "%s takes a tile, got the scalar %s", name, tji_type_text(&t)), 0;
    if (!tji_check_axis(axis, &t, name))
        return 0;
    *n = t.shape[*axis];
    *rows = tji_numel(&t) / *n;
    if (*axis != t.rank - 1) {
        tj_shape p = {t.rank, {0}};
        for (int i = 0; i < t.rank; i++)
            p.dims[i] = i;
        p.dims[*axis] = t.rank - 1, p.dims[t.rank - 1] = *axis;
        *x = tj__permute(loc, *x, p);
    }
    return 1;
}

/* The inverse of as_rows: [rows, n] back to the shape of the original x. */
tj_val tji_from_rows(tj_loc loc, tj_val y, tji_type orig, int axis)
{
    tj_shape moved = {orig.rank, {0}}, p = {orig.rank, {0}};
    for (int i = 0; i < orig.rank; i++)
        moved.dims[i] = orig.shape[i], p.dims[i] = i;
    moved.dims[axis] = orig.shape[orig.rank - 1], moved.dims[orig.rank - 1] = orig.shape[axis];
    p.dims[axis] = orig.rank - 1, p.dims[orig.rank - 1] = axis;
    y = tj__reshape(loc, y, moved);
    return axis == orig.rank - 1 ? y : tj__permute(loc, y, p);
}

/* One round of compare-exchanges at pair distance s over y [rows, n],
 * inside runs of `size` elements: a run sorts down where bit `size` of its
 * position is set (runs of the whole row: none), all of them reversed by
 * descending. */
static tj_val compare_exchange(tj_loc loc, tj_val y, int64_t rows, int64_t n, int64_t size, int64_t s,
                               int descending, int floats)
{
    tj_val a, b;
    tji_partners(loc, y, rows, n, s, &a, &b);
    /* block k of 2s elements starts at 2sk */
    tj_val k = tj__arange(loc, 0, n / (2 * s));
    tj_val bit = tj__binary(loc, TJ_OP_AND, tj__binary(loc, TJ_OP_MUL, k, weak(2 * s)), weak(size));
    tj_val down = tj__binary(loc, descending ? TJ_OP_EQ : TJ_OP_NE, bit, weak(0));
    down = tj__expand_dims(loc, tj__expand_dims(loc, down, 0), 2);
    tj_val swap = tj__where(loc, down, greater(loc, b, a, floats), greater(loc, a, b, floats));
    return tji_joined(loc, tj__where(loc, swap, b, a), tj__where(loc, swap, a, b), rows, n);
}

/* Merges runs of `size` (each rising then falling) of y [rows, n] into
 * sorted runs, as compare_exchange orders them. */
static tj_val merge_runs(tj_loc loc, tj_val y, int64_t rows, int64_t n, int64_t size, int descending, int floats)
{
    for (int64_t s = size / 2; s >= 1 && B.status == TJ_OK; s /= 2)
        y = compare_exchange(loc, y, rows, n, size, s, descending, floats);
    return y;
}

/* x as rows of its last dimension for the network: [rows, n] (fp8 as f16,
 * exact both ways); NONE after an error. */
static tj_val network_rows(const char *name, tj_loc loc, tj_val x, int64_t *rows, int64_t *n)
{
    int axis = -1;
    if (!tji_as_rows(name, loc, &x, &axis, rows, n))
        return NONE;
    if (tjs_dtype_is_fp8(type_of(vid(x)).dtype))
        x = tj__cast(loc, x, TJ_F16);
    return tj__reshape(loc, x, TJ_SHAPE(*rows, *n));
}

/* The network's result [rows, n] back in x's dtype and shape, its last
 * dimension n. */
static tj_val network_result(tj_loc loc, tj_val y, tji_type t, int64_t n)
{
    if (B.status != TJ_OK)
        return NONE;
    if (tjs_dtype_is_fp8(t.dtype))
        y = tj__cast(loc, y, t.dtype);
    t.shape[t.rank - 1] = (int32_t)n;
    return tji_from_rows(loc, y, t, t.rank - 1);
}

tj_val tj__sort(tj_loc loc, tj_val x, tj_sort_opts opts)
{
    if (!tji_enter(loc, "sort", 1, &x))
        return NONE;
    tji_type t = type_of(vid(x));
    int64_t rows, n;
    tj_val y = network_rows("sort", loc, x, &rows, &n);
    for (int64_t size = 2; size <= n && B.status == TJ_OK; size *= 2)
        y = merge_runs(loc, y, rows, n, size, opts.descending != 0, is_float(t.dtype));
    return network_result(loc, y, t, n);
}

tj_val tj__topk(tj_loc loc, tj_val x, int64_t k)
{
    if (!tji_enter(loc, "topk", 1, &x))
        return NONE;
    tji_type t = type_of(vid(x));
    int64_t rows, n;
    tj_val y = network_rows("topk", loc, x, &rows, &n);
    if (B.status != TJ_OK)
        return NONE;
    if (k < 1 || k > n || !is_pow2(k))
        return tji_fail(TJ_ERR_SHAPE, "k = %lld: a power of two from 1 to the last dimension, %lld", (long long)k,
                        (long long)n), NONE;
    int floats = is_float(t.dtype);
    /* runs of k, sorted up and down in turn (all of the row down when k = n) */
    for (int64_t size = 2; size <= k && B.status == TJ_OK; size *= 2)
        y = merge_runs(loc, y, rows, n, size, size == n, floats);
    for (int64_t m = n; m > k && B.status == TJ_OK; m /= 2) {
        tj_val up, down;
        tji_partners(loc, y, rows, m, k, &up, &down);
        tj_val larger = tj__where(loc, greater(loc, down, up, floats), down, up);
        y = tj__reshape(loc, larger, TJ_SHAPE(rows, m / 2));
        y = merge_runs(loc, y, rows, m / 2, k, m / 2 == k, floats);
    }
    return network_result(loc, y, t, k);
}

tj_val tj__bitonic_merge(tj_loc loc, tj_val x, tj_sort_opts opts)
{
    if (!tji_enter(loc, "bitonic_merge", 1, &x))
        return NONE;
    tji_type t = type_of(vid(x));
    int64_t rows, n;
    tj_val y = network_rows("bitonic_merge", loc, x, &rows, &n);
    if (B.status == TJ_OK)
        y = merge_runs(loc, y, rows, n, n, opts.descending != 0, is_float(t.dtype));
    return network_result(loc, y, t, n);
}

tj_val tj__flip(tj_loc loc, tj_val x, int axis)
{
    if (!tji_enter(loc, "flip", 1, &x))
        return NONE;
    tji_type t = type_of(vid(x));
    int64_t rows, n;
    if (!tji_as_rows("flip", loc, &x, &axis, &rows, &n))
        return NONE;
    tj_val y = tj__reshape(loc, x, TJ_SHAPE(rows, n));
    for (int64_t s = 1; s < n; s *= 2) {
        tj_val a, b;
        tji_partners(loc, y, rows, n, s, &a, &b);
        y = tji_joined(loc, b, a, rows, n);
    }
    return B.status == TJ_OK ? tji_from_rows(loc, y, t, axis) : NONE;
}

tj_val tj__gather(tj_loc loc, tj_val src, tj_val index, int axis)
{
    if (!tji_enter(loc, "gather", 2, (tj_val[]){src, index}))
        return NONE;
    tji_type ts = type_of(vid(src)), ti = type_of(vid(index));
    if (ts.is_ptr || ti.is_ptr)
        return tji_fail(TJ_ERR_TYPE, "no rule for 'gather' of %s and %s", tji_type_text(&ts),
                        tji_type_text(&ti)), NONE;
    if (!tjs_dtype_is_int(ti.dtype) || ti.dtype == TJ_I1)
        return tji_fail(TJ_ERR_TYPE, "the index must be integers, got %s", tji_type_text(&ti)), NONE;
    if (ts.rank == 0 || ts.rank != ti.rank)
        return tji_fail(TJ_ERR_SHAPE, "src %s and index %s must be tiles of one rank", tji_type_text(&ts),
                        tji_type_text(&ti)), NONE;
    if (!tji_check_axis(&axis, &ts, "gather"))
        return NONE;
    for (int d = 0; d < ts.rank; d++)
        if (d != axis && ts.shape[d] != ti.shape[d])
            return tji_fail(TJ_ERR_SHAPE, "src %s and index %s differ in dimension %d, which is not the "
                            "gathered axis %d", tji_type_text(&ts), tji_type_text(&ti), d, axis), NONE;
    if (ts.rank == TJ_MAX_RANK)
        return tji_fail(TJ_ERR_SHAPE, "gather of rank %d tiles: at most %d", ts.rank, TJ_MAX_RANK - 1), NONE;
    int64_t n = ts.shape[axis];
    if (tji_numel(&ti) * n > MAX_NUMEL)
        return tji_fail(TJ_ERR_SHAPE, "gather of %lld positions for each of %lld indices: more than 2^24 "
                        "compares in one tile", (long long)n, (long long)tji_numel(&ti)), NONE;
    /* src with the axis moved last and a 1 in its place: [.., 1, .., n] */
    tj_shape p = {ts.rank, {0}};
    for (int i = 0, k = 0; i < ts.rank; i++)
        if (i != axis)
            p.dims[k++] = i;
    p.dims[ts.rank - 1] = axis;
    tj_val v = tj__expand_dims(loc, tj__permute(loc, src, p), axis);
    tj_val hit = tj__binary(loc, TJ_OP_EQ, tj__expand_dims(loc, index, ti.rank), tj__arange(loc, 0, n));
    if (B.status != TJ_OK)
        return NONE;
    tji_type ht = type_of(vid(hit));
    int32_t wide = tji_broadcast_shape(vid(v), ht.rank, ht.shape);
    int32_t picked = wide ? tji_pick(vid(hit), wide, ti.rank) : 0;
    if (!picked || !is_float(ts.dtype))
        return val(picked); /* no position hit: the pick's lowest, the dtype's minimum */
    /* floats are picked by their bits, whose lowest is -0.0: -inf instead
     * (fp8 e4m3 has none: what -inf converts to) */
    tj_val wide_index = tj__cast(loc, index, TJ_I64); /* n need not fit the index's dtype */
    tj_val in_range = tj__binary(loc, TJ_OP_AND, tj__binary(loc, TJ_OP_GE, wide_index, weak(0)),
                                 tj__binary(loc, TJ_OP_LT, wide_index, weak(n)));
    int fp8 = tjs_dtype_is_fp8(ts.dtype);
    int32_t minus_inf = tji_make_const(fp8 ? TJ_F16 : ts.dtype, 0, -INFINITY);
    if (minus_inf && fp8)
        minus_inf = tji_to_dtype(minus_inf, ts.dtype, 0);
    return minus_inf ? tj__where(loc, in_range, val(picked), val(minus_inf)) : NONE;
}

tj_val tj__histogram(tj_loc loc, tj_val x, int64_t num_bins, tj_histogram_opts opts)
{
    tj_val mask = opts.mask;
    if (!tji_enter(loc, "histogram", mask.id ? 2 : 1, (tj_val[]){x, mask}))
        return NONE;
    tji_type t = type_of(vid(x));
    if (t.is_ptr || !tjs_dtype_is_int(t.dtype) || t.dtype == TJ_I1)
        return tji_fail(TJ_ERR_TYPE, "histogram counts integers, got %s", tji_type_text(&t)), NONE;
    if (t.rank == 0)
        return tji_fail(TJ_ERR_SHAPE, "histogram takes a tile, got the scalar %s", tji_type_text(&t)), NONE;
    if (num_bins < 1 || num_bins > MAX_NUMEL || !is_pow2(num_bins) || num_bins * tji_numel(&t) > MAX_NUMEL)
        return tji_fail(TJ_ERR_SHAPE, "num_bins %lld: a power of two, at most 2^24 / %lld (the elements)",
                        (long long)num_bins, (long long)tji_numel(&t)), NONE;
    tj_val flat = tj__reshape(loc, x, TJ_SHAPE(tji_numel(&t)));
    tj_val hit = tj__binary(loc, TJ_OP_EQ, tj__expand_dims(loc, flat, 1),
                            tj__expand_dims(loc, tj__arange(loc, 0, num_bins), 0));
    if (mask.id) {
        tji_type mt = type_of(vid(mask));
        if (!tji_same_shape(&mt, &t) && mt.rank != 0)
            return tji_fail(TJ_ERR_SHAPE, "the mask %s must have the shape of %s", tji_type_text(&mt),
                            tji_type_text(&t)), NONE;
        tj_val m = mt.rank ? tj__reshape(loc, mask, TJ_SHAPE(tji_numel(&t))) : mask;
        int32_t c = tji_as_condition(vid(m), "the mask");
        if (!c)
            return NONE;
        hit = tj__binary(loc, TJ_OP_AND, hit, mt.rank ? tj__expand_dims(loc, val(c), 1) : val(c));
    }
    return tj__reduce(loc, TJ_REDUCE_SUM, tj__cast(loc, hit, TJ_I32), 0);
}

void tj__swizzle2d(tj_loc loc, tj_val i, tj_val j, tj_val size_i, tj_val size_j, tj_val size_g, tj_val *new_i,
                   tj_val *new_j)
{
    if (new_i)
        *new_i = NONE;
    if (new_j)
        *new_j = NONE;
    if (!tji_enter(loc, "swizzle2d", 5, (tj_val[]){i, j, size_i, size_j, size_g}))
        return;
    if (!new_i || !new_j) {
        tji_fail(TJ_ERR_INVALID_ARG, "the addresses of both results are needed (tj_swizzle2d(i, j, size_i, "
                 "size_j, size_g, &new_i, &new_j))");
        return;
    }
    tj_val args[5] = {i, j, size_i, size_j, size_g};
    for (int k = 0; k < 5; k++) {
        tji_type t = type_of(vid(args[k]));
        if (t.is_ptr || !tjs_dtype_is_int(t.dtype)) {
            tji_fail(TJ_ERR_TYPE, "operand %d must be integers, got %s", k + 1, tji_type_text(&t));
            return;
        }
    }
    tj_val ij = tj__binary(loc, TJ_OP_ADD, tj__binary(loc, TJ_OP_MUL, i, size_j), j);
    tj_val size_gj = tj__binary(loc, TJ_OP_MUL, size_g, size_j);
    tj_val off_i = tj__binary(loc, TJ_OP_MUL, tj__binary(loc, TJ_OP_FLOORDIV, ij, size_gj), size_g);
    tj_val rows = tj__binary(loc, TJ_OP_MINIMUM, tj__binary(loc, TJ_OP_SUB, size_i, off_i), size_g);
    tj_val in_group = tj__binary(loc, TJ_OP_MOD, ij, size_gj);
    tj_val ni = tj__binary(loc, TJ_OP_ADD, off_i, tj__binary(loc, TJ_OP_MOD, in_group, rows));
    tj_val nj = tj__binary(loc, TJ_OP_FLOORDIV, in_group, rows);
    if (B.status == TJ_OK)
        *new_i = ni, *new_j = nj;
}
