/* SPDX-License-Identifier: MIT */
/*
 * test_tile_algos.c — tj_sort, tj_flip, tj_gather, tj_histogram and
 * tj_swizzle2d on the device under test (TJIT_TEST_DEVICE), against plain
 * C references.
 *
 * sort: rows of random values sorted independently, ascending and
 * descending, f32 (with NaN, ±inf, -0 and +0), f16, i32, u8 and fp8, row
 * lengths 2 to 512: each output row must be the reference order (NaN above
 * every number, -0 equal to +0) and a permutation of the input row's bits.
 * flip along either axis of a 2-D tile; gather along either axis with
 * random indices, out-of-range ones included (they give the lowest value);
 * histogram with and without a mask, values outside the bins included;
 * swizzle2d over a whole grid against Triton's formula, which must also be
 * a permutation of it. Then the errors and the PTX of every kernel for
 * sm_80 and sm_90 (ptxas checks it where make check sets TJIT_PTXAS).
 */
#include "testlib.h"

enum { ROWS = 4, MAXN = 512, R = 8, C = 16, HN = 1024, BINS = 64 };

/* ROWS rows of N: o = sort(x) (DESC: descending). */
#define SORT_KERNEL(NAME, DT)                                                                         \
    TJ_KERNEL(NAME, TJ_PARAMS(TJ_PTR(x, DT), TJ_PTR(o, DT)), TJ_CONSTS(N, DESC))                      \
    {                                                                                                 \
        tj_val at = tj_add(tj_mul(tj_expand_dims(tj_arange(0, ROWS), 1), N),                          \
                           tj_expand_dims(tj_arange(0, N), 0));                                       \
        tj_store(tj_add(o, at), tj_sort(tj_load(tj_add(x, at)), .descending = DESC));                 \
    }
SORT_KERNEL(sort_f32, f32)
SORT_KERNEL(sort_f16, f16)
SORT_KERNEL(sort_i32, i32)
SORT_KERNEL(sort_u8, u8)
SORT_KERNEL(sort_f8, f8e4m3)

/* f0 = flip(x, 0), f1 = flip(x, 1) of x [R, C]; g0 = gather(x, i0, 0) with
 * i0 [R, C]; g1 = gather(x, i1, 1) with i1 [R, 2C]. */
TJ_KERNEL(flip_gather,
          TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(f0, f32), TJ_PTR(f1, f32), TJ_PTR(i0, i32), TJ_PTR(g0, f32),
                    TJ_PTR(i1, i64), TJ_PTR(g1, f32)),
          TJ_CONSTS())
{
    tj_val r = tj_expand_dims(tj_arange(0, R), 1), c = tj_expand_dims(tj_arange(0, C), 0);
    tj_val at = tj_add(tj_mul(r, C), c), at2 = tj_add(tj_mul(r, 2 * C), tj_expand_dims(tj_arange(0, 2 * C), 0));
    tj_val v = tj_load(tj_add(x, at));
    tj_store(tj_add(f0, at), tj_flip(v, 0));
    tj_store(tj_add(f1, at), tj_flip(v, -1));
    tj_store(tj_add(g0, at), tj_gather(v, tj_load(tj_add(i0, at)), 0));
    tj_store(tj_add(g1, at2), tj_gather(v, tj_load(tj_add(i1, at2)), 1));
}

/* h = histogram(x), hm = histogram(x, .mask = keep != 0). */
TJ_KERNEL(hist, TJ_PARAMS(TJ_PTR(x, i32), TJ_PTR(keep, u8), TJ_PTR(h, i32), TJ_PTR(hm, i32)), TJ_CONSTS())
{
    tj_val i = tj_arange(0, HN), b = tj_arange(0, BINS), v = tj_load(tj_add(x, i));
    tj_store(tj_add(h, b), tj_histogram(v, BINS));
    tj_store(tj_add(hm, b), tj_histogram(v, BINS, .mask = tj_ne(tj_load(tj_add(keep, i)), 0)));
}

/* ni, nj of every (i, j) of a size_i x size_j grid (both 16 x 16 tiles). */
TJ_KERNEL(swizzle, TJ_PARAMS(TJ_PTR(ni, i32), TJ_PTR(nj, i32), TJ_SCALAR(size_i, i32),
                             TJ_SCALAR(size_j, i32), TJ_SCALAR(size_g, i32)),
          TJ_CONSTS())
{
    tj_val i = tj_expand_dims(tj_arange(0, 16), 1), j = tj_expand_dims(tj_arange(0, 16), 0);
    tj_val a, b;
    tj_swizzle2d(i, j, size_i, size_j, size_g, &a, &b);
    tj_val at = tj_add(tj_mul(i, 16), j), in = tj_and(tj_lt(i, size_i), tj_lt(j, size_j));
    tj_store(tj_add(ni, at), a, .mask = in);
    tj_store(tj_add(nj, at), b, .mask = in);
}

TJ_KERNEL(sort_scalar, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_sort(tj_load(x));
}
TJ_KERNEL(gather_float_index, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_val v = tj_load(tj_add(x, tj_arange(0, 8)));
    tj_gather(v, v, 0);
}
TJ_KERNEL(gather_shapes, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(i, i32)), TJ_CONSTS())
{
    tj_val v = tj_load(tj_add(x, tj_expand_dims(tj_arange(0, 8), 0)));     /* [1, 8] */
    tj_val k = tj_load(tj_add(i, tj_expand_dims(tj_arange(0, 4), 1)));     /* [4, 1] */
    tj_gather(v, k, 1);
}
/* A u8 index into 256 positions: the range check must not need 256 to fit in u8. */
TJ_KERNEL(gather_u8_index, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(i, u8), TJ_PTR(o, f32)), TJ_CONSTS())
{
    tj_val k = tj_arange(0, 256);
    tj_store(tj_add(o, k), tj_gather(tj_load(tj_add(x, k)), tj_load(tj_add(i, k)), 0));
}

TJ_KERNEL(histogram_floats, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_histogram(tj_load(tj_add(x, tj_arange(0, 8))), 4);
}
TJ_KERNEL(histogram_bins, TJ_PARAMS(TJ_PTR(x, i32)), TJ_CONSTS())
{
    tj_histogram(tj_load(tj_add(x, tj_arange(0, 8))), 6);
}

static int order_asc(const void *a, const void *b) { return tl_order(*(const double *)a, *(const double *)b); }

static double as_double(tj_dtype dt, tl_num v) { return tl_is_float(dt) ? v.f : (double)v.i; }

static void run_sort(tj_device *dev, const tj_kernel *k, tj_dtype dt, int64_t n, int desc)
{
    size_t es = tj_dtype_size(dt), size = ROWS * (size_t)n * es;
    static uint8_t hx[ROWS * MAXN * 8], ho[ROWS * MAXN * 8];
    for (int i = 0; i < ROWS * n; i++)
        tl_set(dt, hx, (size_t)i, tl_sort_input(dt, i, 1));
    tj_buffer bx = tl_upload(dev, hx, size), bo = tl_poisoned(dev, size);
    int64_t consts[2] = {n, desc};
    tj_launch_cfg cfg = {.grid = {1}};
    tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bo)};
    char what[96];
    snprintf(what, sizeof what, "sort of %d rows of %lld %s, %s", ROWS, (long long)n, tj_dtype_name(dt),
             desc ? "descending" : "ascending");
    if (!tl_launch_failed(tj_launch(dev, k, &cfg, args, 2, consts, 2), what)) {
        tl_download(dev, bo, ho, size);
        int wrong = 0;
        for (int r = 0; r < ROWS && wrong < 4; r++) {
            double want[MAXN], got[MAXN];
            uint64_t bits_in[MAXN], bits_out[MAXN];
            for (int i = 0; i < n; i++) {
                size_t at = (size_t)(r * n + i);
                want[i] = as_double(dt, tl_get(dt, hx, at));
                got[i] = as_double(dt, tl_get(dt, ho, at));
                bits_in[i] = 0, bits_out[i] = 0;
                memcpy(&bits_in[i], hx + at * es, es);
                memcpy(&bits_out[i], ho + at * es, es);
            }
            qsort(want, (size_t)n, sizeof want[0], order_asc);
            for (int i = 0; i < n; i++) {
                double w = desc ? want[n - 1 - i] : want[i];
                if (tl_order(got[i], w) != 0 && wrong++ < 4)
                    tap_diag("row %d [%d]: %g, expected %g", r, i, got[i], w);
            }
            /* the output's bits are a permutation of the input's */
            for (int i = 0; i < n; i++) {
                int found = 0;
                for (int j = 0; j < n && !found; j++)
                    if (bits_out[j] == bits_in[i])
                        found = 1, bits_out[j] = ~(uint64_t)0;
                if (!found && wrong++ < 4)
                    tap_diag("row %d: input element %d (bits %llx) is missing from the output", r, i,
                             (unsigned long long)bits_in[i]);
            }
        }
        tap_ok(!wrong, "%s", what);
    }
    tj_buffer_free(dev, bx), tj_buffer_free(dev, bo);
}

static void run_flip_gather(tj_device *dev)
{
    float x[R * C], f0[R * C], f1[R * C], g0[R * C], g1[R * 2 * C];
    int32_t i0[R * C];
    int64_t i1[R * 2 * C];
    for (int i = 0; i < R * C; i++) {
        x[i] = (float)tl_rand_double(-10, 10);
        i0[i] = (int32_t)tl_rand_range(-1, R); /* -1 and R: out of range */
    }
    for (int i = 0; i < R * 2 * C; i++)
        i1[i] = tl_rand_range(0, C - 1);
    i1[5] = C + 3;
    tj_buffer bx = tl_upload(dev, x, sizeof x), bf0 = tl_poisoned(dev, sizeof f0), bf1 = tl_poisoned(dev, sizeof f1);
    tj_buffer bi0 = tl_upload(dev, i0, sizeof i0), bg0 = tl_poisoned(dev, sizeof g0);
    tj_buffer bi1 = tl_upload(dev, i1, sizeof i1), bg1 = tl_poisoned(dev, sizeof g1);
    tj_launch_cfg cfg = {.grid = {1}};
    tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bf0), TJ_ARG_BUF(bf1), TJ_ARG_BUF(bi0),
                     TJ_ARG_BUF(bg0), TJ_ARG_BUF(bi1), TJ_ARG_BUF(bg1)};
    if (tl_launch_failed(tj_launch(dev, flip_gather, &cfg, args, 7, NULL, 0), "flip and gather")) {
        for (int t = 0; t < 3; t++)
            tap_ok(0, "flip and gather (not run)");
        return;
    }
    tl_download(dev, bf0, f0, sizeof f0), tl_download(dev, bf1, f1, sizeof f1);
    tl_download(dev, bg0, g0, sizeof g0), tl_download(dev, bg1, g1, sizeof g1);
    int wrong = 0;
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++)
            wrong += f0[r * C + c] != x[(R - 1 - r) * C + c] || f1[r * C + c] != x[r * C + C - 1 - c];
    tap_ok(!wrong, "flip of an [%d, %d] tile along each axis", R, C);
    wrong = 0;
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
            int k = i0[r * C + c];
            float want = k >= 0 && k < R ? x[k * C + c] : -INFINITY;
            if (g0[r * C + c] != want && wrong++ < 4)
                tap_diag("gather axis 0 [%d, %d] (index %d): %g, expected %g", r, c, k, g0[r * C + c], want);
        }
    tap_ok(!wrong, "gather along axis 0, out-of-range indices giving -inf");
    wrong = 0;
    for (int r = 0; r < R; r++)
        for (int c = 0; c < 2 * C; c++) {
            int64_t k = i1[r * 2 * C + c];
            float want = k < C ? x[r * C + k] : -INFINITY;
            if (g1[r * 2 * C + c] != want && wrong++ < 4)
                tap_diag("gather axis 1 [%d, %d]: %g, expected %g", r, c, g1[r * 2 * C + c], want);
        }
    tap_ok(!wrong, "gather along axis 1 with an i64 index tile twice as wide");
    tj_buffer bs[] = {bx, bf0, bf1, bi0, bg0, bi1, bg1};
    for (int b = 0; b < 7; b++)
        tj_buffer_free(dev, bs[b]);
}

static void run_histogram(tj_device *dev)
{
    int32_t x[HN], h[BINS], hm[BINS], want[BINS] = {0}, want_m[BINS] = {0};
    uint8_t keep[HN];
    for (int i = 0; i < HN; i++) {
        x[i] = (int32_t)tl_rand_range(-5, BINS + 5);
        keep[i] = (uint8_t)(tl_rand_range(0, 3) != 0);
        if (x[i] >= 0 && x[i] < BINS) {
            want[x[i]]++;
            want_m[x[i]] += keep[i];
        }
    }
    tj_buffer bx = tl_upload(dev, x, sizeof x), bk = tl_upload(dev, keep, sizeof keep);
    tj_buffer bh = tl_poisoned(dev, sizeof h), bhm = tl_poisoned(dev, sizeof hm);
    tj_launch_cfg cfg = {.grid = {1}};
    tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bk), TJ_ARG_BUF(bh), TJ_ARG_BUF(bhm)};
    if (!tl_launch_failed(tj_launch(dev, hist, &cfg, args, 4, NULL, 0), "histogram")) {
        tl_download(dev, bh, h, sizeof h), tl_download(dev, bhm, hm, sizeof hm);
        tap_ok(!memcmp(h, want, sizeof h), "histogram of %d values into %d bins (those outside not counted)", HN,
               BINS);
        tap_ok(!memcmp(hm, want_m, sizeof hm), "histogram with a mask");
    } else {
        tap_ok(0, "histogram with a mask (not run)");
    }
    tj_buffer_free(dev, bx), tj_buffer_free(dev, bk), tj_buffer_free(dev, bh), tj_buffer_free(dev, bhm);
}

static void run_swizzle(tj_device *dev, int size_i, int size_j, int size_g)
{
    int32_t ni[256], nj[256];
    tj_buffer bi = tl_poisoned(dev, sizeof ni), bj = tl_poisoned(dev, sizeof nj);
    tj_launch_cfg cfg = {.grid = {1}};
    tj_arg args[] = {TJ_ARG_BUF(bi), TJ_ARG_BUF(bj), TJ_ARG_I32(size_i), TJ_ARG_I32(size_j), TJ_ARG_I32(size_g)};
    char what[96];
    snprintf(what, sizeof what, "swizzle2d of a %d x %d grid, groups of %d", size_i, size_j, size_g);
    if (!tl_launch_failed(tj_launch(dev, swizzle, &cfg, args, 5, NULL, 0), what)) {
        tl_download(dev, bi, ni, sizeof ni), tl_download(dev, bj, nj, sizeof nj);
        int wrong = 0, seen[256] = {0};
        for (int i = 0; i < size_i; i++)
            for (int j = 0; j < size_j; j++) {
                int ij = i * size_j + j, gj = size_g * size_j, off = ij / gj * size_g;
                int rows = size_i - off < size_g ? size_i - off : size_g;
                int wi = off + ij % gj % rows, wj = ij % gj / rows, at = i * 16 + j;
                if ((ni[at] != wi || nj[at] != wj) && wrong++ < 4)
                    tap_diag("(%d, %d) -> (%d, %d), expected (%d, %d)", i, j, ni[at], nj[at], wi, wj);
                if (ni[at] >= 0 && ni[at] < size_i && nj[at] >= 0 && nj[at] < size_j)
                    wrong += seen[ni[at] * size_j + nj[at]]++ != 0;
                else
                    wrong++;
            }
        tap_ok(!wrong, "%s: Triton's numbering, a permutation of the grid", what);
    }
    tj_buffer_free(dev, bi), tj_buffer_free(dev, bj);
}

int main(void)
{
    tj_device *dev = tl_setup("test_tile_algos");
    tap_plan(2 * 4 + 2 * 2 + 2 * 3 + 3 + 2 + 3 + 5 + 3);
    static const int64_t lengths[] = {2, 32, 128, 512};
    for (int l = 0; l < 4; l++)
        for (int desc = 0; desc < 2; desc++)
            run_sort(dev, sort_f32, TJ_F32, lengths[l], desc);
    for (int desc = 0; desc < 2; desc++) {
        run_sort(dev, sort_i32, TJ_I32, 64, desc);
        run_sort(dev, sort_u8, TJ_U8, 16, desc);
    }
    for (int desc = 0; desc < 2; desc++) {
        run_sort(dev, sort_f16, TJ_F16, 256, desc);
        run_sort(dev, sort_f8, TJ_F8E4M3, 8, desc);
        run_sort(dev, sort_f32, TJ_F32, 8, desc);
    }
    run_flip_gather(dev);
    run_histogram(dev);
    run_swizzle(dev, 16, 16, 4);
    run_swizzle(dev, 13, 9, 5);
    run_swizzle(dev, 7, 16, 8);
    tl_build_refused(sort_scalar, TJ_ERR_SHAPE, NULL, "sort takes a tile");
    tl_build_refused(gather_float_index, TJ_ERR_TYPE, NULL, "the index must be integers");
    tl_build_refused(gather_shapes, TJ_ERR_SHAPE, NULL, "differ in dimension 0");
    tl_build_refused(histogram_floats, TJ_ERR_TYPE, NULL, "histogram counts integers");
    tl_build_refused(histogram_bins, TJ_ERR_SHAPE, NULL, "num_bins 6");
    int ptx_ok = 1, float_max = 0;
    const tj_kernel *ks[] = {sort_f32, sort_f16, sort_i32, sort_u8, sort_f8, flip_gather, hist, swizzle};
    for (int k = 0; k < 8; k++)
        for (int t = 0; t < 2; t++) {
            int64_t consts[2] = {64, t};
            char *ptx = NULL;
            if (tj_kernel_ptx(ks[k], consts, k < 5 ? 2 : 0, t ? "sm_90" : "sm_80", 4, &ptx) != TJ_OK)
                ptx_ok = 0, tap_diag("%s: %s", ks[k]->name, tj_last_error());
            else if (k < 2 && strstr(ptx, "max.NaN"))
                float_max = 1, tap_diag("%s for %s: max.NaN", ks[k]->name, t ? "sm_90" : "sm_80");
            free(ptx);
        }
    tap_ok(ptx_ok, "PTX of every kernel, sm_80 and sm_90");
    /* max.NaN gives the canonical NaN, not its operand's bits: on an H100
     * the float sorts lost their NaNs that way */
    tap_ok(ptx_ok && !float_max, "the float sorts pick partners by their bits (no max.NaN in the PTX)");
    char *u8_ptx = NULL;
    tj_status u8_st = tj_kernel_ptx(gather_u8_index, NULL, 0, "sm_90", 4, &u8_ptx);
    if (u8_st != TJ_OK)
        tap_diag("%s", tj_last_error());
    tap_ok(u8_st == TJ_OK, "gather of 256 f32 with a u8 index builds");
    free(u8_ptx);
    tj_device_close(dev);
    return tap_done();
}
