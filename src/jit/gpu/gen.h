/* SPDX-License-Identifier: MIT */
/*
 * gen.h — the state of GPU code generation and the helpers that its files
 * share (private to src/jit/gpu/; the rest of tjit sees only jit.h).
 *
 * One program instance is one CTA of num_warps * 32 threads, and the kernel
 * is one LLVM function (kernel.c). A scalar (rank 0) is one LLVM value that
 * every thread computes alike; a tile is an array of LLVM values, one per
 * register of its layout (the plan's tjp_layout, layout.h): register r of
 * lane l of warp w holds the element whose row-major index is L(r, l, w),
 * the XOR of the bases that the bits of r, l and w select. The files split
 * the work by op family, as Triton's lib/Conversion/TritonGPUToLLVM does:
 *
 *   kernel.c     the kernel driver: plan checks, parameters, op dispatch
 *   registers.c  layouts to thread and element indices; element-wise,
 *                creation and shape ops (register renaming)
 *   shared.c     the dynamic shared array, the plan's barriers, warp
 *                shuffles, broadcasts, swizzled addresses, CONVERT
 *   memory.c     global LOAD and STORE: vectors, masks, hints (inline PTX)
 *   atomics.c    ATOMIC and ATOMIC_CAS
 *   reduce.c     REDUCE and CUMSUM
 *   control.c    FOR, IF and regions
 *   debug.c      PRINT and ASSERT
 *   dot.c        DOT: fma per thread or mma.sync, as the plan chose
 *   async.c      the rings of pipelined loads: cp.async copies, commit,
 *                wait (and its barrier), LOCAL_LOAD
 *   tma.c        rings that the tensor-memory accelerator fills
 *   warp_spec.c  the producer and consumer warps of a specialized kernel
 *   stream_k.c   the pieces of a stream-K tile meeting
 *   target.c     the NVPTX target, the optimizer, PTX and its fix-ups
 *   math.c       one element of an element-wise op (backend.h)
 *   math_f64.c   the float functions computed in f64 (math_lib.h)
 *   inline_asm.c the user's inline PTX, on one element or a pack
 *
 * Small helpers are static inline here; the rest is declared here and
 * defined in the file of its family. The LLVM helpers the CPU back end
 * uses too — types, parameter ABI, guards, dump, optimizer run, the float
 * compare-and-swap loop, element-wise rules — are src/jit/llvm/'s, called
 * directly (tjj_llvm_*, tjj_ls_*), never copied here.
 */
#ifndef TJIT_GPU_GEN_H
#define TJIT_GPU_GEN_H

#include <stdint.h>
#include <string.h>

#include <llvm-c/Core.h>

#include "../llvm/bounds.h"
#include "../llvm/llvm_scalar.h"
#include "backend.h"

enum {
    SHARED_ALIGN = 1024,    /* of the dynamic shared array */
    MAX_REGS_LOG2 = 10,     /* at most 1024 registers per thread for one tile */
    ADDR_SHARED = 3,
    ADDR_GLOBAL = 1,
    ADDR_CONST = 4,
    MAX_VECTOR = 16,        /* elements of one global access (16 bytes of i8) */
    MAX_VECTOR_PARTS = 4    /* PTX components of one access (.v4) */
};

/* The lane and warp part of the element index of one layout. */
typedef struct thread_part {
    int nbits[TJP_NIN];
    uint32_t lane[TJP_MAX_BITS], warp[TJP_MAX_BITS];
    LLVMValueRef index;
} thread_part;

/* Reads of a tile whose registers are read where they are first used
 * (tjj_gpu_defer_ldmatrix_reads, tjj_gpu_defer_element_reads): what each
 * group's ldmatrix, or each register's load, needs. */
typedef struct deferred_reads {
    tjp_layout at;              /* ldmatrix: the address layout, in the buffer's index space;
                                   element loads: the tile's layout */
    tjp_swizzle swizzle;        /* element loads: the buffer's */
    LLVMValueRef base, thread;  /* the buffer (i8 shared pointer); the thread part of the index */
    int matrices, trans, elem_bytes; /* matrices 0: element loads */
    LLVMTypeRef vt;
} deferred_reads;

typedef struct codegen {
    tjj_gpu_gen g;              /* shared with math.c */
    LLVMBasicBlockRef entry;    /* thread-invariant values; branches to the body at the end */
    LLVMBuilderRef eb;          /* appends to entry */
    LLVMValueRef tid, lane, warp, pid[3], nprog[3], assert_info;
    LLVMValueRef logical_programs; /* a persistent kernel's hidden parameter (jit.h) */
    LLVMValueRef stream_k_workspace; /* a stream-K kernel's hidden parameter (stream_k.c) */
    int num_warps, warp_bits;
    int sm;                     /* the target: instructions are gated on it */
    int arch_specific;          /* sm_90a: wgmma */

    LLVMValueRef *ssa;          /* per value id: a scalar */
    LLVMValueRef **regs;        /* per value id: a tile's registers */
    deferred_reads **deferred;  /* per value id: registers made when first read, or NULL */
    int32_t *uses;              /* per value id: how many operands read it */

    thread_part *parts;
    int nparts, parts_cap;

    LLVMValueRef smem;          /* the dynamic shared array, once an op uses it */
    LLVMValueRef *tma_phase;    /* per ring: the i32 alloca of its slots' parities (tma.c) */
    int role;                   /* warp specialization (warp_spec.c): the side being
                                   emitted, TJP_ROLE_*; 0: not specialized */
    LLVMValueRef *empty_phase;  /* per TMA ring: the producer's parities of its empty barriers */
    LLVMValueRef *unreleased;   /* per TMA ring: the slot an in-flight wgmma reads, or -1 */
    unsigned tma_first_param;   /* the first tensor map's parameter */
    LLVMValueRef cluster_rank, peer_rank; /* block pairs (cluster.c): this block's rank, the other's, */
    LLVMValueRef *peer_ssa;     /*   and per value id the peer's value of a peer op's result */
    tjj_bounds_gen *bounds;     /* TJIT_CHECK_BOUNDS: every access is checked */
    LLVMBasicBlockRef while_exit; /* the innermost WHILE being emitted: where its
                                   CONDITION leaves to (NULL once it did) */
} codegen;

#define FAIL(c, ...) tjj_gpu_fail(&(c)->g, __VA_ARGS__)

/* A global address: a pointer plus a constant byte offset. */
typedef struct address {
    LLVMValueRef base;
    int64_t offset;
} address;

/* --- small helpers --------------------------------------------------------------- */

static inline LLVMValueRef c_i32(const codegen *c, int64_t v) { return LLVMConstInt(c->g.ty.t_i32, (unsigned long long)v, 1); }
static inline LLVMValueRef c_i64(const codegen *c, int64_t v) { return LLVMConstInt(c->g.ty.t_i64, (unsigned long long)v, 1); }

static inline int log2_of(int64_t x)
{
    int n = 0;
    while ((1ll << n) < x)
        n++;
    return n;
}

static inline const tji_type *type_of(const codegen *c, int32_t id) { return tji_typeof(c->g.fn, id); }
static inline int rank_of(const codegen *c, int32_t id) { return type_of(c, id)->rank; }
static inline const tjp_layout *layout_of(const codegen *c, int32_t id) { return &c->g.plan->of[id]; }
static inline int nregs_of(const codegen *c, int32_t id) { return 1 << layout_of(c, id)->nbits[TJP_REG]; }

/* Bit position of dimension d in a row-major index of a tile of type t. */
static inline int dim_shift(const tji_type *t, int d)
{
    int s = 0;
    for (int i = d + 1; i < t->rank; i++)
        s += log2_of(t->shape[i]);
    return s;
}

static inline LLVMBasicBlockRef new_block(codegen *c, const char *name)
{
    return LLVMAppendBasicBlockInContext(c->g.ctx, c->g.func, name);
}

static inline LLVMValueRef and_cond(codegen *c, LLVMValueRef a, LLVMValueRef b)
{
    if (!a)
        return b;
    if (!b)
        return a;
    return LLVMBuildAnd(c->g.b, a, b, "");
}

/* NULL for a condition known to be true. */
static inline LLVMValueRef live_cond(LLVMValueRef v)
{
    if (v && LLVMIsAConstantInt(v) && LLVMConstIntGetZExtValue(v))
        return NULL;
    return v;
}

/* Register bits that select copies (zero bases). */
static inline uint32_t reg_dup_mask(const tjp_layout *L)
{
    uint32_t m = 0;
    for (int b = 0; b < L->nbits[TJP_REG]; b++)
        if (!L->basis[TJP_REG][b])
            m |= 1u << b;
    return m;
}

/* Lane (level TJP_LANE, 5 bits) or warp bits that select copies: zero bases,
 * and bits beyond the layout's own. */
static inline uint32_t thread_dup_mask(const codegen *c, const tjp_layout *L, int level)
{
    int width = level == TJP_LANE ? 5 : c->warp_bits;
    uint32_t m = 0;
    for (int b = 0; b < width; b++)
        if (b >= L->nbits[level] || !L->basis[level][b])
            m |= 1u << b;
    return m;
}

/* i1 is kept as a byte in shared memory. */
static inline LLVMTypeRef shared_type(const codegen *c, LLVMTypeRef t)
{
    return t == c->g.ty.t_i1 ? c->g.ty.t_i8 : t;
}

static inline uint64_t type_bytes(const codegen *c, LLVMTypeRef t)
{
    if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) /* a vector of shared accesses */
        return LLVMGetVectorSize(t) * type_bytes(c, LLVMGetElementType(t));
    if (t == c->g.ty.t_i1 || t == c->g.ty.t_i8)
        return 1;
    if (t == c->g.ty.t_i16 || t == c->g.ty.t_half)
        return 2;
    if (t == c->g.ty.t_i32 || t == c->g.ty.t_float)
        return 4;
    return 8; /* i64, double, pointers */
}

/* Element `index` of an array of t at byte offset `base` of shared memory. */

/* --- kernel.c -------------------------------------------------------------- */

TJI_FUNC void tjj_gpu_emit_op(codegen *c, int32_t opi);
TJI_FUNC tj_status tjj_gpu_generate(codegen *c, const char *entry_name);

/* --- registers.c ----------------------------------------------------------- */

TJI_FUNC int tjj_gpu_bases_independent(const tjp_layout *L);
TJI_FUNC LLVMValueRef tjj_gpu_thread_index(codegen *c, const tjp_layout *L);
TJI_FUNC LLVMValueRef tjj_gpu_element_index(codegen *c, const tjp_layout *L, uint32_t r);
TJI_FUNC LLVMValueRef tjj_gpu_coordinate(codegen *c, const tji_type *t, LLVMValueRef index, int d);
TJI_FUNC LLVMValueRef tjj_gpu_owner_cond(codegen *c, const tjp_layout *L);
TJI_FUNC LLVMValueRef tjj_gpu_thread0_cond(codegen *c);
TJI_FUNC LLVMValueRef *tjj_gpu_regs_for(codegen *c, int32_t id);
TJI_FUNC LLVMValueRef tjj_gpu_reg(codegen *c, int32_t id, uint32_t r);
TJI_FUNC int tjj_gpu_check_same_layout(codegen *c, int32_t operand, int32_t result);
TJI_FUNC void tjj_gpu_emit_elementwise(codegen *c, const tji_op *op);
TJI_FUNC void tjj_gpu_emit_const(codegen *c, const tji_op *op);
TJI_FUNC void tjj_gpu_emit_arange(codegen *c, const tji_op *op);
TJI_FUNC void tjj_gpu_emit_splat(codegen *c, const tji_op *op);
TJI_FUNC void tjj_gpu_emit_shape_op(codegen *c, const tji_op *op);
TJI_FUNC void tjj_gpu_emit_assume(codegen *c, const tji_op *op);

/* --- shared.c -------------------------------------------------------------- */

TJI_FUNC LLVMValueRef tjj_gpu_shared(codegen *c);
TJI_FUNC const tjp_shared_step *tjj_gpu_step(codegen *c, int kind);
TJI_FUNC void tjj_gpu_barrier(codegen *c, int flag);
TJI_FUNC void tjj_gpu_shared_store(codegen *c, LLVMValueRef smem, uint64_t base, LLVMValueRef index, LLVMValueRef v);
TJI_FUNC LLVMValueRef tjj_gpu_shared_load(codegen *c, LLVMValueRef smem, uint64_t base, LLVMTypeRef t, LLVMValueRef index);
TJI_FUNC LLVMValueRef tjj_gpu_shuffle(codegen *c, int butterfly, LLVMValueRef v, LLVMValueRef arg);
TJI_FUNC LLVMValueRef tjj_gpu_broadcast_scalar(codegen *c, LLVMValueRef v);
TJI_FUNC void tjj_gpu_broadcast_from_owners(codegen *c, const tjp_layout *L, LLVMValueRef *vals);
TJI_FUNC LLVMValueRef tjj_gpu_swizzled(codegen *c, LLVMBuilderRef b, const tjp_swizzle *S, LLVMValueRef v, uint32_t bits);
TJI_FUNC LLVMValueRef tjj_gpu_swizzled_thread_index(codegen *c, const tjp_swizzle *S, const tjp_layout *L);
TJI_FUNC LLVMValueRef tjj_gpu_swizzled_index(codegen *c, const tjp_swizzle *S, LLVMValueRef thread, const tjp_layout *L, uint32_t r);
/* The registers of layout Ld read by ldmatrix.x<matrices>[.trans] from the
 * shared buffer at base (i8 pointer) under swizzle S (CONVERT steps and
 * ring reads whose plan says ldmatrix). The deferred form reads each
 * instruction's registers of value id only where one of them is first
 * read (tjj_gpu_reg): a dot then loads each step's fragments just before
 * its mma instructions, not the whole tile first. */
TJI_FUNC void tjj_gpu_ldmatrix_reads(codegen *c, const tjp_swizzle *S, int matrices, int trans, LLVMValueRef base,
                                     const tjp_layout *Ld, LLVMTypeRef vt, LLVMValueRef *out);
TJI_FUNC void tjj_gpu_defer_ldmatrix_reads(codegen *c, int32_t id, const tjp_swizzle *S, int matrices, int trans,
                                           LLVMValueRef base, LLVMTypeRef vt);
/* Value id's registers of layout L, each loaded from the shared buffer at
 * base (i8 pointer) under swizzle S only where it is first read: a dot
 * that takes them as its wgmma's register operand loads each K step's
 * fragment just before that step's instructions. */
TJI_FUNC void tjj_gpu_defer_element_reads(codegen *c, int32_t id, const tjp_swizzle *S, LLVMValueRef base);
/* The deferred read of value id's register r, into its registers. */
TJI_FUNC void tjj_gpu_deferred_read(codegen *c, int32_t id, uint32_t r);
TJI_FUNC void tjj_gpu_emit_convert(codegen *c, const tji_op *op);
/* One column block of a 2-D tile, written alone (a TMA store staged box
 * by box, tma.c): the registers whose elements lie in columns
 * [box * box_cols, (box + 1) * box_cols) of the tile's cols, each at its
 * index within the box (box_elems of them) plus slot * box_elems. Which
 * box an element lies in must be its register's alone (the plan checked:
 * tjp_tma_store). */
typedef struct tjj_box_write {
    int32_t cols, box_cols;
    int box, slot;
    uint32_t box_elems;
} tjj_box_write;
/* Tile x written to the shared buffer at offset under swizzle S, vector
 * elements at a time (a CONVERT's writes, a TMA store's staging); only
 * one box of it where `only` is not NULL. */
TJI_FUNC void tjj_gpu_write_tile(codegen *c, int32_t x, const tjp_swizzle *S, uint64_t offset, int vector,
                                 const tjj_box_write *only);

/* --- memory.c -------------------------------------------------------------- */

TJI_FUNC LLVMValueRef tjj_gpu_bounds_cond(codegen *c, int32_t ptr, address at, const tji_type *t, int v, LLVMValueRef cond);
TJI_FUNC void tjj_gpu_emit_load(codegen *c, const tji_op *op);
TJI_FUNC void tjj_gpu_emit_store(codegen *c, const tji_op *op);

/* --- atomics.c ------------------------------------------------------------- */

TJI_FUNC LLVMValueRef tjj_gpu_atomic_cas(codegen *c, LLVMValueRef ptr, LLVMValueRef cmp, LLVMValueRef v, LLVMValueRef *ok);
TJI_FUNC void tjj_gpu_emit_atomic(codegen *c, const tji_op *op);

/* --- reduce.c -------------------------------------------------------------- */

TJI_FUNC void tjj_gpu_emit_reduce(codegen *c, const tji_op *op);
TJI_FUNC void tjj_gpu_emit_cumsum(codegen *c, const tji_op *op);

/* --- control.c ------------------------------------------------------------- */

TJI_FUNC void tjj_gpu_emit_for(codegen *c, int32_t opi);
TJI_FUNC void tjj_gpu_emit_if(codegen *c, int32_t opi);
TJI_FUNC void tjj_gpu_emit_while(codegen *c, int32_t opi);
TJI_FUNC void tjj_gpu_emit_condition(codegen *c, int32_t opi);
TJI_FUNC void tjj_gpu_emit_region(codegen *c, int32_t rid, const tji_op **yield);

/* --- dot.c ----------------------------------------------------------------- */

TJI_FUNC void tjj_gpu_emit_dot(codegen *c, const tji_op *op);
TJI_FUNC void tjj_gpu_emit_stream_k_arrive(codegen *c, const tji_op *op);
TJI_FUNC void tjj_gpu_emit_stream_k_add(codegen *c, const tji_op *op);
/* wgmma.c: a dot of the WGMMA form; after FOR op opi, the wait for the
 * wgmma groups its body's asynchronous dots left in flight. */
TJI_FUNC void tjj_gpu_emit_wgmma(codegen *c, const tji_op *op, const tjp_dot_choice *ch);
TJI_FUNC void tjj_gpu_wgmma_after_loop(codegen *c, int32_t opi);
/* Whether carried value k of FOR op opi is the accumulator of a wgmma that
 * overwrites it in the first iteration (the loop enters with it undefined). */
TJI_FUNC int tjj_gpu_wgmma_skips_init(codegen *c, int32_t opi, int k);

/* --- async.c: the rings of pipelined loads ------------------------------------------ */

TJI_FUNC void tjj_gpu_emit_async_copy(codegen *c, const tji_op *op);
TJI_FUNC void tjj_gpu_emit_async_commit(codegen *c);
TJI_FUNC void tjj_gpu_emit_async_wait(codegen *c, const tji_op *op);
TJI_FUNC void tjj_gpu_emit_local_load(codegen *c, const tji_op *op);

/* --- tma.c: rings filled by the tensor-memory accelerator ------------------------- */

/* How many tensor maps the plan's TMA rings and stores use (their parameters). */
TJI_FUNC int tjj_gpu_tma_count(const tjp_layout_plan *plan);
/* Parameters first .. first+n-1 of kernel f become the 128-byte maps. */
TJI_FUNC void tjj_gpu_tma_params(codegen *c, LLVMValueRef f, unsigned first, int n);
/* At the kernel's start: the rings' mbarriers and phase words. */
TJI_FUNC void tjj_gpu_tma_setup(codegen *c);
TJI_FUNC void tjj_gpu_emit_tma_copy(codegen *c, const tji_op *op, const tjp_ring *R);
/* A STORE whose plan step is TMA_STORE: the block staged in shared memory,
 * then thread 0's bulk tensor stores. */
TJI_FUNC void tjj_gpu_emit_tma_store(codegen *c, const tji_op *op, const tjp_shared_step *step);
/* After FOR opi: where it is the tile loop of a TMA store left in flight,
 * thread 0 waits for the store's writes. */
TJI_FUNC void tjj_gpu_tma_store_after_loop(codegen *c, int32_t opi);
/* The copy's "the iteration exists" (NULL: always); the copy issued by the
 * thread where go (i1) holds, arriving on its slot's full barrier. */
TJI_FUNC LLVMValueRef tjj_gpu_tma_exists(codegen *c, const tji_op *op);
/* shared (i1, or NULL outside block pairs): the peer copies the same box,
 * so this block issues half of it to both (cluster.c). */
TJI_FUNC void tjj_gpu_issue_tma_copy(codegen *c, const tji_op *op, const tjp_ring *R, LLVMValueRef go,
                                     LLVMValueRef shared);
/* The empty mbarrier of ring R's slot (an i32 value): its shared address. */
TJI_FUNC LLVMValueRef tjj_gpu_tma_empty_barrier(codegen *c, const tjp_ring *R, LLVMValueRef slot);
/* The parity to wait for at slot's bit of the phase word at word_at (an
 * i32 alloca), which flips. */
TJI_FUNC LLVMValueRef tjj_gpu_next_parity(codegen *c, LLVMValueRef word_at, LLVMValueRef slot);
/* Per ring (malloc'ed): an i32 alloca in the entry block starting at init,
 * one per ring family (its members share it); NULL for other rings. */
TJI_FUNC LLVMValueRef *tjj_gpu_ring_words(codegen *c, int32_t init, const char *name);
/* Spins until mbarrier bar (shared address) completes the phase of parity. */
TJI_FUNC void tjj_gpu_mbarrier_wait(codegen *c, LLVMValueRef bar, LLVMValueRef parity);
/* Inline PTX with side effects on memory (at most 8 operands). */
TJI_FUNC LLVMValueRef tjj_gpu_ptx(codegen *c, LLVMTypeRef ret, const char *text, const char *constraints,
                                  LLVMValueRef *args, unsigned nargs);

/* --- warp_spec.c: producer and consumer warps ------------------------------------- */

/* cluster.c — block pairs (its essay). Setup: the ranks, and the cluster
 * barrier after the mbarriers' set-up. peer_same: copy (an op index)
 * reads the box the peer reads (i1). release_in_peer: arrive on the
 * peer's copy of barrier bar where on (i32). producer_tail: the producer
 * waits for both blocks' last releases. */
TJI_FUNC void tjj_gpu_cluster_setup(codegen *c);
TJI_FUNC LLVMValueRef tjj_gpu_peer_same(codegen *c, int32_t copy);
/* After the producer's own op opi, a peer op: the peer's value of it. */
TJI_FUNC void tjj_gpu_emit_peer(codegen *c, int32_t opi);
TJI_FUNC void tjj_gpu_release_in_peer(codegen *c, LLVMValueRef bar, LLVMValueRef on);
TJI_FUNC void tjj_gpu_producer_tail(codegen *c);

/* In tjj_gpu_tma_setup: the phase words and unreleased slots. */
TJI_FUNC void tjj_gpu_warp_spec_setup(codegen *c);
/* The kernel's body as two sides, after the set-up (kernel.c). */
TJI_FUNC void tjj_gpu_emit_specialized(codegen *c);
/* Does the side being emitted run op opi? */
TJI_FUNC int tjj_gpu_runs(const codegen *c, int32_t opi);
/* Does the side being emitted compute value id (a carried value)? */
TJI_FUNC int tjj_gpu_computes(const codegen *c, int32_t id);
/* bar.sync among the warps that run the side being emitted. */
TJI_FUNC void tjj_gpu_bar_sync(codegen *c);
/* The producer's TMA copy: waits for the slot's empty barrier, then issues. */
TJI_FUNC void tjj_gpu_produce(codegen *c, const tji_op *op, const tjp_ring *R);
/* After a consumer's wgmma wait: ring R's slot is read (async: by a group
 * still in flight, released at the next wait; else released now). */
TJI_FUNC void tjj_gpu_release_after_wait(codegen *c, const tjp_ring *R, LLVMValueRef slot, int async);
/* After the final wait of a loop: the slots still unreleased. */
TJI_FUNC void tjj_gpu_release_pending(codegen *c, const tjp_ring *R);
/* The wait of LOCAL_LOAD op for its slot's copy. */
TJI_FUNC void tjj_gpu_tma_wait(codegen *c, const tji_op *op, const tjp_ring *R);
/* What each map holds, for the launch (malloc'ed, *n of them; NULL if none). */
TJI_FUNC tjj_tmap_info *tjj_gpu_tma_maps(const tji_func *fn, const tjp_layout_plan *plan, int *n);

/* --- debug.c --------------------------------------------------------------- */

TJI_FUNC void tjj_gpu_emit_print(codegen *c, const tji_op *op);
TJI_FUNC void tjj_gpu_emit_assert(codegen *c, const tji_op *op);
TJI_FUNC void tjj_gpu_emit_assume_true(codegen *c, const tji_op *op);

#endif
