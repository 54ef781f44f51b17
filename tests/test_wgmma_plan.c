/* SPDX-License-Identifier: MIT */
/*
 * test_wgmma_plan.c — Hopper's wgmma path read without a GPU: the
 * accumulator layout against the PTX ISA's fragment table, the rings'
 * NVMMA layout against the ISA's canonical shared-memory layouts at the
 * descriptor numbers the code generator uses, the choice of the form
 * and its gating, and the PTX.
 *
 *  - tjp_layout_wgmma_acc, for tiles 64..256 x 16..256 over 4 and 8
 *    warps, puts in every register, lane and warp the element that the
 *    ISA's table of wgmma's D fragment (m64nNk16: row 16 * (warp % 4) +
 *    groupID + 8 * bit 1 of i, column 8 * (i / 4) + 2 * threadID_in_group
 *    + bit 0 of i) names for that instruction's register i;
 *  - the tutorial matmul planned for sm_90a (NN, and NT with B read
 *    through strides) at the benchmark's configurations chooses wgmma
 *    with its group left in flight, rings of num_stages + 1 slots, and
 *    every element every instruction reads through its descriptor (start
 *    address, LBO, SBO and swizzle mode, applied as the ISA's canonical
 *    K-major and MN-major layouts and the hardware's address XOR) is the
 *    element the ring's swizzle stored there — so copies and wgmma agree;
 *  - B loaded [BN, BK] (or A [BK, BM]) and read through tj_trans: wgmma
 *    where the ring, stored as its copies want, can be read K-major or
 *    the dtype is 16-bit, and then every element each descriptor of the
 *    transposed view reads is where the copies stored it at the ring's
 *    own coordinates; the PTX's imm-trans bits follow the storage;
 *  - for sm_90 (no "a") and at num_stages 1 (no rings) the same dot stays
 *    mma.sync: wgmma only where the target and the operands allow it;
 *  - the PTX for sm_90a has wgmma.mma_async and no ldmatrix, waits with
 *    one group in flight in the loop and none after it, fences the copies
 *    for the async proxy, and (where make check sets TJIT_PTXAS) ptxas
 *    assembles it for sm_90a without reporting serialization — also with
 *    C stored in f16, whose rounding takes accumulator pairs
 *    (cvt.rn.f16x2.f32): scalar cvt.rn.f16.f32 reading the accumulators
 *    made ptxas serialize the wgmma (C7514) and cost f16 a fifth of its
 *    speed on the H200 (RESULTS.md, 2026-12-02 17:15).
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
#include "../samples/matmul_kernel.h"

MATMUL_TUTORIAL_KERNEL(wgmma_matmul, f16, f16, f32, TJ_F32, TJ_PRECISION_IEEE)
MATMUL_TUTORIAL_KERNEL(wgmma_matmul_f16c, f16, f16, f16, TJ_F16, TJ_PRECISION_IEEE)
MATMUL_TUTORIAL_KERNEL(wgmma_matmul_tf32, f32, f32, f32, TJ_F32, TJ_PRECISION_TF32)
MATMUL_TUTORIAL_KERNEL(wgmma_matmul_fp8, f8e4m3, f8e5m2, f32, TJ_F32, TJ_PRECISION_IEEE)

/* The tutorial with B's tile loaded [BN, BK] and transposed by tj_trans
 * for the dot (TB), as Triton users write tl.dot(a, b.T) (its attention
 * tutorial's q k^T), or A's loaded [BK, BM] (TA): through the strides,
 * whichever way the tensors are stored. */
#define MATMUL_TRANS_KERNEL(name, ab_dt, precision, TA, TB)                                                   \
    TJ_KERNEL(name,                                                                                          \
              TJ_PARAMS(TJ_PTR(a, ab_dt), TJ_PTR(b, ab_dt), TJ_PTR(c, f32), TJ_SCALAR(M, i32),                \
                        TJ_SCALAR(N, i32), TJ_SCALAR(K, i32), TJ_SCALAR(stride_am, i32),                     \
                        TJ_SCALAR(stride_ak, i32), TJ_SCALAR(stride_bk, i32), TJ_SCALAR(stride_bn, i32),     \
                        TJ_SCALAR(stride_cm, i32), TJ_SCALAR(stride_cn, i32)),                               \
              TJ_CONSTS(BM, BN, BK, GROUP))                                                                  \
    {                                                                                                        \
        (void)GROUP;                                                                                         \
        tj_val offs_m = tj_add(tj_mul(tj_program_id(0), BM), tj_arange(0, BM));                              \
        tj_val offs_n = tj_add(tj_mul(tj_program_id(1), BN), tj_arange(0, BN));                              \
        tj_val offs_k = tj_arange(0, BK);                                                                    \
        tj_val a_m = tj_mul(tj_expand_dims(offs_m, TA ? 0 : 1), stride_am);                                  \
        tj_val a_ptrs = tj_add(a, tj_add(a_m, tj_mul(tj_expand_dims(offs_k, TA ? 1 : 0), stride_ak)));      \
        tj_val b_n = tj_mul(tj_expand_dims(offs_n, TB ? 1 : 0), stride_bn);                                  \
        tj_val b_ptrs = tj_add(b, tj_add(b_n, tj_mul(tj_expand_dims(offs_k, TB ? 0 : 1), stride_bk)));      \
        tj_val acc = tj_zeros(TJ_SHAPE(BM, BN), TJ_F32);                                                     \
        TJ_FOR(k, 0, tj_cdiv(K, BK), 1, &acc, &a_ptrs, &b_ptrs) {                                            \
            tj_val ta = tj_load(a_ptrs), tb = tj_load(b_ptrs);                                               \
            acc = tj_dot(TA ? tj_trans(ta) : ta, TB ? tj_trans(tb) : tb, acc, .input_precision = precision); \
            a_ptrs = tj_add(a_ptrs, tj_mul(stride_ak, BK));                                                  \
            b_ptrs = tj_add(b_ptrs, tj_mul(stride_bk, BK));                                                  \
        }                                                                                                    \
        tj_store(tj_add(c, tj_add(tj_mul(tj_expand_dims(offs_m, 1), stride_cm),                              \
                                  tj_mul(tj_expand_dims(offs_n, 0), stride_cn))), acc);                      \
    }
MATMUL_TRANS_KERNEL(wgmma_matmul_bt, f16, TJ_PRECISION_IEEE, 0, 1)
MATMUL_TRANS_KERNEL(wgmma_matmul_bt_tf32, f32, TJ_PRECISION_TF32, 0, 1)
MATMUL_TRANS_KERNEL(wgmma_matmul_bt_fp8, f8e4m3, TJ_PRECISION_IEEE, 0, 1)
MATMUL_TRANS_KERNEL(wgmma_matmul_at, f16, TJ_PRECISION_IEEE, 1, 0)
MATMUL_TRANS_KERNEL(wgmma_matmul_at_tf32, f32, TJ_PRECISION_TF32, 1, 0)

/* Operand dtypes of a configuration. */
enum { IN_F16, IN_TF32, IN_FP8 };

#define NO_BUFFER TJ_ARG_BUF((tj_buffer){0})

/* --- the accumulator ------------------------------------------------------------- */

/* The ISA's element of register r, lane, warp for an M x N tile. */
static uint32_t isa_acc(int32_t M, int32_t N, int num_warps, int instr_n, uint32_t r, uint32_t lane, uint32_t warp)
{
    uint32_t per = (uint32_t)instr_n / 2, i = r % per, t = r / per;
    uint32_t ninstr = (uint32_t)(N / instr_n), nb = t % ninstr, mb = t / ninstr;
    uint32_t rows = (uint32_t)(M / (num_warps / 4));
    uint32_t row = (warp / 4) * rows + mb * 64 + 16 * (warp % 4) + lane / 4 + 8 * ((i >> 1) & 1);
    uint32_t col = nb * (uint32_t)instr_n + 8 * (i / 4) + 2 * (lane % 4) + (i & 1);
    return row * (uint32_t)N + col;
}

static void accumulator_layouts(void)
{
    static const int32_t Ms[] = {64, 128, 256}, Ns[] = {16, 32, 64, 128, 256};
    int bad = 0, cases = 0;
    char why[160] = "";
    for (int w = 4; w <= 8; w *= 2)
        for (size_t mi = 0; mi < 3; mi++)
            for (size_t ni = 0; ni < 5; ni++) {
                int32_t shape[2] = {Ms[mi], Ns[ni]};
                int instr_n = Ns[ni];
                tjp_layout L;
                if (Ms[mi] % (64 * (w / 4)))
                    continue;
                cases++;
                if (!tjp_layout_wgmma_acc(&L, shape, w, instr_n)) {
                    snprintf(why, sizeof why, "%dx%d, %d warps: no layout", Ms[mi], Ns[ni], w);
                    bad++;
                    continue;
                }
                uint32_t nregs = 1u << L.nbits[TJP_REG];
                if ((int64_t)nregs * 32 * w != (int64_t)Ms[mi] * Ns[ni]) {
                    snprintf(why, sizeof why, "%dx%d, %d warps: %u registers", Ms[mi], Ns[ni], w, nregs);
                    bad++;
                    continue;
                }
                for (uint32_t wp = 0; wp < (uint32_t)w; wp++)
                    for (uint32_t l = 0; l < 32; l++)
                        for (uint32_t r = 0; r < nregs; r++) {
                            uint32_t got = tjp_layout_apply(&L, r, l, wp);
                            uint32_t want = isa_acc(Ms[mi], Ns[ni], w, instr_n, r, l, wp);
                            if (got != want && !bad++)
                                snprintf(why, sizeof why, "%dx%d, %d warps: reg %u lane %u warp %u holds %u, "
                                         "the ISA says %u", Ms[mi], Ns[ni], w, r, l, wp, got, want);
                        }
            }
    tap_ok(!bad && cases == 25, "wgmma accumulators: %d tiles over 4 and 8 warps hold the ISA's D fragments%s%s",
           cases, bad ? ": " : "", why);
    int32_t wide[2] = {64, 512};
    tjp_layout L;
    tap_ok(!tjp_layout_wgmma_acc(&L, (int32_t[]){96, 64}, 4, 64) && !tjp_layout_wgmma_acc(&L, (int32_t[]){64, 64}, 8, 64) &&
               tjp_layout_wgmma_acc(&L, wide, 4, 256) && isa_acc(64, 512, 4, 256, 128, 0, 0) == 256,
           "wgmma accumulators: 64 rows per warpgroup are needed; N = 512 is two m64n256 instructions");
}

/* --- the tutorial's plan ------------------------------------------------------------ */

typedef struct config {
    int64_t bm, bn, bk;
    int warps, stages, nt;
    int c_f16;            /* C stored as f16 (the PTX part only) */
    int in;               /* IN_F16, IN_TF32, IN_FP8 (e4m3 x e5m2) */
    int tn;               /* A stored K x M, read through its strides */
    int bt;               /* B loaded [BN, BK] and read through tj_trans */
    int at;               /* A loaded [BK, BM] and read through tj_trans */
} config;

static const tj_kernel *kernel_of(const config *k)
{
    if (k->bt)
        return k->in == IN_TF32 ? wgmma_matmul_bt_tf32 : k->in == IN_FP8 ? wgmma_matmul_bt_fp8 : wgmma_matmul_bt;
    if (k->at)
        return k->in == IN_TF32 ? wgmma_matmul_at_tf32 : wgmma_matmul_at;
    return k->in == IN_TF32 ? wgmma_matmul_tf32 : k->in == IN_FP8 ? wgmma_matmul_fp8
           : k->c_f16       ? wgmma_matmul_f16c : wgmma_matmul;
}

static int elem_bytes_of(const config *k) { return k->in == IN_TF32 ? 4 : k->in == IN_FP8 ? 1 : 2; }

static const char *in_name(const config *k) { return k->in == IN_TF32 ? "tf32" : k->in == IN_FP8 ? "fp8" : "f16"; }

/* The configuration's kernel built for a launch at 4096^3 (row-major C; A
 * row-major, or for TN stored K x M; B row-major, or for NT stored N x K;
 * the transposed ones read through their strides):
 * its program and the launch's specialization key into *spec. */
static tj_status build_tutorial(const config *k, tji_func **fn, uint64_t *spec)
{
    int32_t m = 4096, n = 4096, kk = 4096;
    tj_arg args[12] = {NO_BUFFER, NO_BUFFER, NO_BUFFER, TJ_ARG_I32(m), TJ_ARG_I32(n), TJ_ARG_I32(kk),
                       TJ_ARG_I32(k->tn ? 1 : kk), TJ_ARG_I32(k->tn ? m : 1), TJ_ARG_I32(k->nt ? 1 : n),
                       TJ_ARG_I32(k->nt ? kk : 1),
                       TJ_ARG_I32(n), TJ_ARG_I32(1)};
    tjf_value values[12];
    int64_t consts[4] = {k->bm, k->bn, k->bk, 8};
    const tj_kernel *kernel = kernel_of(k);
    *fn = NULL;
    tj_status st = tjf_check_args(kernel, args, 12, values);
    if (st == TJ_OK)
        st = tji_build(kernel, consts, 4, fn);
    *spec = st == TJ_OK ? tjf_spec_key(kernel, values) | tjj_spec_of_buffers(kernel) : 0;
    return st;
}

static tji_func *plan_tutorial(const config *k, int sm, int arch_specific, int stages, tjp_layout_plan *plan)
{
    tji_func *fn = NULL;
    tjj_gpu_planned out = {0};
    uint64_t spec;
    memset(plan, 0, sizeof *plan);
    int ok = build_tutorial(k, &fn, &spec) == TJ_OK;
    ok = ok && tjj_gpu_plan(fn, &(tjj_gpu_target){.sm = sm, .arch_specific = arch_specific, .num_warps = k->warps,
                                                  .spec = spec, .num_stages = stages},
                            &out) == TJ_OK;
    *plan = out.plan;
    out.plan = (tjp_layout_plan){0};
    tjj_gpu_planned_free(&out);
    if (!ok) {
        tap_diag("%s", tj_last_error());
        tjp_layout_plan_free(plan);
        tji_func_free(fn);
        return NULL;
    }
    return fn;
}

static int32_t dot_of(const tji_func *fn)
{
    for (int32_t i = 0; i < fn->nops; i++)
        if (fn->ops[i].code == TJI_DOT && fn->ops[i].parent >= 0)
            return i;
    return -1;
}

/* The byte that wgmma reads for element (mn, k) of an instruction whose
 * descriptor is d with start `start`, as the ISA's canonical layouts say
 * (in 16-byte units T = 16 / eb elements): K-major ((8, m), (T, 2)) :
 * ((Sw, SBO), (1, T)), MN-major ((T, Sw/16, m), (8, k)) : ((1, T, LBO),
 * (Sw, SBO)); then the swizzle the hardware applies to the address: the
 * 16-byte chunk bits 4.. XOR the bits from 7 up, as many as Sw/16 - 1. */
static uint64_t canonical(const tjp_wgmma_desc *d, int sw, int eb, uint64_t start, uint32_t mn, uint32_t k)
{
    uint64_t a;
    if (d->k_major)
        a = start + (mn / 8) * d->sbo + (mn % 8) * (uint64_t)sw + (uint64_t)k * (uint64_t)eb;
    else
        a = start + (mn / (uint32_t)(sw / eb)) * d->lbo + (mn % (uint32_t)(sw / eb)) * (uint64_t)eb +
            (k / 8) * d->sbo + (k % 8) * (uint64_t)sw;
    return a ^ (((a >> 7) & (uint64_t)(sw / 16 - 1)) << 4);
}

/* Every element of every instruction of operand `which` (0: A, 1: B)
 * read through the descriptor lands where the ring stored it. */
static int descriptors_agree(const tji_func *fn, const tjp_layout_plan *plan, int32_t dot, int which, char *why,
                             size_t n)
{
    const tji_op *op = &fn->ops[dot];
    const tjp_dot_choice *ch = &plan->dot[dot];
    int32_t v = op->args[which], ring = tjp_wgmma_operand_ring(fn, v);
    const tji_type *t = tji_typeof(fn, v);
    if (ring < 0 || ring >= plan->nrings || !plan->rings[ring].wgmma) {
        snprintf(why, n, "operand %d is not a wgmma ring's read", which);
        return 0;
    }
    /* the code generator's numbers come from the ring as the operand sees
     * it (through tj_trans: the transpose); where the copies stored each
     * element, from the ring's own swizzle at its own coordinates */
    const tjp_ring *R = &plan->rings[ring];
    int trans;
    int32_t read = tjp_wgmma_operand_read(fn, v, &trans);
    tjp_ring view;
    tjp_wgmma_view(R, tji_typeof(fn, fn->ops[read].result), trans, &view);
    tjp_wgmma_desc d;
    tjp_wgmma_operand(&view, t, which, &d);
    uint32_t K = (uint32_t)(which ? t->shape[0] : t->shape[1]), MN = (uint32_t)(which ? t->shape[1] : t->shape[0]);
    uint32_t block = which ? (uint32_t)ch->instr_n : 64, cbits = (uint32_t)tjp_log2_exact(t->shape[1]);
    uint32_t kin = 32u / (uint32_t)R->elem_bytes;
    if (R->offset % 1024 || R->slot_bytes % 1024) {
        snprintf(why, n, "operand %d: ring at byte %llu, slots of %llu bytes (1024-byte atoms)", which,
                 (unsigned long long)R->offset, (unsigned long long)R->slot_bytes);
        return 0;
    }
    for (uint32_t k0 = 0; k0 < K; k0 += kin)
        for (uint32_t mn0 = 0; mn0 < MN; mn0 += block) {
            uint64_t start = which ? tjp_wgmma_offset(&view, t, k0, mn0) : tjp_wgmma_offset(&view, t, mn0, k0);
            for (uint32_t mn = 0; mn < block; mn++)
                for (uint32_t k = 0; k < kin; k++) {
                    uint32_t row = which ? k0 + k : mn0 + mn, col = which ? mn0 + mn : k0 + k;
                    uint32_t stored = trans ? col << tjp_log2_exact(t->shape[0]) | row : row << cbits | col;
                    uint64_t want = (uint64_t)tjp_swizzle_apply(&R->swizzle, stored) * (uint64_t)R->elem_bytes;
                    uint64_t got = canonical(&d, R->swizzle_bytes, R->elem_bytes, start, mn, k);
                    if (got != want) {
                        snprintf(why, n, "operand %d%s (%s-major, %d-byte swizzle): element (%u, %u) read at byte "
                                 "%llu, stored at %llu", which, trans ? " through tj_trans" : "",
                                 d.k_major ? "K" : "MN", R->swizzle_bytes, row, col,
                                 (unsigned long long)got, (unsigned long long)want);
                        return 0;
                    }
                }
        }
    return 1;
}

static void tutorial_plans(void)
{
    static const config cfgs[] = {{128, 128, 64, 4, 4, 0, 0, IN_F16, 0, 0, 0}, {128, 128, 64, 4, 4, 1, 0, IN_F16, 0, 0, 0}, {128, 256, 64, 8, 3, 0, 0, IN_F16, 0, 0, 0},
                                  {128, 256, 64, 8, 3, 1, 0, IN_F16, 0, 0, 0}, {128, 128, 32, 4, 4, 0, 0, IN_F16, 0, 0, 0}, {64, 256, 32, 4, 4, 1, 0, IN_F16, 0, 0, 0},
                                  {128, 128, 128, 8, 2, 0, 0, IN_F16, 0, 0, 0}, {64, 64, 16, 4, 3, 1, 0, IN_F16, 0, 0, 0},
                                  {128, 128, 32, 4, 3, 1, 0, IN_TF32, 0, 0, 0}, {128, 256, 32, 8, 3, 1, 0, IN_TF32, 0, 0, 0},
                                  {128, 128, 16, 4, 4, 1, 0, IN_TF32, 0, 0, 0}, {64, 256, 32, 4, 4, 1, 0, IN_TF32, 0, 0, 0},
                                  {128, 128, 64, 4, 3, 1, 0, IN_FP8, 0, 0, 0},  {128, 256, 128, 8, 3, 1, 0, IN_FP8, 0, 0, 0}};
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
        const config *k = &cfgs[i];
        tjp_layout_plan plan;
        tji_func *fn = plan_tutorial(k, 90, 1, k->stages, &plan);
        int32_t dot = fn ? dot_of(fn) : -1;
        char why[256] = "no plan";
        int ok = dot >= 0 && plan.dot[dot].form == TJP_DOT_WGMMA && plan.dot[dot].async;
        if (dot >= 0 && !ok)
            snprintf(why, sizeof why, "form %d, async %d", plan.dot[dot].form, plan.dot[dot].async);
        for (int r = 0; ok && r < plan.nrings; r++)
            if (!plan.rings[r].wgmma || plan.rings[r].slots != k->stages + 1) {
                snprintf(why, sizeof why, "ring %d: wgmma %d, %d slots", r, plan.rings[r].wgmma, plan.rings[r].slots);
                ok = 0;
            }
        ok = ok && plan.nrings == 2 && descriptors_agree(fn, &plan, dot, 0, why, sizeof why) &&
             descriptors_agree(fn, &plan, dot, 1, why, sizeof why);
        tap_ok(ok, "sm_90a %s %lldx%lldx%lld, %d warps, %d stages%s: wgmma, async, %d-slot NVMMA rings that the "
               "descriptors read as stored%s%s", in_name(k), (long long)k->bm, (long long)k->bn, (long long)k->bk,
               k->warps, k->stages, k->nt ? ", NT" : "", k->stages + 1, ok ? "" : ": ", ok ? "" : why);
        tjp_layout_plan_free(&plan);
        tji_func_free(fn);
    }
}

/* B loaded [BN, BK] (A [BK, BM]) and read through tj_trans: its loads are pipelined
 * as any dot operand's, and wgmma reads the ring as it was stored — B
 * stored N x K is K-major, what every dtype takes; stored K x N (the
 * loads along N) it is N-major, which only 16-bit operands may be, so
 * tf32 and fp8 keep mma.sync there. The descriptors' elements are
 * checked against where the copies stored them, at the ring's own
 * coordinates (the transpose's (k, n) is the ring's (n, k)). */
static void trans_plans(void)
{
    static const config cfgs[] = {
        {.bm = 128, .bn = 128, .bk = 64, .warps = 4, .stages = 4, .nt = 1, .in = IN_F16, .bt = 1},
        {.bm = 128, .bn = 256, .bk = 64, .warps = 8, .stages = 3, .nt = 1, .in = IN_F16, .bt = 1},
        {.bm = 64, .bn = 64, .bk = 16, .warps = 4, .stages = 3, .nt = 1, .in = IN_F16, .bt = 1},
        {.bm = 128, .bn = 128, .bk = 64, .warps = 4, .stages = 4, .nt = 0, .in = IN_F16, .bt = 1},
        {.bm = 128, .bn = 128, .bk = 32, .warps = 4, .stages = 3, .nt = 1, .in = IN_TF32, .bt = 1},
        {.bm = 128, .bn = 256, .bk = 128, .warps = 8, .stages = 3, .nt = 1, .in = IN_FP8, .bt = 1},
        {.bm = 128, .bn = 128, .bk = 32, .warps = 4, .stages = 3, .nt = 0, .in = IN_TF32, .bt = 1},
        {.bm = 128, .bn = 128, .bk = 64, .warps = 4, .stages = 3, .nt = 0, .in = IN_FP8, .bt = 1},
        {.bm = 128, .bn = 128, .bk = 64, .warps = 4, .stages = 4, .tn = 1, .in = IN_F16, .at = 1},
        {.bm = 128, .bn = 256, .bk = 64, .warps = 8, .stages = 3, .tn = 0, .in = IN_F16, .at = 1},
        {.bm = 128, .bn = 128, .bk = 32, .warps = 4, .stages = 3, .tn = 0, .nt = 1, .in = IN_TF32, .at = 1},
        {.bm = 128, .bn = 128, .bk = 32, .warps = 4, .stages = 3, .tn = 1, .nt = 1, .in = IN_TF32, .at = 1}};
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
        const config *k = &cfgs[i];
        int w = k->at ? 0 : 1, along_k = k->at ? !k->tn : k->nt; /* the transposed operand, its loads */
        int want_wgmma = along_k || k->in == IN_F16;
        tjp_layout_plan plan;
        tji_func *fn = plan_tutorial(k, 90, 1, k->stages, &plan);
        int32_t dot = fn ? dot_of(fn) : -1;
        char why[256] = "no plan";
        int ok = dot >= 0 && tjp_wgmma_operand_trans(fn, fn->ops[dot].args[w]) &&
                 (plan.dot[dot].form == TJP_DOT_WGMMA) == want_wgmma && (!want_wgmma || plan.dot[dot].async);
        if (dot >= 0 && !ok)
            snprintf(why, sizeof why, "%s %sread through tj_trans from a ring, form %d, async %d", w ? "B" : "A",
                     tjp_wgmma_operand_trans(fn, fn->ops[dot].args[w]) ? "" : "not ", plan.dot[dot].form,
                     plan.dot[dot].async);
        /* its ring stored as the copies want: transposed where they run along its first dimension (K
         * for B's [BN, BK], for A's [BK, BM]) */
        int ring = ok ? tjp_wgmma_operand_ring(fn, fn->ops[dot].args[w]) : -1, stored_t = w ? !k->nt : !k->tn;
        if (ok && want_wgmma && (!plan.rings[ring].wgmma || plan.rings[ring].transposed != stored_t ||
                                 plan.rings[ring].slots != k->stages + 1)) {
            snprintf(why, sizeof why, "%s's ring: wgmma %d, transposed %d, %d slots", w ? "B" : "A",
                     plan.rings[ring].wgmma, plan.rings[ring].transposed, plan.rings[ring].slots);
            ok = 0;
        }
        ok = ok && (!want_wgmma || (descriptors_agree(fn, &plan, dot, 0, why, sizeof why) &&
                                    descriptors_agree(fn, &plan, dot, 1, why, sizeof why)));
        tap_ok(ok, "sm_90a %s %lldx%lldx%lld, %s stored %s and read through tj_trans: %s%s%s", in_name(k),
               (long long)k->bm, (long long)k->bn, (long long)k->bk, w ? "B" : "A",
               w ? (k->nt ? "N x K" : "K x N") : (k->tn ? "K x M" : "M x K"),
               want_wgmma ? "wgmma, async, the descriptors read its ring (stored as loaded) where the copies put "
                            "each element"
                          : "mma.sync (wgmma reads 32- and 8-bit operands K-major only)",
               ok ? "" : ": ", ok ? "" : why);
        tjp_layout_plan_free(&plan);
        tji_func_free(fn);
    }
}

/* TF32 with one operand's loads along M or N, which wgmma cannot read
 * from a descriptor for 32-bit operands: that operand is read from its
 * ring into registers, conflict-free and each K step where its
 * instructions first need it. A stored K x M and B N x K (both read
 * through their strides: "TT"): A, in the tf32 register-A fragments.
 * NN: B, by running the product transposed (Cᵀ = Bᵀ Aᵀ): B in the
 * transpose of the fragments of [N, K], A's ring (K-major, NVMMA) read
 * through descriptors as wgmma's B, the accumulator the transpose of
 * wgmma's of [N, M]. The other operand's descriptors read every element
 * where its ring stored it; async (a group per K step, code generation's
 * business: the PTX below). */
static void register_operands(void)
{
    static const config cfgs[] = {
        {128, 128, 32, 4, 3, 0, 0, IN_TF32, 0, 0, 0}, {128, 256, 32, 8, 3, 0, 0, IN_TF32, 0, 0, 0},
        {128, 128, 16, 4, 4, 0, 0, IN_TF32, 0, 0, 0}, {64, 256, 32, 4, 4, 0, 0, IN_TF32, 0, 0, 0},
        {128, 64, 32, 4, 4, 0, 0, IN_TF32, 0, 0, 0},  {256, 128, 32, 8, 3, 0, 0, IN_TF32, 0, 0, 0},
        {128, 128, 32, 4, 3, 1, 0, IN_TF32, 1, 0, 0}, {128, 256, 32, 8, 3, 1, 0, IN_TF32, 1, 0, 0}};
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
        const config *k = &cfgs[i];
        int nn = !k->tn, reg = nn ? 1 : 0; /* the register operand */
        tjp_layout_plan plan;
        tji_func *fn = plan_tutorial(k, 90, 1, k->stages, &plan);
        int32_t dot = fn ? dot_of(fn) : -1;
        char why[256] = "no plan";
        const tjp_dot_choice *ch = dot >= 0 ? &plan.dot[dot] : NULL;
        int64_t cols = nn ? k->bm : k->bn;
        int ok = ch && ch->form == TJP_DOT_WGMMA && ch->b_in_regs == nn && ch->a_in_regs == !nn && ch->async &&
                 ch->skip_zero_init && ch->instr_n == (cols < 256 ? (int)cols : 256);
        if (ch && !ok)
            snprintf(why, sizeof why, "form %d, a-regs %d, b-regs %d, async %d, instr n %d", ch->form, ch->a_in_regs,
                     ch->b_in_regs, ch->async, ch->instr_n);
        int rd = ok ? tjp_wgmma_operand_ring(fn, fn->ops[dot].args[1 - reg]) : -1;
        int32_t rload = ok ? tji_val(fn, fn->ops[dot].args[reg])->def_op : -1;
        int rr = rload >= 0 ? fn->ops[rload].ring : -1;
        if (ok && (rd < 0 || rr < 0 || !plan.rings[rd].wgmma || plan.rings[rd].transposed != !nn ||
                   plan.rings[rr].wgmma || !plan.rings[rr].read_at_use)) {
            snprintf(why, sizeof why, "rings: descriptor %d (wgmma %d, transposed %d), register %d (wgmma %d, read "
                     "at use %d)", rd, rd >= 0 ? plan.rings[rd].wgmma : -1, rd >= 0 ? plan.rings[rd].transposed : -1,
                     rr, rr >= 0 ? plan.rings[rr].wgmma : -1, rr >= 0 ? plan.rings[rr].read_at_use : -1);
            ok = 0;
        }
        tjp_layout acc, frag, want_acc, want_reg;
        int32_t acc_shape[2] = {(int32_t)(nn ? k->bn : k->bm), (int32_t)cols};
        int32_t frag_shape[2] = {(int32_t)(nn ? k->bn : k->bm), (int32_t)k->bk};
        if (ok && (!tjp_layout_wgmma_acc(&acc, acc_shape, k->warps, ch->instr_n) ||
                   !tjp_layout_wgmma_a(&frag, frag_shape, k->warps, 4))) {
            snprintf(why, sizeof why, "no fragment layouts");
            ok = 0;
        }
        if (ok) {
            want_acc = acc, want_reg = frag;
            if (nn) {
                tjp_layout_transpose(&want_acc, &acc);
                tjp_layout_transpose(&want_reg, &frag);
            }
            if (!tjp_layout_equal(&plan.of[fn->ops[dot].result], &want_acc) ||
                !tjp_layout_equal(&plan.of[fn->ops[dot].args[reg]], &want_reg)) {
                snprintf(why, sizeof why, "the accumulator or the register operand is not in its fragments");
                ok = 0;
            }
        }
        tjp_bank_count reads = {0};
        if (ok)
            tjp_bank_cost(&plan.of[fn->ops[dot].args[reg]], &plan.rings[rr].swizzle, 1, &reads);
        if (ok && (!reads.requests || reads.wavefronts != reads.minimum)) {
            snprintf(why, sizeof why, "the register operand's reads: %lld wavefronts, minimum %lld",
                     (long long)reads.wavefronts, (long long)reads.minimum);
            ok = 0;
        }
        ok = ok && descriptors_agree(fn, &plan, dot, 1 - reg, why, sizeof why);
        tap_ok(ok, "sm_90a tf32 %s %lldx%lldx%lld, %d warps: wgmma %s (%s from registers in its fragments, read "
               "conflict-free at use; %s's NVMMA ring through descriptors), async%s%s", nn ? "NN" : "TT",
               (long long)k->bm, (long long)k->bn, (long long)k->bk, k->warps,
               nn ? "of the transposed product" : "as it is", nn ? "B" : "A", nn ? "A" : "B", ok ? "" : ": ",
               ok ? "" : why);
        tjp_layout_plan_free(&plan);
        tji_func_free(fn);
    }
}

/* Where wgmma cannot run, the same dot keeps mma.sync. */
static void gating(void)
{
    static const config f16 = {128, 128, 64, 4, 3, 0, 0, IN_F16, 0, 0, 0}, fp8 = {128, 128, 64, 4, 3, 0, 0, IN_FP8, 0, 0, 0};
    static const struct {
        const config *k;
        int sm, arch_specific, stages, slots;
        const char *what;
    } cases[] = {{&f16, 90, 0, 3, 3, "sm_90 (no 'a')"}, {&f16, 90, 1, 1, 0, "sm_90a at num_stages 1 (no rings)"},
                 {&f16, 80, 0, 3, 3, "sm_80"},
                 /* B's loads run along N: fp8 must be K-major, and cp.async cannot move
                  * single bytes to transpose it (the ring keeps the slot more pipeline-loops
                  * gave it before the direction was known) */
                 {&fp8, 90, 1, 3, 4, "sm_90a, fp8 NN"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tjp_layout_plan plan;
        tji_func *fn = plan_tutorial(cases[i].k, cases[i].sm, cases[i].arch_specific, cases[i].stages, &plan);
        int32_t dot = fn ? dot_of(fn) : -1;
        int wg_rings = 0;
        for (int r = 0; fn && r < plan.nrings; r++)
            wg_rings += plan.rings[r].wgmma || plan.rings[r].slots != cases[i].slots;
        tap_ok(dot >= 0 && plan.dot[dot].form == TJP_DOT_MMA && !wg_rings,
               "%s: the dot stays mma.sync, its rings %d slots and not in the NVMMA layout", cases[i].what,
               cases[i].slots);
        tjp_layout_plan_free(&plan);
        tji_func_free(fn);
    }
}

/* tj_kernel_explain's text of configuration k planned for sm_90a (8
 * warps, 3 stages), malloc'ed; NULL where it fails. */
static char *explain_text(const config *k)
{
    tji_func *fn = NULL;
    tjj_gpu_planned out = {0};
    uint64_t spec;
    char *text = NULL;
    if (build_tutorial(k, &fn, &spec) == TJ_OK &&
        tjj_gpu_plan(fn, &(tjj_gpu_target){.sm = 90, .arch_specific = 1, .num_warps = 8, .spec = spec, .num_stages = 3},
                     &out) == TJ_OK)
        text = tjj_gpu_explain(fn, &out);
    tjj_gpu_planned_free(&out);
    tji_func_free(fn);
    return text;
}

/* The explainer names the form, the instruction and the rings' layout. */
static void explained(void)
{
    static const config k = {128, 256, 64, 8, 3, 0, 0, IN_F16, 0, 0, 0};
    char *text = explain_text(&k);
    tap_ok(text && strstr(text, "wgmma.mma_async.m64n256k16 on tensor cores, 2 warpgroups along M") &&
               strstr(text, "one group left in flight") && strstr(text, "NVMMA layout for wgmma: 128-byte swizzle") &&
               strstr(text, "reads: none; wgmma reads the slot through matrix descriptors"),
           "tj_kernel_explain's text for sm_90a names wgmma, its warpgroups, the group in flight and the NVMMA rings");
    free(text);
    static const config nn = {128, 256, 32, 8, 3, 0, 0, IN_TF32, 0, 0, 0};
    text = explain_text(&nn);
    tap_ok(text && strstr(text, "wgmma.mma_async.m64n128k8 on tensor cores, 2 warpgroups along N") &&
               strstr(text, "computed transposed (C^T = B^T A^T"),
           "tj_kernel_explain's text for tf32 NN names the transposed product and its warpgroups along N");
    free(text);
    static const config bt = {.bm = 128, .bn = 256, .bk = 64, .warps = 8, .stages = 3, .nt = 1, .in = IN_F16, .bt = 1};
    text = explain_text(&bt);
    tap_ok(text && strstr(text, "wgmma.mma_async.m64n256k16 on tensor cores") &&
               strstr(text, "(B through tj_trans: the descriptor reads its ring the other way round)"),
           "tj_kernel_explain's text for B through tj_trans says the descriptor reads B's ring the other way round");
    free(text);
}

/* --- the PTX ---------------------------------------------------------------------------- */

/* The wgmma.fence instructions of ptx followed by shared loads before the
 * next wgmma.mma_async: a K step's fragments loaded while the step
 * before it issues. */
static int loads_after_fences(const char *ptx)
{
    int n = 0;
    for (const char *at = ptx; (at = strstr(at, "wgmma.fence.sync.aligned")); at++) {
        const char *mma = strstr(at, "wgmma.mma_async"), *load = strstr(at, "ld.shared");
        n += mma && load && load < mma;
    }
    return n;
}

static void ptx(const config *k)
{
    int eb = elem_bytes_of(k);
    tji_func *fn = NULL;
    tjj_artifact art = {0};
    uint64_t spec;
    tj_status st = build_tutorial(k, &fn, &spec);
    if (st == TJ_OK)
        st = tjj_compile_gpu(fn, &(tjj_gpu_target){.sm = 90, .arch_specific = 1, .num_warps = k->warps,
                                                   .spec = spec, .num_stages = k->stages},
                             &art);
    if (st == TJ_OK && tjj_ptxas_path())
        st = tjj_ptxas_check(tjj_ptxas_path(), art.gpu.ptx, 90, 1, fn->name);
    const char *p = st == TJ_OK ? art.gpu.ptx : "";
    /* TF32 NN: the transposed product, its rows along N; TF32 NN and TN:
     * a register operand read from its ring, a group per K step; the
     * loads of two steps at once where there are four or more (else of
     * one), after a wait that leaves the last iteration's later steps in
     * flight and before their own fence (none after a fence: ptxas would
     * inject one, C7519, which the ptxas check fails) */
    int swapped = !k->bt && !k->at && k->in == IN_TF32 && !k->nt && !k->tn;
    int staged = swapped || (!k->bt && !k->at && k->in == IN_TF32 && k->tn && k->nt);
    int ksteps = (int)(k->bk / 8), per_fence = ksteps >= 4 ? 2 : 1;
    char step_wait[48];
    snprintf(step_wait, sizeof step_wait, "wgmma.wait_group.sync.aligned %d;", ksteps - per_fence);
    /* the waits for 1 group: the loop's own, or the steps' where that is their count */
    int ones = !staged ? 1 : ksteps == 2 ? ksteps : 0;
    int64_t rows = swapped ? k->bn : k->bm, cols = swapped ? k->bm : k->bn;
    int instr = (int)(rows / (k->warps / 4) / 64 * (k->bk / (32 / eb)) * (cols > 256 ? cols / 256 : 1));
    char shape[48];
    snprintf(shape, sizeof shape, "m64n%lldk%d.f32.%s", (long long)(cols < 256 ? cols : 256), 32 / eb,
             k->in == IN_TF32 ? "tf32.tf32" : k->in == IN_FP8 ? (k->bt ? "e4m3.e4m3" : "e4m3.e5m2") : "f16.f16");
    /* 16-bit operands: imm-trans-a and -b as the rings are stored (A
     * M-major where stored K x M; B N-major where stored K x N, through
     * tj_trans or not) */
    char imm[32];
    snprintf(imm, sizeof imm, "p, 1, 1, %d, %d;", k->tn, !k->nt);
    int ok = st == TJ_OK && tl_count(p, "wgmma.mma_async.sync.aligned.") == instr && tl_count(p, shape) == instr &&
             (eb != 2 || tl_count(p, imm) == instr) &&
             tl_count(p, "wgmma.wait_group.sync.aligned 1;") == ones &&
             tl_count(p, "wgmma.wait_group.sync.aligned 0;") == 1 &&
             (!staged || (tl_count(p, "wgmma.fence.sync.aligned") == ksteps / per_fence &&
                          tl_count(p, "wgmma.commit_group.sync.aligned") == ksteps &&
                          tl_count(p, step_wait) == ksteps / per_fence && !loads_after_fences(p))) &&
             tl_count(p, "fence.proxy.async.shared::cta") >= 1 && !tl_count(p, "ldmatrix") && tl_count(p, "cp.async.cg") >= 2 &&
             (!k->c_f16 || (tl_count(p, "cvt.rn.f16x2.f32") && !tl_count(p, "cvt.rn.f16.f32")));
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    tap_ok(ok, "sm_90a PTX, %s %lldx%lldx%lld %d warps%s%s%s: %d wgmma.mma_async %s%s%s, %s, fence.proxy.async, no "
           "ldmatrix%s%s", in_name(k), (long long)k->bm, (long long)k->bn, (long long)k->bk,
           k->warps, k->tn && k->nt ? " TT" : k->nt ? " NT" : k->tn ? " TN" : "", k->bt ? " (B through tj_trans)" : k->at ? " (A through tj_trans)" : "",
           k->c_f16 ? ", C in f16" : "", instr, shape, eb == 2 ? " ending " : "", eb == 2 ? imm : "",
           staged ? "per one or two K steps a wait for the last iteration's same steps, their register loads "
                    "and a wgmma.fence; a group a step; wait_group 0 after the loop"
                  : "wait_group 1 in the loop and 0 after",
           k->c_f16 ? ", C rounded by cvt.rn.f16x2.f32 pairs" : "",
           tjj_ptxas_path() ? "; ptxas -arch=sm_90a reports nothing (no C7515/C7519)" : "");
    if (fn)
        tjj_artifact_free(&art);
    tji_func_free(fn);
}

int main(void)
{
    tap_plan(2 + 14 + 8 + 12 + 4 + 3 + 13 + 6);
    accumulator_layouts();
    tutorial_plans();
    trans_plans();
    register_operands();
    gating();
    explained();
    static const config pc[] = {{128, 128, 64, 4, 4, 0, 0, IN_F16, 0, 0, 0}, {128, 128, 64, 4, 4, 1, 0, IN_F16, 0, 0, 0}, {128, 256, 64, 8, 3, 0, 0, IN_F16, 0, 0, 0},
                                {64, 64, 16, 4, 3, 1, 0, IN_F16, 0, 0, 0},       {128, 128, 64, 4, 4, 0, 1, IN_F16, 0, 0, 0},
                                {128, 256, 64, 8, 3, 1, 1, IN_F16, 0, 0, 0},     {128, 128, 32, 4, 3, 1, 0, IN_TF32, 0, 0, 0},
                                {128, 128, 32, 4, 3, 0, 0, IN_TF32, 0, 0, 0},    {128, 256, 32, 8, 3, 0, 0, IN_TF32, 0, 0, 0},
                                {64, 256, 32, 4, 4, 0, 0, IN_TF32, 0, 0, 0},     {128, 256, 32, 8, 3, 1, 0, IN_TF32, 1, 0, 0},
                                {128, 128, 16, 4, 4, 0, 0, IN_TF32, 0, 0, 0},
                                {128, 256, 128, 8, 3, 1, 0, IN_FP8, 0, 0, 0}};
    for (size_t i = 0; i < sizeof pc / sizeof pc[0]; i++)
        ptx(&pc[i]);
    static const config bt[] = {
        {.bm = 128, .bn = 256, .bk = 64, .warps = 8, .stages = 3, .nt = 1, .in = IN_F16, .bt = 1},
        {.bm = 128, .bn = 128, .bk = 64, .warps = 4, .stages = 4, .nt = 0, .in = IN_F16, .bt = 1},
        {.bm = 128, .bn = 128, .bk = 32, .warps = 4, .stages = 3, .nt = 1, .in = IN_TF32, .bt = 1},
        {.bm = 128, .bn = 256, .bk = 128, .warps = 8, .stages = 3, .nt = 1, .in = IN_FP8, .bt = 1},
        {.bm = 128, .bn = 256, .bk = 64, .warps = 8, .stages = 3, .tn = 1, .in = IN_F16, .at = 1},
        {.bm = 128, .bn = 128, .bk = 32, .warps = 4, .stages = 3, .tn = 0, .nt = 1, .in = IN_TF32, .at = 1}};
    for (size_t i = 0; i < sizeof bt / sizeof bt[0]; i++)
        ptx(&bt[i]);
    return tap_done();
}
