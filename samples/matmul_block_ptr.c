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

enum { GROUP_M = 8 };

static void matmul_body(tj_val a, tj_val b, tj_val c, tj_val M, tj_val N, tj_val K,
                        tj_val stride_am, tj_val stride_ak, tj_val stride_bk, tj_val stride_bn,
                        tj_val stride_cm, tj_val stride_cn, int64_t BM, int64_t BN, int64_t BK,
                        int64_t group_m, tj_dtype c_dtype)
{
    tj_val pid = tj_program_id(0);
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
    tj_val b_block = tj_make_block_ptr(b, TJ_VALS(K, N), TJ_VALS(stride_bk, stride_bn),
                                       TJ_VALS(0, col0), TJ_SHAPE(BK, BN), TJ_SHAPE(1, 0));
    tj_val acc = tj_zeros(TJ_SHAPE(BM, BN), TJ_F32);
    TJ_FOR(k, 0, tj_cdiv(K, BK), 1, &acc, &a_block, &b_block) {
        tj_val a_tile = tj_load(a_block, .boundary_check = TJ_DIMS(0, 1),
                                .padding = TJ_PADDING_ZERO, .cache = TJ_CACHE_CA);
        tj_val b_tile = tj_load(b_block, .boundary_check = TJ_DIMS(0, 1),
                                .padding = TJ_PADDING_ZERO, .cache = TJ_CACHE_CG);
        acc = tj_dot(a_tile, b_tile, acc);
        a_block = tj_advance(a_block, TJ_VALS(0, BK));
        b_block = tj_advance(b_block, TJ_VALS(BK, 0));
    }

    tj_val c_block = tj_make_block_ptr(c, TJ_VALS(M, N), TJ_VALS(stride_cm, stride_cn),
                                       TJ_VALS(row0, col0), TJ_SHAPE(BM, BN), TJ_SHAPE(1, 0));
    tj_store(c_block, tj_cast(acc, c_dtype), .boundary_check = TJ_DIMS(0, 1));
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
