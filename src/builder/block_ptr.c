/* SPDX-License-Identifier: MIT */
/*
 * block_ptr.c — block pointers in the kernel language: tj_make_block_ptr,
 * tj_advance, and the checks of the options a load or store of one takes.
 *
 * A block pointer (Triton's make_block_ptr) names a block of a strided
 * tensor: a scalar base pointer, the tensor's shape and strides (i64, in
 * elements), the block's offsets in it (i32) and the block's static shape.
 * In the IR it is one value of its own type (TJI_BLOCK_PTR, ir.h) made by
 * MAKE_BLOCK_PTR and moved by ADVANCE, which LOAD and STORE read and FOR
 * and IF carry like any value; tjp_lower_block_ptrs turns it into pointer
 * tiles and masks before the back ends. Keeping it whole until then is what
 * lets a later GPU pass see a block access as such (TMA) instead of
 * re-deriving it from address arithmetic.
 *
 * The user's numbers are converted as Triton does: shape and strides are
 * widened to i64 (any integer), offsets are i32 (integers up to 32 bits;
 * an i64 or u32 offset must be cast by the user, rather than cut here).
 * Everything the IR would refuse is refused here first, with the user's
 * line: ranks that disagree, an order that is no permutation, a block
 * dimension that is no power of two, .mask or .other on a block pointer,
 * .boundary_check or .padding on a plain pointer, a dimension the block
 * does not have, padding on a store, NaN padding of integers.
 */
#include "build.h"

/* The block's rank, or 0 after reporting why block_shape is none. */
static int block_rank(const tj_shape *bs)
{
    if (bs->rank < 1 || bs->rank > TJ_MAX_RANK)
        return tji_fail(TJ_ERR_SHAPE, "block_shape has rank %d; a block has 1 to %d dimensions",
                        bs->rank, TJ_MAX_RANK);
    int64_t numel = 1;
    for (int d = 0; d < bs->rank; d++) {
        if (!is_pow2(bs->dims[d]) || bs->dims[d] > MAX_NUMEL)
            return tji_fail(TJ_ERR_SHAPE, "block_shape %s: each dimension must be a power of two",
                            tji_dims_text(bs->rank, bs->dims));
        numel *= bs->dims[d];
    }
    if (numel > MAX_NUMEL)
        return tji_fail(TJ_ERR_SHAPE, "block_shape %s has more than %lld elements",
                        tji_dims_text(bs->rank, bs->dims), (long long)MAX_NUMEL);
    return bs->rank;
}

/* The n values of list (what names them in messages) as scalars of dt
 * into out; offsets (dt i32) take integers of at most 32 bits. */
static int scalars(const tj_vals *list, int rank, const char *what, tj_dtype dt, int32_t *out)
{
    if (list->n != rank)
        return tji_fail(TJ_ERR_SHAPE, "%s has %d values for a block of rank %d", what, list->n,
                        rank);
    for (int i = 0; i < rank; i++) {
        int32_t id = vid(list->v[i]);
        if (!tji_check_value(id, what, i + 1))
            return 0;
        tji_type t = type_of(id);
        if (t.is_ptr || !tjs_dtype_is_int(t.dtype) || t.rank)
            return tji_fail(TJ_ERR_TYPE, "%s %d is %s; it takes integer scalars", what, i + 1,
                            tji_type_text(&t));
        if (dt == TJ_I32 && !lit(id) && (tjs_dtype_bits(t.dtype) > 32 || t.dtype == TJ_U32))
            return tji_fail(TJ_ERR_TYPE, "%s %d is %s; offsets are i32 (cast it with tj_cast)",
                            what, i + 1, tji_type_text(&t));
        if (!(out[i] = tji_to_dtype(id, dt, 1)))
            return 0;
    }
    return 1;
}

tj_val tj__make_block_ptr(tj_loc loc, tj_val base, tj_vals shape, tj_vals strides,
                          tj_vals offsets, tj_shape block_shape, tj_shape order)
{
    if (!tji_enter(loc, "make_block_ptr", 1, &base))
        return NONE;
    tji_type bt = type_of(vid(base));
    if (bt.is_ptr != 1 || bt.rank)
        return tji_fail(TJ_ERR_TYPE, "the base must be a pointer parameter (a scalar pointer), "
                        "got %s", tji_type_text(&bt)), NONE;
    int r = block_rank(&block_shape);
    if (!r)
        return NONE;
    if (order.rank != r)
        return tji_fail(TJ_ERR_SHAPE, "order has %d dimensions for a block of rank %d",
                        order.rank, r), NONE;
    for (int i = 0, seen = 0; i < r; i++) {
        int64_t d = order.dims[i];
        if (d < 0 || d >= r || (seen >> d & 1))
            return tji_fail(TJ_ERR_BUILD, "order %s is not a permutation of 0..%d",
                            tji_dims_text(r, order.dims), r - 1), NONE;
        seen |= 1 << d;
    }
    int32_t args[1 + 3 * TJ_MAX_RANK] = {vid(base)};
    if (!scalars(&shape, r, "shape", TJ_I64, args + 1) ||
        !scalars(&strides, r, "strides", TJ_I64, args + 1 + r) ||
        !scalars(&offsets, r, "offsets", TJ_I32, args + 1 + 2 * r))
        return NONE;
    tji_type t = {.dtype = bt.dtype, .is_ptr = TJI_BLOCK_PTR, .rank = (uint8_t)r};
    for (int d = 0; d < r; d++)
        t.shape[d] = (int32_t)block_shape.dims[d];
    int32_t v = tji_emit(TJI_MAKE_BLOCK_PTR, args, 1 + 3 * r, t);
    for (int d = 0; d < r; d++)
        op_of(v)->perm[d] = (int)order.dims[d];
    return val(v);
}

tj_val tj__advance(tj_loc loc, tj_val bp, tj_vals offsets)
{
    if (!tji_enter_block(loc, "advance", 1, &bp))
        return NONE;
    tji_type t = type_of(vid(bp));
    if (!tji_is_block_ptr(&t))
        return tji_fail(TJ_ERR_TYPE, "advance of %s, which is not a block pointer "
                        "(tj_make_block_ptr)", tji_type_text(&t)), NONE;
    int32_t args[1 + TJ_MAX_RANK] = {vid(bp)};
    if (!scalars(&offsets, t.rank, "offsets", TJ_I32, args + 1))
        return NONE;
    return val(tji_emit(TJI_ADVANCE, args, 1 + t.rank, t));
}

int tji_check_block_opts(int32_t ptr, const tj_mem_opts *o, int is_load)
{
    tji_type t = type_of(ptr);
    if (!tji_is_block_ptr(&t)) {
        if (o->boundary_check || o->padding)
            return tji_fail(TJ_ERR_BUILD, "'boundary_check' and 'padding' apply to block pointers "
                            "(tj_make_block_ptr) only; a pointer tile takes 'mask' and 'other'");
        return 1;
    }
    if (vid(o->mask) || vid(o->other))
        return tji_fail(TJ_ERR_BUILD, "a %s of a block pointer takes 'boundary_check'%s, not "
                        "'mask' or 'other'", is_load ? "load" : "store",
                        is_load ? " and 'padding'" : "");
    if (o->boundary_check >> t.rank) {
        int d = t.rank;
        while (!(o->boundary_check >> d & 1))
            d++;
        if (d == 31)
            return tji_fail(TJ_ERR_SHAPE, "boundary_check names a dimension outside 0..30");
        return tji_fail(TJ_ERR_SHAPE, "boundary_check on dimension %d, but the block pointer %s "
                        "has %d dimension%s", d, tji_type_text(&t), t.rank, t.rank > 1 ? "s" : "");
    }
    if ((unsigned)o->padding > TJ_PADDING_NAN)
        return tji_fail(TJ_ERR_BUILD, "unknown padding %d", (int)o->padding);
    if (!is_load && o->padding)
        return tji_fail(TJ_ERR_BUILD, "'padding' applies to loads only: a store leaves the "
                        "elements outside the bounds untouched");
    if (o->padding == TJ_PADDING_NAN && !is_float(t.dtype))
        return tji_fail(TJ_ERR_TYPE, "NaN padding of %s: integers have no NaN",
                        tji_type_text(&t));
    if (o->padding && !o->boundary_check)
        return tji_fail(TJ_ERR_BUILD, "'padding' without 'boundary_check': no element is "
                        "outside a checked bound, so none would be padded");
    return 1;
}
