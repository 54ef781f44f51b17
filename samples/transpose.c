/* SPDX-License-Identifier: MIT */
/*
 * transpose — dst = src^T for a rows x cols matrix of floats, in 2-D tiles.
 *
 * Program (i, j) of a 2-D grid owns the TILE_R x TILE_C tile of src at
 * rows i*TILE_R.., columns j*TILE_C... Row and column offsets are 1-D
 * aranges turned into a 2-D pointer tile by broadcasting
 * (r[:, None] * cols + c[None, :]); the matrix sizes need not be multiples
 * of the tile, so the mask is (r < rows) & (c < cols), ragged on both edges.
 *
 * Two ways to write the same transpose, both checked and timed:
 *   - trans: load the tile, tj_trans it, store it as a TILE_C x TILE_R tile
 *     whose rows are contiguous in dst — both sides walk memory in order;
 *   - pointers: store the loaded tile unchanged through pointers with the
 *     roles of rows and columns swapped (dst + c * rows + r) — the same
 *     result with strided stores, the "G" of the addressing chain at work.
 *
 * With --explain it runs nothing and prints, for both kernels, what tjit
 * made of their accesses (tj_kernel_explain): the layouts, the vector
 * widths, the sectors per warp request and the shared-memory transpose's
 * swizzle and bank conflicts — for the arguments a launch would get.
 *
 *     usage: transpose [--explain] [rows cols]   (default 1000 x 1500, tiles 32 x 32)
 */
#include "common.h"

TJ_KERNEL(transpose_trans,
          TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(rows, i32),
                    TJ_SCALAR(cols, i32)),
          TJ_CONSTS(TILE_R, TILE_C))
{
    tj_val r = tj_add(tj_mul(tj_program_id(0), TILE_R), tj_arange(0, TILE_R));
    tj_val c = tj_add(tj_mul(tj_program_id(1), TILE_C), tj_arange(0, TILE_C));

    /* src[r, c] as a TILE_R x TILE_C tile */
    tj_val r_col = tj_expand_dims(r, 1); /* [TILE_R, 1] */
    tj_val c_row = tj_expand_dims(c, 0); /* [1, TILE_C] */
    tj_val mask = tj_and(tj_lt(r_col, rows), tj_lt(c_row, cols));
    tj_val tile = tj_load(tj_add(src, tj_add(tj_mul(r_col, cols), c_row)), .mask = mask);

    /* dst[c, r] as a TILE_C x TILE_R tile; dst has `rows` columns */
    tj_val c_col = tj_expand_dims(c, 1); /* [TILE_C, 1] */
    tj_val r_row = tj_expand_dims(r, 0); /* [1, TILE_R] */
    tj_store(tj_add(dst, tj_add(tj_mul(c_col, rows), r_row)), tj_trans(tile),
             .mask = tj_trans(mask));
}

TJ_KERNEL(transpose_pointers,
          TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(rows, i32),
                    TJ_SCALAR(cols, i32)),
          TJ_CONSTS(TILE_R, TILE_C))
{
    tj_val r = tj_expand_dims(tj_add(tj_mul(tj_program_id(0), TILE_R), tj_arange(0, TILE_R)), 1);
    tj_val c = tj_expand_dims(tj_add(tj_mul(tj_program_id(1), TILE_C), tj_arange(0, TILE_C)), 0);
    tj_val mask = tj_and(tj_lt(r, rows), tj_lt(c, cols));
    tj_val tile = tj_load(tj_add(src, tj_add(tj_mul(r, cols), c)), .mask = mask);
    tj_store(tj_add(dst, tj_add(tj_mul(c, rows), r)), tile, .mask = mask);
}

enum { TILE_R = 32, TILE_C = 32 };

struct launch_args {
    tj_device *dev;
    int use_trans;
    tj_buffer src, dst;
    int32_t rows, cols;
};

static void launch(void *ctx)
{
    struct launch_args *a = ctx;
    tj_launch_cfg cfg = {.grid = {cdiv(a->rows, TILE_R), cdiv(a->cols, TILE_C)}};
    if (a->use_trans)
        CHECK(transpose_trans_launch(a->dev, &cfg, a->src, a->dst, a->rows, a->cols, TILE_R,
                                     TILE_C));
    else
        CHECK(transpose_pointers_launch(a->dev, &cfg, a->src, a->dst, a->rows, a->cols,
                                        TILE_R, TILE_C));
}

/* --explain: the explainer's view of both kernels for these sizes. */
static int explain(int32_t rows, int32_t cols)
{
    const tj_kernel *kernels[] = {transpose_trans, transpose_pointers};
    const tj_arg args[] = {TJ_ARG_BUF((tj_buffer){0}), TJ_ARG_BUF((tj_buffer){0}), TJ_ARG_I32(rows),
                           TJ_ARG_I32(cols)};
    const int64_t tiles[] = {TILE_R, TILE_C};
    for (int k = 0; k < 2; k++) {
        char *text;
        CHECK(tj_kernel_explain(kernels[k], args, 4, tiles, 2, 0, &text));
        printf("%s\n", text);
        free(text);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--explain") == 0) {
        argc--, argv++;
        return explain((int32_t)size_arg(argc, argv, 1, 1024), (int32_t)size_arg(argc, argv, 2, 1024));
    }
    const int64_t rows = size_arg(argc, argv, 1, 1000);
    const int64_t cols = size_arg(argc, argv, 2, 1500);
    if (rows * cols > INT32_MAX) {
        fprintf(stderr, "transpose: rows * cols must fit in i32\n");
        return 2;
    }
    const size_t count = (size_t)(rows * cols);
    tj_device *dev = open_default_device();
    printf("transpose: %lld x %lld, tiles %d x %d, seed = %llu\n", (long long)rows,
           (long long)cols, TILE_R, TILE_C, (unsigned long long)sample_seed());

    float *src = xmalloc(count * sizeof(float));
    float *dst = xmalloc(count * sizeof(float));
    fill_random(src, count, -100, 100);
    tj_buffer src_buf = device_floats(dev, src, count);

    int failed = 0;
    for (int use_trans = 1; use_trans >= 0; use_trans--) {
        const char *name = use_trans ? "transpose (tj_trans)" : "transpose (swapped pointers)";
        struct launch_args args = {dev, use_trans, src_buf, device_floats(dev, NULL, count),
                                   (int32_t)rows, (int32_t)cols};
        launch(&args);
        CHECK(tj_buffer_read(dev, args.dst, 0, dst, count * sizeof(float)));
        int64_t bad_i = -1, bad_j = -1;
        for (int64_t i = 0; i < rows && bad_i < 0; i++)
            for (int64_t j = 0; j < cols; j++)
                if (!(dst[j * rows + i] == src[i * cols + j])) {
                    bad_i = i;
                    bad_j = j;
                    break;
                }
        if (bad_i >= 0) {
            printf("dst[%lld][%lld] = %g, expected src[%lld][%lld] = %g\n", (long long)bad_j,
                   (long long)bad_i, dst[bad_j * rows + bad_i], (long long)bad_i,
                   (long long)bad_j, src[bad_i * cols + bad_j]);
            failed = 1;
        }
        double seconds = median_seconds(dev, 10, launch, &args);
        double gbps = 2.0 * (double)count * sizeof(float) / seconds / 1e9;
        printf("%s  %-29s %.2f GB/s  (%.3f ms, median of 10 runs)\n",
               bad_i >= 0 ? "FAIL" : "PASS", name, gbps, seconds * 1e3);
        CHECK(tj_buffer_free(dev, args.dst));
    }

    tj_device_close(dev);
    free(src);
    free(dst);
    return failed;
}
