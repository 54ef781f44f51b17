/* SPDX-License-Identifier: MIT */
/*
 * test_tma.c — the block-pointer matmul at the edges of Hopper's TMA path,
 * checked element by element against C.
 *
 * On an H200 (tests/gpu/test_tma.gpu) a block-pointer load feeding a
 * wgmma dot is a TMA copy wherever the launch's specialization allows it
 * (src/passes/tma.c): so these problems take each way through it —
 *  - ragged M, N and K with strides that are multiples of 16: the boxes
 *    leave the tensor on three sides and the copy engine fills zeros;
 *  - K smaller than one block, and M = 1;
 *  - K = 0: a map of extent 0 cannot be encoded, so the launch falls back
 *    to the variant without TMA (C is all zeros);
 *  - N = 100: B's row stride is no multiple of 16, so B is copied by the
 *    threads while A keeps TMA;
 *  - the same problem twice with other extents (the encoder's cache must
 *    not hand back the first launch's maps);
 *  - a long K (37 iterations: each slot's full and empty phases wrap many
 *    times) with warp specialization forced on and off (on the CPU the
 *    option is ignored), and an option that is no tj_warp_specialize;
 *  - the persistent kernel (a tile loop around the K loop) with fewer
 *    programs than tiles, specialized and not, and with B by threads;
 *  - 16 warps in 256x128 tiles (four consumer warpgroups and a producer:
 *    an earlier register budget hung the H200 in setmaxnreg.inc);
 *  - C is a TMA store (f32, clipped at the ragged edges) where N is a
 *    multiple of 16 elements (the engine stores whole 16-byte chunks:
 *    N = 100 keeps the threads' store);
 *  - A as a view, K = 100 of rows of 112: A's boxes end inside a 16-byte
 *    chunk, and its padding columns hold values that must not be read;
 *  - the kernel made persistent by the launch (src/passes/persistent.c):
 *    forced on and by default, with more tiles (160) than the H200 holds
 *    programs at once (132), specialized and not, and with B by threads;
 *    its C a TMA store staged two boxes at a time (four boxes of a 128x128
 *    f32 block; eight of a 128x256 one, 176 tiles, whose last column of
 *    tiles has boxes wholly past N: N = 2576, a multiple of 16 elements,
 *    which the specialization needs to take C's and B's strides for TMA —
 *    with the threads' store instead, its conversion would not fit beside
 *    the rings);
 *    with 16 warps at 256x128 its C staged in four bands of 64 rows, a
 *    consumer warpgroup each (M = 850: the last row of tiles ends inside
 *    its second band, so the third and fourth are wholly past M);
 *    every other case here is launched with it off, as written;
 *  - a batch of problems through 3-D descriptors (batched_desc.h): boxes
 *    of a 3-D tensor that must read zeros past a problem's last row, not
 *    the next problem's, and a 3-D TMA store that must not write there;
 *  - B stored N x K, its [BN, BK] blocks read through tj_trans (Triton's
 *    tl.dot(a, b.T)): wgmma reads B's ring K-major, as TMA stored it —
 *    ragged, then made persistent and warp-specialized.
 * Inputs are small integers (exact in f16 and f32 sums), C is poisoned
 * with NaN; on the CPU the same kernel and checks run without TMA.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "testlib.h"
#include "../samples/matmul_kernel.h"
#include "batched_desc.h"

MATMUL_BODY_KERNEL(tma_matmul, f16, f32, TJ_F32, matmul_block_ptr_body)

/* Persistent: programs walk the tiles (samples/matmul_kernel.h). */
MATMUL_BODY_KERNEL(tma_persistent, f16, f32, TJ_F32, matmul_persistent_body)

/* The block-pointer kernel with B stored N x K (strides stride_bn,
 * stride_bk), each [BN, BK] block transposed by tj_trans for the dot. */
static void matmul_bt_body(tj_val a, tj_val b, tj_val c, tj_val M, tj_val N, tj_val K, tj_val stride_am,
                           tj_val stride_ak, tj_val stride_bk, tj_val stride_bn, tj_val stride_cm, tj_val stride_cn,
                           int64_t BM, int64_t BN, int64_t BK, int64_t group_m, tj_input_precision precision,
                           tj_dtype c_dtype)
{
    (void)group_m;
    tj_val pid_m = tj_floordiv(tj_program_id(0), tj_cdiv(N, BN)), pid_n = tj_mod(tj_program_id(0), tj_cdiv(N, BN));
    tj_val row0 = tj_mul(pid_m, BM), col0 = tj_mul(pid_n, BN);
    tj_val a_block = tj_make_block_ptr(a, TJ_VALS(M, K), TJ_VALS(stride_am, stride_ak), TJ_VALS(row0, 0),
                                       TJ_SHAPE(BM, BK), TJ_SHAPE(1, 0));
    tj_val b_block = tj_make_block_ptr(b, TJ_VALS(N, K), TJ_VALS(stride_bn, stride_bk), TJ_VALS(col0, 0),
                                       TJ_SHAPE(BN, BK), TJ_SHAPE(1, 0));
    tj_val acc = tj_zeros(TJ_SHAPE(BM, BN), TJ_F32);
    TJ_FOR(k, 0, tj_cdiv(K, BK), 1, &acc, &a_block, &b_block) {
        tj_val a_tile = tj_load(a_block, .boundary_check = TJ_DIMS(0, 1), .padding = TJ_PADDING_ZERO);
        tj_val b_tile = tj_load(b_block, .boundary_check = TJ_DIMS(0, 1), .padding = TJ_PADDING_ZERO);
        acc = tj_dot(a_tile, tj_trans(b_tile), acc, .input_precision = precision);
        a_block = tj_advance(a_block, TJ_VALS(0, BK));
        b_block = tj_advance(b_block, TJ_VALS(0, BK));
    }
    tj_val c_block = tj_make_block_ptr(c, TJ_VALS(M, N), TJ_VALS(stride_cm, stride_cn), TJ_VALS(row0, col0),
                                       TJ_SHAPE(BM, BN), TJ_SHAPE(1, 0));
    tj_store(c_block, tj_cast(acc, c_dtype), .boundary_check = TJ_DIMS(0, 1));
}
MATMUL_BODY_KERNEL(tma_matmul_bt, f16, f32, TJ_F32, matmul_bt_body)

static tj_device *dev;
/* B stored N x K and read through tj_trans (tma_matmul_bt), where a case says. */
static int b_trans;
/* The launches' tj_persistent: off but where a case says (run_persistent). */
static tj_persistent persistence = TJ_PERSISTENT_OFF;
/* The launches' stages: 3 but where a case says (run_persistent). */
static int stages = 3;

/* The tile and the warps of a launch. */
typedef struct tiling {
    int bm, bn, warps;
} tiling;
static const tiling tile_128 = {128, 128, 8};

/* C = A B for A M x K (row stride lda, K where 0: the columns past K are
 * random values the product must not read), B K x N (row stride N), in
 * tiles of t, launched with warp specialization ws; programs > 0: the
 * persistent kernel on that many programs. */
static int run_view(int m, int n, int k, int lda, tiling t, tj_warp_specialize ws, int programs,
                    const char *what)
{
    lda = lda ? lda : k;
    size_t a_count = (size_t)m * (size_t)(lda ? lda : 1), b_count = (size_t)(k ? k : 1) * (size_t)n;
    uint16_t *ha = malloc(a_count * 2), *hb = malloc(b_count * 2);
    float *hc = malloc((size_t)m * n * 4);
    int8_t *ia = malloc(a_count), *ib = malloc(b_count);
    tl_small_int_f16(a_count, ia, ha);
    tl_small_int_f16(b_count, ib, hb);
    memset(hc, 0xff, (size_t)m * n * 4);
    tj_buffer a, b, c;
    int ok = tj_buffer_alloc(dev, a_count * 2, &a) == TJ_OK && tj_buffer_alloc(dev, b_count * 2, &b) == TJ_OK &&
             tj_buffer_alloc(dev, (size_t)m * n * 4, &c) == TJ_OK;
    ok = ok && tj_buffer_write(dev, a, 0, ha, a_count * 2) == TJ_OK &&
         tj_buffer_write(dev, b, 0, hb, b_count * 2) == TJ_OK && tj_buffer_write(dev, c, 0, hc, (size_t)m * n * 4) == TJ_OK;
    int64_t consts[3] = {t.bm, t.bn, 64};
    tj_launch_cfg cfg = {.grid = {programs ? programs : (m + t.bm - 1) / t.bm * ((n + t.bn - 1) / t.bn)},
                         .num_warps = t.warps,
                         .num_stages = stages, .warp_specialize = ws, .persistent = persistence};
    tj_arg args[12] = {TJ_ARG_BUF(a), TJ_ARG_BUF(b), TJ_ARG_BUF(c), TJ_ARG_I32(m), TJ_ARG_I32(n), TJ_ARG_I32(k),
                       TJ_ARG_I32(lda), TJ_ARG_I32(1), TJ_ARG_I32(n), TJ_ARG_I32(1), TJ_ARG_I32(n), TJ_ARG_I32(1)};
    if (b_trans) { /* B uploaded N x K, its strides swapped */
        uint16_t *hbt = malloc(b_count * 2);
        for (int i = 0; i < k; i++)
            for (int j = 0; j < n; j++)
                hbt[(size_t)j * k + i] = hb[(size_t)i * n + j];
        ok = ok && tj_buffer_write(dev, b, 0, hbt, b_count * 2) == TJ_OK;
        free(hbt);
        args[8] = TJ_ARG_I32(1), args[9] = TJ_ARG_I32(k);
    }
    const tj_kernel *kernel = b_trans ? tma_matmul_bt : programs ? tma_persistent : tma_matmul;
    tj_status st = ok ? tj_launch(dev, kernel, &cfg, args, 12, consts, 3) : TJ_ERR_LAUNCH;
    if (st == TJ_OK)
        st = tj_buffer_read(dev, c, 0, hc, (size_t)m * n * 4);
    long bad = st == TJ_OK ? tl_first_wrong_product(ia, ib, hc, m, n, k, lda) : -1;
    if (st != TJ_OK)
        tap_diag("%s: %s: %s", what, tj_status_name(st), tj_last_error());
    else if (bad >= 0)
        tap_diag("%s: C[%ld][%ld] = %g", what, bad / n, bad % n, hc[bad]);
    tj_buffer_free(dev, a);
    tj_buffer_free(dev, b);
    tj_buffer_free(dev, c);
    free(ha), free(hb), free(hc), free(ia), free(ib);
    return tap_ok(ok && st == TJ_OK && bad < 0, "%s: %d x %d x %d", what, m, n, k);
}

static int run_kernel(int m, int n, int k, tiling t, tj_warp_specialize ws, int programs, const char *what)
{
    return run_view(m, n, k, 0, t, ws, programs, what);
}

/* The block-pointer kernel, one program per tile, made persistent as p
 * says, at num_stages s. */
static int run_persistent_at(int m, int n, int k, tiling t, int s, tj_persistent p, tj_warp_specialize ws,
                             const char *what)
{
    persistence = p, stages = s;
    int ok = run_kernel(m, n, k, t, ws, 0, what);
    persistence = TJ_PERSISTENT_OFF, stages = 3;
    return ok;
}

static int run_persistent(int m, int n, int k, tiling t, tj_persistent p, tj_warp_specialize ws, const char *what)
{
    return run_persistent_at(m, n, k, t, 3, p, ws, what);
}

static int run(int m, int n, int k, const char *what)
{
    return run_kernel(m, n, k, tile_128, TJ_WARP_SPECIALIZE_DEFAULT, 0, what);
}

/* C[z] = A[z] B[z] for z < nz through 3-D descriptors (batched_desc.h),
 * the problems stored back to back; C poisoned with NaN, checked whole. */
static int run_batched(int nz, int m, int n, int k, const char *what)
{
    size_t a_count = (size_t)nz * m * k, b_count = (size_t)nz * k * n, c_count = (size_t)nz * m * n;
    uint16_t *ha = malloc(a_count * 2), *hb = malloc(b_count * 2);
    float *hc = malloc(c_count * 4);
    int8_t *ia = malloc(a_count), *ib = malloc(b_count);
    tl_small_int_f16(a_count, ia, ha);
    tl_small_int_f16(b_count, ib, hb);
    memset(hc, 0xff, c_count * 4);
    tj_buffer a, b, c;
    int ok = tj_buffer_alloc(dev, a_count * 2, &a) == TJ_OK && tj_buffer_alloc(dev, b_count * 2, &b) == TJ_OK &&
             tj_buffer_alloc(dev, c_count * 4, &c) == TJ_OK;
    ok = ok && tj_buffer_write(dev, a, 0, ha, a_count * 2) == TJ_OK &&
         tj_buffer_write(dev, b, 0, hb, b_count * 2) == TJ_OK && tj_buffer_write(dev, c, 0, hc, c_count * 4) == TJ_OK;
    int64_t consts[3] = {128, 128, 64};
    tj_launch_cfg cfg = {.grid = {(m + 127) / 128, (n + 127) / 128, nz}, .num_warps = 8, .num_stages = 3};
    tj_arg args[BMM_NPARAMS] = {TJ_ARG_BUF(a), TJ_ARG_BUF(b), TJ_ARG_BUF(c), TJ_ARG_I32(nz), TJ_ARG_I32(m),
                                TJ_ARG_I32(n), TJ_ARG_I32(k), TJ_ARG_I32(m * k), TJ_ARG_I32(k * n),
                                TJ_ARG_I32(m * n)};
    tj_status st = ok ? tj_launch(dev, bmm_desc, &cfg, args, BMM_NPARAMS, consts, 3) : TJ_ERR_LAUNCH;
    if (st == TJ_OK)
        st = tj_buffer_read(dev, c, 0, hc, c_count * 4);
    long bad = -1;
    for (int z = 0; st == TJ_OK && z < nz && bad < 0; z++) {
        long at = tl_first_wrong_product(ia + (size_t)z * m * k, ib + (size_t)z * k * n, hc + (size_t)z * m * n, m,
                                         n, k, k);
        bad = at < 0 ? -1 : (long)z * m * n + at;
    }
    if (st != TJ_OK)
        tap_diag("%s: %s: %s", what, tj_status_name(st), tj_last_error());
    else if (bad >= 0)
        tap_diag("%s: C[%ld][%ld][%ld] = %g", what, bad / ((long)m * n), bad / n % m, bad % n, hc[bad]);
    tj_buffer_free(dev, a);
    tj_buffer_free(dev, b);
    tj_buffer_free(dev, c);
    free(ha), free(hb), free(hc), free(ia), free(ib);
    return tap_ok(ok && st == TJ_OK && bad < 0, "%s: %d x (%d x %d x %d)", what, nz, m, n, k);
}

static void bad_option(void)
{
    tj_buffer buf;
    tj_status st = tj_buffer_alloc(dev, 4096, &buf);
    int64_t consts[3] = {128, 128, 64};
    tj_launch_cfg cfg = {.grid = {1}, .num_warps = 8, .warp_specialize = (tj_warp_specialize)7};
    tj_arg args[12] = {TJ_ARG_BUF(buf), TJ_ARG_BUF(buf), TJ_ARG_BUF(buf), TJ_ARG_I32(16), TJ_ARG_I32(16),
                       TJ_ARG_I32(16), TJ_ARG_I32(16), TJ_ARG_I32(1), TJ_ARG_I32(16), TJ_ARG_I32(1),
                       TJ_ARG_I32(16), TJ_ARG_I32(1)};
    if (st == TJ_OK)
        st = tj_launch(dev, tma_matmul, &cfg, args, 12, consts, 3);
    tap_ok(st == TJ_ERR_INVALID_ARG && strstr(tj_last_error(), "warp_specialize = 7") &&
               strstr(tj_last_error(), "tma_matmul"),
           "a warp_specialize that is no tj_warp_specialize is refused, naming the kernel");
    tj_buffer_free(dev, buf);
}

int main(void)
{
    dev = tl_setup("test_tma");
    tap_plan(27);
    run(200, 272, 208, "ragged M, N and K, strides multiples of 16 (zeros from the copy engine)");
    run(1, 128, 16, "one row, K below one block");
    run(300, 160, 0, "K = 0 (a map of extent 0: the variant without TMA)");
    run(130, 100, 96, "N = 100 (B's row stride no multiple of 16: B by threads, A by TMA)");
    run(256, 256, 256, "256^3");
    run(256, 256, 320, "the same shapes but K (no stale tensor map)");
    run(96, 144, 64, "M and N below one block");
    run_kernel(256, 384, 37 * 64, tile_128, TJ_WARP_SPECIALIZE_ON, 0, "warp-specialized, 37 iterations (phases wrap)");
    run_kernel(256, 384, 37 * 64, tile_128, TJ_WARP_SPECIALIZE_OFF, 0, "not warp-specialized, 37 iterations");
    run_kernel(200, 272, 208, tile_128, TJ_WARP_SPECIALIZE_ON, 4,
               "persistent, 4 programs for 6 ragged tiles, specialized");
    run_kernel(200, 272, 208, tile_128, TJ_WARP_SPECIALIZE_OFF, 4,
               "persistent, 4 programs for 6 ragged tiles, not specialized");
    run_kernel(520, 384, 11 * 64, tile_128, TJ_WARP_SPECIALIZE_DEFAULT, 5, "persistent, 5 programs for 15 tiles");
    run_kernel(130, 100, 96, tile_128, TJ_WARP_SPECIALIZE_DEFAULT, 2, "persistent, B by threads (no TMA for B)");
    run_kernel(300, 208, 9 * 64, (tiling){256, 128, 16}, TJ_WARP_SPECIALIZE_ON, 0,
               "16 warps, 256x128 tiles (four consumer warpgroups and a producer)");
    run_view(200, 144, 100, 112, tile_128, TJ_WARP_SPECIALIZE_DEFAULT, 0,
             "A a view: K = 100 of rows of 112 (its boxes end inside a 16-byte chunk; C's N = 144 a TMA store)");
    run_view(130, 100, 64, 0, tile_128, TJ_WARP_SPECIALIZE_DEFAULT, 0,
             "N = 100 f32 wide C (no multiple of 16 elements: the threads store C)");
    run_persistent(2000, 1200, 200, tile_128, TJ_PERSISTENT_ON, TJ_WARP_SPECIALIZE_DEFAULT,
                   "made persistent: 160 ragged tiles, specialized (C staged two boxes of four at a time)");
    run_persistent(2000, 1200, 200, tile_128, TJ_PERSISTENT_ON, TJ_WARP_SPECIALIZE_OFF,
                   "made persistent: 160 ragged tiles, not specialized");
    run_persistent(2000, 1200, 200, tile_128, TJ_PERSISTENT_DEFAULT, TJ_WARP_SPECIALIZE_DEFAULT,
                   "persistent by default (on sm_90a): 160 ragged tiles");
    run_persistent(2000, 2576, 192, (tiling){128, 256, 8}, TJ_PERSISTENT_ON, TJ_WARP_SPECIALIZE_DEFAULT,
                   "made persistent at 128x256 (3 stages): 176 ragged tiles, C staged two boxes of eight at a time "
                   "(the last column's first box half past N, the others wholly)");
    run_persistent(1300, 100, 96, tile_128, TJ_PERSISTENT_ON, TJ_WARP_SPECIALIZE_DEFAULT,
                   "made persistent, B by threads (no TMA for B)");
    run_persistent_at(850, 400, 9 * 64, (tiling){256, 128, 16}, 2, TJ_PERSISTENT_ON, TJ_WARP_SPECIALIZE_DEFAULT,
                      "made persistent with 16 warps at 256x128 (2 stages): C staged in four bands of 64 rows, "
                      "one per consumer warpgroup, the last tile row's bands partly or wholly past M");
    run_batched(3, 200, 136, 72, "3-D descriptors, ragged M, N, K (each problem's edge reads zeros, stores clip)");
    run_batched(2, 128, 128, 100, "3-D descriptors, K = 100 (A's rows not 16-byte strides: A by threads)");
    b_trans = 1;
    run(200, 272, 208, "B stored N x K through tj_trans, ragged M, N and K (zeros from the copy engine)");
    run_persistent(2000, 1200, 200, tile_128, TJ_PERSISTENT_ON, TJ_WARP_SPECIALIZE_DEFAULT,
                   "B stored N x K through tj_trans, made persistent: 160 ragged tiles, specialized");
    b_trans = 0;
    bad_option();
    tj_device_close(dev);
    return tap_done();
}
