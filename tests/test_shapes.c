/* SPDX-License-Identifier: MIT */
/*
 * test_shapes.c — tile shapes: broadcasting both ways, scalars meeting
 * tiles, expand_dims, broadcast_to, reshape, trans and permute, arange,
 * full/zeros, and program_id/num_programs on 1-, 2- and 3-D grids.
 *
 * Each kernel writes values that depend on every coordinate (row and column
 * weighted differently), so a transposed or misplaced element shows up.
 * Outputs are poisoned before each launch and compared everywhere, so an
 * element that was never written is caught too.
 */
#include "testlib.h"

static tj_device *dev;

/* out[i, j] = x[i, j] + r[j] * c[i] + 1.5, rows ragged: r is a [1, N] row,
 * c an [M, 1] column, so r * c broadcasts both ways to [M, N]. */
TJ_KERNEL(row_times_col,
          TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(r, f32), TJ_PTR(c, f32), TJ_PTR(out, f32),
                    TJ_SCALAR(nrows, i32)),
          TJ_CONSTS(M, N))
{
    tj_val rows = tj_add(tj_mul(tj_program_id(0), M), tj_arange(0, M));
    tj_val rows2 = tj_expand_dims(rows, 1);           /* [M, 1] */
    tj_val cols2 = tj_expand_dims(tj_arange(0, N), 0); /* [1, N] */
    tj_val offs = tj_add(tj_mul(rows2, N), cols2);    /* [M, N] */
    tj_val row_ok = tj_lt(rows2, nrows);
    tj_val mask = tj_and(row_ok, tj_lt(cols2, N));
    tj_val xv = tj_load(tj_add(x, offs), .mask = mask);
    tj_val rv = tj_load(tj_add(r, cols2));
    tj_val cv = tj_load(tj_add(c, rows2), .mask = row_ok);
    tj_store(tj_add(out, offs), tj_add(tj_add(xv, tj_mul(rv, cv)), 1.5), .mask = mask);
}

static void test_row_times_col(void)
{
    enum { M = 16, N = 32 };
    int nrows = (int)tl_rand_range(3 * M + 1, 5 * M - 1), grid = (nrows + M - 1) / M;
    int cap = grid * M * N;
    float *x = malloc(sizeof(float) * nrows * N), r[N], *c = malloc(sizeof(float) * nrows);
    float *want = malloc(sizeof(float) * cap), *got = malloc(sizeof(float) * cap);
    tl_fill_random(TJ_F32, x, (size_t)nrows * N);
    tl_fill_random(TJ_F32, r, N);
    tl_fill_random(TJ_F32, c, nrows);
    for (int i = 0; i < nrows; i++)
        for (int j = 0; j < N; j++)
            want[i * N + j] = (x[i * N + j] + r[j] * c[i]) + 1.5f;
    tj_buffer bx = tl_upload(dev, x, sizeof(float) * nrows * N), br = tl_upload(dev, r, sizeof r),
              bc = tl_upload(dev, c, sizeof(float) * nrows),
              bo = tl_poisoned(dev, sizeof(float) * cap);
    tj_launch_cfg cfg = tl_grid(grid, 1, 1);
    const char *what = "broadcast [1,N] row * [M,N] column + [M,N] tile + scalar, ragged rows";
    if (!tl_launch_failed(row_times_col_launch(dev, &cfg, bx, br, bc, bo, nrows, M, N), what)) {
        tl_download(dev, bo, got, sizeof(float) * cap);
        if (!tl_poison_intact(got, sizeof(float) * nrows * N, sizeof(float) * cap)) {
            tap_ok(0, "%s", what);
            tap_diag("  rows past nrows = %d were written", nrows);
        } else {
            tl_check(what, TJ_F32, got, want, (size_t)nrows * N, 1e-6, 0);
        }
    }
    free(x), free(c), free(want), free(got);
}

/* Scalars meet tiles: a runtime scalar times a tile plus program_id, a tile
 * minus a C literal on the left, and broadcast_to of a row and a scalar. */
TJ_KERNEL(scalar_tile,
          TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(out, f32), TJ_PTR(out_rows, i32), TJ_SCALAR(s, f32)),
          TJ_CONSTS(M, N))
{
    tj_val pid = tj_program_id(0);
    tj_val offs1 = tj_add(tj_mul(pid, N), tj_arange(0, N));
    tj_val v = tj_add(tj_mul(s, tj_load(tj_add(x, offs1))), pid); /* scalar*tile + scalar */
    tj_store(tj_add(out, offs1), tj_sub(10, v));                  /* literal - tile */
    /* [M, N] tile of rows: broadcast_to of a [1, N] row plus a scalar
     * broadcast to [M, N], at offsets pid*M*N + i*N + j. */
    tj_val row = tj_expand_dims(tj_arange(0, N), 0);
    tj_val tile = tj_add(tj_broadcast_to(row, TJ_SHAPE(M, N)),
                         tj_broadcast_to(tj_mul(pid, 1000), TJ_SHAPE(M, N)));
    tj_val offs2 = tj_add(tj_mul(tj_expand_dims(tj_arange(0, M), 1), N), row);
    tj_store(tj_add(out_rows, tj_add(tj_mul(pid, M * N), offs2)), tile);
}

static void test_scalar_tile(void)
{
    enum { M = 8, N = 64, G = 5 };
    float x[G * N], want[G * N], got[G * N], s = (float)tl_round(TJ_F32, tl_rand_double(-3, 3));
    int32_t want_rows[G * M * N], got_rows[G * M * N];
    tl_fill_random(TJ_F32, x, G * N);
    for (int p = 0; p < G; p++)
        for (int j = 0; j < N; j++) {
            want[p * N + j] = 10.0f - (s * x[p * N + j] + (float)p);
            for (int i = 0; i < M; i++)
                want_rows[(p * M + i) * N + j] = j + 1000 * p;
        }
    tj_buffer bx = tl_upload(dev, x, sizeof x), bo = tl_poisoned(dev, sizeof got),
              br = tl_poisoned(dev, sizeof got_rows);
    tj_launch_cfg cfg = tl_grid(G, 1, 1);
    tj_status st = scalar_tile_launch(dev, &cfg, bx, bo, br, s, M, N);
    if (!tl_launch_failed(st, "scalar * tile + program_id; literal - tile")) {
        tl_download(dev, bo, got, sizeof got);
        tl_check("scalar * tile + program_id; literal - tile", TJ_F32, got, want, G * N, 1e-6, 0);
    }
    if (!tl_launch_failed(st, "broadcast_to of a [1,N] row and of a scalar")) {
        tl_download(dev, br, got_rows, sizeof got_rows);
        tl_check("broadcast_to of a [1,N] row and of a scalar", TJ_I32, got_rows, want_rows,
                 G * M * N, 0, 0);
    }
}

/* reshape [M*N] -> [M, N] (row-major) and back: out2d[i*N + j] =
 * x[i*N + j] + 1000*j through 2-D offsets; flat[k] = that + 7*k through 1-D. */
TJ_KERNEL(reshape_kernel,
          TJ_PARAMS(TJ_PTR(x, i32), TJ_PTR(out2d, i32), TJ_PTR(flat, i32)),
          TJ_CONSTS(M, N))
{
    tj_val k = tj_arange(0, M * N);
    tj_val v = tj_reshape(tj_load(tj_add(x, k)), TJ_SHAPE(M, N));
    tj_val cols = tj_expand_dims(tj_arange(0, N), 0);
    tj_val rows = tj_expand_dims(tj_arange(0, M), 1);
    tj_val w = tj_add(v, tj_mul(cols, 1000));
    tj_store(tj_add(out2d, tj_add(tj_mul(rows, N), cols)), w);
    tj_store(tj_add(flat, k), tj_add(tj_reshape(w, TJ_SHAPE(M * N)), tj_mul(k, 7)));
}

static void test_reshape(void)
{
    enum { M = 8, N = 16 };
    int32_t x[M * N], want2d[M * N], wantflat[M * N], got[M * N];
    tl_fill_range(TJ_I32, x, M * N, -100000, 100000);
    for (int k = 0; k < M * N; k++) {
        want2d[k] = x[k] + 1000 * (k % N);
        wantflat[k] = want2d[k] + 7 * k;
    }
    tj_buffer bx = tl_upload(dev, x, sizeof x), b2 = tl_poisoned(dev, sizeof got),
              bf = tl_poisoned(dev, sizeof got);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    tj_status st = reshape_kernel_launch(dev, &cfg, bx, b2, bf, M, N);
    if (!tl_launch_failed(st, "reshape [M*N] -> [M,N] keeps row-major order")) {
        tl_download(dev, b2, got, sizeof got);
        tl_check("reshape [M*N] -> [M,N] keeps row-major order", TJ_I32, got, want2d, M * N, 0, 0);
    }
    if (!tl_launch_failed(st, "reshape [M,N] -> [M*N]")) {
        tl_download(dev, bf, got, sizeof got);
        tl_check("reshape [M,N] -> [M*N]", TJ_I32, got, wantflat, M * N, 0, 0);
    }
}

/* Transpose of an [M, N] tile of a row-major [rows, cols] matrix, on a 2-D
 * grid of tiles with ragged edges: out[j, i] = x[i, j]. */
TJ_KERNEL(transpose_kernel,
          TJ_PARAMS(TJ_PTR(x, f64), TJ_PTR(out, f64), TJ_SCALAR(nr, i32), TJ_SCALAR(nc, i32)),
          TJ_CONSTS(M, N))
{
    tj_val r = tj_expand_dims(tj_add(tj_mul(tj_program_id(0), M), tj_arange(0, M)), 1);
    tj_val c = tj_expand_dims(tj_add(tj_mul(tj_program_id(1), N), tj_arange(0, N)), 0);
    tj_val v = tj_load(tj_add(x, tj_add(tj_mul(r, nc), c)),
                       .mask = tj_and(tj_lt(r, nr), tj_lt(c, nc)));
    tj_val t = tj_trans(v);                /* [N, M] */
    tj_val tr = tj_trans(c), tc = tj_trans(r); /* [N, 1] and [1, M] */
    tj_store(tj_add(out, tj_add(tj_mul(tr, nr), tc)), t,
             .mask = tj_and(tj_lt(tr, nc), tj_lt(tc, nr)));
}

static void test_transpose(void)
{
    enum { M = 16, N = 32 };
    int nr = (int)tl_rand_range(2 * M + 1, 4 * M - 1), nc = (int)tl_rand_range(N + 1, 3 * N - 1);
    size_t bytes = sizeof(double) * nr * nc;
    double *x = malloc(bytes), *want = malloc(bytes), *got = malloc(bytes);
    tl_fill_random(TJ_F64, x, (size_t)nr * nc);
    for (int i = 0; i < nr; i++)
        for (int j = 0; j < nc; j++)
            want[j * nr + i] = x[i * nc + j];
    tj_buffer bx = tl_upload(dev, x, bytes), bo = tl_poisoned(dev, bytes);
    tj_launch_cfg cfg = tl_grid((nr + M - 1) / M, (nc + N - 1) / N, 1);
    char what[160];
    snprintf(what, sizeof what, "trans of [16,32] tiles, 2-D grid, %dx%d ragged matrix", nr, nc);
    if (!tl_launch_failed(transpose_kernel_launch(dev, &cfg, bx, bo, nr, nc, M, N), what)) {
        tl_download(dev, bo, got, bytes);
        tl_check(what, TJ_F64, got, want, (size_t)nr * nc, 0, 0);
    }
    free(x), free(want), free(got);
}

/* permute of an [A, B, C] tile by each of the 6 orders: result dim i is x's
 * dim order[i]. Offsets of the result come from its own coordinates. */
enum { PA = 2, PB = 4, PC = 8 };
static const int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};

static tj_val coord3(int64_t n, int axis) /* arange(0, n) along axis of rank 3 */
{
    tj_val v = tj_arange(0, n);
    for (int d = 0; d < 3; d++)
        if (d != axis)
            v = tj_expand_dims(v, d);
    return v;
}

TJ_KERNEL(permute_kernel, TJ_PARAMS(TJ_PTR(x, i32), TJ_PTR(out, i32)), TJ_CONSTS(P))
{
    const int *o = perms[P];
    const int64_t dims[3] = {PA, PB, PC};
    tj_val offs = tj_add(tj_add(tj_mul(coord3(PA, 0), PB * PC), tj_mul(coord3(PB, 1), PC)),
                         coord3(PC, 2));
    tj_val p = tj_permute(tj_load(tj_add(x, offs)), TJ_SHAPE(o[0], o[1], o[2]));
    /* The result's dims are dims[o[0]], dims[o[1]], dims[o[2]], row-major. */
    tj_val ro = tj_add(tj_add(tj_mul(coord3(dims[o[0]], 0), dims[o[1]] * dims[o[2]]),
                              tj_mul(coord3(dims[o[1]], 1), dims[o[2]])),
                       coord3(dims[o[2]], 2));
    tj_store(tj_add(out, ro), p);
}

static void test_permute(void)
{
    enum { NE = PA * PB * PC };
    int32_t x[NE], want[NE], got[NE];
    tl_fill_random(TJ_I32, x, NE);
    tj_buffer bx = tl_upload(dev, x, sizeof x), bo = tl_poisoned(dev, sizeof got);
    const int dims[3] = {PA, PB, PC};
    for (int p = 0; p < 6; p++) {
        const int *o = perms[p];
        int rd[3] = {dims[o[0]], dims[o[1]], dims[o[2]]};
        for (int i = 0; i < PA; i++)
            for (int j = 0; j < PB; j++)
                for (int k = 0; k < PC; k++) {
                    int idx[3] = {i, j, k};
                    int ri = idx[o[0]], rj = idx[o[1]], rk = idx[o[2]];
                    want[(ri * rd[1] + rj) * rd[2] + rk] = x[(i * PB + j) * PC + k];
                }
        tl_repoison(dev, bo, sizeof got);
        tj_launch_cfg cfg = tl_grid(1, 1, 1);
        char what[64];
        snprintf(what, sizeof what, "permute [2,4,8] by (%d,%d,%d)", o[0], o[1], o[2]);
        if (!tl_launch_failed(permute_kernel_launch(dev, &cfg, bx, bo, p), what)) {
            tl_download(dev, bo, got, sizeof got);
            tl_check(what, TJ_I32, got, want, NE, 0, 0);
        }
    }
}

/* arange with lo != 0, full with a C number and with a runtime scalar of
 * another dtype, zeros of two dtypes added to loaded tiles. */
TJ_KERNEL(creation,
          TJ_PARAMS(TJ_PTR(ar, i32), TJ_PTR(f, f32), TJ_PTR(fs, f32), TJ_PTR(z, i16),
                    TJ_PTR(zx, f16), TJ_PTR(zo, f16), TJ_SCALAR(s, i32)),
          TJ_CONSTS(LO))
{
    tj_store(tj_add(ar, tj_arange(0, 32)), tj_arange(LO, LO + 32));
    tj_val r = tj_expand_dims(tj_arange(0, 4), 1), c = tj_expand_dims(tj_arange(0, 16), 0);
    tj_val offs = tj_add(tj_mul(r, 16), c);
    tj_store(tj_add(f, offs), tj_full(TJ_SHAPE(4, 16), 3.5, TJ_F32));
    tj_store(tj_add(fs, offs), tj_full(TJ_SHAPE(4, 16), s, TJ_F32));
    tj_store(tj_add(z, tj_arange(0, 64)), tj_add(tj_zeros(TJ_SHAPE(64), TJ_I16), 5));
    tj_val k = tj_arange(0, 64);
    tj_store(tj_add(zo, k), tj_add(tj_zeros(TJ_SHAPE(64), TJ_F16), tj_load(tj_add(zx, k))));
}

static void test_creation(void)
{
    int64_t lo = tl_rand_range(-50, 50);
    int32_t s = (int32_t)tl_rand_range(-1000, 1000), ar[32], want_ar[32];
    float f[64], fs[64], want_f[64], want_fs[64];
    int16_t z[64], want_z[64];
    uint16_t zx[64], zo[64];
    tl_fill_random(TJ_F16, zx, 64);
    for (int i = 0; i < 32; i++)
        want_ar[i] = (int32_t)(lo + i);
    for (int i = 0; i < 64; i++) {
        want_f[i] = 3.5f;
        want_fs[i] = (float)s;
        want_z[i] = 5;
    }
    tj_buffer b_ar = tl_poisoned(dev, sizeof ar), b_f = tl_poisoned(dev, sizeof f),
              b_fs = tl_poisoned(dev, sizeof fs), b_z = tl_poisoned(dev, sizeof z),
              b_zx = tl_upload(dev, zx, sizeof zx), b_zo = tl_poisoned(dev, sizeof zo);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    tj_status st = creation_launch(dev, &cfg, b_ar, b_f, b_fs, b_z, b_zx, b_zo, s, lo);
    char what[64];
    snprintf(what, sizeof what, "arange(%lld, %lld)", (long long)lo, (long long)lo + 32);
    if (!tl_launch_failed(st, what)) {
        tl_download(dev, b_ar, ar, sizeof ar);
        tl_check(what, TJ_I32, ar, want_ar, 32, 0, 0);
    }
    if (!tl_launch_failed(st, "full([4,16], 3.5, f32)")) {
        tl_download(dev, b_f, f, sizeof f);
        tl_check("full([4,16], 3.5, f32)", TJ_F32, f, want_f, 64, 0, 0);
    }
    if (!tl_launch_failed(st, "full([4,16], i32 scalar argument, f32)")) {
        tl_download(dev, b_fs, fs, sizeof fs);
        tl_check("full([4,16], i32 scalar argument, f32)", TJ_F32, fs, want_fs, 64, 0, 0);
    }
    if (!tl_launch_failed(st, "zeros i16 + 5")) {
        tl_download(dev, b_z, z, sizeof z);
        tl_check("zeros i16 + 5", TJ_I16, z, want_z, 64, 0, 0);
    }
    if (!tl_launch_failed(st, "zeros f16 + loaded tile")) {
        tl_download(dev, b_zo, zo, sizeof zo);
        tl_check("zeros f16 + loaded tile", TJ_F16, zo, zx, 64, 0, 0);
    }
}

/* Each program writes its coordinates and the grid at its linear index,
 * which the kernel computes from program_id and num_programs. */
TJ_KERNEL(grid_ids, TJ_PARAMS(TJ_PTR(ids, i32), TJ_PTR(sizes, i32)), TJ_CONSTS())
{
    tj_val p0 = tj_program_id(0), p1 = tj_program_id(1), p2 = tj_program_id(2);
    tj_val n0 = tj_num_programs(0), n1 = tj_num_programs(1), n2 = tj_num_programs(2);
    tj_val lin = tj_add(p0, tj_mul(n0, tj_add(p1, tj_mul(n1, p2))));
    tj_store(tj_add(ids, lin), tj_add(tj_add(p0, tj_mul(p1, 1000)), tj_mul(p2, 1000000)));
    /* A tile of the three sizes: [n0, n1, n2] at sizes[3*lin ...]. */
    tj_val k = tj_arange(0, 4);
    tj_val sz = tj_where(tj_eq(k, 0), n0, tj_where(tj_eq(k, 1), n1, n2));
    tj_store(tj_add(sizes, tj_add(tj_mul(lin, 3), k)), sz, .mask = tj_lt(k, 3));
}

static void test_grid(int64_t g0, int64_t g1, int64_t g2)
{
    int64_t e1 = g1 ? g1 : 1, e2 = g2 ? g2 : 1, total = g0 * e1 * e2;
    int32_t *ids = malloc(4 * total), *want_ids = malloc(4 * total);
    int32_t *sizes = malloc(12 * total), *want_sizes = malloc(12 * total);
    for (int64_t z = 0; z < e2; z++)
        for (int64_t y = 0; y < e1; y++)
            for (int64_t x = 0; x < g0; x++) {
                int64_t lin = x + g0 * (y + e1 * z);
                want_ids[lin] = (int32_t)(x + 1000 * y + 1000000 * z);
                want_sizes[3 * lin] = (int32_t)g0;
                want_sizes[3 * lin + 1] = (int32_t)e1;
                want_sizes[3 * lin + 2] = (int32_t)e2;
            }
    tj_buffer bi = tl_poisoned(dev, 4 * total), bs = tl_poisoned(dev, 12 * total);
    tj_launch_cfg cfg = tl_grid(g0, g1, g2);
    char what[160];
    snprintf(what, sizeof what, "program_id on grid (%lld, %lld, %lld)", (long long)g0,
             (long long)g1, (long long)g2);
    tj_status st = grid_ids_launch(dev, &cfg, bi, bs);
    if (!tl_launch_failed(st, what)) {
        tl_download(dev, bi, ids, 4 * total);
        tl_check(what, TJ_I32, ids, want_ids, total, 0, 0);
    }
    snprintf(what, sizeof what, "num_programs on grid (%lld, %lld, %lld)", (long long)g0,
             (long long)g1, (long long)g2);
    if (!tl_launch_failed(st, what)) {
        tl_download(dev, bs, sizes, 12 * total);
        tl_check(what, TJ_I32, sizes, want_sizes, 3 * total, 0, 0);
    }
    tj_buffer_free(dev, bi);
    tj_buffer_free(dev, bs);
    free(ids), free(want_ids), free(sizes), free(want_sizes);
}

/* A 2-D grid tiling a ragged matrix: out = 2*x + 1 inside, poison outside. */
TJ_KERNEL(tile2d,
          TJ_PARAMS(TJ_PTR(x, i64), TJ_PTR(out, i64), TJ_SCALAR(nr, i32), TJ_SCALAR(nc, i32),
                    TJ_SCALAR(ld, i32)),
          TJ_CONSTS(BM, BN))
{
    tj_val r = tj_expand_dims(tj_add(tj_mul(tj_program_id(0), BM), tj_arange(0, BM)), 1);
    tj_val c = tj_expand_dims(tj_add(tj_mul(tj_program_id(1), BN), tj_arange(0, BN)), 0);
    tj_val offs = tj_add(tj_mul(r, ld), c);
    tj_val mask = tj_and(tj_lt(r, nr), tj_lt(c, nc));
    tj_store(tj_add(out, offs), tj_add(tj_mul(tj_load(tj_add(x, offs), .mask = mask), 2), 1),
             .mask = mask);
}

static void test_tile2d(void)
{
    enum { BM = 8, BN = 16 };
    int nr = (int)tl_rand_range(20, 60), nc = (int)tl_rand_range(20, 60), ld = nc + 5;
    size_t n = (size_t)nr * ld;
    int64_t *x = malloc(8 * n), *want = malloc(8 * n), *got = malloc(8 * n);
    tl_fill_random(TJ_I64, x, n);
    int bad_pad = 0;
    for (size_t i = 0; i < n; i++)
        want[i] = (int64_t)((uint64_t)x[i] * 2 + 1);
    tj_buffer bx = tl_upload(dev, x, 8 * n), bo = tl_poisoned(dev, 8 * n);
    tj_launch_cfg cfg = tl_grid((nr + BM - 1) / BM, (nc + BN - 1) / BN, 1);
    char what[160];
    snprintf(what, sizeof what, "2-D grid over a %dx%d matrix (leading dim %d), masked", nr, nc, ld);
    if (!tl_launch_failed(tile2d_launch(dev, &cfg, bx, bo, nr, nc, ld, BM, BN), what)) {
        tl_download(dev, bo, got, 8 * n);
        size_t bad = 0;
        for (int i = 0; i < nr; i++)
            for (int j = 0; j < ld; j++) {
                size_t k = (size_t)i * ld + j;
                int ok = j < nc ? got[k] == want[k] : tl_poison_intact(&got[k], 0, 8);
                if (!ok && bad++ < 5)
                    tap_diag("  [%d,%d] got %lld, expected %s", i, j, (long long)got[k],
                             j < nc ? "the value" : "poison (outside the mask)");
                bad_pad += !ok && j >= nc;
            }
        tap_ok(bad == 0, "%s", what);
        if (bad_pad)
            tap_diag("  %d padding elements were written", bad_pad);
    }
    free(x), free(want), free(got);
}

int main(void)
{
    dev = tl_setup("test_shapes");
    test_row_times_col();
    test_scalar_tile();
    test_reshape();
    test_transpose();
    test_permute();
    test_creation();
    test_grid(37, 1, 1);
    test_grid(13, 0, 0);
    test_grid(5, 7, 1);
    test_grid(3, 4, 5);
    test_tile2d();
    tj_device_close(dev);
    return tap_done();
}
