/* SPDX-License-Identifier: MIT */
/*
 * shapes.c — broadcasting, shape checks, and the ops that make or reshape
 * tiles: program_id, num_programs, arange, full (and full_like),
 * expand_dims, broadcast_to, reshape, permute.
 *
 * Shapes meet by numpy's broadcasting rule, made explicit in the IR: a
 * scalar becomes a tile by SPLAT, a lower rank gains leading 1s by
 * EXPAND_DIMS, and size-1 dims grow by BROADCAST, so every element-wise op
 * sees operands of the result's shape. Shapes from the user are checked
 * here once: ranks up to TJ_MAX_RANK, dims powers of two, at most 2^24
 * elements a tile (MAX_NUMEL), which keeps every size and index in i32.
 */
#include <stdio.h>

#include "build.h"

/* --- shapes ---------------------------------------------------------------- */

static tji_type expanded(tji_type t, int axis)
{
    for (int i = t.rank; i > axis; i--)
        t.shape[i] = t.shape[i - 1];
    t.shape[axis] = 1;
    t.rank++;
    return t;
}

static int32_t expand(int32_t x, int axis)
{
    int32_t v = tji_emit(TJI_EXPAND_DIMS, ARGS(x), expanded(type_of(x), axis));
    op_of(v)->axis = axis;
    return v;
}

/* Can a value of type t be broadcast to the shape (rank, dims)? */
int tji_broadcastable(const tji_type *t, int rank, const int32_t *dims)
{
    if (t->rank > rank)
        return 0;
    int off = rank - t->rank;
    for (int i = 0; i < t->rank; i++)
        if (t->shape[i] != 1 && t->shape[i] != dims[off + i])
            return 0;
    return 1;
}

/* x broadcast to (rank, dims), which tji_broadcastable() allowed. */
int32_t tji_broadcast_shape(int32_t x, int rank, const int32_t *dims)
{
    tji_type t = type_of(x);
    if (t.rank == 0)
        return rank ? tji_emit(TJI_SPLAT, ARGS(x), with_shape(t, rank, dims)) : x;
    while (type_of(x).rank < rank)
        x = expand(x, 0);
    t = type_of(x);
    tji_type want = with_shape(t, rank, dims);
    return tji_same_shape(&t, &want) ? x : tji_emit(TJI_BROADCAST, ARGS(x), want);
}

/* Broadcasts n values to their common shape (numpy's rule) in place. */
int tji_broadcast_all(int32_t *ids, int n)
{
    int rank = 0;
    int32_t dims[TJ_MAX_RANK];
    for (int i = 0; i < n; i++)
        if (type_of(ids[i]).rank > rank)
            rank = type_of(ids[i]).rank;
    for (int d = 0; d < rank; d++)
        dims[d] = 1;
    for (int i = 0; i < n; i++) {
        tji_type t = type_of(ids[i]);
        for (int d = 0; d < t.rank; d++) {
            int32_t *want = &dims[rank - t.rank + d];
            if (*want == 1)
                *want = t.shape[d];
            else if (t.shape[d] != 1 && t.shape[d] != *want)
                goto mismatch;
        }
    }
    for (int i = 0; i < n; i++)
        ids[i] = tji_broadcast_shape(ids[i], rank, dims);
    return 1;
mismatch:;
    char list[256];
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        tji_type t = type_of(ids[i]);
        len += (size_t)snprintf(list + len, len < sizeof list ? sizeof list - len : 0, "%s%s",
                                i == 0 ? "" : i == n - 1 ? " and " : ", ", tji_shape_text(&t));
    }
    return tji_fail(TJ_ERR_SHAPE, "shapes %s cannot be broadcast together", list);
}

/* A shape from the user: rank 0..TJ_MAX_RANK, dims powers of two. */
static int check_shape(tj_shape s, int32_t *dims)
{
    if (s.rank < 0 || s.rank > TJ_MAX_RANK)
        return tji_fail(TJ_ERR_SHAPE, "shape of rank %d: the rank must be 0 to %d", s.rank,
                        TJ_MAX_RANK);
    int64_t numel = 1;
    for (int i = 0; i < s.rank; i++) {
        if (!is_pow2(s.dims[i]) || s.dims[i] > MAX_NUMEL)
            return tji_fail(TJ_ERR_SHAPE, "shape %s: dims must be powers of two (at most 2^24)",
                            tji_dims_text(s.rank, s.dims));
        numel *= s.dims[i];
        dims[i] = (int32_t)s.dims[i];
    }
    if (numel > MAX_NUMEL)
        return tji_fail(TJ_ERR_SHAPE, "shape %s has %lld elements; tiles hold at most 2^24",
                        tji_dims_text(s.rank, s.dims), (long long)numel);
    return 1;
}

/* Normalizes a (possibly negative) axis of x; scalars have none. */
int tji_check_axis(int *axis, const tji_type *t, const char *what)
{
    if (t->rank == 0 || *axis < -t->rank || *axis >= t->rank)
        return tji_fail(TJ_ERR_SHAPE, "%s axis %d is out of range for %s", what, *axis, tji_type_text(t));
    if (*axis < 0)
        *axis += t->rank;
    return 1;
}

/* A condition as i1: integers are compared with 0; floats and pointers fail. */
int32_t tji_as_condition(int32_t x, const char *what)
{
    tji_type t = type_of(x);
    if (t.is_ptr || is_float(t.dtype))
        return tji_fail(TJ_ERR_TYPE, "%s must be i1 or an integer, got %s", what, tji_type_text(&t));
    if (t.dtype == TJ_I1)
        return x;
    const literal *l = lit(x);
    if (l) /* folds to true or false, as a copy: the literal may be an operand too */
        return tji_make_const(TJ_I1, l->ival, 0);
    int32_t zero = tji_broadcast_shape(tji_make_const(t.dtype, 0, 0), t.rank, t.shape);
    int32_t c = tji_emit(TJI_CMP, ARGS(x, zero), with_dtype(t, TJ_I1));
    op_of(c)->pred = TJI_NE;
    return c;
}

/* --- creation and shape ops ------------------------------------------------ */

static tj_val grid_op(tj_loc loc, const char *name, tji_opcode code, int axis)
{
    if (!tji_enter(loc, name, 0, NULL))
        return NONE;
    if (axis < 0 || axis > 2)
        return tji_fail(TJ_ERR_BUILD, "%s axis %d is out of range (0..2)", name, axis), NONE;
    int32_t v = tji_emit(code, NULL, 0, scalar_type(TJ_I32));
    op_of(v)->axis = axis;
    return val(v);
}

tj_val tj__program_id(tj_loc loc, int axis)
{
    return grid_op(loc, "program_id", TJI_PROGRAM_ID, axis);
}

tj_val tj__num_programs(tj_loc loc, int axis)
{
    return grid_op(loc, "num_programs", TJI_NUM_PROGRAMS, axis);
}

tj_val tj__arange(tj_loc loc, int64_t lo, int64_t hi)
{
    if (!tji_enter(loc, "arange", 0, NULL))
        return NONE;
    long long l = lo, h = hi;
    if (lo < INT32_MIN || lo > INT32_MAX || hi < INT32_MIN || hi > INT32_MAX)
        return tji_fail(TJ_ERR_SHAPE, "arange(%lld, %lld): bounds must fit in i32", l, h), NONE;
    if (hi <= lo)
        return tji_fail(TJ_ERR_SHAPE, "arange(%lld, %lld) is empty", l, h), NONE;
    if (!is_pow2(hi - lo))
        return tji_fail(TJ_ERR_SHAPE, "arange(%lld, %lld): length %lld is not a power of two", l,
                        h, h - l), NONE;
    if (hi - lo > MAX_NUMEL)
        return tji_fail(TJ_ERR_SHAPE, "arange(%lld, %lld): length %lld is more than 2^24", l, h,
                        h - l), NONE;
    int32_t n = (int32_t)(hi - lo);
    int32_t v = tji_emit(TJI_ARANGE, NULL, 0, with_shape(scalar_type(TJ_I32), 1, &n));
    op_of(v)->ival = lo;
    return val(v);
}

tj_val tj__full(tj_loc loc, tj_shape shape, tj_val value, tj_dtype dtype)
{
    int32_t dims[TJ_MAX_RANK];
    if (!tji_enter(loc, "full", 1, &value) || !check_shape(shape, dims))
        return NONE;
    if (!dtype_ok(dtype))
        return tji_fail(TJ_ERR_BUILD, "unknown dtype %d", (int)dtype), NONE;
    tji_type t = type_of(vid(value));
    if (t.is_ptr)
        return tji_fail(TJ_ERR_TYPE, "the value must be a number, got %s", tji_type_text(&t)), NONE;
    if (t.rank)
        return tji_fail(TJ_ERR_SHAPE, "the value must be a scalar, got %s", tji_type_text(&t)), NONE;
    int32_t x = tji_to_dtype(vid(value), dtype, 1);
    const literal *l = x ? lit(x) : NULL;
    if (l) /* the dtype is the user's: the value must not stay weak, even as a scalar */
        x = tji_make_const(dtype, l->ival, tji_literal_double(l));
    return x ? val(tji_broadcast_shape(x, shape.rank, dims)) : NONE;
}

tj_val tj__full_like(tj_loc loc, tj_val x, tj_val value)
{
    if (!tji_enter(loc, "full_like", 2, (tj_val[]){x, value}))
        return NONE;
    tji_type t = type_of(vid(x));
    if (t.is_ptr)
        return tji_fail(TJ_ERR_TYPE, "the model must be numbers, got %s", tji_type_text(&t)), NONE;
    tj_shape shape = {t.rank, {0}};
    for (int i = 0; i < t.rank; i++)
        shape.dims[i] = t.shape[i];
    return tj__full(loc, shape, value, t.dtype);
}

tj_val tj__ravel(tj_loc loc, tj_val x)
{
    if (!tji_enter(loc, "ravel", 1, &x))
        return NONE;
    tji_type t = type_of(vid(x));
    return tj__reshape(loc, x, TJ_SHAPE(tji_numel(&t)));
}

tj_val tj__expand_dims(tj_loc loc, tj_val x, int axis)
{
    if (!tji_enter(loc, "expand_dims", 1, &x))
        return NONE;
    tji_type t = type_of(vid(x));
    if (axis < -(t.rank + 1) || axis > t.rank)
        return tji_fail(TJ_ERR_SHAPE, "axis %d is out of range for %s", axis, tji_type_text(&t)), NONE;
    if (t.rank == TJ_MAX_RANK)
        return tji_fail(TJ_ERR_SHAPE, "%s already has the largest rank (%d)", tji_type_text(&t),
                        TJ_MAX_RANK), NONE;
    if (t.rank == 0)
        return val(tji_broadcast_shape(vid(x), 1, (int32_t[]){1}));
    return val(expand(vid(x), axis < 0 ? axis + t.rank + 1 : axis));
}

tj_val tj__broadcast_to(tj_loc loc, tj_val x, tj_shape shape)
{
    int32_t dims[TJ_MAX_RANK];
    if (!tji_enter(loc, "broadcast_to", 1, &x) || !check_shape(shape, dims))
        return NONE;
    tji_type t = type_of(vid(x));
    if (!tji_broadcastable(&t, shape.rank, dims))
        return tji_fail(TJ_ERR_SHAPE, "cannot broadcast %s to %s", tji_type_text(&t),
                        tji_dims_text(shape.rank, shape.dims)), NONE;
    return val(tji_broadcast_shape(vid(x), shape.rank, dims));
}

tj_val tj__reshape(tj_loc loc, tj_val x, tj_shape shape)
{
    int32_t dims[TJ_MAX_RANK];
    if (!tji_enter(loc, "reshape", 1, &x) || !check_shape(shape, dims))
        return NONE;
    tji_type t = type_of(vid(x)), want = with_shape(t, shape.rank, dims);
    if (tji_numel(&t) != tji_numel(&want))
        return tji_fail(TJ_ERR_SHAPE, "cannot reshape %s (%lld elements) to %s (%lld elements)",
                        tji_type_text(&t), (long long)tji_numel(&t), tji_shape_text(&want),
                        (long long)tji_numel(&want)), NONE;
    if (tji_same_shape(&t, &want))
        return x;
    if (want.rank == 0)
        return tji_fail(TJ_ERR_SHAPE, "cannot reshape %s to a scalar (reduce it with tj_sum)",
                        tji_type_text(&t)), NONE;
    if (t.rank == 0)
        return val(tji_broadcast_shape(vid(x), want.rank, want.shape));
    return val(tji_emit(TJI_RESHAPE, ARGS(vid(x)), want));
}

tj_val tj__permute(tj_loc loc, tj_val x, tj_shape order)
{
    if (!tji_enter(loc, "permute", 1, &x))
        return NONE;
    tji_type t = type_of(vid(x)), want = t;
    char text[64];
    size_t len = 1;
    snprintf(text, sizeof text, "[");
    for (int i = 0; i < order.rank && i < TJ_MAX_RANK; i++)
        len += (size_t)snprintf(text + len, len < sizeof text ? sizeof text - len : 0,
                                "%s%lld", i ? ", " : "", (long long)order.dims[i]);
    if (len < sizeof text)
        snprintf(text + len, sizeof text - len, "]");
    if (order.rank != t.rank)
        return tji_fail(TJ_ERR_SHAPE, "order %s has %d entries for %s of rank %d", text,
                        order.rank, tji_type_text(&t), t.rank), NONE;
    int seen = 0, identity = 1;
    for (int i = 0; i < t.rank; i++) {
        int64_t p = order.dims[i];
        if (p < 0 || p >= t.rank || (seen & (1 << p)))
            return tji_fail(TJ_ERR_SHAPE, "order %s is not a permutation of 0..%d", text,
                            t.rank - 1), NONE;
        seen |= 1 << p;
        want.shape[i] = t.shape[p];
        identity &= p == i;
    }
    if (identity)
        return x;
    int32_t v = tji_emit(TJI_PERMUTE, ARGS(vid(x)), want);
    for (int i = 0; i < t.rank; i++)
        op_of(v)->perm[i] = (int)order.dims[i];
    return val(v);
}

