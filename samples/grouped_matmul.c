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
 * tjit knows nothing of a pointer made from an integer: it may point into
 * any buffer, its alignment is unknown. The addresses here are of whole
 * buffers, which tjit aligns to 256 bytes, and the kernel says so with
 * tj_multiple_of(address, 16); then 16-byte loads are legal wherever the
 * leading dimension is a multiple of 8 f16s (the tutorial says the same of
 * its pointers). Rows of A and columns of B past the product are wrapped
 * (% M, % N) as in the matmul sample, the K tail is masked, C's store is
 * masked, so every size works, 0 included.
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
        tj_val M = tj_load(tj_add(sizes, tj_mul(g, 3))), N = tj_load(tj_add(sizes, tj_add(tj_mul(g, 3), 1)));
        tj_val K = tj_load(tj_add(sizes, tj_add(tj_mul(g, 3), 2)));
        tj_val lda = tj_load(tj_add(lds, tj_mul(g, 3))), ldb = tj_load(tj_add(lds, tj_add(tj_mul(g, 3), 1)));
        tj_val ldc = tj_load(tj_add(lds, tj_add(tj_mul(g, 3), 2)));
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
            tj_val cols = tj_mod(tj_add(col0, tj_arange(0, BLOCK_N)), N);
            tj_val ks = tj_arange(0, BLOCK_K);
            tj_val a_ptrs = tj_add(a, tj_add(tj_mul(tj_expand_dims(rows, 1), lda), tj_expand_dims(ks, 0)));
            tj_val b_ptrs = tj_add(b, tj_add(tj_mul(tj_expand_dims(ks, 1), ldb), tj_expand_dims(cols, 0)));
            tj_val acc = tj_zeros(TJ_SHAPE(BLOCK_M, BLOCK_N), TJ_F32);
            TJ_FOR(kk, 0, tj_cdiv(K, BLOCK_K), 1, &acc, &a_ptrs, &b_ptrs) {
                tj_val k_left = tj_sub(K, tj_mul(kk, BLOCK_K));
                tj_val a_tile = tj_load(a_ptrs, .mask = tj_lt(tj_expand_dims(ks, 0), k_left));
                tj_val b_tile = tj_load(b_ptrs, .mask = tj_lt(tj_expand_dims(ks, 1), k_left));
                acc = tj_dot(a_tile, b_tile, acc);
                a_ptrs = tj_add(a_ptrs, BLOCK_K);
                b_ptrs = tj_add(b_ptrs, tj_mul(ldb, BLOCK_K));
            }
            tj_val cm = tj_expand_dims(tj_add(row0, tj_arange(0, BLOCK_M)), 1);
            tj_val cn = tj_expand_dims(tj_add(col0, tj_arange(0, BLOCK_N)), 0);
            tj_store(tj_add(c, tj_add(tj_mul(cm, ldc), cn)), tj_cast(acc, TJ_F16),
                     .mask = tj_and(tj_lt(cm, M), tj_lt(cn, N)));
            tile = tj_add(tile, programs);
        }
        first_tile = end_tile;
    }
}

typedef struct group {
    tj_device *dev;
    int count, programs;
    matmul_problem *p;                    /* one per product, row-major, f16 */
    tj_buffer a_addrs, b_addrs, c_addrs, sizes, lds;
} group;

static void launch(void *ctx)
{
    const group *g = ctx;
    tj_launch_cfg cfg = {.grid = {g->programs}, .num_warps = 8};
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
    group g = {.dev = dev, .count = (int)count, .programs = tj_device_processors(dev),
               .p = xmalloc((size_t)count * sizeof(matmul_problem))};
    float **a = xmalloc((size_t)count * sizeof *a), **b = xmalloc((size_t)count * sizeof *b);
    int64_t *addrs = xmalloc(3 * (size_t)count * sizeof *addrs);
    int32_t *sizes = xmalloc(3 * (size_t)count * sizeof *sizes), *lds = xmalloc(3 * (size_t)count * sizeof *lds);
    double flops = 0;
    for (int i = 0; i < count; i++) {
        int32_t mi = (int32_t)(m + 96 * i), ni = (int32_t)(n > 64 * i ? n - 64 * i : 1 + i);
        int32_t ki = (int32_t)(k + 32 * i);
        matmul_problem *p = &g.p[i];
        *p = (matmul_problem){.dev = dev, .dtype = TJ_F16, .m = mi, .n = ni, .k = ki, .bm = BM, .bn = BN, .bk = BK,
                              .warps = 8};
        a[i] = xmalloc((size_t)mi * ki * sizeof(float));
        b[i] = xmalloc((size_t)ki * ni * sizeof(float));
        for (int64_t e = 0; e < (int64_t)mi * ki; e++)
            a[i][e] = floorf(random_float(-3, 4));
        for (int64_t e = 0; e < (int64_t)ki * ni; e++)
            b[i][e] = floorf(random_float(-3, 4));
        p->a = matmul_upload(dev, TJ_F16, a[i], (size_t)mi * ki);
        p->b = matmul_upload(dev, TJ_F16, b[i], (size_t)ki * ni);
        p->c = matmul_upload(dev, TJ_F16, NULL, (size_t)mi * ni);
        uint64_t address;
        CHECK(tj_buffer_address(dev, p->a, &address));
        addrs[i] = (int64_t)address;
        CHECK(tj_buffer_address(dev, p->b, &address));
        addrs[count + i] = (int64_t)address;
        CHECK(tj_buffer_address(dev, p->c, &address));
        addrs[2 * count + i] = (int64_t)address;
        sizes[3 * i] = mi, sizes[3 * i + 1] = ni, sizes[3 * i + 2] = ki;
        lds[3 * i] = ki, lds[3 * i + 1] = ni, lds[3 * i + 2] = ni;
        flops += 2.0 * mi * ni * ki;
    }
    g.a_addrs = upload_table(dev, addrs, (size_t)count * sizeof *addrs);
    g.b_addrs = upload_table(dev, addrs + count, (size_t)count * sizeof *addrs);
    g.c_addrs = upload_table(dev, addrs + 2 * count, (size_t)count * sizeof *addrs);
    g.sizes = upload_table(dev, sizes, 3 * (size_t)count * sizeof *sizes);
    g.lds = upload_table(dev, lds, 3 * (size_t)count * sizeof *lds);

    launch(&g);
    int ok = 1;
    for (int i = 0; i < count; i++) {
        matmul_problem *p = &g.p[i];
        float *c = xmalloc((size_t)p->m * p->n * sizeof *c);
        matmul_download(dev, TJ_F16, p->c, c, (size_t)p->m * p->n);
        int good = matmul_check(p, a[i], b[i], c, 1);
        printf("%s  product %d: %d x %d x %d, small-integer inputs (exact)\n", good ? "PASS" : "FAIL", i, p->m,
               p->n, p->k);
        ok &= good;
        free(c);
    }
    double seconds = median_seconds(dev, 10, launch, &g);
    printf("%s  grouped matmul f16, %d products on %d programs, tiles %d x %d x %d: %.3f TFLOP/s (%.3f ms, "
           "median of 10 runs)\n",
           ok ? "PASS" : "FAIL", g.count, g.programs, BM, BN, BK, flops / seconds / 1e12, seconds * 1e3);

    for (int i = 0; i < count; i++) {
        CHECK(tj_buffer_free(dev, g.p[i].a));
        CHECK(tj_buffer_free(dev, g.p[i].b));
        CHECK(tj_buffer_free(dev, g.p[i].c));
        free(a[i]), free(b[i]);
    }
    tj_buffer tables[] = {g.a_addrs, g.b_addrs, g.c_addrs, g.sizes, g.lds};
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++)
        CHECK(tj_buffer_free(dev, tables[t]));
    free(a), free(b), free(addrs), free(sizes), free(lds), free(g.p);
    tj_device_close(dev);
    return !ok;
}
