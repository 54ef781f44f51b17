/* SPDX-License-Identifier: MIT */
/*
 * test_tensor_desc.c — tensor descriptors (tj_make_tensor_descriptor,
 * tj_descriptor_load, tj_descriptor_store) on the CPU, and on the GPU as
 * tests/gpu/test_tensor_desc.gpu.
 *
 * A descriptor is Triton's tl.make_tensor_descriptor: a strided tensor
 * whose last dimension is contiguous, read and written in blocks at any
 * offsets, every dimension bounds-checked (reads outside give 0, writes
 * outside are dropped). tjit builds it from block pointers, so these tests
 * check what the sugar promises rather than how the lowering does it:
 *
 *  - a 2-D tiled copy of a ragged matrix (extents that are no multiple of
 *    the block) between views with row strides larger than the row, the
 *    source read at offsets shifted by a random amount in both directions
 *    (negative offsets too), into a poisoned destination whose gaps
 *    between rows and guard rows after the end must stay poison;
 *  - the block's padding seen directly: each block of a grid wider than
 *    the matrix written whole into a padded output, 0 outside the source;
 *  - small matmuls (tj_dot over a TJ_FOR on K) of ragged M, N and K, f32
 *    through views with gaps and f16 whose rows suit Hopper's TMA: the
 *    zeros read past K are what makes the last partial step right;
 *  - 1-D (i32, the descriptor chosen by a TJ_IF, so it is carried), 3-D
 *    and 4-D (the largest rank) copies through strided views;
 *  - the IR: the descriptor ops are block pointer ops (no new opcode);
 *  - PTX for sm_80 and sm_90 of every kernel (make check assembles it with
 *    ptxas where configure found it), and sm_90a of the matmul; an f16
 *    matmul's descriptors taking Hopper's TMA path (bulk tensor copies);
 *  - bad programs — a last stride that is no constant 1, offsets of the
 *    wrong count or type, a base that is no scalar pointer, a descriptor
 *    operation on a plain pointer, a stored tile of the wrong shape — each
 *    failing with its status and a message that names the kernel, the op
 *    and the line.
 *
 * Inputs are random (the seed is printed; TJ_TEST_SEED replays it), outputs
 * poisoned, and every element is compared with what C computes.
 */
#include "testlib.h"

static tj_device *dev;

/* ---- kernels --------------------------------------------------------------- */

/* dst[i, j] = src[i + di, j + dj] (0 where that is outside src) for the
 * block of program (pid0, pid1); both M x N with row strides lds, ldd. */
TJ_KERNEL(td_copy, TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(M, i32),
                             TJ_SCALAR(N, i32), TJ_SCALAR(lds, i32), TJ_SCALAR(ldd, i32),
                             TJ_SCALAR(di, i32), TJ_SCALAR(dj, i32)),
          TJ_CONSTS(BM, BN))
{
    tj_val o0 = tj_mul(tj_program_id(0), BM), o1 = tj_mul(tj_program_id(1), BN);
    tj_val a = tj_make_tensor_descriptor(src, TJ_VALS(M, N), TJ_VALS(lds, 1), TJ_SHAPE(BM, BN));
    tj_val b = tj_make_tensor_descriptor(dst, TJ_VALS(M, N), TJ_VALS(ldd, 1), TJ_SHAPE(BM, BN));
    tj_val x = tj_descriptor_load(a, TJ_VALS(tj_add(o0, di), tj_add(o1, dj)));
    tj_descriptor_store(b, TJ_VALS(o0, o1), x);
}

/* The block of program (pid0, pid1) of src (M x N, row stride ld), whole,
 * into dst: the grid's full extent, row-major, the last stride tj_i64(1). */
TJ_KERNEL(td_pad, TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(M, i32),
                            TJ_SCALAR(N, i32), TJ_SCALAR(ld, i32)),
          TJ_CONSTS(BM, BN))
{
    tj_val o0 = tj_mul(tj_program_id(0), BM), o1 = tj_mul(tj_program_id(1), BN);
    tj_val a = tj_make_tensor_descriptor(src, TJ_VALS(M, N), TJ_VALS(ld, tj_i64(1)),
                                         TJ_SHAPE(BM, BN));
    tj_val rows = tj_mul(tj_num_programs(0), BM), width = tj_mul(tj_num_programs(1), BN);
    tj_val b = tj_make_tensor_descriptor(dst, TJ_VALS(rows, width), TJ_VALS(width, 1),
                                         TJ_SHAPE(BM, BN));
    tj_descriptor_store(b, TJ_VALS(o0, o1), tj_descriptor_load(a, TJ_VALS(o0, o1)));
}

/* c = a @ b for the block at rows pm, columns pn: a M x K (row stride
 * lda), b K x N (ldb), c M x N (ldc). */
static void td_matmul_body(tj_val a, tj_val b, tj_val c, tj_val M, tj_val N, tj_val K, tj_val lda,
                           tj_val ldb, tj_val ldc, tj_val pm, tj_val pn, int64_t BM, int64_t BN, int64_t BK)
{
    tj_val da = tj_make_tensor_descriptor(a, TJ_VALS(M, K), TJ_VALS(lda, 1), TJ_SHAPE(BM, BK));
    tj_val db = tj_make_tensor_descriptor(b, TJ_VALS(K, N), TJ_VALS(ldb, 1), TJ_SHAPE(BK, BN));
    tj_val dc = tj_make_tensor_descriptor(c, TJ_VALS(M, N), TJ_VALS(ldc, 1), TJ_SHAPE(BM, BN));
    tj_val acc = tj_zeros(TJ_SHAPE(BM, BN), TJ_F32);
    TJ_FOR(k, 0, tj_cdiv(K, BK), 1, &acc) {
        tj_val kk = tj_mul(k, BK);
        acc = tj_dot(tj_descriptor_load(da, TJ_VALS(pm, kk)),
                     tj_descriptor_load(db, TJ_VALS(kk, pn)), acc);
    }
    tj_descriptor_store(dc, TJ_VALS(pm, pn), acc);
}

TJ_KERNEL(td_matmul, TJ_PARAMS(TJ_PTR(a, f32), TJ_PTR(b, f32), TJ_PTR(c, f32),
                               TJ_SCALAR(M, i32), TJ_SCALAR(N, i32), TJ_SCALAR(K, i32),
                               TJ_SCALAR(lda, i32), TJ_SCALAR(ldb, i32), TJ_SCALAR(ldc, i32)),
          TJ_CONSTS(BM, BN, BK))
{
    td_matmul_body(a, b, c, M, N, K, lda, ldb, ldc, tj_mul(tj_program_id(0), BM), tj_mul(tj_program_id(1), BN),
                   BM, BN, BK);
}

/* The same in f16 with unit last strides only, as Hopper's TMA reads it. */
TJ_KERNEL(td_matmul_f16, TJ_PARAMS(TJ_PTR(a, f16), TJ_PTR(b, f16), TJ_PTR(c, f32),
                                   TJ_SCALAR(M, i32), TJ_SCALAR(N, i32), TJ_SCALAR(K, i32)),
          TJ_CONSTS(BM, BN, BK))
{
    td_matmul_body(a, b, c, M, N, K, K, N, N, tj_mul(tj_program_id(1), BM), tj_mul(tj_program_id(0), BN),
                   BM, BN, BK);
}

/* dst[i] = 3 * x[i] - 1 for i < N, x = src, or alt where sel > 0 (a TJ_IF
 * that carries the descriptor). */
TJ_KERNEL(td_vec, TJ_PARAMS(TJ_PTR(src, i32), TJ_PTR(alt, i32), TJ_PTR(dst, i32),
                            TJ_SCALAR(N, i32), TJ_SCALAR(sel, i32)),
          TJ_CONSTS(B))
{
    tj_val o = tj_mul(tj_program_id(0), B);
    tj_val d = tj_make_tensor_descriptor(src, TJ_VALS(N), TJ_VALS(1), TJ_SHAPE(B));
    TJ_IF(tj_gt(sel, 0), &d) {
        d = tj_make_tensor_descriptor(alt, TJ_VALS(N), TJ_VALS(1), TJ_SHAPE(B));
    }
    tj_val out = tj_make_tensor_descriptor(dst, TJ_VALS(N), TJ_VALS(1), TJ_SHAPE(B));
    tj_descriptor_store(out, TJ_VALS(o), tj_sub(tj_mul(tj_descriptor_load(d, TJ_VALS(o)), 3), 1));
}

/* A D0 x D1 x D2 copy between strided views (s0, s1, 1) and (t0, t1, 1),
 * one block per program of a 3-D grid. */
TJ_KERNEL(td_copy3, TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(D0, i32),
                              TJ_SCALAR(D1, i32), TJ_SCALAR(D2, i32), TJ_SCALAR(s0, i32),
                              TJ_SCALAR(s1, i32), TJ_SCALAR(t0, i32), TJ_SCALAR(t1, i32)),
          TJ_CONSTS(B0, B1, B2))
{
    tj_val a = tj_make_tensor_descriptor(src, TJ_VALS(D0, D1, D2), TJ_VALS(s0, s1, 1),
                                         TJ_SHAPE(B0, B1, B2));
    tj_val b = tj_make_tensor_descriptor(dst, TJ_VALS(D0, D1, D2), TJ_VALS(t0, t1, 1),
                                         TJ_SHAPE(B0, B1, B2));
    tj_vals at = TJ_VALS(tj_mul(tj_program_id(0), B0), tj_mul(tj_program_id(1), B1),
                         tj_mul(tj_program_id(2), B2));
    tj_descriptor_store(b, at, tj_descriptor_load(a, at));
}

/* The same in 4-D: program axis 0 walks the blocks of dimensions 0 and 1
 * (g1 of them along 1), axes 1 and 2 those of dimensions 2 and 3. */
TJ_KERNEL(td_copy4, TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(D0, i32),
                              TJ_SCALAR(D1, i32), TJ_SCALAR(D2, i32), TJ_SCALAR(D3, i32),
                              TJ_SCALAR(s0, i32), TJ_SCALAR(s1, i32), TJ_SCALAR(s2, i32),
                              TJ_SCALAR(g1, i32)),
          TJ_CONSTS(B0, B1, B2, B3))
{
    tj_val p = tj_program_id(0);
    tj_val a = tj_make_tensor_descriptor(src, TJ_VALS(D0, D1, D2, D3), TJ_VALS(s0, s1, s2, 1),
                                         TJ_SHAPE(B0, B1, B2, B3));
    tj_val b = tj_make_tensor_descriptor(dst, TJ_VALS(D0, D1, D2, D3),
                                         TJ_VALS(tj_mul(tj_mul(D1, D2), D3), tj_mul(D2, D3), D3, 1),
                                         TJ_SHAPE(B0, B1, B2, B3));
    tj_vals at = TJ_VALS(tj_mul(tj_floordiv(p, g1), B0), tj_mul(tj_mod(p, g1), B1),
                         tj_mul(tj_program_id(1), B2), tj_mul(tj_program_id(2), B3));
    tj_descriptor_store(b, at, tj_descriptor_load(a, at));
}

/* ---- host side ------------------------------------------------------------- */

static float *random_f32(size_t n)
{
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = (float)tl_rand_double(-4, 4);
    return p;
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int poison_f32(float x)
{
    uint32_t bits;
    memcpy(&bits, &x, 4);
    return bits == 0xABABABABu;
}

/* got == want, bit for bit (so -0 and 0 differ, and poison is no float). */
static int same_f32(float got, float want) { return memcmp(&got, &want, 4) == 0; }

/* Copies with a shift: rows of M and N ragged, gaps between the rows of
 * both views, guard rows after the destination. */
static void test_copy(void)
{
    static const int64_t blocks[][2] = {{16, 16}, {32, 8}, {8, 64}, {1, 32}};
    for (size_t c = 0; c < TL_COUNT(blocks); c++) {
        int64_t BM = blocks[c][0], BN = blocks[c][1];
        int64_t M = tl_rand_range(1, 90), N = tl_rand_range(1, 150);
        int64_t lds = N + tl_rand_range(0, 7), ldd = N + tl_rand_range(1, 5);
        int64_t di = c ? tl_rand_range(-BM - 3, BM + 3) : 0, dj = c ? tl_rand_range(-BN - 3, BN + 3) : 0;
        size_t ns = (size_t)(M * lds), nd = (size_t)((M + 2) * ldd);
        float *src = random_f32(ns), *got = malloc(nd * 4);
        tj_buffer bs = tl_upload(dev, src, ns * 4), bd = tl_poisoned(dev, nd * 4);
        tj_launch_cfg cfg = tl_grid(cdiv(M, BM), cdiv(N, BN), 1);
        tj_status st = td_copy_launch(dev, &cfg, bs, bd, (int32_t)M, (int32_t)N, (int32_t)lds,
                                      (int32_t)ldd, (int32_t)di, (int32_t)dj, BM, BN);
        int ok = !tl_launch_failed(st, "td_copy");
        int64_t bad = 0;
        if (ok) {
            tl_download(dev, bd, got, nd * 4);
            for (int64_t i = 0; i < M + 2; i++)
                for (int64_t j = 0; j < ldd; j++) {
                    float g = got[i * ldd + j];
                    int64_t si = i + di, sj = j + dj;
                    int inside = i < M && j < N;
                    int from_src = si >= 0 && si < M && sj >= 0 && sj < N;
                    int right = !inside ? poison_f32(g)
                                        : same_f32(g, from_src ? src[si * lds + sj] : 0.0f);
                    if (!right && bad++ < 5)
                        tap_diag("  dst(%lld, %lld): got %g (%s)", (long long)i, (long long)j,
                                 (double)g, !inside ? "must stay poison"
                                                    : from_src ? "want the source" : "want 0");
                }
            ok = bad == 0;
        }
        tap_ok(ok, "copy %lldx%lld (row strides %lld, %lld), block %lldx%lld, shifted by "
               "(%lld, %lld): 0 outside the source, nothing written outside the destination",
               (long long)M, (long long)N, (long long)lds, (long long)ldd, (long long)BM,
               (long long)BN, (long long)di, (long long)dj);
        tj_buffer_free(dev, bs);
        tj_buffer_free(dev, bd);
        free(src);
        free(got);
    }
}

/* Every block whole: the zeros of the padding, where the grid passes M, N. */
static void test_padding(void)
{
    int64_t BM = 16, BN = 32, M = tl_rand_range(1, 60), N = tl_rand_range(1, 100);
    int64_t ld = N + tl_rand_range(0, 3), gm = cdiv(M, BM), gn = cdiv(N, BN);
    int64_t W = gn * BN;
    size_t ns = (size_t)(M * ld), nd = (size_t)(gm * BM * W);
    float *src = random_f32(ns), *got = malloc(nd * 4 + 64);
    tj_buffer bs = tl_upload(dev, src, ns * 4), bd = tl_poisoned(dev, nd * 4 + 64);
    tj_launch_cfg cfg = tl_grid(gm, gn, 1);
    tj_status st = td_pad_launch(dev, &cfg, bs, bd, (int32_t)M, (int32_t)N, (int32_t)ld, BM, BN);
    int ok = !tl_launch_failed(st, "td_pad");
    if (ok) {
        tl_download(dev, bd, got, nd * 4 + 64);
        for (int64_t i = 0; i < gm * BM && ok; i++)
            for (int64_t j = 0; j < W && ok; j++) {
                float want = i < M && j < N ? src[i * ld + j] : 0.0f;
                if (!same_f32(got[i * W + j], want)) {
                    tap_diag("  (%lld, %lld): got %g, want %g", (long long)i, (long long)j,
                             (double)got[i * W + j], (double)want);
                    ok = 0;
                }
            }
        ok = ok && tl_poison_intact(got, nd * 4, nd * 4 + 64);
    }
    tap_ok(ok, "blocks of %lldx%lld (last stride tj_i64(1)) read whole: zeros past the edges",
           (long long)M, (long long)N);
    tj_buffer_free(dev, bs);
    tj_buffer_free(dev, bd);
    free(src);
    free(got);
}

static void test_matmul(void)
{
    static const int64_t blocks[][3] = {{16, 16, 16}, {32, 16, 32}};
    for (size_t c = 0; c < TL_COUNT(blocks); c++) {
        int64_t BM = blocks[c][0], BN = blocks[c][1], BK = blocks[c][2];
        int64_t M = tl_rand_range(1, 70), N = tl_rand_range(1, 70), K = tl_rand_range(1, 90);
        int64_t lda = K + tl_rand_range(0, 4), ldb = N + tl_rand_range(0, 4);
        int64_t ldc = N + tl_rand_range(1, 4);
        size_t na = (size_t)(M * lda), nb = (size_t)(K * ldb), nc = (size_t)((M + 1) * ldc);
        float *a = random_f32(na), *b = random_f32(nb), *got = malloc(nc * 4);
        tj_buffer ba = tl_upload(dev, a, na * 4), bb = tl_upload(dev, b, nb * 4);
        tj_buffer bc = tl_poisoned(dev, nc * 4);
        tj_launch_cfg cfg = tl_grid(cdiv(M, BM), cdiv(N, BN), 1);
        tj_status st = td_matmul_launch(dev, &cfg, ba, bb, bc, (int32_t)M, (int32_t)N,
                                        (int32_t)K, (int32_t)lda, (int32_t)ldb, (int32_t)ldc,
                                        BM, BN, BK);
        int ok = !tl_launch_failed(st, "td_matmul");
        int64_t bad = 0;
        if (ok) {
            tl_download(dev, bc, got, nc * 4);
            for (int64_t i = 0; i < M + 1; i++)
                for (int64_t j = 0; j < ldc; j++) {
                    float g = got[i * ldc + j];
                    int right;
                    double want = 0, mag = 0;
                    if (i < M && j < N) {
                        for (int64_t k = 0; k < K; k++) {
                            want += (double)a[i * lda + k] * b[k * ldb + j];
                            mag += fabs((double)a[i * lda + k] * b[k * ldb + j]);
                        }
                        right = tl_close(g, want, 0, (double)(K + 2) * 0x1p-23 * mag + 1e-30);
                    } else {
                        right = poison_f32(g);
                    }
                    if (!right && bad++ < 5)
                        tap_diag("  c(%lld, %lld): got %.9g, want %s%.9g", (long long)i,
                                 (long long)j, (double)g, i < M && j < N ? "" : "poison, not ",
                                 want);
                }
            ok = bad == 0;
        }
        tap_ok(ok, "matmul %lldx%lldx%lld (blocks %lldx%lldx%lld) through descriptors, the "
               "zeros past K in the last step", (long long)M, (long long)N, (long long)K,
               (long long)BM, (long long)BN, (long long)BK);
        tj_buffer_free(dev, ba);
        tj_buffer_free(dev, bb);
        tj_buffer_free(dev, bc);
        free(a);
        free(b);
        free(got);
    }
}

/* The f16 matmul at sizes whose rows are multiples of 16 bytes (on a
 * Hopper GPU the launch can then encode the tensor maps: TMA) and ragged
 * against the tiles in M, N and K. */
static void test_matmul_f16(void)
{
    int64_t BM = 64, BN = 64, BK = 32;
    int64_t M = tl_rand_range(1, 150), N = 8 * tl_rand_range(1, 20), K = 8 * tl_rand_range(1, 20);
    size_t na = (size_t)(M * K), nb = (size_t)(K * N), nc = (size_t)(M * N);
    uint16_t *a = malloc(na * 2), *b = malloc(nb * 2);
    float *got = malloc(nc * 4 + 64);
    for (size_t i = 0; i < na; i++)
        a[i] = tj_f32_to_f16((float)tl_rand_double(-2, 2));
    for (size_t i = 0; i < nb; i++)
        b[i] = tj_f32_to_f16((float)tl_rand_double(-2, 2));
    tj_buffer ba = tl_upload(dev, a, na * 2), bb = tl_upload(dev, b, nb * 2);
    tj_buffer bc = tl_poisoned(dev, nc * 4 + 64);
    tj_launch_cfg cfg = tl_grid(cdiv(N, BN), cdiv(M, BM), 1);
    tj_status st = td_matmul_f16_launch(dev, &cfg, ba, bb, bc, (int32_t)M, (int32_t)N,
                                        (int32_t)K, BM, BN, BK);
    int ok = !tl_launch_failed(st, "td_matmul_f16");
    int64_t bad = 0;
    if (ok) {
        tl_download(dev, bc, got, nc * 4 + 64);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double want = 0, mag = 0;
                for (int64_t k = 0; k < K; k++) {
                    double p = (double)tj_f16_to_f32(a[i * K + k]) * tj_f16_to_f32(b[k * N + j]);
                    want += p;
                    mag += fabs(p);
                }
                float g = got[i * N + j];
                if (!tl_close(g, want, 0, (double)(K + 2) * 0x1p-23 * mag + 1e-30) && bad++ < 5)
                    tap_diag("  c(%lld, %lld): got %.9g, want %.9g", (long long)i, (long long)j,
                             (double)g, want);
            }
        ok = bad == 0 && tl_poison_intact(got, nc * 4, nc * 4 + 64);
    }
    tap_ok(ok, "f16 matmul %lldx%lldx%lld (tiles 64x64x32) through descriptors", (long long)M,
           (long long)N, (long long)K);
    tj_buffer_free(dev, ba);
    tj_buffer_free(dev, bb);
    tj_buffer_free(dev, bc);
    free(a);
    free(b);
    free(got);
}

static void test_vec(void)
{
    for (int sel = 0; sel < 2; sel++) {
        int64_t B = 64, N = tl_rand_range(1, 400), g = cdiv(N, B);
        size_t bytes = (size_t)(g * B) * 4 + 64;
        int32_t *src = malloc((size_t)N * 4), *alt = malloc((size_t)N * 4), *got = malloc(bytes);
        for (int64_t i = 0; i < N; i++) {
            src[i] = (int32_t)tl_rand_range(-100000, 100000);
            alt[i] = (int32_t)tl_rand_range(-100000, 100000);
        }
        tj_buffer bs = tl_upload(dev, src, (size_t)N * 4), ba = tl_upload(dev, alt, (size_t)N * 4);
        tj_buffer bd = tl_poisoned(dev, bytes);
        tj_launch_cfg cfg = tl_grid(g, 1, 1);
        tj_status st = td_vec_launch(dev, &cfg, bs, ba, bd, (int32_t)N, sel, B);
        int ok = !tl_launch_failed(st, "td_vec");
        if (ok) {
            tl_download(dev, bd, got, bytes);
            for (int64_t i = 0; i < N && ok; i++) {
                int32_t want = 3 * (sel ? alt : src)[i] - 1;
                if (got[i] != want) {
                    tap_diag("  [%lld]: got %d, want %d", (long long)i, got[i], want);
                    ok = 0;
                }
            }
            ok = ok && tl_poison_intact(got, (size_t)N * 4, bytes);
        }
        tap_ok(ok, "1-D i32 descriptor of %lld, block %lld, %s (carried by a TJ_IF): nothing "
               "written past the end", (long long)N, (long long)B, sel ? "alt" : "src");
        tj_buffer_free(dev, bs);
        tj_buffer_free(dev, ba);
        tj_buffer_free(dev, bd);
        free(src);
        free(alt);
        free(got);
    }
}

static void test_copy3(void)
{
    int64_t B0 = 2, B1 = 4, B2 = 16;
    int64_t D0 = tl_rand_range(1, 7), D1 = tl_rand_range(1, 11), D2 = tl_rand_range(1, 40);
    int64_t s1 = D2 + tl_rand_range(0, 3), s0 = D1 * s1 + tl_rand_range(0, 5);
    int64_t t1 = D2 + tl_rand_range(1, 3), t0 = D1 * t1 + tl_rand_range(1, 5);
    size_t ns = (size_t)(D0 * s0), nd = (size_t)((D0 + 1) * t0);
    float *src = random_f32(ns), *got = malloc(nd * 4);
    tj_buffer bs = tl_upload(dev, src, ns * 4), bd = tl_poisoned(dev, nd * 4);
    tj_launch_cfg cfg = tl_grid(cdiv(D0, B0), cdiv(D1, B1), cdiv(D2, B2));
    tj_status st = td_copy3_launch(dev, &cfg, bs, bd, (int32_t)D0, (int32_t)D1, (int32_t)D2,
                                   (int32_t)s0, (int32_t)s1, (int32_t)t0, (int32_t)t1, B0, B1, B2);
    int ok = !tl_launch_failed(st, "td_copy3");
    if (ok) {
        tl_download(dev, bd, got, nd * 4);
        unsigned char *written = calloc(nd, 1);
        for (int64_t i = 0; i < D0 && ok; i++)
            for (int64_t j = 0; j < D1 && ok; j++)
                for (int64_t k = 0; k < D2 && ok; k++) {
                    size_t at = (size_t)(i * t0 + j * t1 + k);
                    written[at] = 1;
                    if (!same_f32(got[at], src[i * s0 + j * s1 + k])) {
                        tap_diag("  (%lld, %lld, %lld): got %g", (long long)i, (long long)j,
                                 (long long)k, (double)got[at]);
                        ok = 0;
                    }
                }
        for (size_t e = 0; e < nd && ok; e++)
            if (!written[e] && !poison_f32(got[e])) {
                tap_diag("  element %zu outside the tensor was written: %g", e, (double)got[e]);
                ok = 0;
            }
        free(written);
    }
    tap_ok(ok, "3-D copy %lldx%lldx%lld between strided views, blocks 2x4x16", (long long)D0,
           (long long)D1, (long long)D2);
    tj_buffer_free(dev, bs);
    tj_buffer_free(dev, bd);
    free(src);
    free(got);
}

static void test_copy4(void)
{
    int64_t B0 = 2, B1 = 2, B2 = 4, B3 = 8;
    int64_t D0 = tl_rand_range(1, 5), D1 = tl_rand_range(1, 5), D2 = tl_rand_range(1, 9);
    int64_t D3 = tl_rand_range(1, 20);
    int64_t s2 = D3 + tl_rand_range(0, 2), s1 = D2 * s2 + tl_rand_range(0, 2);
    int64_t s0 = D1 * s1 + tl_rand_range(0, 2), g1 = cdiv(D1, B1);
    size_t ns = (size_t)(D0 * s0), nd = (size_t)(D0 * D1 * D2 * D3);
    float *src = random_f32(ns), *got = malloc(nd * 4 + 64);
    tj_buffer bs = tl_upload(dev, src, ns * 4), bd = tl_poisoned(dev, nd * 4 + 64);
    tj_launch_cfg cfg = tl_grid(cdiv(D0, B0) * g1, cdiv(D2, B2), cdiv(D3, B3));
    tj_status st = td_copy4_launch(dev, &cfg, bs, bd, (int32_t)D0, (int32_t)D1, (int32_t)D2,
                                   (int32_t)D3, (int32_t)s0, (int32_t)s1, (int32_t)s2,
                                   (int32_t)g1, B0, B1, B2, B3);
    int ok = !tl_launch_failed(st, "td_copy4");
    if (ok) {
        tl_download(dev, bd, got, nd * 4 + 64);
        size_t e = 0;
        for (int64_t i = 0; i < D0 && ok; i++)
            for (int64_t j = 0; j < D1 && ok; j++)
                for (int64_t k = 0; k < D2 && ok; k++)
                    for (int64_t l = 0; l < D3 && ok; l++, e++)
                        if (!same_f32(got[e], src[i * s0 + j * s1 + k * s2 + l])) {
                            tap_diag("  (%lld, %lld, %lld, %lld): got %g", (long long)i,
                                     (long long)j, (long long)k, (long long)l, (double)got[e]);
                            ok = 0;
                        }
        ok = ok && tl_poison_intact(got, nd * 4, nd * 4 + 64);
    }
    tap_ok(ok, "4-D copy %lldx%lldx%lldx%lld from a strided view, blocks 2x2x4x8", (long long)D0,
           (long long)D1, (long long)D2, (long long)D3);
    tj_buffer_free(dev, bs);
    tj_buffer_free(dev, bd);
    free(src);
    free(got);
}

/* ---- the IR and PTX ------------------------------------------------------------ */

static void test_ir(void)
{
    int64_t consts[] = {16, 32};
    char *text = NULL;
    tj_status st = tj_kernel_ir(td_copy, consts, 2, &text);
    if (st != TJ_OK)
        tap_diag("  %s: %s", tj_status_name(st), tj_last_error());
    int ok = st == TJ_OK && text && strstr(text, "make_block_ptr") && strstr(text, "advance") &&
             strstr(text, "boundary_check [0, 1]") && !strstr(text, "padding nan");
    if (st == TJ_OK && !ok)
        tap_diag("%s", text ? text : "(no text)");
    tap_ok(ok, "a descriptor is a block pointer: make_block_ptr, advance, and accesses that "
           "check both dimensions");
    free(text);
}

static void test_ptx(void)
{
    static const struct {
        const tj_kernel *const *k;
        int64_t consts[4];
        int n;
    } kernels[] = {
        {&td_copy, {32, 32}, 2}, {&td_copy, {8, 64}, 2}, {&td_pad, {16, 32}, 2},
        {&td_matmul, {32, 32, 32}, 3}, {&td_vec, {128}, 1}, {&td_copy3, {2, 4, 16}, 3},
        {&td_copy4, {2, 2, 4, 8}, 4},
    };
    static const char *const targets[] = {"sm_80", "sm_90"};
    for (size_t i = 0; i < TL_COUNT(kernels); i++)
        for (int t = 0; t < 2; t++) {
            char *ptx = NULL;
            tj_status st = tj_kernel_ptx(*kernels[i].k, kernels[i].consts, kernels[i].n,
                                         targets[t], 4, &ptx);
            if (st != TJ_OK)
                tap_diag("  %s: %s", tj_status_name(st), tj_last_error());
            /* (a dot's operands may come through cp.async instead) */
            tap_ok(st == TJ_OK && ptx && (strstr(ptx, "ld.global") || strstr(ptx, "cp.async")) &&
                   strstr(ptx, "st.global"), "%s: PTX for %s", (*kernels[i].k)->name, targets[t]);
            free(ptx);
        }
    /* Hopper's own target, where a matmul's loads may take the TMA path. */
    int64_t consts[] = {64, 64, 32};
    char *ptx = NULL;
    tj_status st = tj_kernel_ptx(td_matmul, consts, 3, "sm_90a", 4, &ptx);
    if (st != TJ_OK)
        tap_diag("  %s: %s", tj_status_name(st), tj_last_error());
    tap_ok(st == TJ_OK && ptx, "td_matmul 64x64x32: PTX for sm_90a");
    free(ptx);
    /* Descriptors are block pointers to the passes too: an f16 matmul of
     * 4096^3 takes the TMA path on sm_90a (bulk tensor copies, wgmma). */
    tj_arg args[] = {TJ_ARG_BUF((tj_buffer){0}), TJ_ARG_BUF((tj_buffer){0}),
                     TJ_ARG_BUF((tj_buffer){0}), TJ_ARG_I32(4096), TJ_ARG_I32(4096),
                     TJ_ARG_I32(4096)};
    int64_t tiles[] = {128, 256, 64};
    ptx = NULL;
    st = tj_kernel_ptx_args(td_matmul_f16, args, 6, tiles, 3, "sm_90a", 8, &ptx);
    if (st != TJ_OK)
        tap_diag("  %s: %s", tj_status_name(st), tj_last_error());
    /* (The bounds-checked code, TJIT_CHECK_BOUNDS=1, checks each element
     * and has no TMA.) */
    const char *env = getenv("TJIT_CHECK_BOUNDS");
    int checked = env && *env && strcmp(env, "0") != 0;
    tap_ok(st == TJ_OK && ptx && (checked || (strstr(ptx, "cp.async.bulk.tensor") &&
                                              strstr(ptx, "wgmma.mma_async"))),
           "td_matmul_f16 128x256x64 at 4096^3 on sm_90a: %s", checked ? "PTX (bounds-checked)"
           : "TMA copies (cp.async.bulk.tensor) and wgmma");
    free(ptx);
}

/* ---- bad programs -------------------------------------------------------------- */

static int line_of[16];
#define HERE(i) line_of[i] = __LINE__ /* the op follows on its line */

TJ_KERNEL(bad_desc, TJ_PARAMS(TJ_PTR(p, f32), TJ_SCALAR(n, i32), TJ_SCALAR(s, i32),
                              TJ_SCALAR(w, i64)),
          TJ_CONSTS(CASE))
{
    tj_val d = tj_make_tensor_descriptor(p, TJ_VALS(64, 64), TJ_VALS(64, 1), TJ_SHAPE(16, 16));
    switch (CASE) {
    case 0: HERE(0); tj_make_tensor_descriptor(p, TJ_VALS(n, n), TJ_VALS(n, s), TJ_SHAPE(16, 16)); break;
    case 1: HERE(1); tj_make_tensor_descriptor(p, TJ_VALS(64, 64), TJ_VALS(1, 64), TJ_SHAPE(16, 16)); break;
    case 2: HERE(2); tj_make_tensor_descriptor(p, TJ_VALS(8, 8, 8), TJ_VALS(64, 8, tj_i64(2)), TJ_SHAPE(2, 4, 8)); break;
    case 3: HERE(3); tj_descriptor_load(d, TJ_VALS(0)); break;
    case 4: HERE(4); tj_descriptor_store(d, TJ_VALS(0, 0, 0), tj_f32(1)); break;
    case 5: HERE(5); tj_make_tensor_descriptor(n, TJ_VALS(64), TJ_VALS(1), TJ_SHAPE(16)); break;
    case 6: HERE(6); tj_make_tensor_descriptor(tj_add(p, tj_arange(0, 16)), TJ_VALS(64), TJ_VALS(1), TJ_SHAPE(16)); break;
    case 7: HERE(7); tj_make_tensor_descriptor(p, TJ_VALS(64), TJ_VALS(64, 1), TJ_SHAPE(16, 16)); break;
    case 8: HERE(8); tj_descriptor_load(p, TJ_VALS(0)); break;
    case 9: HERE(9); tj_descriptor_load(d, TJ_VALS(w, 0)); break;
    case 10: HERE(10); tj_make_tensor_descriptor(p, TJ_VALS(64, 64), TJ_VALS(64, 1), TJ_SHAPE(16, 12)); break;
    case 11: HERE(11); tj_descriptor_store(d, TJ_VALS(0, 0), tj_zeros(TJ_SHAPE(8, 16), TJ_F32)); break;
    case 12: HERE(12); tj_add(d, 1); break;
    case 13: HERE(13); tj_make_tensor_descriptor(p, TJ_VALS(64, 64), TJ_VALS(64, 1.0), TJ_SHAPE(16, 16)); break;
    case 14: HERE(14); tj_descriptor_store(tj_add(p, tj_arange(0, 16)), TJ_VALS(0), tj_f32(0)); break;
    default: HERE(15); tj_descriptor_store(d, TJ_VALS(0, 0), d); break;
    }
}

static void test_errors(void)
{
    static const struct {
        tj_status status;
        const char *op, *says;
    } cases[] = {
        {TJ_ERR_BUILD, "make_tensor_descriptor", "the last stride must be the constant 1"},
        {TJ_ERR_BUILD, "make_tensor_descriptor", "strides 2 is the constant 64"},
        {TJ_ERR_BUILD, "make_tensor_descriptor", "strides 3 is the constant 2"},
        {TJ_ERR_SHAPE, "descriptor_load", "1 offset for the tensor descriptor bptr<f32[16x16]> "
                                          "of 2 dimensions"},
        {TJ_ERR_SHAPE, "descriptor_store", "3 offsets for the tensor descriptor"},
        {TJ_ERR_TYPE, "make_tensor_descriptor", "the base must be a pointer parameter"},
        {TJ_ERR_TYPE, "make_tensor_descriptor", "the base must be a pointer parameter"},
        {TJ_ERR_SHAPE, "make_tensor_descriptor", "shape has 1 values for a block of rank 2"},
        {TJ_ERR_TYPE, "descriptor_load", "which is not a tensor descriptor"},
        {TJ_ERR_TYPE, "descriptor_load", "offsets 1 is i64; offsets are i32"},
        {TJ_ERR_SHAPE, "make_tensor_descriptor", "each dimension must be a power of two"},
        {TJ_ERR_SHAPE, "descriptor_store", "does not match the pointer's shape [16x16]"},
        {TJ_ERR_TYPE, "add", "is a block pointer"},
        {TJ_ERR_TYPE, "make_tensor_descriptor", "strides 2 is f32; it takes integer scalars"},
        {TJ_ERR_TYPE, "descriptor_store", "which is not a tensor descriptor"},
        {TJ_ERR_TYPE, "descriptor_store", "operand 2 is a block pointer"},
    };
    for (int i = 0; i < (int)TL_COUNT(cases); i++) {
        int64_t c = i;
        char *text = NULL, op[64];
        tj_status st = tj_kernel_ir(bad_desc, &c, 1, &text);
        int ok = st == cases[i].status;
        if (!ok)
            tap_diag("  got %s: %s", tj_status_name(st), tj_last_error());
        snprintf(op, sizeof op, "op '%s'", cases[i].op);
        ok = ok && tl_error_mentions(tl_where(__FILE__, line_of[i]), "kernel 'bad_desc'", op,
                                     cases[i].says, NULL);
        tap_ok(ok, "error %d: %s -> %s at %s", i, cases[i].says, tj_status_name(cases[i].status),
               tl_where(__FILE__, line_of[i]));
        free(text);
    }
    /* The message of a runtime last stride names its type. */
    int64_t c = 0;
    char *text = NULL;
    tj_kernel_ir(bad_desc, &c, 1, &text);
    tap_ok(tl_error_mentions("strides 2 is i32, a value not known when the kernel is built",
                             NULL), "a runtime last stride: the message says why it is refused");
    free(text);
}

int main(void)
{
    dev = tl_setup("test_tensor_desc");
    test_copy();
    test_padding();
    test_matmul();
    test_matmul_f16();
    test_vec();
    test_copy3();
    test_copy4();
    test_ir();
    test_ptx();
    test_errors();
    tj_device_close(dev);
    return tap_done();
}
