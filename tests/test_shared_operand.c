/* SPDX-License-Identifier: MIT */
/*
 * test_shared_operand.c — one loaded tile read by two dots (src/passes/wgmma.c:
 * a ring's slot read by several wgmma descriptors).
 *
 * A gated MLP computes x @ W1 and x @ W2 from the same x tile; Triton's
 * attention backward reads dO once directly and once through tl.trans. On
 * sm_90a both dots read the one ring slot through descriptors, the last of
 * them releasing it; where the two dots cannot both do so, neither does
 * (the tile goes to registers, as before). Kernels, one per MODE:
 *  0  block pointers (TMA, a producer warpgroup): c1 = a @ b1, c2 = a @ b2;
 *  1  the same with pointer tiles (cp.async rings);
 *  2  block pointers, one [64, 64] tile t of b1 read by acc1 = a @ t and by
 *     acc2 = q @ tᵀ (q: A's block at the tile's columns, loaded once);
 *  3  c2 sums a's K blocks @ w, one block of b2 loaded before the loop: no
 *     ring, so no wgmma for that dot, and the first does not read a's
 *     ring through a descriptor either.
 * Without a GPU: the plans (both dots wgmma and reading the shared ring, or
 * neither; asynchronous where carried), the PTX (one release of the shared
 * slot an iteration: as many empty-barrier arrivals as with distinct tiles
 * less one), ptxas for sm_90a where make check sets TJIT_PTXAS, the
 * explainer (which dots share the slot, which releases it). On the
 * device under test (the CPU; the GPU in the twin): every mode's products
 * against a double-precision reference, on random f16 inputs with ragged
 * edges, outputs poisoned first.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder/ir.h"
#include "ffi_bind/ffi_bind.h"
#include "jit/pipeline.h"
#include "jit/runtime/ptxas.h"
#include "tap.h"
#include "testlib.h"
#include "tjit.h"

enum { BM = 128, BN = 128, BK = 64, SQUARE = 64 };

static tj_val block(tj_val base, tj_val rows, tj_val cols, tj_val r0, tj_val c0, int64_t br, int64_t bc)
{
    return tj_make_block_ptr(base, TJ_VALS(rows, cols), TJ_VALS(cols, 1), TJ_VALS(r0, c0), TJ_SHAPE(br, bc),
                             TJ_SHAPE(1, 0));
}

static tj_val load_block(tj_val p)
{
    return tj_load(p, .boundary_check = TJ_DIMS(0, 1), .padding = TJ_PADDING_ZERO);
}

static void store_block(tj_val c, tj_val rows, tj_val cols, tj_val r0, tj_val c0, tj_val acc, int64_t bc)
{
    tj_store(block(c, rows, cols, r0, c0, BM, bc), acc, .boundary_check = TJ_DIMS(0, 1));
}

/* mode 0: c1 = a @ b1, c2 = a @ b2 (all [K, N]); mode 3: c2 = Σ over K
 * blocks of a's block @ w, w b2's first [BK, BN] block, loaded once (no
 * ring: that dot cannot be wgmma) */
static void two_products(tj_val a, tj_val b1, tj_val b2, tj_val c1, tj_val c2, tj_val M, tj_val N, tj_val K,
                         int resident)
{
    tj_val row0 = tj_mul(tj_program_id(0), BM), col0 = tj_mul(tj_program_id(1), BN);
    tj_val ap = block(a, M, K, row0, tj_i32(0), BM, BK), bp1 = block(b1, K, N, tj_i32(0), col0, BK, BN),
           bp2 = block(b2, K, N, tj_i32(0), col0, BK, BN);
    tj_val w = resident ? load_block(bp2) : tj_i32(0);
    tj_val acc1 = tj_zeros(TJ_SHAPE(BM, BN), TJ_F32), acc2 = tj_zeros(TJ_SHAPE(BM, BN), TJ_F32);
    TJ_FOR(k, 0, tj_cdiv(K, BK), 1, &acc1, &acc2, &ap, &bp1, &bp2) {
        tj_val x = load_block(ap);
        acc1 = tj_dot(x, load_block(bp1), acc1);
        acc2 = tj_dot(x, resident ? w : load_block(bp2), acc2);
        ap = tj_advance(ap, TJ_VALS(0, BK));
        bp1 = tj_advance(bp1, TJ_VALS(BK, 0));
        bp2 = tj_advance(bp2, TJ_VALS(BK, 0));
    }
    store_block(c1, M, N, row0, col0, acc1, BN);
    store_block(c2, M, N, row0, col0, acc2, BN);
}

/* mode 1: mode 0 with pointer tiles, masked along every edge */
static void two_products_ptrs(tj_val a, tj_val b1, tj_val b2, tj_val c1, tj_val c2, tj_val M, tj_val N, tj_val K)
{
    tj_val rows = tj_expand_dims(tj_add(tj_mul(tj_program_id(0), BM), tj_arange(0, BM)), 1);
    tj_val cols = tj_expand_dims(tj_add(tj_mul(tj_program_id(1), BN), tj_arange(0, BN)), 0);
    tj_val ks = tj_arange(0, BK), k_row = tj_expand_dims(ks, 0), k_col = tj_expand_dims(ks, 1);
    tj_val ap = tj_add(a, tj_add(tj_mul(rows, K), k_row));
    tj_val bp1 = tj_add(b1, tj_add(tj_mul(k_col, N), cols)), bp2 = tj_add(b2, tj_add(tj_mul(k_col, N), cols));
    tj_val acc1 = tj_zeros(TJ_SHAPE(BM, BN), TJ_F32), acc2 = tj_zeros(TJ_SHAPE(BM, BN), TJ_F32);
    TJ_FOR(k, 0, tj_cdiv(K, BK), 1, &acc1, &acc2, &ap, &bp1, &bp2) {
        tj_val left = tj_sub(K, tj_mul(k, BK));
        tj_val x = tj_load(ap, .mask = tj_and(tj_lt(rows, M), tj_lt(k_row, left)), .other = tj_f16(0));
        tj_val b_mask = tj_and(tj_lt(k_col, left), tj_lt(cols, N));
        acc1 = tj_dot(x, tj_load(bp1, .mask = b_mask, .other = tj_f16(0)), acc1);
        acc2 = tj_dot(x, tj_load(bp2, .mask = b_mask, .other = tj_f16(0)), acc2);
        ap = tj_add(ap, BK);
        bp1 = tj_add(bp1, tj_mul(N, BK));
        bp2 = tj_add(bp2, tj_mul(N, BK));
    }
    tj_val c_mask = tj_and(tj_lt(rows, M), tj_lt(cols, N)), at = tj_add(tj_mul(rows, N), cols);
    tj_store(tj_add(c1, at), acc1, .mask = c_mask);
    tj_store(tj_add(c2, at), acc2, .mask = c_mask);
}

/* mode 2: t = b1's [64, 64] tile; acc1 = a @ t, acc2 = q @ tᵀ with q = A's
 * block at the tile's columns (out of K: zeros). c1 and c2 are [M, N]. */
static void direct_and_transposed(tj_val a, tj_val b1, tj_val c1, tj_val c2, tj_val M, tj_val N, tj_val K)
{
    tj_val row0 = tj_mul(tj_program_id(0), BM), col0 = tj_mul(tj_program_id(1), SQUARE);
    tj_val ap = block(a, M, K, row0, tj_i32(0), BM, SQUARE), bp = block(b1, K, N, tj_i32(0), col0, SQUARE, SQUARE);
    tj_val q = load_block(block(a, M, K, row0, col0, BM, SQUARE));
    tj_val acc1 = tj_zeros(TJ_SHAPE(BM, SQUARE), TJ_F32), acc2 = tj_zeros(TJ_SHAPE(BM, SQUARE), TJ_F32);
    TJ_FOR(k, 0, tj_cdiv(K, SQUARE), 1, &acc1, &acc2, &ap, &bp) {
        tj_val t = load_block(bp);
        acc1 = tj_dot(load_block(ap), t, acc1);
        acc2 = tj_dot(q, tj_trans(t), acc2);
        ap = tj_advance(ap, TJ_VALS(0, SQUARE));
        bp = tj_advance(bp, TJ_VALS(SQUARE, 0));
    }
    store_block(c1, M, N, row0, col0, acc1, SQUARE);
    store_block(c2, M, N, row0, col0, acc2, SQUARE);
}

TJ_KERNEL(shared_operand,
          TJ_PARAMS(TJ_PTR(a, f16), TJ_PTR(b1, f16), TJ_PTR(b2, f16), TJ_PTR(c1, f32), TJ_PTR(c2, f32),
                    TJ_SCALAR(M, i32), TJ_SCALAR(N, i32), TJ_SCALAR(K, i32)),
          TJ_CONSTS(MODE))
{
    switch (MODE) {
    case 0: two_products(a, b1, b2, c1, c2, M, N, K, 0); break;
    case 1: two_products_ptrs(a, b1, b2, c1, c2, M, N, K); break;
    case 2: direct_and_transposed(a, b1, c1, c2, M, N, K); break;
    default: two_products(a, b1, b2, c1, c2, M, N, K, 1); break;
    }
}

/* ---- without a GPU: plans and PTX ------------------------------------------------ */

#define NO_BUFFER TJ_ARG_BUF((tj_buffer){0})

/* The artifact of mode at 8 warps, 3 stages, for M = N = K = 4096
 * (16-byte aligned strides: TMA where the mode has block pointers); *out
 * the program it was compiled from (the caller frees it). */
static tj_status compile(int mode, int sm, int arch_specific, tjj_artifact *art, tji_func **out)
{
    tj_arg args[8] = {NO_BUFFER, NO_BUFFER, NO_BUFFER, NO_BUFFER, NO_BUFFER,
                      TJ_ARG_I32(4096), TJ_ARG_I32(4096), TJ_ARG_I32(4096)};
    tjf_value values[8];
    int64_t consts[1] = {mode};
    tji_func *fn = NULL;
    memset(art, 0, sizeof *art);
    tj_status st = tjf_check_args(shared_operand, args, 8, values);
    uint64_t spec = st == TJ_OK ? tjf_spec_key(shared_operand, values) | tjj_spec_of_buffers(shared_operand) : 0;
    if (st == TJ_OK)
        st = tji_build(shared_operand, consts, 1, &fn);
    if (st == TJ_OK)
        st = tjj_compile_gpu(fn, &(tjj_gpu_target){.sm = sm, .arch_specific = arch_specific, .num_warps = 8,
                                                   .spec = spec, .num_stages = 3},
                             art);
    if (st == TJ_OK && tjj_ptxas_path())
        st = tjj_ptxas_check(tjj_ptxas_path(), art->gpu.ptx, sm, arch_specific, fn->name);
    *out = fn;
    return st;
}

/* The plan's DOTs in op order (at most 2): their choices into dots. */
static int dots_of(const tji_func *fn, const tjj_artifact *art, const tjp_dot_choice **dots, int32_t *ops)
{
    int n = 0;
    for (int32_t i = 0; fn && i < fn->nops && n < 2; i++)
        if (fn->ops[i].code == TJI_DOT && fn->ops[i].parent >= 0) {
            ops[n] = i;
            dots[n++] = &art->plan.dot[i];
        }
    return n;
}

/* Do both dots read operand `operand` (of each: 0 A, 1 B) from one NVMMA
 * ring through descriptors? */
static int share_ring(const tji_func *fn, const tjj_artifact *art, const int32_t *ops, const tjp_dot_choice **dots,
                      int op0, int op1)
{
    int r0 = tjp_wgmma_operand_ring(fn, fn->ops[ops[0]].args[op0]);
    int r1 = tjp_wgmma_operand_ring(fn, fn->ops[ops[1]].args[op1]);
    return r0 >= 0 && r0 == r1 && art->plan.rings[r0].wgmma && tjp_wgmma_reads_ring(dots[0], op0) &&
           tjp_wgmma_reads_ring(dots[1], op1) && !tjp_wgmma_last_reader(fn, ops[0], op0) &&
           tjp_wgmma_last_reader(fn, ops[1], op1);
}

static void plans(void)
{
    static const char *what[2] = {"block pointers (TMA, a producer warpgroup)", "pointer tiles (cp.async)"};
    for (int mode = 0; mode < 4; mode++) {
        tjj_artifact art;
        tji_func *fn = NULL;
        const tjp_dot_choice *d[2] = {0};
        int32_t ops[2];
        tj_status st = compile(mode, 90, 1, &art, &fn);
        int ok = st == TJ_OK && dots_of(fn, &art, d, ops) == 2;
        const char *sep = st == TJ_OK ? "" : ": ", *why = st == TJ_OK ? "" : tj_last_error();
        if (mode < 2) {
            tap_ok(ok && d[0]->form == TJP_DOT_WGMMA && d[1]->form == TJP_DOT_WGMMA && d[0]->async &&
                       d[1]->async && share_ring(fn, &art, ops, d, 0, 0) && (mode == 1 || art.plan.warp_spec),
                   "%s: both dots wgmma, asynchronous, reading A's ring; the second releases it%s%s", what[mode],
                   sep, why);
        } else if (mode == 2) {
            tap_ok(ok && d[0]->form == TJP_DOT_WGMMA && d[1]->form == TJP_DOT_WGMMA && d[0]->async &&
                       d[1]->a_in_regs && !d[1]->async && share_ring(fn, &art, ops, d, 1, 1) &&
                       tjp_wgmma_operand_trans(fn, fn->ops[ops[1]].args[1]),
                   "a tile read directly and through tj_trans: one ring, two views, the synchronous dot "
                   "releases it%s%s", sep, why);
        } else {
            int nvmma = 0;
            for (int r = 0; ok && r < art.plan.nrings; r++)
                nvmma += art.plan.rings[r].wgmma;
            tap_ok(ok && d[0]->form == TJP_DOT_WGMMA && d[0]->a_in_regs && d[1]->form == TJP_DOT_MMA && nvmma == 1,
                   "a tile that a dot without wgmma reads too: the other reads it from registers (%d of %d rings "
                   "NVMMA: b1's alone)%s%s", nvmma, ok ? art.plan.nrings : 0, sep, why);
        }
        tjj_artifact_free(&art);
        tji_func_free(fn);
    }
}

/* Mode 0's consumers arrive on an empty barrier once per ring an iteration
 * (three rings: a, b1, b2), not once per dot operand (four), and after the
 * loop once per asynchronous dot's operand (four sites, each a no-op but
 * for the slot still unreleased). */
static void releases(void)
{
    tjj_artifact art;
    tji_func *fn = NULL;
    tj_status st = compile(0, 90, 1, &art, &fn);
    int arrivals = st == TJ_OK ? tl_count(art.gpu.ptx, "@p mbarrier.arrive.shared::cta.b64") : -1;
    tap_ok(arrivals == 3 + 4, "the shared slot is released once an iteration: %d empty-barrier arrivals (7)",
           arrivals);
    tjj_artifact_free(&art);
    tji_func_free(fn);
    for (int mode = 0; mode < 4 && st == TJ_OK; mode++)
        for (int sm = 80; sm <= 90 && st == TJ_OK; sm += 10) {
            st = compile(mode, sm, 0, &art, &fn);
            tjj_artifact_free(&art);
            tji_func_free(fn);
        }
    tap_ok(st == TJ_OK, "every mode compiles for sm_90 and sm_80 (mma.sync)%s%s", st == TJ_OK ? "" : ": ",
           st == TJ_OK ? "" : tj_last_error());
}

/* The explainer says which dots share the slot and which releases it. */
static void explained(void)
{
    tj_arg args[8] = {NO_BUFFER, NO_BUFFER, NO_BUFFER, NO_BUFFER, NO_BUFFER,
                      TJ_ARG_I32(4096), TJ_ARG_I32(4096), TJ_ARG_I32(4096)};
    int64_t consts[1] = {0};
    char *text = NULL;
    setenv("TJIT_PTX_TARGET", "sm_90a", 1);
    tj_status st = tj_kernel_explain(shared_operand, args, 8, consts, 1, 8, &text);
    unsetenv("TJIT_PTX_TARGET");
    const char *first = st == TJ_OK ? strstr(text, "A's ring slot is read by 2 dot operands through descriptors; "
                                                   "the last of them releases it") : NULL;
    tap_ok(first && strstr(first, "A's ring slot is read by 2 dot operands through descriptors; this one, the "
                                  "last, releases it"),
           "the explainer names the shared slot and the dot that releases it");
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    free(text);
}

/* ---- on the device under test ---------------------------------------------------- */

static float f16_at(const uint16_t *p, size_t i) { return (float)tl_get(TJ_F16, p, i).f; }

/* Mode's products of random A, B1, B2 on dev at M x N x K, checked element
 * by element against double-precision sums. */
static void run(tj_device *dev, int mode, int M, int N, int K)
{
    size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    uint16_t *a = malloc(na * 2), *b1 = malloc(nb * 2), *b2 = malloc(nb * 2);
    float *c1 = malloc(nc * 4), *c2 = malloc(nc * 4);
    tl_fill_range(TJ_F16, a, na, -1, 1);
    tl_fill_range(TJ_F16, b1, nb, -1, 1);
    tl_fill_range(TJ_F16, b2, nb, -1, 1);
    tj_buffer ba = tl_upload(dev, a, na * 2), bb1 = tl_upload(dev, b1, nb * 2), bb2 = tl_upload(dev, b2, nb * 2);
    tj_buffer bc1 = tl_poisoned(dev, nc * 4), bc2 = tl_poisoned(dev, nc * 4);
    tj_arg args[8] = {TJ_ARG_BUF(ba), TJ_ARG_BUF(bb1), TJ_ARG_BUF(bb2), TJ_ARG_BUF(bc1), TJ_ARG_BUF(bc2),
                      TJ_ARG_I32(M),  TJ_ARG_I32(N),   TJ_ARG_I32(K)};
    int64_t consts[1] = {mode};
    int bn = mode == 2 ? SQUARE : BN;
    tj_launch_cfg cfg = {.grid = {(M + BM - 1) / BM, (N + bn - 1) / bn}, .num_warps = 8, .num_stages = 3,
                         .version = TJ_LAUNCH_CFG_VERSION};
    tj_status st = tj_launch(dev, shared_operand, &cfg, args, 8, consts, 1);
    if (st == TJ_OK)
        st = tj_synchronize(dev);
    long wrong = st == TJ_OK ? 0 : -1;
    double worst = 0;
    if (st == TJ_OK) {
        tl_download(dev, bc1, c1, nc * 4);
        tl_download(dev, bc2, c2, nc * 4);
    }
    for (int m = 0; st == TJ_OK && m < M; m++)
        for (int n = 0; n < N; n++)
            for (int which = 0; which < 2; which++) {
                double sum = 0, mag = 0;
                /* mode 2's c2: Σ_kb Σ_j A[m, col0 + j] B1[kb 64 + n % 64, col0 + j]
                 * (kb 64 + j < K for j < 64: i = kb 64 + j walks kb and j) */
                int transposed = which && mode == 2, col0 = n / SQUARE * SQUARE;
                for (int i = 0; i < (transposed ? (K + SQUARE - 1) / SQUARE * SQUARE : K); i++) {
                    int j = i % SQUARE, row = i / SQUARE * SQUARE + n % SQUARE;
                    if (transposed && (col0 + j >= K || col0 + j >= N || row >= K))
                        continue;
                    /* mode 3's c2: w is B2's rows 0 .. BK - 1 */
                    size_t at_a = (size_t)m * K + (transposed ? col0 + j : i);
                    size_t at_b = transposed ? (size_t)row * N + col0 + j
                                             : (size_t)(which && mode == 3 ? i % BK : i) * N + n;
                    double p = (double)f16_at(a, at_a) * f16_at(which && !transposed ? b2 : b1, at_b);
                    sum += p, mag += fabs(p);
                }
                float got = which ? c2[(size_t)m * N + n] : c1[(size_t)m * N + n];
                double err = fabs(got - sum), tol = 2.0 * K * ldexp(mag, -23) + 1e-6;
                if (!(err <= tol)) {
                    if (wrong++ < 3)
                        tap_diag("mode %d: c%d[%d, %d] = %g, expected %g", mode, which + 1, m, n, got, sum);
                } else if (err / tol > worst) {
                    worst = err / tol;
                }
            }
    tap_ok(wrong == 0, "mode %d on %s, %d x %d x %d: right (worst error %.2f of the bound)%s%s", mode,
           tj_device_name(dev), M, N, K, worst, st == TJ_OK ? "" : ": ", st == TJ_OK ? "" : tj_last_error());
    tj_buffer_free(dev, ba), tj_buffer_free(dev, bb1), tj_buffer_free(dev, bb2);
    tj_buffer_free(dev, bc1), tj_buffer_free(dev, bc2);
    free(a), free(b1), free(b2), free(c1), free(c2);
}

int main(void)
{
    tap_plan(12);
    plans();
    releases();
    explained();
    tj_device *dev = tl_setup("test_shared_operand");
    /* K = 200: 16-byte rows (TMA), a ragged last K block; M and N ragged */
    for (int mode = 0; mode < 4; mode++)
        run(dev, mode, 200, 136, 200);
    /* the pointer-tile kernel at a K whose rows are not 16-byte aligned */
    run(dev, 1, 130, 72, 75);
    tj_device_close(dev);
    return tap_done();
}
