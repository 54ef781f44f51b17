/* SPDX-License-Identifier: MIT */
/*
 * test_topk.c — tj_topk and tj_bitonic_merge (Triton's tl.topk and
 * tl.bitonic_merge) on the device under test (TJIT_TEST_DEVICE), against
 * plain C references.
 *
 * topk: rows of random values, f32 (with NaN, ±inf, -0 and +0), f16, i32,
 * u8 and fp8, row lengths 2 to 512 and k from 1 to the whole row, and a
 * 3-D tile: each output row must be the first k of the row sorted
 * descending (NaN above every number, -0 equal to +0), every output
 * element's bits one of its row's, none taken twice. bitonic_merge: rows
 * that rise then fall, rotated, must come out sorted either way; and the
 * streaming top-k of Triton's MoE routing (a topk per chunk, merged with
 * the running one by bitonic_merge and maximum) must give the top k of the
 * whole row. Then the errors, and the PTX of every kernel for sm_80 and
 * sm_90 (ptxas checks it where make check sets TJIT_PTXAS), which must
 * pick partners by their bits (no max.NaN, which gives the canonical NaN).
 */
#include "testlib.h"

enum { ROWS = 4, MAXN = 512, CHUNKS = 4, CHUNK = 64, STREAM_K = 8 };

/* ROWS rows of N: o [ROWS, K] = topk(x, K). */
#define TOPK_KERNEL(NAME, DT)                                                                         \
    TJ_KERNEL(NAME, TJ_PARAMS(TJ_PTR(x, DT), TJ_PTR(o, DT)), TJ_CONSTS(N, K))                         \
    {                                                                                                 \
        tj_val row = tj_expand_dims(tj_arange(0, ROWS), 1);                                           \
        tj_val at = tj_add(tj_mul(row, N), tj_expand_dims(tj_arange(0, N), 0));                       \
        tj_val out = tj_add(tj_mul(row, K), tj_expand_dims(tj_arange(0, K), 0));                      \
        tj_store(tj_add(o, out), tj_topk(tj_load(tj_add(x, at)), K));                                 \
    }
TOPK_KERNEL(topk_f32, f32)
TOPK_KERNEL(topk_f16, f16)
TOPK_KERNEL(topk_i32, i32)
TOPK_KERNEL(topk_u8, u8)
TOPK_KERNEL(topk_f8, f8e4m3)

/* The same rows as a [2, ROWS / 2, N] tile. */
TJ_KERNEL(topk_3d, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(o, f32)), TJ_CONSTS(N, K))
{
    tj_val plane = tj_expand_dims(tj_expand_dims(tj_arange(0, 2), 1), 2);
    tj_val row = tj_expand_dims(tj_expand_dims(tj_arange(0, ROWS / 2), 0), 2);
    tj_val rows = tj_add(tj_mul(plane, ROWS / 2), row);
    tj_val at = tj_add(tj_mul(rows, N), tj_expand_dims(tj_expand_dims(tj_arange(0, N), 0), 0));
    tj_val out = tj_add(tj_mul(rows, K), tj_expand_dims(tj_expand_dims(tj_arange(0, K), 0), 0));
    tj_store(tj_add(o, out), tj_topk(tj_load(tj_add(x, at)), K));
}

/* o = bitonic_merge(x, .descending = DESC), ROWS rows of N. */
TJ_KERNEL(merge_f32, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(o, f32)), TJ_CONSTS(N, DESC))
{
    tj_val at = tj_add(tj_mul(tj_expand_dims(tj_arange(0, ROWS), 1), N), tj_expand_dims(tj_arange(0, N), 0));
    tj_store(tj_add(o, at), tj_bitonic_merge(tj_load(tj_add(x, at)), .descending = DESC));
}

/* The streaming top-k of Triton's MoE routing: rows of CHUNKS x CHUNK
 * values, the running top STREAM_K sorted up by bitonic_merge, then the
 * elementwise maximum with the next chunk's topk (largest first), which
 * holds the top of both as a rising-then-falling row; a last merge, down,
 * gives the top STREAM_K of the row, largest first. */
TJ_KERNEL(stream_topk, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(o, f32)), TJ_CONSTS())
{
    tj_val row = tj_expand_dims(tj_arange(0, ROWS), 1), col = tj_expand_dims(tj_arange(0, CHUNK), 0);
    tj_val acc = TJ_NONE;
    for (int c = 0; c < CHUNKS; c++) {
        tj_val chunk = tj_load(tj_add(x, tj_add(tj_mul(row, CHUNKS * CHUNK), tj_add(col, c * CHUNK))));
        tj_val top = tj_topk(chunk, STREAM_K);
        acc = c == 0 ? top : tj_maximum(tj_bitonic_merge(acc), top);
    }
    tj_val out = tj_add(tj_mul(row, STREAM_K), tj_expand_dims(tj_arange(0, STREAM_K), 0));
    tj_store(tj_add(o, out), tj_bitonic_merge(acc, .descending = 1));
}

TJ_KERNEL(topk_scalar, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_topk(tj_load(x), 1);
}
TJ_KERNEL(topk_k3, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_topk(tj_load(tj_add(x, tj_arange(0, 16))), 3);
}
TJ_KERNEL(topk_k_over_n, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_topk(tj_load(tj_add(x, tj_arange(0, 16))), 32);
}
TJ_KERNEL(topk_pointers, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_topk(tj_add(x, tj_arange(0, 16)), 4);
}
TJ_KERNEL(merge_scalar, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS())
{
    tj_bitonic_merge(tj_load(x));
}

static int order_desc(const void *a, const void *b) { return tl_order(*(const double *)b, *(const double *)a); }

static double as_double(tj_dtype dt, tl_num v) { return tl_is_float(dt) ? v.f : (double)v.i; }

/* Whether each of the ROWS output rows of k (ho) is the first k of its
 * input row of n (hx) sorted descending, its elements' bits taken from
 * the row once each; diagnoses up to 4 faults. */
static int rows_are_top(tj_dtype dt, const uint8_t *hx, const uint8_t *ho, int64_t n, int64_t k)
{
    size_t es = tj_dtype_size(dt);
    int wrong = 0;
    for (int r = 0; r < ROWS && wrong < 4; r++) {
        double want[MAXN];
        uint64_t bits_in[MAXN];
        for (int64_t i = 0; i < n; i++) {
            size_t at = (size_t)(r * n + i);
            want[i] = as_double(dt, tl_get(dt, hx, at));
            bits_in[i] = 0;
            memcpy(&bits_in[i], hx + at * es, es);
        }
        qsort(want, (size_t)n, sizeof want[0], order_desc);
        for (int64_t i = 0; i < k; i++) {
            size_t at = (size_t)(r * k + i);
            double got = as_double(dt, tl_get(dt, ho, at));
            uint64_t bits = 0;
            memcpy(&bits, ho + at * es, es);
            if (tl_order(got, want[i]) != 0 && wrong++ < 4)
                tap_diag("row %d [%lld]: %g, expected %g", r, (long long)i, got, want[i]);
            int64_t j = 0;
            while (j < n && bits_in[j] != bits)
                j++;
            if (j == n && wrong++ < 4)
                tap_diag("row %d [%lld]: bits %llx are none of the row's (left)", r, (long long)i,
                         (unsigned long long)bits);
            else if (j < n)
                bits_in[j] = ~(uint64_t)0; /* taken */
        }
    }
    return !wrong;
}

static void run_topk(tj_device *dev, const tj_kernel *kern, tj_dtype dt, int64_t n, int64_t k)
{
    size_t es = tj_dtype_size(dt);
    static uint8_t hx[ROWS * MAXN * 8], ho[ROWS * MAXN * 8];
    for (int i = 0; i < ROWS * n; i++)
        tl_set(dt, hx, (size_t)i, tl_sort_input(dt, i, 1));
    tj_buffer bx = tl_upload(dev, hx, ROWS * (size_t)n * es), bo = tl_poisoned(dev, ROWS * (size_t)k * es);
    int64_t consts[2] = {n, k};
    tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bo)};
    char what[96];
    snprintf(what, sizeof what, "%s: the top %lld of %d rows of %lld %s", kern->name, (long long)k, ROWS,
             (long long)n, tj_dtype_name(dt));
    if (!tl_launch_failed(tj_launch(dev, kern, &(tj_launch_cfg){.grid = {1}}, args, 2, consts, 2), what)) {
        tl_download(dev, bo, ho, ROWS * (size_t)k * es);
        tap_ok(rows_are_top(dt, hx, ho, n, k), "%s", what);
    }
    tj_buffer_free(dev, bx), tj_buffer_free(dev, bo);
}

/* Rows that rise then fall, each rotated at random: sorted by the merge. */
static void run_merge(tj_device *dev, int64_t n, int desc)
{
    static float hx[ROWS * MAXN], ho[ROWS * MAXN];
    for (int r = 0; r < ROWS; r++) {
        double v[MAXN];
        for (int64_t i = 0; i < n; i++)
            v[i] = (float)tl_rand_double(-100, 100);
        qsort(v, (size_t)n, sizeof v[0], order_desc);
        /* the largest in the middle: every other value to each side */
        float bitonic[MAXN];
        int64_t lo = 0, hi = n - 1;
        for (int64_t i = n - 1; i >= 0; i--)
            bitonic[(n - 1 - i) % 2 ? hi-- : lo++] = (float)v[i];
        int64_t shift = tl_rand_range(0, n - 1);
        for (int64_t i = 0; i < n; i++)
            hx[r * n + i] = bitonic[(i + shift) % n];
    }
    tj_buffer bx = tl_upload(dev, hx, ROWS * (size_t)n * 4), bo = tl_poisoned(dev, ROWS * (size_t)n * 4);
    int64_t consts[2] = {n, desc};
    tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bo)};
    char what[96];
    snprintf(what, sizeof what, "bitonic_merge of %d rotated rising-then-falling rows of %lld f32, %s", ROWS,
             (long long)n, desc ? "descending" : "ascending");
    if (!tl_launch_failed(tj_launch(dev, merge_f32, &(tj_launch_cfg){.grid = {1}}, args, 2, consts, 2), what)) {
        tl_download(dev, bo, ho, ROWS * (size_t)n * 4);
        int wrong = 0;
        for (int r = 0; r < ROWS; r++) {
            double want[MAXN];
            for (int64_t i = 0; i < n; i++)
                want[i] = hx[r * n + i];
            qsort(want, (size_t)n, sizeof want[0], order_desc);
            for (int64_t i = 0; i < n; i++) {
                double w = desc ? want[i] : want[n - 1 - i];
                if (ho[r * n + i] != w && wrong++ < 4)
                    tap_diag("row %d [%lld]: %g, expected %g", r, (long long)i, ho[r * n + i], w);
            }
        }
        tap_ok(!wrong, "%s", what);
    }
    tj_buffer_free(dev, bx), tj_buffer_free(dev, bo);
}

static void run_stream(tj_device *dev)
{
    enum { N = CHUNKS * CHUNK };
    static uint8_t hx[ROWS * N * 4], ho[ROWS * STREAM_K * 4];
    for (int i = 0; i < ROWS * N; i++) /* no NaN: maximum lets a number win over one */
        tl_set(TJ_F32, hx, (size_t)i, tl_sort_input(TJ_F32, i, 0));
    tj_buffer bx = tl_upload(dev, hx, sizeof hx), bo = tl_poisoned(dev, sizeof ho);
    tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bo)};
    const char *what = "streaming top 8 of 4 chunks of 64 (topk, bitonic_merge, maximum)";
    if (!tl_launch_failed(tj_launch(dev, stream_topk, &(tj_launch_cfg){.grid = {1}}, args, 2, NULL, 0), what)) {
        tl_download(dev, bo, ho, sizeof ho);
        tap_ok(rows_are_top(TJ_F32, hx, ho, N, STREAM_K), "%s", what);
    }
    tj_buffer_free(dev, bx), tj_buffer_free(dev, bo);
}

int main(void)
{
    tj_device *dev = tl_setup("test_topk");
    tap_plan(4 * 4 + 8 + 2 + 6 + 1 + 5 + 2);
    static const int64_t lengths[] = {2, 32, 128, 512};
    for (int l = 0; l < 4; l++) {
        int64_t n = lengths[l];
        static const int64_t ks[] = {1, 2, 8, 0};
        for (int i = 0; i < 4; i++)
            run_topk(dev, topk_f32, TJ_F32, n, ks[i] && ks[i] <= n ? ks[i] : n);
    }
    run_topk(dev, topk_f16, TJ_F16, 256, 16);
    run_topk(dev, topk_f16, TJ_F16, 64, 64);
    run_topk(dev, topk_i32, TJ_I32, 64, 4);
    run_topk(dev, topk_i32, TJ_I32, 128, 32);
    run_topk(dev, topk_u8, TJ_U8, 16, 2);
    run_topk(dev, topk_u8, TJ_U8, 32, 8);
    run_topk(dev, topk_f8, TJ_F8E4M3, 32, 4);
    run_topk(dev, topk_f8, TJ_F8E4M3, 8, 8);
    run_topk(dev, topk_3d, TJ_F32, 64, 4);
    run_topk(dev, topk_3d, TJ_F32, 16, 16);
    static const int64_t merge_lengths[] = {2, 64, 512};
    for (int l = 0; l < 3; l++)
        for (int desc = 0; desc < 2; desc++)
            run_merge(dev, merge_lengths[l], desc);
    run_stream(dev);
    tl_build_refused(topk_scalar, TJ_ERR_SHAPE, "topk", "topk takes a tile");
    tl_build_refused(topk_k3, TJ_ERR_SHAPE, "topk", "k = 3: a power of two");
    tl_build_refused(topk_k_over_n, TJ_ERR_SHAPE, "topk", "k = 32: a power of two from 1 to the last dimension, 16");
    tl_build_refused(topk_pointers, TJ_ERR_TYPE, "topk", "no rule for 'topk'");
    tl_build_refused(merge_scalar, TJ_ERR_SHAPE, "bitonic_merge", "bitonic_merge takes a tile");
    int ptx_ok = 1, float_max = 0;
    const tj_kernel *ks[] = {topk_f32, topk_f16, topk_i32, topk_u8, topk_f8, topk_3d, merge_f32, stream_topk};
    for (int k = 0; k < 8; k++)
        for (int t = 0; t < 2; t++) {
            int64_t consts[2] = {64, k == 6 ? t : 8};
            char *ptx = NULL;
            if (tj_kernel_ptx(ks[k], consts, k < 7 ? 2 : 0, t ? "sm_90" : "sm_80", 4, &ptx) != TJ_OK)
                ptx_ok = 0, tap_diag("%s: %s", ks[k]->name, tj_last_error());
            else if (k != 7 && strstr(ptx, "max.NaN"))
                float_max = 1, tap_diag("%s for %s: max.NaN", ks[k]->name, t ? "sm_90" : "sm_80");
            free(ptx);
        }
    tap_ok(ptx_ok, "PTX of every kernel, sm_80 and sm_90");
    tap_ok(ptx_ok && !float_max, "topk and bitonic_merge pick partners by their bits (no max.NaN in the PTX)");
    tj_device_close(dev);
    return tap_done();
}
