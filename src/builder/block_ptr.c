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
 *
 * Tensor descriptors (Triton's make_tensor_descriptor) are sugar on block
 * pointers and add nothing to the IR: a descriptor is the block pointer at
 * offsets 0 in row-major order (the last dimension fastest), and
 * descriptor_load / descriptor_store are an ADVANCE to the offsets and a
 * LOAD or STORE that checks every dimension, padding with zeros. What
 * Triton asks of a descriptor is asked here, at the user's line: a last
 * stride that is the constant 1 (the TMA hardware a descriptor stands for
 * reads rows that are contiguous), and as many offsets as dimensions.
 * Each op reports under its own name (make_tensor_descriptor,
 * descriptor_load, descriptor_store), not the block pointer op it becomes.
 */
#include <stdio.h>

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

/* The checks and the MAKE_BLOCK_PTR of tj_make_block_ptr and
 * tj_make_tensor_descriptor, in an op already entered; offsets NULL: all
 * 0. Returns the block pointer, or 0. */
static int32_t make_block_ptr(tj_val base, const tj_vals *shape, const tj_vals *strides,
                              const tj_vals *offsets, const tj_shape *block_shape,
                              const tj_shape *order)
{
    tji_type bt = type_of(vid(base));
    if (bt.is_ptr != 1 || bt.rank)
        return tji_fail(TJ_ERR_TYPE, "the base must be a pointer parameter (a scalar pointer), "
                        "got %s", tji_type_text(&bt));
    int r = block_rank(block_shape);
    if (!r)
        return 0;
    if (order->rank != r)
        return tji_fail(TJ_ERR_SHAPE, "order has %d dimensions for a block of rank %d",
                        order->rank, r);
    for (int i = 0, seen = 0; i < r; i++) {
        int64_t d = order->dims[i];
        if (d < 0 || d >= r || (seen >> d & 1))
            return tji_fail(TJ_ERR_BUILD, "order %s is not a permutation of 0..%d",
                            tji_dims_text(r, order->dims), r - 1);
        seen |= 1 << d;
    }
    int32_t args[1 + 3 * TJ_MAX_RANK] = {vid(base)};
    if (!scalars(shape, r, "shape", TJ_I64, args + 1) ||
        !scalars(strides, r, "strides", TJ_I64, args + 1 + r))
        return 0;
    if (offsets && !scalars(offsets, r, "offsets", TJ_I32, args + 1 + 2 * r))
        return 0;
    for (int d = 0; !offsets && d < r; d++)
        if (!(args[1 + 2 * r + d] = tji_make_const(TJ_I32, 0, 0)))
            return 0;
    tji_type t = {.dtype = bt.dtype, .is_ptr = TJI_BLOCK_PTR, .rank = (uint8_t)r};
    for (int d = 0; d < r; d++)
        t.shape[d] = (int32_t)block_shape->dims[d];
    int32_t v = tji_emit(TJI_MAKE_BLOCK_PTR, args, 1 + 3 * r, t);
    for (int d = 0; d < r; d++)
        op_of(v)->perm[d] = (int)order->dims[d];
    return v;
}

tj_val tj__make_block_ptr(tj_loc loc, tj_val base, tj_vals shape, tj_vals strides,
                          tj_vals offsets, tj_shape block_shape, tj_shape order)
{
    if (!tji_enter(loc, "make_block_ptr", 1, &base))
        return NONE;
    return val(make_block_ptr(base, &shape, &strides, &offsets, &block_shape, &order));
}

/* The ADVANCE of the block pointer bp (known to be one) by offsets. */
static int32_t advance(int32_t bp, const tj_vals *offsets)
{
    tji_type t = type_of(bp);
    int32_t args[1 + TJ_MAX_RANK] = {bp};
    if (!scalars(offsets, t.rank, "offsets", TJ_I32, args + 1))
        return 0;
    return tji_emit(TJI_ADVANCE, args, 1 + t.rank, t);
}

tj_val tj__advance(tj_loc loc, tj_val bp, tj_vals offsets)
{
    if (!tji_enter_block(loc, "advance", 1, &bp))
        return NONE;
    tji_type t = type_of(vid(bp));
    if (!tji_is_block_ptr(&t))
        return tji_fail(TJ_ERR_TYPE, "advance of %s, which is not a block pointer "
                        "(tj_make_block_ptr)", tji_type_text(&t)), NONE;
    return val(advance(vid(bp), &offsets));
}

/* --- tensor descriptors ---------------------------------------------------- */

/* Is x an integer constant (a C number, tj_i64(3), ...)? Its value in *v. */
static int int_const(int32_t x, int64_t *v)
{
    tji_type t = type_of(x);
    if (B.fn->values[x].def_op < 0 || op_of(x)->code != TJI_CONST || t.is_ptr || t.rank ||
        !tjs_dtype_is_int(t.dtype) || t.dtype == TJ_I1)
        return 0;
    *v = op_of(x)->ival;
    return 1;
}

tj_val tj__make_tensor_descriptor(tj_loc loc, tj_val base, tj_vals shape, tj_vals strides,
                                  tj_shape block_shape)
{
    if (!tji_enter(loc, "make_tensor_descriptor", 1, &base))
        return NONE;
    /* The natural order: the last dimension fastest (rank 2: (1, 0)). */
    tj_shape order = {.rank = block_shape.rank};
    for (int i = 0; i < block_shape.rank && i < TJ_MAX_RANK; i++)
        order.dims[i] = block_shape.rank - 1 - i;
    int32_t v = make_block_ptr(base, &shape, &strides, NULL, &block_shape, &order);
    if (!v)
        return NONE;
    int r = block_shape.rank;
    int32_t last = vid(strides.v[r - 1]);
    int64_t one = 0;
    if (!int_const(last, &one) || one != 1) {
        tji_type t = type_of(last);
        char what[96];
        if (int_const(last, &one))
            snprintf(what, sizeof what, "the constant %lld", (long long)one);
        else
            snprintf(what, sizeof what, "%s, a value not known when the kernel is built",
                     tji_type_text(&t));
        return tji_fail(TJ_ERR_BUILD, "the last stride must be the constant 1 (a tensor "
                        "descriptor's last dimension is contiguous, as in Triton; "
                        "tj_make_block_ptr takes any strides), but strides %d is %s", r,
                        what), NONE;
    }
    return val(v);
}

/* The descriptor desc of an op entered, moved to offsets: the block
 * pointer that descriptor_load and descriptor_store read and write. */
static int32_t descriptor_at(tj_val desc, const tj_vals *offsets)
{
    tji_type t = type_of(vid(desc));
    if (!tji_is_block_ptr(&t))
        return tji_fail(TJ_ERR_TYPE, "%s of %s, which is not a tensor descriptor "
                        "(tj_make_tensor_descriptor)", B.opname, tji_type_text(&t));
    if (offsets->n != t.rank)
        return tji_fail(TJ_ERR_SHAPE, "%d offset%s for the tensor descriptor %s of %d "
                        "dimension%s: give one per dimension", offsets->n,
                        offsets->n == 1 ? "" : "s", tji_type_text(&t), t.rank,
                        t.rank == 1 ? "" : "s");
    return advance(vid(desc), offsets);
}

/* Every dimension checked, zero padding: Triton's descriptor accesses. */
static tj_mem_opts all_checked(int32_t bp)
{
    tji_type t = type_of(bp);
    return (tj_mem_opts){.boundary_check = (1u << t.rank) - 1, .padding = TJ_PADDING_ZERO};
}

tj_val tj__descriptor_load(tj_loc loc, tj_val desc, tj_vals offsets)
{
    if (!tji_enter_block(loc, "descriptor_load", 1, &desc))
        return NONE;
    int32_t bp = descriptor_at(desc, &offsets);
    if (!bp)
        return NONE;
    tj_mem_opts o = all_checked(bp);
    return val(tji_load(bp, &o));
}

void tj__descriptor_store(tj_loc loc, tj_val desc, tj_vals offsets, tj_val value)
{
    if (!tji_enter_block(loc, "descriptor_store", 2, (tj_val[]){desc, value}))
        return;
    int32_t bp = descriptor_at(desc, &offsets);
    if (!bp)
        return;
    tj_mem_opts o = all_checked(bp);
    tji_store(bp, vid(value), &o);
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
