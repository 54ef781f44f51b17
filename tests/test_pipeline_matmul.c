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
 * its attention tutorial writes q k^T) runs too: on sm_90a wgmma reads
 * that ring K-major, as it was stored.
 */
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

TJ_KERNEL(matmul_pipelined,
          TJ_PARAMS(TJ_PTR(a, f16), TJ_PTR(b, f16), TJ_PTR(c, f32), TJ_SCALAR(M, i32), TJ_SCALAR(N, i32),
                    TJ_SCALAR(K, i32), TJ_SCALAR(lda, i32), TJ_SCALAR(ldb, i32), TJ_SCALAR(ldc, i32)),
          TJ_CONSTS(BM, BN, BK, LOOP_STAGES, TRANS_B))
{
    tj_val offs_m = tj_add(tj_mul(tj_program_id(0), BM), tj_arange(0, BM));
    tj_val offs_n = tj_add(tj_mul(tj_program_id(1), BN), tj_arange(0, BN));
    tj_val offs_k = tj_arange(0, BK);
    tj_val in_m = tj_lt(tj_expand_dims(offs_m, 1), M), in_n = tj_lt(tj_expand_dims(offs_n, 0), N);
    tj_val a_ptrs = tj_add(a, tj_add(tj_mul(tj_expand_dims(offs_m, 1), lda), tj_expand_dims(offs_k, 0)));
    /* B's tile: [BK, BN], or stored [N, K] its [BN, BK] */
    tj_val b_ptrs = TRANS_B ? tj_add(b, tj_add(tj_mul(tj_expand_dims(offs_n, 1), ldb), tj_expand_dims(offs_k, 0)))
                            : tj_add(b, tj_add(tj_mul(tj_expand_dims(offs_k, 1), ldb), tj_expand_dims(offs_n, 0)));
    tj_val acc = tj_zeros(TJ_SHAPE(BM, BN), TJ_F32);
    TJ_FOR_OPTS(k, 0, K, BK, TJ_LOOP(.num_stages = (int)LOOP_STAGES), &acc, &a_ptrs, &b_ptrs) {
        tj_val ta = tj_load(a_ptrs, .mask = tj_and(in_m, tj_lt(tj_expand_dims(offs_k, 0), tj_sub(K, k))),
                            .other = tj_f16(0));
        tj_val tb = TRANS_B ? tj_trans(tj_load(b_ptrs, .mask = tj_and(tj_lt(tj_expand_dims(offs_k, 0), tj_sub(K, k)),
                                                                      tj_trans(in_n)),
                                               .other = tj_f16(0)))
                            : tj_load(b_ptrs, .mask = tj_and(tj_lt(tj_expand_dims(offs_k, 1), tj_sub(K, k)), in_n),
                                      .other = tj_f16(0));
        acc = tj_dot(ta, tb, acc);
        a_ptrs = tj_add(a_ptrs, BK);
        b_ptrs = tj_add(b_ptrs, TRANS_B ? tj_i32(BK) : tj_mul(ldb, BK));
    }
    tj_store(tj_add(c, tj_add(tj_mul(tj_expand_dims(offs_m, 1), ldc), tj_expand_dims(offs_n, 0))), acc,
             .mask = tj_and(in_m, in_n));
}

static void run(tj_device *dev, int M, int N, int K, int bm, int warps, int stages, int loop_stages, int trans_b)
{
    enum { BN = 64, BK = 32 };
    /* leading dimensions past the tile; multiples of 16, so that where K
     * is one too the copies are 16-byte cp.async (else element by element) */
    int lda = (K + 15) / 16 * 16 + 16, ldb = trans_b ? lda : (N + 15) / 16 * 16 + 16, ldc = N + 4;
    size_t na = (size_t)M * lda + 1, nb = (size_t)(trans_b ? N : K) * ldb + 1, nc = (size_t)M * ldc;
    uint16_t *a = calloc(na, 2), *b = calloc(nb, 2);
    float *want = calloc(nc ? nc : 1, 4), *got = calloc(nc ? nc : 1, 4);
    for (size_t i = 0; i < na; i++)
        tl_set(TJ_F16, a, i, tl_flt((double)tl_rand_range(-4, 4)));
    for (size_t i = 0; i < nb; i++)
        tl_set(TJ_F16, b, i, tl_flt((double)tl_rand_range(-4, 4)));
    for (int m = 0; m < M; m++)
        for (int n = 0; n < ldc; n++) {
            float s = 0;
            for (int k = 0; n < N && k < K; k++)
                s += (float)(tl_get(TJ_F16, a, (size_t)m * lda + k).f *
                             tl_get(TJ_F16, b, trans_b ? (size_t)n * ldb + k : (size_t)k * ldb + n).f);
            want[(size_t)m * ldc + n] = s;
        }
    tj_buffer ba = tl_upload(dev, a, na * 2), bb = tl_upload(dev, b, nb * 2), bc = tl_poisoned(dev, nc * 4);
    tj_arg args[] = {TJ_ARG_BUF(ba), TJ_ARG_BUF(bb), TJ_ARG_BUF(bc), TJ_ARG_I32(M), TJ_ARG_I32(N),
                     TJ_ARG_I32(K), TJ_ARG_I32(lda), TJ_ARG_I32(ldb), TJ_ARG_I32(ldc)};
    tj_launch_cfg cfg = {.grid = {(M + bm - 1) / bm, (N + BN - 1) / BN}, .num_warps = warps,
                         .num_stages = stages};
    char what[160];
    snprintf(what, sizeof what, "matmul %dx%dx%d, %dx%dx%d tiles, %d warps, num_stages %d%s%s", M, N, K, bm,
             BN, BK, warps, stages, loop_stages == 2 ? ", the loop's 2" : "", trans_b ? ", B through tj_trans" : "");
    tj_status st =
        tj_launch(dev, matmul_pipelined, &cfg, args, 9, (int64_t[]){bm, BN, BK, loop_stages, trans_b}, 5);
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
            run(dev, sizes[s][0], sizes[s][1], sizes[s][2], s % 2 ? 128 : 64, s % 2 ? 8 : 4, stages, 0, 0);
    for (size_t s = 0; s < TL_COUNT(sizes); s++)
        run(dev, sizes[s][0], sizes[s][1], sizes[s][2], 64, 4, s % 2 ? 1 : 4, 2, 0);
    for (size_t s = 0; s < TL_COUNT(sizes); s++)
        run(dev, sizes[s][0], sizes[s][1], sizes[s][2], s % 2 ? 128 : 64, s % 2 ? 8 : 4, s % 2 ? 2 : 3, 0, 1);
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
    char *text = NULL;
    tj_status st = tj_kernel_ir(matmul_pipelined, (int64_t[]){64, 64, 32, 9, 0}, 5, &text);
    free(text);
    tap_ok(st == TJ_ERR_INVALID_ARG && tl_error_mentions("matmul_pipelined", "test_pipeline_matmul.c:",
                                                         "'for'", ".num_stages 9 is not between 1 and 8", NULL),
           "a loop's .num_stages of 9 is refused, naming the kernel, the loop and its line");
    tj_device_close(dev);
    return tap_done();
}
