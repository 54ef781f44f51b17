/* SPDX-License-Identifier: MIT */
/*
 * test_explain.c — the layout explainer (tjp_explain) on two kernels.
 *
 * Vector add and a 32x32 transpose are built, given layouts for 4 warps and
 * axis info without a specialization, and explained. The text must state the
 * facts that follow from the layouts and the address analysis: vector add's
 * loads are contiguous along dim 0 and one warp request touches 4 sectors,
 * the minimum for 32 lanes of 4 bytes; the transpose needs exactly one
 * conversion, through shared memory, whose writes and reads take one
 * wavefront per warp request (the swizzle leaves no bank conflict); and each
 * access names its source line (recorded by the kernel bodies as they are
 * built). Where lanes run along a dimension of unknown stride, the text says
 * so and gives no count. Reductions across warps and prefix sums show their
 * shared-memory steps and bank conflicts too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder/ir.h"
#include "jit/pipeline.h"
#include "passes/passes.h"
#include "tap.h"
#include "testlib.h"

static int vadd_load_line, transpose_store_line;

TJ_KERNEL(vadd, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32), TJ_PTR(out, f32), TJ_SCALAR(n, i32)),
          TJ_CONSTS(BLOCK))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val mask = tj_lt(offs, n);
    vadd_load_line = __LINE__; tj_val a = tj_load(tj_add(x, offs), .mask = mask);
    tj_val b = tj_load(tj_add(y, offs), .mask = mask);
    tj_store(tj_add(out, offs), tj_add(a, b), .mask = mask);
}

TJ_KERNEL(transpose, TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(m, i32), TJ_SCALAR(n, i32)),
          TJ_CONSTS(B))
{
    tj_val rows = tj_add(tj_mul(tj_program_id(0), B), tj_arange(0, B));
    tj_val cols = tj_add(tj_mul(tj_program_id(1), B), tj_arange(0, B));
    tj_val r = tj_expand_dims(rows, 1), c = tj_expand_dims(cols, 0);
    tj_val in_mask = tj_and(tj_lt(r, m), tj_lt(c, n));
    tj_val tile = tj_load(tj_add(src, tj_add(tj_mul(r, n), c)), .mask = in_mask);
    tj_val rt = tj_expand_dims(rows, 0), ct = tj_expand_dims(cols, 1);
    tj_val out_mask = tj_and(tj_lt(rt, m), tj_lt(ct, n));
    transpose_store_line = __LINE__; tj_store(tj_add(dst, tj_add(tj_mul(ct, m), rt)), tj_trans(tile), .mask = out_mask);
}

/* Reads a column-major tile: addresses are contiguous along dim 0, but the
 * lanes of a warp run along dim 1, whose stride (n) is unknown. */
TJ_KERNEL(column_read, TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(n, i32)), TJ_CONSTS(B))
{
    tj_val r = tj_expand_dims(tj_arange(0, B), 1), c = tj_expand_dims(tj_arange(0, B), 0);
    tj_val tile = tj_load(tj_add(src, tj_add(tj_mul(c, n), r)));
    tj_store(tj_add(dst, tj_add(tj_mul(r, B), c)), tile);
}

/* Column sums of a B x B tile: with 4 warps down the rows, the partial sums
 * meet in shared memory; and a prefix sum, which goes through it too. */
TJ_KERNEL(sums_and_scan, TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32)), TJ_CONSTS(B))
{
    tj_val r = tj_expand_dims(tj_arange(0, B), 1), c = tj_expand_dims(tj_arange(0, B), 0);
    tj_val tile = tj_load(tj_add(src, tj_add(tj_mul(r, B), c)));
    tj_store(tj_add(dst, tj_arange(0, B)), tj_sum(tile, 0));
    tj_store(tj_add(dst, tj_arange(0, B)), tj_cumsum(tj_load(tj_add(src, tj_arange(0, B))), 0));
}

/* A row sum and max (softmax's reductions) over 4096 elements. */
TJ_KERNEL(row_reduce, TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32)), TJ_CONSTS(B))
{
    tj_val x = tj_load(tj_add(src, tj_arange(0, B)));
    tj_store(dst, tj_add(tj_sum(x, 0), tj_max(x, 0)));
}

/* Build, the default layouts for 4 warps, explain; NULL on failure. */
static char *explain(const tj_kernel *k, int64_t c)
{
    tji_func *fn;
    if (tji_build(k, &c, 1, &fn) != TJ_OK) {
        tap_diag("build: %s", tj_last_error());
        return NULL;
    }
    tjj_gpu_planned planned;
    char *text = NULL;
    if (tjj_gpu_plan(fn, &(tjj_gpu_target){.num_warps = 4, .default_layouts = 1}, &planned) == TJ_OK)
        text = tjj_gpu_explain(fn, &planned);
    else
        tap_diag("%s", tj_last_error());
    tjj_gpu_planned_free(&planned);
    tji_func_free(fn);
    return text;
}

/* The text names "test_explain.c:LINE". */
static int names_line(const char *text, int line)
{
    char needle[64];
    snprintf(needle, sizeof needle, "test_explain.c:%d,", line);
    return strstr(text, needle) != NULL;
}

/* tj_kernel_explain: the whole pipeline (specialization, coalescing,
 * layouts) as a launch with these arguments would run it. */
static void test_public_api(void)
{
    int64_t block = 1024;
    tj_arg args[] = {TJ_ARG_BUF((tj_buffer){1}), TJ_ARG_BUF((tj_buffer){2}), TJ_ARG_BUF((tj_buffer){3}),
                     TJ_ARG_I32(1 << 20)};
    char *text = NULL;
    tj_status st = tj_kernel_explain(vadd, args, 4, &block, 1, 4, &text);
    tap_ok(st == TJ_OK && tl_count(text, "vector: 4 element(s) = 16 bytes") == 3 &&
               tl_count(text, "sectors per warp request: 16 (minimum possible 16)") == 3,
           "tj_kernel_explain, vector add with n = 2^20: 16-byte vectors, 16 sectors per warp request, the minimum");
    if (text)
        tap_diag("%s", text);
    free(text);
    text = NULL;
    args[3] = TJ_ARG_I32(1000);
    st = tj_kernel_explain(vadd, args, 4, &block, 1, 4, &text);
    tap_ok(st == TJ_OK && tl_count(text, "vector: 1 element(s) = 4 bytes") == 3 &&
               tl_count(text, "mask constancy 1)") == 3,
           "tj_kernel_explain, n = 1000: the mask allows 1 element per access");
    free(text);
    text = NULL;
    int64_t b = 64;
    st = tj_kernel_explain(transpose, NULL, 0, &b, 1, 4, &text);
    tap_ok(st == TJ_OK && tl_count(text, "convert (op") == 1 &&
               tl_count(text, "bank conflicts: none") == 2 && tl_count(text, "bank conflicts: ") == 2,
           "tj_kernel_explain, 64x64 transpose: one conversion, writes and reads free of bank conflicts");
    free(text);
    int64_t row = 4096;
    st = tj_kernel_explain(row_reduce, NULL, 0, &row, 1, 16, &text);
    tap_ok(st == TJ_OK && tl_count(text, "convert (op") == 0 &&
               tl_count(text, "partial results of 16 warps through shared memory, lane l reads part l % 16") == 2 &&
               tl_count(text, "shared reads (a part per lane): 1 wavefront(s) per warp request at worst (minimum 1); "
                           "16 requests, 16 wavefronts (minimum 16); bank conflicts: none") == 2,
           "tj_kernel_explain, row sum and max at 16 warps: reduced where the load put the row (no "
           "conversion), a part per lane, one conflict-free read per warp");
    if (text)
        tap_diag("%s", text);
    free(text);
    text = (char *)"untouched";
    st = tj_kernel_explain(vadd, args, 3, &block, 1, 4, &text);
    tap_ok(st == TJ_ERR_LAUNCH && text == NULL && strstr(tj_last_error(), "expects 4 arguments"),
           "tj_kernel_explain with too few arguments: %s", tj_last_error());
    st = tj_kernel_explain(vadd, NULL, 0, &block, 1, 3, &text);
    tap_ok(st == TJ_ERR_INVALID_ARG && strstr(tj_last_error(), "num_warps = 3"),
           "tj_kernel_explain with num_warps 3: %s", tj_last_error());
    st = tj_kernel_explain(vadd, NULL, 0, &block, 1, 4, NULL);
    tap_ok(st == TJ_ERR_INVALID_ARG, "tj_kernel_explain with no place for the text: %s", tj_last_error());
}

int main(void)
{
    char *v = explain(vadd, 1024);
    tap_ok(v != NULL, "vector add is explained");
    if (v) {
        tap_diag("%s", v);
        tap_ok(tl_count(v, "load (op") == 2 && tl_count(v, "store (op") == 1,
               "vector add: two loads and one store explained");
        tap_ok(tl_count(v, "pointer: contiguous along dim 0") == 3,
               "vector add: every access contiguous along dim 0");
        tap_ok(tl_count(v, "sectors per warp request: 4 (minimum possible 4)") == 3,
               "vector add: 4 sectors per warp request, minimum 4 (32 lanes x 4 bytes / 32)");
        tap_ok(names_line(v, vadd_load_line), "vector add: the load's source line (%d) is named",
               vadd_load_line);
        tap_ok(tl_count(v, "convert (op") == 0, "vector add: no conversion");
    } else {
        tap_skip(5, "no explanation");
    }

    char *t = explain(transpose, 32);
    tap_ok(t != NULL, "transpose is explained");
    if (t) {
        tap_diag("%s", t);
        tap_ok(tl_count(t, "convert (op") == 1, "transpose: one conversion");
        tap_ok(tl_count(t, "class: shared") == 1, "transpose: the conversion goes through shared memory");
        tap_ok(names_line(t, transpose_store_line),
               "transpose: the store's source line (%d) is named", transpose_store_line);
        tap_ok(tl_count(t, "stride unknown") == 0 && tl_count(t, "sectors per warp request: 4") == 2,
               "transpose: each warp request reads one row run of 32 floats, 4 sectors");
        tap_ok(tl_count(t, "shared memory: 1 x 1024 elements of 4 bytes, swizzle: index ^= bit") == 1,
               "transpose: the shared buffer's swizzle is shown");
        tap_ok(tl_count(t, "shared writes: 1 wavefront(s) per warp request at worst (minimum 1); "
                        "32 requests, 32 wavefronts (minimum 32); bank conflicts: none") == 1 &&
                   tl_count(t, "shared reads: 1 wavefront(s) per warp request at worst (minimum 1); "
                            "32 requests, 32 wavefronts (minimum 32); bank conflicts: none") == 1,
               "transpose: writes and reads through shared memory without bank conflicts, "
               "1 wavefront per warp request");
    } else {
        tap_skip(6, "no explanation");
    }

    char *s = explain(sums_and_scan, 64);
    tap_ok(s && tl_count(s, "reduce (op") == 1 && tl_count(s, "partial results of 4 warps through shared memory") == 1 &&
               tl_count(s, "shared memory: 4 x 64 elements of 4 bytes") == 1 &&
               tl_count(s, "shared reads (of each part): ") == 1 && tl_count(s, "cumsum (op") == 1 &&
               tl_count(s, "bank conflicts: none") >= 4 &&
               tl_count(s, "bank conflicts: none") == tl_count(s, "bank conflicts: "),
           "column sums and a prefix sum: their shared-memory steps are shown, without bank conflicts");
    if (s)
        tap_diag("%s", s);
    free(s);

    char *col = explain(column_read, 32);
    tap_ok(col && strstr(col, "contiguous along dim 0") &&
               strstr(col, "32 runs along dim 0 of 4 bytes each (1 lanes x 1), their distance unknown") &&
               strstr(col, "sectors per warp request: 32 if the runs share no sector (minimum possible 4)"),
           "column read: 32 runs of unknown distance, each a sector of its own, against 4");
    if (col)
        tap_diag("%s", col);
    free(col);

    tap_ok(tjp_explain(NULL, NULL, NULL) == NULL, "NULL arguments give NULL");
    test_public_api();
    free(v);
    free(t);
    return tap_done();
}
