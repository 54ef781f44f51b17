/* SPDX-License-Identifier: MIT */
/*
 * test_programs.c — whole tile programs that stress how the CPU back end
 * orders, fuses and materializes work, rather than single ops.
 *
 * Memory order inside a program: a value loaded before a store to the same
 * place keeps the old contents; a load after stores to other lanes sees
 * them. Values read several times (by a reduction and a store) are computed
 * once and right. The Triton idioms: a pointer tile carried through a loop
 * and advanced each trip, loop bounds loaded from memory (CSR rows), a
 * histogram by atomics from many programs. Masked lanes with wild offsets
 * must never be touched. Long element-wise chains, 1024-element and
 * [32, 32] tiles, 4-D tiles, 20000-program grids, scalar-only arithmetic,
 * and sizes that a specializing compiler might treat apart (n = 1, n a
 * multiple of 16, odd n, misaligned bases).
 */
#include "testlib.h"

static tj_device *dev;

enum { B = 64 };

/* ---- memory order within a program --------------------------------------- */

/* a = p[k]; p[k] = a + 1; q[k] = a  (q must get the old p). Then
 * r[B-1-k] = a * 3 and s[k] = r[k]: a load after stores to other lanes. */
TJ_KERNEL(order, TJ_PARAMS(TJ_PTR(p, i32), TJ_PTR(q, i32), TJ_PTR(r, i32), TJ_PTR(s, i32)),
          TJ_CONSTS())
{
    tj_val k = tj_add(tj_mul(tj_program_id(0), B), tj_arange(0, B));
    tj_val local = tj_arange(0, B);
    tj_val a = tj_load(tj_add(p, k));
    tj_store(tj_add(p, k), tj_add(a, 1));
    tj_store(tj_add(q, k), a);
    tj_val rbase = tj_add(r, tj_mul(tj_program_id(0), B));
    tj_store(tj_add(rbase, tj_sub(B - 1, local)), tj_mul(a, 3));
    tj_store(tj_add(s, k), tj_load(tj_add(rbase, local)));
}

static void test_order(void)
{
    enum { G = 5, N = G * B };
    int32_t p[N], want_p[N], want_q[N], want_s[N], got[N];
    tl_fill_range(TJ_I32, p, N, -100000, 100000);
    for (int g = 0; g < G; g++)
        for (int k = 0; k < B; k++) {
            int i = g * B + k;
            want_p[i] = p[i] + 1;
            want_q[i] = p[i];
            want_s[i] = p[g * B + (B - 1 - k)] * 3;
        }
    tj_buffer bp = tl_upload(dev, p, sizeof p), bq = tl_poisoned(dev, sizeof got),
              br = tl_poisoned(dev, sizeof got), bs = tl_poisoned(dev, sizeof got);
    tj_launch_cfg cfg = tl_grid(G, 1, 1);
    tj_status st = order_launch(dev, &cfg, bp, bq, br, bs);
    if (!tl_launch_failed(st, "a load before a store to the same place keeps the old value")) {
        tl_download(dev, bq, got, sizeof got);
        tl_check("a load before a store to the same place keeps the old value", TJ_I32, got,
                 want_q, N, 0, 0);
        tl_download(dev, bp, got, sizeof got);
        tl_check("the store of a + 1 in place", TJ_I32, got, want_p, N, 0, 0);
        tl_download(dev, bs, got, sizeof got);
        tl_check("a load after stores to other lanes sees them", TJ_I32, got, want_s, N, 0, 0);
    }
}

/* e = exp(x - max) is read by a sum and by a store; t = 2x by two stores. */
TJ_KERNEL(reuse, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(e_out, f32), TJ_PTR(t1, f32), TJ_PTR(t2, f32),
                           TJ_PTR(sums, f32)),
          TJ_CONSTS(N))
{
    tj_val k = tj_arange(0, N);
    tj_val base = tj_mul(tj_program_id(0), N);
    tj_val v = tj_load(tj_add(x, tj_add(base, k)));
    tj_val e = tj_exp(tj_sub(v, tj_max(v, 0)));
    tj_store(tj_add(sums, tj_program_id(0)), tj_sum(e, 0));
    tj_store(tj_add(e_out, tj_add(base, k)), e);
    tj_val t = tj_mul(v, 2);
    tj_store(tj_add(t1, tj_add(base, k)), t);
    tj_store(tj_add(t2, tj_add(base, k)), tj_add(t, tj_sum(t, 0)));
}

static void test_reuse(void)
{
    enum { N = 1024, G = 3 };
    float *x = malloc(4 * N * G), *e = malloc(4 * N * G), *t1 = malloc(4 * N * G),
          *t2 = malloc(4 * N * G), sums[G];
    float *we = malloc(4 * N * G), *wt1 = malloc(4 * N * G), *wt2 = malloc(4 * N * G), wsums[G];
    double stol[G];
    tl_fill_range(TJ_F32, x, N * G, -5, 5);
    for (int g = 0; g < G; g++) {
        float m = -1e30f;
        double s = 0, ts = 0;
        for (int k = 0; k < N; k++)
            m = fmaxf(m, x[g * N + k]);
        for (int k = 0; k < N; k++) {
            we[g * N + k] = (float)exp((double)(x[g * N + k] - m));
            s += we[g * N + k];
            wt1[g * N + k] = 2 * x[g * N + k];
            ts += wt1[g * N + k];
        }
        wsums[g] = (float)s;
        stol[g] = 1e-5 * s;
        for (int k = 0; k < N; k++)
            wt2[g * N + k] = wt1[g * N + k] + (float)ts;
    }
    tj_buffer bx = tl_upload(dev, x, 4 * N * G), be = tl_poisoned(dev, 4 * N * G),
              b1 = tl_poisoned(dev, 4 * N * G), b2 = tl_poisoned(dev, 4 * N * G),
              bs = tl_poisoned(dev, sizeof sums);
    tj_launch_cfg cfg = tl_grid(G, 1, 1);
    tj_status st = reuse_launch(dev, &cfg, bx, be, b1, b2, bs, N);
    const char *what = "a 1024-element value read by a reduction and a store";
    if (!tl_launch_failed(st, what)) {
        tl_download(dev, be, e, 4 * N * G);
        tl_download(dev, bs, sums, sizeof sums);
        int ok = 1;
        for (int g = 0; g < G; g++)
            if (!tl_close(sums[g], wsums[g], 0, stol[g])) {
                tap_diag("  sum %d: got %g, expected %g", g, sums[g], wsums[g]);
                ok = 0;
            }
        if (!ok)
            tap_ok(0, "%s", what);
        else
            tl_check(what, TJ_F32, e, we, N * G, 4e-7, 0);
        tl_download(dev, b1, t1, 4 * N * G);
        tl_download(dev, b2, t2, 4 * N * G);
        tl_check("a value stored twice, once plus its own sum", TJ_F32, t1, wt1, N * G, 0, 0);
        tl_check("... the second store", TJ_F32, t2, wt2, N * G, 1e-6, 8 * 0x1p-23 * 10 * N);
    }
    free(x), free(e), free(t1), free(t2), free(we), free(wt1), free(wt2);
}

/* ---- Triton idioms ------------------------------------------------------- */

/* Row sums over a ragged row, chunk by chunk, with a pointer tile carried
 * through the loop and advanced by B each trip. */
TJ_KERNEL(carried_ptr,
          TJ_PARAMS(TJ_PTR(x, f64), TJ_PTR(out, f64), TJ_SCALAR(ncols, i32)), TJ_CONSTS())
{
    tj_val k = tj_arange(0, B);
    tj_val ptrs = tj_add(tj_add(x, tj_mul(tj_program_id(0), ncols)), k);
    tj_val acc = tj_zeros(TJ_SHAPE(B), TJ_F64);
    tj_val col = k;
    TJ_FOR(c, 0, tj_cdiv(ncols, B), 1, &ptrs, &acc, &col) {
        acc = tj_add(acc, tj_load(ptrs, .mask = tj_lt(col, ncols), .other = tj_f64(0)));
        ptrs = tj_add(ptrs, B);
        col = tj_add(col, B);
    }
    tj_store(tj_add(out, tj_program_id(0)), tj_sum(acc, 0));
}

static void test_carried_ptr(void)
{
    int rows = (int)tl_rand_range(3, 20), ncols = (int)tl_rand_range(B + 1, 5 * B - 1);
    double *x = malloc(8 * rows * ncols), *want = malloc(8 * rows), *got = malloc(8 * rows);
    tl_fill_random(TJ_F64, x, (size_t)rows * ncols);
    for (int r = 0; r < rows; r++) {
        want[r] = 0;
        for (int c = 0; c < ncols; c++)
            want[r] += x[r * ncols + c];
    }
    tj_buffer bx = tl_upload(dev, x, 8 * rows * ncols), bo = tl_poisoned(dev, 8 * rows);
    tj_launch_cfg cfg = tl_grid(rows, 1, 1);
    char what[160];
    snprintf(what, sizeof what, "row sums with a pointer tile advanced through TJ_FOR (%d x %d)",
             rows, ncols);
    if (!tl_launch_failed(carried_ptr_launch(dev, &cfg, bx, bo, ncols), what)) {
        tl_download(dev, bo, got, 8 * rows);
        tl_check(what, TJ_F64, got, want, rows, 1e-12, 1e-12);
    }
    free(x), free(want), free(got);
}

/* CSR row sums: the loop bounds are loaded from memory. */
TJ_KERNEL(csr_rows,
          TJ_PARAMS(TJ_PTR(indptr, i32), TJ_PTR(vals, i64), TJ_PTR(out, i64)), TJ_CONSTS())
{
    tj_val row = tj_program_id(0);
    tj_val lo = tj_load(tj_add(indptr, row)), hi = tj_load(tj_add(indptr, tj_add(row, 1)));
    tj_val acc = tj_i64(0);
    TJ_FOR(j, lo, hi, 1, &acc) {
        acc = tj_add(acc, tj_load(tj_add(vals, j)));
    }
    tj_store(tj_add(out, row), acc);
}

static void test_csr(void)
{
    int rows = (int)tl_rand_range(10, 60);
    int32_t *indptr = malloc(4 * (rows + 1));
    indptr[0] = 0;
    for (int r = 0; r < rows; r++)
        indptr[r + 1] = indptr[r] + (int)tl_rand_range(0, 9); /* empty rows too */
    int nnz = indptr[rows];
    int64_t *vals = malloc(8 * (nnz + 1)), *want = malloc(8 * rows), *got = malloc(8 * rows);
    tl_fill_random(TJ_I64, vals, nnz + 1);
    for (int r = 0; r < rows; r++) {
        uint64_t s = 0;
        for (int j = indptr[r]; j < indptr[r + 1]; j++)
            s += (uint64_t)vals[j];
        want[r] = (int64_t)s;
    }
    tj_buffer bi = tl_upload(dev, indptr, 4 * (rows + 1)), bv = tl_upload(dev, vals, 8 * (nnz + 1)),
              bo = tl_poisoned(dev, 8 * rows);
    tj_launch_cfg cfg = tl_grid(rows, 1, 1);
    char what[160];
    snprintf(what, sizeof what, "CSR row sums: TJ_FOR bounds loaded from memory (%d rows)", rows);
    if (!tl_launch_failed(csr_rows_launch(dev, &cfg, bi, bv, bo), what)) {
        tl_download(dev, bo, got, 8 * rows);
        tl_check(what, TJ_I64, got, want, rows, 0, 0);
    }
    free(indptr), free(vals), free(want), free(got);
}

/* A histogram: every program walks its chunks and atomically counts
 * buckets (x mod NB) into a shared array. */
TJ_KERNEL(histogram,
          TJ_PARAMS(TJ_PTR(x, u32), TJ_PTR(hist, i32), TJ_SCALAR(n, i32), TJ_SCALAR(chunks, i32)),
          TJ_CONSTS(NB))
{
    tj_val k = tj_arange(0, B);
    tj_val first = tj_mul(tj_mul(tj_program_id(0), chunks), B);
    TJ_FOR(c, 0, chunks, 1) {
        tj_val offs = tj_add(tj_add(first, tj_mul(c, B)), k);
        tj_val m = tj_lt(offs, n);
        tj_val bucket = tj_mod(tj_load(tj_add(x, offs), .mask = m), tj_u32(NB));
        tj_atomic_add(tj_add(hist, bucket), 1, .mask = m);
    }
}

static void test_histogram(void)
{
    enum { NB = 16, CHUNKS = 3 };
    int n = (int)tl_rand_range(2000, 6000), programs = (n + CHUNKS * B - 1) / (CHUNKS * B);
    uint32_t *x = malloc(4 * n);
    int32_t want[NB] = {0}, got[NB], init[NB];
    tl_fill_random(TJ_U32, x, n);
    for (int b = 0; b < NB; b++)
        want[b] = init[b] = (int32_t)tl_rand_range(-100, 100);
    for (int i = 0; i < n; i++)
        want[x[i] % NB]++;
    tj_buffer bx = tl_upload(dev, x, 4 * n), bh = tl_upload(dev, init, sizeof init);
    tj_launch_cfg cfg = tl_grid(programs, 1, 1);
    char what[160];
    snprintf(what, sizeof what, "histogram of %d u32 by atomic_add from %d programs", n, programs);
    if (!tl_launch_failed(histogram_launch(dev, &cfg, bx, bh, n, CHUNKS, NB), what)) {
        tl_download(dev, bh, got, sizeof got);
        tl_check(what, TJ_I32, got, want, NB, 0, 0);
    }
    free(x);
}

/* Masked-off lanes point far outside the buffer: loads and stores must not
 * touch them (a fault would kill the test). */
TJ_KERNEL(wild_masked, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(out, f32), TJ_SCALAR(n, i32)),
          TJ_CONSTS())
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), B), tj_arange(0, B));
    tj_val m = tj_lt(offs, n);
    tj_val wild = tj_where(m, offs, tj_add(tj_mul(offs, 1 << 20), 1 << 30));
    tj_val v = tj_load(tj_add(x, wild), .mask = m, .other = tj_f32(-1));
    tj_store(tj_add(out, wild), tj_add(v, 1), .mask = m);
}

static void test_wild_masked(void)
{
    int n = (int)tl_rand_range(B + 1, 3 * B - 1), grid = (n + B - 1) / B;
    float *x = malloc(4 * n), *want = malloc(4 * n), *got = malloc(4 * n);
    tl_fill_random(TJ_F32, x, n);
    for (int i = 0; i < n; i++)
        want[i] = x[i] + 1;
    tj_buffer bx = tl_upload(dev, x, 4 * n), bo = tl_poisoned(dev, 4 * n);
    tj_launch_cfg cfg = tl_grid(grid, 1, 1);
    const char *what = "masked-off lanes with wild offsets (2^30 elements away) are not touched";
    if (!tl_launch_failed(wild_masked_launch(dev, &cfg, bx, bo, n), what)) {
        tl_download(dev, bo, got, 4 * n);
        tl_check(what, TJ_F32, got, want, n, 0, 0);
    }
    free(x), free(want), free(got);
}

/* ---- sizes and shapes ---------------------------------------------------- */

/* 40 element-wise ops in a chain (chosen by C at build time). */
TJ_KERNEL(long_chain, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(out, f32), TJ_SCALAR(n, i32)),
          TJ_CONSTS(LEN))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), B), tj_arange(0, B));
    tj_val m = tj_lt(offs, n);
    tj_val v = tj_load(tj_add(x, offs), .mask = m);
    for (int i = 0; i < LEN; i++) {
        switch (i % 5) {
        case 0: v = tj_mul(v, 1.0625); break;
        case 1: v = tj_add(v, 0.5); break;
        case 2: v = tj_maximum(v, -3.0); break;
        case 3: v = tj_sub(v, 0.25); break;
        default: v = tj_where(tj_gt(v, 100), tj_mul(v, 0.5), v); break;
        }
    }
    tj_store(tj_add(out, offs), v, .mask = m);
}

static void test_long_chain(void)
{
    enum { LEN = 40 };
    int n = (int)tl_rand_range(5 * B, 9 * B), grid = (n + B - 1) / B;
    float *x = malloc(4 * n), *want = malloc(4 * n), *got = malloc(4 * n);
    tl_fill_range(TJ_F32, x, n, -20, 20);
    for (int j = 0; j < n; j++) {
        float v = x[j];
        for (int i = 0; i < LEN; i++) {
            switch (i % 5) {
            case 0: v = v * 1.0625f; break;
            case 1: v = v + 0.5f; break;
            case 2: v = fmaxf(v, -3.0f); break;
            case 3: v = v - 0.25f; break;
            default: v = v > 100 ? v * 0.5f : v; break;
            }
        }
        want[j] = v;
    }
    tj_buffer bx = tl_upload(dev, x, 4 * n), bo = tl_poisoned(dev, 4 * n);
    tj_launch_cfg cfg = tl_grid(grid, 1, 1);
    const char *what = "a chain of 40 element-wise ops";
    if (!tl_launch_failed(long_chain_launch(dev, &cfg, bx, bo, n, LEN), what)) {
        tl_download(dev, bo, got, 4 * n);
        tl_check(what, TJ_F32, got, want, n, 1e-6, 0);
    }
    free(x), free(want), free(got);
}

/* A [32, 32] tile: out = x^T + rowsum(x) broadcast down the columns. */
TJ_KERNEL(square, TJ_PARAMS(TJ_PTR(x, i32), TJ_PTR(out, i32)), TJ_CONSTS())
{
    tj_val r = tj_expand_dims(tj_arange(0, 32), 1), c = tj_expand_dims(tj_arange(0, 32), 0);
    tj_val base = tj_mul(tj_program_id(0), 1024);
    tj_val v = tj_load(tj_add(tj_add(x, base), tj_add(tj_mul(r, 32), c)));
    tj_val rows = tj_expand_dims(tj_sum(v, 1), 0); /* [1, 32]: row i's sum in column i */
    tj_store(tj_add(tj_add(out, base), tj_add(tj_mul(r, 32), c)), tj_add(tj_trans(v), rows));
}

static void test_square(void)
{
    enum { G = 4 };
    int32_t x[G * 1024], want[G * 1024], got[G * 1024];
    tl_fill_range(TJ_I32, x, G * 1024, -1000, 1000);
    for (int g = 0; g < G; g++)
        for (int i = 0; i < 32; i++) {
            int32_t rs = 0;
            for (int k = 0; k < 32; k++)
                rs += x[g * 1024 + i * 32 + k];
            for (int j = 0; j < 32; j++) /* out[j][i] = x[i][j] + rowsum(i) */
                want[g * 1024 + j * 32 + i] = x[g * 1024 + i * 32 + j] + rs;
        }
    tj_buffer bx = tl_upload(dev, x, sizeof x), bo = tl_poisoned(dev, sizeof got);
    tj_launch_cfg cfg = tl_grid(G, 1, 1);
    const char *what = "[32,32] tile: transpose plus a reduced row broadcast";
    if (!tl_launch_failed(square_launch(dev, &cfg, bx, bo), what)) {
        tl_download(dev, bo, got, sizeof got);
        tl_check(what, TJ_I32, got, want, G * 1024, 0, 0);
    }
}

/* A 4-D tile [2, 4, 2, 8] permuted by (3, 1, 0, 2). */
TJ_KERNEL(rank4, TJ_PARAMS(TJ_PTR(x, i16), TJ_PTR(out, i16)), TJ_CONSTS())
{
    static const int64_t d[4] = {2, 4, 2, 8};
    static const int perm[4] = {3, 1, 0, 2};
    tj_val offs = {0}, roffs = {0};
    int64_t stride = 1, rstride = 1;
    for (int a = 3; a >= 0; a--) { /* source offsets, row-major */
        tj_val c = tj_arange(0, d[a]);
        for (int e = 0; e < 4; e++)
            if (e != a)
                c = tj_expand_dims(c, e);
        c = tj_mul(c, stride);
        offs = offs.id ? tj_add(offs, c) : c;
        stride *= d[a];
    }
    for (int a = 3; a >= 0; a--) { /* result offsets, over the permuted dims */
        tj_val c = tj_arange(0, d[perm[a]]);
        for (int e = 0; e < 4; e++)
            if (e != a)
                c = tj_expand_dims(c, e);
        c = tj_mul(c, rstride);
        roffs = roffs.id ? tj_add(roffs, c) : c;
        rstride *= d[perm[a]];
    }
    tj_val v = tj_load(tj_add(x, offs));
    tj_store(tj_add(out, roffs), tj_permute(v, TJ_SHAPE(3, 1, 0, 2)));
}

static void test_rank4(void)
{
    enum { NE = 2 * 4 * 2 * 8 };
    int16_t x[NE], want[NE], got[NE];
    tl_fill_random(TJ_I16, x, NE);
    /* result[l][j][i][k] = x[i][j][k][l]; result dims [8, 4, 2, 2] */
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 2; k++)
                for (int l = 0; l < 8; l++)
                    want[((l * 4 + j) * 2 + i) * 2 + k] = x[((i * 4 + j) * 2 + k) * 8 + l];
    tj_buffer bx = tl_upload(dev, x, sizeof x), bo = tl_poisoned(dev, sizeof got);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    const char *what = "a 4-D tile [2,4,2,8] permuted by (3,1,0,2)";
    if (!tl_launch_failed(rank4_launch(dev, &cfg, bx, bo), what)) {
        tl_download(dev, bo, got, sizeof got);
        tl_check(what, TJ_I16, got, want, NE, 0, 0);
    }
}

/* 20000 programs, each one scalar: out[pid] = pid * 3 - num_programs. */
TJ_KERNEL(many_programs, TJ_PARAMS(TJ_PTR(out, i32)), TJ_CONSTS())
{
    tj_val pid = tj_program_id(0);
    tj_store(tj_add(out, pid), tj_sub(tj_mul(pid, 3), tj_num_programs(0)));
}

static void test_many_programs(void)
{
    enum { P = 20000 };
    int32_t *want = malloc(4 * P), *got = malloc(4 * P);
    for (int i = 0; i < P; i++)
        want[i] = i * 3 - P;
    tj_buffer bo = tl_poisoned(dev, 4 * P);
    tj_launch_cfg cfg = tl_grid(P, 1, 1);
    const char *what = "a grid of 20000 programs, every one runs once";
    if (!tl_launch_failed(many_programs_launch(dev, &cfg, bo), what)) {
        tl_download(dev, bo, got, 4 * P);
        tl_check(what, TJ_I32, got, want, P, 0, 0);
    }
    free(want), free(got);
}

/* Scalars only: arithmetic on values loaded one per program. */
TJ_KERNEL(scalars, TJ_PARAMS(TJ_PTR(a, i32), TJ_PTR(f, f32), TJ_PTR(oi, i32), TJ_PTR(of, f32)),
          TJ_CONSTS())
{
    tj_val pid = tj_program_id(0);
    tj_val x = tj_load(tj_add(a, pid)), y = tj_load(tj_add(f, pid));
    tj_val i = tj_add(tj_xor(tj_floordiv(x, 7), tj_mod(x, 5)), tj_shl(tj_and(x, 15), 3));
    i = tj_where(tj_gt(x, 0), i, tj_neg(i));
    tj_store(tj_add(oi, pid), tj_maximum(i, tj_shr(x, 2)));
    tj_val g = tj_add(tj_sqrt(tj_abs(y)), tj_div(x, 4));
    tj_store(tj_add(of, pid), tj_fma(g, y, tj_cast(tj_lt(y, 0), TJ_F32)));
}

static void test_scalars(void)
{
    enum { P = 100 };
    int32_t a[P], wi[P], gi[P];
    float f[P], wf[P], gf[P];
    tl_fill_range(TJ_I32, a, P, -100000, 100000);
    tl_fill_random(TJ_F32, f, P);
    for (int p = 0; p < P; p++) {
        int32_t x = a[p];
        int32_t fq = x / 7 - (x % 7 < 0), fm = x % 5 + (x % 5 < 0) * 5; /* Python's // and % */
        int32_t i = (fq ^ fm) + ((x & 15) << 3);
        i = x > 0 ? i : -i;
        wi[p] = i > (x >> 2) ? i : (x >> 2);
        float g = sqrtf(fabsf(f[p])) + (float)x / 4.0f;
        wf[p] = fmaf(g, f[p], f[p] < 0 ? 1.0f : 0.0f);
    }
    tj_buffer ba = tl_upload(dev, a, sizeof a), bf = tl_upload(dev, f, sizeof f),
              boi = tl_poisoned(dev, sizeof gi), bof = tl_poisoned(dev, sizeof gf);
    tj_launch_cfg cfg = tl_grid(P, 1, 1);
    tj_status st = scalars_launch(dev, &cfg, ba, bf, boi, bof);
    if (!tl_launch_failed(st, "scalar-only integer arithmetic")) {
        tl_download(dev, boi, gi, sizeof gi);
        tl_check("scalar-only integer arithmetic", TJ_I32, gi, wi, P, 0, 0);
    }
    if (!tl_launch_failed(st, "scalar-only float arithmetic")) {
        tl_download(dev, bof, gf, sizeof gf);
        tl_check("scalar-only float arithmetic", TJ_F32, gf, wf, P, 2e-7, 1e-30);
    }
}

/* Sizes a specializing compiler might treat apart: n = 1, n a multiple of
 * 16, odd n, and bases one element off alignment (x + 1). */
TJ_KERNEL(shifted_copy, TJ_PARAMS(TJ_PTR(x, f64), TJ_PTR(out, f64), TJ_SCALAR(n, i32)),
          TJ_CONSTS(SHIFT))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), B), tj_arange(0, B));
    tj_val m = tj_lt(offs, n);
    tj_val v = tj_load(tj_add(tj_add(x, SHIFT), offs), .mask = m);
    tj_store(tj_add(tj_add(out, SHIFT), offs), tj_mul(v, -2), .mask = m);
}

static void test_specializations(void)
{
    const int sizes[] = {1, 16, 48, 64, 3 * B, 77, 2 * B + 1};
    for (int shift = 0; shift < 2; shift++)
        for (size_t i = 0; i < TL_COUNT(sizes); i++) {
            int n = sizes[i], total = n + 2;
            double *x = malloc(8 * total), *want = malloc(8 * total), *got = malloc(8 * total);
            tl_fill_random(TJ_F64, x, total);
            memset(want, TL_POISON, 8 * total);
            for (int k = 0; k < n; k++)
                want[shift + k] = x[shift + k] * -2;
            tj_buffer bx = tl_upload(dev, x, 8 * total), bo = tl_poisoned(dev, 8 * total);
            tj_launch_cfg cfg = tl_grid((n + B - 1) / B, 1, 1);
            char what[160];
            snprintf(what, sizeof what, "n = %d, base %s", n, shift ? "x + 1 (misaligned)" : "x");
            if (!tl_launch_failed(shifted_copy_launch(dev, &cfg, bx, bo, n, shift), what)) {
                tl_download(dev, bo, got, 8 * total);
                tap_ok(memcmp(got, want, 8 * total) == 0, "%s", what);
            }
            tj_buffer_free(dev, bx);
            tj_buffer_free(dev, bo);
            free(x), free(want), free(got);
        }
}

/* where with an [M, 1] condition over [M, N] and [1, N] operands, and an
 * if whose condition is a reduction. */
TJ_KERNEL(bcast_where,
          TJ_PARAMS(TJ_PTR(c, i1), TJ_PTR(a, f32), TJ_PTR(b, f32), TJ_PTR(out, f32),
                    TJ_PTR(flag, i32)),
          TJ_CONSTS())
{
    tj_val r = tj_expand_dims(tj_arange(0, 16), 1), col = tj_expand_dims(tj_arange(0, 32), 0);
    tj_val cond = tj_load(tj_add(c, r));                         /* [16, 1] i1 */
    tj_val av = tj_load(tj_add(a, tj_add(tj_mul(r, 32), col))); /* [16, 32] */
    tj_val bv = tj_load(tj_add(b, col));                         /* [1, 32] */
    tj_val w = tj_where(cond, av, bv);
    tj_store(tj_add(out, tj_add(tj_mul(r, 32), col)), w);
    tj_val f = tj_i32(-1);
    TJ_IF(tj_gt(tj_sum(tj_sum(w, 1), 0), 0), &f) {
        f = tj_i32(1);
    }
    tj_store(flag, f);
}

static void test_bcast_where(void)
{
    uint8_t c[16];
    float a[16 * 32], b[32], want[16 * 32], got[16 * 32];
    int32_t flag;
    for (int i = 0; i < 16; i++)
        c[i] = tl_rand_u64() & 1;
    tl_fill_random(TJ_F32, a, 16 * 32);
    tl_fill_random(TJ_F32, b, 32);
    double total = 0;
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 32; j++)
            total += want[i * 32 + j] = c[i] ? a[i * 32 + j] : b[j];
    tj_buffer bc = tl_upload(dev, c, sizeof c), ba = tl_upload(dev, a, sizeof a),
              bb = tl_upload(dev, b, sizeof b), bo = tl_poisoned(dev, sizeof got),
              bf = tl_poisoned(dev, 4);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    tj_status st = bcast_where_launch(dev, &cfg, bc, ba, bb, bo, bf);
    if (!tl_launch_failed(st, "where with an [M,1] i1 condition, [M,N] and [1,N] operands")) {
        tl_download(dev, bo, got, sizeof got);
        tl_check("where with an [M,1] i1 condition, [M,N] and [1,N] operands", TJ_F32, got, want,
                 16 * 32, 0, 0);
        tl_download(dev, bf, &flag, 4);
        int sure = fabs(total) > 1e-3; /* float sums may differ in the last bits */
        tap_ok(!sure || flag == (total > 0 ? 1 : -1),
               "TJ_IF on a reduced condition (sum %g): flag %d", total, flag);
    }
}

int main(void)
{
    dev = tl_setup("test_programs");
    test_order();
    test_reuse();
    test_carried_ptr();
    test_csr();
    test_histogram();
    test_wild_masked();
    test_long_chain();
    test_square();
    test_rank4();
    test_many_programs();
    test_scalars();
    test_specializations();
    test_bcast_where();
    tj_device_close(dev);
    return tap_done();
}
