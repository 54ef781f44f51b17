/* SPDX-License-Identifier: MIT */
/*
 * layer_norm — Triton's tutorial 05 (fused layer normalization, forward and
 * backward) written with tjit.
 *
 * Forward: one program per row of the M x N input x. It walks the row in
 * chunks of BLOCK (a TJ_FOR) three times: for the mean, for the variance
 * (the lanes past the row masked to 0 after subtracting the mean), and to
 * write y = (x - mean) * rstd * w + b. It keeps mean and rstd =
 * 1 / sqrt(var + eps) per row for the backward pass.
 *
 * Backward, as the tutorial does it: one program per row computes dx from
 * the whole row (BLOCK_N >= N), and its share of dw = sum over rows of
 * dy * x_hat and db = sum of dy. Rather than one atomic add per element,
 * rows are dealt to GROUP_M groups (row % GROUP_M); each group owns one row
 * of the partial buffers DW and DB and a lock. A program spins until it
 * takes its group's lock (TJ_WHILE on tj_atomic_cas(lock, 0, 1) == 1),
 * then either starts the group's sums (the count flag is 0: it sets it) or
 * adds to them, stores them, waits for every thread of the program
 * (tj_debug_barrier: all its stores are issued) and releases the lock with
 * tj_atomic_xchg. A second kernel sums the GROUP_M partial rows, BLOCK_M
 * rows at a time, one program per BLOCK_N2 columns.
 *
 * Everything is checked against plain C in float (the sums' order differs:
 * tolerances) and the sample prints PASS or FAIL.
 *
 *     usage: layer_norm [M N]     (default 1151 x 1024)
 */
#include "common.h"
#include "layer_norm_kernel.h"

#define EPS 1e-5f

static void layer_norm_ref(const float *x, const float *w, const float *b, const float *dy, int64_t m,
                           int64_t n, float *y, float *mean, float *rstd, float *dx, float *dw, float *db)
{
    memset(dw, 0, (size_t)n * sizeof(float));
    memset(db, 0, (size_t)n * sizeof(float));
    for (int64_t i = 0; i < m; i++) {
        const float *xr = x + i * n, *dyr = dy + i * n;
        double sum = 0, var = 0, c1 = 0, c2 = 0;
        for (int64_t j = 0; j < n; j++)
            sum += xr[j];
        float mu = (float)(sum / (double)n);
        for (int64_t j = 0; j < n; j++)
            var += (double)(xr[j] - mu) * (xr[j] - mu);
        float rs = 1.0f / sqrtf((float)(var / (double)n) + EPS);
        mean[i] = mu;
        rstd[i] = rs;
        for (int64_t j = 0; j < n; j++) {
            float x_hat = (xr[j] - mu) * rs, wdy = w[j] * dyr[j];
            y[i * n + j] = x_hat * w[j] + b[j];
            c1 += (double)x_hat * wdy;
            c2 += wdy;
            dw[j] += dyr[j] * x_hat;
            db[j] += dyr[j];
        }
        c1 /= (double)n;
        c2 /= (double)n;
        for (int64_t j = 0; j < n; j++) {
            float x_hat = (xr[j] - mu) * rs, wdy = w[j] * dyr[j];
            dx[i * n + j] = (wdy - (x_hat * (float)c1 + (float)c2)) * rs;
        }
    }
}

/* Prints the first element of got that differs from want beyond the
 * tolerances; returns whether there was none. */
static int matches(const char *name, const float *got, const float *want, size_t count, float atol,
                   float rtol)
{
    int64_t bad = first_mismatch(got, want, count, atol, rtol);
    if (bad >= 0)
        printf("%s[%lld] = %g, expected %g\n", name, (long long)bad, got[bad], want[bad]);
    return bad < 0;
}

int main(int argc, char **argv)
{
    const int64_t m = size_arg(argc, argv, 1, 1151), n = size_arg(argc, argv, 2, 1024);
    if (m * n > INT32_MAX || n > 8192) {
        fprintf(stderr, "layer_norm: M * N must fit in i32, and N be at most 8192\n");
        return 2;
    }
    /* The tutorial's choices: the forward's chunk, the backward's whole
     * row, more groups (less waiting on a lock) for shorter rows. */
    const int64_t block = next_pow2(n) < 1024 ? next_pow2(n) : 1024, block_n = next_pow2(n);
    const int64_t group_m = n <= 1024 ? 256 : n <= 4096 ? 128 : 96;
    const int64_t dwdb_m = 32, dwdb_n = 128;
    tj_device *dev = open_default_device();
    printf("layer_norm: %lld x %lld, BLOCK = %lld, GROUP_M = %lld, seed = %llu\n", (long long)m,
           (long long)n, (long long)block, (long long)group_m, (unsigned long long)sample_seed());

    const size_t count = (size_t)(m * n);
    float *x = xmalloc(count * sizeof(float)), *dy = xmalloc(count * sizeof(float));
    float *w = xmalloc((size_t)n * sizeof(float)), *b = xmalloc((size_t)n * sizeof(float));
    fill_random(x, count, -2.3f, 3.1f);
    fill_random(dy, count, -0.1f, 0.1f);
    fill_random(w, (size_t)n, 0.5f, 1.5f);
    fill_random(b, (size_t)n, -0.5f, 0.5f);
    tj_buffer bx = device_floats(dev, x, count), bdy = device_floats(dev, dy, count);
    tj_buffer bw = device_floats(dev, w, (size_t)n), bb = device_floats(dev, b, (size_t)n);
    tj_buffer by = device_floats(dev, NULL, count), bdx = device_floats(dev, NULL, count);
    tj_buffer bmean = device_floats(dev, NULL, (size_t)m), brstd = device_floats(dev, NULL, (size_t)m);
    /* Zeros, as the tutorial's: groups no row falls in (M < GROUP_M) add 0. */
    float *partial_zeros = xmalloc((size_t)(group_m * n) * sizeof(float));
    memset(partial_zeros, 0, (size_t)(group_m * n) * sizeof(float));
    tj_buffer bpdw = device_floats(dev, partial_zeros, (size_t)(group_m * n));
    tj_buffer bpdb = device_floats(dev, partial_zeros, (size_t)(group_m * n));
    tj_buffer bdw = device_floats(dev, NULL, (size_t)n), bdb = device_floats(dev, NULL, (size_t)n);
    int32_t *zeros = xmalloc((size_t)(2 * group_m) * sizeof(int32_t));
    memset(zeros, 0, (size_t)(2 * group_m) * sizeof(int32_t));
    tj_buffer block_locks;
    CHECK(tj_buffer_alloc(dev, (size_t)(2 * group_m) * sizeof(int32_t), &block_locks));
    CHECK(tj_buffer_write(dev, block_locks, 0, zeros, (size_t)(2 * group_m) * sizeof(int32_t)));

    double t0 = now_seconds();
    tj_launch_cfg rows_cfg = {.grid = {m}};
    CHECK(layer_norm_fwd_launch(dev, &rows_cfg, bx, by, bw, bb, bmean, brstd, (int32_t)n, (int32_t)n,
                                EPS, block));
    CHECK(layer_norm_bwd_dx_launch(dev, &rows_cfg, bdx, bdy, bpdw, bpdb, bx, bw, bmean, brstd,
                                   block_locks, (int32_t)n, (int32_t)n, group_m, block_n));
    tj_launch_cfg cols_cfg = {.grid = {cdiv(n, dwdb_n)}};
    CHECK(layer_norm_bwd_dwdb_launch(dev, &cols_cfg, bpdw, bpdb, bdw, bdb, (int32_t)group_m,
                                     (int32_t)n, dwdb_m, dwdb_n));

    float *y = xmalloc(count * sizeof(float)), *dx = xmalloc(count * sizeof(float));
    float *mean = xmalloc((size_t)m * sizeof(float)), *rstd = xmalloc((size_t)m * sizeof(float));
    float *dw = xmalloc((size_t)n * sizeof(float)), *db = xmalloc((size_t)n * sizeof(float));
    CHECK(tj_buffer_read(dev, by, 0, y, count * sizeof(float)));
    CHECK(tj_buffer_read(dev, bdx, 0, dx, count * sizeof(float)));
    CHECK(tj_buffer_read(dev, bmean, 0, mean, (size_t)m * sizeof(float)));
    CHECK(tj_buffer_read(dev, brstd, 0, rstd, (size_t)m * sizeof(float)));
    CHECK(tj_buffer_read(dev, bdw, 0, dw, (size_t)n * sizeof(float)));
    CHECK(tj_buffer_read(dev, bdb, 0, db, (size_t)n * sizeof(float)));
    double seconds = now_seconds() - t0;

    float *want = xmalloc(4 * count * sizeof(float) + 4 * (size_t)(m + n) * sizeof(float));
    float *wy = want, *wdx = wy + count, *wmean = wdx + count, *wrstd = wmean + m;
    float *wdw = wrstd + m, *wdb = wdw + n;
    layer_norm_ref(x, w, b, dy, m, n, wy, wmean, wrstd, wdx, wdw, wdb);
    /* f32 sums in another order (chunks, trees, groups): relative error
     * grows with N; dw and db add M rows. */
    int ok = matches("mean", mean, wmean, (size_t)m, 1e-5f, 1e-4f);
    ok &= matches("rstd", rstd, wrstd, (size_t)m, 1e-5f, 1e-4f);
    ok &= matches("y", y, wy, count, 1e-4f, 1e-4f);
    ok &= matches("dx", dx, wdx, count, 1e-5f, 1e-3f);
    ok &= matches("dw", dw, wdw, (size_t)n, 1e-4f, 1e-3f);
    ok &= matches("db", db, wdb, (size_t)n, 1e-4f, 1e-3f);
    printf("%s  layer_norm forward + backward  (%.3f ms: first launches, compiles included)\n",
           ok ? "PASS" : "FAIL", seconds * 1e3);

    tj_device_close(dev);
    float *host[] = {x, dy, w, b, y, dx, mean, rstd, dw, db, want, partial_zeros};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
        free(host[i]);
    free(zeros);
    return !ok;
}
