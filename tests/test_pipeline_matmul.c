/* SPDX-License-Identifier: MIT */
/*
 * test_pipeline_matmul.c — the tutorial's matmul (Triton's 03 loop: masked
 * along K, pointers advanced by the loop, a masked store) launched at
 * num_stages 1 to 4, against a C reference; the GPU twin
 * (tests/gpu/test_pipeline_matmul.gpu) runs it with the loads pipelined
 * through cp.async rings (src/passes/pipeline_loops.c, src/jit/gpu/async.c).
 *
 * Inputs are small integers (-4..4) in f16, so every partial sum is exact
 * in f32 and the result must match bit for bit on either device, whatever
 * order the tensor cores add in. Sizes are ragged in M, N and K (K smaller
 * than BK, K not a multiple of it, K a multiple; K = 0 leaves zeros), with
 * leading dimensions larger than the tile (multiples of 16: with K one
 * too, the GPU copies are 16-byte cp.async, else element by element),
 * f32 accumulation in 64x64x32
 * tiles with 4 warps and in 128x64x32 with 8; the output is poisoned
 * before each launch. A and B are loaded with other = 0, as the tutorial.
 * The loop's own num_stages (TJ_FOR_OPTS, Triton's tl.range(num_stages=))
 * runs too, against the launch's, and decides the PTX: 1 leaves no
 * cp.async where the launch asks for 3; 2 makes them where it asks for 1.
 * B stored [N, K] and read through tj_trans (Triton's tl.dot(a, b.T), as
 * its attention tutorial writes q k^T) runs too, in f16 and tf32, and B
 * stored [K, N] loaded as [BN, BK] tiles through its strides and
 * tj_trans: on sm_90a wgmma reads those rings as they were stored
 * (K-major, or for f16 N-major), where tf32 [K, N] keeps mma.sync, its
 * ring read into registers before the transpose.
 */
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

/* TRANS_B: 0, B [K, N] loaded [BK, BN]; 1, B stored [N, K], its [BN, BK]
 * tile through tj_trans; 2, B [K, N] loaded [BN, BK] through its
 * strides and tj_trans (the loads along N). */
#define PIPELINED_KERNEL(name, dt, zero, precision)                                                            \
    TJ_KERNEL(name,                                                                                            \
              TJ_PARAMS(TJ_PTR(a, dt), TJ_PTR(b, dt), TJ_PTR(c, f32), TJ_SCALAR(M, i32), TJ_SCALAR(N, i32),    \
                        TJ_SCALAR(K, i32), TJ_SCALAR(lda, i32), TJ_SCALAR(ldb, i32), TJ_SCALAR(ldc, i32)),     \
              TJ_CONSTS(BM, BN, BK, LOOP_STAGES, TRANS_B))                                                     \
    {                                                                                                          \
        tj_val offs_m = tj_add(tj_mul(tj_program_id(0), BM), tj_arange(0, BM));                                \
        tj_val offs_n = tj_add(tj_mul(tj_program_id(1), BN), tj_arange(0, BN));                                \
        tj_val offs_k = tj_arange(0, BK);                                                                      \
        tj_val in_m = tj_lt(tj_expand_dims(offs_m, 1), M), in_n = tj_lt(tj_expand_dims(offs_n, 0), N);         \
        tj_val a_ptrs = tj_add(a, tj_add(tj_mul(tj_expand_dims(offs_m, 1), lda), tj_expand_dims(offs_k, 0)));  \
        tj_val rows_n = TRANS_B == 1 ? tj_mul(tj_expand_dims(offs_n, 1), ldb) : tj_expand_dims(offs_n, 1);     \
        tj_val cols_k = TRANS_B == 1 ? tj_expand_dims(offs_k, 0) : tj_mul(tj_expand_dims(offs_k, 0), ldb);     \
        tj_val b_ptrs = TRANS_B ? tj_add(b, tj_add(rows_n, cols_k))                                            \
                                : tj_add(b, tj_add(tj_mul(tj_expand_dims(offs_k, 1), ldb), tj_expand_dims(offs_n, 0))); \
        tj_val acc = tj_zeros(TJ_SHAPE(BM, BN), TJ_F32);                                                       \
        TJ_FOR_OPTS(k, 0, K, BK, TJ_LOOP(.num_stages = (int)LOOP_STAGES), &acc, &a_ptrs, &b_ptrs) {            \
            tj_val ta = tj_load(a_ptrs, .mask = tj_and(in_m, tj_lt(tj_expand_dims(offs_k, 0), tj_sub(K, k))),  \
                                .other = zero);                                                                \
            tj_val tb = TRANS_B ? tj_trans(tj_load(b_ptrs,                                                     \
                                                   .mask = tj_and(tj_lt(tj_expand_dims(offs_k, 0), tj_sub(K, k)), \
                                                                  tj_trans(in_n)),                             \
                                                   .other = zero))                                             \
                                : tj_load(b_ptrs, .mask = tj_and(tj_lt(tj_expand_dims(offs_k, 1), tj_sub(K, k)), in_n), \
                                          .other = zero);                                                      \
            acc = tj_dot(ta, tb, acc, .input_precision = precision);                                           \
            a_ptrs = tj_add(a_ptrs, BK);                                                                       \
            b_ptrs = tj_add(b_ptrs, TRANS_B == 1 ? tj_i32(BK) : tj_mul(ldb, BK));                              \
        }                                                                                                      \
        tj_store(tj_add(c, tj_add(tj_mul(tj_expand_dims(offs_m, 1), ldc), tj_expand_dims(offs_n, 0))), acc,   \
                 .mask = tj_and(in_m, in_n));                                                                  \
    }
PIPELINED_KERNEL(matmul_pipelined, f16, tj_f16(0), TJ_PRECISION_IEEE)
PIPELINED_KERNEL(matmul_pipelined_tf32, f32, tj_const(0, TJ_F32), TJ_PRECISION_TF32)

/* C = A B for M x K x N in bm x 64 x 32 tiles, B as trans_b says
 * (PIPELINED_KERNEL); tf32: f32 operands at TF32 (else f16). */
static void run(tj_device *dev, int M, int N, int K, int bm, int warps, int stages, int loop_stages, int trans_b,
                int tf32)
{
    enum { BN = 64, BK = 32 };
    tj_dtype dt = tf32 ? TJ_F32 : TJ_F16;
    size_t es = tf32 ? 4 : 2;
    /* leading dimensions past the tile; multiples of 16, so that where K
     * is one too the copies are 16-byte cp.async (else element by element) */
    int lda = (K + 15) / 16 * 16 + 16, ldb = trans_b == 1 ? lda : (N + 15) / 16 * 16 + 16, ldc = N + 4;
    size_t na = (size_t)M * lda + 1, nb = (size_t)(trans_b == 1 ? N : K) * ldb + 1, nc = (size_t)M * ldc;
    void *a = calloc(na, es), *b = calloc(nb, es);
    float *want = calloc(nc ? nc : 1, 4), *got = calloc(nc ? nc : 1, 4);
    for (size_t i = 0; i < na; i++)
        tl_set(dt, a, i, tl_flt((double)tl_rand_range(-4, 4)));
    for (size_t i = 0; i < nb; i++)
        tl_set(dt, b, i, tl_flt((double)tl_rand_range(-4, 4)));
    for (int m = 0; m < M; m++)
        for (int n = 0; n < ldc; n++) {
            float s = 0;
            for (int k = 0; n < N && k < K; k++)
                s += (float)(tl_get(dt, a, (size_t)m * lda + k).f *
                             tl_get(dt, b, trans_b == 1 ? (size_t)n * ldb + k : (size_t)k * ldb + n).f);
            want[(size_t)m * ldc + n] = s;
        }
    tj_buffer ba = tl_upload(dev, a, na * es), bb = tl_upload(dev, b, nb * es), bc = tl_poisoned(dev, nc * 4);
    tj_arg args[] = {TJ_ARG_BUF(ba), TJ_ARG_BUF(bb), TJ_ARG_BUF(bc), TJ_ARG_I32(M), TJ_ARG_I32(N),
                     TJ_ARG_I32(K), TJ_ARG_I32(lda), TJ_ARG_I32(ldb), TJ_ARG_I32(ldc)};
    tj_launch_cfg cfg = {.grid = {(M + bm - 1) / bm, (N + BN - 1) / BN}, .num_warps = warps,
                         .num_stages = stages};
    static const char *const b_form[] = {"", ", B through tj_trans", ", B [K, N] loaded [BN, BK] through tj_trans"};
    char what[200];
    snprintf(what, sizeof what, "%s matmul %dx%dx%d, %dx%dx%d tiles, %d warps, num_stages %d%s%s",
             tf32 ? "tf32" : "f16", M, N, K, bm, BN, BK, warps, stages, loop_stages == 2 ? ", the loop's 2" : "",
             b_form[trans_b]);
    tj_status st = tj_launch(dev, tf32 ? matmul_pipelined_tf32 : matmul_pipelined, &cfg, args, 9,
                             (int64_t[]){bm, BN, BK, loop_stages, trans_b}, 5);
    if (!tl_launch_failed(st, what)) {
        tl_download(dev, bc, got, nc * 4);
        /* columns N..ldc are never stored: still poison */
        for (int m = 0; m < M; m++)
            for (int n = N; n < ldc; n++)
                memcpy(&want[(size_t)m * ldc + n], &got[(size_t)m * ldc + n], 4);
        int poison_ok = 1;
        for (int m = 0; m < M && poison_ok; m++)
            poison_ok = tl_poison_intact(got, ((size_t)m * ldc + N) * 4, ((size_t)m * ldc + ldc) * 4);
        if (!poison_ok)
            tap_diag("%s: a store past column N", what);
        tl_check(what, TJ_F32, got, want, nc, 0, 0);
    }
    tj_buffer_free(dev, ba);
    tj_buffer_free(dev, bb);
    tj_buffer_free(dev, bc);
    free(a), free(b), free(want), free(got);
}

int main(void)
{
    tj_device *dev = tl_setup("test_pipeline_matmul");
    static const int sizes[][3] = {{64, 64, 64}, {100, 70, 20}, {129, 65, 100}, {37, 130, 257},
                                   {200, 150, 96}, {16, 16, 0}};
    for (int stages = 1; stages <= 4; stages++)
        for (size_t s = 0; s < TL_COUNT(sizes); s++)
            run(dev, sizes[s][0], sizes[s][1], sizes[s][2], s % 2 ? 128 : 64, s % 2 ? 8 : 4, stages, 0, 0, 0);
    for (size_t s = 0; s < TL_COUNT(sizes); s++)
        run(dev, sizes[s][0], sizes[s][1], sizes[s][2], 64, 4, s % 2 ? 1 : 4, 2, 0, 0);
    /* through tj_trans: wgmma reads B's ring K-major on sm_90a (f16 stored
     * [N, K], tf32 too); stored [K, N] f16 N-major, tf32 keeps mma.sync */
    for (int tf32 = 0; tf32 <= 1; tf32++)
        for (int trans_b = 1; trans_b <= 2; trans_b++)
            for (size_t s = 0; s < TL_COUNT(sizes); s++)
                run(dev, sizes[s][0], sizes[s][1], sizes[s][2], s % 2 ? 128 : 64, s % 2 ? 8 : 4, s % 2 ? 2 : 3, 0,
                    trans_b, tf32);
    /* the PTX (the launch's default num_stages: 3) */
    int copies[3] = {0};
    for (int loop = 0; loop <= 2; loop++) {
        char *ptx = NULL;
        if (tj_kernel_ptx(matmul_pipelined, (int64_t[]){64, 64, 32, loop, 0}, 5, "sm_80", 4, &ptx) != TJ_OK)
            tap_diag("loop num_stages %d: %s", loop, tj_last_error());
        copies[loop] = ptx ? tl_count(ptx, "cp.async.") : -1;
        free(ptx);
    }
    tap_ok(copies[0] > 0 && copies[1] == 0 && copies[2] > 0,
           "PTX: cp.async at the launch's 3 stages (%d), none for the loop's 1 (%d), some for its 2 (%d)",
           copies[0], copies[1], copies[2]);
    /* sm_90a through tj_trans: wgmma but for tf32 B [K, N] (mma.sync); with
     * TJIT_PTXAS (make check) each PTX assembles without a warning */
    int forms_ok = 1;
    for (int tf32 = 0; tf32 <= 1; tf32++)
        for (int trans_b = 1; trans_b <= 2; trans_b++) {
            char *ptx = NULL;
            int want_wgmma = !(tf32 && trans_b == 2);
            if (tj_kernel_ptx(tf32 ? matmul_pipelined_tf32 : matmul_pipelined, (int64_t[]){64, 64, 32, 0, trans_b},
                              5, "sm_90a", 4, &ptx) != TJ_OK)
                tap_diag("sm_90a, %s, B mode %d: %s", tf32 ? "tf32" : "f16", trans_b, tj_last_error());
            int wgmma = ptx ? tl_count(ptx, "wgmma.mma_async") : -1, mma = ptx ? tl_count(ptx, "mma.sync") : -1;
            if (!ptx || (want_wgmma ? wgmma == 0 || mma : !mma || wgmma)) {
                tap_diag("sm_90a, %s, B mode %d: %d wgmma.mma_async, %d mma.sync", tf32 ? "tf32" : "f16", trans_b,
                         wgmma, mma);
                forms_ok = 0;
            }
            free(ptx);
        }
    tap_ok(forms_ok, "PTX for sm_90a, B through tj_trans: wgmma for f16 (B stored [N, K] or [K, N]) and tf32 "
                     "[N, K], mma.sync for tf32 [K, N]");
    char *text = NULL;
    tj_status st = tj_kernel_ir(matmul_pipelined, (int64_t[]){64, 64, 32, 9, 0}, 5, &text);
    free(text);
    tap_ok(st == TJ_ERR_INVALID_ARG && tl_error_mentions("matmul_pipelined", "test_pipeline_matmul.c:",
                                                         "'for'", ".num_stages 9 is not between 1 and 8", NULL),
           "a loop's .num_stages of 9 is refused, naming the kernel, the loop and its line");
    tj_device_close(dev);
    return tap_done();
}
