/* SPDX-License-Identifier: MIT */
/*
 * passes.h — analyses and rewrites on the tile IR, one file each.
 *
 * The pipeline (src/jit/pipeline.c) reads as a straight list:
 *     tji_build(...); tji_verify(fn);
 *     tjp_materialize(fn, &plan);          (CPU back end)
 * with the verifier run after every pass that rewrites the IR.
 */
#ifndef TJIT_PASSES_H
#define TJIT_PASSES_H

#include "../builder/ir.h"

/* materialize.c — the CPU back end's fusion plan. A tile value is either
 * materialized (computed once into a scratch array, in a loop nest of its
 * own) or fused (recomputed element by element inside each loop nest that
 * reads it). Sinks (stores, atomics, prints, asserts, yields) and ops that
 * are not element-wise are materialized; so are loads whose value is read
 * after a later side effect, from a nested region, or more than once, and
 * costly element-wise values read more than once. Everything else is fused,
 * so a chain of element-wise ops becomes one loop. */
typedef struct tjp_plan {
    uint8_t *materialize;  /* per value id: 1 = materialized */
    int32_t *uses;         /* per value id: number of uses */
} tjp_plan;
TJI_FUNC void tjp_materialize(const tji_func *fn, tjp_plan *plan);
TJI_FUNC void tjp_plan_free(tjp_plan *plan);

/* carried_offsets.c — a FOR's carried pointer tile that each iteration
 * moves by one scalar (p' = p + splat(s)) becomes an i64 scalar offset o
 * (0 at entry, o + s per iteration), its uses p_init + splat(o): the CPU
 * then fuses the addresses into its loads instead of gathering through an
 * array of them. Run before materialize on the CPU. */
TJI_FUNC tj_status tjp_carry_offsets(tji_func *fn);
/* widen_fp8_dots.c — each fp8 operand of a DOT cast to f16 (exact) right
 * before it, so the CPU's micro-kernel widens f16 loads, not fp8 codes in
 * its k loop. Run before materialize on the CPU; the GPU keeps fp8. */
TJI_FUNC tj_status tjp_widen_fp8_dots(tji_func *fn);
/* lower_block_ptr.c — block pointers (MAKE_BLOCK_PTR, ADVANCE, and LOAD
 * and STORE of one) become ordinary IR: a pointer tile base + sum over d of
 * (offset_d + arange_d) * stride_d in i64, a mask 0 <= offset_d + arange_d <
 * shape_d for each dimension in boundary_check, NaN as other where asked;
 * FOR and IF carry the parts instead (only the offsets where the base, shape
 * and strides do not change). Sets fn->block_ptrs_lowered, after which the
 * verifier refuses any block pointer. First in both back ends' pipelines. */
struct tjp_param_spec;
/* tma_spec: NULL, or (a GPU with TMA, the variant's parameters) keep on
 * each LOAD whose tensor TMA can read (tjp_tma_tensor) that tensor as
 * its tma operands (ir.h), the contiguous stride as the constant 1. */
TJI_FUNC tj_status tjp_lower_block_ptrs(tji_func *fn, const struct tjp_param_spec *tma_spec);

/* provenance.c — per value, the set of pointer parameters it may point
 * into (empty: unknown), for the bounds checks (src/jit/llvm/bounds.h) and
 * alias.c. */
typedef struct tjp_provenance {
    int32_t nvalues;
    int nparams, nwords;  /* words of one set */
    uint64_t *sets;       /* per value id: nwords words, bit i = parameter i,
                             bit nparams = made from an integer */
} tjp_provenance;
TJI_FUNC void tjp_find_provenance(const tji_func *fn, tjp_provenance *out);
TJI_FUNC int tjp_provenance_has(const tjp_provenance *p, int32_t id, int param);
/* id may be a pointer made from an integer: it may point anywhere. */
TJI_FUNC int tjp_provenance_from_int(const tjp_provenance *p, int32_t id);
/* The set of id is not empty, and id is not made from an integer. */
TJI_FUNC int tjp_provenance_known(const tjp_provenance *p, int32_t id);
/* The sets of a and b share a parameter, or either is made from an integer. */
TJI_FUNC int tjp_provenance_overlap(const tjp_provenance *p, int32_t a, int32_t b);
TJI_FUNC void tjp_provenance_free(tjp_provenance *p);

/* alias.c — may a load and a later write touch one address at different
 * elements? Pointers of unknown provenance alias everything, pointers that
 * may share a parameter alias, and pointers of different parameters alias
 * only where the launch passed one buffer for several
 * (fn->params_may_alias). */
TJI_FUNC int tjp_may_alias(const tji_func *fn, const tjp_provenance *prov, int32_t ptr_a,
                           int32_t ptr_b);
/* a and b compute the same elements (a bounded structural comparison; 0
 * where it cannot tell). */
TJI_FUNC int tjp_same_value(const tji_func *fn, int32_t a, int32_t b);

/* layout_assign.c — the GPU's distributed layouts (F of the design's chain).
 * Every tile value gets a linear layout (layout.h) for the kernel's
 * num_warps, so that each op's operands are in the layout the op needs to
 * work in registers:
 *   element-wise ops, LOAD, STORE, ATOMIC*, CUMSUM, PRINT, ASSERT: all tile
 *     operands in the result's (or, without a result, the pointer's) layout;
 *   BROADCAST: the operand in the result's layout with broadcast dims folded
 *     to 0; EXPAND_DIMS: the slice of the result's layout; RESHAPE: the same
 *     bases (row-major index is unchanged); PERMUTE: bases with coordinates
 *     permuted; REDUCE: the result in the slice of the operand's layout along
 *     the axis; FOR/IF: init values, block args, yields and results of one
 *     carried variable share a layout.
 * Where a value is needed in two layouts, a TJI_CONVERT op is inserted right
 * before the use that disagrees. Nothing else in the IR changes. */
#include "layout.h"

typedef struct tjp_layout_plan {
    int num_warps;
    int32_t nvalues;      /* values of fn after the pass */
    tjp_layout *of;       /* per value id; unused for scalars (rank 0) */
    int32_t *equal_to;    /* per value id: for a value the pass added (a
                             conversion, a recomputed op, a converted op's
                             fresh result), the value it equals element by
                             element; 0 for the others */
    int32_t nops;         /* ops of fn after the pass */
    uint8_t *vector;      /* per op index: elements per global access of a
                             LOAD/STORE (registers r..r+v-1, r % v == 0, hold
                             consecutive addresses); 1 for everything else */
    uint8_t *addr_run;    /* per op index: registers r..r+n-1 (r % n == 0) of
                             a LOAD/STORE hold consecutive addresses, n >= the
                             vector: one address computed, the rest offsets */
    /* Filled by the passes after tjp_assign_layouts (NULL/0 before them):
     * tjp_choose_swizzles, tjp_alloc_shared, tjp_place_barriers below. */
    struct tjp_shared_step *shared; /* per op index: its step through shared memory */
    uint64_t shared_bytes;  /* the kernel's one dynamic shared allocation (bytes) */
    int shared_allocated;   /* tjp_alloc_shared ran: offsets and shared_bytes hold */
    struct tjp_ring *rings; /* per ring of the pipelined loads (tjp_alloc_shared) */
    int nrings;
    uint8_t *barrier;       /* per op index: TJP_BARRIER_* flags, where bar.sync goes */
    /* Filled by tjp_accelerate_dots before tjp_assign_layouts (NULL: every
     * DOT in the FMA form); per op index. */
    struct tjp_dot_choice *dot;
    /* Filled by tjp_specialize_warps (warp_specialize.c), last: */
    struct tjp_warp_spec *warp_spec; /* NULL: every warp runs every op */
    const char *why_not_specialized; /* static text where warp_spec is NULL */
    /* Filled by tjp_pair_ctas (cluster_pairs.c), after it: */
    struct tjp_pairs *pairs;         /* NULL: every block alone */
    const char *why_not_paired;      /* static text where pairs is NULL */
} tjp_layout_plan;
struct tjp_coalesce_result;
/* coalesced: the coalescing pass's table (coalesce.c below), anchoring
 * loads, stores and atomics; NULL anchors them at the default layout and
 * gives every access a vector of 1. plan: zeroed, or holding only the
 * dots' forms (plan->dot, tjp_accelerate_dots; NULL: every DOT is FMA),
 * which a DOT's layouts follow; the pass fills the rest. */
TJI_FUNC tj_status tjp_assign_layouts(tji_func *fn, int num_warps,
                                      const struct tjp_coalesce_result *coalesced,
                                      tjp_layout_plan *plan);
TJI_FUNC void tjp_layout_plan_free(tjp_layout_plan *plan);
/* Checks a plan slot by slot: every op's operands hold, register for
 * register, the elements the op needs. A failure is a tjit bug. */
TJI_FUNC tj_status tjp_check_layouts(const tji_func *fn, const tjp_layout_plan *plan);
/* The default layout of a tile shape: one element per thread per register,
 * lanes along the fastest (last) dimension first, warps along the slowest. */
TJI_FUNC void tjp_layout_default(tjp_layout *out, int rank, const int32_t *shape,
                                 int num_warps);

/* accelerate_dot.c — the form of each DOT on the GPU (its essay says
 * which): MMA (mma.sync, instruction by elem_bytes of the operands: 2
 * m16n8k16 (fp8 too, widened to f16), 4 m16n8k8 tf32, 1 m16n8k32 s8 or,
 * of fp8 operands, e4m3/e5m2 (sm_89+); passes 3 for TF32x3; warps
 * warps_m x warps_n along M and N) or FMA (one fma per k, in order, in
 * any layout of the result). why: what kept a DOT off MMA (static text;
 * NULL once read back from text). Printed "#dot<mma m16n8k16, warps=2x2>",
 * "#dot<mma m16n8k8.tf32 x3, warps=4x1>", "#dot<fma>". */
/* WGMMA (sm_90a, wgmma.c): warpgroup-wide wgmma.mma_async m64<instr_n>kK
 * (K = 32 bytes of operands: k16, tf32 k8, 8-bit k32) reading both operands from the rings of pipelined loads through
 * shared-memory descriptors — or, where a_in_regs (16-bit or TF32
 * operands), A from registers in tjp_layout_wgmma_a's fragments (a chained
 * dot's operand, a tile loaded before the loop, or TF32 A read from its
 * ring where its loads run along M, as b_in_regs below) and B from its ring;
 * warps_m = num_warps (warpgroups of four along
 * M), warps_n 1; async: the group stays in flight across iterations of
 * the loop that carries the accumulator (waited for after it);
 * skip_zero_init: that accumulator enters the loop as +0.0 everywhere, and
 * the first iteration's first instructions overwrite it (scale-d 0)
 * instead of adding to zeros moved into the registers, which ptxas takes
 * for non-wgmma writes inside the pipeline and serializes (C7515); on a
 * dot that is not async, its accumulator is a +0.0 constant, and the
 * first instructions likewise overwrite instead of adding.
 * b_in_regs (TF32 only, where B's loads run along N, which wgmma cannot
 * read from a descriptor for 32-bit operands): the product is computed
 * transposed, Cᵀ = Bᵀ Aᵀ — Bᵀ is the instruction's register A operand
 * (B's ring read into the transpose of tjp_layout_wgmma_a's fragments of
 * [N, K]), Aᵀ its descriptor B operand (A's ring, K-major), the
 * accumulator the transpose of tjp_layout_wgmma_acc's of [N, M] with
 * instructions m64<instr_n> along M; warpgroups split N; where async, a
 * group per K step, and before a step loads its registers a wait leaves
 * in flight only the groups after the last one that read them.
 * Printed "#dot<wgmma m64n128k16, warps=8, async, skip-zero-init>",
 * "#dot<wgmma m64n64k16, warps=8, a-regs, skip-zero-init>",
 * "#dot<wgmma m64n128k8, warps=8, b-regs, async, skip-zero-init>". */
enum { TJP_DOT_NONE, TJP_DOT_FMA, TJP_DOT_MMA, TJP_DOT_WGMMA };
typedef struct tjp_dot_choice {
    int form;
    int elem_bytes, passes;
    int warps_m, warps_n;
    int instr_n, async, skip_zero_init, a_in_regs, b_in_regs; /* WGMMA only */
    const char *why;
} tjp_dot_choice;
/* The GPU a plan is made for: sm_<sm> (0: none, FMA everywhere),
 * arch_specific for sm_90a (wgmma), and the kernel's warps. */
typedef struct tjp_target {
    int sm, arch_specific, num_warps;
} tjp_target;
/* plan->dot gets one choice per op index. axis (NULL: unknown) tells
 * which way the loads into a ring run, which wgmma of 32-bit and 8-bit
 * operands needs (K-major); without it they keep mma.sync. */
struct tjp_axis_info_result;
TJI_FUNC tj_status tjp_accelerate_dots(const tji_func *fn, const tjp_target *t,
                                       const struct tjp_axis_info_result *axis, tjp_layout_plan *plan);
/* "m16n8k16", "m16n8k8.tf32", "m16n8k32.s8", "m16n8k32.e4m3" (both
 * e4m3), "m16n8k32.e4m3.e5m2" (A's type, then B's) ... of DOT op's MMA
 * choice ch. */
TJI_FUNC const char *tjp_mma_instruction(const tji_func *fn, const tji_op *op, const tjp_dot_choice *ch);
/* NULL where a WGMMA choice's async and skip_zero_init are ones this pass
 * could have made for op, and a TF32 register operand is its tile's only
 * reader (a plan read back claims no more), else why not. */
TJI_FUNC const char *tjp_wgmma_claim_error(const tji_func *fn, const tji_op *op, const tjp_dot_choice *ch);
/* MMA: the accumulator layout of the DOT's result (1), else 0. */
TJI_FUNC int tjp_dot_result_layout(const tji_func *fn, const tji_op *op, const tjp_dot_choice *ch,
                                   int num_warps, tjp_layout *out);
/* The layouts of A and B the form needs with the result (and acc) in C;
 * 0 where FMA cannot derive them from C (a layout whose bases are not
 * single elements along one dimension): then C must be a default layout. */
TJI_FUNC int tjp_dot_operand_layouts(const tji_func *fn, const tji_op *op, const tjp_dot_choice *ch,
                                     int num_warps, const tjp_layout *C, tjp_layout *a, tjp_layout *b);

/* axis_info.c — what is known about the integers and addresses in each tile
 * (Triton's AxisInfo), for coalescing and vectorizing loads and stores.
 * Per value id and per dimension (a scalar counts as one dimension of 1):
 *   contiguity:   runs of this length hold consecutive integers (addresses
 *                 one element apart), runs starting at multiples of it;
 *   divisibility: a power of two (at most TJP_DIV_MAX) dividing the first
 *                 element of every run — of a pointer: its address in bytes;
 *   constancy:    runs of this length hold equal values.
 * has_value/value: every element is this known integer. All three counts are
 * powers of two no larger than the dimension; 1, 1, 1 means nothing known. */
#define TJP_DIV_MAX 4096
typedef struct tjp_axis_value {
    int32_t contiguity[TJ_MAX_RANK];
    int32_t divisibility[TJ_MAX_RANK];
    int32_t constancy[TJ_MAX_RANK];
    int has_value;
    int64_t value;
    int nonzero;          /* no element is 0 (a divisor that REM may trust) */
} tjp_axis_value;
typedef struct tjp_axis_info_result {
    int32_t nvalues;
    tjp_axis_value *of;   /* per value id (index 0 unused) */
} tjp_axis_info_result;
/* What the caller knows about one kernel argument (a specialization key). */
typedef struct tjp_param_spec {
    int ptr_align16;      /* pointer: the address is a multiple of 16 bytes */
    int int_div16;        /* integer: a nonzero multiple of 16 */
    int is_one;           /* integer: equal to 1 */
} tjp_param_spec;
/* spec: one entry per kernel parameter, or NULL (nothing known). */
TJI_FUNC tj_status tjp_axis_info(const tji_func *fn, const tjp_param_spec *spec,
                                 tjp_axis_info_result *out);
TJI_FUNC void tjp_axis_info_free(tjp_axis_info_result *r);
/* The coalescing answer for the LOAD/STORE op at index op: dim, the pointer's
 * dimension of greatest contiguity (the last one on ties; 0 for a scalar);
 * vector_bytes, the widest access (at most 16 bytes, at least one element)
 * that the pointer's contiguity and divisibility along dim allow; and
 * mask_constancy, the mask's constancy along dim (the dimension's size
 * without a mask) — a vector wider than that needs per-element predicates. */
typedef struct tjp_access {
    int dim;
    int elem_bytes;
    int vector_bytes;
    int mask_constancy;
} tjp_access;
TJI_FUNC tj_status tjp_access_vector(const tji_func *fn, const tjp_axis_info_result *info,
                                     int32_t op, tjp_access *out);

/* coalesce.c — the layout each global access wants, from axis info: lanes
 * along the pointer's most contiguous dimension, and per thread a vector as
 * wide as contiguity, divisibility, the mask's constancy and 16 bytes allow
 * (1 for atomics). Per op index, for tjp_assign_layouts; ops that are not
 * LOAD, STORE or atomics with a tile pointer are not chosen. */
typedef struct tjp_coalesce_choice {
    int chosen;
    int32_t vector;       /* elements per instruction, along layout's order[0] */
    int32_t addr_run;     /* elements a thread holds at consecutive addresses,
                             along order[0] (>= vector) */
    tjp_layout layout;    /* the access's layout (of its pointer tile) */
} tjp_coalesce_choice;
typedef struct tjp_coalesce_result {
    int32_t nops;
    tjp_coalesce_choice *of; /* per op index */
} tjp_coalesce_result;
TJI_FUNC tj_status tjp_coalesce(const tji_func *fn, const tjp_axis_info_result *axis, int num_warps,
                                tjp_coalesce_result *out);
TJI_FUNC void tjp_coalesce_free(tjp_coalesce_result *r);
/* One line per chosen access: "op 7 load: vector 4, reg=[1,2,...] ...". */
TJI_FUNC void tjp_coalesce_print(tjs_buf *b, const tji_func *fn, const tjp_coalesce_result *r);

/* swizzle.c — shared-memory layouts (S of the design's chain). A CONVERT
 * that cannot rename registers, a REDUCE across warps (its partial results)
 * and a CUMSUM write a shared buffer in one distributed layout and read it
 * in another. Element e of the buffer's tile lives at index A(e) = e ^ the
 * XOR of flip[i] over the set bits i of e (flip[i] has only bits below i,
 * so A is a permutation); the pass chooses flip so that neither the writes
 * nor the reads of one warp request wait on bank conflicts. */
typedef struct tjp_swizzle {
    int elem_bytes;                 /* bytes of one element in shared memory */
    uint32_t flip[TJP_MAX_BITS];    /* per index bit: what it XORs into the index */
} tjp_swizzle;
TJI_FUNC uint32_t tjp_swizzle_apply(const tjp_swizzle *S, uint32_t e);
/* Whether S maps the indices 0 .. numel-1 one to one onto themselves (a
 * buffer's swizzle must: tjp_swizzle_choose's flip only lower bits, a
 * buffer stored transposed, ldmatrix.c, permutes them all). */
TJI_FUNC int tjp_swizzle_permutes(const tjp_swizzle *S, int64_t numel);
/* The swizzle under which every layout given is served without bank
 * conflicts where the greedy construction finds one (else the cheapest
 * found; no swizzle when that is already free of conflicts). */
TJI_FUNC void tjp_swizzle_choose(tjp_swizzle *out, const tjp_layout *const *layouts,
                                 int nlayouts, int elem_bytes);
/* The same where layout k is accessed vectors[k] consecutive elements at
 * a time (powers of two, at most 16 bytes): the swizzle then leaves the
 * index bits below the widest vector alone, so that every vector stays
 * whole and aligned. */
TJI_FUNC void tjp_swizzle_choose_vectors(tjp_swizzle *out, const tjp_layout *const *layouts,
                                         const int *vectors, int nlayouts, int elem_bytes);
/* The widest vector (elements, at most 16 bytes) in which L's threads can
 * access a row-major buffer of its tile: registers 0 .. v-1 are elements
 * 0 .. v-1 of an aligned run, which every other register, lane and warp
 * move keeps aligned; 1 where none. */
TJI_FUNC int tjp_shared_vector(const tjp_layout *L, int elem_bytes);
/* That vector under swizzle S: halved until S keeps each one whole (moves
 * no index bit below it, XORs nothing into those bits); tjp_vector_fits:
 * whether `vector` (a power of two) is at most that. */
TJI_FUNC int tjp_vector_max(const tjp_layout *L, const tjp_swizzle *S);
TJI_FUNC int tjp_vector_fits(const tjp_layout *L, const tjp_swizzle *S, int vector);
/* Prints "none (row-major)" or the flips, e.g. "32->1 64->2". */
TJI_FUNC void tjp_swizzle_print(tjs_buf *b, const tjp_swizzle *S);

/* Bank conflicts, counted lane by lane (independently of the construction):
 * the shared-memory wavefronts of one warp request — registers reg ..
 * reg + vector - 1 of every lane of warp warp accessing the elements from
 * L(reg, lane, warp) on at index A(e) — per bank the distinct 4-byte
 * words, the most of any bank; 8-byte accesses are served half a warp at
 * a time, 16-byte ones a quarter. *minimum: the fewest possible (distinct
 * words / 32, rounded up, per phase). */
TJI_FUNC int tjp_request_wavefronts(const tjp_layout *L, const tjp_swizzle *S, int vector, uint32_t reg,
                                    uint32_t warp, int *minimum);
/* Every request of L accessed `vector` elements at a time (registers
 * that are not copies, all warps). */
typedef struct tjp_bank_count {
    int64_t requests, wavefronts, minimum;   /* totals */
    int worst, worst_minimum;                /* the request with the most extra */
} tjp_bank_count;
TJI_FUNC void tjp_bank_cost(const tjp_layout *L, const tjp_swizzle *S, int vector, tjp_bank_count *out);

/* A CONVERT from src to dst that only renames registers (the same threads
 * hold the same elements); every other CONVERT goes through shared memory. */
TJI_FUNC int tjp_convert_renames(const tjp_layout *src, const tjp_layout *dst);
/* The shared-memory step of op i: 1 with *out filled for a CONVERT that
 * does not rename, a REDUCE with warps along its axis and a CUMSUM; else 0.
 * The code generator executes it, the explainer reports it. */
typedef struct tjp_shared_use {
    tjp_layout write, read;     /* who writes, who reads which element of the tile */
    int64_t numel;              /* elements of that tile */
    int parts;                  /* REDUCE: buffers of numel, one per warp along the axis */
    uint32_t part_lanes;        /* REDUCE: lane bits that pick the part a lane reads,
                                   the parts then combined by butterfly shuffles over
                                   them; 0: every thread reads every part (read is
                                   then one part's layout, else the layout over all
                                   parts x numel slots) */
    tjp_swizzle swizzle;        /* the buffer's (its elem_bytes: of the buffer) */
    int has_index;              /* argmax/argmin: a second buffer of i32 indices */
    tjp_swizzle index_swizzle;
    int write_vector, read_vector; /* CONVERT: elements per shared access of
                                     each side (1: element by element; the
                                     swizzle keeps them whole; swizzle.c) */
    int ldmatrix, ldmatrix_trans; /* CONVERT: 16-byte vector writes and reads by
                                     ldmatrix.x<ldmatrix> (1, 2, 4; .trans); 0:
                                     none (ldmatrix.c; set by
                                     tjp_choose_swizzles) */
} tjp_shared_use;
TJI_FUNC int tjp_shared_use_of(const tji_func *fn, const tjp_layout_plan *plan, int32_t i,
                               tjp_shared_use *out);

/* The plan's shared memory, one step per op index that has one:
 *   kind        TJP_STEP_NONE, or what moves through shared memory:
 *               CONVERT, REDUCE (partials across warps), CUMSUM (the
 *               tile), BROADCAST (an atomic's old value handed from its
 *               owners to copies in other warps), TMA_STORE (a block
 *               stored by the tensor-memory accelerator: written by the
 *               threads in the NVMMA layout, read by TMA; tma.c);
 *   use         CONVERT, REDUCE, CUMSUM: tjp_shared_use_of's answer (the
 *               layouts and the chosen swizzle), set by tjp_choose_swizzles;
 *   offset, bytes              the step's buffer (values, partials) in the
 *                              kernel's allocation, set by tjp_alloc_shared;
 *   index_offset, index_bytes  argmax/argmin's second buffer (i32 indices).
 * Printed (plan_text.c), a step reads e.g. "#shared<convert, elem_bytes=4,
 * swizzle=[32->1], offset=0, bytes=4096>". */
enum { TJP_STEP_NONE, TJP_STEP_CONVERT, TJP_STEP_REDUCE, TJP_STEP_CUMSUM, TJP_STEP_BROADCAST,
       TJP_STEP_TMA_STORE, TJP_STEP_KINDS };
typedef struct tjp_shared_step {
    int kind;
    tjp_shared_use use;
    uint64_t offset, bytes;
    uint64_t index_offset, index_bytes;
    int tma_map;              /* TMA_STORE: the kernel's tensor map it writes
                                 (after the rings'; tjp_alloc_shared) */
    int swizzle_bytes;        /* TMA_STORE: the NVMMA row of its buffer */
    int tma_complete;         /* TMA_STORE: a store follows, so thread 0 waits
                                 for its writes, not only its reads */
    int staged_boxes;         /* TMA_STORE: 0, the buffer holds the whole block;
                                 n, it holds n boxes, and each box is stored as
                                 soon as it is written (tma.c's essay) */
    int store_bands;          /* TMA_STORE with staged_boxes: 0, thread 0 stores
                                 each box; n, a box's rows are n bands of as
                                 many warpgroups, each writing and storing its
                                 own band (tma.c's essay) */
} tjp_shared_step;
/* The step of op i that the layouts imply (CONVERT, REDUCE, CUMSUM; its
 * use with the swizzles chosen, or with choose_swizzle 0 none yet), into
 * *out; returns its kind (TJP_STEP_NONE: no step). */
TJI_FUNC int tjp_shared_step_of(const tji_func *fn, const tjp_layout_plan *plan, int32_t i,
                                int choose_swizzle, tjp_shared_step *out);
/* The swizzle pass: plan->shared for every op (CONVERT, REDUCE, CUMSUM
 * steps with their swizzles). */
TJI_FUNC tj_status tjp_choose_swizzles(const tji_func *fn, tjp_layout_plan *plan);

/* ldmatrix.c — a CONVERT into an mma operand: 16-byte vector writes and
 * ldmatrix reads (its essay gives the conditions and the swizzle). tjp_ldmatrix_fit: the matrices per ldmatrix (4, 2, 1) that
 * read layout R under swizzle S allows, *trans for .trans; 0: none.
 * tjp_ldmatrix_of: that, for op i's step use, where the conversion feeds
 * a dot of the MMA form and the writes are 16-byte vectors (else 0).
 * tjp_ldmatrix_choose: gives use the 16-byte-row swizzle and ldmatrix
 * where both sides are then free of bank conflicts (1), else leaves it
 * (0). tjp_ldmatrix_swizzle: that swizzle for rows of cols elements
 * (CuTe's Swizzle<3,4,3> for rows of 128 bytes or more). */
TJI_FUNC int tjp_ldmatrix_fit(const tjp_layout *R, const tjp_swizzle *S, int *trans);
TJI_FUNC int tjp_ldmatrix_of(const tji_func *fn, const tjp_layout_plan *plan, int32_t i,
                             const tjp_shared_use *use, int *trans);
TJI_FUNC int tjp_ldmatrix_choose(const tji_func *fn, const tjp_layout_plan *plan, int32_t i,
                                 tjp_shared_use *use);
TJI_FUNC void tjp_ldmatrix_swizzle(int32_t cols, int elem_bytes, tjp_swizzle *out);
/* The same for a ring of pipelined loads (alloc_shared.c): where every
 * LOCAL_LOAD of ring R feeds a dot of the MMA form and every ASYNC_COPY
 * into it moves 16-byte vectors, and both are then free of bank conflicts,
 * gives R the 16-byte-row swizzle and its ldmatrix reads (1), else leaves
 * R (0). */
struct tjp_ring;
TJI_FUNC int tjp_ldmatrix_ring(const tji_func *fn, const tjp_layout_plan *plan, int ring,
                               struct tjp_ring *R);
/* Bank conflicts of W's writes as 16-byte vectors (16 bytes of registers
 * of a thread at once), lane by lane: per quarter warp the wavefronts
 * against the minimum of 1 (nothing counted where W cannot). */
TJI_FUNC void tjp_vector_write_cost(const tjp_layout *W, const tjp_swizzle *S, tjp_bank_count *out);
/* The layout of the addresses: the slot (r, l, w) of an ldmatrix whose
 * registers start at r (a multiple of 2 x matrices) addresses the row that
 * starts at index out(r, l, w) of the buffer (swizzle applied): lanes 0..7
 * matrix 0's rows, 8..15 matrix 1's, ... (S after R where R is no ldmatrix
 * read). */
TJI_FUNC void tjp_ldmatrix_address_layout(const tjp_layout *R, const tjp_swizzle *S, tjp_layout *out);
/* Bank conflicts of R's ldmatrix reads, lane by lane: per matrix (phase of
 * eight 16-byte rows) the wavefronts against the minimum of 1. */
TJI_FUNC void tjp_ldmatrix_cost(const tjp_layout *R, const tjp_swizzle *S, tjp_bank_count *out);

/* alloc_shared.c — one shared allocation per kernel. Adds the BROADCAST
 * steps, sizes every step's buffers and gives them byte offsets: buffers
 * live at once never overlap, others may reuse bytes (alloc_shared.c says
 * when buffers are live). plan->shared_bytes is the allocation, at most
 * TJP_SHARED_MAX: more is a compile error naming the kernel, the op of the
 * largest step and the size. */
#define TJP_SHARED_MAX 232448 /* 227 KiB: the most any GPU gives a block (sm_90, sm_100) */
TJI_FUNC tj_status tjp_alloc_shared(const tji_func *fn, tjp_layout_plan *plan);
/* A ring of the pipelined loads (TJI_ASYNC_COPY / TJI_LOCAL_LOAD, ir.h), as
 * tjp_alloc_shared plans it: slots buffers of numel elements, live for the
 * whole kernel (copies land while other steps run); one swizzle for every
 * copy into it and every read, chosen for all their layouts and kept
 * identity on the smallest copy vector's bits (vector_bits), so that each
 * cp.async of that many elements writes consecutive bytes. Not printed:
 * the layouts imply it, so a parsed plan plans it again. */
typedef struct tjp_ring {
    int slots;
    int64_t numel;
    int elem_bytes;
    int vector_bits;          /* log2 of the smallest copy vector (elements) */
    tjp_swizzle swizzle;
    int ldmatrix, ldmatrix_trans; /* LOCAL_LOAD reads by ldmatrix.x<ldmatrix>
                                     (.trans), 0: element by element
                                     (tjp_ldmatrix_ring) */
    int read_at_use;          /* ldmatrix reads: each instruction where its
                                 registers are first used (every read's one
                                 user is a dot of its region); element
                                 reads: each register where first used
                                 (tjp_wgmma_register_ring) */
    int wgmma;                /* read by wgmma through descriptors, in the
                                 NVMMA layout (tjp_wgmma_ring); LOCAL_LOAD
                                 emits nothing */
    int transposed;           /* stored [C, R] (its last two dimensions
                                 swapped): 16-byte copies run along R */
    int swizzle_bytes;        /* NVMMA rows: 32, 64 or 128 bytes */
    int tma;                  /* its copies run as TMA (tjp_tma_ring), each
                                 slot's completion on an mbarrier */
    int tma_contiguous;       /*   the tensor's dimension of stride 1 */
    int tma_map;              /*   the kernel's tensor map it reads (0, 1, ...) */
    uint64_t barriers;        /*   byte offset of the slots' mbarriers (8 bytes
                                   each): "full" ones, then "empty" ones */
    uint64_t offset, slot_bytes;
    int32_t op;               /* an op of the ring, for errors */
    int family;               /* the ring whose bytes, mbarriers and phases
                                 it shares (itself where none): a TMA ring
                                 of a later sibling loop of the same slots
                                 continues an earlier one's fills
                                 (alloc_shared.c) */
} tjp_ring;
/* Byte offset of ring R's "empty" mbarriers (after its "full" ones). */
static inline uint64_t tjp_ring_empty_barriers(const tjp_ring *R)
{
    return R->barriers + 8 * (uint64_t)R->slots;
}

/* barriers.c — where bar.sync goes, per op index (plan->barrier):
 *   TJP_BARRIER_BEFORE        before the op's global access: a load after
 *                             writes of other threads, a store or atomic
 *                             after loads it may overwrite (memory order);
 *   TJP_BARRIER_SHARED_WRITE  before the op's shared step writes its
 *                             buffer: earlier readers of shared memory done;
 *   TJP_BARRIER_SHARED_READ   between the step's writes and its reads.
 * Printed, e.g. "#barrier<before>" / "#barrier<shared-write, shared-read>". */
enum { TJP_BARRIER_BEFORE = 1, TJP_BARRIER_SHARED_WRITE = 2, TJP_BARRIER_SHARED_READ = 4 };
TJI_FUNC tj_status tjp_place_barriers(const tji_func *fn, tjp_layout_plan *plan);

/* explain.c — from the plan: the coalescing chain of every LOAD, STORE and atomic made
 * concrete (layout F, the pointer's address facts, vector width, sectors of
 * one warp request against the minimum) and the class of every TJI_CONVERT,
 * and for each step through shared memory (CONVERT, REDUCE across warps,
 * CUMSUM) its swizzle and the bank conflicts of its writes and reads
 * (wavefronts per warp request against the minimum), as malloc'ed text
 * (TJIT_DUMP=layouts). NULL on a NULL argument. */
TJI_FUNC char *tjp_explain(const tji_func *fn, const tjp_layout_plan *plan,
                           const tjp_axis_info_result *axis);

/* plan_text.c — the plans above as annotations of the printed IR (aliases
 * "#L1 = linear<...>", "#shared_bytes = N", "#barriers = N" ahead of the
 * kernel, " #L1" after a tile's type, "#access<...>", "#shared<...>" and
 * "#barrier<...>" after ops; see its essay). Any member may be NULL. */
typedef struct tjp_annotations {
    const tjp_layout_plan *layouts;
    const tjp_axis_info_result *axis;
    const tjp_coalesce_result *coalesce;
    const tjp_plan *cpu;
} tjp_annotations;
TJI_FUNC char *tjp_print_annotated(const tji_func *fn, const tjp_annotations *a); /* malloc'ed */
/* Parses text (source names it in errors); plan, if not NULL, gets the
 * layout plan the text holds (plan->of NULL where it holds none), with its
 * shared steps, allocation and barriers where the text has them. */
TJI_FUNC tj_status tjp_parse_annotated(const char *text, const char *source, tji_func **fn,
                                       tjp_layout_plan *plan);
/* Where TJIT_CHECK_ROUNDTRIP is set (make check sets it): prints fn (with
 * plan's layouts, plan may be NULL), parses it, prints again and fails with
 * an internal error naming the kernel and the first differing line. */
TJI_FUNC tj_status tjp_check_roundtrip(const tji_func *fn, const tjp_layout_plan *plan);

/* persistent.c — the kernel's body becomes a loop over the launch's
 * programs (tiles) that fewer, resident programs walk (its essay). A
 * launch asks for it with a 1-D grid (tj_persistent: OFF, or a grid of
 * more axes, is NEVER; DEFAULT is WHERE_IT_PAYS on t with num_stages,
 * the launch's, and spec, the variant's parameters as for
 * tjp_lower_block_ptrs (NULL: no TMA); ON is ALWAYS). *why_not (may be
 * NULL) gets a static text where the body stays as it was. Runs first. */
typedef enum tjp_persistence {
    TJP_PERSIST_NEVER,
    TJP_PERSIST_WHERE_IT_PAYS,
    TJP_PERSIST_ALWAYS
} tjp_persistence;
/* Or'ed into a launch's persistence (pipeline.h): split the last wave along
 * K where the kernel has the shape (stream_k.c), or fail where it has not. */
enum { TJP_PERSIST_MODE = 3, TJP_STREAM_K = 4, TJP_STREAM_K_REQUIRED = 8 };
TJI_FUNC tj_status tjp_make_persistent(tji_func *fn, const tjp_target *t, const tjp_param_spec *spec,
                                       int num_stages, tjp_persistence mode, const char **why_not);
/* fn was made persistent: it reads TJI_LOGICAL_PROGRAMS. */
TJI_FUNC int tjp_is_persistent(const tji_func *fn);
/* The tile loop of a persistent kernel (a top-level FOR marked tile_loop),
 * or -1. */
TJI_FUNC int32_t tjp_tile_loop(const tji_func *fn);

/* stream_k.c — the last wave of a persistent kernel split along K (see its
 * essay): where the tile body has the matmul's shape, the tile loop's
 * trips become whole tiles and pieces of tiles, the K loop runs a piece's
 * trips, and the epilogue runs where STREAM_K_ARRIVE says the piece was its
 * tile's last. Elsewhere *why_not says why not, and required fails with it.
 * Runs right after tjp_make_persistent. */
TJI_FUNC tj_status tjp_stream_k(tji_func *fn, int required, const char **why_not);
/* The bytes of one piece of a stream-K kernel's tile (the workspace's slot),
 * 0 where fn has none. */
TJI_FUNC int64_t tjp_stream_k_piece_bytes(const tji_func *fn);

/* pipeline_loops.c — software pipelining (see its essay): in each TJ_FOR
 * with a positive constant step, the loads that feed a dot and whose
 * address slice can run ahead are issued num_stages - 1 iterations early
 * into rings of num_stages shared buffers (TJI_ASYNC_COPY, _COMMIT, _WAIT,
 * TJI_LOCAL_LOAD). A loop's own num_stages (tl.range's) comes before this
 * one; 1 leaves a loop as it is; more than TJP_MAX_STAGES is an error.
 * Runs before axis info. */
#define TJP_MAX_STAGES TJI_MAX_STAGES
/* t: NULL, or the target, whose wgmma dots (tjp_wgmma_fits) take one
 * slot more per ring: the slot an asynchronous wgmma still reads is not
 * refilled in the next iteration. */
TJI_FUNC tj_status tjp_pipeline_loops(tji_func *fn, int num_stages, const tjp_target *t);

/* wgmma.c — Hopper's warpgroup MMA (its essay). tjp_wgmma_fits: DOT op
 * can run as wgmma on target t given operands in shared memory (f16 or
 * bf16, f32 with TF32, fp8 or i8 inputs; f32 or, of i8, i32 accumulation;
 * a 2-D tile of 64 rows per warpgroup, K a multiple of the instruction's
 * 32 bytes), *instr_n the instruction's N, *elem_bytes the operands'
 * element size (2, 4 for tf32, 1); tjp_wgmma_k_major_only: its
 * operands must be stored K-major (every dtype but f16 and bf16).
 * tjp_wgmma_operand_ring: the ring whose LOCAL_LOAD value v is — or v is
 * tj_trans of (a 2-D PERMUTE: tjp_wgmma_operand_trans) — where that
 * LOCAL_LOAD feeds nothing but operands of DOTs of its region, directly
 * or through tj_trans, else -1; tjp_wgmma_operand_read: that LOCAL_LOAD
 * op (-1: none), *trans whether through tj_trans; tjp_wgmma_readers: how
 * many dot operands LOCAL_LOAD op read feeds so (0: it feeds something
 * else too); tjp_wgmma_last_reader: operand `operand` of DOT op dot is
 * the last of them in the region's order (it releases the ring's slot);
 * tjp_wgmma_shared_read_error: why the dots' forms (dots, per op index,
 * ndots of them) cannot let that operand read its ring through a
 * descriptor, because another dot reads the same tile
 * otherwise, or wants it stored the other way (K-major-only dtypes); NULL
 * where it can. tjp_wgmma_ring: where every read of ring R is such an
 * operand of a WGMMA dot, gives R the NVMMA layout (the swizzle wgmma and
 * TMA read: 8-row atoms of 32, 64 or 128 bytes per row, XOR of the row
 * into the 16-byte chunks) and marks it (1), else 0. */
TJI_FUNC int tjp_wgmma_fits(const tji_func *fn, const tji_op *op, const tjp_target *t, int *instr_n,
                            int *elem_bytes);
/* tjp_wgmma_fits_swapped: DOT op of TF32 operands can run transposed
 * (WGMMA with b_in_regs: the instruction's rows along N, its n along M),
 * *instr_n that instruction's n. tjp_wgmma_reads_ring: the choice reads
 * operand (0: A, 1: B) from its ring through a descriptor. */
TJI_FUNC int tjp_wgmma_fits_swapped(const tji_func *fn, const tji_op *op, const tjp_target *t, int *instr_n);
/* Either form fits: DOT op runs as wgmma on t. */
TJI_FUNC int tjp_wgmma_runs(const tji_func *fn, const tji_op *op, const tjp_target *t);
TJI_FUNC int tjp_wgmma_reads_ring(const struct tjp_dot_choice *ch, int operand);
TJI_FUNC int tjp_wgmma_k_major_only(const tji_func *fn, const tji_op *op);
TJI_FUNC int tjp_wgmma_operand_ring(const tji_func *fn, int32_t v);
TJI_FUNC int tjp_wgmma_operand_trans(const tji_func *fn, int32_t v);
TJI_FUNC int32_t tjp_wgmma_operand_read(const tji_func *fn, int32_t v, int *trans);
TJI_FUNC int tjp_wgmma_readers(const tji_func *fn, int32_t read);
TJI_FUNC int tjp_wgmma_last_reader(const tji_func *fn, int32_t dot, int operand);
TJI_FUNC const char *tjp_wgmma_shared_read_error(const tji_func *fn, const struct tjp_dot_choice *dots,
                                                 int32_t ndots, int32_t dot, int operand);
/* Is op tj_trans of a 2-D tile (a PERMUTE swapping its dimensions)? */
TJI_FUNC int tjp_is_trans2(const tji_func *fn, const tji_op *op);
TJI_FUNC int tjp_wgmma_ring(const tji_func *fn, const tjp_layout_plan *plan, int ring, struct tjp_ring *R);
/* Whether every read of ring is the register operand of a WGMMA dot (A
 * of a_in_regs, B of the transposed product) and nothing else: its reads
 * may wait for their K step (the ring's read_at_use). */
TJI_FUNC int tjp_wgmma_register_ring(const tji_func *fn, const tjp_layout_plan *plan, int ring);
/* How wgmma reads operand tile t (A, or B where is_b) from its NVMMA ring
 * R: K-major (imm-trans 0) or M/N-major, the descriptor's leading and
 * stride byte offsets (LBO 16 where unused: the field's 1) and its swizzle
 * mode (bits 62-63: 1 = 128 bytes, 2 = 64, 3 = 32). tjp_wgmma_offset: the
 * byte offset in a slot of element (row, col) — an instruction's start
 * where that element begins an 8-row atom. */
typedef struct tjp_wgmma_desc {
    int k_major;
    uint32_t lbo, sbo;
    int mode;
} tjp_wgmma_desc;
TJI_FUNC void tjp_wgmma_operand(const struct tjp_ring *R, const tji_type *t, int is_b, tjp_wgmma_desc *out);
/* The ring as an operand read through tj_trans sees it (trans), else R
 * itself: stored the other way, its swizzle indexed by the transpose's
 * elements; stored is the ring's tile. What tjp_wgmma_operand and
 * tjp_wgmma_offset take, with the operand's type. */
TJI_FUNC void tjp_wgmma_view(const struct tjp_ring *R, const tji_type *stored, int trans, struct tjp_ring *out);
TJI_FUNC uint64_t tjp_wgmma_offset(const struct tjp_ring *R, const tji_type *t, uint32_t row, uint32_t col);
/* The NVMMA layout (the essay of wgmma.c) of a rows x cols tile, stored
 * transposed or not, in rows of sw bytes of eb-byte elements, as a
 * swizzle: what wgmma reads and TMA writes and reads. */
TJI_FUNC void tjp_nvmma_swizzle(int32_t rows, int32_t cols, int transposed, int sw, int eb, tjp_swizzle *out);

/* transpose_copies.c — copies into the ring of a K-major-only wgmma
 * operand (TF32) whose addresses run along M or N (its essay).
 * tjp_wgmma_transposable: operand v (of elem_bytes-byte elements) is a
 * ring filled by cp.async copies, which can store it transposed.
 * tjp_transpose_copies: gives those copies the layout that does so
 * without bank conflicts (vector 1, lanes 8 along the addresses x 4
 * along K), in the coalescing table that assign-layouts reads; after
 * accelerate-dot, whose choices it reads from plan->dot. */
TJI_FUNC int tjp_wgmma_transposable(const tji_func *fn, int32_t v, int elem_bytes);
TJI_FUNC tj_status tjp_transpose_copies(const tji_func *fn, const tjp_layout_plan *plan, int num_warps,
                                        tjp_coalesce_result *coalesced);

/* warp_specialize.c — a producer warpgroup for the TMA copies (its
 * essay). Where the plan's TMA loop allows it, the kernel runs
 * num_warps consumer warps (every op but the copies) and one warpgroup
 * more after them, whose first warp computes the copies' coordinates and
 * issues them, each slot freed by an "empty" mbarrier that the consumers
 * arrive on once their wgmma has read it. */
enum { TJP_ROLE_CONSUMER = 1, TJP_ROLE_PRODUCER = 2 };
typedef struct tjp_warp_spec {
    int producer_warps;       /* 4: warps num_warps .. num_warps + 3 */
    int producer_regs;        /* setmaxnreg of each side; 0: none (the */
    int consumer_regs;        /*   block's registers suffice without) */
    int entry_regs;           /* the register cap at entry (nvvm.maxnreg) */
    int32_t loop;             /* the first FOR whose copies the producer issues */
    int nloops;               /* how many such FORs (their rings: alloc_shared.c's families) */
    uint8_t *role;            /* per op index: TJP_ROLE_* bits, 0: nobody
                                 (the loop's waits and commits) */
    uint8_t *producer_value;  /* per value id: the producer computes it */
} tjp_warp_spec;
/* mode: TJ_WARP_SPECIALIZE_* (tjit.h). DEFAULT specializes where it can
 * and elsewhere leaves plan->warp_spec NULL and says why in
 * plan->why_not_specialized; ON fails there with that reason; OFF never
 * specializes. Runs after tjp_place_barriers. */
TJI_FUNC tj_status tjp_specialize_warps(const tji_func *fn, const tjp_target *t, int mode,
                                        tjp_layout_plan *plan);
TJI_FUNC void tjp_warp_spec_free(tjp_warp_spec *ws);

/* cluster_pairs.c — two blocks of a cluster share the tiles both load
 * (its essay). The peer's value of a tile-body scalar is the same op
 * evaluated with the tile loop's index xor 1; a copy multicasts its half
 * where its roots (the tile-dependent tile-body values its coordinates
 * come from) equal the peer's. */
typedef struct tjp_pairs {
    int32_t tile;          /* the tile loop's index (a value id) */
    uint8_t *peer_op;      /* per op index: re-evaluated for the peer (a
                              tile-body scalar op whose value depends on the
                              tile), in the region's order */
    int32_t *root_first;   /* per op index (nops + 1 entries): copy i's roots */
    int32_t *roots;        /*   are roots[root_first[i] .. root_first[i + 1]) */
    uint8_t *multicast;    /* per ring: its copies may multicast (a box to split) */
} tjp_pairs;
/* pairs_allowed: the launch's tile count is even (a pair's blocks then walk
 * as many tiles). mode: TJ_CLUSTER_* (tjit.h). Runs after
 * tjp_specialize_warps. */
TJI_FUNC tj_status tjp_pair_ctas(const tji_func *fn, const tjp_target *t, int mode, int pairs_allowed,
                                 tjp_layout_plan *plan);
TJI_FUNC void tjp_pairs_free(tjp_pairs *p);
/* A ring's boxes in a pair: the NVMMA column blocks (*ncols, box[] each),
 * each cut into *splits boxes along its rows where the column blocks are
 * too few to halve (1: not cut). */
TJI_FUNC void tjp_pair_boxes(const tjp_ring *R, const tji_type *tile, int paired, uint32_t box[2], int *ncols,
                             int *splits);

/* tma.c — Hopper's tensor-memory accelerator (its essay).
 * tjp_tma_source: integer (or pointer) v is kernel parameter *param (an
 * integer widened by a CAST counts) or, with *param -1, the constant
 * *value; 0 where it is neither. tjp_tma_tensor: the dimension of stride 1
 * of the rank-r tensor (base, shape, strides: value ids) where every
 * launch of a variant with spec can encode its tensor map, else -1.
 * tjp_tma_ring: where ring R (wgmma's, NVMMA) can be written by TMA,
 * marks it (R->tma, tma_contiguous) and returns 1. tjp_tma_box: one TMA
 * copy's box (tile order) and how many make a slot of tile. */
TJI_FUNC int tjp_tma_source(const tji_func *fn, int32_t v, int32_t *param, int64_t *value);
TJI_FUNC int tjp_tma_tensor(const tji_func *fn, const tjp_param_spec *spec, int rank, int32_t base,
                            const int32_t *shape, const int32_t *strides);
/* Whether extent (a value id) is known, for every launch of a variant with
 * spec, to be a multiple of 16 bytes of dtype: a TMA store writes whole
 * 16-byte chunks along the contiguous dimension, past the edge too. */
TJI_FUNC int tjp_tma_store_extent(const tji_func *fn, const tjp_param_spec *spec, int32_t extent, tj_dtype dtype);
/* The dimension of stride 1 of the tensor (rank, base, shape, strides)
 * that load or store op reads or writes, where TMA may do it for every
 * launch of a variant with spec (tjp_tma_tensor; a store's extent along
 * it, tjp_tma_store_extent; not a volatile access, not bounds-checked
 * code); -1 where it may not (spec NULL: never). */
TJI_FUNC int tjp_tma_access(const tji_func *fn, const tjp_param_spec *spec, const tji_op *op, int rank,
                            int32_t base, const int32_t *shape, const int32_t *strides, tj_dtype dtype);
TJI_FUNC int tjp_tma_ring(const tji_func *fn, int ring, struct tjp_ring *R);
TJI_FUNC void tjp_tma_box(const struct tjp_ring *R, const tji_type *tile, uint32_t box[2], int *nboxes);
/* tjp_tma_store_fits: whether STORE op i (with its tensor, tma_rank) can
 * be a TMA store — a 2-D block of 8 to 256 rows of 32 bytes or more that
 * run along the tensor's contiguous dimension, outside every loop but a
 * persistent kernel's tile loop, with no load or atomic after it (the
 * layout pass then stores the value in the layout it has). tjp_tma_store:
 * if so, fills *out (kind TMA_STORE, the value's layout, the NVMMA
 * swizzle, the write vector, the boxes staged at a time in a tile loop)
 * and returns 1. tjp_tma_store_tile_loop: the
 * tile loop that holds STORE op i, whose TMA store then stays in flight
 * until the next trip's (tma.c's essay); -1 where none does. */
TJI_FUNC int tjp_tma_store_fits(const tji_func *fn, int32_t i);
TJI_FUNC int32_t tjp_tma_store_tile_loop(const tji_func *fn, int32_t i);
TJI_FUNC int tjp_tma_store(const tji_func *fn, const tjp_layout_plan *plan, int32_t i, tjp_shared_step *out);
/* A TMA store's box (tile order) and how many make its block. */
TJI_FUNC void tjp_tma_store_box(const tjp_shared_step *step, const tji_type *tile, uint32_t box[2], int *nboxes);
/* The bytes of a TMA store's buffer (step->staged_boxes boxes, or the
 * block). tjp_tma_store_loop_bytes: for the estimate that decides
 * persistence (persistent.c), before block pointers are lowered and any
 * layout exists, the bytes that top-level STORE op i of a block pointer
 * would keep in shared memory inside the tile loop: two boxes where it
 * would be a TMA store of the wgmma accumulator (whose threads keep their
 * columns within one box), else its whole block (the TMA store's, or the
 * conversion for the threads' stores). */
TJI_FUNC uint64_t tjp_tma_store_bytes(const tjp_shared_step *step, const tji_type *tile);
TJI_FUNC int64_t tjp_tma_store_loop_bytes(const tji_func *fn, const tjp_param_spec *spec, int32_t i);

/* registry.c — the passes by name, for tjit-opt (and the pipeline): each
 * runs on a state that holds the program and what earlier passes found. */
typedef struct tjp_pass_state {
    tji_func *fn;
    tjp_param_spec *spec;         /* per parameter (malloc'ed), or NULL */
    int num_warps;
    int num_stages;               /* for pipeline-loops; 0: 3 */
    int sm;                       /* the GPU target (accelerate-dot) */
    int arch_specific;            /* sm_90a rather than sm_90 */
    int has_axis, has_coalesce, has_layouts, has_cpu;
    int show_axis;                /* --axis-info asked for: print it */
    tjp_axis_info_result axis;
    tjp_coalesce_result coalesce;
    tjp_layout_plan layouts;
    tjp_plan cpu;
} tjp_pass_state;
typedef struct tjp_pass_info {
    const char *name;             /* "axis-info" */
    const char *help;
    tj_status (*run)(tjp_pass_state *s);
} tjp_pass_info;
/* The pass named name, or NULL. */
TJI_FUNC const tjp_pass_info *tjp_find_pass(const char *name);
/* All passes, *n of them. */
TJI_FUNC const tjp_pass_info *tjp_pass_table(int *n);
/* What the state holds, as annotations for tjp_print_annotated. */
TJI_FUNC tjp_annotations tjp_pass_annotations(const tjp_pass_state *s);
TJI_FUNC void tjp_pass_state_free(tjp_pass_state *s); /* and its fn */

#endif
