/* SPDX-License-Identifier: MIT */
/*
 * grouped_matmul — a group of independent matrix products C_g = A_g B_g of
 * different sizes in one launch, as Triton's tutorial 08 (grouped GEMM)
 * writes it, in tjit.
 *
 * The group is described by tables in device memory, not by kernel
 * arguments, so one compiled kernel serves any group: the addresses of
 * each A_g, B_g and C_g (i64, from tj_buffer_address), their sizes
 * (M, N, K) and leading dimensions. The kernel reads an address and makes a
 * pointer of it (tj_int_to_ptr); from there it is the matmul tutorial's
 * loop, a TJ_FOR over K with tj_dot into an f32 accumulator.
 *
 * The grid is persistent: one program per processor (a GPU's SMs, a CPU's
 * threads). The tiles of all products are numbered one after the other,
 * product by product; program p takes tiles p, p + programs, p + 2
 * programs, ... For each product a TJ_WHILE runs the program's tiles that
 * fall in its range, then the next product's range starts where this one
 * ended. Programs never wait for one another, and a small product next to a
 * large one does not leave processors idle, as one launch per product
 * would at its tail.
 *
 * tjit knows nothing of what it reads from a table: a pointer made from an
 * integer may point into any buffer, and its alignment, like the
 * divisibility of a size or a leading dimension, is unknown, which would
 * leave every load and store 2 bytes wide (the masks of the K tail and of
 * C's columns could change at any element). So the host makes them known
 * and the kernel says so with tj_multiple_of: the addresses are of whole
 * buffers, which tjit aligns to 256 bytes, and each product is stored with
 * N and K padded with zeros to multiples of 8 (16 bytes of f16; the zeros
 * add nothing to C). Then every row of a tile starts 16-byte aligned, the
 * masks hold or fail for 8 elements at once, and each access moves 16
 * bytes, as in the matmul sample. Rows of A past the product are wrapped
 * (% M) as there; columns of B are masked instead (a wrap by N keeps the
 * runs of 8 only where N is known not to be 0, which a table cannot say),
 * as is the K tail and C's store, so any M works, 0 included.
 *
 * The check is exact: small-integer inputs make every product and partial
 * sum an integer that f32 holds exactly, so each C_g, rounded once to f16,
 * must equal the C loop's sum bit for bit.
 *
 *     usage: grouped_matmul [G [M N K]]   (default 4 products around
 *            1024 x 1024 x 1024: product g is M + 96g x N - 64g x K + 32g)
 */
#include "matmul_host.h"

enum { BM = 128, BN = 128, BK = 32 };

TJ_KERNEL(grouped_matmul,
          TJ_PARAMS(TJ_PTR(a_addrs, i64), TJ_PTR(b_addrs, i64), TJ_PTR(c_addrs, i64), TJ_PTR(sizes, i32),
                    TJ_PTR(lds, i32), TJ_SCALAR(group_size, i32)),
          TJ_CONSTS(BLOCK_M, BLOCK_N, BLOCK_K))
{
    tj_val tile = tj_program_id(0), programs = tj_num_programs(0);
    tj_val first_tile = tj_i32(0); /* where product g's tiles start */
    TJ_FOR(g, 0, group_size, 1, &tile, &first_tile) {
        /* N and K padded to multiples of 8 (zeros): the host's promise */
        tj_val M = tj_load(tj_add(sizes, tj_mul(g, 3)));
        tj_val N = tj_multiple_of(tj_load(tj_add(sizes, tj_add(tj_mul(g, 3), 1))), 8);
        tj_val K = tj_multiple_of(tj_load(tj_add(sizes, tj_add(tj_mul(g, 3), 2))), 8);
        tj_val lda = tj_multiple_of(tj_load(tj_add(lds, tj_mul(g, 3))), 8);
        tj_val ldb = tj_multiple_of(tj_load(tj_add(lds, tj_add(tj_mul(g, 3), 1))), 8);
        tj_val ldc = tj_multiple_of(tj_load(tj_add(lds, tj_add(tj_mul(g, 3), 2))), 8);
        tj_val a = tj_int_to_ptr(tj_multiple_of(tj_load(tj_add(a_addrs, g)), 16), TJ_F16);
        tj_val b = tj_int_to_ptr(tj_multiple_of(tj_load(tj_add(b_addrs, g)), 16), TJ_F16);
        tj_val c = tj_int_to_ptr(tj_multiple_of(tj_load(tj_add(c_addrs, g)), 16), TJ_F16);
        tj_val tiles_n = tj_cdiv(N, BLOCK_N);
        tj_val end_tile = tj_add(first_tile, tj_mul(tj_cdiv(M, BLOCK_M), tiles_n));
        /* tile >= first_tile holds here: the previous product's loop ended at its end */
        TJ_WHILE(&tile) {
            TJ_WHILE_COND(tj_lt(tile, end_tile));
            tj_val t = tj_sub(tile, first_tile);
            tj_val row0 = tj_mul(tj_floordiv(t, tiles_n), BLOCK_M), col0 = tj_mul(tj_mod(t, tiles_n), BLOCK_N);
            tj_val rows = tj_mod(tj_add(row0, tj_arange(0, BLOCK_M)), M);
            tj_val cols = tj_add(col0, tj_arange(0, BLOCK_N));
            tj_val ks = tj_arange(0, BLOCK_K);
            tj_val a_ptrs = tj_add(a, tj_add(tj_mul(tj_expand_dims(rows, 1), lda), tj_expand_dims(ks, 0)));
            tj_val b_ptrs = tj_add(b, tj_add(tj_mul(tj_expand_dims(ks, 1), ldb), tj_expand_dims(cols, 0)));
            tj_val acc = tj_zeros(TJ_SHAPE(BLOCK_M, BLOCK_N), TJ_F32);
            TJ_FOR(kk, 0, tj_cdiv(K, BLOCK_K), 1, &acc, &a_ptrs, &b_ptrs) {
                tj_val k_left = tj_sub(K, tj_mul(kk, BLOCK_K));
                tj_val a_tile = tj_load(a_ptrs, .mask = tj_lt(tj_expand_dims(ks, 0), k_left));
                tj_val b_tile = tj_load(b_ptrs, .mask = tj_and(tj_lt(tj_expand_dims(ks, 1), k_left),
                                                               tj_lt(tj_expand_dims(cols, 0), N)));
                acc = tj_dot(a_tile, b_tile, acc);
                a_ptrs = tj_add(a_ptrs, BLOCK_K);
                b_ptrs = tj_add(b_ptrs, tj_mul(ldb, BLOCK_K));
            }
            tj_val cm = tj_expand_dims(tj_add(row0, tj_arange(0, BLOCK_M)), 1);
            tj_val cn = tj_expand_dims(cols, 0);
            tj_store(tj_add(c, tj_add(tj_mul(cm, ldc), cn)), tj_cast(acc, TJ_F16),
                     .mask = tj_and(tj_lt(cm, M), tj_lt(cn, N)));
            tile = tj_add(tile, programs);
        }
        first_tile = end_tile;
    }
}

/* One product: A (m x k), B (k x n), C (m x n), row-major, stored with n
 * and k padded with zeros to n8 and k8, multiples of 8 (A: m x k8, B: k8 x
 * n8, C: m x n8). */
typedef struct product {
    int32_t m, n, k, n8, k8;
    float *a, *b;   /* host copies, padding included */
    tj_buffer da, db, dc;
} product;

typedef struct group {
    tj_device *dev;
    int count, programs;
    tj_buffer a_addrs, b_addrs, c_addrs, sizes, lds;
} group;

static void launch(void *ctx)
{
    const group *g = ctx;
    tj_launch_cfg cfg = {.grid = {g->programs}, .num_warps = 4};
    CHECK(grouped_matmul_launch(g->dev, &cfg, g->a_addrs, g->b_addrs, g->c_addrs, g->sizes, g->lds, g->count, BM,
                                BN, BK));
}

static tj_buffer upload_table(tj_device *dev, const void *host, size_t bytes)
{
    tj_buffer buf;
    CHECK(tj_buffer_alloc(dev, bytes, &buf));
    CHECK(tj_buffer_write(dev, buf, 0, host, bytes));
    return buf;
}

static int32_t padded(int32_t cols) { return (cols + 7) / 8 * 8; }

/* A rows8 x cols8 matrix: small integers in its first rows x cols, zeros
 * around them. */
static float *small_integers(int32_t rows, int32_t cols, int32_t rows8, int32_t cols8)
{
    float *x = xmalloc((size_t)rows8 * (size_t)cols8 * sizeof *x);
    for (int64_t r = 0; r < rows8; r++)
        for (int32_t c = 0; c < cols8; c++)
            x[r * cols8 + c] = r < rows && c < cols ? floorf(random_float(-3, 4)) : 0.0f;
    return x;
}

/* Does C (downloaded, n8 wide) equal the exact product rounded to f16, bit
 * for bit? Large products are checked on sampled rows. */
static int check(const product *p, const float *c)
{
    int all_rows = (double)p->m * p->n * p->k <= 0x1p28;
    for (int64_t i = 0; i < p->m; i++) {
        if (!all_rows && i >= 2 && i < p->m - 2 && i % 97)
            continue;
        for (int64_t j = 0; j < p->n; j++) {
            float sum = 0; /* exact: integers below 2^24 */
            for (int64_t kk = 0; kk < p->k; kk++)
                sum += p->a[i * p->k8 + kk] * p->b[kk * p->n8 + j];
            float want = tj_f16_to_f32(tj_f32_to_f16(sum)), got = c[i * p->n8 + j];
            if (memcmp(&got, &want, sizeof got) != 0) {
                printf("C[%lld][%lld] = %.9g, expected %.9g\n", (long long)i, (long long)j, got, want);
                return 0;
            }
        }
    }
    return 1;
}

int main(int argc, char **argv)
{
    const int64_t count = size_arg(argc, argv, 1, 4);
    const int64_t m = size_arg(argc, argv, 2, 1024), n = size_arg(argc, argv, 3, 1024);
    const int64_t k = size_arg(argc, argv, 4, 1024);
    if (count > 64 || m + 96 * count > 46000 || n > 46000 || k + 32 * count > 46000) {
        fprintf(stderr, "grouped_matmul: at most 64 products of sides below 46000\n");
        return 2;
    }
    tj_device *dev = open_default_device();
    printf("grouped_matmul: %lld products from %lld x %lld x %lld, seed = %llu\n", (long long)count, (long long)m,
           (long long)n, (long long)k, (unsigned long long)sample_seed());
    group g = {.dev = dev, .count = (int)count, .programs = tj_device_processors(dev)};
    product *ps = xmalloc((size_t)count * sizeof *ps);
    int64_t *addrs = xmalloc(3 * (size_t)count * sizeof *addrs);
    int32_t *sizes = xmalloc(3 * (size_t)count * sizeof *sizes), *lds = xmalloc(3 * (size_t)count * sizeof *lds);
    double flops = 0;
    for (int i = 0; i < count; i++) {
        product *p = &ps[i];
        p->m = (int32_t)(m + 96 * i), p->n = (int32_t)(n > 64 * i ? n - 64 * i : 1 + i);
        p->k = (int32_t)(k + 32 * i);
        p->n8 = padded(p->n), p->k8 = padded(p->k);
        p->a = small_integers(p->m, p->k, p->m, p->k8);
        p->b = small_integers(p->k, p->n, p->k8, p->n8);
        p->da = matmul_upload(dev, TJ_F16, p->a, (size_t)p->m * p->k8);
        p->db = matmul_upload(dev, TJ_F16, p->b, (size_t)p->k8 * p->n8);
        p->dc = matmul_upload(dev, TJ_F16, NULL, (size_t)p->m * p->n8);
        tj_buffer bufs[3] = {p->da, p->db, p->dc};
        for (int t = 0; t < 3; t++) {
            uint64_t address;
            CHECK(tj_buffer_address(dev, bufs[t], &address));
            addrs[t * count + i] = (int64_t)address;
        }
        sizes[3 * i] = p->m, sizes[3 * i + 1] = p->n8, sizes[3 * i + 2] = p->k8;
        lds[3 * i] = p->k8, lds[3 * i + 1] = p->n8, lds[3 * i + 2] = p->n8;
        flops += 2.0 * p->m * p->n * p->k;
    }
    g.a_addrs = upload_table(dev, addrs, (size_t)count * sizeof *addrs);
    g.b_addrs = upload_table(dev, addrs + count, (size_t)count * sizeof *addrs);
    g.c_addrs = upload_table(dev, addrs + 2 * count, (size_t)count * sizeof *addrs);
    g.sizes = upload_table(dev, sizes, 3 * (size_t)count * sizeof *sizes);
    g.lds = upload_table(dev, lds, 3 * (size_t)count * sizeof *lds);

    launch(&g);
    int ok = 1;
    for (int i = 0; i < count; i++) {
        const product *p = &ps[i];
        float *c = xmalloc((size_t)p->m * p->n8 * sizeof *c);
        matmul_download(dev, TJ_F16, p->dc, c, (size_t)p->m * p->n8);
        int good = check(p, c);
        printf("%s  product %d: %d x %d x %d, small-integer inputs (exact)\n", good ? "PASS" : "FAIL", i, p->m, p->n,
               p->k);
        ok &= good;
        free(c);
    }
    double seconds = median_seconds(dev, 10, launch, &g);
    printf("%s  grouped matmul f16, %d products on %d programs, tiles %d x %d x %d: %.3f TFLOP/s (%.3f ms, "
           "median of 10 runs)\n",
           ok ? "PASS" : "FAIL", g.count, g.programs, BM, BN, BK, flops / seconds / 1e12, seconds * 1e3);

    for (int i = 0; i < count; i++) {
        CHECK(tj_buffer_free(dev, ps[i].da));
        CHECK(tj_buffer_free(dev, ps[i].db));
        CHECK(tj_buffer_free(dev, ps[i].dc));
        free(ps[i].a), free(ps[i].b);
    }
    tj_buffer tables[] = {g.a_addrs, g.b_addrs, g.c_addrs, g.sizes, g.lds};
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++)
        CHECK(tj_buffer_free(dev, tables[t]));
    free(ps), free(addrs), free(sizes), free(lds);
    tj_device_close(dev);
    return !ok;
}
