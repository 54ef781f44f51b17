/* SPDX-License-Identifier: MIT */
/*
 * matmul — C = A B for an M x K matrix A and a K x N matrix B, as Triton's
 * tutorial 03 writes it, in tjit.
 *
 * Each program computes one BM x BN tile of C. It walks K in steps of BK:
 * loads a BM x BK tile of A and a BK x BN tile of B, multiplies them on the
 * tensor cores (tj_dot; on the CPU a blocked, vectorized loop nest) and
 * adds the product into an f32 accumulator carried through the TJ_FOR loop
 * together with the two pointer tiles it advances. Three details come from
 * the tutorial:
 *
 *   - grouped program ids: the 1-D grid is walked in groups of GROUP_M rows
 *     of tiles, column by column inside a group, so that the programs that
 *     run at the same time share rows of A and columns of B in the L2 cache
 *     (row-major order would stream all of B for every row of tiles);
 *   - rows of A and columns of B past the matrix are wrapped (% M, % N), so
 *     their loads stay inside the buffers and need no mask; only the store
 *     of C is masked on them;
 *   - the K tail is masked (offs_k < K - k * BK, loaded as 0, which adds
 *     nothing), so any K works, K = 0 included.
 *
 * Leading dimensions are strides (stride_am, stride_ak, ...), so the same
 * kernel multiplies views and transposed operands. A and B are f16 (C f16,
 * rounded once from the f32 accumulator, as in the tutorial) or f32 (C
 * f32); the body is one C function that both kernels call.
 *
 * The host side (matmul_host.h, shared with matmul_block_ptr.c) checks
 * each dtype twice against a C loop: small-integer inputs (every product
 * and partial sum exact in f32, so C must match bit for bit), then random
 * normal inputs within a tolerance that grows with K. It prints TFLOP/s
 * (2 M N K flops per launch, the median of 10 runs).
 *
 *     usage: matmul [M N K]     (default 2048 x 2048 x 2048)
 */
#include "matmul_host.h"

enum { GROUP_M = 8 };

static void matmul_body(tj_val a, tj_val b, tj_val c, tj_val M, tj_val N, tj_val K,
                        tj_val stride_am, tj_val stride_ak, tj_val stride_bk, tj_val stride_bn,
                        tj_val stride_cm, tj_val stride_cn, int64_t BM, int64_t BN, int64_t BK,
                        int64_t group_m, tj_dtype c_dtype)
{
    /* Grouped ordering of the programs (see the top comment). */
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
        acc = tj_dot(a_tile, b_tile, acc);
        a_ptrs = tj_add(a_ptrs, tj_mul(stride_ak, BK));
        b_ptrs = tj_add(b_ptrs, tj_mul(stride_bk, BK));
    }

    tj_val offs_cm = tj_expand_dims(tj_add(tj_mul(pid_m, BM), tj_arange(0, BM)), 1);
    tj_val offs_cn = tj_expand_dims(tj_add(tj_mul(pid_n, BN), tj_arange(0, BN)), 0);
    tj_val c_ptrs = tj_add(c, tj_add(tj_mul(offs_cm, stride_cm), tj_mul(offs_cn, stride_cn)));
    tj_store(c_ptrs, tj_cast(acc, c_dtype), .mask = tj_and(tj_lt(offs_cm, M), tj_lt(offs_cn, N)));
}

#define MATMUL_KERNEL(name, dt, c_dtype)                                                    \
    TJ_KERNEL(name,                                                                         \
              TJ_PARAMS(TJ_PTR(a, dt), TJ_PTR(b, dt), TJ_PTR(c, dt), TJ_SCALAR(M, i32),     \
                        TJ_SCALAR(N, i32), TJ_SCALAR(K, i32), TJ_SCALAR(stride_am, i32),    \
                        TJ_SCALAR(stride_ak, i32), TJ_SCALAR(stride_bk, i32),               \
                        TJ_SCALAR(stride_bn, i32), TJ_SCALAR(stride_cm, i32),               \
                        TJ_SCALAR(stride_cn, i32)),                                         \
              TJ_CONSTS(BM, BN, BK, GROUP))                                                 \
    {                                                                                       \
        matmul_body(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, \
                    stride_cn, BM, BN, BK, GROUP, c_dtype);                                 \
    }

MATMUL_KERNEL(matmul_f16, f16, TJ_F16)
MATMUL_KERNEL(matmul_f32, f32, TJ_F32)

/* Row-major A (M x K), B (K x N) and C (M x N): each leading dimension is
 * the stride of the first index, the second stride is 1. */
static void launch(void *problem)
{
    const matmul_problem *p = problem;
    tj_launch_cfg cfg = {.grid = {cdiv(p->m, p->bm) * cdiv(p->n, p->bn)}, .num_warps = p->warps};
    if (p->dtype == TJ_F16)
        CHECK(matmul_f16_launch(p->dev, &cfg, p->a, p->b, p->c, p->m, p->n, p->k, p->k, 1, p->n,
                                1, p->n, 1, p->bm, p->bn, p->bk, GROUP_M));
    else
        CHECK(matmul_f32_launch(p->dev, &cfg, p->a, p->b, p->c, p->m, p->n, p->k, p->k, 1, p->n,
                                1, p->n, 1, p->bm, p->bn, p->bk, GROUP_M));
}

int main(int argc, char **argv)
{
    return matmul_main(argc, argv, "matmul", launch);
}
