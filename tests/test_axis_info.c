/* SPDX-License-Identifier: MIT */
/*
 * test_axis_info.c — contiguity, divisibility and constancy on real kernels.
 *
 * Each kernel is built with tji_build, analysed under a parameter
 * specialization, and the coalescing answer for its loads is compared with
 * the exact numbers a hand derivation gives: the pointer's contiguity along
 * its best dimension, the widest vector in bytes, and the mask's constancy.
 * The same kernel with and without an alignment promise must give different
 * vectors, so a pass that claimed too much or too little would fail here.
 */
#include <stdlib.h>
#include <string.h>

#include "builder/ir.h"
#include "passes/passes.h"
#include "tap.h"

TJ_KERNEL(vadd, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(out, f32), TJ_SCALAR(n, i32)), TJ_CONSTS(BLOCK))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val mask = tj_lt(offs, n);
    tj_store(tj_add(out, offs), tj_load(tj_add(x, offs), .mask = mask), .mask = mask);
}

/* Loads 0: x + 2*arange; 1: x + 1 + arange; 2: x + (arange & 31);
 * 3: x + (arange >> 2); 4: x + k*BLOCK + arange inside a loop;
 * 5: x + a loaded offset. */
TJ_KERNEL(shapes1d, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(idx, i32), TJ_PTR(out, f32), TJ_SCALAR(iters, i32)),
          TJ_CONSTS(BLOCK))
{
    tj_val a = tj_arange(0, BLOCK);
    tj_val acc = tj_load(tj_add(x, tj_mul(a, 2)));
    acc = tj_add(acc, tj_load(tj_add(tj_add(x, 1), a)));
    acc = tj_add(acc, tj_load(tj_add(x, tj_and(a, 31))));
    acc = tj_add(acc, tj_load(tj_add(x, tj_shr(a, 2))));
    TJ_FOR(k, 0, iters, 1, &acc) {
        acc = tj_add(acc, tj_load(tj_add(x, tj_add(tj_mul(k, BLOCK), a))));
    }
    acc = tj_add(acc, tj_load(tj_add(x, tj_load(tj_add(idx, a)))));
    tj_store(tj_add(out, a), acc);
}

TJ_KERNEL(tile2d, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(out, f32), TJ_SCALAR(m, i32), TJ_SCALAR(n, i32)),
          TJ_CONSTS(BM, BN))
{
    tj_val rows = tj_add(tj_mul(tj_program_id(0), BM), tj_arange(0, BM));
    tj_val cols = tj_arange(0, BN);
    tj_val r = tj_expand_dims(rows, 1), c = tj_expand_dims(cols, 0);
    tj_val offs = tj_add(tj_mul(r, n), c);
    tj_val v = tj_load(tj_add(x, offs), .mask = tj_lt(r, m));
    tj_store(tj_add(out, offs), v);
}

static tji_func *built(const tj_kernel *k, const int64_t *consts, int nconsts)
{
    tji_func *fn;
    if (tji_build(k, consts, nconsts, &fn) != TJ_OK) {
        tap_diag("build: %s", tj_last_error());
        return NULL;
    }
    return fn;
}

/* The index of the nth (from 0) live op with this opcode, or -1. */
static int32_t nth_op(const tji_func *fn, tji_opcode code, int nth)
{
    for (int32_t i = 0; i < fn->nops; i++)
        if (fn->ops[i].parent >= 0 && fn->ops[i].code == code && nth-- == 0)
            return i;
    return -1;
}

typedef struct expect {
    int dim, contiguity, vector_bytes, mask_constancy;
} expect;

/* Analyses fn under spec and checks the nth load (or store) against e. */
static void check(const tji_func *fn, const tjp_param_spec *spec, tji_opcode code, int nth,
                  expect e, const char *what)
{
    tjp_axis_info_result info = {0};
    tjp_access acc = {-1, 0, 0, 0};
    int32_t op = fn ? nth_op(fn, code, nth) : -1;
    int contig = -1;
    if (op >= 0 && tjp_axis_info(fn, spec, &info) == TJ_OK &&
        tjp_access_vector(fn, &info, op, &acc) == TJ_OK)
        contig = info.of[fn->ops[op].args[0]].contiguity[acc.dim];
    else
        tap_diag("%s", op < 0 ? "no such op" : tj_last_error());
    tap_ok(acc.dim == e.dim && contig == e.contiguity && acc.vector_bytes == e.vector_bytes &&
               acc.mask_constancy == e.mask_constancy,
           "%s: dim %d, contiguity %d, vector %d bytes, mask constancy %d (got %d, %d, %d, %d)",
           what, e.dim, e.contiguity, e.vector_bytes, e.mask_constancy, acc.dim, contig,
           acc.vector_bytes, acc.mask_constancy);
    tjp_axis_info_free(&info);
}

int main(void)
{
    static const tjp_param_spec none[4];
    static const tjp_param_spec aligned[4] = {{1, 0, 0}, {1, 0, 0}, {1, 0, 0}, {0, 0, 0}};
    static const tjp_param_spec vadd_div[3] = {{1, 0, 0}, {1, 0, 0}, {0, 1, 0}};

    int64_t block = 1024;
    tji_func *fn = built(vadd, &block, 1);
    check(fn, aligned, TJI_LOAD, 0, (expect){0, 1024, 16, 1}, "vector add, 16-byte aligned");
    check(fn, aligned, TJI_STORE, 0, (expect){0, 1024, 16, 1}, "vector add store, aligned");
    check(fn, NULL, TJI_LOAD, 0, (expect){0, 1024, 4, 1}, "vector add, no specialization");
    check(fn, none, TJI_LOAD, 0, (expect){0, 1024, 4, 1}, "vector add, nothing promised");
    check(fn, vadd_div, TJI_LOAD, 0, (expect){0, 1024, 16, 16},
          "vector add, aligned, n divisible by 16: the mask is constant over 16");
    tji_func_free(fn);

    int64_t two = 2;
    fn = built(vadd, &two, 1);
    check(fn, aligned, TJI_LOAD, 0, (expect){0, 2, 8, 1}, "vector add, BLOCK 2: two floats");
    tji_func_free(fn);

    int64_t b256 = 256;
    fn = built(shapes1d, &b256, 1);
    check(fn, aligned, TJI_LOAD, 0, (expect){0, 1, 4, 256}, "x + 2*arange: strided");
    check(fn, aligned, TJI_LOAD, 1, (expect){0, 256, 4, 256}, "x + 1 + arange: misaligned base");
    check(fn, aligned, TJI_LOAD, 2, (expect){0, 32, 16, 256}, "x + (arange & 31): runs of 32");
    check(fn, aligned, TJI_LOAD, 3, (expect){0, 1, 4, 256}, "x + (arange >> 2): not contiguous");
    check(fn, aligned, TJI_LOAD, 4, (expect){0, 256, 16, 256},
          "x + k*BLOCK + arange in a loop: the unknown k keeps BLOCK's divisibility");
    check(fn, aligned, TJI_LOAD, 6, (expect){0, 1, 4, 256}, "x + a loaded offset: unknown");
    check(fn, aligned, TJI_LOAD, 5, (expect){0, 256, 16, 256}, "idx + arange (i32)");

    /* Constancy from a right shift: arange >> 2 repeats each value 4 times. */
    {
        tjp_axis_info_result info = {0};
        int32_t op = fn ? nth_op(fn, TJI_SHR, 0) : -1;
        int k = -1;
        if (op >= 0 && tjp_axis_info(fn, aligned, &info) == TJ_OK)
            k = info.of[fn->ops[op].result].constancy[0];
        tap_ok(k == 4, "arange >> 2: constancy 4 (got %d)", k);
        tjp_axis_info_free(&info);
    }
    tji_func_free(fn);

    int64_t mn[2] = {32, 64};
    static const tjp_param_spec n16[4] = {{1, 0, 0}, {1, 0, 0}, {0, 0, 0}, {0, 1, 0}};
    fn = built(tile2d, mn, 2);
    check(fn, n16, TJI_LOAD, 0, (expect){1, 64, 16, 64},
          "2-D tile, n divisible by 16: rows of 64, 16-byte vectors, row mask constant along dim 1");
    check(fn, aligned, TJI_LOAD, 0, (expect){1, 64, 4, 64},
          "2-D tile, n unknown: rows of 64 but only 4-byte accesses");
    {
        tjp_axis_info_result info = {0};
        int32_t op = fn ? nth_op(fn, TJI_LOAD, 0) : -1;
        int c0 = -1, k0 = -1, k1 = -1;
        if (op >= 0 && tjp_axis_info(fn, n16, &info) == TJ_OK) {
            c0 = info.of[fn->ops[op].args[0]].contiguity[0];
            k0 = info.of[fn->ops[op].args[1]].constancy[0];
            k1 = info.of[fn->ops[op].args[1]].constancy[1];
        }
        tap_ok(c0 == 1 && k0 == 1 && k1 == 64,
               "2-D tile: contiguity 1 along dim 0; broadcast mask constancy 1 x 64 (got %d; %d x %d)",
               c0, k0, k1);
        tjp_axis_info_free(&info);
    }
    tji_func_free(fn);

    /* Bad input is an error, not a crash. */
    tjp_axis_info_result none_r = {0};
    tap_ok(tjp_axis_info(NULL, NULL, &none_r) == TJ_ERR_INVALID_ARG, "no function: an error");
    return tap_done();
}
