/* SPDX-License-Identifier: MIT */
/*
 * test_reduce.c — sum/max/min/argmax/argmin along every axis of 1- to 4-D
 * tiles (and negative axes), cumsum along every axis, a ragged row softmax
 * that reduces computed values under a mask, and max/min of short rows of
 * computed values (which LLVM 22 once vectorized wrongly on the CPU).
 *
 * One kernel per dtype takes the rank, the op and the axis as constants and
 * builds row-major offsets for the tile and for the result (the tile's dims
 * without the axis), so every (rank, axis, op) is its own variant and test
 * point. Three programs each reduce their own tile, so program offsets are
 * checked too; rows of 4096 run again at 8, 16 and 32 warps (on a GPU the
 * warps' partials then take the lane-parallel path). argmax/argmin data is drawn from a handful of values, so
 * ties are common and "the first index" is really tested.
 *
 * Integer sums wrap in the dtype (exact); float sums may be reassociated,
 * so they are allowed a few ulp of the sum of magnitudes.
 */
#include "testlib.h"

static tj_device *dev;
static int warps;        /* num_warps of the launches (0: the default) */
static int64_t row_len;  /* a 1-D tile's length (0: the default) */

enum { PROGRAMS = 3 };

/* The tile shape for a rank: [D0], [16, 32], [4, 8, 16] or [2, 4, 4, 8]. */
static int shape_of(int rank, int64_t d0, int64_t dims[4])
{
    static const int64_t shapes[5][4] = {{0}, {0}, {16, 32}, {4, 8, 16}, {2, 4, 4, 8}};
    for (int i = 0; i < rank; i++)
        dims[i] = rank == 1 ? d0 : shapes[rank][i];
    return rank;
}

static int64_t numel(const int64_t *dims, int rank)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    return n;
}

/* Row-major offsets of a tile of the given dims, as a tile of that shape. */
static tj_val offsets(const int64_t *dims, int rank)
{
    tj_val offs = {0};
    int64_t stride = 1;
    for (int d = rank - 1; d >= 0; d--) {
        tj_val c = tj_arange(0, dims[d]);
        for (int e = 0; e < rank; e++)
            if (e != d)
                c = tj_expand_dims(c, e);
        c = tj_mul(c, stride);
        offs = offs.id ? tj_add(offs, c) : c;
        stride *= dims[d];
    }
    return offs;
}

/* dims without the axis; returns the rank left. */
static int drop_axis(const int64_t *dims, int rank, int axis, int64_t *out)
{
    int r = 0;
    for (int d = 0; d < rank; d++)
        if (d != axis)
            out[r++] = dims[d];
    return r;
}

static tj_val reduce(int op, tj_val x, int axis)
{
    switch (op) {
    case TJ_REDUCE_SUM: return tj_sum(x, axis);
    case TJ_REDUCE_MAX: return tj_max(x, axis);
    case TJ_REDUCE_MIN: return tj_min(x, axis);
    case TJ_REDUCE_ARGMAX: return tj_argmax(x, axis);
    default: return tj_argmin(x, axis);
    }
}

/* Reduces this program's tile along AXIS with OP (CUMSUM: op -1, a scan
 * that keeps the shape); argmax/argmin results go to out_i. */
#define REDUCE_KERNEL(dt)                                                       \
    TJ_KERNEL(reduce_##dt,                                                      \
              TJ_PARAMS(TJ_PTR(x, dt), TJ_PTR(out, dt), TJ_PTR(out_i, i32)),    \
              TJ_CONSTS(RANK, OP, AXIS, D0))                                    \
    {                                                                           \
        int64_t dims[4], rdims[4];                                              \
        int rank = shape_of((int)RANK, D0, dims);                               \
        int axis = AXIS < 0 ? (int)AXIS + rank : (int)AXIS;                     \
        int64_t n = numel(dims, rank);                                          \
        tj_val pid = tj_program_id(0);                                          \
        tj_val v = tj_load(tj_add(tj_add(x, tj_mul(pid, n)), offsets(dims, rank))); \
        if (OP < 0) {                                                           \
            tj_store(tj_add(tj_add(out, tj_mul(pid, n)), offsets(dims, rank)),  \
                     tj_cumsum(v, (int)AXIS));                                  \
            return;                                                             \
        }                                                                       \
        tj_val r = reduce((int)OP, v, (int)AXIS);                               \
        int rr = drop_axis(dims, rank, axis, rdims);                            \
        int64_t rn = numel(rdims, rr);                                          \
        tj_val dst = OP >= TJ_REDUCE_ARGMAX ? out_i : out;                      \
        tj_val p = tj_add(dst, tj_mul(pid, rn));                                \
        tj_store(rr ? tj_add(p, offsets(rdims, rr)) : p, r);                    \
    }

REDUCE_KERNEL(i8)
REDUCE_KERNEL(i16)
REDUCE_KERNEL(i32)
REDUCE_KERNEL(i64)
REDUCE_KERNEL(u8)
REDUCE_KERNEL(u16)
REDUCE_KERNEL(u32)
REDUCE_KERNEL(u64)
REDUCE_KERNEL(f16)
REDUCE_KERNEL(bf16)
REDUCE_KERNEL(f32)
REDUCE_KERNEL(f64)

static const tj_kernel *kernel_of(tj_dtype t)
{
    switch (t) {
    case TJ_I8: return reduce_i8;
    case TJ_I16: return reduce_i16;
    case TJ_I32: return reduce_i32;
    case TJ_I64: return reduce_i64;
    case TJ_U8: return reduce_u8;
    case TJ_U16: return reduce_u16;
    case TJ_U32: return reduce_u32;
    case TJ_U64: return reduce_u64;
    case TJ_F16: return reduce_f16;
    case TJ_BF16: return reduce_bf16;
    case TJ_F32: return reduce_f32;
    default: return reduce_f64;
    }
}

enum { CUMSUM = -1 };
static const char *op_name(int op)
{
    static const char *const names[] = {"sum", "max", "min", "argmax", "argmin"};
    return op == CUMSUM ? "cumsum" : names[op];
}

/* Element values for an op: ties for arg ops, moderate sizes for sums of
 * 16-bit floats (so that a lost element is far above rounding noise). */
static tl_num input_for(int op, tj_dtype t)
{
    if (op == TJ_REDUCE_ARGMAX || op == TJ_REDUCE_ARGMIN) {
        static const double fl[] = {-1.5, -1, 0.5, 2, 3.25};
        int k = (int)tl_rand_range(0, 4);
        if (tl_is_float(t))
            return tl_flt(fl[k]);
        return tl_int(tl_is_signed(t) ? k - 2 : k + 1);
    }
    if ((op == TJ_REDUCE_SUM || op == CUMSUM) && (t == TJ_F16 || t == TJ_BF16))
        return tl_flt(tl_round(t, tl_rand_double(1, 2)));
    return tl_random(t);
}

/* Runs one (dtype, rank, axis, op) and checks all programs' results. */
static void test_reduce(tj_dtype t, int rank, int axis, int op)
{
    int64_t d0 = row_len ? row_len : (t == TJ_F16 || t == TJ_BF16) && op == TJ_REDUCE_SUM ? 32 : 256;
    int64_t dims[4] = {0}, rdims[4] = {0};
    shape_of(rank, d0, dims);
    int ax = axis < 0 ? axis + rank : axis;
    int64_t n = numel(dims, rank);
    int rr = op == CUMSUM ? rank : drop_axis(dims, rank, ax, rdims);
    if (op == CUMSUM)
        memcpy(rdims, dims, sizeof dims);
    int64_t rn = numel(rdims, rr);
    int is_arg = op == TJ_REDUCE_ARGMAX || op == TJ_REDUCE_ARGMIN;
    tj_dtype rt = is_arg ? TJ_I32 : t;
    size_t es = tj_dtype_size(t), res = tj_dtype_size(rt);
    void *x = malloc(PROGRAMS * n * es), *want = malloc(PROGRAMS * rn * res);
    void *got = malloc(PROGRAMS * rn * res);
    double *tol = malloc(sizeof(double) * PROGRAMS * rn);
    for (int64_t i = 0; i < PROGRAMS * n; i++)
        tl_set(t, x, i, input_for(op, t));

    /* Reference: walk each result element's line along the axis. */
    int64_t stride = 1;
    for (int d = ax + 1; d < rank; d++)
        stride *= dims[d];
    int64_t len = dims[ax], outer = n / (len * stride);
    for (int p = 0; p < PROGRAMS; p++)
        for (int64_t o = 0; o < outer; o++)
            for (int64_t in = 0; in < stride; in++) {
                int64_t base = p * n + o * len * stride + in;
                tl_num best = tl_get(t, x, base);
                int64_t best_i = 0, isum = 0;
                double fsum = 0, fabs_sum = 0;
                for (int64_t k = 0; k < len; k++) {
                    tl_num v = tl_get(t, x, base + k * stride);
                    int c = tl_is_float(t) ? (v.f > best.f) - (v.f < best.f)
                            : tl_is_unsigned(t) ? ((uint64_t)v.i > (uint64_t)best.i) -
                                                      ((uint64_t)v.i < (uint64_t)best.i)
                                                : (v.i > best.i) - (v.i < best.i);
                    if ((op == TJ_REDUCE_MAX || op == TJ_REDUCE_ARGMAX) ? c > 0 : c < 0)
                        best = v, best_i = k;
                    isum = (int64_t)((uint64_t)isum + (uint64_t)v.i);
                    fsum += v.f;
                    fabs_sum += fabs(v.f);
                    if (op == CUMSUM) {
                        int64_t at = p * rn + o * len * stride + in + k * stride;
                        tl_set(rt, want, at,
                               tl_is_float(t) ? tl_flt(tl_round(t, fsum)) : tl_int(tl_wrap(t, isum)));
                        tol[at] = 8 * tl_eps(t) * fabs_sum;
                    }
                }
                if (op == CUMSUM)
                    continue;
                int64_t at = p * rn + o * stride + in;
                tl_num r = best;
                if (op == TJ_REDUCE_SUM)
                    r = tl_is_float(t) ? tl_flt(tl_round(t, fsum)) : tl_int(tl_wrap(t, isum));
                else if (is_arg)
                    r = tl_int(best_i);
                tl_set(rt, want, at, r);
                tol[at] = op == TJ_REDUCE_SUM ? ((t == TJ_F16 || t == TJ_BF16) ? 4 : 8) *
                                                    tl_eps(t) * fabs_sum
                                              : 0;
            }

    tj_buffer bx = tl_upload(dev, x, PROGRAMS * n * es);
    tj_buffer bo = tl_poisoned(dev, PROGRAMS * rn * es), bi = tl_poisoned(dev, PROGRAMS * rn * 4);
    tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bo), TJ_ARG_BUF(bi)};
    int64_t consts[] = {rank, op, axis, d0};
    tj_launch_cfg cfg = tl_grid(PROGRAMS, 1, 1);
    cfg.num_warps = warps;
    char what[160], shape[48];
    if (rank == 1)
        snprintf(shape, sizeof shape, "[%lld]", (long long)dims[0]);
    else if (rank == 2)
        snprintf(shape, sizeof shape, "[%lld,%lld]", (long long)dims[0], (long long)dims[1]);
    else if (rank == 3)
        snprintf(shape, sizeof shape, "[%lld,%lld,%lld]", (long long)dims[0],
                 (long long)dims[1], (long long)dims[2]);
    else
        snprintf(shape, sizeof shape, "[%lld,%lld,%lld,%lld]", (long long)dims[0],
                 (long long)dims[1], (long long)dims[2], (long long)dims[3]);
    snprintf(what, sizeof what, "%s %s%s axis %d%s", op_name(op), tj_dtype_name(t), shape, axis,
             warps ? (warps == 8 ? ", 8 warps" : warps == 16 ? ", 16 warps" : ", 32 warps") : "");
    if (!tl_launch_failed(tj_launch(dev, kernel_of(t), &cfg, args, 3, consts, 4), what)) {
        tl_download(dev, is_arg ? bi : bo, got, PROGRAMS * rn * res);
        size_t bad = 0;
        for (int64_t i = 0; i < PROGRAMS * rn; i++) {
            tl_num g = tl_get(rt, got, i), w = tl_get(rt, want, i);
            if (!tl_num_match(rt, g, w, tl_eps(rt), tol[i])) {
                if (bad++ < 5) {
                    char gs[64], ws[64];
                    tl_format(gs, sizeof gs, rt, g);
                    tl_format(ws, sizeof ws, rt, w);
                    tap_diag("  result [%lld] got %s, expected %s", (long long)i, gs, ws);
                }
            }
        }
        if (bad)
            tap_diag("  %zu of %lld results differ", bad, (long long)(PROGRAMS * rn));
        tap_ok(bad == 0, "%s", what);
    }
    tj_buffer_free(dev, bx);
    tj_buffer_free(dev, bo);
    tj_buffer_free(dev, bi);
    free(x), free(want), free(got), free(tol);
}

/* Max/min of short tiles of computed values, against the same values
 * computed again and stored: LLVM 22 vectorized such CPU loops of 7 and 15
 * steps wrongly (when their body was too large to unroll), dropping the
 * last elements of each row. */
static tj_val short_chain(tj_val v, tj_dtype dt)
{
    tj_val w = tj_cast(v, dt);
    w = tj_div(tj_mul(w, w), tj_add(tj_abs(w), tj_const(1.0, dt)));
    return tj_sub(tj_sqrt(tj_add(w, tj_const(2.0, dt))), tj_mul(w, tj_const(0.75, dt)));
}

TJ_KERNEL(short_extreme,
          TJ_PARAMS(TJ_PTR(x, f64), TJ_PTR(y, f64), TJ_PTR(out, f64)),
          TJ_CONSTS(LEN, OP, DT))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), LEN), tj_arange(0, LEN));
    tj_val v = tj_load(tj_add(x, offs));
    tj_store(tj_add(y, offs), tj_cast(short_chain(v, (tj_dtype)DT), TJ_F64));
    tj_val w = short_chain(v, (tj_dtype)DT);
    tj_val r = OP == TJ_REDUCE_MAX ? tj_max(w, 0) : tj_min(w, 0);
    tj_store(tj_add(out, tj_program_id(0)), tj_cast(r, TJ_F64));
}

static void test_short_extreme(tj_dtype t, int op, int len)
{
    enum { ROWS = 64 };
    double *x = malloc(sizeof(double) * ROWS * len), *y = malloc(sizeof(double) * ROWS * len);
    double got[ROWS];
    tl_fill_range(TJ_F64, x, (size_t)ROWS * len, -4, 4);
    tj_buffer bx = tl_upload(dev, x, sizeof(double) * ROWS * len);
    tj_buffer by = tl_poisoned(dev, sizeof(double) * ROWS * len), bo = tl_poisoned(dev, sizeof got);
    tj_launch_cfg cfg = tl_grid(ROWS, 1, 1);
    char what[160];
    snprintf(what, sizeof what, "%s of %d computed %s values (short rows)", op_name(op), len,
             tj_dtype_name(t));
    if (!tl_launch_failed(short_extreme_launch(dev, &cfg, bx, by, bo, len, op, t), what)) {
        tl_download(dev, by, y, sizeof(double) * ROWS * len);
        tl_download(dev, bo, got, sizeof got);
        int bad = 0;
        for (int r = 0; r < ROWS; r++) {
            double want = y[r * len];
            for (int k = 1; k < len; k++)
                want = op == TJ_REDUCE_MAX ? fmax(want, y[r * len + k]) : fmin(want, y[r * len + k]);
            if (got[r] != want && bad++ < 5)
                tap_diag("  row %d: got %.17g, expected %.17g", r, got[r], want);
        }
        tap_ok(bad == 0, "%s", what);
    }
    tj_buffer_free(dev, bx);
    tj_buffer_free(dev, by);
    tj_buffer_free(dev, bo);
    free(x), free(y);
}

/* Softmax of ragged rows: max and sum of computed values under a mask,
 * masked-off lanes loading a very negative other. */
TJ_KERNEL(softmax_rows,
          TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(out, f32), TJ_SCALAR(ncols, i32)),
          TJ_CONSTS(BLOCK))
{
    tj_val row = tj_program_id(0);
    tj_val cols = tj_arange(0, BLOCK);
    tj_val mask = tj_lt(cols, ncols);
    tj_val offs = tj_add(tj_mul(row, ncols), cols);
    tj_val v = tj_load(tj_add(x, offs), .mask = mask, .other = tj_f32(-1e30));
    tj_val e = tj_exp(tj_sub(v, tj_max(v, 0)));
    tj_store(tj_add(out, offs), tj_div(e, tj_sum(e, 0)), .mask = mask);
}

static void test_softmax(void)
{
    enum { BLOCK = 128 };
    int rows = (int)tl_rand_range(5, 40), ncols = (int)tl_rand_range(BLOCK / 2, BLOCK - 1);
    size_t n = (size_t)rows * ncols;
    float *x = malloc(4 * n), *want = malloc(4 * n), *got = malloc(4 * n);
    tl_fill_range(TJ_F32, x, n, -10, 10);
    for (int r = 0; r < rows; r++) {
        double m = -1e300, s = 0;
        for (int c = 0; c < ncols; c++)
            m = fmax(m, x[r * ncols + c]);
        for (int c = 0; c < ncols; c++)
            s += exp(x[r * ncols + c] - m);
        for (int c = 0; c < ncols; c++)
            want[r * ncols + c] = (float)(exp(x[r * ncols + c] - m) / s);
    }
    tj_buffer bx = tl_upload(dev, x, 4 * n), bo = tl_poisoned(dev, 4 * n);
    tj_launch_cfg cfg = tl_grid(rows, 1, 1);
    char what[160];
    snprintf(what, sizeof what, "softmax of %d ragged rows of %d (max, exp, sum, div, masks)",
             rows, ncols);
    if (!tl_launch_failed(softmax_rows_launch(dev, &cfg, bx, bo, ncols, BLOCK), what)) {
        tl_download(dev, bo, got, 4 * n);
        tl_check(what, TJ_F32, got, want, n, 1e-5, 1e-9);
    }
    free(x), free(want), free(got);
}

int main(void)
{
    dev = tl_setup("test_reduce");
    static const int axes1[] = {0, -1}, axes2[] = {0, 1, -1}, axes3[] = {0, 1, 2, -1},
                     axes4[] = {0, 1, 2, 3, -2};
    static const struct {
        int rank, naxes;
        const int *axes;
    } layouts[] = {{1, 2, axes1}, {2, 3, axes2}, {3, 4, axes3}, {4, 5, axes4}};
    static const tj_dtype full[] = {TJ_F32, TJ_I32};
    for (size_t d = 0; d < TL_COUNT(full); d++)
        for (size_t l = 0; l < TL_COUNT(layouts); l++)
            for (int a = 0; a < layouts[l].naxes; a++)
                for (int op = TJ_REDUCE_SUM; op <= TJ_REDUCE_ARGMIN; op++)
                    test_reduce(full[d], layouts[l].rank, layouts[l].axes[a], op);
    /* Other dtypes on 1-D tiles; sums only where the result dtype is the
     * input's without doubt (no 8/16-bit integer sums). */
    static const tj_dtype others[] = {TJ_I8, TJ_I16, TJ_I64, TJ_U8, TJ_U16,
                                      TJ_U32, TJ_U64, TJ_F16, TJ_BF16, TJ_F64};
    for (size_t d = 0; d < TL_COUNT(others); d++) {
        tj_dtype t = others[d];
        int narrow_int = !tl_is_float(t) && tl_bits(t) < 32;
        for (int op = narrow_int ? TJ_REDUCE_MAX : TJ_REDUCE_SUM; op <= TJ_REDUCE_ARGMIN; op++)
            test_reduce(t, 1, 0, op);
    }
    static const tj_dtype short_floats[] = {TJ_F32, TJ_F64, TJ_BF16};
    for (size_t d = 0; d < TL_COUNT(short_floats); d++)
        for (int len = 8; len <= 16; len *= 2) {
            test_short_extreme(short_floats[d], TJ_REDUCE_MAX, len);
            test_short_extreme(short_floats[d], TJ_REDUCE_MIN, len);
        }
    /* cumsum on each axis */
    static const tj_dtype scans[] = {TJ_I32, TJ_F32};
    for (size_t d = 0; d < TL_COUNT(scans); d++) {
        test_reduce(scans[d], 1, 0, CUMSUM);
        for (int a = 0; a < 2; a++)
            test_reduce(scans[d], 2, a, CUMSUM);
        test_reduce(scans[d], 2, -1, CUMSUM);
        for (int a = 0; a < 3; a++)
            test_reduce(scans[d], 3, a, CUMSUM);
    }
    test_reduce(TJ_F32, 4, 2, CUMSUM);
    test_reduce(TJ_I32, 4, -1, CUMSUM);
    test_reduce(TJ_I64, 1, 0, CUMSUM);
    test_reduce(TJ_F64, 2, 1, CUMSUM);
    test_softmax();
    /* Rows over 8, 16 and 32 warps: on a GPU their partials meet a part
     * per lane, combined by butterflies (swizzle.c's lane-parallel step). */
    row_len = 4096;
    for (warps = 8; warps <= 32; warps *= 2)
        for (int op = TJ_REDUCE_SUM; op <= TJ_REDUCE_ARGMIN; op++) {
            test_reduce(TJ_F32, 1, 0, op);
            test_reduce(TJ_I32, 1, 0, op);
        }
    tj_device_close(dev);
    return tap_done();
}
