/* SPDX-License-Identifier: MIT */
/*
 * matmul_block_ptr — the matmul of matmul.c written with block pointers, as
 * Triton's block-pointer variant of tutorial 03 does.
 *
 * A block pointer (tj_make_block_ptr) describes a tile of a strided 2-D
 * matrix: the matrix's base, shape and strides, where the tile starts, the
 * tile's shape and its order (TJ_SHAPE(1, 0): the second dimension is the
 * contiguous one). tjit then knows the whole access: no pointer tile has
 * to be computed, a load checks the matrix's bounds per dimension where
 * .boundary_check asks (reading .padding there: zeros, which add nothing
 * to the product), and tj_advance moves the tile by whole offsets. The
 * program walks K with both block pointers carried through the TJ_FOR loop,
 * A's advanced along its columns, B's along its rows; the store of C checks
 * both dimensions. Compared with matmul.c there are no masks to build and
 * no wrapped rows: a ragged edge is what the boundary check is for.
 *
 * Cache hints: A's tiles are loaded with .cache = TJ_CACHE_CA (keep in L1
 * and L2: the GROUP_M programs of a group that run together read the same
 * rows of A) and B's with TJ_CACHE_CG (L2 only: a column of B is reused by
 * other programs, not by this one). The CPU ignores hints.
 *
 * Program ids are grouped by GROUP_M = 8 as in matmul.c, and the host side
 * (matmul_host.h) is the same: f16 and f32, exact small-integer inputs,
 * random normal ones within a K-scaled tolerance, TFLOP/s.
 *
 *     usage: matmul_block_ptr [M N K]     (default 2048 x 2048 x 2048)
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
        matmul_block_ptr_body(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,   \
                              stride_cm, stride_cn, BM, BN, BK, GROUP, TJ_PRECISION_IEEE,     \
                              c_dtype);                                                       \
    }

MATMUL_KERNEL(matmul_bp_f16, f16, TJ_F16)
MATMUL_KERNEL(matmul_bp_f32, f32, TJ_F32)

static void launch(void *problem)
{
    const matmul_problem *p = problem;
    tj_launch_cfg cfg = {.grid = {cdiv(p->m, p->bm) * cdiv(p->n, p->bn)}, .num_warps = p->warps};
    if (p->dtype == TJ_F16)
        CHECK(matmul_bp_f16_launch(p->dev, &cfg, p->a, p->b, p->c, p->m, p->n, p->k, p->k, 1,
                                   p->n, 1, p->n, 1, p->bm, p->bn, p->bk, GROUP_M));
    else
        CHECK(matmul_bp_f32_launch(p->dev, &cfg, p->a, p->b, p->c, p->m, p->n, p->k, p->k, 1,
                                   p->n, 1, p->n, 1, p->bm, p->bn, p->bk, GROUP_M));
}

int main(int argc, char **argv)
{
    return matmul_main(argc, argv, "matmul_block_ptr", launch);
}
