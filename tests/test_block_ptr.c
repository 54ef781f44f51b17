/* SPDX-License-Identifier: MIT */
/*
 * test_block_ptr.c — block pointers (tj_make_block_ptr, tj_advance, loads
 * with .boundary_check and .padding, stores with .boundary_check) on the
 * CPU, and on the GPU as tests/gpu/test_block_ptr.gpu.
 *
 * Every kernel moves random f32 (or i32) matrices of ragged sizes through
 * block pointers into poisoned outputs: copies with the bounds checked on
 * dimension 0, 1 or both (where a dimension is not checked the sizes are
 * multiples of the block along it), read through views whose row stride
 * is larger than the row (sub-matrices) and column-major views, in both
 * orders; transposes; NaN and zero padding, checked element by element
 * against what lies outside the matrix; a row sum whose block pointer is
 * advanced in a TJ_FOR (also through a TJ_IF), a tiled copy whose loop
 * makes a new block pointer every iteration, and stores into outputs with
 * guard rows and columns that must stay poison. The bad programs each fail
 * with their status and a message naming the kernel and the line. Every
 * kernel's PTX is compiled for sm_80 and sm_90 (make check assembles it
 * with ptxas), and the copy's loads are 16-byte vectors when the launch
 * specializes its unit stride (the explainer says so).
 */
#include "testlib.h"

static tj_device *dev;

/* ---- kernels --------------------------------------------------------------- */

static tj_shape order_of(int64_t col_major) { return col_major ? TJ_SHAPE(0, 1) : TJ_SHAPE(1, 0); }

/* dst = src for the block of program (pid0, pid1), the bounds checked on
 * the dimensions in CHECK on both sides. */
static int l_copy_access;
TJ_KERNEL(bp_copy, TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(M, i32),
                             TJ_SCALAR(N, i32), TJ_SCALAR(ss0, i32), TJ_SCALAR(ss1, i32),
                             TJ_SCALAR(ds0, i32)),
          TJ_CONSTS(BM, BN, CHECK, COLMAJOR))
{
    tj_val o0 = tj_mul(tj_program_id(0), BM), o1 = tj_mul(tj_program_id(1), BN);
    tj_val a = tj_make_block_ptr(src, TJ_VALS(M, N), TJ_VALS(ss0, ss1), TJ_VALS(o0, o1),
                                 TJ_SHAPE(BM, BN), order_of(COLMAJOR));
    tj_val b = tj_make_block_ptr(dst, TJ_VALS(M, N), TJ_VALS(ds0, 1), TJ_VALS(o0, o1),
                                 TJ_SHAPE(BM, BN), TJ_SHAPE(1, 0));
    l_copy_access = __LINE__ + 1;
    tj_store(b, tj_load(a, .boundary_check = (unsigned)CHECK), .boundary_check = (unsigned)CHECK);
}

/* The block at (pid0, pid1) of src (M x N, row stride ld) into dst, the
 * grid's whole padded extent, with NaN or zero padding. */
TJ_KERNEL(bp_pad, TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(M, i32),
                            TJ_SCALAR(N, i32), TJ_SCALAR(ld, i32)),
          TJ_CONSTS(BM, BN, NAN_PAD))
{
    tj_val o0 = tj_mul(tj_program_id(0), BM), o1 = tj_mul(tj_program_id(1), BN);
    tj_val a = tj_make_block_ptr(src, TJ_VALS(M, N), TJ_VALS(ld, 1), TJ_VALS(o0, o1),
                                 TJ_SHAPE(BM, BN), TJ_SHAPE(1, 0));
    tj_val x = tj_load(a, .boundary_check = TJ_DIMS(0, 1),
                       .padding = NAN_PAD ? TJ_PADDING_NAN : TJ_PADDING_ZERO);
    tj_val width = tj_mul(tj_num_programs(1), BN);
    tj_val b = tj_make_block_ptr(dst, TJ_VALS(tj_mul(tj_num_programs(0), BM), width),
                                 TJ_VALS(width, 1), TJ_VALS(o0, o1), TJ_SHAPE(BM, BN),
                                 TJ_SHAPE(1, 0));
    tj_store(b, x);
}

/* The same for i32, zero padding, one dimension checked: a 1-D view. */
TJ_KERNEL(bp_pad_i32, TJ_PARAMS(TJ_PTR(src, i32), TJ_PTR(dst, i32), TJ_SCALAR(N, i32)),
          TJ_CONSTS(B))
{
    tj_val o = tj_mul(tj_program_id(0), B);
    tj_val a = tj_make_block_ptr(src, TJ_VALS(N), TJ_VALS(1), TJ_VALS(o), TJ_SHAPE(B), TJ_SHAPE(0));
    tj_val b = tj_make_block_ptr(dst, TJ_VALS(tj_mul(tj_num_programs(0), B)), TJ_VALS(1),
                                 TJ_VALS(o), TJ_SHAPE(B), TJ_SHAPE(0));
    tj_store(b, tj_load(a, .boundary_check = TJ_DIMS(0)));
}

/* dst (N x M, row-major) = src^T, src M x N row-major or (COLMAJOR) column-major. */
TJ_KERNEL(bp_transpose, TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(M, i32),
                                  TJ_SCALAR(N, i32)),
          TJ_CONSTS(BM, BN, COLMAJOR))
{
    tj_val o0 = tj_mul(tj_program_id(0), BM), o1 = tj_mul(tj_program_id(1), BN);
    tj_val a = COLMAJOR ? tj_make_block_ptr(src, TJ_VALS(M, N), TJ_VALS(1, M), TJ_VALS(o0, o1),
                                            TJ_SHAPE(BM, BN), TJ_SHAPE(0, 1))
                        : tj_make_block_ptr(src, TJ_VALS(M, N), TJ_VALS(N, 1), TJ_VALS(o0, o1),
                                            TJ_SHAPE(BM, BN), TJ_SHAPE(1, 0));
    tj_val b = tj_make_block_ptr(dst, TJ_VALS(N, M), TJ_VALS(M, 1), TJ_VALS(o1, o0),
                                 TJ_SHAPE(BN, BM), TJ_SHAPE(1, 0));
    tj_store(b, tj_trans(tj_load(a, .boundary_check = TJ_DIMS(0, 1))),
             .boundary_check = TJ_DIMS(0, 1));
}

/* out[i] = sum of row i of src (M x N, row stride ld): the block pointer
 * walks the columns in a TJ_FOR, advanced directly or (VIA_IF) in a TJ_IF. */
TJ_KERNEL(bp_rowsum, TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(out, f32), TJ_SCALAR(M, i32),
                               TJ_SCALAR(N, i32), TJ_SCALAR(ld, i32)),
          TJ_CONSTS(BM, BN, VIA_IF))
{
    tj_val o0 = tj_mul(tj_program_id(0), BM);
    tj_val a = tj_make_block_ptr(src, TJ_VALS(M, N), TJ_VALS(ld, 1), TJ_VALS(o0, 0),
                                 TJ_SHAPE(BM, BN), TJ_SHAPE(1, 0));
    tj_val acc = tj_zeros(TJ_SHAPE(BM, BN), TJ_F32);
    TJ_FOR(k, 0, tj_cdiv(N, BN), 1, &a, &acc) {
        acc = tj_add(acc, tj_load(a, .boundary_check = TJ_DIMS(0, 1)));
        if (VIA_IF) {
            TJ_IF(tj_ge(k, 0), &a) { a = tj_advance(a, TJ_VALS(0, BN)); }
        } else {
            a = tj_advance(a, TJ_VALS(0, BN));
        }
    }
    tj_val o = tj_make_block_ptr(out, TJ_VALS(M), TJ_VALS(1), TJ_VALS(o0), TJ_SHAPE(BM),
                                 TJ_SHAPE(0));
    tj_store(o, tj_sum(acc, 1), .boundary_check = TJ_DIMS(0));
}

/* dst = src (both M x N, row stride ld), one row block per program, a loop
 * over the column blocks that makes the source's block pointer anew each
 * iteration (so the loop carries all its parts), from src or from alt
 * where the block index is odd and ALT is set (a TJ_IF choosing between
 * two block pointers). */
TJ_KERNEL(bp_copy_loop, TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(alt, f32), TJ_PTR(dst, f32),
                                  TJ_SCALAR(M, i32), TJ_SCALAR(N, i32), TJ_SCALAR(ld, i32)),
          TJ_CONSTS(BM, BN, ALT))
{
    tj_val o0 = tj_mul(tj_program_id(0), BM);
    tj_val a = tj_make_block_ptr(src, TJ_VALS(M, N), TJ_VALS(ld, 1), TJ_VALS(o0, 0),
                                 TJ_SHAPE(BM, BN), TJ_SHAPE(1, 0));
    TJ_FOR(k, 0, tj_cdiv(N, BN), 1, &a) {
        tj_val b = tj_make_block_ptr(dst, TJ_VALS(M, N), TJ_VALS(ld, 1), TJ_VALS(o0, tj_mul(k, BN)),
                                     TJ_SHAPE(BM, BN), TJ_SHAPE(1, 0));
        tj_store(b, tj_load(a, .boundary_check = TJ_DIMS(0, 1)), .boundary_check = TJ_DIMS(0, 1));
        tj_val next = tj_mul(tj_add(k, 1), BN);
        a = tj_make_block_ptr(src, TJ_VALS(M, N), TJ_VALS(ld, 1), TJ_VALS(o0, next),
                              TJ_SHAPE(BM, BN), TJ_SHAPE(1, 0));
        if (ALT) {
            TJ_IF(tj_eq(tj_mod(tj_add(k, 1), 2), 1), &a) {
                a = tj_make_block_ptr(alt, TJ_VALS(M, N), TJ_VALS(ld, 1), TJ_VALS(o0, next),
                                      TJ_SHAPE(BM, BN), TJ_SHAPE(1, 0));
            }
        }
    }
}

/* One program copies the M x N sub-matrix of src at (r0, c0) (row stride
 * ld: the base is a pointer into src) to dst (M x N), block by block: an
 * inner loop advances along the columns, the outer one moves the inner
 * loop's result down a block row and back to column 0. */
TJ_KERNEL(bp_copy_nested, TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(M, i32),
                                    TJ_SCALAR(N, i32), TJ_SCALAR(ld, i32), TJ_SCALAR(r0, i32),
                                    TJ_SCALAR(c0, i32)),
          TJ_CONSTS(BM, BN))
{
    tj_val corner = tj_add(src, tj_add(tj_mul(r0, ld), c0));
    tj_val a = tj_make_block_ptr(corner, TJ_VALS(M, N), TJ_VALS(ld, 1), TJ_VALS(0, 0),
                                 TJ_SHAPE(BM, BN), TJ_SHAPE(1, 0));
    tj_val b = tj_make_block_ptr(dst, TJ_VALS(M, N), TJ_VALS(N, 1), TJ_VALS(0, 0),
                                 TJ_SHAPE(BM, BN), TJ_SHAPE(1, 0));
    tj_val cols = tj_cdiv(N, BN);
    TJ_FOR(i, 0, tj_cdiv(M, BM), 1, &a, &b) {
        TJ_FOR(j, 0, cols, 1, &a, &b) {
            tj_store(b, tj_load(a, .boundary_check = TJ_DIMS(0, 1)), .boundary_check = TJ_DIMS(0, 1));
            a = tj_advance(a, TJ_VALS(0, BN));
            b = tj_advance(b, TJ_VALS(0, BN));
        }
        tj_val back = tj_neg(tj_mul(cols, BN));
        a = tj_advance(a, TJ_VALS(BM, back));
        b = tj_advance(b, TJ_VALS(BM, back));
    }
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

/* Element (i, j) of a view with strides (s0, s1). */
static size_t at(int64_t i, int64_t j, int64_t s0, int64_t s1) { return (size_t)(i * s0 + j * s1); }

static int poison_f32(float x)
{
    uint32_t bits;
    memcpy(&bits, &x, 4);
    return bits == 0xABABABABu;
}

/* One copy case: an M x N matrix read through a view (row-major with row
 * stride M..+pad, or column-major), written into rows of ds0 >= N with
 * two guard rows below; everything outside the matrix must stay poison. */
static void copy_case(int64_t M, int64_t N, int64_t BM, int64_t BN, unsigned check, int col_major)
{
    int64_t pad = tl_rand_range(0, 9);
    int64_t ss0 = col_major ? 1 : N + pad, ss1 = col_major ? M + pad : 1;
    size_t src_n = col_major ? (size_t)(ss1 * N) : (size_t)(ss0 * M);
    int64_t ds0 = N + tl_rand_range(1, 7), dst_rows = M + 2;
    size_t dst_n = (size_t)(ds0 * dst_rows);
    float *src = random_f32(src_n), *got = malloc(dst_n * sizeof *got);
    tj_buffer bs = tl_upload(dev, src, src_n * 4), bd = tl_poisoned(dev, dst_n * 4);
    tj_launch_cfg cfg = tl_grid(cdiv(M, BM), cdiv(N, BN), 1);
    tj_status st = bp_copy_launch(dev, &cfg, bs, bd, (int32_t)M, (int32_t)N, (int32_t)ss0,
                                  (int32_t)ss1, (int32_t)ds0, BM, BN, check, col_major);
    int ok = !tl_launch_failed(st, "bp_copy");
    if (ok) {
        tl_download(dev, bd, got, dst_n * 4);
        int64_t bad = 0;
        for (int64_t i = 0; i < dst_rows; i++)
            for (int64_t j = 0; j < ds0; j++) {
                float g = got[at(i, j, ds0, 1)];
                int inside = i < M && j < N;
                if (inside ? memcmp(&g, &src[at(i, j, ss0, ss1)], 4) != 0 : !poison_f32(g)) {
                    if (bad++ < 4)
                        tap_diag("  (%lld, %lld)%s: got %g", (long long)i, (long long)j,
                                 inside ? "" : " outside", (double)g);
                }
            }
        ok = bad == 0;
    }
    tap_ok(ok, "copy %lldx%lld, block %lldx%lld, boundary_check {%s%s%s}, %s view (strides %lld, "
           "%lld), order %s", (long long)M, (long long)N, (long long)BM, (long long)BN,
           check & 1 ? "0" : "", check == 3 ? ", " : "", check & 2 ? "1" : "",
           col_major ? "column-major" : "row-major", (long long)ss0, (long long)ss1,
           col_major ? "(0, 1)" : "(1, 0)");
    tj_buffer_free(dev, bs);
    tj_buffer_free(dev, bd);
    free(src);
    free(got);
}

static void test_copies(void)
{
    static const int64_t blocks[][2] = {{16, 16}, {32, 8}, {4, 64}};
    for (size_t b = 0; b < TL_COUNT(blocks); b++) {
        int64_t BM = blocks[b][0], BN = blocks[b][1];
        for (unsigned check = 1; check <= 3; check++)
            for (int cm = 0; cm < 2; cm++) {
                /* a dimension not checked is a multiple of the block along it */
                int64_t M = check & 1 ? tl_rand_range(1, 90) : BM * tl_rand_range(1, 4);
                int64_t N = check & 2 ? tl_rand_range(1, 90) : BN * tl_rand_range(1, 4);
                copy_case(M, N, BM, BN, check, cm);
            }
    }
}

static void test_padding(void)
{
    for (int nan_pad = 0; nan_pad < 2; nan_pad++) {
        int64_t BM = 16, BN = 32, M = tl_rand_range(1, 60), N = tl_rand_range(1, 70);
        int64_t ld = N + tl_rand_range(0, 5), gm = cdiv(M, BM), gn = cdiv(N, BN);
        size_t src_n = (size_t)(ld * M), dst_n = (size_t)(gm * BM * gn * BN);
        float *src = random_f32(src_n), *got = malloc(dst_n * 4);
        tj_buffer bs = tl_upload(dev, src, src_n * 4), bd = tl_poisoned(dev, dst_n * 4);
        tj_launch_cfg cfg = tl_grid(gm, gn, 1);
        tj_status st = bp_pad_launch(dev, &cfg, bs, bd, (int32_t)M, (int32_t)N, (int32_t)ld, BM,
                                     BN, nan_pad);
        int ok = !tl_launch_failed(st, "bp_pad");
        if (ok) {
            tl_download(dev, bd, got, dst_n * 4);
            int64_t bad = 0, w = gn * BN;
            for (int64_t i = 0; i < gm * BM; i++)
                for (int64_t j = 0; j < w; j++) {
                    float g = got[at(i, j, w, 1)];
                    int good = i < M && j < N ? memcmp(&g, &src[at(i, j, ld, 1)], 4) == 0
                             : nan_pad ? isnan(g) : g == 0 && !signbit(g);
                    if (!good && bad++ < 4)
                        tap_diag("  (%lld, %lld): got %g", (long long)i, (long long)j, (double)g);
                }
            ok = bad == 0;
        }
        tap_ok(ok, "load %lldx%lld (row stride %lld) with %s padding: every element outside "
               "is %s", (long long)M, (long long)N, (long long)ld, nan_pad ? "NaN" : "zero",
               nan_pad ? "NaN" : "+0");
        tj_buffer_free(dev, bs);
        tj_buffer_free(dev, bd);
        free(src);
        free(got);
    }
    /* i32, 1-D: zero padding */
    int64_t B = 64, N = tl_rand_range(1, 300), g = cdiv(N, B);
    int32_t *src = malloc((size_t)N * 4), *got = malloc((size_t)(g * B) * 4);
    for (int64_t i = 0; i < N; i++)
        src[i] = (int32_t)tl_rand_u64();
    tj_buffer bs = tl_upload(dev, src, (size_t)N * 4), bd = tl_poisoned(dev, (size_t)(g * B) * 4);
    tj_launch_cfg cfg = tl_grid(g, 1, 1);
    int ok = !tl_launch_failed(bp_pad_i32_launch(dev, &cfg, bs, bd, (int32_t)N, B), "bp_pad_i32");
    if (ok) {
        tl_download(dev, bd, got, (size_t)(g * B) * 4);
        for (int64_t i = 0; i < g * B && ok; i++)
            if (got[i] != (i < N ? src[i] : 0)) {
                tap_diag("  [%lld]: got %d", (long long)i, got[i]);
                ok = 0;
            }
    }
    tap_ok(ok, "i32 vector of %lld, block %lld: zero padding past the end", (long long)N,
           (long long)B);
    tj_buffer_free(dev, bs);
    tj_buffer_free(dev, bd);
    free(src);
    free(got);
}

static void test_transpose(void)
{
    for (int cm = 0; cm < 2; cm++) {
        int64_t BM = 32, BN = 16, M = tl_rand_range(1, 100), N = tl_rand_range(1, 100);
        size_t n = (size_t)(M * N);
        float *src = random_f32(n), *got = malloc(n * 4);
        tj_buffer bs = tl_upload(dev, src, n * 4), bd = tl_poisoned(dev, n * 4 + 256);
        tj_launch_cfg cfg = tl_grid(cdiv(M, BM), cdiv(N, BN), 1);
        tj_status st = bp_transpose_launch(dev, &cfg, bs, bd, (int32_t)M, (int32_t)N, BM, BN, cm);
        int ok = !tl_launch_failed(st, "bp_transpose");
        if (ok) {
            unsigned char tail[256];
            tl_download(dev, bd, got, n * 4);
            tj_buffer_read(dev, bd, n * 4, tail, sizeof tail);
            for (int64_t j = 0; j < N; j++)
                for (int64_t i = 0; i < M && ok; i++) {
                    float want = cm ? src[at(i, j, 1, M)] : src[at(i, j, N, 1)];
                    if (memcmp(&got[at(j, i, M, 1)], &want, 4) != 0) {
                        tap_diag("  dst(%lld, %lld): got %g, want %g", (long long)j, (long long)i,
                                 (double)got[at(j, i, M, 1)], (double)want);
                        ok = 0;
                    }
                }
            ok = ok && tl_poison_intact(tail, 0, sizeof tail);
        }
        tap_ok(ok, "transpose %lldx%lld (%s source, order %s), nothing written past the end",
               (long long)M, (long long)N, cm ? "column-major" : "row-major",
               cm ? "(0, 1)" : "(1, 0)");
        tj_buffer_free(dev, bs);
        tj_buffer_free(dev, bd);
        free(src);
        free(got);
    }
}

static void test_loops(void)
{
    for (int via_if = 0; via_if < 2; via_if++) {
        int64_t BM = 16, BN = 32, M = tl_rand_range(1, 80), N = tl_rand_range(1, 200);
        int64_t ld = N + tl_rand_range(0, 3);
        size_t n = (size_t)(ld * M);
        float *src = random_f32(n), *got = malloc((size_t)M * 4 + 64);
        tj_buffer bs = tl_upload(dev, src, n * 4), bo = tl_poisoned(dev, (size_t)M * 4 + 64);
        tj_launch_cfg cfg = tl_grid(cdiv(M, BM), 1, 1);
        tj_status st = bp_rowsum_launch(dev, &cfg, bs, bo, (int32_t)M, (int32_t)N, (int32_t)ld,
                                        BM, BN, via_if);
        int ok = !tl_launch_failed(st, "bp_rowsum");
        if (ok) {
            tl_download(dev, bo, got, (size_t)M * 4 + 64);
            for (int64_t i = 0; i < M && ok; i++) {
                double want = 0, mag = 0;
                for (int64_t j = 0; j < N; j++) {
                    want += src[at(i, j, ld, 1)];
                    mag += fabs(src[at(i, j, ld, 1)]);
                }
                if (!tl_close(got[i], want, 0, (double)N * 0x1p-22 * mag + 1e-30)) {
                    tap_diag("  row %lld: got %.9g, want %.9g", (long long)i, (double)got[i], want);
                    ok = 0;
                }
            }
            ok = ok && tl_poison_intact(got, (size_t)M * 4, (size_t)M * 4 + 64);
        }
        tap_ok(ok, "row sums of %lldx%lld, the block pointer advanced in a TJ_FOR%s",
               (long long)M, (long long)N, via_if ? " through a TJ_IF" : "");
        tj_buffer_free(dev, bs);
        tj_buffer_free(dev, bo);
        free(src);
        free(got);
    }
    for (int alt = 0; alt < 2; alt++) {
        int64_t BM = 8, BN = 16, M = tl_rand_range(1, 50), N = tl_rand_range(1, 120);
        int64_t ld = N + tl_rand_range(1, 5);
        size_t n = (size_t)(ld * M);
        float *src = random_f32(n), *other = random_f32(n), *got = malloc(n * 4);
        tj_buffer bs = tl_upload(dev, src, n * 4), ba = tl_upload(dev, other, n * 4);
        tj_buffer bd = tl_poisoned(dev, n * 4);
        tj_launch_cfg cfg = tl_grid(cdiv(M, BM), 1, 1);
        tj_status st = bp_copy_loop_launch(dev, &cfg, bs, ba, bd, (int32_t)M, (int32_t)N,
                                           (int32_t)ld, BM, BN, alt);
        int ok = !tl_launch_failed(st, "bp_copy_loop");
        if (ok) {
            tl_download(dev, bd, got, n * 4);
            for (int64_t i = 0; i < M && ok; i++)
                for (int64_t j = 0; j < ld && ok; j++) {
                    const float *from = alt && (j / BN) % 2 == 1 ? other : src;
                    float g = got[at(i, j, ld, 1)];
                    if (j < N ? memcmp(&g, &from[at(i, j, ld, 1)], 4) != 0 : !poison_f32(g)) {
                        tap_diag("  (%lld, %lld): got %g", (long long)i, (long long)j, (double)g);
                        ok = 0;
                    }
                }
        }
        tap_ok(ok, "tiled copy %lldx%lld, a block pointer made anew in each iteration%s",
               (long long)M, (long long)N, alt ? ", from one of two sources by a TJ_IF" : "");
        tj_buffer_free(dev, bs);
        tj_buffer_free(dev, ba);
        tj_buffer_free(dev, bd);
        free(src);
        free(other);
        free(got);
    }
}

static void test_nested(void)
{
    int64_t BM = 16, BN = 16, M = tl_rand_range(1, 70), N = tl_rand_range(1, 70);
    int64_t r0 = tl_rand_range(0, 9), c0 = tl_rand_range(0, 9), ld = c0 + N + tl_rand_range(0, 9);
    size_t src_n = (size_t)(ld * (r0 + M + 3)), n = (size_t)(M * N);
    float *src = random_f32(src_n), *got = malloc(n * 4 + 64);
    tj_buffer bs = tl_upload(dev, src, src_n * 4), bd = tl_poisoned(dev, n * 4 + 64);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    tj_status st = bp_copy_nested_launch(dev, &cfg, bs, bd, (int32_t)M, (int32_t)N, (int32_t)ld,
                                         (int32_t)r0, (int32_t)c0, BM, BN);
    int ok = !tl_launch_failed(st, "bp_copy_nested");
    if (ok) {
        tl_download(dev, bd, got, n * 4 + 64);
        for (int64_t i = 0; i < M && ok; i++)
            for (int64_t j = 0; j < N && ok; j++)
                if (memcmp(&got[at(i, j, N, 1)], &src[at(r0 + i, c0 + j, ld, 1)], 4) != 0) {
                    tap_diag("  (%lld, %lld): got %g", (long long)i, (long long)j,
                             (double)got[at(i, j, N, 1)]);
                    ok = 0;
                }
        ok = ok && tl_poison_intact(got, n * 4, n * 4 + 64);
    }
    tap_ok(ok, "the %lldx%lld sub-matrix at (%lld, %lld) of a row stride %lld, copied by nested "
           "loops that advance two block pointers", (long long)M, (long long)N, (long long)r0,
           (long long)c0, (long long)ld);
    tj_buffer_free(dev, bs);
    tj_buffer_free(dev, bd);
    free(src);
    free(got);
}

/* Without boundary_check a ragged block reads past the source: a checked
 * launch reports it, naming the load's line (the checks know the buffer
 * through the block pointer's base). */
static void test_unchecked_is_caught(void)
{
    int64_t M = 20, N = 16, BM = 16, BN = 16;
    float *src = random_f32((size_t)(M * N));
    tj_buffer bs = tl_upload(dev, src, (size_t)(M * N) * 4);
    tj_buffer bd = tl_poisoned(dev, (size_t)(cdiv(M, BM) * BM * N) * 4);
    tj_launch_cfg cfg = tl_grid(cdiv(M, BM), 1, 1);
    cfg.check_bounds = TJ_CHECK_BOUNDS_ON;
    tj_status st = bp_copy_launch(dev, &cfg, bs, bd, (int32_t)M, (int32_t)N, (int32_t)N, 1,
                                  (int32_t)N, BM, BN, 0, 0);
    if (st == TJ_OK)
        st = tj_synchronize(dev);
    int ok = st == TJ_ERR_BOUNDS && tl_error_mentions("bp_copy", tl_where(__FILE__, l_copy_access), NULL);
    if (st != TJ_ERR_BOUNDS)
        tap_diag("  got %s: %s", tj_status_name(st), tj_last_error());
    tap_ok(ok, "a block load past the buffer without boundary_check: TJ_ERR_BOUNDS at its line");
    tj_buffer_free(dev, bs);
    tj_buffer_free(dev, bd);
    free(src);
}

/* ---- PTX and vectorization ----------------------------------------------------- */

static void test_ptx(void)
{
    static const struct {
        const tj_kernel *const *k;
        int64_t consts[4];
        int n;
    } kernels[] = {
        {&bp_copy, {32, 32, 3, 0}, 4}, {&bp_copy, {16, 64, 1, 1}, 4}, {&bp_pad, {16, 32, 1}, 3},
        {&bp_pad_i32, {128}, 1}, {&bp_transpose, {32, 16, 1}, 3}, {&bp_rowsum, {16, 32, 1}, 3},
        {&bp_copy_loop, {8, 16, 1}, 3}, {&bp_copy_nested, {16, 16}, 2},
    };
    static const char *const targets[] = {"sm_80", "sm_90"};
    for (size_t i = 0; i < TL_COUNT(kernels); i++)
        for (int t = 0; t < 2; t++) {
            char *ptx = NULL;
            tj_status st = tj_kernel_ptx(*kernels[i].k, kernels[i].consts, kernels[i].n,
                                         targets[t], 4, &ptx);
            if (st != TJ_OK)
                tap_diag("  %s: %s", tj_status_name(st), tj_last_error());
            tap_ok(st == TJ_OK && ptx && strstr(ptx, "ld.global"), "%s: PTX for %s",
                   (*kernels[i].k)->name, targets[t]);
            free(ptx);
        }
    /* A unit stride the launch specializes as 1, and a row stride and
     * widths that are multiples of 16: 16-byte loads and stores. */
    tj_arg args[] = {TJ_ARG_BUF((tj_buffer){0}), TJ_ARG_BUF((tj_buffer){0}), TJ_ARG_I32(64),
                     TJ_ARG_I32(128), TJ_ARG_I32(128), TJ_ARG_I32(1), TJ_ARG_I32(144)};
    int64_t consts[] = {32, 64, 3, 0};
    char *ptx = NULL, *text = NULL;
    tj_status st = tj_kernel_ptx_args(bp_copy, args, 7, consts, 4, "sm_90", 4, &ptx);
    tap_ok(st == TJ_OK && ptx && strstr(ptx, "ld.global.v4") && strstr(ptx, "st.global.v4"),
           "bp_copy with a unit stride: 16-byte loads and stores (ld/st.global.v4)");
    st = tj_kernel_explain(bp_copy, args, 7, consts, 4, 4, &text);
    if (st != TJ_OK || !text)
        tap_diag("  tj_kernel_explain: %s", tj_last_error());
    tap_ok(st == TJ_OK && text && strstr(text, "vector: 4 element(s) = 16 bytes"), "the explainer shows 4-element "
           "vectors for the block pointer's load");
    if (st == TJ_OK && text && !strstr(text, "vector: 4 element(s) = 16 bytes"))
        tap_diag("%s", text);
    free(ptx);
    free(text);
}

/* ---- bad programs -------------------------------------------------------------- */

static int line_of[16];
#define HERE(i) line_of[i] = __LINE__ /* the op follows on its line */
static tj_val bp2(tj_val p) /* a valid 2-D block pointer of 16 x 16 */
{
    return tj_make_block_ptr(p, TJ_VALS(64, 64), TJ_VALS(64, 1), TJ_VALS(0, 0), TJ_SHAPE(16, 16),
                             TJ_SHAPE(1, 0));
}

TJ_KERNEL(bad_bp, TJ_PARAMS(TJ_PTR(p, f32), TJ_PTR(q, i32), TJ_SCALAR(n, i64)), TJ_CONSTS(CASE))
{
    tj_val a = bp2(p);
    tj_val m = tj_lt(tj_arange(0, 16), 4);
    switch (CASE) {
    case 0: HERE(0); tj_load(a, .mask = tj_broadcast_to(tj_expand_dims(m, 0), TJ_SHAPE(16, 16))); break;
    case 1: HERE(1); tj_load(a, .other = tj_f32(1)); break;
    case 2: HERE(2); tj_store(a, tj_f32(0), .boundary_check = TJ_DIMS(0), .padding = TJ_PADDING_NAN); break;
    case 3: HERE(3); tj_load(a, .boundary_check = TJ_DIMS(0, 2)); break;
    case 4: {
        tj_val b = tj_make_block_ptr(q, TJ_VALS(64), TJ_VALS(1), TJ_VALS(0), TJ_SHAPE(16), TJ_SHAPE(0));
        HERE(4); tj_load(b, .boundary_check = TJ_DIMS(0), .padding = TJ_PADDING_NAN);
        break;
    }
    case 5: HERE(5); tj_load(tj_add(p, tj_arange(0, 16)), .boundary_check = TJ_DIMS(0)); break;
    case 6: HERE(6); tj_make_block_ptr(p, TJ_VALS(64), TJ_VALS(64, 1), TJ_VALS(0, 0), TJ_SHAPE(16, 16), TJ_SHAPE(1, 0)); break;
    case 7: HERE(7); tj_make_block_ptr(p, TJ_VALS(64, 64), TJ_VALS(64, 1), TJ_VALS(0, 0), TJ_SHAPE(16, 16), TJ_SHAPE(1, 1)); break;
    case 8: HERE(8); tj_make_block_ptr(p, TJ_VALS(64, 64), TJ_VALS(64, 1), TJ_VALS(0, 0), TJ_SHAPE(16, 12), TJ_SHAPE(1, 0)); break;
    case 9: HERE(9); tj_make_block_ptr(tj_add(p, tj_arange(0, 16)), TJ_VALS(64), TJ_VALS(1), TJ_VALS(0), TJ_SHAPE(16), TJ_SHAPE(0)); break;
    case 10: HERE(10); tj_add(a, 1); break;
    case 11: HERE(11); tj_make_block_ptr(p, TJ_VALS(64, 64), TJ_VALS(64, 1), TJ_VALS(n, 0), TJ_SHAPE(16, 16), TJ_SHAPE(1, 0)); break;
    case 12: HERE(12); tj_advance(p, TJ_VALS(0)); break;
    case 13: HERE(13); tj_load(a, .padding = TJ_PADDING_NAN); break;
    case 14: HERE(14); tj_store(a, tj_f32(0), .mask = m); break;
    default: HERE(15); tj_atomic_add(a, tj_f32(1)); break;
    }
}

static void test_errors(void)
{
    static const struct {
        tj_status status;
        const char *says;
    } cases[] = {
        {TJ_ERR_BUILD, "not 'mask' or 'other'"},
        {TJ_ERR_BUILD, "not 'mask' or 'other'"},
        {TJ_ERR_BUILD, "'padding' applies to loads only"},
        {TJ_ERR_SHAPE, "boundary_check on dimension 2"},
        {TJ_ERR_TYPE, "NaN padding of bptr<i32[16]>"},
        {TJ_ERR_BUILD, "apply to block pointers (tj_make_block_ptr) only"},
        {TJ_ERR_SHAPE, "shape has 1 values for a block of rank 2"},
        {TJ_ERR_BUILD, "order [1x1] is not a permutation"},
        {TJ_ERR_SHAPE, "each dimension must be a power of two"},
        {TJ_ERR_TYPE, "the base must be a pointer parameter (a scalar pointer)"},
        {TJ_ERR_TYPE, "is a block pointer (bptr<f32[16x16]>)"},
        {TJ_ERR_TYPE, "offsets 1 is i64; offsets are i32"},
        {TJ_ERR_TYPE, "not a block pointer"},
        {TJ_ERR_BUILD, "'padding' without 'boundary_check'"},
        {TJ_ERR_BUILD, "not 'mask' or 'other'"},
        {TJ_ERR_TYPE, "is a block pointer"},
    };
    for (int i = 0; i < (int)TL_COUNT(cases); i++) {
        int64_t c = i;
        char *text = NULL;
        tj_status st = tj_kernel_ir(bad_bp, &c, 1, &text);
        int ok = st == cases[i].status;
        if (!ok)
            tap_diag("  got %s: %s", tj_status_name(st), tj_last_error());
        ok = ok && tl_error_mentions(tl_where(__FILE__, line_of[i]), "kernel 'bad_bp'",
                                     cases[i].says, NULL);
        tap_ok(ok, "error %d: %s -> %s at %s", i, cases[i].says, tj_status_name(cases[i].status),
               tl_where(__FILE__, line_of[i]));
        free(text);
    }
}

int main(void)
{
    dev = tl_setup("test_block_ptr");
    test_copies();
    test_padding();
    test_transpose();
    test_loops();
    test_nested();
    test_unchecked_is_caught();
    test_ptx();
    test_errors();
    tj_device_close(dev);
    return tap_done();
}
