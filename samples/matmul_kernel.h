/* SPDX-License-Identifier: MIT */
/*
 * matmul_kernel.h — the body of Triton's tutorial 03 matmul in tjit, one
 * copy for the matmul sample (samples/matmul.c, whose top comment explains
 * it), the GPU matmul benchmark (bench/gpu_matmul.c) and the test of its
 * PTX (tests/test_matmul_ptx.c), and its block-pointer form
 * (matmul_block_ptr_body, for samples/matmul_block_ptr.c and the benchmark):
 * grouped program ids, rows and columns
 * wrapped with % M and % N, a TJ_FOR over K with the K tail masked,
 * tj_dot into an f32 accumulator, C stored in c_dtype under a mask.
 * Strides are the operands' leading dimensions, so NN, NT, TN and TT are
 * the same kernel.
 */
#ifndef TJIT_SAMPLES_MATMUL_KERNEL_H
#define TJIT_SAMPLES_MATMUL_KERNEL_H

#include "tjit.h"

static inline void matmul_tutorial_body(tj_val a, tj_val b, tj_val c, tj_val M, tj_val N, tj_val K,
                                        tj_val stride_am, tj_val stride_ak, tj_val stride_bk,
                                        tj_val stride_bn, tj_val stride_cm, tj_val stride_cn,
                                        int64_t BM, int64_t BN, int64_t BK, int64_t group_m,
                                        tj_input_precision precision, tj_dtype c_dtype)
{
    /* Grouped ordering of the programs (samples/matmul.c says why). */
    tj_val pid = tj_program_id(0);
    tj_val num_pid_m = tj_cdiv(M, BM), num_pid_n = tj_cdiv(N, BN);
    tj_val num_pid_in_group = tj_mul(num_pid_n, group_m);
    tj_val group_id = tj_floordiv(pid, num_pid_in_group);
    tj_val first_pid_m = tj_mul(group_id, group_m);
    tj_val group_size_m = tj_minimum(tj_sub(num_pid_m, first_pid_m), group_m);
    tj_val pid_in_group = tj_mod(pid, num_pid_in_group);
    tj_val pid_m = tj_add(first_pid_m, tj_mod(pid_in_group, group_size_m));
    tj_val pid_n = tj_floordiv(pid_in_group, group_size_m);

    tj_val offs_am = tj_mod(tj_add(tj_mul(pid_m, BM), tj_arange(0, BM)), M);
    tj_val offs_bn = tj_mod(tj_add(tj_mul(pid_n, BN), tj_arange(0, BN)), N);
    tj_val offs_k = tj_arange(0, BK);
    tj_val a_ptrs = tj_add(a, tj_add(tj_mul(tj_expand_dims(offs_am, 1), stride_am),
                                     tj_mul(tj_expand_dims(offs_k, 0), stride_ak)));
    tj_val b_ptrs = tj_add(b, tj_add(tj_mul(tj_expand_dims(offs_k, 1), stride_bk),
                                     tj_mul(tj_expand_dims(offs_bn, 0), stride_bn)));

    tj_val acc = tj_zeros(TJ_SHAPE(BM, BN), TJ_F32);
    TJ_FOR(k, 0, tj_cdiv(K, BK), 1, &acc, &a_ptrs, &b_ptrs) {
        tj_val k_left = tj_sub(K, tj_mul(k, BK));
        tj_val a_tile = tj_load(a_ptrs, .mask = tj_lt(tj_expand_dims(offs_k, 0), k_left));
        tj_val b_tile = tj_load(b_ptrs, .mask = tj_lt(tj_expand_dims(offs_k, 1), k_left));
        acc = tj_dot(a_tile, b_tile, acc, .input_precision = precision);
        a_ptrs = tj_add(a_ptrs, tj_mul(stride_ak, BK));
        b_ptrs = tj_add(b_ptrs, tj_mul(stride_bk, BK));
    }

    tj_val offs_cm = tj_expand_dims(tj_add(tj_mul(pid_m, BM), tj_arange(0, BM)), 1);
    tj_val offs_cn = tj_expand_dims(tj_add(tj_mul(pid_n, BN), tj_arange(0, BN)), 0);
    tj_val c_ptrs = tj_add(c, tj_add(tj_mul(offs_cm, stride_cm), tj_mul(offs_cn, stride_cn)));
    tj_store(c_ptrs, tj_cast(acc, c_dtype), .mask = tj_and(tj_lt(offs_cm, M), tj_lt(offs_cn, N)));
}

/* One tile of C with block pointers, at program (tile) id pid. b_nk: B's
 * block pointer walks B as [N, K] and its [BN, BK] tile enters the dot
 * through tj_trans (Triton's tl.dot(a, b.T) over a descriptor of B stored
 * N x K, as its persistent tutorial writes it); else [K, N] tiles of
 * [BK, BN]. The strides say how B is stored either way. */
static inline void matmul_block_ptr_tile(tj_val pid, tj_val a, tj_val b, tj_val c, tj_val M, tj_val N, tj_val K,
                                         tj_val stride_am, tj_val stride_ak, tj_val stride_bk,
                                         tj_val stride_bn, tj_val stride_cm, tj_val stride_cn,
                                         int64_t BM, int64_t BN, int64_t BK, int64_t group_m,
                                         tj_input_precision precision, tj_dtype c_dtype, int b_nk)
{
    tj_val num_pid_m = tj_cdiv(M, BM), num_pid_n = tj_cdiv(N, BN);
    tj_val num_pid_in_group = tj_mul(num_pid_n, group_m);
    tj_val first_pid_m = tj_mul(tj_floordiv(pid, num_pid_in_group), group_m);
    tj_val group_size_m = tj_minimum(tj_sub(num_pid_m, first_pid_m), group_m);
    tj_val pid_in_group = tj_mod(pid, num_pid_in_group);
    tj_val pid_m = tj_add(first_pid_m, tj_mod(pid_in_group, group_size_m));
    tj_val pid_n = tj_floordiv(pid_in_group, group_size_m);
    tj_val row0 = tj_mul(pid_m, BM), col0 = tj_mul(pid_n, BN);

    tj_val a_block = tj_make_block_ptr(a, TJ_VALS(M, K), TJ_VALS(stride_am, stride_ak),
                                       TJ_VALS(row0, 0), TJ_SHAPE(BM, BK), TJ_SHAPE(1, 0));
    tj_val b_block = b_nk ? tj_make_block_ptr(b, TJ_VALS(N, K), TJ_VALS(stride_bn, stride_bk),
                                              TJ_VALS(col0, 0), TJ_SHAPE(BN, BK), TJ_SHAPE(1, 0))
                          : tj_make_block_ptr(b, TJ_VALS(K, N), TJ_VALS(stride_bk, stride_bn),
                                              TJ_VALS(0, col0), TJ_SHAPE(BK, BN), TJ_SHAPE(1, 0));
    tj_val acc = tj_zeros(TJ_SHAPE(BM, BN), TJ_F32);
    TJ_FOR(k, 0, tj_cdiv(K, BK), 1, &acc, &a_block, &b_block) {
        tj_val a_tile = tj_load(a_block, .boundary_check = TJ_DIMS(0, 1),
                                .padding = TJ_PADDING_ZERO, .cache = TJ_CACHE_CA);
        tj_val b_tile = tj_load(b_block, .boundary_check = TJ_DIMS(0, 1),
                                .padding = TJ_PADDING_ZERO, .cache = TJ_CACHE_CG);
        acc = tj_dot(a_tile, b_nk ? tj_trans(b_tile) : b_tile, acc, .input_precision = precision);
        a_block = tj_advance(a_block, TJ_VALS(0, BK));
        b_block = b_nk ? tj_advance(b_block, TJ_VALS(0, BK)) : tj_advance(b_block, TJ_VALS(BK, 0));
    }

    tj_val c_block = tj_make_block_ptr(c, TJ_VALS(M, N), TJ_VALS(stride_cm, stride_cn),
                                       TJ_VALS(row0, col0), TJ_SHAPE(BM, BN), TJ_SHAPE(1, 0));
    tj_store(c_block, tj_cast(acc, c_dtype), .boundary_check = TJ_DIMS(0, 1));
}

/* The same product with block pointers (samples/matmul_block_ptr.c says
 * why): on Hopper its loads are TMA copies (src/passes/tma.c). */
static inline void matmul_block_ptr_body(tj_val a, tj_val b, tj_val c, tj_val M, tj_val N, tj_val K,
                                         tj_val stride_am, tj_val stride_ak, tj_val stride_bk,
                                         tj_val stride_bn, tj_val stride_cm, tj_val stride_cn,
                                         int64_t BM, int64_t BN, int64_t BK, int64_t group_m,
                                         tj_input_precision precision, tj_dtype c_dtype)
{
    matmul_block_ptr_tile(tj_program_id(0), a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                          stride_cm, stride_cn, BM, BN, BK, group_m, precision, c_dtype, 0);
}

/* The same, B walked [N, K] and read through tj_trans (matmul_block_ptr_tile's b_nk). */
static inline void matmul_block_ptr_nk_body(tj_val a, tj_val b, tj_val c, tj_val M, tj_val N, tj_val K,
                                            tj_val stride_am, tj_val stride_ak, tj_val stride_bk,
                                            tj_val stride_bn, tj_val stride_cm, tj_val stride_cn,
                                            int64_t BM, int64_t BN, int64_t BK, int64_t group_m,
                                            tj_input_precision precision, tj_dtype c_dtype)
{
    matmul_block_ptr_tile(tj_program_id(0), a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                          stride_cm, stride_cn, BM, BN, BK, group_m, precision, c_dtype, 1);
}

/* Persistent (Triton's tutorial 09): a grid of as many programs as the
 * GPU runs at once, each walking the tiles pid, pid + programs, ... in the
 * grouped order; on Hopper a producer warpgroup fills the next tile's
 * rings while the consumers store this one's C. */
static inline void matmul_persistent_body(tj_val a, tj_val b, tj_val c, tj_val M, tj_val N, tj_val K,
                                          tj_val stride_am, tj_val stride_ak, tj_val stride_bk,
                                          tj_val stride_bn, tj_val stride_cm, tj_val stride_cn,
                                          int64_t BM, int64_t BN, int64_t BK, int64_t group_m,
                                          tj_input_precision precision, tj_dtype c_dtype)
{
    tj_val tiles = tj_mul(tj_cdiv(M, BM), tj_cdiv(N, BN));
    TJ_FOR(tile, tj_program_id(0), tiles, tj_num_programs(0)) {
        matmul_block_ptr_tile(tile, a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                              stride_cn, BM, BN, BK, group_m, precision, c_dtype, 0);
    }
}

/* The tutorial as a kernel of its own: A, B and C of dtypes a_dt, b_dt, c_dt
 * (C stored as c_dtype), the input precision fixed, the tile sizes and the
 * group size as constants BM, BN, BK, GROUP — the kernel the tests compile
 * for the GPU without launching it. */
#define MATMUL_TUTORIAL_KERNEL(name, a_dt, b_dt, c_dt, c_dtype, precision)                                   \
    TJ_KERNEL(name,                                                                                          \
              TJ_PARAMS(TJ_PTR(a, a_dt), TJ_PTR(b, b_dt), TJ_PTR(c, c_dt), TJ_SCALAR(M, i32),                \
                        TJ_SCALAR(N, i32), TJ_SCALAR(K, i32), TJ_SCALAR(stride_am, i32),                     \
                        TJ_SCALAR(stride_ak, i32), TJ_SCALAR(stride_bk, i32), TJ_SCALAR(stride_bn, i32),     \
                        TJ_SCALAR(stride_cm, i32), TJ_SCALAR(stride_cn, i32)),                               \
              TJ_CONSTS(BM, BN, BK, GROUP))                                                                  \
    {                                                                                                        \
        matmul_tutorial_body(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,        \
                             stride_cn, BM, BN, BK, GROUP, precision, c_dtype);                              \
    }

/* A kernel of one of the bodies above with A and B of dtype ab_dt, C of
 * c_dt (stored as c_dtype), IEEE precision, groups of 8 and the tile sizes
 * as constants BM, BN, BK: the tests' kernels. */
#define MATMUL_BODY_KERNEL(name, ab_dt, c_dt, c_dtype, body)                                                \
    TJ_KERNEL(name,                                                                                          \
              TJ_PARAMS(TJ_PTR(a, ab_dt), TJ_PTR(b, ab_dt), TJ_PTR(c, c_dt), TJ_SCALAR(M, i32),              \
                        TJ_SCALAR(N, i32), TJ_SCALAR(K, i32), TJ_SCALAR(stride_am, i32),                     \
                        TJ_SCALAR(stride_ak, i32), TJ_SCALAR(stride_bk, i32), TJ_SCALAR(stride_bn, i32),     \
                        TJ_SCALAR(stride_cm, i32), TJ_SCALAR(stride_cn, i32)),                               \
              TJ_CONSTS(BM, BN, BK))                                                                         \
    {                                                                                                        \
        body(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, BM, BN, BK, \
             8, TJ_PRECISION_IEEE, c_dtype);                                                                 \
    }

#endif
