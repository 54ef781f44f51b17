/* SPDX-License-Identifier: MIT */
/*
 * join.c — tj_join, tj_split, tj_interleave and tj_cat (Triton's tl.join,
 * tl.split, tl.interleave and tl.cat): two tiles side by side along a new
 * minor dimension of 2, the two halves of such a tile, two tiles' elements
 * alternated, and one tile after the other.
 *
 * They are built from ops every pass and both back ends already know, so
 * that nothing below the builder learns a new op:
 *
 *   join(a, b)   = where(iota2 == 0, a[..., None], b[..., None]), each
 *                  side broadcast to [..., 2];
 *   split(x)     = for k = 0, 1: max over the last axis of
 *                  where(iota2 == k, x, lowest), lowest the dtype's
 *                  minimum, floats taken as the signed integers of their
 *                  bits: the one element kept comes back bit for bit
 *                  (-0.0 and NaN payloads too);
 *   interleave   = join, then the last two axes merged by a reshape;
 *   cat(a, b)    = join, the new dimension moved first, then merged with
 *                  the next by a reshape: a's rows, then b's.
 *
 * A maximum rather than a sum picks the element because a sum's start
 * value (+0) would turn -0.0 into +0.0; an integer maximum rather than a
 * float one because the GPU's NaN-propagating max (max.NaN) returns the
 * canonical NaN, not the operand's bits, which lost sort's NaNs on an
 * H100. i1 is picked as i32. tji_pick is that pick along any axis, for
 * sort.c and combine.c too.
 * The layout passes see a dimension of 2 like any other; on a GPU it ends
 * up in each thread's registers where the tile allows.
 */
#include <math.h>

#include "build.h"

int32_t tji_index_is(int rank, const int32_t *dims, int axis, int k)
{
    int32_t n = dims[axis], iota = tji_emit(TJI_ARANGE, NULL, 0, with_shape(scalar_type(TJ_I32), 1, &n));
    op_of(iota)->ival = 0;
    for (int i = axis + 1; i < rank; i++) { /* trailing 1s: [n, 1, ..] */
        tji_type t = type_of(iota);
        t.shape[t.rank++] = 1;
        iota = tji_emit(TJI_EXPAND_DIMS, ARGS(iota), t);
        op_of(iota)->axis = t.rank - 1;
    }
    int32_t ids[2] = {tji_broadcast_shape(iota, rank, dims), tji_make_const(TJ_I32, k, 0)};
    if (!ids[1])
        return 0;
    ids[1] = tji_broadcast_shape(ids[1], rank, dims);
    int32_t c = tji_emit(TJI_CMP, ids, 2, with_shape(scalar_type(TJ_I1), rank, dims));
    op_of(c)->pred = TJI_EQ;
    return c;
}

/* An i1 tile of rank+1 dims (dims[rank] == 2): is the last index k? */
static int32_t is_half(int rank, const int32_t *dims, int k)
{
    return tji_index_is(rank + 1, dims, rank, k);
}

/* x of shape (rank, dims) as [dims..., 1] broadcast to [dims..., 2]. */
static int32_t widened(int32_t x, int rank, const int32_t *dims)
{
    int32_t d[TJ_MAX_RANK];
    for (int i = 0; i < rank; i++)
        d[i] = dims[i];
    d[rank] = 1;
    int32_t v = rank ? tji_emit(TJI_EXPAND_DIMS, ARGS(tji_broadcast_shape(x, rank, dims)),
                                with_shape(type_of(x), rank + 1, d))
                     : tji_broadcast_shape(x, 1, d);
    if (rank)
        op_of(v)->axis = rank;
    d[rank] = 2;
    return tji_broadcast_shape(v, rank + 1, d);
}

/* The checks and the join of a and b (0 after an error). */
static int32_t join_ids(const char *name, tj_val a, tj_val b)
{
    int32_t ids[2] = {vid(a), vid(b)};
    for (int i = 0; i < 2; i++) {
        tji_type t = type_of(ids[i]);
        if (t.is_ptr)
            return tji_fail(TJ_ERR_TYPE, "no rule for '%s' of %s", name, tji_type_text(&t));
    }
    tj_dtype dt = tji_meet(ids, 2);
    if (!(ids[0] = tji_to_dtype(ids[0], dt, 1)) || !(ids[1] = tji_to_dtype(ids[1], dt, 1)) ||
        !tji_broadcast_all(ids, 2))
        return 0;
    tji_type t = type_of(ids[0]);
    if (t.rank == TJ_MAX_RANK)
        return tji_fail(TJ_ERR_SHAPE, "%s of %s: the result would have more than %d dimensions", name,
                        tji_type_text(&t), TJ_MAX_RANK);
    if (tji_numel(&t) * 2 > MAX_NUMEL)
        return tji_fail(TJ_ERR_SHAPE, "%s of %s: the result would have more than 2^24 elements", name,
                        tji_type_text(&t));
    int32_t dims[TJ_MAX_RANK];
    for (int i = 0; i < t.rank; i++)
        dims[i] = t.shape[i];
    dims[t.rank] = 2;
    int32_t cond = is_half(t.rank, dims, 0);
    if (!cond)
        return 0;
    int32_t wa = widened(ids[0], t.rank, t.shape), wb = widened(ids[1], t.rank, t.shape);
    return tji_emit(TJI_WHERE, ARGS(cond, wa, wb), type_of(wa));
}

tj_val tj__join(tj_loc loc, tj_val a, tj_val b)
{
    if (!tji_enter(loc, "join", 2, (tj_val[]){a, b}))
        return NONE;
    return val(join_ids("join", a, b));
}

tj_val tj__interleave(tj_loc loc, tj_val a, tj_val b)
{
    if (!tji_enter(loc, "interleave", 2, (tj_val[]){a, b}))
        return NONE;
    int32_t j = join_ids("interleave", a, b);
    if (!j)
        return NONE;
    tji_type t = type_of(j);
    if (t.rank == 1) /* two scalars: [2] already */
        return val(j);
    tji_type merged = t;
    merged.rank--;
    merged.shape[merged.rank - 1] *= 2;
    merged.shape[merged.rank] = 0;
    return val(tji_emit(TJI_RESHAPE, ARGS(j), merged));
}

/* Triton's cat keeps no order (can_reorder) and takes 1-D tiles; this one
 * keeps the order, so either use is right, and takes tiles of up to 3
 * dimensions (the join in between has one more). */
tj_val tj__cat(tj_loc loc, tj_val a, tj_val b)
{
    if (!tji_enter(loc, "cat", 2, (tj_val[]){a, b}))
        return NONE;
    tji_type ta = type_of(vid(a)), tb = type_of(vid(b));
    if (ta.rank == TJ_MAX_RANK || tb.rank == TJ_MAX_RANK)
        return tji_fail(TJ_ERR_SHAPE, "cat of %s and %s: tiles of at most %d dimensions (reshape first)",
                        tji_type_text(&ta), tji_type_text(&tb), TJ_MAX_RANK - 1), NONE;
    int32_t j = join_ids("cat", a, b);
    if (!j)
        return NONE;
    tji_type t = type_of(j);
    if (t.rank == 1) /* two scalars: [2] already */
        return val(j);
    tji_type moved = t;
    moved.shape[0] = 2;
    for (int i = 1; i < t.rank; i++)
        moved.shape[i] = t.shape[i - 1];
    int32_t p = tji_emit(TJI_PERMUTE, ARGS(j), moved);
    op_of(p)->perm[0] = t.rank - 1;
    for (int i = 1; i < t.rank; i++)
        op_of(p)->perm[i] = i - 1;
    tji_type merged = moved;
    merged.rank--;
    merged.shape[0] = 2 * t.shape[0];
    for (int i = 1; i < merged.rank; i++)
        merged.shape[i] = moved.shape[i + 1];
    merged.shape[merged.rank] = 0;
    return val(tji_emit(TJI_RESHAPE, ARGS(p), merged));
}

/* The smallest value of the integer dtype dt, from which a max picks the other. */
static int32_t lowest(tj_dtype dt)
{
    if (is_unsigned(dt))
        return tji_make_const(dt, 0, 0);
    return tji_make_const(dt, dt == TJ_I8 ? INT8_MIN : dt == TJ_I16 ? INT16_MIN : dt == TJ_I32 ? INT32_MIN
                                                                                 : INT64_MIN, 0);
}

/* The integer dtype whose maximum picks an element of dt bit for bit: a
 * float's bits as a signed integer of its width, i1 as i32. */
static tj_dtype pick_carrier(tj_dtype dt)
{
    if (!is_float(dt))
        return dt == TJ_I1 ? TJ_I32 : dt;
    int bits = tjs_dtype_bits(dt);
    return bits == 64 ? TJ_I64 : bits == 32 ? TJ_I32 : bits == 16 ? TJ_I16 : TJ_I8;
}

/* v as dtype to: its bits where a float is on either side, else converted. */
static int32_t pick_convert(int32_t v, tj_dtype to)
{
    tji_type t = type_of(v);
    if (is_float(t.dtype) || is_float(to))
        return tji_emit(TJI_BITCAST, ARGS(v), with_dtype(t, to));
    return tji_to_dtype(v, to, 0);
}

int32_t tji_pick(int32_t cond, int32_t v, int axis)
{
    tji_type t = type_of(v);
    tj_dtype carrier = pick_carrier(t.dtype);
    if (carrier != t.dtype && !(v = pick_convert(v, carrier)))
        return 0;
    int32_t low = lowest(carrier);
    if (!low || !(low = tji_broadcast_shape(low, t.rank, t.shape)))
        return 0;
    int32_t picked = tji_emit(TJI_WHERE, ARGS(cond, v, low), type_of(v));
    tji_type row = type_of(v);
    for (int i = axis; i + 1 < row.rank; i++)
        row.shape[i] = row.shape[i + 1];
    row.shape[--row.rank] = 0;
    int32_t r = tji_emit(TJI_REDUCE, ARGS(picked), row);
    op_of(r)->axis = axis;
    op_of(r)->reduce = TJ_REDUCE_MAX;
    return carrier == t.dtype ? r : pick_convert(r, t.dtype);
}

void tj__split(tj_loc loc, tj_val x, tj_val *a, tj_val *b)
{
    if (a)
        *a = NONE;
    if (b)
        *b = NONE;
    if (!tji_enter(loc, "split", 1, &x))
        return;
    if (!a || !b) {
        tji_fail(TJ_ERR_INVALID_ARG, "the addresses of both halves are needed (tj_split(x, &a, &b))");
        return;
    }
    tji_type t = type_of(vid(x));
    if (t.is_ptr) {
        tji_fail(TJ_ERR_TYPE, "no rule for 'split' of %s", tji_type_text(&t));
        return;
    }
    if (t.rank == 0 || t.shape[t.rank - 1] != 2) {
        tji_fail(TJ_ERR_SHAPE, "split takes a tile whose last dimension is 2, got %s", tji_type_text(&t));
        return;
    }
    tj_val *out[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        int32_t cond = is_half(t.rank - 1, t.shape, k);
        int32_t r = cond ? tji_pick(cond, vid(x), t.rank - 1) : 0;
        if (!r)
            return;
        *out[k] = val(r);
    }
}
