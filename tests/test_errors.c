/* SPDX-License-Identifier: MIT */
/*
 * test_errors.c — bad tile programs and bad launches get the right status
 * and a message that points at the user's code; nothing crashes, and the
 * device keeps working afterwards.
 *
 * Each bad kernel records the line of its offending op at build time
 * (line = __LINE__ + 1 just above it), and its test point checks the exact
 * status and that tj_last_error() names "file:line" and the kernel. Build
 * errors are tried through a launch, and again through tj_kernel_ir, and a
 * second launch of the same bad kernel must fail the same way (a failed
 * build is never cached as a success). Launch errors must name the kernel
 * and the offending argument.
 */
#include "testlib.h"

static tj_device *dev;
static tj_buffer scratch; /* f32 x 64, the pointer argument of bad kernels */

/* Launches kernel (one pointer parameter: scratch) and checks status,
 * file:line and kernel name. One test point. */
static void expect_error(const char *what, const tj_kernel *k, tj_status want, const int *line)
{
    tj_arg args[] = {TJ_ARG_BUF(scratch)};
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    tj_status st = tj_launch(dev, k, &cfg, args, 1, NULL, 0);
    int ok = st == want;
    if (!ok)
        tap_diag("  %s: got %s, expected %s: %s", what, tj_status_name(st), tj_status_name(want),
                 tj_last_error());
    else
        ok = tl_error_mentions(tl_where(__FILE__, *line), k->name, NULL);
    tap_ok(ok, "%s -> %s at %s", what, tj_status_name(want), tl_where(__FILE__, *line));
}

/* The same through tj_kernel_ir, and a second launch. */
static void expect_again(const char *what, const tj_kernel *k, tj_status want, const int *line)
{
    char *text = NULL;
    tj_status st = tj_kernel_ir(k, NULL, 0, &text);
    int ok = st == want && tl_error_mentions(tl_where(__FILE__, *line), k->name, NULL);
    if (st != want)
        tap_diag("  tj_kernel_ir gave %s: %s", tj_status_name(st), tj_last_error());
    tap_ok(ok, "%s: tj_kernel_ir fails the same way", what);
    free(text);
    expect_error(what, k, want, line);
}

/* ---- bad tile programs --------------------------------------------------- */

static int l_bcast;
TJ_KERNEL(bad_broadcast, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    tj_val a = tj_arange(0, 16), b = tj_arange(0, 32);
    l_bcast = __LINE__ + 1;
    tj_val c = tj_add(a, b);
    tj_store(tj_add(out, a), c);
}

static int l_bcast2d;
TJ_KERNEL(bad_broadcast_2d, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    tj_val a = tj_expand_dims(tj_arange(0, 16), 1);               /* [16, 1] */
    tj_val b = tj_reshape(tj_arange(0, 32), TJ_SHAPE(8, 4));      /* [8, 4] */
    l_bcast2d = __LINE__ + 1;
    tj_val c = tj_mul(a, b);
    tj_store(tj_add(out, tj_arange(0, 16)), tj_sum(c, 1));
}

static int l_mask;
TJ_KERNEL(bad_mask_shape, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    tj_val p = tj_add(out, tj_arange(0, 16));
    tj_val m = tj_lt(tj_arange(0, 32), 5);
    l_mask = __LINE__ + 1;
    tj_val v = tj_load(p, .mask = m);
    tj_store(p, v);
}

static int l_store_shape;
TJ_KERNEL(bad_store_shape, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    tj_val v = tj_full(TJ_SHAPE(32), 1.5, TJ_F32);
    l_store_shape = __LINE__ + 1;
    tj_store(tj_add(out, tj_arange(0, 16)), v);
}

static int l_load_nonptr;
TJ_KERNEL(bad_load_nonptr, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    tj_val offs = tj_arange(0, 16);
    l_load_nonptr = __LINE__ + 1;
    tj_val v = tj_load(offs);
    tj_store(tj_add(out, offs), v);
}

static int l_store_nonptr;
TJ_KERNEL(bad_store_nonptr, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    tj_val offs = tj_arange(0, 16);
    (void)out;
    l_store_nonptr = __LINE__ + 1;
    tj_store(offs, tj_full(TJ_SHAPE(16), 2.0, TJ_F32));
}

static int l_load_scalar_param;
TJ_KERNEL(bad_load_scalar_param, TJ_PARAMS(TJ_PTR(out, f32), TJ_SCALAR(n, i32)), TJ_CONSTS())
{
    l_load_scalar_param = __LINE__ + 1;
    tj_val v = tj_load(n);
    tj_store(out, v);
}

static int l_arange_npot;
TJ_KERNEL(bad_arange_npot, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    l_arange_npot = __LINE__ + 1;
    tj_val offs = tj_arange(0, 10);
    tj_store(tj_add(out, offs), 1.0);
}

static int l_arange_empty;
TJ_KERNEL(bad_arange_empty, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    l_arange_empty = __LINE__ + 1;
    tj_val offs = tj_arange(5, 5);
    tj_store(tj_add(out, offs), 1.0);
}

static int l_arange_reversed;
TJ_KERNEL(bad_arange_reversed, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    l_arange_reversed = __LINE__ + 1;
    tj_val offs = tj_arange(16, 0);
    tj_store(tj_add(out, offs), 1.0);
}

static int l_full_npot;
TJ_KERNEL(bad_full_npot, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    l_full_npot = __LINE__ + 1;
    tj_val v = tj_full(TJ_SHAPE(4, 6), 1.0, TJ_F32);
    tj_store(out, tj_sum(tj_sum(v, 1), 0));
}

static int l_pid;
TJ_KERNEL(bad_program_id, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    l_pid = __LINE__ + 1;
    tj_val p = tj_program_id(3);
    tj_store(tj_add(out, p), 1.0);
}

static int l_nprog;
TJ_KERNEL(bad_num_programs, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    l_nprog = __LINE__ + 1;
    tj_val p = tj_num_programs(-1);
    tj_store(tj_add(out, p), 1.0);
}

static int l_ptr_float;
TJ_KERNEL(bad_ptr_plus_float, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    l_ptr_float = __LINE__ + 1;
    tj_val p = tj_add(out, tj_f32(1.5));
    tj_store(p, 1.0);
}

static int l_ptr_float_tile;
TJ_KERNEL(bad_ptr_plus_float_tile, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    tj_val offs = tj_cast(tj_arange(0, 16), TJ_F32);
    l_ptr_float_tile = __LINE__ + 1;
    tj_val p = tj_add(out, offs);
    tj_store(p, 1.0);
}

static int l_ptr_mul;
TJ_KERNEL(bad_ptr_times_int, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    l_ptr_mul = __LINE__ + 1;
    tj_val p = tj_mul(out, 2);
    tj_store(p, 1.0);
}

static int l_ptr_ptr;
TJ_KERNEL(bad_ptr_plus_ptr, TJ_PARAMS(TJ_PTR(out, f32), TJ_PTR(other, f32)), TJ_CONSTS())
{
    l_ptr_ptr = __LINE__ + 1;
    tj_val p = tj_add(out, other);
    tj_store(p, 1.0);
}

static int l_shl_float;
TJ_KERNEL(bad_shift_float, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    tj_val offs = tj_arange(0, 16);
    tj_val x = tj_load(tj_add(out, offs));
    l_shl_float = __LINE__ + 1;
    tj_val y = tj_shl(x, 1);
    tj_store(tj_add(out, offs), y);
}

static int l_and_float;
TJ_KERNEL(bad_and_float, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    tj_val offs = tj_arange(0, 16);
    tj_val x = tj_load(tj_add(out, offs));
    l_and_float = __LINE__ + 1;
    tj_val y = tj_and(x, x);
    tj_store(tj_add(out, offs), y);
}

static int l_reduce_axis;
TJ_KERNEL(bad_reduce_axis, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    tj_val x = tj_load(tj_add(out, tj_arange(0, 16)));
    l_reduce_axis = __LINE__ + 1;
    tj_val s = tj_sum(x, 1);
    tj_store(out, s);
}

static int l_reduce_neg_axis;
TJ_KERNEL(bad_reduce_neg_axis, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    tj_val x = tj_full(TJ_SHAPE(4, 8), 1.0, TJ_F32);
    l_reduce_neg_axis = __LINE__ + 1;
    tj_val s = tj_max(x, -3);
    tj_store(tj_add(out, tj_arange(0, 8)), s);
}

static int l_cumsum_axis;
TJ_KERNEL(bad_cumsum_axis, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    tj_val x = tj_load(tj_add(out, tj_arange(0, 16)));
    l_cumsum_axis = __LINE__ + 1;
    tj_val s = tj_cumsum(x, 2);
    tj_store(tj_add(out, tj_arange(0, 16)), s);
}

static int l_reshape;
TJ_KERNEL(bad_reshape, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    tj_val x = tj_load(tj_add(out, tj_arange(0, 16)));
    l_reshape = __LINE__ + 1;
    tj_val y = tj_reshape(x, TJ_SHAPE(4, 8));
    tj_store(out, tj_sum(tj_sum(y, 1), 0));
}

static int l_broadcast_to;
TJ_KERNEL(bad_broadcast_to, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    tj_val x = tj_load(tj_add(out, tj_arange(0, 16)));
    l_broadcast_to = __LINE__ + 1;
    tj_val y = tj_broadcast_to(x, TJ_SHAPE(8));
    tj_store(tj_add(out, tj_arange(0, 8)), y);
}

static int l_permute;
TJ_KERNEL(bad_permute, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    tj_val x = tj_full(TJ_SHAPE(4, 8), 1.0, TJ_F32);
    l_permute = __LINE__ + 1;
    tj_val y = tj_permute(x, TJ_SHAPE(0, 0));
    tj_store(out, tj_sum(tj_sum(y, 1), 0));
}

static int l_expand;
TJ_KERNEL(bad_expand_dims, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    tj_val x = tj_arange(0, 16);
    l_expand = __LINE__ + 1;
    tj_val y = tj_expand_dims(x, 3);
    tj_store(out, tj_cast(tj_sum(tj_sum(y, 1), 0), TJ_F32));
}

static int l_escape_for;
TJ_KERNEL(bad_escape_for, TJ_PARAMS(TJ_PTR(out, f32), TJ_SCALAR(n, i32)), TJ_CONSTS())
{
    tj_val inner = {0};
    TJ_FOR(k, 0, n, 1) {
        inner = tj_mul(k, 2);
    }
    l_escape_for = __LINE__ + 1;
    tj_store(tj_add(out, inner), 1.0);
}

static int l_escape_if;
TJ_KERNEL(bad_escape_if, TJ_PARAMS(TJ_PTR(out, f32), TJ_SCALAR(n, i32)), TJ_CONSTS())
{
    tj_val inner = {0};
    TJ_IF(tj_gt(n, 0)) {
        inner = tj_add(n, 1);
    }
    l_escape_if = __LINE__ + 1;
    tj_store(tj_add(out, inner), 1.0);
}

static int l_else;
TJ_KERNEL(bad_lone_else, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    tj_val v = tj_f32(1.0);
    l_else = __LINE__ + 1;
    TJ_ELSE {
        v = tj_f32(2.0);
    }
    tj_store(out, v);
}

static int l_return_in_for;
TJ_KERNEL(bad_return_in_for, TJ_PARAMS(TJ_PTR(out, f32), TJ_SCALAR(n, i32)), TJ_CONSTS())
{
    l_return_in_for = __LINE__ + 1;
    TJ_FOR(k, 0, n, 1) {
        tj_store(tj_add(out, k), 1.0);
        return; /* leaves the region open */
    }
}

static int l_float_bounds;
TJ_KERNEL(bad_float_bounds, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    l_float_bounds = __LINE__ + 1;
    TJ_FOR(k, tj_f32(0), tj_f32(4), tj_f32(1)) {
        tj_store(out, tj_cast(k, TJ_F32));
    }
}

/* A bare C number where a value belongs: {5} is value handle 5. */
static int l_bare_number;
TJ_KERNEL(bad_bare_number, TJ_PARAMS(TJ_PTR(out, f32), TJ_SCALAR(n, i32)), TJ_CONSTS())
{
    tj_val offs = tj_arange(0, 16);
    l_bare_number = __LINE__ + 1;
    tj_val v = tj_load(tj_add(out, offs), .mask = tj_lt(offs, n), .other = {5});
    tj_store(tj_add(out, offs), v);
}

/* A value kept (in a static) from one kernel's build and used in another's:
 * its handle means nothing there. */
static tj_val kept;
TJ_KERNEL(keeps_a_value, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    kept = tj_arange(0, 16);
    tj_store(tj_add(out, kept), 1.0);
}

static int l_stale;
TJ_KERNEL(bad_stale_value, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    tj_val offs = tj_arange(0, 16), other = tj_add(tj_arange(0, 16), 100);
    (void)other;
    l_stale = __LINE__ + 1;
    tj_val v = tj_cast(kept, TJ_F32);
    tj_store(tj_add(out, offs), v);
}

/* Bad kernels with one pointer parameter (and those with a scalar n or a
 * second pointer, which expect_error_args launches). */
typedef struct bad_case {
    const tj_kernel *const *kernel;
    tj_status want;
    const int *line;
    const char *what;
    int shape; /* 0: (out); 1: (out, n); 2: (out, other) */
} bad_case;

static const bad_case cases[] = {
    {&bad_broadcast, TJ_ERR_SHAPE, &l_bcast, "broadcast of [16] with [32]", 0},
    {&bad_broadcast_2d, TJ_ERR_SHAPE, &l_bcast2d, "broadcast of [16,1] with [8,4]", 0},
    {&bad_mask_shape, TJ_ERR_SHAPE, &l_mask, "mask [32] on a [16] pointer tile", 0},
    {&bad_store_shape, TJ_ERR_SHAPE, &l_store_shape, "store of a [32] value to a [16] pointer tile", 0},
    {&bad_load_nonptr, TJ_ERR_TYPE, &l_load_nonptr, "load of an i32 tile (not a pointer)", 0},
    {&bad_store_nonptr, TJ_ERR_TYPE, &l_store_nonptr, "store to an i32 tile (not a pointer)", 0},
    {&bad_load_scalar_param, TJ_ERR_TYPE, &l_load_scalar_param, "load of a scalar parameter", 1},
    {&bad_arange_npot, TJ_ERR_SHAPE, &l_arange_npot, "arange(0, 10): not a power of two", 0},
    {&bad_arange_empty, TJ_ERR_SHAPE, &l_arange_empty, "arange(5, 5): empty", 0},
    {&bad_arange_reversed, TJ_ERR_SHAPE, &l_arange_reversed, "arange(16, 0): reversed", 0},
    {&bad_full_npot, TJ_ERR_SHAPE, &l_full_npot, "full of shape [4,6]", 0},
    {&bad_program_id, TJ_ERR_BUILD, &l_pid, "program_id(3)", 0},
    {&bad_num_programs, TJ_ERR_BUILD, &l_nprog, "num_programs(-1)", 0},
    {&bad_ptr_plus_float, TJ_ERR_TYPE, &l_ptr_float, "pointer + f32 scalar", 0},
    {&bad_ptr_plus_float_tile, TJ_ERR_TYPE, &l_ptr_float_tile, "pointer + f32 tile", 0},
    {&bad_ptr_times_int, TJ_ERR_TYPE, &l_ptr_mul, "pointer * 2", 0},
    {&bad_ptr_plus_ptr, TJ_ERR_TYPE, &l_ptr_ptr, "pointer + pointer", 2},
    {&bad_shift_float, TJ_ERR_TYPE, &l_shl_float, "shl of an f32 tile", 0},
    {&bad_and_float, TJ_ERR_TYPE, &l_and_float, "and of f32 tiles", 0},
    {&bad_reduce_axis, TJ_ERR_SHAPE, &l_reduce_axis, "sum of a 1-D tile along axis 1", 0},
    {&bad_reduce_neg_axis, TJ_ERR_SHAPE, &l_reduce_neg_axis, "max of a 2-D tile along axis -3", 0},
    {&bad_cumsum_axis, TJ_ERR_SHAPE, &l_cumsum_axis, "cumsum of a 1-D tile along axis 2", 0},
    {&bad_reshape, TJ_ERR_SHAPE, &l_reshape, "reshape of 16 elements to [4,8]", 0},
    {&bad_broadcast_to, TJ_ERR_SHAPE, &l_broadcast_to, "broadcast_to [16] -> [8]", 0},
    {&bad_permute, TJ_ERR_SHAPE, &l_permute, "permute by (0, 0)", 0},
    {&bad_expand_dims, TJ_ERR_SHAPE, &l_expand, "expand_dims of a 1-D tile at axis 3", 0},
    {&bad_escape_for, TJ_ERR_BUILD, &l_escape_for, "a TJ_FOR body's value used after the loop", 1},
    {&bad_escape_if, TJ_ERR_BUILD, &l_escape_if, "a TJ_IF body's value used after the if", 1},
    {&bad_lone_else, TJ_ERR_BUILD, &l_else, "TJ_ELSE without TJ_IF", 0},
    {&bad_return_in_for, TJ_ERR_BUILD, &l_return_in_for, "return inside TJ_FOR (region left open)", 1},
    {&bad_float_bounds, TJ_ERR_TYPE, &l_float_bounds, "TJ_FOR with f32 bounds", 0},
    {&bad_bare_number, TJ_ERR_BUILD, &l_bare_number, "a bare number {5} as .other", 1},
    {&bad_stale_value, TJ_ERR_BUILD, &l_stale, "a value kept from another kernel's build", 0},
};

static void run_case(const bad_case *c)
{
    const tj_kernel *k = *c->kernel;
    tj_arg args[2] = {TJ_ARG_BUF(scratch), c->shape == 1 ? TJ_ARG_I32(4) : TJ_ARG_BUF(scratch)};
    int nargs = c->shape ? 2 : 1;
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    tj_status st = tj_launch(dev, k, &cfg, args, nargs, NULL, 0);
    int ok = st == c->want;
    if (!ok)
        tap_diag("  got %s, expected %s: %s", tj_status_name(st), tj_status_name(c->want),
                 tj_last_error());
    else
        ok = tl_error_mentions(tl_where(__FILE__, *c->line), k->name, NULL);
    tap_ok(ok, "%s -> %s naming %s and '%s'", c->what, tj_status_name(c->want),
           tl_where(__FILE__, *c->line), k->name);
    if (ok)
        tap_diag("  %s", tj_last_error());
}

/* ---- bad launches -------------------------------------------------------- */

enum { N = 64 };

/* out[i] = x[i] * 2 + n, a good kernel for launch errors and afterwards. */
TJ_KERNEL(good, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(out, f32), TJ_SCALAR(n, i32)), TJ_CONSTS(BLOCK))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val mask = tj_lt(offs, N);
    tj_store(tj_add(out, offs), tj_add(tj_mul(tj_load(tj_add(x, offs), .mask = mask), 2), n),
             .mask = mask);
}

static float good_x[N];

/* Narrow scalar parameters, for values that do not fit them. */
TJ_KERNEL(narrow,
          TJ_PARAMS(TJ_PTR(out, i32), TJ_SCALAR(b, i1), TJ_SCALAR(u, u8), TJ_SCALAR(s, i8),
                    TJ_SCALAR(w, u32)),
          TJ_CONSTS())
{
    tj_val sum = tj_add(tj_add(tj_cast(b, TJ_I32), tj_cast(u, TJ_I32)),
                        tj_add(tj_cast(s, TJ_I32), tj_cast(w, TJ_I32)));
    tj_store(out, sum);
}

static void test_narrow_args(void)
{
    tj_buffer bo = tl_poisoned(dev, 4);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    const tj_arg good[] = {TJ_ARG_BUF(bo), TJ_ARG_INT(TJ_I1, 1), TJ_ARG_INT(TJ_U8, 200),
                           TJ_ARG_INT(TJ_I8, -100), TJ_ARG_U32(70000)};
    tj_status st = tj_launch(dev, narrow, &cfg, good, 5, NULL, 0);
    int32_t got = 0;
    if (st == TJ_OK)
        tl_download(dev, bo, &got, 4);
    tap_ok(st == TJ_OK && got == 1 + 200 - 100 + 70000,
           "values that fit i1, u8, i8, u32 parameters arrive (got %d)", got);
    static const struct {
        int index;
        tj_arg arg;
        const char *what, *name;
    } bad[] = {
        {1, TJ_ARG_INT(TJ_I1, 2), "2 for i1 parameter 'b'", "'b'"},
        {2, TJ_ARG_INT(TJ_U8, 300), "300 for u8 parameter 'u'", "'u'"},
        {3, TJ_ARG_INT(TJ_I8, -129), "-129 for i8 parameter 's'", "'s'"},
        {4, TJ_ARG_I32(-1), "-1 for u32 parameter 'w'", "'w'"},
    };
    for (size_t i = 0; i < TL_COUNT(bad); i++) {
        tj_arg args[5];
        memcpy(args, good, sizeof args);
        args[bad[i].index] = bad[i].arg;
        st = tj_launch(dev, narrow, &cfg, args, 5, NULL, 0);
        int ok = st == TJ_ERR_LAUNCH && tl_error_mentions("narrow", bad[i].name, NULL);
        if (st != TJ_ERR_LAUNCH)
            tap_diag("  got %s: %s", tj_status_name(st), tj_last_error());
        tap_ok(ok, "%s -> TJ_ERR_LAUNCH naming it", bad[i].what);
    }
    st = tj_launch(dev, narrow, NULL, good, 5, NULL, 0);
    tap_ok(st == TJ_ERR_INVALID_ARG, "tj_launch with a NULL cfg -> TJ_ERR_INVALID_ARG (got %s)",
           tj_status_name(st));
    tj_buffer_free(dev, bo);
}

/* Launches good with the given args/consts/grid and checks status and that
 * the message mentions each of the given words. One test point. */
static void expect_launch_error(const char *what, const tj_arg *args, int nargs,
                                const int64_t *consts, int nconsts, tj_launch_cfg cfg,
                                tj_status want, tj_status also_ok, const char *word1,
                                const char *word2)
{
    tj_status st = tj_launch(dev, good, &cfg, args, nargs, consts, nconsts);
    int ok = st == want || (also_ok != TJ_OK && st == also_ok);
    if (!ok)
        tap_diag("  got %s: %s", tj_status_name(st), tj_last_error());
    else
        ok = tl_error_mentions(word1, word2, NULL);
    tap_ok(ok, "%s -> %s%s%s", what, tj_status_name(want), also_ok != TJ_OK ? " or " : "",
           also_ok != TJ_OK ? tj_status_name(also_ok) : "");
}

/* Does the good kernel still give the right answer? One test point. */
static void check_good(const char *what)
{
    float want[N], got[N];
    int32_t n = (int32_t)tl_rand_range(-50, 50);
    tl_fill_random(TJ_F32, good_x, N);
    for (int i = 0; i < N; i++)
        want[i] = good_x[i] * 2 + (float)n;
    tj_buffer bx = tl_upload(dev, good_x, sizeof good_x), bo = tl_poisoned(dev, sizeof got);
    tj_launch_cfg cfg = tl_grid(N / 16, 1, 1);
    if (!tl_launch_failed(good_launch(dev, &cfg, bx, bo, n, 16), what)) {
        tl_download(dev, bo, got, sizeof got);
        tl_check(what, TJ_F32, got, want, N, 1e-6, 0);
    }
    tj_buffer_free(dev, bx);
    tj_buffer_free(dev, bo);
}

static void test_launch_errors(void)
{
    tj_buffer bx = tl_upload(dev, good_x, sizeof good_x), bo = tl_poisoned(dev, 4 * N);
    tj_launch_cfg one = tl_grid(4, 1, 1);
    int64_t block[] = {16};
    tj_arg good_args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bo), TJ_ARG_I32(3)};

    expect_launch_error("2 arguments for 3 parameters", good_args, 2, block, 1, one,
                        TJ_ERR_LAUNCH, TJ_OK, "good", "3");
    tj_arg four[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bo), TJ_ARG_I32(3), TJ_ARG_I32(4)};
    expect_launch_error("4 arguments for 3 parameters", four, 4, block, 1, one, TJ_ERR_LAUNCH,
                        TJ_OK, "good", "4");
    tj_arg scalar_for_ptr[] = {TJ_ARG_BUF(bx), TJ_ARG_I32(7), TJ_ARG_I32(3)};
    expect_launch_error("a scalar for pointer parameter 'out'", scalar_for_ptr, 3, block, 1, one,
                        TJ_ERR_LAUNCH, TJ_OK, "good", "out");
    tj_arg buf_for_scalar[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bo), TJ_ARG_BUF(bx)};
    expect_launch_error("a buffer for scalar parameter 'n'", buf_for_scalar, 3, block, 1, one,
                        TJ_ERR_LAUNCH, TJ_OK, "good", "'n'");
    tj_arg float_for_int[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bo), TJ_ARG_F32(2.5)};
    expect_launch_error("an f32 for i32 parameter 'n'", float_for_int, 3, block, 1, one,
                        TJ_ERR_LAUNCH, TJ_OK, "good", "'n'");
    tj_arg too_big[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bo), TJ_ARG_I64((int64_t)1 << 40)};
    expect_launch_error("an i64 that does not fit i32 parameter 'n'", too_big, 3, block, 1, one,
                        TJ_ERR_LAUNCH, TJ_OK, "good", "'n'");

    /* An i64 value that fits the i32 parameter is accepted. */
    {
        float got[N];
        tj_arg fits[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bo), TJ_ARG_I64(5)};
        tj_status st = tj_launch(dev, good, &one, fits, 3, block, 1);
        if (!tl_launch_failed(st, "an i64 value that fits the i32 parameter is accepted")) {
            float want[N];
            for (int i = 0; i < N; i++)
                want[i] = good_x[i] * 2 + 5;
            tl_download(dev, bo, got, sizeof got);
            tl_check("an i64 value that fits the i32 parameter is accepted", TJ_F32, got, want,
                     N, 1e-6, 0);
        }
    }

    int64_t two[] = {16, 3};
    expect_launch_error("2 constants for 1", good_args, 3, two, 2, one, TJ_ERR_LAUNCH,
                        TJ_OK, "good", "constant");
    expect_launch_error("no constants for 1", good_args, 3, NULL, 0, one, TJ_ERR_LAUNCH,
                        TJ_OK, "good", "constant");

    expect_launch_error("an empty grid (0, 1, 1)", good_args, 3, block, 1, tl_grid(0, 1, 1),
                        TJ_ERR_LAUNCH, TJ_OK, "good", "grid");
    expect_launch_error("a negative grid (-4, 1, 1)", good_args, 3, block, 1, tl_grid(-4, 1, 1),
                        TJ_ERR_LAUNCH, TJ_OK, "good", "grid");
    expect_launch_error("a negative grid (4, -2, 1)", good_args, 3, block, 1, tl_grid(4, -2, 1),
                        TJ_ERR_LAUNCH, TJ_OK, "good", "grid");
    expect_launch_error("a grid of 2^31 programs along x (program ids are i32)", good_args, 3,
                        block, 1, tl_grid((int64_t)1 << 31, 1, 1), TJ_ERR_LAUNCH, TJ_OK, "good",
                        "grid");
    expect_launch_error("a grid of 2^40 programs along z", good_args, 3, block, 1,
                        tl_grid(1, 1, (int64_t)1 << 40), TJ_ERR_LAUNCH, TJ_OK, "good", "grid");

    /* Buffers: the zero handle, a freed one, one of another device. */
    tj_arg null_buf[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(((tj_buffer){0})), TJ_ARG_I32(3)};
    expect_launch_error("the zero buffer handle for 'out'", null_buf, 3, block, 1, one,
                        TJ_ERR_INVALID_ARG, TJ_ERR_LAUNCH, "good", "out");
    tj_buffer freed = tl_poisoned(dev, 4 * N);
    tj_buffer_free(dev, freed);
    tj_arg freed_buf[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(freed), TJ_ARG_I32(3)};
    tj_status st = tj_launch(dev, good, &one, freed_buf, 3, block, 1);
    const char *msg = tj_last_error();
    int ok = (st == TJ_ERR_INVALID_ARG || st == TJ_ERR_LAUNCH) &&
             (strstr(msg, "freed") || strstr(msg, "invalid")) && strstr(msg, "out");
    if (!ok)
        tap_diag("  got %s: %s", tj_status_name(st), msg);
    tap_ok(ok, "a freed buffer for 'out' -> TJ_ERR_INVALID_ARG or TJ_ERR_LAUNCH, says freed/invalid");

    tj_device *other = NULL;
    if (tj_device_open(&other, TJ_DEVICE_CPU, 0) == TJ_OK) {
        tj_buffer foreign = tl_poisoned(other, 4 * N);
        tj_arg foreign_buf[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(foreign), TJ_ARG_I32(3)};
        st = tj_launch(dev, good, &one, foreign_buf, 3, block, 1);
        ok = st == TJ_ERR_INVALID_ARG || st == TJ_ERR_LAUNCH;
        if (!ok)
            tap_diag("  got %s: %s", tj_status_name(st), tj_last_error());
        tap_ok(ok, "a buffer of another device -> TJ_ERR_INVALID_ARG or TJ_ERR_LAUNCH");
        tj_device_close(other);
    } else {
        tap_ok(0, "a second CPU device opens (%s)", tj_last_error());
    }

    /* NULL handles at the API. */
    st = tj_launch(NULL, good, &one, good_args, 3, block, 1);
    tap_ok(st == TJ_ERR_INVALID_ARG, "tj_launch with a NULL device -> TJ_ERR_INVALID_ARG (got %s)",
           tj_status_name(st));
    st = tj_launch(dev, NULL, &one, good_args, 3, block, 1);
    tap_ok(st == TJ_ERR_INVALID_ARG, "tj_launch with a NULL kernel -> TJ_ERR_INVALID_ARG (got %s)",
           tj_status_name(st));
    st = tj_launch(dev, good, &one, NULL, 3, block, 1);
    tap_ok(st == TJ_ERR_INVALID_ARG || st == TJ_ERR_LAUNCH,
           "tj_launch with NULL args for 3 parameters -> an error (got %s)", tj_status_name(st));
    tj_buffer_free(dev, bx);
    tj_buffer_free(dev, bo);
}

/* DSL ops outside a kernel body give no value and say where they were. */
static void test_outside_kernel(void)
{
    int line = __LINE__ + 1;
    tj_val v = tj_arange(0, 16);
    int ok = v.id == 0 && tl_error_mentions(tl_where(__FILE__, line), "arange", NULL);
    tap_ok(ok, "tj_arange outside a kernel body gives no value; the error names %s",
           tl_where(__FILE__, line));
    line = __LINE__ + 1;
    tj_val w = tj_add(v, 1);
    ok = w.id == 0 && tl_error_mentions(tl_where(__FILE__, line), NULL);
    tap_ok(ok, "tj_add outside a kernel body gives no value; the error names %s",
           tl_where(__FILE__, line));
}

int main(void)
{
    dev = tl_setup("test_errors");
    scratch = tl_poisoned(dev, 4 * 64);
    {
        tj_arg args[] = {TJ_ARG_BUF(scratch)};
        tj_launch_cfg cfg = tl_grid(1, 1, 1);
        tj_status st = tj_launch(dev, keeps_a_value, &cfg, args, 1, NULL, 0);
        if (st != TJ_OK)
            tap_diag("keeps_a_value: %s: %s", tj_status_name(st), tj_last_error());
    }

    for (size_t i = 0; i < TL_COUNT(cases); i++)
        run_case(&cases[i]);
    /* A few again: through tj_kernel_ir, then a second launch. */
    expect_again("broadcast of [16] with [32]", bad_broadcast, TJ_ERR_SHAPE, &l_bcast);
    expect_again("program_id(3)", bad_program_id, TJ_ERR_BUILD, &l_pid);
    expect_again("pointer + f32 scalar", bad_ptr_plus_float, TJ_ERR_TYPE, &l_ptr_float);
    check_good("the device still works after build errors");

    test_launch_errors();
    test_narrow_args();
    test_outside_kernel();
    check_good("the device still works after launch errors");
    tj_device_close(dev);
    return tap_done();
}
