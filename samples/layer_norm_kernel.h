/* SPDX-License-Identifier: MIT */
/*
 * layer_norm_kernel.h — the layer_norm sample's kernels (samples/layer_norm.c
 * says how they work), shared with tests/test_while.c, which assembles their
 * PTX with ptxas.
 */
#ifndef TJIT_SAMPLES_LAYER_NORM_KERNEL_H
#define TJIT_SAMPLES_LAYER_NORM_KERNEL_H

#include "tjit.h"

TJ_KERNEL(layer_norm_fwd,
          TJ_PARAMS(TJ_PTR(X, f32), TJ_PTR(Y, f32), TJ_PTR(W, f32), TJ_PTR(B, f32),
                    TJ_PTR(Mean, f32), TJ_PTR(Rstd, f32), TJ_SCALAR(stride, i32),
                    TJ_SCALAR(N, i32), TJ_SCALAR(eps, f32)),
          TJ_CONSTS(BLOCK))
{
    tj_val row = tj_program_id(0);
    tj_val x_row = tj_add(X, tj_mul(row, stride)), y_row = tj_add(Y, tj_mul(row, stride));
    tj_val offs = tj_arange(0, BLOCK);
    tj_val acc = tj_zeros(TJ_SHAPE(BLOCK), TJ_F32);
    TJ_FOR(off, 0, N, BLOCK, &acc) {
        tj_val cols = tj_add(off, offs);
        acc = tj_add(acc, tj_load(tj_add(x_row, cols), .mask = tj_lt(cols, N)));
    }
    tj_val mean = tj_div(tj_sum(acc, 0), N);
    tj_val var_acc = tj_zeros(TJ_SHAPE(BLOCK), TJ_F32);
    TJ_FOR(off, 0, N, BLOCK, &var_acc) {
        tj_val cols = tj_add(off, offs), mask = tj_lt(cols, N);
        tj_val x = tj_load(tj_add(x_row, cols), .mask = mask);
        x = tj_where(mask, tj_sub(x, mean), 0.0f);
        var_acc = tj_add(var_acc, tj_mul(x, x));
    }
    tj_val var = tj_div(tj_sum(var_acc, 0), N);
    tj_val rstd = tj_div(1.0f, tj_sqrt(tj_add(var, eps)));
    tj_store(tj_add(Mean, row), mean);
    tj_store(tj_add(Rstd, row), rstd);
    TJ_FOR(off, 0, N, BLOCK) {
        tj_val cols = tj_add(off, offs), mask = tj_lt(cols, N);
        tj_val w = tj_load(tj_add(W, cols), .mask = mask);
        tj_val b = tj_load(tj_add(B, cols), .mask = mask);
        tj_val x = tj_load(tj_add(x_row, cols), .mask = mask);
        tj_val x_hat = tj_mul(tj_sub(x, mean), rstd);
        tj_store(tj_add(y_row, cols), tj_add(tj_mul(x_hat, w), b), .mask = mask);
    }
}

/* dx of one row, and its dy * x_hat and dy added to its group's partial
 * sums under the group's lock. Lock holds GROUP_M locks, then GROUP_M
 * count flags (all zero before the launch). */
TJ_KERNEL(layer_norm_bwd_dx,
          TJ_PARAMS(TJ_PTR(DX, f32), TJ_PTR(DY, f32), TJ_PTR(DW, f32), TJ_PTR(DB, f32),
                    TJ_PTR(X, f32), TJ_PTR(W, f32), TJ_PTR(Mean, f32), TJ_PTR(Rstd, f32),
                    TJ_PTR(Lock, i32), TJ_SCALAR(stride, i32), TJ_SCALAR(N, i32)),
          TJ_CONSTS(GROUP_M, BLOCK_N))
{
    tj_val row = tj_program_id(0);
    tj_val cols = tj_arange(0, BLOCK_N), mask = tj_lt(cols, N);
    tj_val start = tj_mul(row, stride);
    tj_val group = tj_mod(row, GROUP_M);
    tj_val lock = tj_add(Lock, group), count = tj_add(lock, GROUP_M);
    tj_val dw_at = tj_add(tj_add(DW, tj_mul(group, N)), cols);
    tj_val db_at = tj_add(tj_add(DB, tj_mul(group, N)), cols);

    tj_val x = tj_load(tj_add(X, tj_add(start, cols)), .mask = mask);
    tj_val dy = tj_load(tj_add(DY, tj_add(start, cols)), .mask = mask);
    tj_val w = tj_load(tj_add(W, cols), .mask = mask);
    tj_val mean = tj_load(tj_add(Mean, row)), rstd = tj_load(tj_add(Rstd, row));
    tj_val x_hat = tj_where(mask, tj_mul(tj_sub(x, mean), rstd), 0.0f);
    tj_val wdy = tj_where(mask, tj_mul(w, dy), 0.0f);
    tj_val c1 = tj_div(tj_sum(tj_mul(x_hat, wdy), 0), N);
    tj_val c2 = tj_div(tj_sum(wdy, 0), N);
    tj_val dx = tj_mul(tj_sub(wdy, tj_add(tj_mul(x_hat, c1), c2)), rstd);
    tj_store(tj_add(DX, tj_add(start, cols)), dx, .mask = mask);

    tj_val partial_dw = tj_mul(dy, x_hat), partial_db = dy;
    TJ_WHILE() {
        TJ_WHILE_COND(tj_eq(tj_atomic_cas(lock, 0, 1), 1));
    }
    /* Another program, maybe on another SM, wrote these last: the loads go
     * past the L1 cache (volatile, .cg). */
    tj_val first = tj_eq(tj_load(count, .is_volatile = 1), 0);
    TJ_IF(first, &partial_dw, &partial_db) {
        tj_atomic_xchg(count, 1);
    } TJ_ELSE {
        partial_dw = tj_add(partial_dw, tj_load(dw_at, .mask = mask, .cache = TJ_CACHE_CG));
        partial_db = tj_add(partial_db, tj_load(db_at, .mask = mask, .cache = TJ_CACHE_CG));
    }
    tj_store(dw_at, partial_dw, .mask = mask);
    tj_store(db_at, partial_db, .mask = mask);
    tj_debug_barrier();
    tj_atomic_xchg(lock, 0);
}

/* Sums the M partial rows of DW and DB into FINAL_DW and FINAL_DB. */
TJ_KERNEL(layer_norm_bwd_dwdb,
          TJ_PARAMS(TJ_PTR(DW, f32), TJ_PTR(DB, f32), TJ_PTR(FINAL_DW, f32), TJ_PTR(FINAL_DB, f32),
                    TJ_SCALAR(M, i32), TJ_SCALAR(N, i32)),
          TJ_CONSTS(BLOCK_M, BLOCK_N))
{
    tj_val cols = tj_add(tj_mul(tj_program_id(0), BLOCK_N), tj_arange(0, BLOCK_N));
    tj_val dw = tj_zeros(TJ_SHAPE(BLOCK_M, BLOCK_N), TJ_F32);
    tj_val db = tj_zeros(TJ_SHAPE(BLOCK_M, BLOCK_N), TJ_F32);
    TJ_FOR(i, 0, M, BLOCK_M, &dw, &db) {
        tj_val rows = tj_add(i, tj_arange(0, BLOCK_M));
        tj_val mask = tj_and(tj_lt(tj_expand_dims(rows, 1), M), tj_lt(tj_expand_dims(cols, 0), N));
        tj_val offs = tj_add(tj_mul(tj_expand_dims(rows, 1), N), tj_expand_dims(cols, 0));
        dw = tj_add(dw, tj_load(tj_add(DW, offs), .mask = mask));
        db = tj_add(db, tj_load(tj_add(DB, offs), .mask = mask));
    }
    tj_store(tj_add(FINAL_DW, cols), tj_sum(dw, 0), .mask = tj_lt(cols, N));
    tj_store(tj_add(FINAL_DB, cols), tj_sum(db, 0), .mask = tj_lt(cols, N));
}

#endif
