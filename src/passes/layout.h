/* SPDX-License-Identifier: MIT */
/*
 * layout.h — distributed layouts as linear maps over F2.
 *
 * A distributed layout says which hardware slot holds which element of a
 * tile: the map F of the design's chain Addr = Layout ∘ S ∘ G ∘ F. Its input
 * is a slot (register r, lane l, warp w); its output is an element of the
 * tile, written as the element's row-major linear index. For power-of-two
 * shapes every layout tjit uses is linear over F2: the index of slot (r,l,w)
 * is the XOR of one basis vector per set bit of r, l and w. So a layout is a
 * short list of basis vectors, and composition, inversion and the question
 * "does this conversion stay in a thread, cross lanes, or need shared
 * memory" are small bit-matrix computations.
 *
 * A zero basis vector means that bit does not change the element: the slot
 * holds a copy (a tile smaller than the threads covering it is broadcast).
 */
#ifndef TJIT_LAYOUT_H
#define TJIT_LAYOUT_H

#include "../internal.h"

enum { TJP_REG, TJP_LANE, TJP_WARP, TJP_NIN };
#define TJP_MAX_BITS 32

typedef struct tjp_layout {
    int rank;
    int32_t shape[TJ_MAX_RANK];
    int nbits[TJP_NIN];                    /* log2 of registers, lanes, warps */
    uint32_t basis[TJP_NIN][TJP_MAX_BITS]; /* element index of each input bit */
} tjp_layout;

/* log2 of x, a power of two; -1 for any other x (the layouts' shapes,
 * lanes and warps must be powers of two). */
TJI_FUNC int tjp_log2_exact(int64_t x);

/* Triton's blocked layout: order[0] is the fastest-varying tile dimension;
 * each thread holds size_per_thread contiguous elements per dimension, lanes
 * and then warps tile the dimensions in order; a tile larger than one such
 * block repeats it in more registers, a smaller one is broadcast. */
TJI_FUNC int tjp_layout_blocked(tjp_layout *out, int rank, const int32_t *shape,
                                const int32_t *size_per_thread,
                                const int32_t *threads_per_warp,
                                const int32_t *warps_per_cta, const int32_t *order);

/* The layout of a reduction's result: dimension dim removed from the tile;
 * slots that differed only along dim now hold the same element. */
TJI_FUNC void tjp_layout_slice(tjp_layout *out, const tjp_layout *in, int dim);
/* The layout of the transposed rank-2 tile (shapes powers of two): the
 * slot that held element (r, c) of in holds element (c, r) of out. */
TJI_FUNC void tjp_layout_transpose(tjp_layout *out, const tjp_layout *in);

/* Element (row-major linear index) held by register r of lane l of warp w. */
TJI_FUNC uint32_t tjp_layout_apply(const tjp_layout *L, uint32_t reg, uint32_t lane,
                                   uint32_t warp);

/* Which slot holds element e: writes (reg, lane, warp) and returns 1, or
 * returns 0 when no slot holds it. Where several slots hold copies, the one
 * with zero in every duplicated bit is chosen. */
TJI_FUNC int tjp_layout_invert(const tjp_layout *L, uint32_t element, uint32_t *reg,
                               uint32_t *lane, uint32_t *warp);

/* How data held in layout src gets to layout dst of the same tile. */
typedef enum tjp_conversion {
    TJP_CONVERT_NONE,     /* the same slots hold the same elements */
    TJP_CONVERT_IN_THREAD,/* each thread already holds what it needs */
    TJP_CONVERT_LANES,    /* within each warp: shuffles */
    TJP_CONVERT_SHARED    /* across warps: through shared memory */
} tjp_conversion;
TJI_FUNC tjp_conversion tjp_layout_conversion(const tjp_layout *src, const tjp_layout *dst);
TJI_FUNC const char *tjp_conversion_name(tjp_conversion c);

/* Are a and b the same layout: the same shape, slots and elements? */
TJI_FUNC int tjp_layout_equal(const tjp_layout *a, const tjp_layout *b);

/* Prints the basis, e.g. "reg=[1,2] lane=[4,8,16,32,64] warp=[128,256]". */
TJI_FUNC void tjp_layout_print(tjs_buf *b, const tjp_layout *L);

/* layout_mma.c — mma.sync's fragments as layouts (its essay gives the
 * bases). elem_bytes is of the operands: 2 (f16, bf16: m16n8k16), 4 (tf32:
 * m16n8k8), 1 (i8: m16n8k32). The tile is [M, N] (accumulator), [M, K] (A)
 * or [K, N] (B), with a batch dimension in front for rank 3; warps_m x
 * warps_n warps split M and N (num_warps - their product hold copies).
 * Returns 0 where the tile does not fit the instruction: M / warps_m < 16,
 * N / warps_n < 8, K below the instruction's K, a shape not a power of two. */
typedef enum tjp_mma_operand { TJP_MMA_ACC, TJP_MMA_A, TJP_MMA_B } tjp_mma_operand;
TJI_FUNC int tjp_layout_mma(tjp_layout *out, tjp_mma_operand which, int elem_bytes, int rank,
                            const int32_t *shape, int warps_m, int warps_n, int num_warps);
/* wgmma's accumulator of an M x N tile over num_warps (a multiple of 4)
 * warps, warpgroups along M, instructions m64<instr_n>: per warpgroup
 * reg [n+1, m+8, n+8 .. n+instr_n/2], lane [n+2, n+4, m+1, m+2, m+4],
 * warp [m+16, m+32]; above them the instructions along N, then the m64
 * blocks of a warpgroup in registers; warpgroups take consecutive row
 * blocks. 0 where the tile does not fit. */
TJI_FUNC int tjp_layout_wgmma_acc(tjp_layout *out, const int32_t *shape, int num_warps, int instr_n);
/* wgmma's register A operand of an M x K tile of elem_bytes elements.
 * 16-bit: the PTX ISA's A fragment of m64k16 is, element for element, the
 * accumulator's fragment of m64n16 (per warp, mma.sync's m16k16 A), so
 * the layout is tjp_layout_wgmma_acc's of [M, K] — K steps where the
 * accumulator has its columns, then the m64 blocks. That is also why a
 * chained dot's accumulator is its successor's A with no data moving.
 * 32-bit (tf32, m64k8; per warp mma.sync's m16k8 A, CuTe's ALayout_64x8):
 * reg [m+8, k+4], lane [k+1, k+2, m+1, m+2, m+4], warp [m+16, m+32]; then
 * the K steps and the m64 blocks in registers, warpgroups along M. */
TJI_FUNC int tjp_layout_wgmma_a(tjp_layout *out, const int32_t *shape, int num_warps, int elem_bytes);
/* Operand elements per 32-bit register: 4 (1 byte), 2 (2 bytes), 1 (tf32); 0 otherwise. */
TJI_FUNC int tjp_mma_elems_per_reg(int elem_bytes);
/* Registers of one instruction's fragment per thread (element i of the
 * ISA's fragment is register t * this + i of instruction t). */
TJI_FUNC int tjp_mma_fragment_regs(tjp_mma_operand which, int elem_bytes);
/* The warp split of an M x N accumulator (Triton's: along M first). */
TJI_FUNC void tjp_mma_warps(int32_t M, int32_t N, int num_warps, int *warps_m, int *warps_n);

#endif
