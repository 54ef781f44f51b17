/* SPDX-License-Identifier: MIT */
/*
 * test_dot_gpu_plan.c — the GPU plan of tj_dot without a GPU.
 *
 * The layouts of mma.sync's fragments (src/passes/layout_mma.c) are checked
 * against the PTX ISA's fragment tables, written here as the ISA states
 * them (groupID = lane >> 2, threadID_in_group = lane % 4; the row and
 * column of fragment element i), not derived from the layouts' bases:
 *  - one instruction, one warp: register i of lane l holds exactly the
 *    ISA's element i of lane l, for the accumulator, A and B of m16n8k16
 *    (16-bit), m16n8k8 (tf32) and m16n8k32 (i8);
 *  - tiles of many instructions and warps: every instruction's registers
 *    (t * fragment + i) hold one ISA fragment translated to a block of the
 *    tile, the accumulator's blocks cover the tile once per copy, and for
 *    every accumulator block of every warp the A and B blocks the code
 *    generator picks (by the block's row or column, at every step along K,
 *    in that warp's registers) are the ISA fragments of the same rows,
 *    columns and K range — which is what makes the dot right.
 * Then the pass and the plan on built kernels (tjj_gpu_plan, no GPU):
 *  - the form chosen per dtype, precision, tile, warps and target (MMA with
 *    its instruction and Triton's warp split, FMA for f32 IEEE, tiles too
 *    small, sm_75), and the layouts the plan holds equal the ones
 *    layout_mma.c builds for that split;
 *  - every conversion into an operand layout goes through shared memory
 *    without bank conflicts, writes and reads, counted lane by lane
 *    (tjp_bank_cost; with ldmatrix tjp_vector_write_cost and
 *    tjp_ldmatrix_cost), for NN and NT (b transposed) operands, except
 *    the reads of tf32 and i8 b stored [K, N], whose conflicts are
 *    reported; every A and every b stored [N, K] is read by ldmatrix.x4,
 *    16-bit b stored [K, N] by ldmatrix.x4.trans, and the step simulated
 *    as the ISA describes st.shared.v4 and ldmatrix hands every thread
 *    the elements its layout says;
 *  - the PTX of each MMA kernel for sm_80, sm_90 and sm_90a holds the mma.sync
 *    instruction of its form (and an FMA kernel none), TF32 inputs as
 *    their f32 bits (the tensor cores truncate them), TF32X3's high parts
 *    rounded by cvt.rna.tf32.f32; make check's
 *    TJIT_PTXAS makes tj_kernel_ptx assemble every one of them;
 *  - fp8 dots (e4m3, e5m2, mixed): fp8's own m16n8k32 with elem_bytes 1 on
 *    sm_89 and sm_90 (i8's fragments, A read by ldmatrix), f16's m16n8k16
 *    with elem_bytes 2 on sm_80 and for K = 16, as the plan records,
 *    prints and explains it; their PTX holds
 *    mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 (.e4m3.e5m2,
 *    .e5m2.e5m2) for sm_89 and sm_90, which ptxas (TJIT_PTXAS) assembles
 *    for each without a warning.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builder/ir.h"
#include "jit/pipeline.h"
#include "passes/passes.h"
#include "tap.h"
#include "testlib.h"

/* --- the PTX ISA's fragment tables (9.7.14.5.8, .5.7, .5.10) -------------- */

typedef struct rc {
    uint32_t row, col;
} rc;

/* Element i of lane l of operand which for operands of elem_bytes. */
static rc isa(tjp_mma_operand which, int elem_bytes, int i, uint32_t lane)
{
    uint32_t g = lane >> 2, t = lane % 4;
    rc x = {0, 0};
    if (which == TJP_MMA_ACC) { /* c0..c3, every type */
        x.row = i < 2 ? g : g + 8;
        x.col = t * 2 + (uint32_t)(i & 1);
        return x;
    }
    if (elem_bytes == 2) { /* m16n8k16 .f16/.bf16 */
        if (which == TJP_MMA_A) {
            x.row = (i < 2 || (i >= 4 && i < 6)) ? g : g + 8;
            x.col = t * 2 + (uint32_t)(i & 1) + (i >= 4 ? 8 : 0);
        } else {
            x.row = t * 2 + (uint32_t)(i & 1) + (i >= 2 ? 8 : 0);
            x.col = g;
        }
    } else if (elem_bytes == 4) { /* m16n8k8 .tf32 */
        if (which == TJP_MMA_A) {
            x.row = (i == 0 || i == 2) ? g : g + 8;
            x.col = i < 2 ? t : t + 4;
        } else {
            x.row = i == 0 ? t : t + 4;
            x.col = g;
        }
    } else { /* m16n8k32 .s8 */
        if (which == TJP_MMA_A) {
            x.row = (i < 4 || (i >= 8 && i < 12)) ? g : g + 8;
            x.col = t * 4 + (uint32_t)(i & 3) + (i >= 8 ? 16 : 0);
        } else {
            x.row = t * 4 + (uint32_t)(i & 3) + (i >= 4 ? 16 : 0);
            x.col = g;
        }
    }
    return x;
}

static int frag_elems(tjp_mma_operand which, int elem_bytes)
{
    int p = elem_bytes == 1 ? 4 : elem_bytes == 2 ? 2 : 1;
    return which == TJP_MMA_ACC ? 4 : which == TJP_MMA_A ? 4 * p : 2 * p;
}

static int instr_k(int elem_bytes) { return elem_bytes == 1 ? 32 : elem_bytes == 2 ? 16 : 8; }

static const char *type_name(int elem_bytes) { return elem_bytes == 1 ? "i8" : elem_bytes == 2 ? "16-bit" : "tf32"; }

/* --- one instruction ------------------------------------------------------ */

static void one_instruction(int elem_bytes)
{
    int K = instr_k(elem_bytes);
    static const char *const names[] = {"accumulator", "A", "B"};
    for (int w = 0; w < 3; w++) {
        tjp_mma_operand which = (tjp_mma_operand)w;
        int32_t shape[2] = {which == TJP_MMA_B ? K : 16, which == TJP_MMA_A ? K : 8};
        tjp_layout L;
        int built = tjp_layout_mma(&L, which, elem_bytes, 2, shape, 1, 1, 1);
        int bad = !built || L.nbits[TJP_LANE] != 5 || (1 << L.nbits[TJP_REG]) != frag_elems(which, elem_bytes);
        for (uint32_t lane = 0; lane < 32 && !bad; lane++)
            for (int i = 0; i < frag_elems(which, elem_bytes); i++) {
                rc x = isa(which, elem_bytes, i, lane);
                if (tjp_layout_apply(&L, (uint32_t)i, lane, 0) != x.row * (uint32_t)shape[1] + x.col) {
                    tap_diag("%s %s: lane %u element %d: layout has %u, the ISA (%u,%u)", type_name(elem_bytes),
                             names[w], lane, i, tjp_layout_apply(&L, (uint32_t)i, lane, 0), x.row, x.col);
                    bad = 1;
                    break;
                }
            }
        tap_ok(!bad, "%s %s: one instruction's fragment is the ISA's, register by register", type_name(elem_bytes),
               names[w]);
    }
}

/* --- tiles of many instructions and warps ---------------------------------- */

static rc coords(uint32_t e, int32_t cols) { return (rc){e / (uint32_t)cols, e % (uint32_t)cols}; }

/* Registers t*E .. t*E+E-1 of warp w hold one ISA fragment moved to block
 * *origin (a multiple of the instruction's rows and columns); 0 if not. */
static int block_of(const tjp_layout *L, tjp_mma_operand which, int elem_bytes, uint32_t t, uint32_t w,
                    int32_t rows, int32_t cols, uint32_t *batch, rc *origin)
{
    int E = frag_elems(which, elem_bytes);
    uint32_t e0 = tjp_layout_apply(L, t * (uint32_t)E, 0, w), per = (uint32_t)(rows * cols);
    *batch = e0 / per;
    rc o = coords(e0 % per, cols), z = isa(which, elem_bytes, 0, 0);
    o.row -= z.row;
    o.col -= z.col;
    uint32_t ir = which == TJP_MMA_B ? (uint32_t)instr_k(elem_bytes) : 16;
    uint32_t ic = which == TJP_MMA_A ? (uint32_t)instr_k(elem_bytes) : 8;
    if (o.row % ir || o.col % ic)
        return 0;
    for (uint32_t lane = 0; lane < 32; lane++)
        for (int i = 0; i < E; i++) {
            rc x = isa(which, elem_bytes, i, lane);
            uint32_t want = *batch * per + (o.row + x.row) * (uint32_t)cols + o.col + x.col;
            if (tjp_layout_apply(L, t * (uint32_t)E + (uint32_t)i, lane, w) != want)
                return 0;
        }
    *origin = o;
    return 1;
}

/* The register of L holding (row, col) of the batch in the thread part of
 * lane 0 of warp 0: the code generator's lookup (warp-relative). */
static int reg_at(const tjp_layout *L, uint32_t element, uint32_t *reg)
{
    uint32_t l, w;
    return tjp_layout_invert(L, element, reg, &l, &w) && l == 0 && w == 0;
}

static int tile_case(int elem_bytes, int batch, int32_t M, int32_t N, int32_t K, int num_warps, char *why,
                     size_t why_len)
{
    int wm, wn;
    tjp_mma_warps(M, N, num_warps, &wm, &wn);
    int rank = batch > 1 ? 3 : 2;
    int32_t sc[3], sa[3], sb[3];
    int32_t *shapes[3] = {sc, sa, sb};
    for (int k = 0; k < 3; k++)
        shapes[k][0] = batch;
    int32_t *c = sc + (rank - 2), *a = sa + (rank - 2), *b = sb + (rank - 2);
    c[0] = M, c[1] = N, a[0] = M, a[1] = K, b[0] = K, b[1] = N;
    tjp_layout LC, LA, LB;
    if (!tjp_layout_mma(&LC, TJP_MMA_ACC, elem_bytes, rank, sc, wm, wn, num_warps) ||
        !tjp_layout_mma(&LA, TJP_MMA_A, elem_bytes, rank, sa, wm, wn, num_warps) ||
        !tjp_layout_mma(&LB, TJP_MMA_B, elem_bytes, rank, sb, wm, wn, num_warps))
        return snprintf(why, why_len, "a layout was refused (warps %dx%d)", wm, wn), 0;
    if (wm * wn > num_warps || M / wm < 16 || N / wn < 8)
        return snprintf(why, why_len, "warp split %dx%d does not fit", wm, wn), 0;
    /* Each accumulator element covered the same number of times. */
    int64_t numel = (int64_t)batch * M * N;
    int *seen = calloc((size_t)numel, sizeof *seen);
    int ok = 1, EK = instr_k(elem_bytes), EA = frag_elems(TJP_MMA_A, elem_bytes), EB = frag_elems(TJP_MMA_B, elem_bytes);
    uint32_t ntiles = (1u << LC.nbits[TJP_REG]) / 4;
    for (uint32_t w = 0; w < (uint32_t)num_warps && ok; w++)
        for (uint32_t t = 0; t < ntiles && ok; t++) {
            uint32_t bc, ba, bb;
            rc oc, oa, ob;
            if (!block_of(&LC, TJP_MMA_ACC, elem_bytes, t, w, M, N, &bc, &oc)) {
                snprintf(why, why_len, "accumulator instruction %u of warp %u is no ISA fragment", t, w);
                ok = 0;
                break;
            }
            for (uint32_t lane = 0; lane < 32; lane++)
                for (uint32_t i = 0; i < 4; i++)
                    seen[tjp_layout_apply(&LC, t * 4 + i, lane, w)]++;
            /* Relative to warp 0 (the generator's view): the block's rows. */
            rc rel = coords(tjp_layout_apply(&LC, t * 4, 0, 0) % (uint32_t)(M * N), N);
            uint32_t rel_batch = tjp_layout_apply(&LC, t * 4, 0, 0) / (uint32_t)(M * N);
            for (int32_t k0 = 0; k0 < K && ok; k0 += EK) {
                uint32_t ra, rb;
                uint32_t ea = rel_batch * (uint32_t)(M * K) + (rel.row - rel.row % 16) * (uint32_t)K + (uint32_t)k0;
                uint32_t eb = rel_batch * (uint32_t)(K * N) + (uint32_t)k0 * (uint32_t)N + (rel.col - rel.col % 8);
                if (!reg_at(&LA, ea, &ra) || !reg_at(&LB, eb, &rb) || ra % (uint32_t)EA || rb % (uint32_t)EB) {
                    snprintf(why, why_len, "no operand registers for block (%u,%u) k %d", rel.row, rel.col, k0);
                    ok = 0;
                    break;
                }
                if (!block_of(&LA, TJP_MMA_A, elem_bytes, ra / (uint32_t)EA, w, M, K, &ba, &oa) ||
                    !block_of(&LB, TJP_MMA_B, elem_bytes, rb / (uint32_t)EB, w, K, N, &bb, &ob) ||
                    ba != bc || bb != bc || oa.row != oc.row || oa.col != (uint32_t)k0 ||
                    ob.col != oc.col || ob.row != (uint32_t)k0) {
                    snprintf(why, why_len, "warp %u block (%u,%u) k %d: the operands are not its rows/columns",
                             w, oc.row, oc.col, k0);
                    ok = 0;
                }
            }
        }
    for (int64_t e = 0; e < numel && ok; e++)
        if (seen[e] != seen[0] || !seen[e]) {
            snprintf(why, why_len, "element %lld covered %d times, element 0 %d", (long long)e, seen[e], seen[0]);
            ok = 0;
        }
    free(seen);
    return ok;
}

static void tiles(int elem_bytes)
{
    static const int32_t sizes[] = {16, 32, 64, 128};
    int cases = 0, passed = 0;
    char why[256] = "";
    for (int warps = 1; warps <= 8; warps *= 2)
        for (int mi = 0; mi < 4; mi++)
            for (int ni = 0; ni < 4; ni++)
                for (int ki = 0; ki < 4; ki++)
                    for (int batch = 1; batch <= 2; batch++) {
                        int32_t M = sizes[mi], N = sizes[ni], K = sizes[ki];
                        if (K < instr_k(elem_bytes) || (batch == 2 && (ki + mi + ni) % 3))
                            continue;
                        cases++;
                        char w[128];
                        if (tile_case(elem_bytes, batch, M, N, K, warps, w, sizeof w))
                            passed++;
                        else if (!why[0])
                            snprintf(why, sizeof why, "%dx%dx%dx%d, %d warps: %s", batch, M, N, K, warps, w);
                    }
    if (why[0])
        tap_diag("%s", why);
    tap_ok(cases > 50 && passed == cases, "%s: %d tiles x warps: every instruction an ISA fragment, operands aligned "
           "with the accumulator's blocks (%d passed)", type_name(elem_bytes), cases, passed);
}

static void warp_splits(void)
{
    int wm, wn, ok = 1;
    tjp_mma_warps(128, 128, 4, &wm, &wn);
    ok = ok && wm == 2 && wn == 2;
    tjp_mma_warps(128, 128, 8, &wm, &wn);
    ok = ok && wm == 4 && wn == 2;
    tjp_mma_warps(16, 128, 4, &wm, &wn);
    ok = ok && wm == 1 && wn == 4;
    tjp_mma_warps(128, 16, 4, &wm, &wn);
    ok = ok && wm == 4 && wn == 1;
    tjp_mma_warps(16, 16, 8, &wm, &wn); /* N has two columns of 8: 6 warps copy */
    ok = ok && wm == 1 && wn == 2;
    tap_ok(ok, "warp splits go along M first, as Triton's, and never past the tile");
}

/* --- the pass on built kernels ---------------------------------------------- */

#define TILE(R, C, LD) tj_add(tj_mul(tj_expand_dims(tj_arange(0, R), 1), LD), tj_expand_dims(tj_arange(0, C), 0))
/* c[M, N] = a[M, K] @ b[K, N]; TRANS_B: b stored as [N, K] and transposed. */
#define MM_KERNEL(NAME, A, B, OUT)                                                                    \
    TJ_KERNEL(NAME, TJ_PARAMS(TJ_PTR(a, A), TJ_PTR(b, B), TJ_PTR(c, OUT)), TJ_CONSTS(M, N, K, PREC, TRANS_B)) \
    {                                                                                                  \
        tj_val ta = tj_load(tj_add(a, TILE(M, K, K)));                                                 \
        tj_val tb = TRANS_B ? tj_trans(tj_load(tj_add(b, TILE(N, K, K)))) : tj_load(tj_add(b, TILE(K, N, N))); \
        tj_store(tj_add(c, TILE(M, N, N)), tj_dot(ta, tb, TJ_NONE, .input_precision = (tj_input_precision)PREC)); \
    }
MM_KERNEL(mm_f16, f16, f16, f32)
MM_KERNEL(mm_bf16, bf16, bf16, f32)
MM_KERNEL(mm_f32, f32, f32, f32)
MM_KERNEL(mm_i8, i8, i8, i32)
MM_KERNEL(mm_e4m3, f8e4m3, f8e4m3, f32)
MM_KERNEL(mm_e5m2, f8e5m2, f8e5m2, f32)
MM_KERNEL(mm_e4m3_e5m2, f8e4m3, f8e5m2, f32)

/* acc += a_k @ b_k along a loop, stored after it. */
TJ_KERNEL(mm_loop, TJ_PARAMS(TJ_PTR(a, f16), TJ_PTR(b, f16), TJ_PTR(c, f32), TJ_SCALAR(nk, i32)), TJ_CONSTS(M, N, K))
{
    tj_val acc = tj_zeros(TJ_SHAPE(M, N), TJ_F32);
    TJ_FOR(k, 0, nk, 1, &acc) {
        tj_val ta = tj_load(tj_add(tj_add(a, tj_mul(k, K)), TILE(M, K, tj_mul(nk, K))));
        tj_val tb = tj_load(tj_add(tj_add(b, tj_mul(tj_mul(k, K), N)), TILE(K, N, N)));
        acc = tj_dot(ta, tb, acc);
    }
    tj_store(tj_add(c, TILE(M, N, N)), acc);
}

/* Attention's chain: s = q k, p = f16(s), o = p v. */
TJ_KERNEL(mm_chain, TJ_PARAMS(TJ_PTR(q, f16), TJ_PTR(k, f16), TJ_PTR(v, f16), TJ_PTR(o, f32)), TJ_CONSTS(M, N, D))
{
    tj_val s = tj_dot(tj_load(tj_add(q, TILE(M, D, D))), tj_load(tj_add(k, TILE(D, N, N))), TJ_NONE);
    tj_val p = tj_cast(s, TJ_F16);
    tj_store(tj_add(o, TILE(M, D, D)), tj_dot(p, tj_load(tj_add(v, TILE(N, D, D))), TJ_NONE));
}

/* The first dot's accumulator becomes the second's A operand in registers
 * (the same layout, or a renaming of registers; no shared memory) where
 * the warps split M only (the pass makes both dots of a chain do so where
 * M has 16 rows per warp): both layouts put the same elements in the same
 * threads. Where it cannot, it goes through shared memory. */
static void chained(int64_t M, int64_t N, int64_t D, int warps, int want_copy)
{
    int64_t c[3] = {M, N, D};
    tji_func *fn = NULL;
    tjj_gpu_planned out = {0};
    int ok = tji_build(mm_chain, c, 3, &fn) == TJ_OK &&
             tjj_gpu_plan(fn, &(tjj_gpu_target){.sm = 80, .num_warps = warps, .spec = tjj_spec_of_buffers(mm_chain)},
                          &out) == TJ_OK;
    int dots = 0, renamed = 0, shared = 0, chain = 0;
    for (int32_t i = 0; ok && i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        if (op->parent < 0 || op->code != TJI_DOT)
            continue;
        dots += out.plan.dot[i].form == TJP_DOT_MMA;
        /* From the second dot's A back to the first dot: conversions and the cast. */
        int32_t x = op->args[0];
        int rn = 0, sh = 0;
        for (int depth = 0; depth < 8 && x > 0; depth++) {
            int32_t def = tji_val(fn, x)->def_op;
            const tji_op *d = def >= 0 ? &fn->ops[def] : NULL;
            if (!d || (d->code != TJI_DOT && d->code != TJI_CONVERT && d->code != TJI_CAST))
                break;
            if (d->code == TJI_DOT) {
                chain = 1;
                renamed += rn;
                shared += sh;
                break;
            }
            if (d->code == TJI_CONVERT) {
                rn += out.plan.shared[def].kind == TJP_STEP_NONE;
                sh += out.plan.shared[def].kind != TJP_STEP_NONE;
            }
            x = d->args[0];
        }
    }
    if (!ok)
        tap_diag("%s", tj_last_error());
    tap_ok(ok && dots == 2 && chain && (want_copy ? shared == 0 : shared >= 1),
           "chained dots %lldx%lldx%lld, %d warps: the accumulator reaches the next dot's A %s (%d renamed, %d through "
           "shared memory)", (long long)M, (long long)N, (long long)D, warps,
           want_copy ? "in registers" : "through shared memory (M too small for warps along M only)", renamed,
           shared);
    char *ptx = NULL;
    tj_status st = ok ? tj_kernel_ptx(mm_chain, c, 3, "sm_80", warps, &ptx) : TJ_ERR_BUILD;
    tap_ok(st == TJ_OK && ptx && strstr(ptx, "mma.sync.aligned.m16n8k16"), "its PTX for sm_80 (assembled by ptxas "
           "where TJIT_PTXAS is set)");
    if (st != TJ_OK && ok)
        tap_diag("%s", tj_last_error());
    free(ptx);
    tjj_gpu_planned_free(&out);
    tji_func_free(fn);
}

/* The loop carries the accumulator in the mma layout: inside the loop only
 * the operands convert; the result converts once, after the loop. */
static void loop_carried(void)
{
    int64_t c[3] = {64, 64, 32};
    tji_func *fn = NULL;
    tjj_gpu_planned out = {0};
    int ok = tji_build(mm_loop, c, 3, &fn) == TJ_OK &&
             tjj_gpu_plan(fn, &(tjj_gpu_target){.sm = 80, .num_warps = 4, .spec = tjj_spec_of_buffers(mm_loop)}, &out) ==
                 TJ_OK;
    int in_loop = 0, after = 0, dots = 0;
    for (int32_t i = 0; ok && i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        if (op->parent < 0)
            continue;
        int inside = op->parent != 0;
        if (op->code == TJI_DOT)
            dots += out.plan.dot[i].form == TJP_DOT_MMA;
        if (op->code == TJI_CONVERT && out.plan.shared[i].kind == TJP_STEP_CONVERT) {
            tj_dtype dt = tji_typeof(fn, op->result)->dtype;
            in_loop += inside && dt == TJ_F32;
            after += !inside && dt == TJ_F32;
        }
    }
    if (!ok)
        tap_diag("%s", tj_last_error());
    tap_ok(ok && dots == 1 && in_loop == 0 && after == 1, "a dot's accumulator carried along a loop stays in the mma "
           "layout: %d f32 conversions in the loop, %d after it", in_loop, after);
    tjj_gpu_planned_free(&out);
    tji_func_free(fn);
}

typedef struct dot_case {
    const tj_kernel *k;
    int64_t c[5];       /* M, N, K, PREC, TRANS_B */
    int warps, sm;
    int form, elem_bytes, passes, wm, wn;
    int flags;          /* UNALIGNED, NO_LDM_A, READ_CONFLICTS below */
} dot_case;
enum {
    UNALIGNED = 1,      /* pointers of unknown alignment: element accesses, no ldmatrix */
    NO_LDM_A = 2,       /* a's tile is too small for 16-byte writes: no ldmatrix for a */
    READ_CONFLICTS = 4, /* tf32 and i8 b stored [K, N] after 16-byte loads: no ldmatrix,
                           the reads' bank conflicts are reported, not claimed away
                           (see DESIGN.md) */
    WIDENED = 8         /* fp8 in f16's fragments (sm_80, or K = 16): bytes read one by
                           one (no ldmatrix for a 16-bit layout of them), the reads'
                           bank conflicts reported */
};

static tji_func *plan_of(const dot_case *d, tjp_layout_plan *plan, int32_t *dot_op)
{
    tji_func *fn = NULL;
    tjj_gpu_planned out = {0};
    memset(plan, 0, sizeof *plan);
    int ok = tji_build(d->k, d->c, 5, &fn) == TJ_OK &&
             tjj_gpu_plan(fn, &(tjj_gpu_target){.sm = d->sm, .num_warps = d->warps,
                                               .spec = d->flags & UNALIGNED ? 0 : tjj_spec_of_buffers(d->k)}, &out) == TJ_OK;
    *plan = out.plan;
    out.plan = (tjp_layout_plan){0};
    tjj_gpu_planned_free(&out);
    if (!ok) {
        tap_diag("%s: %s", d->k->name, tj_last_error());
        tjp_layout_plan_free(plan);
        tji_func_free(fn);
        return NULL;
    }
    *dot_op = -1;
    for (int32_t i = 0; i < fn->nops; i++)
        if (fn->ops[i].code == TJI_DOT && fn->ops[i].parent >= 0)
            *dot_op = i;
    return fn;
}

/* The conversion that defines operand v (through shared memory; before a
 * transpose, which renames registers), or -1. */
static int32_t convert_of(const tji_func *fn, int32_t v)
{
    int32_t def = tji_val(fn, v)->def_op;
    if (def >= 0 && fn->ops[def].code == TJI_PERMUTE)
        def = tji_val(fn, fn->ops[def].args[0])->def_op;
    return def >= 0 && fn->ops[def].code == TJI_CONVERT ? def : -1;
}

/* Writes and reads at the minimum of wavefronts (reads_reported: the
 * reads' count only reported). */
static int conflict_free(const tjp_shared_step *st, int reads_reported, char *why, size_t n, const char *what)
{
    tjp_bank_count w, r;
    if (st->use.ldmatrix) { /* 16-byte vector writes, ldmatrix reads */
        tjp_vector_write_cost(&st->use.write, &st->use.swizzle, &w);
        tjp_ldmatrix_cost(&st->use.read, &st->use.swizzle, &r);
    } else {
        tjp_bank_cost(&st->use.write, &st->use.swizzle, st->use.write_vector, &w);
        tjp_bank_cost(&st->use.read, &st->use.swizzle, st->use.read_vector, &r);
    }
    if (!w.requests || !r.requests)
        return snprintf(why, n, "%s: no requests counted", what), 0;
    if (reads_reported && w.wavefronts == w.minimum) {
        tap_diag("%s: reads %lld wavefronts for a minimum of %lld", what, (long long)r.wavefronts,
                 (long long)r.minimum);
        return 1;
    }
    if (w.wavefronts == w.minimum && r.wavefronts == r.minimum)
        return 1;
    snprintf(why, n, "%s: writes %lld wavefronts (minimum %lld), reads %lld (minimum %lld)", what,
             (long long)w.wavefronts, (long long)w.minimum, (long long)r.wavefronts, (long long)r.minimum);
    return 0;
}

/* An ldmatrix step simulated as the PTX ISA describes the instructions,
 * not through the layouts' algebra: st.shared.v4 of 16 bytes of registers
 * from r puts them at consecutive indices from the first one's address;
 * for ldmatrix.x<m>, lanes 8j..8j+7 give the addresses of matrix j's 8
 * rows of 16 bytes, and thread t gets, in its 32-bit register j, word t%4
 * of row t/4 (.trans: the 16-bit elements of rows 2(t%4) and +1 at column
 * t/4). What each thread gets must be what the read layout says. */
static int simulate_ldmatrix(const tjp_shared_step *st, char *why, size_t n)
{
    const tjp_shared_use *u = &st->use;
    uint32_t numel = (uint32_t)u->numel, *elem_at = calloc(numel, sizeof *elem_at);
    uint32_t eb = (uint32_t)u->swizzle.elem_bytes, re = 16 / eb, p = 4 / eb;
    uint8_t *written = calloc(numel, 1);
    int ok = 1;
    for (uint32_t w = 0; w < 1u << u->write.nbits[TJP_WARP]; w++)
        for (uint32_t l = 0; l < 32; l++)
            for (uint32_t r = 0; r < 1u << u->write.nbits[TJP_REG]; r += re) {
                uint32_t at = tjp_swizzle_apply(&u->swizzle, tjp_layout_apply(&u->write, r, l, w));
                if (at % re || at + re > numel) {
                    snprintf(why, n, "a 16-byte write at index %u", at);
                    ok = 0;
                }
                for (uint32_t k = 0; k < re && ok; k++) {
                    elem_at[at + k] = tjp_layout_apply(&u->write, r + k, l, w);
                    written[at + k] = 1;
                }
            }
    tjp_layout A;
    tjp_ldmatrix_address_layout(&u->read, &u->swizzle, &A);
    uint32_t m = (uint32_t)u->ldmatrix;
    for (uint32_t w = 0; w < 1u << u->read.nbits[TJP_WARP] && ok; w++)
        for (uint32_t r = 0; r < 1u << u->read.nbits[TJP_REG] && ok; r += p * m)
            for (uint32_t t = 0; t < 32 && ok; t++)
                for (uint32_t j = 0; j < m && ok; j++)
                    for (uint32_t h = 0; h < p && ok; h++) {
                        /* plain: word t%4 of row t/4, its element h; .trans (16-bit):
                         * rows 2(t%4) and +1 at column t/4 */
                        uint32_t row = u->ldmatrix_trans ? 2 * (t % 4) + h : t / 4;
                        uint32_t col = u->ldmatrix_trans ? t / 4 : p * (t % 4) + h;
                        uint32_t start = tjp_layout_apply(&A, r, 8 * j + row, w); /* an index of the buffer */
                        uint32_t idx = start + col;
                        uint32_t want = tjp_layout_apply(&u->read, r + p * j + h, t, w);
                        if (start % re || idx >= numel || !written[idx] || elem_at[idx] != want) {
                            snprintf(why, n, "ldmatrix: warp %u register %u lane %u gets element %u, the layout "
                                     "says %u", w, r + 2 * j + h, t, idx < numel ? elem_at[idx] : 0, want);
                            ok = 0;
                        }
                    }
    free(elem_at);
    free(written);
    return ok;
}

static void dot_form(const dot_case *d)
{
    tjp_layout_plan plan;
    int32_t op;
    tji_func *fn = plan_of(d, &plan, &op);
    char why[200] = "";
    int ok = fn && op >= 0;
    const tjp_dot_choice *ch = ok ? &plan.dot[op] : NULL;
    if (ok && (ch->form != d->form || (d->form == TJP_DOT_MMA &&
               (ch->elem_bytes != d->elem_bytes || ch->passes != d->passes || ch->warps_m != d->wm ||
                ch->warps_n != d->wn)))) {
        snprintf(why, sizeof why, "chose form %d, %d bytes, x%d, warps %dx%d", ch->form, ch->elem_bytes,
                 ch->passes, ch->warps_m, ch->warps_n);
        ok = 0;
    }
    if (ok && d->form == TJP_DOT_MMA) {
        const tji_op *o = &fn->ops[op];
        tjp_layout want[3];
        static const tjp_mma_operand which[3] = {TJP_MMA_A, TJP_MMA_B, TJP_MMA_ACC};
        int32_t vals[3] = {o->args[0], o->args[1], o->result};
        for (int k = 0; k < 3 && ok; k++) {
            const tji_type *t = tji_typeof(fn, vals[k]);
            ok = tjp_layout_mma(&want[k], which[k], d->elem_bytes, t->rank, t->shape, d->wm, d->wn, d->warps) &&
                 tjp_layout_equal(&want[k], &plan.of[vals[k]]);
            if (!ok)
                snprintf(why, sizeof why, "operand %d is not in layout_mma.c's layout", k);
        }
        for (int k = 0; k < 2 && ok; k++) {
            int32_t cv = convert_of(fn, o->args[k]);
            ok = cv >= 0 && plan.shared[cv].kind == TJP_STEP_CONVERT &&
                 conflict_free(&plan.shared[cv], (k == 1 && (d->flags & READ_CONFLICTS)) || (d->flags & WIDENED),
                               why, sizeof why,
                               k ? "b's conversion" : "a's conversion");
            if (cv < 0)
                snprintf(why, sizeof why, "operand %d is not converted through shared memory", k);
            /* ldmatrix for every A and for B stored [N, K]; 16-bit B stored
             * [K, N] with .trans, tf32 and i8 B stored [K, N] without. */
            int want_ldm = !(d->flags & (UNALIGNED | WIDENED)) && !(k == 0 && d->flags & NO_LDM_A) &&
                           (d->elem_bytes == 2 || k == 0 || d->c[4]);
            int want_trans = d->elem_bytes == 2 && k == 1 && !d->c[4];
            if (ok && (!!plan.shared[cv].use.ldmatrix != want_ldm ||
                       (want_ldm && (plan.shared[cv].use.ldmatrix != 4 ||
                                     plan.shared[cv].use.ldmatrix_trans != want_trans)))) {
                snprintf(why, sizeof why, "operand %d: ldmatrix x%d%s, expected %s", k, plan.shared[cv].use.ldmatrix,
                         plan.shared[cv].use.ldmatrix_trans ? ".trans" : "",
                         want_ldm ? (want_trans ? "x4.trans" : "x4") : "none");
                ok = 0;
            }
            if (ok && want_ldm)
                ok = simulate_ldmatrix(&plan.shared[cv], why, sizeof why);
        }
    }
    if (why[0])
        tap_diag("%s", why);
    tap_ok(ok, "%s %lldx%lldx%lld%s prec %lld, %d warps, sm_%d%s: %s", d->k->name, (long long)d->c[0],
           (long long)d->c[1], (long long)d->c[2], d->c[4] ? " (b transposed)" : "", (long long)d->c[3], d->warps,
           d->sm, d->flags & UNALIGNED ? ", unaligned" : "", d->form == TJP_DOT_FMA ? "fma"
           : !(d->flags & UNALIGNED) ? "mma, ldmatrix reads, operands converted without bank conflicts"
                                                  : "mma, operands converted without bank conflicts");
    if (fn) {
        tjp_layout_plan_free(&plan);
        tji_func_free(fn);
    }
}

static void dot_forms(void)
{
    enum { F = TJP_DOT_FMA, X = TJP_DOT_MMA };
    static const dot_case cases[] = {
        {mm_f16, {64, 64, 32, 0, 0}, 4, 80, X, 2, 1, 2, 2, 0},
        {mm_f16, {64, 64, 32, 0, 1}, 4, 90, X, 2, 1, 2, 2, 0},
        {mm_f16, {128, 128, 32, 0, 0}, 8, 90, X, 2, 1, 4, 2, 0},
        {mm_f16, {128, 128, 64, 0, 1}, 8, 80, X, 2, 1, 4, 2, 0},
        {mm_f16, {16, 128, 16, 0, 0}, 4, 80, X, 2, 1, 1, 4, NO_LDM_A},
        {mm_f16, {64, 64, 32, 0, 0}, 4, 75, F, 0, 0, 0, 0, 0},
        {mm_f16, {64, 64, 32, 0, 0}, 4, 80, X, 2, 1, 2, 2, UNALIGNED},
        {mm_f16, {64, 64, 32, 0, 1}, 4, 80, X, 2, 1, 2, 2, UNALIGNED},
        {mm_f32, {64, 64, 32, TJ_PRECISION_TF32, 0}, 4, 80, X, 4, 1, 2, 2, UNALIGNED},
        {mm_i8, {64, 64, 64, 0, 0}, 4, 80, X, 1, 1, 2, 2, UNALIGNED},
        {mm_bf16, {64, 32, 64, 0, 0}, 4, 80, X, 2, 1, 4, 1, 0},
        {mm_bf16, {32, 64, 32, 0, 1}, 2, 90, X, 2, 1, 1, 2, 0},
        {mm_f32, {64, 64, 32, TJ_PRECISION_TF32, 0}, 4, 80, X, 4, 1, 2, 2, READ_CONFLICTS},
        {mm_f32, {64, 64, 32, TJ_PRECISION_TF32X3, 1}, 4, 90, X, 4, 3, 2, 2, 0},
        {mm_f32, {64, 64, 32, TJ_PRECISION_IEEE, 0}, 4, 90, F, 0, 0, 0, 0, 0},
        {mm_i8, {64, 64, 32, 0, 0}, 4, 80, X, 1, 1, 2, 2, READ_CONFLICTS},
        {mm_i8, {64, 64, 64, 0, 1}, 4, 90, X, 1, 1, 2, 2, 0},
        {mm_i8, {64, 64, 16, 0, 0}, 4, 90, F, 0, 0, 0, 0, 0},
        {mm_e4m3, {64, 64, 64, 0, 0}, 4, 90, X, 1, 1, 2, 2, READ_CONFLICTS},
        {mm_e4m3_e5m2, {64, 64, 64, 0, 1}, 4, 89, X, 1, 1, 2, 2, 0},
        {mm_e5m2, {64, 64, 32, 0, 1}, 4, 90, X, 1, 1, 2, 2, 0},
        {mm_e4m3, {64, 64, 64, 0, 0}, 4, 80, X, 2, 1, 2, 2, WIDENED},
        {mm_e5m2, {64, 64, 16, 0, 1}, 4, 90, X, 2, 1, 2, 2, WIDENED},
        {mm_e4m3_e5m2, {64, 64, 64, 0, 0}, 4, 75, F, 0, 0, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        dot_form(&cases[i]);
}

/* The PTX of a kernel holds mma.sync of its form for sm_80, sm_90 and sm_90a. */
static void dot_ptx(const tj_kernel *k, int64_t m, int64_t n, int64_t kk, int64_t prec, int64_t trans,
                    const char *instr)
{
    static const char *const targets[] = {"sm_80", "sm_90", "sm_90a"};
    int64_t c[5] = {m, n, kk, prec, trans};
    int lacks = instr && instr[0] == '!'; /* "!text": the PTX must not hold text */
    const char *text = lacks ? instr + 1 : instr;
    for (int t = 0; t < 3; t++) {
        char *ptx = NULL;
        tj_status st = tj_kernel_ptx(k, c, 5, targets[t], 4, &ptx);
        int has = ptx && strstr(ptx, text ? text : "mma.sync.aligned.") != NULL;
        int ok = st == TJ_OK && ptx && (text && !lacks ? has : !has);
        if (st != TJ_OK)
            tap_diag("%s", tj_last_error());
        tap_ok(ok, "%s %lldx%lldx%lld prec %lld%s, %s: PTX %s%s (assembled by ptxas where TJIT_PTXAS is set)",
               k->name, (long long)m, (long long)n, (long long)kk, (long long)prec, trans ? " NT" : "", targets[t],
               !text ? "has no mma.sync" : lacks ? "has no " : "holds ", text ? text : "");
        free(ptx);
    }
}

/* fp8 dots: the instruction each target gets, as the plan records, prints
 * (and reads back, make check's TJIT_CHECK_ROUNDTRIP) and explains it. */
static void fp8_plan(const tj_kernel *k, int64_t K, int64_t trans, int sm, const char *instr)
{
    int64_t c[5] = {64, 64, K, 0, trans};
    tji_func *fn = NULL;
    tjj_gpu_planned out = {0};
    int ok = tji_build(k, c, 5, &fn) == TJ_OK &&
             tjj_gpu_plan(fn, &(tjj_gpu_target){.sm = sm, .num_warps = 4, .spec = tjj_spec_of_buffers(k)}, &out) == TJ_OK;
    const char *got = "none";
    char *text = NULL, *explained = NULL, want[96];
    for (int32_t i = 0; ok && i < fn->nops; i++)
        if (fn->ops[i].code == TJI_DOT && fn->ops[i].parent >= 0 && out.plan.dot[i].form == TJP_DOT_MMA)
            got = tjp_mma_instruction(fn, &fn->ops[i], &out.plan.dot[i]);
    if (ok) {
        text = tjp_print_annotated(fn, &(tjp_annotations){.layouts = &out.plan});
        explained = tjj_gpu_explain(fn, &out);
    } else {
        tap_diag("%s", tj_last_error());
    }
    snprintf(want, sizeof want, "#dot<mma %s, warps=2x2>", instr);
    int widened = strcmp(instr, "m16n8k16") == 0;
    char said[96];
    snprintf(said, sizeof said, "mma.sync.%s on tensor cores", instr);
    ok = ok && strcmp(got, instr) == 0 && text && strstr(text, want) && explained && strstr(explained, said) &&
         !!strstr(explained, "fp8 widened to f16 in registers") == widened;
    tap_ok(ok, "%s 64x64x%lld%s, sm_%d: the plan takes %s (got %s), prints '%s' and explains it%s", k->name,
           (long long)K, trans ? " NT" : "", sm, instr, got, want + 1, widened ? " as fp8 widened to f16" : "");
    free(text);
    free(explained);
    tjj_gpu_planned_free(&out);
    tji_func_free(fn);
}

/* The PTX for target holds instr and, where TJIT_PTXAS names ptxas, that
 * ptxas assembles it for target without a word (a warning is a failure). */
static void fp8_ptx(const tj_kernel *k, int64_t K, const char *target, const char *instr)
{
    int64_t c[5] = {64, 64, K, 0, 0};
    char *ptx = NULL;
    tj_status st = tj_kernel_ptx(k, c, 5, target, 4, &ptx);
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    tap_ok(st == TJ_OK && strstr(ptx, instr), "%s 64x64x%lld, %s: PTX holds %s", k->name, (long long)K, target, instr);
    const char *ptxas = getenv("TJIT_PTXAS");
    if (!ptxas || !*ptxas || st != TJ_OK) {
        tap_skip(1, "no TJIT_PTXAS (configure found no ptxas)");
        free(ptx);
        return;
    }
    char options[64], said[2048] = "";
    snprintf(options, sizeof options, "-arch=%s", target);
    int status = tl_ptxas_run(ptxas, ptx, options, said, sizeof said);
    size_t n = strlen(said);
    tap_ok(status == 0 && n == 0, "... and ptxas -arch=%s assembles it without a word%s%s", target, n ? ": " : "",
           said);
    free(ptx);
}

int main(void)
{
    for (int eb = 1; eb <= 4; eb *= 2)
        one_instruction(eb);
    for (int eb = 1; eb <= 4; eb *= 2)
        tiles(eb);
    warp_splits();
    dot_forms();
    loop_carried();
    chained(128, 64, 64, 4, 1);
    chained(64, 64, 32, 4, 1);
    chained(32, 64, 32, 4, 0);
    dot_ptx(mm_f16, 64, 64, 32, 0, 0, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32");
    dot_ptx(mm_f16, 64, 64, 32, 0, 0, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16");
    dot_ptx(mm_f16, 64, 64, 32, 0, 1, "ldmatrix.sync.aligned.m8n8.x4.shared.b16");
    dot_ptx(mm_f16, 128, 64, 64, 0, 1, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32");
    dot_ptx(mm_bf16, 64, 64, 32, 0, 0, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32");
    dot_ptx(mm_f32, 64, 64, 32, TJ_PRECISION_TF32, 0, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32");
    dot_ptx(mm_f32, 64, 64, 32, TJ_PRECISION_TF32, 0, "!cvt.rna.tf32.f32"); /* the f32 bits as they are */
    dot_ptx(mm_f32, 32, 32, 32, TJ_PRECISION_TF32X3, 0, "cvt.rna.tf32.f32"); /* the high part rounded */
    dot_ptx(mm_f32, 32, 32, 32, TJ_PRECISION_TF32X3, 1, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32");
    dot_ptx(mm_i8, 64, 64, 64, 0, 0, "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32");
    dot_ptx(mm_f32, 64, 64, 32, TJ_PRECISION_IEEE, 0, NULL);
    fp8_plan(mm_e4m3, 64, 0, 90, "m16n8k32.e4m3");
    fp8_plan(mm_e5m2, 32, 1, 89, "m16n8k32.e5m2");
    fp8_plan(mm_e4m3_e5m2, 64, 1, 90, "m16n8k32.e4m3.e5m2");
    fp8_plan(mm_e4m3_e5m2, 64, 0, 80, "m16n8k16");
    fp8_plan(mm_e4m3, 16, 0, 90, "m16n8k16");
    static const char *const fp8_targets[] = {"sm_89", "sm_90"};
    for (int t = 0; t < 2; t++) {
        fp8_ptx(mm_e4m3, 64, fp8_targets[t], "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32");
        fp8_ptx(mm_e4m3_e5m2, 32, fp8_targets[t], "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32");
        fp8_ptx(mm_e5m2, 64, fp8_targets[t], "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32");
    }
    fp8_ptx(mm_e4m3_e5m2, 64, "sm_80", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32");
    return tap_done();
}
