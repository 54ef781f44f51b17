/* SPDX-License-Identifier: MIT */
/*
 * batched_desc.h — a batched matmul through 3-D tensor descriptors, for
 * test_tma (on the CPU and the H200) and test_tma_ptx (its PTX).
 *
 * C[z] = A[z] B[z] for Z problems stored one after another: A [Z, M, K],
 * B [Z, K, N], C [Z, M, N] with batch strides given as arguments (TMA
 * needs every stride a parameter or a constant), blocks [1, BM, BK] and
 * [1, BK, BN] reshaped to the 2-D tiles the dot takes, the result made
 * [1, BM, BN] for its store — Triton's batched descriptor idiom. Program
 * (i, j, z) computes tile (i, j) of problem z. On sm_90a each block is one
 * box of the 3-D tensor: where it leaves problem z's rows it reads zeros,
 * never problem z + 1's.
 */
#ifndef TJIT_TESTS_BATCHED_DESC_H
#define TJIT_TESTS_BATCHED_DESC_H

#include "tjit.h"

TJ_KERNEL(bmm_desc,
          TJ_PARAMS(TJ_PTR(a, f16), TJ_PTR(b, f16), TJ_PTR(c, f32), TJ_SCALAR(Z, i32), TJ_SCALAR(M, i32),
                    TJ_SCALAR(N, i32), TJ_SCALAR(K, i32), TJ_SCALAR(stride_az, i32), TJ_SCALAR(stride_bz, i32),
                    TJ_SCALAR(stride_cz, i32)),
          TJ_CONSTS(BM, BN, BK))
{
    tj_val z = tj_program_id(2), row0 = tj_mul(tj_program_id(0), BM), col0 = tj_mul(tj_program_id(1), BN);
    tj_val ad = tj_make_tensor_descriptor(a, TJ_VALS(Z, M, K), TJ_VALS(stride_az, K, 1), TJ_SHAPE(1, BM, BK));
    tj_val bd = tj_make_tensor_descriptor(b, TJ_VALS(Z, K, N), TJ_VALS(stride_bz, N, 1), TJ_SHAPE(1, BK, BN));
    tj_val cd = tj_make_tensor_descriptor(c, TJ_VALS(Z, M, N), TJ_VALS(stride_cz, N, 1), TJ_SHAPE(1, BM, BN));
    tj_val acc = tj_zeros(TJ_SHAPE(BM, BN), TJ_F32);
    TJ_FOR(k, 0, tj_cdiv(K, BK), 1, &acc) {
        tj_val kk = tj_mul(k, BK);
        tj_val x = tj_reshape(tj_descriptor_load(ad, TJ_VALS(z, row0, kk)), TJ_SHAPE(BM, BK));
        tj_val y = tj_reshape(tj_descriptor_load(bd, TJ_VALS(z, kk, col0)), TJ_SHAPE(BK, BN));
        acc = tj_dot(x, y, acc);
    }
    tj_descriptor_store(cd, TJ_VALS(z, row0, col0), tj_reshape(acc, TJ_SHAPE(1, BM, BN)));
}

enum { BMM_NPARAMS = 10 };

#endif
