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
 * f32); the body is one C function that both kernels call
 * (matmul_kernel.h, which the GPU benchmark and a test share).
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
#include "matmul_kernel.h"

enum { GROUP_M = 8 };

#define MATMUL_KERNEL(name, dt, c_dtype)                                                    \
    TJ_KERNEL(name,                                                                         \
              TJ_PARAMS(TJ_PTR(a, dt), TJ_PTR(b, dt), TJ_PTR(c, dt), TJ_SCALAR(M, i32),     \
                        TJ_SCALAR(N, i32), TJ_SCALAR(K, i32), TJ_SCALAR(stride_am, i32),    \
                        TJ_SCALAR(stride_ak, i32), TJ_SCALAR(stride_bk, i32),               \
                        TJ_SCALAR(stride_bn, i32), TJ_SCALAR(stride_cm, i32),               \
                        TJ_SCALAR(stride_cn, i32)),                                         \
              TJ_CONSTS(BM, BN, BK, GROUP))                                                 \
    {                                                                                       \
        matmul_tutorial_body(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,  \
                             stride_cm, stride_cn, BM, BN, BK, GROUP, TJ_PRECISION_IEEE,    \
                             c_dtype);                                                      \
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
