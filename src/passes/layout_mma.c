/* SPDX-License-Identifier: MIT */
/*
 * layout_mma.c — the F2 layouts of mma.sync's accumulator and operands.
 *
 * A warp executing mma.sync.m16n8kK holds its three matrices in fixed
 * fragments: the PTX ISA's tables say which lane's which register holds
 * which element. Every one of them is linear over F2 in (register, lane),
 * so each is a short list of basis vectors (layout.h) — and, once the
 * instruction is repeated over a larger tile and over warps, so is the
 * whole tile: repeats add register bits, warps add warp bits.
 *
 * With p = elements per 32-bit register of the operands (2 for f16/bf16,
 * 1 for tf32, 4 for i8; the instruction's K is 8p: k16, k8, k32), the
 * ISA's fragments are, as moves of (row, column) per input bit:
 *
 *   accumulator m16n8:  reg  [n+1, m+8]          lane [n+2, n+4, m+1, m+2, m+4]
 *   A m16kK:            reg  [k+1 .. k+p/2, m+8, k+4p]
 *                       lane [k+p, k+2p, m+1, m+2, m+4]
 *   B kKn8:             reg  [k+1 .. k+p/2, k+4p]
 *                       lane [k+p, k+2p, n+1, n+2, n+4]
 *
 * (reg [k+1 .. k+p/2] is log2 p bits: none for tf32, k+1 for 16-bit,
 * k+1, k+2 for i8; these are the elements packed into one 32-bit register,
 * low to high.) Register i of one instruction's fragment is the ISA's
 * element i, so the code generator packs registers in order.
 *
 * A tile [.., M, N] (A: [.., M, K], B: [.., K, N]) split over
 * warps_m x warps_n warps gives each warp an (M/warps_m) x (N/warps_n)
 * block. Above the fragment's bits come, in this order: the accumulator's
 * column repeats (n+8, n+16, ..) then row repeats (m+16, ..); an operand's
 * steps along K (k+8p, ..) then its repeats along M (A) or N (B); then the
 * batch (a rank-3 dot loops its batch in registers). Warp bits: the
 * warps_n ones first (n + N/warps_n, ..), then the warps_m ones; A ignores
 * the warps along N and B those along M (zero bases: each of those warps
 * holds a copy). Warps beyond warps_m * warps_n hold copies too.
 *
 * So every instruction's registers are consecutive: fragment element i of
 * instruction t is register t * (elements per fragment) + i, which is
 * what src/jit/gpu/dot.c relies on and tests/test_dot_gpu_plan.c checks
 * against the ISA's tables.
 */
#include <string.h>

#include "layout.h"

int tjp_mma_elems_per_reg(int elem_bytes)
{
    return elem_bytes == 1 ? 4 : elem_bytes == 2 ? 2 : elem_bytes == 4 ? 1 : 0;
}

void tjp_mma_warps(int32_t M, int32_t N, int num_warps, int *warps_m, int *warps_n)
{
    /* Triton's warpsPerTileV2: M first while it has more instruction rows
     * per warp than N has (pairs of) instruction columns. */
    int wm = 1, wn = 1;
    while (wm * wn < num_warps) {
        if (M / 16 / wm >= N / 16 / wn && wm < M / 16)
            wm *= 2;
        else
            wn *= 2;
    }
    while (wn > 1 && N / 8 / wn < 1) /* warps N cannot use: copies */
        wn /= 2;
    *warps_m = wm;
    *warps_n = wn;
}

/* Row-major element index of (m, n) in a [.., rows, cols] tile. */
typedef struct builder {
    tjp_layout *L;
    int col_bits;
} builder;

static uint32_t at(const builder *b, uint32_t row, uint32_t col)
{
    return row << b->col_bits | col;
}

static int add(builder *b, int level, uint32_t v)
{
    if (b->L->nbits[level] >= TJP_MAX_BITS)
        return 0;
    b->L->basis[level][b->L->nbits[level]++] = v;
    return 1;
}

int tjp_layout_mma(tjp_layout *out, tjp_mma_operand which, int elem_bytes, int rank,
                   const int32_t *shape, int warps_m, int warps_n, int num_warps)
{
    memset(out, 0, sizeof *out);
    int p = tjp_mma_elems_per_reg(elem_bytes), lp = tjp_log2_exact(p);
    if (p == 0 || rank < 2 || rank > 3 || tjp_log2_exact(warps_m) < 0 ||
        tjp_log2_exact(warps_n) < 0 || tjp_log2_exact(num_warps) < 0 || warps_m * warps_n > num_warps)
        return 0;
    out->rank = rank;
    for (int d = 0; d < rank; d++) {
        out->shape[d] = shape[d];
        if (tjp_log2_exact(shape[d]) < 0)
            return 0;
    }
    int32_t rows = shape[rank - 2], cols = shape[rank - 1];
    int32_t kdim = which == TJP_MMA_A ? cols : which == TJP_MMA_B ? rows : 0, kin = 8 * p;
    int32_t M = which == TJP_MMA_B ? 0 : rows, N = which == TJP_MMA_A ? 0 : cols;
    if ((M && M / warps_m < 16) || (N && N / warps_n < 8) || (which != TJP_MMA_ACC && kdim < kin))
        return 0;
    builder b = {out, tjp_log2_exact(cols)};
    /* (m, n, k) of a move, as the element index of this operand's tile. */
#define MOVE_M(m) (which == TJP_MMA_B ? 0u : at(&b, (uint32_t)(m), 0))
#define MOVE_N(n) (which == TJP_MMA_A ? 0u : which == TJP_MMA_B ? (uint32_t)(n) : at(&b, 0, (uint32_t)(n)))
#define MOVE_K(k) (which == TJP_MMA_A ? (uint32_t)(k) : at(&b, (uint32_t)(k), 0))
    int ok = 1;
    if (which == TJP_MMA_ACC) {
        ok = add(&b, TJP_REG, MOVE_N(1)) && add(&b, TJP_REG, MOVE_M(8)) && add(&b, TJP_LANE, MOVE_N(2)) &&
             add(&b, TJP_LANE, MOVE_N(4));
        for (int i = 0; ok && (8 << i) < N / warps_n; i++)
            ok = add(&b, TJP_REG, MOVE_N(8 << i));
    } else {
        for (int i = 0; i < lp; i++)
            ok = ok && add(&b, TJP_REG, MOVE_K(1 << i));
        if (which == TJP_MMA_A)
            ok = ok && add(&b, TJP_REG, MOVE_M(8));
        ok = ok && add(&b, TJP_REG, MOVE_K(4 * p)) && add(&b, TJP_LANE, MOVE_K(p)) &&
             add(&b, TJP_LANE, MOVE_K(2 * p));
        for (int i = 0; ok && (kin << i) < kdim; i++)
            ok = add(&b, TJP_REG, MOVE_K(kin << i));
    }
    if (which == TJP_MMA_B) {
        for (int i = 0; ok && i < 3; i++)
            ok = add(&b, TJP_LANE, MOVE_N(1 << i));
        for (int i = 0; ok && (8 << i) < N / warps_n; i++)
            ok = add(&b, TJP_REG, MOVE_N(8 << i));
    } else {
        for (int i = 0; ok && i < 3; i++)
            ok = add(&b, TJP_LANE, MOVE_M(1 << i));
        for (int i = 0; ok && (16 << i) < M / warps_m; i++)
            ok = add(&b, TJP_REG, MOVE_M(16 << i));
    }
    for (int i = 0; ok && rank == 3 && (1 << i) < shape[0]; i++)
        ok = add(&b, TJP_REG, (uint32_t)(rows * cols) << i);
    /* Warps: along N first, then along M, then copies. */
    int32_t wn_step = which == TJP_MMA_A ? 0 : cols / warps_n;
    int32_t wm_step = which == TJP_MMA_B ? 0 : rows / warps_m;
    for (int i = 0; ok && (1 << i) < warps_n; i++)
        ok = add(&b, TJP_WARP, MOVE_N(wn_step << i));
    for (int i = 0; ok && (1 << i) < warps_m; i++)
        ok = add(&b, TJP_WARP, MOVE_M(wm_step << i));
    while (ok && (1 << out->nbits[TJP_WARP]) < num_warps)
        ok = add(&b, TJP_WARP, 0);
#undef MOVE_M
#undef MOVE_N
#undef MOVE_K
    return ok;
}

/* A warpgroup fragment of a rows x cols tile (both powers of two, 64 rows
 * per warpgroup): registers reg[0], reg[1] and lanes lane[0], lane[1] as
 * (row, col) moves, then the columns from 8 on in registers, then the m64
 * blocks; lanes 2-4 along the rows; warps 16 and 32 rows apart, then the
 * warpgroups' row blocks. */
static int warpgroup_fragment(tjp_layout *out, int32_t rows, int32_t cols, int num_warps, const uint32_t reg[2][2],
                              const uint32_t lane[2][2])
{
    memset(out, 0, sizeof *out);
    int groups = num_warps / 4;
    if (num_warps % 4 || tjp_log2_exact(groups) < 0 || tjp_log2_exact(rows) < 0 || tjp_log2_exact(cols) < 3 ||
        rows % (64 * groups))
        return 0;
    out->rank = 2;
    out->shape[0] = rows;
    out->shape[1] = cols;
    builder b = {out, tjp_log2_exact(cols)};
    int ok = add(&b, TJP_REG, at(&b, reg[0][0], reg[0][1])) && add(&b, TJP_REG, at(&b, reg[1][0], reg[1][1]));
    for (int32_t c = 8; ok && c < cols; c *= 2) /* the columns, then the m64 blocks */
        ok = add(&b, TJP_REG, at(&b, 0, (uint32_t)c));
    for (int32_t m = 64; ok && m < rows / groups; m *= 2)
        ok = add(&b, TJP_REG, at(&b, (uint32_t)m, 0));
    ok = ok && add(&b, TJP_LANE, at(&b, lane[0][0], lane[0][1])) && add(&b, TJP_LANE, at(&b, lane[1][0], lane[1][1]));
    for (int i = 0; ok && i < 3; i++)
        ok = add(&b, TJP_LANE, at(&b, 1u << i, 0));
    ok = ok && add(&b, TJP_WARP, at(&b, 16, 0)) && add(&b, TJP_WARP, at(&b, 32, 0));
    for (int32_t g = 1; ok && g < groups; g *= 2)
        ok = add(&b, TJP_WARP, at(&b, (uint32_t)(rows / groups * g), 0));
    return ok;
}

int tjp_layout_wgmma_acc(tjp_layout *out, const int32_t *shape, int num_warps, int instr_n)
{
    static const uint32_t reg[2][2] = {{0, 1}, {8, 0}}, lane[2][2] = {{0, 2}, {0, 4}};
    if (tjp_log2_exact(instr_n) < 0 || instr_n < 8 || shape[1] % instr_n) {
        memset(out, 0, sizeof *out);
        return 0;
    }
    return warpgroup_fragment(out, shape[0], shape[1], num_warps, reg, lane);
}

int tjp_layout_wgmma_a(tjp_layout *out, const int32_t *shape, int num_warps, int elem_bytes)
{
    static const uint32_t reg[2][2] = {{8, 0}, {0, 4}}, lane[2][2] = {{0, 1}, {0, 2}};
    if (elem_bytes == 2)
        return shape[1] % 16 == 0 && tjp_layout_wgmma_acc(out, shape, num_warps, 16);
    if (elem_bytes == 4)
        return warpgroup_fragment(out, shape[0], shape[1], num_warps, reg, lane);
    memset(out, 0, sizeof *out);
    return 0;
}

int tjp_mma_fragment_regs(tjp_mma_operand which, int elem_bytes)
{
    int p = tjp_mma_elems_per_reg(elem_bytes);
    return which == TJP_MMA_ACC ? 4 : which == TJP_MMA_A ? 4 * p : 2 * p;
}
