/* SPDX-License-Identifier: MIT */
/*
 * test_attention_plan.c — fused attention (samples/attention_kernel.h) on
 * the GPU paths, read without a GPU: chained dots, register A operands,
 * and the PTX. (The sample itself checks its results against C in make
 * check, on the CPU, and on the GPU in scripts/gpu-run.sh.)
 *
 *  - tjp_layout_wgmma_a, for A tiles 64..256 x 16..128 (16-bit) and
 *    64..256 x 8..64 (tf32) over 4 and 8 warps, puts in every register,
 *    lane and warp the element that the PTX ISA's table of wgmma's
 *    register A fragment names for instruction register i (isa_a),
 *    instructions along K first, then the 64-row blocks of a warpgroup;
 *  - the kernel planned for sm_90a as a launch would (causal and not, head
 *    dims 64 and 128, 4 and 8 warps) runs all four dots as wgmma with A in
 *    registers and B from its ring, and neither loop moves data between
 *    layouts: the scores are the next dot's A in the same registers, the
 *    running maxima and sums stay in the accumulator's rows (at most
 *    renamed between the two dots' slices, which differ only in
 *    duplicated registers);
 *  - for sm_80 the same kernel splits both dots of a loop over M alone
 *    (mma.sync), again with no conversion in the loops;
 *  - the PTX for sm_90a has its wgmma.mma_async with register A
 *    fragments, and (where make check sets TJIT_PTXAS) ptxas assembles it
 *    and the sm_80 PTX without spills being reported as serialization
 *    (C7508, C7510, C7511, C7515 and C7519 fail the check);
 *  - with K and V by block pointers (the TMA form), a producer warpgroup
 *    fills the rings of both loops, and the second loop's rings are in
 *    the families of the first's (alloc_shared.c): one set of bytes and
 *    mbarriers per tensor, which the explainer names;
 *  - the backward pass (samples/attention_bwd_kernel.h, f16 and bf16, head
 *    dims 64 and 128 at the sample's blocks and 8 warps): the 14 dots of
 *    the main kernel (5 in each dK/dV loop, 3 in each dQ loop) run as
 *    wgmma with B from a ring on sm_90a — the dQ loops too, which follow
 *    the stores of dK and dV (into other buffers: pipeline_loops.c asks
 *    alias.c) — and as mma.sync on sm_80 and sm_90, in both of its forms
 *    (ONE_READ: the tutorial's Q^T, dO and K^T read once, each read by two
 *    dots, once through tj_trans); ptxas assembles both kernels' PTX.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder/ir.h"
#include "ffi_bind/ffi_bind.h"
#include "jit/pipeline.h"
#include "jit/runtime/ptxas.h"
#include "passes/passes.h"
#include "tap.h"
#include "testlib.h"
#include "tjit.h"
#include "../samples/attention_kernel.h"
#include "../samples/attention_bwd_kernel.h"

ATTENTION_KERNEL(attention_f16, f16, TJ_F16)
ATTENTION_KERNEL(attention_bf16, bf16, TJ_BF16)
ATTENTION_BLOCK_PTR_KERNEL(attention_block_ptr_f16, f16, TJ_F16)
ATTENTION_BLOCK_PTR_KERNEL(attention_block_ptr_bf16, bf16, TJ_BF16)

/* --- the register A operand ------------------------------------------------------ */

/* The ISA's element of register r, lane, warp of an M x K register A of
 * elem_bytes elements: 16-bit m64k16 (row 16 * (warp % 4) + groupID + 8 *
 * bit 1 of i, column 8 * bit 2 of i + 2 * threadID_in_group + bit 0 of i)
 * or tf32 m64k8 (a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t +
 * 4)); instructions along K first, then the 64-row blocks. */
static uint32_t isa_a(int elem_bytes, int32_t M, int32_t K, int num_warps, uint32_t r, uint32_t lane, uint32_t warp)
{
    uint32_t per = elem_bytes == 4 ? 4 : 8, kin = elem_bytes == 4 ? 8 : 16;
    uint32_t i = r % per, t = r / per, ksteps = (uint32_t)K / kin, kb = t % ksteps, mb = t / ksteps;
    uint32_t rows = (uint32_t)(M / (num_warps / 4));
    uint32_t row = (warp / 4) * rows + mb * 64 + 16 * (warp % 4) + lane / 4 +
                   8 * (elem_bytes == 4 ? i & 1 : (i >> 1) & 1);
    uint32_t col = kb * kin + (elem_bytes == 4 ? 4 * (i >> 1) + lane % 4 : 8 * (i >> 2) + 2 * (lane % 4) + (i & 1));
    return row * (uint32_t)K + col;
}

static void a_layouts(int elem_bytes)
{
    static const int32_t Ms[] = {64, 128, 256};
    const int32_t *Ks = elem_bytes == 4 ? (const int32_t[]){8, 16, 32, 64} : (const int32_t[]){16, 32, 64, 128};
    int bad = 0, cases = 0;
    char why[160] = "";
    for (int w = 4; w <= 8; w *= 2)
        for (size_t mi = 0; mi < 3; mi++)
            for (size_t ki = 0; ki < 4; ki++) {
                int32_t shape[2] = {Ms[mi], Ks[ki]};
                tjp_layout L;
                if (Ms[mi] % (64 * (w / 4)))
                    continue;
                cases++;
                if (!tjp_layout_wgmma_a(&L, shape, w, elem_bytes)) {
                    snprintf(why, sizeof why, "%dx%d, %d warps: no layout", Ms[mi], Ks[ki], w);
                    bad++;
                    continue;
                }
                uint32_t nregs = 1u << L.nbits[TJP_REG];
                for (uint32_t wp = 0; wp < (uint32_t)w; wp++)
                    for (uint32_t l = 0; l < 32; l++)
                        for (uint32_t r = 0; r < nregs; r++) {
                            uint32_t got = tjp_layout_apply(&L, r, l, wp);
                            uint32_t want = isa_a(elem_bytes, Ms[mi], Ks[ki], w, r, l, wp);
                            if (got != want && !bad++)
                                snprintf(why, sizeof why, "%dx%d, %d warps: reg %u lane %u warp %u holds %u, "
                                         "the ISA says %u", Ms[mi], Ks[ki], w, r, l, wp, got, want);
                        }
                if ((int64_t)nregs * 32 * w != (int64_t)Ms[mi] * Ks[ki] && !bad++)
                    snprintf(why, sizeof why, "%dx%d, %d warps: %u registers", Ms[mi], Ks[ki], w, nregs);
            }
    tjp_layout L;
    int32_t too_short[2] = {64, elem_bytes == 4 ? 4 : 8};
    tap_ok(!bad && cases == 20 && !tjp_layout_wgmma_a(&L, too_short, 4, elem_bytes),
           "wgmma register A of %s: %d tiles over 4 and 8 warps hold the ISA's A fragments (K a multiple of %d)%s%s",
           elem_bytes == 4 ? "tf32 (m64k8)" : "16-bit elements (m64k16)", cases, elem_bytes == 4 ? 8 : 16,
           bad ? ": " : "", why);
}

/* --- the kernel's plan ------------------------------------------------------------- */

typedef struct config {
    int64_t bm, bn, d;
    int causal, warps;
    int bf16;
    int block_ptrs; /* K and V by block pointers (ATTENTION_BLOCK_PTR_KERNEL) */
} config;

enum { N_CTX = 4096, HEADS = 32 };

static const tj_kernel *kernel_of(const config *k)
{
    if (k->block_ptrs)
        return k->bf16 ? attention_block_ptr_bf16 : attention_block_ptr_f16;
    return k->bf16 ? attention_bf16 : attention_f16;
}

static const char *form_of(const config *k) { return k->block_ptrs ? ", K/V block pointers" : ""; }

/* The kernel built as a launch on Z = 4, H = 32, N_CTX = 4096 would: its
 * program and specialization key. */
static tj_status build(const config *k, tji_func **fn, uint64_t *spec)
{
    int32_t d = (int32_t)k->d;
    tj_arg args[10] = {TJ_ARG_BUF((tj_buffer){0}), TJ_ARG_BUF((tj_buffer){0}), TJ_ARG_BUF((tj_buffer){0}),
                       TJ_ARG_BUF((tj_buffer){0}), TJ_ARG_F32(0.125), TJ_ARG_I32(HEADS), TJ_ARG_I32(N_CTX),
                       TJ_ARG_I32(HEADS * N_CTX * d), TJ_ARG_I32(N_CTX * d), TJ_ARG_I32(d)};
    int nargs = 10;
    if (k->block_ptrs) { /* kv_rows = Z * H * N_CTX after n_ctx */
        args[7] = TJ_ARG_I32(4 * HEADS * N_CTX);
        nargs = 8;
    }
    tjf_value values[10];
    int64_t consts[4] = {k->bm, k->bn, k->d, k->causal};
    *fn = NULL;
    tj_status st = tjf_check_args(kernel_of(k), args, nargs, values);
    if (st == TJ_OK)
        st = tji_build(kernel_of(k), consts, 4, fn);
    *spec = st == TJ_OK ? tjf_spec_key(kernel_of(k), values) | tjj_spec_of_buffers(kernel_of(k)) : 0;
    return st;
}

/* Conversions in loop bodies that move data, dots in each form; 0 where
 * planning failed. */
static int plan_counts(const config *k, int sm, int arch_specific, int *in_loops, int *wgmma_a_regs, int *mma_m_only,
                       int *dots)
{
    tji_func *fn = NULL;
    tjj_gpu_planned out = {0};
    uint64_t spec;
    int ok = build(k, &fn, &spec) == TJ_OK &&
             tjj_gpu_plan(fn, &(tjj_gpu_target){.sm = sm, .arch_specific = arch_specific, .num_warps = k->warps,
                                                .spec = spec, .num_stages = 3},
                          &out) == TJ_OK;
    *in_loops = *wgmma_a_regs = *mma_m_only = *dots = 0;
    for (int32_t i = 0; ok && i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        if (op->parent <= 0)
            continue;
        /* a register rename (slices of the two dots' rows that differ in
         * duplicated registers) moves nothing */
        *in_loops += op->code == TJI_CONVERT &&
                     tjp_layout_conversion(&out.plan.of[op->args[0]], &out.plan.of[op->result]) > TJP_CONVERT_IN_THREAD;
        if (op->code != TJI_DOT)
            continue;
        const tjp_dot_choice *ch = &out.plan.dot[i];
        (*dots)++;
        *wgmma_a_regs += ch->form == TJP_DOT_WGMMA && ch->a_in_regs;
        *mma_m_only += ch->form == TJP_DOT_MMA && ch->warps_m == k->warps && ch->warps_n == 1;
    }
    if (!ok)
        tap_diag("%s", tj_last_error());
    tjj_gpu_planned_free(&out);
    tji_func_free(fn);
    return ok;
}

static void plans(const config *k)
{
    int conv, wg, mma, dots;
    int ok = plan_counts(k, 90, 1, &conv, &wg, &mma, &dots) && dots == 4 && wg == 4 && conv == 0;
    tap_ok(ok, "sm_90a attention %s d=%lld %s%s, %lldx%lld, %d warps: %d of %d dots wgmma with A in registers, "
           "%d conversions in the loops that move data", k->bf16 ? "bf16" : "f16", (long long)k->d, k->causal ? "causal" : "full",
           form_of(k), (long long)k->bm, (long long)k->bn, k->warps, wg, dots, conv);
    ok = plan_counts(k, 80, 0, &conv, &wg, &mma, &dots) && dots == 4 && mma == 4 && conv == 0;
    tap_ok(ok, "sm_80 attention %s d=%lld %s%s: %d of %d dots mma.sync split over M alone, %d conversions in the "
           "loops that move data",
           k->bf16 ? "bf16" : "f16", (long long)k->d, k->causal ? "causal" : "full", form_of(k), mma, dots, conv);
}

/* The PTX for sm_90a (wgmma) and sm_80 (mma.sync), each through ptxas
 * where make check gives one. */
static void ptx(const config *k)
{
    for (int t = 0; t < 2; t++) {
        int sm = t ? 80 : 90;
        tji_func *fn = NULL;
        tjj_artifact art = {0};
        uint64_t spec;
        tj_status st = build(k, &fn, &spec);
        if (st == TJ_OK)
            st = tjj_compile_gpu(fn, &(tjj_gpu_target){.sm = sm, .arch_specific = !t, .num_warps = k->warps,
                                                       .spec = spec, .num_stages = 3},
                                 &art);
        if (st == TJ_OK && tjj_ptxas_path())
            st = tjj_ptxas_check(tjj_ptxas_path(), art.gpu.ptx, sm, !t, fn->name);
        const char *p = st == TJ_OK ? art.gpu.ptx : "";
        /* per loop: D/16 steps of Q K^T and BN/16 of P V, per 64-row block of a warpgroup */
        int blocks = (int)(k->bm / (k->warps / 4) / 64), wg = 2 * blocks * (int)(k->d / 16 + k->bn / 16);
        int ok = st == TJ_OK && (t ? tl_count(p, "mma.sync.aligned.m16n8k16") > 0 && !tl_count(p, "wgmma")
                                   : tl_count(p, "wgmma.mma_async.sync.aligned.") == wg &&
                                         tl_count(p, "}, {%r") == wg && tl_count(p, "wgmma.wait_group.sync.aligned 0;") == 4);
        if (st != TJ_OK)
            tap_diag("%s", tj_last_error());
        tap_ok(ok, "%s PTX, attention %s d=%lld %s%s %lldx%lld %d warps: %s%s", t ? "sm_80" : "sm_90a",
               k->bf16 ? "bf16" : "f16", (long long)k->d, k->causal ? "causal" : "full", form_of(k), (long long)k->bm,
               (long long)k->bn, k->warps, t ? "mma.sync, no wgmma" : "wgmma.mma_async with register A, each waited for",
               tjj_ptxas_path() ? "; ptxas assembles it and reports no serialization" : "");
        if (fn)
            tjj_artifact_free(&art);
        tji_func_free(fn);
    }
}

/* With K and V by block pointers, on sm_90a: every ring a TMA ring, a
 * producer warpgroup for both loops, each ring of the second loop in the
 * family of the first loop's ring of the same tensor (the same bytes and
 * mbarriers: the producer's fills of the second loop follow the first's
 * slot by slot); and its PTX initializes the mbarriers of the two
 * families only, full and empty per slot. */
static void specialized(const config *k)
{
    tji_func *fn = NULL;
    tjj_gpu_planned out = {0};
    uint64_t spec;
    int ok = build(k, &fn, &spec) == TJ_OK &&
             tjj_gpu_plan(fn, &(tjj_gpu_target){.sm = 90, .arch_specific = 1, .num_warps = k->warps, .spec = spec,
                                                .num_stages = 3},
                          &out) == TJ_OK;
    const tjp_layout_plan *p = &out.plan;
    int rings = 0, tma = 0, joined = 0, slots = 0;
    for (int r = 0; ok && r < p->nrings; r++) {
        const tjp_ring *R = &p->rings[r], *F = &p->rings[R->family];
        rings += R->op >= 0;
        tma += R->op >= 0 && R->tma;
        joined += R->family != r && R->family == r - 2 && F->offset == R->offset && F->barriers == R->barriers;
        slots = R->slots;
    }
    ok = ok && p->warp_spec && p->warp_spec->nloops == 2 && rings == 4 && tma == 4 && joined == 2;
    tap_ok(ok, "sm_90a attention %s d=%lld %s%s %lldx%lld %d warps: %d TMA rings of %d, %d in the family of the "
           "first loop's ring of their tensor, a producer for %d loops%s%s",
           k->bf16 ? "bf16" : "f16", (long long)k->d, k->causal ? "causal" : "full", form_of(k), (long long)k->bm,
           (long long)k->bn, k->warps, tma, rings, joined, p->warp_spec ? p->warp_spec->nloops : 0,
           p->warp_spec ? "" : ": ", p->warp_spec ? "" : p->why_not_specialized ? p->why_not_specialized : "?");
    tjj_gpu_planned_free(&out);
    tji_func_free(fn);

    char *explained = NULL;
    int32_t d = (int32_t)k->d;
    tj_arg args[8] = {TJ_ARG_BUF((tj_buffer){0}), TJ_ARG_BUF((tj_buffer){0}), TJ_ARG_BUF((tj_buffer){0}),
                      TJ_ARG_BUF((tj_buffer){0}), TJ_ARG_F32(0.125), TJ_ARG_I32(HEADS), TJ_ARG_I32(N_CTX),
                      TJ_ARG_I32(4 * HEADS * N_CTX)};
    int64_t consts[4] = {k->bm, k->bn, d, k->causal};
    setenv("TJIT_PTX_TARGET", "sm_90a", 1);
    tj_status est = tj_kernel_explain(kernel_of(k), args, 8, consts, 4, k->warps, &explained);
    unsetenv("TJIT_PTX_TARGET");
    tap_ok(est == TJ_OK && tl_count(explained, "in ring 0's family") == 4 &&
               tl_count(explained, "in ring 1's family") == 4 && strstr(explained, "the TMA copies of the loops from op"),
           "the explainer names the families (the second loop's copies and reads in ring 0's and 1's) and the "
           "producer's loops");
    if (est != TJ_OK)
        tap_diag("%s", tj_last_error());
    free(explained);

    tjj_artifact art = {0};
    tj_status st = build(k, &fn, &spec);
    if (st == TJ_OK)
        st = tjj_compile_gpu(fn, &(tjj_gpu_target){.sm = 90, .arch_specific = 1, .num_warps = k->warps,
                                                   .spec = spec, .num_stages = 3},
                             &art);
    const char *text = st == TJ_OK ? art.gpu.ptx : "";
    int inits = tl_count(text, "mbarrier.init.shared::cta.b64");
    /* 8 consumer warps and a producer warpgroup: 384 threads, 168 registers at entry */
    int moves_regs = k->warps == 8;
    tap_ok(st == TJ_OK && inits == 2 * 2 * slots && tl_count(text, "setmaxnreg.inc") == moves_regs &&
               !tl_count(text, "cp.async.cg"),
           "its PTX: %d mbarrier.init (2 families x %d slots x full and empty), %s, no cp.async", inits, slots,
           moves_regs ? "setmaxnreg" : "no setmaxnreg (256 threads have 255 registers each)");
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    if (fn)
        tjj_artifact_free(&art);
    tji_func_free(fn);
}

/* --- the backward pass -------------------------------------------------------------- */

ATTENTION_BWD_PREPROCESS_KERNEL(attention_bwd_pre_f16, f16)
ATTENTION_BWD_KERNEL(attention_bwd_f16, f16, TJ_F16)
ATTENTION_BWD_KERNEL(attention_bwd_bf16, bf16, TJ_BF16)

/* kernel k (the main one, or the preprocess where pre) for head dim d at
 * the sample's blocks, compiled for sm as a launch with N_CTX = 4096
 * would; its dots on tensor cores counted, its PTX through ptxas. */
static int backward_kernel(const tj_kernel *k, int pre, int64_t d, int one_read, int sm, int arch_specific, int *dots,
                           int *mma, int *wgmma)
{
    int64_t consts[7] = {32, 128, 128, 32, 2, d, one_read};
    tj_arg args[11];
    for (int i = 0; i < 9; i++)
        args[i] = TJ_ARG_BUF((tj_buffer){0});
    args[9] = TJ_ARG_F32(0.125f);
    args[10] = TJ_ARG_I32(N_CTX);
    if (pre) { /* o, d_o, delta, n_ctx; BM, HEAD_DIM */
        args[3] = TJ_ARG_I32(N_CTX);
        consts[0] = 128, consts[1] = d;
    }
    int nargs = pre ? 4 : 11, nconsts = pre ? 2 : 7;
    tjf_value values[11];
    tji_func *fn = NULL;
    tjj_artifact art = {0};
    tj_status st = tjf_check_args(k, args, nargs, values);
    if (st == TJ_OK)
        st = tji_build(k, consts, nconsts, &fn);
    if (st == TJ_OK)
        st = tjj_compile_gpu(fn, &(tjj_gpu_target){.sm = sm, .arch_specific = arch_specific, .num_warps = 8,
                                                   .spec = tjf_spec_key(k, values) | tjj_spec_of_buffers(k),
                                                   .num_stages = 3},
                             &art);
    if (st == TJ_OK && tjj_ptxas_path())
        st = tjj_ptxas_check(tjj_ptxas_path(), art.gpu.ptx, sm, arch_specific, fn->name);
    *dots = *mma = *wgmma = 0;
    for (int32_t i = 0; st == TJ_OK && i < fn->nops; i++)
        if (fn->ops[i].code == TJI_DOT) {
            (*dots)++;
            *mma += art.plan.dot[i].form == TJP_DOT_MMA;
            *wgmma += art.plan.dot[i].form == TJP_DOT_WGMMA && !art.plan.dot[i].b_in_regs;
        }
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    if (fn)
        tjj_artifact_free(&art);
    tji_func_free(fn);
    return st == TJ_OK;
}

static void backward(void)
{
    static const struct { int sm, arch_specific; const char *name; } targets[] = {
        {80, 0, "sm_80"}, {90, 0, "sm_90"}, {90, 1, "sm_90a"}};
    for (size_t t = 0; t < 3; t++) {
        int ok = 1, dots, mma, wgmma, pre_dots;
        const char *form = targets[t].arch_specific ? "wgmma, B from its ring" : "mma.sync";
        for (int64_t d = 64; d <= 128; d *= 2) {
            ok &= backward_kernel(attention_bwd_pre_f16, 1, d, 0, targets[t].sm, targets[t].arch_specific,
                                  &pre_dots, &mma, &wgmma);
            for (int b = 0; b < 4; b++) {
                ok &= backward_kernel(b % 2 ? attention_bwd_bf16 : attention_bwd_f16, 0, d, b / 2, targets[t].sm,
                                      targets[t].arch_specific, &dots, &mma, &wgmma);
                int want = targets[t].arch_specific ? wgmma : mma;
                if (ok && (dots != 14 || want != 14)) {
                    tap_diag("%s d=%lld%s: %d of %d dots %s", b % 2 ? "bf16" : "f16", (long long)d,
                             b / 2 ? ", tiles read once" : "", want, dots, form);
                    ok = 0;
                }
            }
        }
        tap_ok(ok, "%s attention backward (f16, bf16; d = 64, 128; 8 warps; tiles read in both orientations, and "
               "once with tj_trans): 14 of 14 dots %s%s", targets[t].name, form,
               tjj_ptxas_path() ? "; ptxas assembles both kernels" : "");
    }
}

int main(void)
{
    static const config cs[] = {{128, 64, 64, 0, 8, 0, 0},  {128, 64, 128, 1, 8, 0, 0}, {128, 64, 64, 1, 4, 1, 0},
                                {128, 128, 64, 0, 8, 1, 0}, {128, 64, 64, 0, 8, 0, 1},  {128, 128, 128, 1, 8, 1, 1},
                                {128, 64, 64, 0, 4, 0, 1}};
    const int n = (int)(sizeof cs / sizeof cs[0]);
    int nblock = 0;
    for (int i = 0; i < n; i++)
        nblock += cs[i].block_ptrs;
    tap_plan(2 + 4 * n + 3 * nblock + 3);
    a_layouts(2);
    a_layouts(4);
    for (int i = 0; i < n; i++)
        plans(&cs[i]);
    for (int i = 0; i < n; i++)
        ptx(&cs[i]);
    for (int i = 0; i < n; i++)
        if (cs[i].block_ptrs)
            specialized(&cs[i]);
    backward();
    return tap_done();
}
