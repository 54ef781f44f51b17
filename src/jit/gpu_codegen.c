/* SPDX-License-Identifier: MIT */
/*
 * gpu_codegen.c — tile IR + layout plan to PTX, through LLVM's NVPTX back end.
 *
 * One program instance is one CTA of num_warps * 32 threads, and the kernel
 * is one LLVM function with the ptx_kernel calling convention (LLVM 22
 * ignores nvvm.annotations for IR built in memory) and "nvvm.reqntid" for
 * the block size. Its parameters are jit.h's: the kernel's own (pointers as
 * `ptr addrspace(1)`, so every access is ld.global/st.global/atom.global;
 * scalars as the CPU ABI passes them), then the assert record. Program ids
 * are ctaid, their counts nctaid; tid.x gives lane = tid & 31, warp = tid >> 5.
 *
 * Values. A scalar (rank 0) is one LLVM value that every thread computes
 * alike. A tile is an array of LLVM values, one per register of its layout
 * (the plan's tjp_layout, layout.h): register r of lane l of warp w holds the
 * element whose row-major index is L(r, l, w), the XOR of the bases that the
 * bits of r, l and w select. The lane and warp part of that index is computed
 * once per layout in the entry block; the register part is a constant, so
 * ARANGE (start + coordinate), masks and offsets fold to few instructions.
 * Tile dims are powers of two, so a coordinate is a bit field of the index.
 *
 * Copies. A zero basis means a copy: registers selected by such bits are
 * copies of a register of the same thread (computed once, then reused), lanes
 * and warps selected by them hold the same elements as their twins. Sinks
 * that must happen once (stores, atomics, prints) are done only by the owning
 * slot, the one whose duplicated bits are all 0; an atomic's old value is then
 * handed to the copies (a shuffle within a warp, shared memory across warps).
 *
 * Ops. Element-wise ops work register by register (gpu_math.c has the
 * arithmetic). The layout pass (passes.h) made BROADCAST, EXPAND_DIMS,
 * RESHAPE and PERMUTE operands hold, in the same register of the same
 * thread, the element the result needs; that is checked here on the layouts'
 * bases (the maps are linear) and then they are register copies. CONVERT is a
 * copy or a permutation of registers where the threads hold the same
 * elements, else it goes through shared memory, at addresses swizzled so
 * that neither the writes nor the reads wait on bank conflicts (swizzle.c
 * chooses). A masked LOAD/STORE is one predicated instruction, so a
 * masked-off address is never touched; registers that the plan groups into
 * a vector (the coalescing pass's width) are one access of up to 16 bytes
 * under one predicate, and a run of consecutive addresses shares one
 * address register. REDUCE combines registers along the axis, then lanes
 * (butterfly shuffles), then warps (partials through shared memory, each
 * thread combining them in a fixed order, or for row reductions over 8+
 * warps a part per lane and butterflies); every step combines
 * symmetrically, so all threads that hold one result hold it bit for bit. CUMSUM goes through shared memory: each
 * element is the sequential sum of its prefix, in the CPU's order. FOR and
 * IF are real branches on uniform scalars, with phis per register.
 *
 * Memory order: a load after a store, or an atomic after a store, sees
 * what other threads stored (a barrier in between; see order_after_stores).
 * A store or atomic after a load that may read what it overwrites, from
 * another thread, waits for that load (a barrier; see order_after_loads).
 *
 * Shared memory is one static array, sized to the largest single use; each
 * use begins with a barrier (earlier readers are done; not needed before
 * the first read in a kernel outside loops) and has one between its writes
 * and its reads. More than 48 KiB is a compile error naming the op.
 *
 * Device asserts do not trap (a trap would poison the CUDA context): the
 * first failing thread wins a compare-and-swap on the record's flag and
 * writes the op index and program id; the launch reports it afterwards.
 *
 * The accuracy of the math functions is tabulated at the top of gpu_math.c.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "bounds.h"
#include "gpu_backend.h"

enum {
    STORED_PLAIN = 1,       /* a store */
    STORED_ATOMIC = 2,      /* an atomic */
    SHARED_LIMIT = 49152,   /* static shared memory a kernel may use */
    MAX_REGS_LOG2 = 10,     /* at most 1024 registers per thread for one tile */
    ADDR_SHARED = 3,
    ADDR_GLOBAL = 1,
    ADDR_CONST = 4,
    MAX_VECTOR = 16,        /* elements of one global access (16 bytes of i8) */
    MAX_VECTOR_PARTS = 4    /* PTX components of one access (.v4) */
};

static const char *const TRIPLE = "nvptx64-nvidia-cuda";

/* The lane and warp part of the element index of one layout. */
typedef struct thread_part {
    int nbits[TJP_NIN];
    uint32_t lane[TJP_MAX_BITS], warp[TJP_MAX_BITS];
    LLVMValueRef index;
} thread_part;

typedef struct codegen {
    tjj_gpu_gen g;              /* shared with gpu_math.c */
    LLVMBasicBlockRef entry;    /* thread-invariant values; branches to the body at the end */
    LLVMBuilderRef eb;          /* appends to entry */
    LLVMValueRef tid, lane, warp, pid[3], nprog[3], assert_info;
    int num_warps, warp_bits;

    LLVMValueRef *ssa;          /* per value id: a scalar */
    LLVMValueRef **regs;        /* per value id: a tile's registers */
    int32_t *uses;              /* per value id: how many operands read it */

    thread_part *parts;
    int nparts, parts_cap;

    LLVMValueRef smem;          /* a placeholder until the size is known */
    uint64_t smem_bytes;
    int stored;                 /* STORED_* since the last barrier */
    tjp_provenance prov;        /* pointers' buffers, for order_after_loads */
    int32_t *loads;             /* LOAD ops emitted since the last barrier */
    int32_t nloads;
    uint8_t *is_load_pending;   /* per op: in loads */
    int smem_read;              /* shared memory has been read (emission order) */
    int loop_depth;             /* FOR bodies around the op being emitted */
    tjj_bounds_gen *bounds;     /* TJIT_CHECK_BOUNDS: every access is checked */
} codegen;

/* --- errors ------------------------------------------------------------------- */

void tjj_gpu_fail(tjj_gpu_gen *g, const char *fmt, ...)
{
    if (g->status != TJ_OK)
        return;
    va_list ap;
    va_start(ap, fmt);
    g->status = tji_verror_at(g->fn, g->cur_op, TJ_ERR_COMPILE, fmt, ap);
    va_end(ap);
}

#define FAIL(c, ...) tjj_gpu_fail(&(c)->g, __VA_ARGS__)

/* --- small helpers --------------------------------------------------------------- */

static LLVMValueRef c_i32(const codegen *c, int64_t v) { return LLVMConstInt(c->g.t_i32, (unsigned long long)v, 1); }
static LLVMValueRef c_i64(const codegen *c, int64_t v) { return LLVMConstInt(c->g.t_i64, (unsigned long long)v, 1); }

static int log2_of(int64_t x)
{
    int n = 0;
    while ((1ll << n) < x)
        n++;
    return n;
}

static const tji_type *type_of(const codegen *c, int32_t id) { return tji_typeof(c->g.fn, id); }
static int rank_of(const codegen *c, int32_t id) { return type_of(c, id)->rank; }
static const tjp_layout *layout_of(const codegen *c, int32_t id) { return &c->g.plan->of[id]; }
static int nregs_of(const codegen *c, int32_t id) { return 1 << layout_of(c, id)->nbits[TJP_REG]; }

/* Bit position of dimension d in a row-major index of a tile of type t. */
static int dim_shift(const tji_type *t, int d)
{
    int s = 0;
    for (int i = d + 1; i < t->rank; i++)
        s += log2_of(t->shape[i]);
    return s;
}

static LLVMBasicBlockRef new_block(codegen *c, const char *name)
{
    return LLVMAppendBasicBlockInContext(c->g.ctx, c->g.func, name);
}

static LLVMValueRef and_cond(codegen *c, LLVMValueRef a, LLVMValueRef b)
{
    if (!a)
        return b;
    if (!b)
        return a;
    return LLVMBuildAnd(c->g.b, a, b, "");
}

/* NULL for a condition known to be true. */
static LLVMValueRef live_cond(LLVMValueRef v)
{
    if (v && LLVMIsAConstantInt(v) && LLVMConstIntGetZExtValue(v))
        return NULL;
    return v;
}

static LLVMValueRef call_intrinsic0(codegen *c, LLVMBuilderRef b, const char *name)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(c->g.mod, id, NULL, 0);
    return LLVMBuildCall2(b, LLVMIntrinsicGetType(c->g.ctx, id, NULL, 0), f, NULL, 0, "");
}

/* Branches on cond (NULL: always) into a new block; returns where to continue. */
static LLVMBasicBlockRef guard_begin(codegen *c, LLVMValueRef cond, const char *name)
{
    if (!cond)
        return NULL;
    LLVMBasicBlockRef then = new_block(c, name), cont = new_block(c, "cont");
    LLVMBuildCondBr(c->g.b, cond, then, cont);
    LLVMPositionBuilderAtEnd(c->g.b, then);
    return cont;
}

static void guard_end(codegen *c, LLVMBasicBlockRef cont)
{
    if (!cont)
        return;
    LLVMBuildBr(c->g.b, cont);
    LLVMPositionBuilderAtEnd(c->g.b, cont);
}

/* A value computed under `cond` (from block `before`), or `otherwise`. */
static LLVMValueRef guard_value(codegen *c, LLVMBasicBlockRef cont, LLVMBasicBlockRef before,
                                LLVMValueRef v, LLVMValueRef otherwise)
{
    if (!cont)
        return v;
    LLVMBasicBlockRef then_end = LLVMGetInsertBlock(c->g.b);
    guard_end(c, cont);
    LLVMValueRef phi = LLVMBuildPhi(c->g.b, LLVMTypeOf(v), "");
    LLVMValueRef vals[2] = {v, otherwise};
    LLVMBasicBlockRef blocks[2] = {then_end, before};
    LLVMAddIncoming(phi, vals, blocks, 2);
    return phi;
}

/* --- layouts ------------------------------------------------------------------------- */

static int same_layout(const tjp_layout *a, const tjp_layout *b)
{
    if (memcmp(a->nbits, b->nbits, sizeof a->nbits) != 0)
        return 0;
    for (int in = 0; in < TJP_NIN; in++)
        if (memcmp(a->basis[in], b->basis[in], sizeof(uint32_t) * (size_t)a->nbits[in]) != 0)
            return 0;
    return 1;
}

/* Register bits that select copies (zero bases). */
static uint32_t reg_dup_mask(const tjp_layout *L)
{
    uint32_t m = 0;
    for (int b = 0; b < L->nbits[TJP_REG]; b++)
        if (!L->basis[TJP_REG][b])
            m |= 1u << b;
    return m;
}

/* Lane (level TJP_LANE, 5 bits) or warp bits that select copies: zero bases,
 * and bits beyond the layout's own. */
static uint32_t thread_dup_mask(const codegen *c, const tjp_layout *L, int level)
{
    int width = level == TJP_LANE ? 5 : c->warp_bits;
    uint32_t m = 0;
    for (int b = 0; b < width; b++)
        if (b >= L->nbits[level] || !L->basis[level][b])
            m |= 1u << b;
    return m;
}

/* Are the non-zero bases linearly independent (no element held twice
 * except through zero bases)? */
static int bases_independent(const tjp_layout *L)
{
    uint32_t pivots[3 * TJP_MAX_BITS];
    int n = 0;
    for (int in = 0; in < TJP_NIN; in++)
        for (int b = 0; b < L->nbits[in]; b++) {
            uint32_t x = L->basis[in][b];
            if (!x)
                continue;
            for (int p = 0; p < n; p++)
                if ((x ^ pivots[p]) < x)
                    x ^= pivots[p];
            if (!x)
                return 0;
            int pos = n++;
            while (pos > 0 && pivots[pos - 1] < x) {
                pivots[pos] = pivots[pos - 1];
                pos--;
            }
            pivots[pos] = x;
        }
    return 1;
}

/* The lane/warp part of the element index of layout L, computed once in
 * the entry block. */
static LLVMValueRef thread_index(codegen *c, const tjp_layout *L)
{
    for (int i = 0; i < c->nparts; i++) {
        thread_part *p = &c->parts[i];
        if (p->nbits[TJP_LANE] == L->nbits[TJP_LANE] && p->nbits[TJP_WARP] == L->nbits[TJP_WARP] &&
            !memcmp(p->lane, L->basis[TJP_LANE], sizeof(uint32_t) * (size_t)L->nbits[TJP_LANE]) &&
            !memcmp(p->warp, L->basis[TJP_WARP], sizeof(uint32_t) * (size_t)L->nbits[TJP_WARP]))
            return p->index;
    }
    LLVMValueRef idx = c_i32(c, 0);
    LLVMValueRef in[TJP_NIN] = {NULL, c->lane, c->warp};
    /* Bits b..b+k-1 whose bases are one power of two doubling (a blocked
     * layout's field) move as one bit field: shift, mask, scale. */
    for (int level = TJP_LANE; level <= TJP_WARP; level++)
        for (int b = 0, k; b < L->nbits[level]; b += k) {
            uint32_t basis = L->basis[level][b];
            k = 1;
            if (!basis)
                continue;
            while (!(basis & (basis - 1)) && b + k < L->nbits[level] && basis << k &&
                   L->basis[level][b + k] == basis << k)
                k++;
            LLVMValueRef field = LLVMBuildAnd(c->eb, LLVMBuildLShr(c->eb, in[level], c_i32(c, b), ""),
                                              c_i32(c, (1 << k) - 1), "");
            idx = LLVMBuildXor(c->eb, idx, LLVMBuildMul(c->eb, field, c_i32(c, basis), ""), "");
        }
    if (c->nparts == c->parts_cap) {
        c->parts_cap = c->parts_cap ? 2 * c->parts_cap : 8;
        c->parts = tjs_xrealloc(c->parts, (size_t)c->parts_cap * sizeof *c->parts);
    }
    thread_part *p = &c->parts[c->nparts++];
    memset(p, 0, sizeof *p);
    memcpy(p->nbits, L->nbits, sizeof p->nbits);
    memcpy(p->lane, L->basis[TJP_LANE], sizeof(uint32_t) * (size_t)L->nbits[TJP_LANE]);
    memcpy(p->warp, L->basis[TJP_WARP], sizeof(uint32_t) * (size_t)L->nbits[TJP_WARP]);
    p->index = idx;
    return idx;
}

/* Row-major index (i32) of the element in register r of this thread. */
static LLVMValueRef element_index(codegen *c, const tjp_layout *L, uint32_t r)
{
    return LLVMBuildXor(c->g.b, thread_index(c, L), c_i32(c, tjp_layout_apply(L, r, 0, 0)), "");
}

static LLVMValueRef coordinate(codegen *c, const tji_type *t, LLVMValueRef index, int d)
{
    LLVMValueRef v = LLVMBuildLShr(c->g.b, index, c_i32(c, dim_shift(t, d)), "");
    return LLVMBuildAnd(c->g.b, v, c_i32(c, t->shape[d] - 1), "");
}

/* True in the thread that owns its elements of layout L (NULL: every thread). */
static LLVMValueRef owner_cond(codegen *c, const tjp_layout *L)
{
    uint32_t lane_dup = thread_dup_mask(c, L, TJP_LANE), warp_dup = thread_dup_mask(c, L, TJP_WARP);
    LLVMValueRef cond = NULL;
    if (lane_dup)
        cond = LLVMBuildICmp(c->eb, LLVMIntEQ, LLVMBuildAnd(c->eb, c->lane, c_i32(c, lane_dup), ""),
                             c_i32(c, 0), "");
    if (warp_dup) {
        LLVMValueRef w = LLVMBuildICmp(c->eb, LLVMIntEQ, LLVMBuildAnd(c->eb, c->warp, c_i32(c, warp_dup), ""),
                                       c_i32(c, 0), "");
        cond = cond ? LLVMBuildAnd(c->eb, cond, w, "") : w;
    }
    return cond;
}

static LLVMValueRef thread0_cond(codegen *c)
{
    return LLVMBuildICmp(c->eb, LLVMIntEQ, c->tid, c_i32(c, 0), "");
}

/* --- values ------------------------------------------------------------------------ */

static LLVMValueRef *regs_for(codegen *c, int32_t id)
{
    if (!c->regs[id])
        c->regs[id] = tjs_xcalloc((size_t)nregs_of(c, id), sizeof(LLVMValueRef));
    return c->regs[id];
}

/* Register r of a tile, or the scalar (any r). */
static LLVMValueRef reg(codegen *c, int32_t id, uint32_t r)
{
    const tji_type *t = type_of(c, id);
    LLVMValueRef v = NULL;
    if (t->rank == 0)
        v = c->ssa[id];
    else if (c->regs[id] && r < (uint32_t)nregs_of(c, id))
        v = c->regs[id][r];
    if (!v) {
        FAIL(c, "internal error: value %d is read before it is computed", (int)id);
        v = LLVMGetPoison(tjj_gpu_value_type(&c->g, t));
    }
    return v;
}

/* The operand must be in the result's layout (the plan's promise). */
static int check_same_layout(codegen *c, int32_t operand, int32_t result)
{
    if (rank_of(c, operand) == 0 && rank_of(c, result) == 0)
        return 1;
    if (rank_of(c, operand) == 0 || rank_of(c, result) == 0 ||
        !same_layout(layout_of(c, operand), layout_of(c, result))) {
        FAIL(c, "internal error: operand %d is not in the layout of value %d", (int)operand, (int)result);
        return 0;
    }
    return 1;
}

/* --- shared memory and warp primitives ------------------------------------------------- */

/* The shared array, for a use of `bytes`; fails past the limit. */
static LLVMValueRef shared(codegen *c, uint64_t bytes)
{
    if (bytes > SHARED_LIMIT) {
        FAIL(c, "needs %llu bytes of shared memory; the limit is %d (use a smaller tile)",
             (unsigned long long)bytes, SHARED_LIMIT);
        bytes = SHARED_LIMIT;
    }
    if (bytes > c->smem_bytes)
        c->smem_bytes = bytes;
    if (!c->smem)
        c->smem = LLVMAddGlobalInAddressSpace(c->g.mod, LLVMArrayType2(c->g.t_i8, 1), "tjk_shared_placeholder",
                                              ADDR_SHARED);
    return c->smem;
}

/* bar.sync 0: every thread of the CTA, at a point all of them reach. It
 * also makes each thread's earlier memory accesses, global ones included,
 * visible to the others. */
static void barrier(codegen *c)
{
    LLVMValueRef zero = c_i32(c, 0);
    tjj_gpu_intrinsic(&c->g, "llvm.nvvm.barrier.cta.sync.aligned.all", NULL, 0, &zero, 1);
    c->stored = 0;
    for (int32_t i = 0; i < c->nloads; i++)
        c->is_load_pending[c->loads[i]] = 0;
    c->nloads = 0;
}

static void load_pending(codegen *c, int32_t opi)
{
    if (c->is_load_pending[opi])
        return;
    c->is_load_pending[opi] = 1;
    c->loads[c->nloads++] = opi;
}

/* The pending loads, copied (malloc'ed; *n of them), to add back later. */
static int32_t *loads_save(const codegen *c, int32_t *n)
{
    *n = c->nloads;
    int32_t *copy = tjs_xmalloc(sizeof(int32_t) * ((size_t)c->nloads + 1));
    memcpy(copy, c->loads, sizeof(int32_t) * (size_t)c->nloads);
    return copy;
}

static void loads_restore(codegen *c, int32_t *saved, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        load_pending(c, saved[i]);
    free(saved);
}

/* The loads of region rid and the regions inside it: pending at the top of
 * a loop body, since the previous trip did them. */
static void region_loads(codegen *c, int32_t rid)
{
    const tji_region *region = &c->g.fn->regions[rid];
    for (int32_t i = 0; i < region->nops; i++) {
        const tji_op *op = &c->g.fn->ops[region->ops[i]];
        if (op->code == TJI_LOAD)
            load_pending(c, region->ops[i]);
        for (int k = 0; k < 2; k++)
            if (op->region[k] >= 0)
                region_loads(c, op->region[k]);
    }
}

/* Before a shared-memory use writes the buffer: a barrier, so that the
 * readers of an earlier use are done with it — unless nothing has read
 * shared memory yet and no loop can bring an earlier use back. */
static void shared_begin(codegen *c)
{
    if (c->smem_read || c->loop_depth)
        barrier(c);
}

/* Before a load (kinds: STORED_PLAIN | STORED_ATOMIC) or an atomic
 * (STORED_PLAIN): what another thread wrote earlier in the program must be
 * seen, as in the CPU's program order, so such a write since the last
 * barrier asks for one. Atomics need none among themselves: each is one
 * indivisible step on the memory. A store after a load gets none (a
 * barrier in nearly every kernel): a load and a store of one element in
 * the same layout are in one thread, and a stored value that came through
 * a conversion was ordered by its barriers. A store that may overwrite what
 * another thread loaded (an in-place reversal) is ordered by
 * order_after_loads below. */
static void order_after_stores(codegen *c, int kinds)
{
    if (c->stored & kinds)
        barrier(c);
}

/* Before a store or an atomic to ptr: a load since the last barrier that
 * may read an address this write changes (alias.c), in another thread
 * than the one writing it, must be done first, as in the CPU's program
 * order (an in-place reversal or transpose). The write needs no barrier
 * where the load is of the same address expression, in the same layout,
 * each element held by one thread only: then every element is loaded and
 * overwritten by one thread, in order. */
static void order_after_loads(codegen *c, int32_t ptr)
{
    const tji_func *fn = c->g.fn;
    for (int32_t i = 0; i < c->nloads; i++) {
        const tji_op *load = &fn->ops[c->loads[i]];
        int32_t lptr = load->args[0];
        if (!tjp_may_alias(fn, &c->prov, lptr, ptr))
            continue;
        if (tji_typeof(fn, ptr)->rank > 0 && tji_typeof(fn, lptr)->rank > 0 &&
            tjp_same_value(fn, lptr, ptr)) {
            const tjp_layout *L = layout_of(c, load->result);
            if (same_layout(L, layout_of(c, ptr)) && !thread_dup_mask(c, L, TJP_LANE) &&
                !thread_dup_mask(c, L, TJP_WARP))
                continue;
        }
        barrier(c);
        return;
    }
}

/* The STORED_* kinds of the writes in region rid and the regions inside it. */
static int region_writes(const tji_func *fn, int32_t rid)
{
    const tji_region *region = &fn->regions[rid];
    int kinds = 0;
    for (int32_t i = 0; i < region->nops; i++) {
        const tji_op *op = &fn->ops[region->ops[i]];
        if (op->code == TJI_STORE)
            kinds |= STORED_PLAIN;
        else if (op->code == TJI_ATOMIC || op->code == TJI_ATOMIC_CAS)
            kinds |= STORED_ATOMIC;
        for (int k = 0; k < 2; k++)
            if (op->region[k] >= 0)
                kinds |= region_writes(fn, op->region[k]);
    }
    return kinds;
}

/* i1 is kept as a byte in shared memory. */
static LLVMTypeRef shared_type(const codegen *c, LLVMTypeRef t)
{
    return t == c->g.t_i1 ? c->g.t_i8 : t;
}

static uint64_t type_bytes(const codegen *c, LLVMTypeRef t)
{
    if (t == c->g.t_i1 || t == c->g.t_i8)
        return 1;
    if (t == c->g.t_i16 || t == c->g.t_half)
        return 2;
    if (t == c->g.t_i32 || t == c->g.t_float)
        return 4;
    return 8; /* i64, double, pointers */
}

/* Element `index` of an array of t at byte offset `base` of shared memory. */
static LLVMValueRef shared_at(codegen *c, LLVMValueRef smem, uint64_t base, LLVMTypeRef t, LLVMValueRef index)
{
    LLVMValueRef off = c_i64(c, (int64_t)base);
    LLVMValueRef start = LLVMBuildInBoundsGEP2(c->g.b, c->g.t_i8, smem, &off, 1, "");
    LLVMValueRef idx = LLVMBuildZExt(c->g.b, index, c->g.t_i64, "");
    return LLVMBuildInBoundsGEP2(c->g.b, shared_type(c, t), start, &idx, 1, "");
}

static void shared_store(codegen *c, LLVMValueRef smem, uint64_t base, LLVMValueRef index, LLVMValueRef v)
{
    LLVMTypeRef t = LLVMTypeOf(v);
    if (t == c->g.t_i1)
        v = LLVMBuildZExt(c->g.b, v, c->g.t_i8, "");
    LLVMValueRef st = LLVMBuildStore(c->g.b, v, shared_at(c, smem, base, t, index));
    LLVMSetAlignment(st, (unsigned)type_bytes(c, t));
}

static LLVMValueRef shared_load(codegen *c, LLVMValueRef smem, uint64_t base, LLVMTypeRef t, LLVMValueRef index)
{
    c->smem_read = 1;
    LLVMValueRef ld = LLVMBuildLoad2(c->g.b, shared_type(c, t), shared_at(c, smem, base, t, index), "");
    LLVMSetAlignment(ld, (unsigned)type_bytes(c, t));
    if (t == c->g.t_i1)
        return LLVMBuildICmp(c->g.b, LLVMIntNE, ld, LLVMConstNull(c->g.t_i8), "");
    return ld;
}

/* A warp shuffle of any value: butterfly (lane ^ arg) or indexed (lane arg).
 * Values are moved as one or two 32-bit words. */
static LLVMValueRef shuffle(codegen *c, int butterfly, LLVMValueRef v, LLVMValueRef arg)
{
    LLVMBuilderRef b = c->g.b;
    LLVMTypeRef t = LLVMTypeOf(v);
    const char *name = butterfly ? "llvm.nvvm.shfl.sync.bfly.i32" : "llvm.nvvm.shfl.sync.idx.i32";
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(c->g.mod, id, NULL, 0);
    LLVMTypeRef fty = LLVMIntrinsicGetType(c->g.ctx, id, NULL, 0);
    uint64_t bytes = type_bytes(c, t);
    LLVMTypeRef it = bytes == 8 ? c->g.t_i64 : LLVMIntTypeInContext(c->g.ctx, t == c->g.t_i1 ? 1 : (unsigned)(8 * bytes));
    LLVMValueRef bits = LLVMGetTypeKind(t) == LLVMPointerTypeKind ? LLVMBuildPtrToInt(b, v, it, "")
                        : LLVMGetTypeKind(t) == LLVMIntegerTypeKind ? v : LLVMBuildBitCast(b, v, it, "");
    LLVMValueRef out;
    if (bytes == 8) {
        LLVMValueRef lo = LLVMBuildTrunc(b, bits, c->g.t_i32, "");
        LLVMValueRef hi = LLVMBuildTrunc(b, LLVMBuildLShr(b, bits, c_i64(c, 32), ""), c->g.t_i32, "");
        LLVMValueRef a_lo[4] = {c_i32(c, -1), lo, arg, c_i32(c, 31)}, a_hi[4] = {c_i32(c, -1), hi, arg, c_i32(c, 31)};
        lo = LLVMBuildCall2(b, fty, f, a_lo, 4, "");
        hi = LLVMBuildCall2(b, fty, f, a_hi, 4, "");
        out = LLVMBuildOr(b, LLVMBuildZExt(b, lo, c->g.t_i64, ""),
                          LLVMBuildShl(b, LLVMBuildZExt(b, hi, c->g.t_i64, ""), c_i64(c, 32), ""), "");
    } else {
        LLVMValueRef w = it == c->g.t_i32 ? bits : LLVMBuildZExt(b, bits, c->g.t_i32, "");
        LLVMValueRef args[4] = {c_i32(c, -1), w, arg, c_i32(c, 31)};
        out = LLVMBuildCall2(b, fty, f, args, 4, "");
        if (it != c->g.t_i32)
            out = LLVMBuildTrunc(b, out, it, "");
    }
    if (LLVMGetTypeKind(t) == LLVMPointerTypeKind)
        return LLVMBuildIntToPtr(b, out, t, "");
    return LLVMGetTypeKind(t) == LLVMIntegerTypeKind ? out : LLVMBuildBitCast(b, out, t, "");
}

/* Every thread gets the scalar that thread 0 computed (v is garbage elsewhere). */
static LLVMValueRef broadcast_scalar(codegen *c, LLVMValueRef v)
{
    if (c->num_warps == 1)
        return shuffle(c, 0, v, c_i32(c, 0));
    LLVMValueRef smem = shared(c, type_bytes(c, LLVMTypeOf(v)));
    shared_begin(c);
    LLVMBasicBlockRef cont = guard_begin(c, thread0_cond(c), "bcast");
    shared_store(c, smem, 0, c_i32(c, 0), v);
    guard_end(c, cont);
    barrier(c);
    return shared_load(c, smem, 0, LLVMTypeOf(v), c_i32(c, 0));
}

/* vals (registers of layout L) are right in the owning slots; make every
 * copy hold its owner's value. */
static void broadcast_from_owners(codegen *c, const tjp_layout *L, const tji_type *t, LLVMValueRef *vals)
{
    uint32_t n = 1u << L->nbits[TJP_REG], rdup = reg_dup_mask(L);
    uint32_t lane_dup = thread_dup_mask(c, L, TJP_LANE), warp_dup = thread_dup_mask(c, L, TJP_WARP);
    if (warp_dup) {
        LLVMTypeRef vt = LLVMTypeOf(vals[0]);
        LLVMValueRef smem = shared(c, (uint64_t)tji_numel(t) * type_bytes(c, vt));
        shared_begin(c);
        LLVMBasicBlockRef cont = guard_begin(c, owner_cond(c, L), "share");
        for (uint32_t r = 0; r < n; r++)
            if (!(r & rdup))
                shared_store(c, smem, 0, element_index(c, L, r), vals[r]);
        guard_end(c, cont);
        barrier(c);
        for (uint32_t r = 0; r < n; r++)
            if (!(r & rdup))
                vals[r] = shared_load(c, smem, 0, vt, element_index(c, L, r));
    } else if (lane_dup) {
        LLVMValueRef src = LLVMBuildAnd(c->g.b, c->lane, c_i32(c, ~lane_dup & 31), "");
        for (uint32_t r = 0; r < n; r++)
            if (!(r & rdup))
                vals[r] = shuffle(c, 0, vals[r], src);
    }
    for (uint32_t r = 0; r < n; r++)
        if (r & rdup)
            vals[r] = vals[r & ~rdup];
}

/* --- element-wise, creation and shape ops ------------------------------------------------- */

static void emit_elementwise(codegen *c, const tji_op *op)
{
    int32_t id = op->result;
    if (rank_of(c, id) == 0) {
        LLVMValueRef a[3] = {0};
        for (int i = 0; i < op->nargs && i < 3; i++)
            a[i] = reg(c, op->args[i], 0);
        c->ssa[id] = tjj_gpu_elementwise(&c->g, op, a);
        return;
    }
    for (int i = 0; i < op->nargs; i++)
        if (!check_same_layout(c, op->args[i], id))
            return;
    const tjp_layout *L = layout_of(c, id);
    uint32_t n = (uint32_t)nregs_of(c, id), rdup = reg_dup_mask(L);
    LLVMValueRef *out = regs_for(c, id);
    for (uint32_t r = 0; r < n && c->g.status == TJ_OK; r++) {
        if (r & rdup) {
            out[r] = out[r & ~rdup];
            continue;
        }
        LLVMValueRef a[3] = {0};
        for (int i = 0; i < op->nargs && i < 3; i++)
            a[i] = reg(c, op->args[i], r);
        out[r] = tjj_gpu_elementwise(&c->g, op, a);
    }
}

static void emit_const(codegen *c, const tji_op *op)
{
    const tji_type *t = type_of(c, op->result);
    LLVMValueRef v;
    if (t->dtype == TJ_BF16) /* LLVM rounds the double to bfloat once */
        v = LLVMConstBitCast(LLVMConstReal(LLVMBFloatTypeInContext(c->g.ctx), op->fval), c->g.t_i16);
    else if (tjs_dtype_is_float(t->dtype))
        v = LLVMConstReal(tjj_gpu_dtype_type(&c->g, t->dtype), op->fval);
    else if (t->dtype == TJ_I1)
        v = LLVMConstInt(c->g.t_i1, op->ival != 0, 0);
    else
        v = LLVMConstInt(tjj_gpu_dtype_type(&c->g, t->dtype), (unsigned long long)op->ival, 1);
    if (t->rank == 0) {
        c->ssa[op->result] = v;
        return;
    }
    LLVMValueRef *out = regs_for(c, op->result);
    for (int r = 0; r < nregs_of(c, op->result); r++)
        out[r] = v;
}

static void emit_arange(codegen *c, const tji_op *op)
{
    const tjp_layout *L = layout_of(c, op->result);
    const tji_type *t = type_of(c, op->result);
    LLVMValueRef *out = regs_for(c, op->result);
    for (uint32_t r = 0; r < (uint32_t)nregs_of(c, op->result); r++)
        out[r] = LLVMBuildAdd(c->g.b, coordinate(c, t, element_index(c, L, r), 0), c_i32(c, op->ival), "");
}

static void emit_splat(codegen *c, const tji_op *op)
{
    LLVMValueRef s = reg(c, op->args[0], 0);
    LLVMValueRef *out = regs_for(c, op->result);
    for (int r = 0; r < nregs_of(c, op->result); r++)
        out[r] = s;
}

/* The element of the operand that element e of the result of a shape op is. */
static uint32_t shape_source(const tji_op *op, const tji_type *rt, const tji_type *st, uint32_t e)
{
    if (op->code == TJI_RESHAPE)
        return e;
    uint32_t coord[TJ_MAX_RANK] = {0}, src[TJ_MAX_RANK] = {0};
    for (int d = 0; d < rt->rank; d++)
        coord[d] = (e >> dim_shift(rt, d)) & (uint32_t)(rt->shape[d] - 1);
    switch (op->code) {
    case TJI_BROADCAST:
        for (int d = 0; d < st->rank; d++)
            src[d] = st->shape[d] == 1 ? 0 : coord[d];
        break;
    case TJI_EXPAND_DIMS:
        for (int d = 0, s = 0; d < rt->rank; d++)
            if (d != op->axis)
                src[s++] = coord[d];
        break;
    default: /* PERMUTE */
        for (int d = 0; d < rt->rank; d++)
            src[op->perm[d]] = coord[d];
        break;
    }
    uint32_t out = 0;
    for (int d = 0; d < st->rank; d++)
        out |= src[d] << dim_shift(st, d);
    return out;
}

/* BROADCAST, EXPAND_DIMS, RESHAPE, PERMUTE: register copies, once the
 * layouts are seen to make them so (the maps are linear: bases suffice). */
static void emit_shape_op(codegen *c, const tji_op *op)
{
    int32_t x = op->args[0], id = op->result;
    const tjp_layout *Ls = layout_of(c, x), *Lr = layout_of(c, id);
    const tji_type *st = type_of(c, x), *rt = type_of(c, id);
    int ok = st->rank > 0 && memcmp(Ls->nbits, Lr->nbits, sizeof Ls->nbits) == 0;
    for (int in = 0; ok && in < TJP_NIN; in++)
        for (int b = 0; ok && b < Lr->nbits[in]; b++)
            ok = shape_source(op, rt, st, Lr->basis[in][b]) == Ls->basis[in][b];
    if (!ok) {
        FAIL(c, "internal error: the layout plan does not make this op a register copy");
        return;
    }
    LLVMValueRef *out = regs_for(c, id);
    for (uint32_t r = 0; r < (uint32_t)nregs_of(c, id); r++)
        out[r] = reg(c, x, r);
}

/* --- shared memory without bank conflicts ------------------------------------------------ */

/* A CONVERT that threads cannot do by renaming registers, a REDUCE across
 * warps and a CUMSUM go through shared memory. Where each element is put
 * there — its swizzle, chosen so that neither the writes nor the reads of a
 * warp wait on bank conflicts — is the swizzle pass's decision
 * (tjp_shared_use_of, swizzle.c); this code executes it. The swizzle is
 * linear, so the index of register r is A(thread part) ^ A(register part):
 * the first computed once in the entry block, the second a constant. */

/* A(v) for the bits of v in `bits`, built with builder b. */
static LLVMValueRef swizzled(codegen *c, LLVMBuilderRef b, const tjp_swizzle *S, LLVMValueRef v, uint32_t bits)
{
    LLVMValueRef a = v;
    for (int i = 0; i < TJP_MAX_BITS; i++) {
        if (!S->flip[i] || !(bits >> i & 1))
            continue;
        LLVMValueRef bit = LLVMBuildAnd(b, LLVMBuildLShr(b, v, c_i32(c, i), ""), c_i32(c, 1), "");
        a = LLVMBuildXor(b, a, LLVMBuildMul(b, bit, c_i32(c, S->flip[i]), ""), "");
    }
    return a;
}

/* A(thread part of L's element index), in the entry block. */
static LLVMValueRef swizzled_thread_index(codegen *c, const tjp_swizzle *S, const tjp_layout *L)
{
    return swizzled(c, c->eb, S, thread_index(c, L), ~0u);
}

/* The swizzled shared-memory index of register r of layout L. */
static LLVMValueRef swizzled_index(codegen *c, const tjp_swizzle *S, LLVMValueRef thread, const tjp_layout *L,
                                   uint32_t r)
{
    return LLVMBuildXor(c->g.b, thread, c_i32(c, tjp_swizzle_apply(S, tjp_layout_apply(L, r, 0, 0))), "");
}

static void emit_convert(codegen *c, const tji_op *op)
{
    int32_t x = op->args[0], id = op->result;
    const tjp_layout *Ls = layout_of(c, x), *Ld = layout_of(c, id);
    const tji_type *t = type_of(c, id);
    uint32_t ns = (uint32_t)nregs_of(c, x), nd = (uint32_t)nregs_of(c, id);
    LLVMValueRef *out = regs_for(c, id);
    tjp_shared_use use;
    if (!tjp_shared_use_of(c->g.fn, c->g.plan, c->g.cur_op, &use)) {
        /* Same threads, same elements: registers are renamed. */
        for (uint32_t r = 0; r < nd; r++) {
            uint32_t e = tjp_layout_apply(Ld, r, 0, 0), s = 0;
            while (s < ns && tjp_layout_apply(Ls, s, 0, 0) != e)
                s++;
            if (s == ns) {
                FAIL(c, "internal error: a conversion in registers misses element %u", (unsigned)e);
                return;
            }
            out[r] = reg(c, x, s);
        }
        return;
    }
    LLVMTypeRef vt = tjj_gpu_value_type(&c->g, t);
    uint64_t bytes = type_bytes(c, shared_type(c, vt));
    LLVMValueRef smem = shared(c, (uint64_t)tji_numel(t) * bytes);
    uint32_t sdup = reg_dup_mask(Ls), ddup = reg_dup_mask(Ld);
    const tjp_swizzle *S = &use.swizzle;
    LLVMValueRef ts = swizzled_thread_index(c, S, Ls), td = swizzled_thread_index(c, S, Ld);
    shared_begin(c);
    for (uint32_t r = 0; r < ns; r++)
        if (!(r & sdup))
            shared_store(c, smem, 0, swizzled_index(c, S, ts, Ls, r), reg(c, x, r));
    barrier(c);
    for (uint32_t r = 0; r < nd; r++)
        out[r] = r & ddup ? out[r & ~ddup] : shared_load(c, smem, 0, vt, swizzled_index(c, S, td, Ld, r));
}

/* --- memory ------------------------------------------------------------------------------ */

/* Cache and eviction hints. A load or store with a cache operator or an L1
 * eviction priority (the builder allows one, never both, and none on a
 * volatile load) is one inline-asm PTX instruction, since LLVM's IR has no
 * way to carry them; without a hint the access stays an LLVM load or store,
 * which the NVPTX back end is free to combine and schedule. The asm works
 * on a register of the access's width: f32/f64 in "f"/"d", 16-bit values
 * (f16, bf16, i16) as .b16 in "h", bytes (i8, i1) as .u8 in a 16-bit "h"
 * register (PTX has no 8-bit registers), i32 in "r", i64 and pointers in
 * "l". The asm has side effects and clobbers memory, so LLVM keeps it in
 * order with the other memory accesses and barriers. */

typedef struct ptx_access {
    const char *suffix;      /* PTX type of the instruction */
    const char *constraint;  /* register constraint */
    LLVMTypeRef reg;         /* LLVM type of that register */
} ptx_access;

/* The PTX modifier of op's hint, "" if it has none. */
static const char *hint_modifier(const tji_op *op)
{
    static const char *const cache[] = {"", ".ca", ".cg", ".cs", ".lu", ".cv", ".wb", ".wt"};
    if (op->cache != TJ_CACHE_DEFAULT)
        return cache[op->cache];
    if (op->evict == TJ_EVICT_FIRST)
        return ".L1::evict_first";
    if (op->evict == TJ_EVICT_LAST)
        return ".L1::evict_last";
    return "";
}

static ptx_access ptx_access_of(const codegen *c, LLVMTypeRef mem)
{
    const tjj_gpu_gen *g = &c->g;
    if (mem == g->t_float)
        return (ptx_access){".f32", "f", g->t_float};
    if (mem == g->t_double)
        return (ptx_access){".f64", "d", g->t_double};
    if (mem == g->t_half || mem == g->t_i16)
        return (ptx_access){".b16", "h", g->t_i16};
    if (mem == g->t_i8)
        return (ptx_access){".u8", "h", g->t_i16};
    if (mem == g->t_i32)
        return (ptx_access){".b32", "r", g->t_i32};
    return (ptx_access){".b64", "l", g->t_i64};  /* i64 and pointers */
}

static LLVMValueRef inline_ptx(codegen *c, LLVMTypeRef ret, const char *text, const char *constraints,
                               LLVMValueRef *args, unsigned nargs)
{
    LLVMTypeRef params[MAX_VECTOR_PARTS + 2];
    for (unsigned i = 0; i < nargs; i++)
        params[i] = LLVMTypeOf(args[i]);
    LLVMTypeRef fty = LLVMFunctionType(ret, params, nargs, 0);
    LLVMValueRef fn = LLVMGetInlineAsm(fty, text, strlen(text), constraints, strlen(constraints),
                                       1, 0, LLVMInlineAsmDialectATT, 0);
    return LLVMBuildCall2(c->g.b, fty, fn, args, nargs, "");
}

/* Vector accesses. The plan gives each LOAD and STORE a width v (elements):
 * registers r..r+v-1, r a multiple of v, hold elements at consecutive
 * addresses, the first aligned to the v elements' bytes, and one mask
 * register speaks for all of them (the coalescing pass's promises). Such a
 * group is one access of v * size bytes, moved in parts: elements of 4
 * bytes or more as themselves (<4 x float> becomes ld.global.v4.f32), the
 * smaller ones as 32-bit words (eight halves: ld.global.v4.b32), or two
 * bytes as one 16-bit word. With a hint or a mask the same parts go through
 * one inline-asm instruction with a register per part (predicated on the
 * mask). */

/* A global address: a pointer plus a constant byte offset. */
typedef struct address {
    LLVMValueRef base;
    int64_t offset;
} address;

typedef struct vector_access {
    int v;              /* elements */
    int nparts;         /* PTX vector components: 1, 2 or 4 */
    LLVMTypeRef mem;    /* an element in memory */
    LLVMTypeRef whole;  /* the access: <nparts x part>, or part */
    ptx_access part;
} vector_access;

static vector_access vector_access_of(codegen *c, LLVMTypeRef mem, int v)
{
    uint64_t bytes = type_bytes(c, mem), total = bytes * (uint64_t)v;
    vector_access a = {.v = v, .mem = mem};
    if (bytes >= 4 || v == 1) {
        a.part = ptx_access_of(c, mem);
        a.nparts = v;
    } else {
        a.part = ptx_access_of(c, total >= 4 ? c->g.t_i32 : c->g.t_i16);
        a.nparts = total >= 4 ? (int)(total / 4) : 1;
    }
    a.whole = a.nparts > 1 ? LLVMVectorType(a.part.reg, (unsigned)a.nparts) : a.part.reg;
    return a;
}

static LLVMTypeRef element_int(const codegen *c, const vector_access *a)
{
    return LLVMIntTypeInContext(c->g.ctx, (unsigned)(8 * type_bytes(c, a->mem)));
}

/* The elements (memory form) of a loaded access. */
static void vector_split(codegen *c, const vector_access *a, LLVMValueRef whole, LLVMValueRef *out)
{
    LLVMBuilderRef b = c->g.b;
    LLVMTypeRef it = element_int(c, a);
    LLVMValueRef ints = LLVMBuildBitCast(b, whole, LLVMVectorType(it, (unsigned)a->v), "");
    for (int j = 0; j < a->v; j++) {
        LLVMValueRef x = LLVMBuildExtractElement(b, ints, c_i32(c, j), "");
        out[j] = a->mem == it ? x
                 : LLVMGetTypeKind(a->mem) == LLVMPointerTypeKind ? LLVMBuildIntToPtr(b, x, a->mem, "")
                                                                  : LLVMBuildBitCast(b, x, a->mem, "");
    }
}

/* One access of elements (memory form) to store. */
static LLVMValueRef vector_join(codegen *c, const vector_access *a, LLVMValueRef *elems)
{
    LLVMBuilderRef b = c->g.b;
    LLVMTypeRef it = element_int(c, a);
    LLVMValueRef ints = LLVMGetPoison(LLVMVectorType(it, (unsigned)a->v));
    for (int j = 0; j < a->v; j++) {
        LLVMValueRef x = elems[j];
        x = LLVMTypeOf(x) == it ? x
            : LLVMGetTypeKind(LLVMTypeOf(x)) == LLVMPointerTypeKind ? LLVMBuildPtrToInt(b, x, it, "")
                                                                    : LLVMBuildBitCast(b, x, it, "");
        ints = LLVMBuildInsertElement(b, ints, x, c_i32(c, j), "");
    }
    return LLVMBuildBitCast(b, ints, a->whole, "");
}

/* "{$k, $k+1, ...}" for the parts of a vector, or "$k" for one part. */
static void asm_operands(char *out, size_t size, int first, int nparts)
{
    if (nparts == 1) {
        snprintf(out, size, "$%d", first);
        return;
    }
    int n = snprintf(out, size, "{");
    for (int i = 0; i < nparts; i++)
        n += snprintf(out + n, size - (size_t)n, "%s$%d", i ? ", " : "", first + i);
    snprintf(out + n, size - (size_t)n, "}");
}

static const char *vector_modifier(int nparts)
{
    return nparts == 4 ? ".v4" : nparts == 2 ? ".v2" : "";
}

/* The register form of one element (memory form x) for the asm, and back. */
static LLVMValueRef to_part(codegen *c, LLVMValueRef x, LLVMTypeRef part)
{
    LLVMTypeRef mem = LLVMTypeOf(x);
    if (mem == part)
        return x;
    if (mem == c->g.t_i8)
        return LLVMBuildZExt(c->g.b, x, part, "");
    if (LLVMGetTypeKind(mem) == LLVMPointerTypeKind)
        return LLVMBuildPtrToInt(c->g.b, x, part, "");
    return LLVMBuildBitCast(c->g.b, x, part, "");
}

static LLVMValueRef from_part(codegen *c, LLVMValueRef x, LLVMTypeRef mem)
{
    if (LLVMTypeOf(x) == mem)
        return x;
    if (mem == c->g.t_i8)
        return LLVMBuildTrunc(c->g.b, x, mem, "");
    if (LLVMGetTypeKind(mem) == LLVMPointerTypeKind)
        return LLVMBuildIntToPtr(c->g.b, x, mem, "");
    return LLVMBuildBitCast(c->g.b, x, mem, "");
}

/* The parts of v elements (memory form) as the asm's registers. */
static void parts_of(codegen *c, const vector_access *a, LLVMValueRef *elems, LLVMValueRef *parts)
{
    if (a->v == 1) {
        parts[0] = to_part(c, elems[0], a->part.reg);
        return;
    }
    LLVMValueRef whole = vector_join(c, a, elems);
    for (int i = 0; i < a->nparts; i++)
        parts[i] = a->nparts == 1 ? whole : LLVMBuildExtractElement(c->g.b, whole, c_i32(c, i), "");
}

/* The v elements (memory form) that the asm's registers hold. */
static void elems_of(codegen *c, const vector_access *a, LLVMValueRef *parts, LLVMValueRef *elems)
{
    if (a->v == 1) {
        elems[0] = from_part(c, parts[0], a->mem);
        return;
    }
    LLVMValueRef whole = parts[0];
    if (a->nparts > 1) {
        whole = LLVMGetPoison(a->whole);
        for (int i = 0; i < a->nparts; i++)
            whole = LLVMBuildInsertElement(c->g.b, whole, parts[i], c_i32(c, i), "");
    }
    vector_split(c, a, whole, elems);
}

/* The mov suffix for a register of constraint k ("h", "r", "l", "f", "d"). */
static const char *mov_suffix(const char *k)
{
    return *k == 'h' ? ".b16" : *k == 'r' ? ".b32" : *k == 'l' ? ".b64" : *k == 'f' ? ".f32" : ".f64";
}

/* One ld.global of a (its parts) from ptr, with the cache hint (""), under
 * predicate pred (NULL: always); where pred is false the registers keep
 * others (the parts of `other`). out gets the parts. */
static void asm_load(codegen *c, const vector_access *a, address at, const char *hint,
                     LLVMValueRef pred, LLVMValueRef *others, LLVMValueRef *out)
{
    LLVMValueRef ptr = at.base;
    int n = a->nparts, len = 0;
    char regs[64], text[512], constraints[96];
    asm_operands(regs, sizeof regs, 0, n);
    /* operands: n outputs, ptr ($n), pred ($n+1), n fallbacks */
    for (int i = 0; pred && i < n; i++)
        len += snprintf(text + len, sizeof text - (size_t)len, "mov%s $%d, $%d;\n\t",
                        mov_suffix(a->part.constraint), i, n + 2 + i);
    if (pred)
        len += snprintf(text + len, sizeof text - (size_t)len, "@$%d ", n + 1);
    snprintf(text + len, sizeof text - (size_t)len, "ld.global%s%s%s %s, [$%d+%lld];", hint,
             vector_modifier(n), a->part.suffix, regs, n, (long long)at.offset);
    len = 0;
    for (int i = 0; i < n; i++)
        len += snprintf(constraints + len, sizeof constraints - (size_t)len, "=&%s,", a->part.constraint);
    len += snprintf(constraints + len, sizeof constraints - (size_t)len, "l");
    if (pred) {
        len += snprintf(constraints + len, sizeof constraints - (size_t)len, ",b");
        for (int i = 0; i < n; i++)
            len += snprintf(constraints + len, sizeof constraints - (size_t)len, ",%s", a->part.constraint);
    }
    snprintf(constraints + len, sizeof constraints - (size_t)len, ",~{memory}");
    LLVMValueRef args[2 + MAX_VECTOR_PARTS] = {ptr, pred};
    for (int i = 0; pred && i < n; i++)
        args[2 + i] = others[i];
    unsigned nargs = pred ? 2 + (unsigned)n : 1;
    if (n == 1) {
        out[0] = inline_ptx(c, a->part.reg, text, constraints, args, nargs);
        return;
    }
    LLVMTypeRef types[MAX_VECTOR_PARTS];
    for (int i = 0; i < n; i++)
        types[i] = a->part.reg;
    LLVMValueRef got = inline_ptx(c, LLVMStructTypeInContext(c->g.ctx, types, (unsigned)n, 0), text,
                                  constraints, args, nargs);
    for (int i = 0; i < n; i++)
        out[i] = LLVMBuildExtractValue(c->g.b, got, (unsigned)i, "");
}

/* One st.global of a's parts to ptr, with the cache hint (""), under
 * predicate pred (NULL: always). */
static void asm_store(codegen *c, const vector_access *a, address at, LLVMValueRef *parts,
                      const char *hint, LLVMValueRef pred)
{
    LLVMValueRef ptr = at.base;
    int n = a->nparts, len = 0;
    char regs[64], text[160], constraints[64];
    asm_operands(regs, sizeof regs, 1, n);
    /* operands: ptr ($0), n parts, pred ($n+1) */
    if (pred)
        len += snprintf(text, sizeof text, "@$%d ", n + 1);
    snprintf(text + len, sizeof text - (size_t)len, "st.global%s%s%s [$0+%lld], %s;", hint,
             vector_modifier(n), a->part.suffix, (long long)at.offset, regs);
    len = snprintf(constraints, sizeof constraints, "l");
    for (int i = 0; i < n; i++)
        len += snprintf(constraints + len, sizeof constraints - (size_t)len, ",%s", a->part.constraint);
    snprintf(constraints + len, sizeof constraints - (size_t)len, "%s,~{memory}", pred ? ",b" : "");
    LLVMValueRef args[2 + MAX_VECTOR_PARTS] = {ptr};
    for (int i = 0; i < n; i++)
        args[1 + i] = parts[i];
    args[1 + n] = pred;
    inline_ptx(c, c->g.t_void, text, constraints, args, (unsigned)n + (pred ? 2 : 1));
}

/* The plan's vector width of the access at op index opi. */
static int vector_of(const codegen *c, int32_t opi)
{
    const tjp_layout_plan *p = c->g.plan;
    return p->vector && opi >= 0 && opi < p->nops ? p->vector[opi] : 1;
}

/* Do registers r..r+v-1 (r a multiple of v) of L hold, in order, v
 * consecutive elements along one dimension of t, starting at a multiple
 * of v? Their register bases must be the bits s..s+k-1 of one dimension's
 * field (v = 2^k), and no other basis may touch those bits. */
static int holds_vectors(const tjp_layout *L, const tji_type *t, int v)
{
    int k = log2_of(v);
    uint32_t first = L->nbits[TJP_REG] >= k ? L->basis[TJP_REG][0] : 0;
    if (!first || (first & (first - 1)))
        return 0;
    int s = __builtin_ctz(first), in_dim = 0;
    for (int d = 0; d < t->rank; d++)
        in_dim |= dim_shift(t, d) == s && k <= log2_of(t->shape[d]); /* stride 1 along d */
    uint32_t field = (uint32_t)(v - 1) << s;
    for (int in = 0; in < TJP_NIN; in++)
        for (int b = 0; b < L->nbits[in]; b++)
            if (in == TJP_REG && b < k ? L->basis[in][b] != first << b : (L->basis[in][b] & field) != 0)
                return 0;
    return in_dim;
}

/* The width of the access op (on a tile in layout L), checked against the
 * layout; 0 after a failure. Volatile loads stay element by element. */
static int access_width(codegen *c, const tji_op *op, const tjp_layout *L, const tji_type *t)
{
    int v = vector_of(c, c->g.cur_op);
    if (v <= 1 || op->is_volatile)
        return 1;
    uint64_t bytes = type_bytes(c, tjj_gpu_mem_type(&c->g, t)) * (uint64_t)v;
    if (v > MAX_VECTOR || bytes > 16 || !holds_vectors(L, t, v)) {
        FAIL(c, "internal error: the layout of this access does not hold vectors of %d", v);
        return 0;
    }
    return v;
}

/* The plan's run of consecutive addresses for the access at op index opi
 * (on a tile in layout L), checked against the layout; 0 after a failure. */
static int address_run(codegen *c, const tjp_layout *L, const tji_type *t)
{
    const tjp_layout_plan *p = c->g.plan;
    int32_t opi = c->g.cur_op;
    int run = p->addr_run && opi >= 0 && opi < p->nops ? p->addr_run[opi] : 1;
    if (run <= 1)
        return 1;
    if (run > MAX_VECTOR || !holds_vectors(L, t, run)) {
        FAIL(c, "internal error: the layout of this access does not hold runs of %d", run);
        return 0;
    }
    return run;
}

/* The address of register r of pointer tile ptr, whose registers come in
 * runs of `run` consecutive elements (of memory type elem): the run's first
 * address and a byte offset, which goes into the instruction ([%rd+4])
 * rather than every address being computed in full. */
static address run_address(codegen *c, int32_t ptr, uint32_t r, int run, LLVMTypeRef elem)
{
    uint32_t k = run > 1 ? r % (uint32_t)run : 0;
    return (address){reg(c, ptr, r - k), (int64_t)(k * type_bytes(c, elem))};
}

/* An address as an LLVM pointer. */
static LLVMValueRef address_value(codegen *c, address at)
{
    if (!at.offset)
        return at.base;
    LLVMValueRef offset = c_i64(c, at.offset);
    return LLVMBuildGEP2(c->g.b, c->g.t_i8, at.base, &offset, 1, "");
}

/* A checked kernel's condition (cond, NULL: always) of an access of v
 * elements of t at `at`, an address of pointer value ptr: off where it
 * leaves its buffers; emit_op reports the op's first such (bounds.h).
 * Unchecked: cond itself. */
static LLVMValueRef bounds_cond(codegen *c, int32_t ptr, address at, const tji_type *t, int v, LLVMValueRef cond)
{
    if (!c->bounds)
        return cond;
    uint64_t elem = type_bytes(c, tjj_gpu_mem_type(&c->g, t));
    return tjj_bounds_check(c->bounds, c->g.b, ptr, address_value(c, at), elem * (uint64_t)v, elem, cond);
}

/* v elements (v = 1: one) from ptr into out, in SSA form, when mask (NULL:
 * always) holds; else other's (NULL: zeros). A masked or hinted access is
 * one predicated inline-asm instruction; a plain one an LLVM load; a
 * masked volatile load branches around an LLVM volatile load. */
static void masked_load(codegen *c, const tji_type *t, const tji_op *op, address at, LLVMValueRef mask,
                        const LLVMValueRef *other, int v, LLVMValueRef *out)
{
    LLVMTypeRef mem = tjj_gpu_mem_type(&c->g, t);
    const char *hint = hint_modifier(op);
    vector_access a = vector_access_of(c, mem, v);
    LLVMValueRef got[MAX_VECTOR];
    if ((mask || *hint) && !op->is_volatile) {
        LLVMValueRef fallback[MAX_VECTOR], others[MAX_VECTOR_PARTS] = {0}, parts[MAX_VECTOR_PARTS] = {0};
        for (int j = 0; mask && j < v; j++)
            fallback[j] = other ? tjj_gpu_to_mem(&c->g, other[j], t) : LLVMConstNull(mem);
        if (mask)
            parts_of(c, &a, fallback, others);
        asm_load(c, &a, at, hint, mask, others, parts);
        elems_of(c, &a, parts, got);
        for (int j = 0; j < v; j++)
            out[j] = tjj_gpu_from_mem(&c->g, got[j], t);
        return;
    }
    LLVMBasicBlockRef before = LLVMGetInsertBlock(c->g.b);
    LLVMBasicBlockRef cont = guard_begin(c, mask, "load");
    LLVMValueRef ld = LLVMBuildLoad2(c->g.b, a.v == 1 ? mem : a.whole, address_value(c, at), "");
    LLVMSetAlignment(ld, (unsigned)(type_bytes(c, mem) * (uint64_t)v));
    if (op->is_volatile)
        LLVMSetVolatile(ld, 1);
    if (v == 1)
        got[0] = ld;
    else
        vector_split(c, &a, ld, got);
    for (int j = 0; j < v; j++)
        got[j] = tjj_gpu_from_mem(&c->g, got[j], t);
    LLVMBasicBlockRef then_end = LLVMGetInsertBlock(c->g.b);
    guard_end(c, cont);
    for (int j = 0; j < v; j++) {
        out[j] = got[j];
        if (!cont)
            continue;
        out[j] = LLVMBuildPhi(c->g.b, LLVMTypeOf(got[j]), "");
        LLVMValueRef vals[2] = {got[j], other ? other[j] : LLVMConstNull(LLVMTypeOf(got[j]))};
        LLVMBasicBlockRef blocks[2] = {then_end, before};
        LLVMAddIncoming(out[j], vals, blocks, 2);
    }
}

static void emit_load(codegen *c, const tji_op *op)
{
    int32_t id = op->result, mask = op->nargs > 1 ? op->args[1] : 0, other = op->nargs > 2 ? op->args[2] : 0;
    const tji_type *t = type_of(c, id);
    order_after_stores(c, STORED_PLAIN | STORED_ATOMIC);
    load_pending(c, (int32_t)(op - c->g.fn->ops));
    if (t->rank == 0) {
        LLVMValueRef o = other ? reg(c, other, 0) : NULL;
        address at = {reg(c, op->args[0], 0), 0};
        masked_load(c, t, op, at, bounds_cond(c, op->args[0], at, t, 1, mask ? live_cond(reg(c, mask, 0)) : NULL),
                    other ? &o : NULL, 1, &c->ssa[id]);
        return;
    }
    for (int i = 0; i < op->nargs; i++)
        if (op->args[i] && !check_same_layout(c, op->args[i], id))
            return;
    const tjp_layout *L = layout_of(c, id);
    int v = access_width(c, op, L, t), run = v ? address_run(c, L, t) : 0;
    LLVMTypeRef mem = tjj_gpu_mem_type(&c->g, t);
    uint32_t rdup = reg_dup_mask(L), n = (uint32_t)nregs_of(c, id);
    LLVMValueRef *out = regs_for(c, id);
    for (uint32_t r = 0; v && run && r < n && c->g.status == TJ_OK; r += (uint32_t)v) {
        if (r & rdup) {
            for (int j = 0; j < v; j++)
                out[r + (uint32_t)j] = out[(r & ~rdup) + (uint32_t)j];
            continue;
        }
        LLVMValueRef others[MAX_VECTOR];
        for (int j = 0; other && j < v; j++)
            others[j] = reg(c, other, r + (uint32_t)j);
        address at = run_address(c, op->args[0], r, run, mem);
        masked_load(c, t, op, at, bounds_cond(c, op->args[0], at, t, v, mask ? live_cond(reg(c, mask, r)) : NULL),
                    other ? others : NULL, v, out + r);
    }
}

static void emit_store(codegen *c, const tji_op *op)
{
    int32_t ptr = op->args[0], val = op->args[1], mask = op->nargs > 2 ? op->args[2] : 0;
    const tji_type *vt = type_of(c, val);
    const char *hint = hint_modifier(op);
    int rank = rank_of(c, ptr), v = 1, run = 1;
    LLVMValueRef owner;
    uint32_t n = 1, rdup = 0;
    order_after_loads(c, ptr);
    if (rank == 0) {
        owner = thread0_cond(c);
    } else {
        if (!check_same_layout(c, val, ptr) || (mask && !check_same_layout(c, mask, ptr)))
            return;
        const tjp_layout *L = layout_of(c, ptr);
        owner = owner_cond(c, L);
        n = (uint32_t)nregs_of(c, ptr);
        rdup = reg_dup_mask(L);
        if (!(v = access_width(c, op, L, vt)) || !(run = address_run(c, L, vt)))
            return;
    }
    LLVMTypeRef mem = tjj_gpu_mem_type(&c->g, vt);
    vector_access a = vector_access_of(c, mem, v);
    for (uint32_t r = 0; r < n; r += (uint32_t)v) {
        if (r & rdup)
            continue;
        LLVMValueRef cond = and_cond(c, owner, mask ? live_cond(reg(c, mask, r)) : NULL);
        cond = bounds_cond(c, ptr, run_address(c, ptr, r, run, mem), vt, v, cond);
        LLVMValueRef elems[MAX_VECTOR], parts[MAX_VECTOR_PARTS] = {0};
        for (int j = 0; j < v; j++)
            elems[j] = tjj_gpu_to_mem(&c->g, reg(c, val, r + (uint32_t)j), vt);
        if (cond || *hint) { /* a predicated (or hinted) st.global */
            parts_of(c, &a, elems, parts);
            asm_store(c, &a, run_address(c, ptr, r, run, mem), parts, hint, cond);
            continue;
        }
        LLVMValueRef st = LLVMBuildStore(c->g.b, v == 1 ? elems[0] : vector_join(c, &a, elems),
                                         address_value(c, run_address(c, ptr, r, run, mem)));
        LLVMSetAlignment(st, (unsigned)(type_bytes(c, mem) * (uint64_t)v));
    }
    c->stored |= STORED_PLAIN;
}

/* --- atomics -------------------------------------------------------------------------------- */

static LLVMValueRef atomic_rmw(codegen *c, LLVMAtomicRMWBinOp bop, LLVMValueRef ptr, LLVMValueRef v)
{
    return LLVMBuildAtomicRMWSyncScope(c->g.b, bop, ptr, v, LLVMAtomicOrderingAcquireRelease, c->g.device_scope);
}

static LLVMValueRef atomic_cas(codegen *c, LLVMValueRef ptr, LLVMValueRef cmp, LLVMValueRef v, LLVMValueRef *ok)
{
    LLVMValueRef pair = LLVMBuildAtomicCmpXchgSyncScope(c->g.b, ptr, cmp, v, LLVMAtomicOrderingAcquireRelease,
                                                        LLVMAtomicOrderingMonotonic, c->g.device_scope);
    if (ok)
        *ok = LLVMBuildExtractValue(c->g.b, pair, 1, "");
    return LLVMBuildExtractValue(c->g.b, pair, 0, "");
}

/* Float atomics without an instruction (max, min; add for 16-bit floats):
 * a compare-and-swap loop on the bits, computing in f32/f64. A value that
 * would not change is not written. Returns the old value (SSA form). */
static LLVMValueRef float_atomic_loop(codegen *c, tj_atomic_op aop, tj_dtype dt, LLVMValueRef ptr, LLVMValueRef v)
{
    LLVMBuilderRef b = c->g.b;
    tji_type vt = {.dtype = dt};
    LLVMTypeRef ft = tjj_gpu_value_type(&c->g, &vt);
    LLVMTypeRef it = LLVMIntTypeInContext(c->g.ctx, (unsigned)tjs_dtype_bits(dt));
    LLVMValueRef start = LLVMBuildLoad2(b, it, ptr, "");
    LLVMSetAlignment(start, (unsigned)tj_dtype_size(dt));
    LLVMSetOrdering(start, LLVMAtomicOrderingMonotonic);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(b), loop = new_block(c, "atomic.loop");
    LLVMBasicBlockRef write = new_block(c, "atomic.cas"), done = new_block(c, "atomic.done");
    LLVMBuildBr(b, loop);
    LLVMPositionBuilderAtEnd(b, loop);
    LLVMValueRef old = LLVMBuildPhi(b, it, "");
    LLVMValueRef x = tjj_gpu_fext(&c->g, ft == it ? old : LLVMBuildBitCast(b, old, ft, ""), dt);
    LLVMValueRef y = tjj_gpu_fext(&c->g, v, dt), r;
    switch (aop) {
    case TJ_ATOMIC_ADD: r = LLVMBuildFAdd(b, x, y, ""); break;
    case TJ_ATOMIC_MAX: r = tjj_gpu_intrinsic2(&c->g, "llvm.maxnum", x, y); break;
    default: r = tjj_gpu_intrinsic2(&c->g, "llvm.minnum", x, y); break;
    }
    r = tjj_gpu_fround(&c->g, r, dt);
    LLVMValueRef new_bits = ft == it ? r : LLVMBuildBitCast(b, r, it, "");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, new_bits, old, ""), done, write);
    LLVMPositionBuilderAtEnd(b, write);
    LLVMValueRef ok;
    LLVMValueRef seen = atomic_cas(c, ptr, old, new_bits, &ok);
    LLVMBuildCondBr(b, ok, done, loop);
    LLVMValueRef in[2] = {start, seen};
    LLVMBasicBlockRef from[2] = {pre, write};
    LLVMAddIncoming(old, in, from, 2);
    LLVMPositionBuilderAtEnd(b, done);
    LLVMValueRef result = LLVMBuildPhi(b, it, "");
    LLVMValueRef rin[2] = {old, old};
    LLVMBasicBlockRef rfrom[2] = {loop, write};
    LLVMAddIncoming(result, rin, rfrom, 2);
    return ft == it ? result : LLVMBuildBitCast(b, result, ft, "");
}

/* One atomic on one element; returns the old value in SSA form. */
static LLVMValueRef atomic_one(codegen *c, const tji_op *op, const tji_type *rt, LLVMValueRef ptr,
                               LLVMValueRef a1, LLVMValueRef a2)
{
    LLVMBuilderRef b = c->g.b;
    tj_dtype dt = rt->dtype;
    int is_float = tjs_dtype_is_float(dt), is_signed = tjs_dtype_is_signed(dt);
    LLVMTypeRef mt = tjj_gpu_mem_type(&c->g, rt);
    LLVMTypeRef it = is_float ? LLVMIntTypeInContext(c->g.ctx, (unsigned)tjs_dtype_bits(dt)) : mt;
    if (op->code == TJI_ATOMIC_CAS || op->atomic == TJ_ATOMIC_XCHG) {
        /* on the bits: cmpxchg compares bits, and xchg of bits is exact */
        LLVMValueRef v = LLVMBuildBitCast(b, tjj_gpu_to_mem(&c->g, op->code == TJI_ATOMIC_CAS ? a2 : a1, rt), it, "");
        LLVMValueRef old = op->code == TJI_ATOMIC_CAS
                               ? atomic_cas(c, ptr, LLVMBuildBitCast(b, tjj_gpu_to_mem(&c->g, a1, rt), it, ""), v, NULL)
                               : atomic_rmw(c, LLVMAtomicRMWBinOpXchg, ptr, v);
        return tjj_gpu_from_mem(&c->g, LLVMBuildBitCast(b, old, mt, ""), rt);
    }
    if (is_float && (op->atomic != TJ_ATOMIC_ADD || dt == TJ_F16 || dt == TJ_BF16))
        return float_atomic_loop(c, op->atomic, dt, ptr, a1);
    LLVMAtomicRMWBinOp bop;
    switch (op->atomic) {
    case TJ_ATOMIC_ADD: bop = is_float ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd; break;
    case TJ_ATOMIC_MAX: bop = is_signed ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpUMax; break;
    default: bop = is_signed ? LLVMAtomicRMWBinOpMin : LLVMAtomicRMWBinOpUMin; break;
    }
    return tjj_gpu_from_mem(&c->g, atomic_rmw(c, bop, ptr, tjj_gpu_to_mem(&c->g, a1, rt)), rt);
}

/* ATOMIC (ptr, value, mask) and ATOMIC_CAS (ptr, cmp, value): done once per
 * element by its owner; masked-off elements do nothing and read 0. */
static void emit_atomic(codegen *c, const tji_op *op)
{
    int is_cas = op->code == TJI_ATOMIC_CAS;
    int32_t ptr = op->args[0], id = op->result;
    int32_t mask = !is_cas && op->nargs > 2 ? op->args[2] : 0;
    const tji_type *rt = type_of(c, id);
    LLVMTypeRef vt = tjj_gpu_value_type(&c->g, rt);
    order_after_stores(c, STORED_PLAIN);
    order_after_loads(c, ptr);
    if (rt->rank == 0) {
        LLVMValueRef cond = and_cond(c, thread0_cond(c), mask ? live_cond(reg(c, mask, 0)) : NULL);
        cond = bounds_cond(c, ptr, (address){reg(c, ptr, 0), 0}, rt, 1, cond);
        LLVMBasicBlockRef before = LLVMGetInsertBlock(c->g.b), cont = guard_begin(c, cond, "atomic");
        LLVMValueRef old = atomic_one(c, op, rt, reg(c, ptr, 0), reg(c, op->args[1], 0),
                                      is_cas ? reg(c, op->args[2], 0) : NULL);
        old = guard_value(c, cont, before, old, LLVMConstNull(vt));
        c->ssa[id] = c->uses[id] ? broadcast_scalar(c, old) : old;
        c->stored |= STORED_ATOMIC;
        return;
    }
    for (int i = 1; i < op->nargs; i++)
        if (op->args[i] && !check_same_layout(c, op->args[i], ptr))
            return;
    if (!check_same_layout(c, id, ptr))
        return;
    const tjp_layout *L = layout_of(c, ptr);
    if (!bases_independent(L)) {
        FAIL(c, "internal error: a layout holds an element twice");
        return;
    }
    LLVMValueRef owner = owner_cond(c, L);
    uint32_t n = (uint32_t)nregs_of(c, ptr), rdup = reg_dup_mask(L);
    LLVMValueRef *out = regs_for(c, id);
    for (uint32_t r = 0; r < n && c->g.status == TJ_OK; r++) {
        if (r & rdup)
            continue;
        LLVMValueRef cond = and_cond(c, owner, mask ? live_cond(reg(c, mask, r)) : NULL);
        cond = bounds_cond(c, ptr, (address){reg(c, ptr, r), 0}, rt, 1, cond);
        LLVMBasicBlockRef before = LLVMGetInsertBlock(c->g.b), cont = guard_begin(c, cond, "atomic");
        LLVMValueRef old = atomic_one(c, op, rt, reg(c, ptr, r), reg(c, op->args[1], r),
                                      is_cas ? reg(c, op->args[2], r) : NULL);
        out[r] = guard_value(c, cont, before, old, LLVMConstNull(vt));
    }
    if (c->uses[id])
        broadcast_from_owners(c, L, rt, out);
    else
        for (uint32_t r = 0; r < n; r++)
            if (r & rdup)
                out[r] = out[r & ~rdup];
    c->stored |= STORED_ATOMIC;
}

/* --- reductions and scans ------------------------------------------------------------------ */

/* acc = acc (op) (v, i), symmetric: both orders give the same bits. Float
 * max/min/argmax/argmin arrive here as the integer order keys of
 * llvm_scalar.c (dt a signed integer dtype), which place -0, +0 and NaN as
 * the CPU does. argmax and argmin carry (value, index): equal values go to
 * the smaller index, so the first extreme element wins (an ignored NaN's
 * key loses to every number's; all NaN gives index 0), as on the CPU. */
static void combine(codegen *c, tj_reduce_op rop, tj_dtype dt, LLVMValueRef *acc, LLVMValueRef *acc_i,
                    LLVMValueRef v, LLVMValueRef i)
{
    LLVMBuilderRef b = c->g.b;
    int is_float = tjs_dtype_is_float(dt), is_signed = tjs_dtype_is_signed(dt);
    switch (rop) {
    case TJ_REDUCE_SUM:
        *acc = is_float ? LLVMBuildFAdd(b, *acc, v, "") : LLVMBuildAdd(b, *acc, v, "");
        return;
    case TJ_REDUCE_MAX:
        *acc = tjj_gpu_intrinsic2(&c->g, is_signed ? "llvm.smax" : "llvm.umax", *acc, v);
        return;
    case TJ_REDUCE_MIN:
        *acc = tjj_gpu_intrinsic2(&c->g, is_signed ? "llvm.smin" : "llvm.umin", *acc, v);
        return;
    default: {
        int is_max = rop == TJ_REDUCE_ARGMAX;
        LLVMValueRef smaller_i = LLVMBuildICmp(b, LLVMIntSLT, i, *acc_i, "");
        LLVMIntPredicate p = is_max ? (is_signed ? LLVMIntSGT : LLVMIntUGT) : (is_signed ? LLVMIntSLT : LLVMIntULT);
        LLVMValueRef better = LLVMBuildICmp(b, p, v, *acc, "");
        LLVMValueRef tie = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, v, *acc, ""), smaller_i, "");
        LLVMValueRef take = LLVMBuildOr(b, better, tie, "");
        *acc = LLVMBuildSelect(b, take, v, *acc, "");
        *acc_i = LLVMBuildSelect(b, take, i, *acc_i, "");
        return;
    }
    }
}

/* The bits of `value` at the positions in `mask`, packed (a software pext). */
static LLVMValueRef extract_bits(codegen *c, LLVMValueRef value, uint32_t mask)
{
    LLVMValueRef out = c_i32(c, 0);
    for (int b = 0, k = 0; b < 32; b++) {
        if (!(mask >> b & 1))
            continue;
        LLVMValueRef bit = LLVMBuildAnd(c->g.b, LLVMBuildLShr(c->g.b, value, c_i32(c, b), ""), c_i32(c, 1), "");
        out = LLVMBuildOr(c->g.b, out, LLVMBuildShl(c->g.b, bit, c_i32(c, k++), ""), "");
    }
    return out;
}

static void emit_reduce(codegen *c, const tji_op *op)
{
    int32_t x = op->args[0], id = op->result;
    const tji_type *xt = type_of(c, x), *rt = type_of(c, id);
    const tjp_layout *L = layout_of(c, x);
    tj_dtype dt = xt->dtype;
    int axis = op->axis;
    int is_arg = op->reduce == TJ_REDUCE_ARGMAX || op->reduce == TJ_REDUCE_ARGMIN;
    int is_max = op->reduce == TJ_REDUCE_MAX || op->reduce == TJ_REDUCE_ARGMAX;
    int is_float = tjs_dtype_is_float(dt);
    /* float max/min/argmax/argmin combine order keys (see combine) */
    int by_key = is_float && op->reduce != TJ_REDUCE_SUM;
    tj_dtype combine_dt = by_key ? (dt == TJ_F64 ? TJ_I64 : TJ_I32) : dt;
    uint32_t axis_bits = (uint32_t)((xt->shape[axis] - 1) << dim_shift(xt, axis));

    /* Which input bits move along the axis (A), hold copies (Z), or neither. */
    uint32_t along[TJP_NIN] = {0}, copies[TJP_NIN] = {0};
    for (int in = 0; in < TJP_NIN; in++)
        for (int b = 0; b < L->nbits[in]; b++) {
            uint32_t v = L->basis[in][b];
            if (!v)
                copies[in] |= 1u << b;
            else if ((v & axis_bits) == v)
                along[in] |= 1u << b;
            else if (v & axis_bits) {
                FAIL(c, "internal error: a layout basis mixes the reduced axis with others");
                return;
            }
        }
    if (!bases_independent(L)) {
        FAIL(c, "internal error: a layout holds an element twice");
        return;
    }
    if (rt->rank > 0) {
        tjp_layout expect;
        tjp_layout_slice(&expect, L, axis);
        if (!same_layout(&expect, layout_of(c, id))) {
            FAIL(c, "internal error: the result's layout is not the slice of the operand's");
            return;
        }
    }

    uint32_t n = 1u << L->nbits[TJP_REG], fold = along[TJP_REG] | copies[TJP_REG];
    LLVMValueRef *acc = tjs_xcalloc(n, sizeof(LLVMValueRef)), *acc_i = tjs_xcalloc(n, sizeof(LLVMValueRef));
    /* 1: registers along the axis, in increasing order */
    for (uint32_t r = 0; r < n; r++) {
        if (r & fold)
            continue;
        for (uint32_t s = 0;; s = (s - along[TJP_REG]) & along[TJP_REG]) {
            LLVMValueRef v = tjj_gpu_fext(&c->g, reg(c, x, r | s), dt), i = NULL;
            if (by_key)
                v = tjj_gpu_order_key(&c->g, v, is_max, op->propagate_nan);
            if (is_arg)
                i = coordinate(c, xt, element_index(c, L, r | s), axis);
            if (!s) {
                acc[r] = v;
                acc_i[r] = i;
            } else {
                combine(c, op->reduce, combine_dt, &acc[r], &acc_i[r], v, i);
            }
            if (s == along[TJP_REG])
                break;
        }
    }
    /* 2: lanes along the axis, by butterfly */
    for (int b = 0; b < L->nbits[TJP_LANE]; b++) {
        if (!(along[TJP_LANE] >> b & 1))
            continue;
        for (uint32_t r = 0; r < n; r++) {
            if (r & fold)
                continue;
            LLVMValueRef v = shuffle(c, 1, acc[r], c_i32(c, 1 << b));
            LLVMValueRef i = is_arg ? shuffle(c, 1, acc_i[r], c_i32(c, 1 << b)) : NULL;
            combine(c, op->reduce, combine_dt, &acc[r], &acc_i[r], v, i);
        }
    }
    /* 3: warps along the axis, through shared memory in warp order: part p
     * of the partials holds the result tile, each element at its swizzled
     * index (the swizzle pass's choice for the result's layout) */
    tjp_shared_use use;
    if (along[TJP_WARP] && c->g.status == TJ_OK && !tjp_shared_use_of(c->g.fn, c->g.plan, c->g.cur_op, &use))
        FAIL(c, "internal error: the swizzle pass knows no shared memory for this reduction");
    if (along[TJP_WARP] && c->g.status == TJ_OK) {
        uint32_t parts = (uint32_t)use.parts;
        int64_t out_numel = use.numel;
        LLVMTypeRef ct = LLVMTypeOf(acc[0]);
        uint64_t vbytes = parts * (uint64_t)out_numel * type_bytes(c, ct);
        uint64_t ibase = (vbytes + 3) & ~(uint64_t)3;
        LLVMValueRef smem = shared(c, is_arg ? ibase + parts * (uint64_t)out_numel * 4 : vbytes);
        LLVMValueRef my_part = extract_bits(c, c->warp, along[TJP_WARP]);
        LLVMValueRef *oidx = tjs_xcalloc(n, sizeof(LLVMValueRef)), *iidx = tjs_xcalloc(n, sizeof(LLVMValueRef));
        LLVMValueRef tv = swizzled_thread_index(c, &use.swizzle, &use.write);
        LLVMValueRef ti = is_arg ? swizzled_thread_index(c, &use.index_swizzle, &use.write) : NULL;
        for (uint32_t r = 0; r < n; r++)
            if (!(r & fold)) {
                oidx[r] = swizzled_index(c, &use.swizzle, tv, &use.write, r);
                iidx[r] = is_arg ? swizzled_index(c, &use.index_swizzle, ti, &use.write, r) : NULL;
            }
        LLVMValueRef my_base = LLVMBuildMul(c->g.b, my_part, c_i32(c, out_numel), "");
        shared_begin(c);
        for (uint32_t r = 0; r < n; r++) {
            if (r & fold)
                continue;
            shared_store(c, smem, 0, LLVMBuildAdd(c->g.b, my_base, oidx[r], ""), acc[r]);
            if (is_arg)
                shared_store(c, smem, ibase, LLVMBuildAdd(c->g.b, my_base, iidx[r], ""), acc_i[r]);
        }
        barrier(c);
        LLVMValueRef lane_part = use.part_lanes ? extract_bits(c, c->lane, use.part_lanes) : NULL;
        for (uint32_t r = 0; use.part_lanes && r < n; r++) {
            /* lane l reads part p(l); butterflies over those lane bits */
            if (r & fold)
                continue;
            LLVMValueRef at = LLVMBuildMul(c->g.b, lane_part, c_i32(c, out_numel), "");
            acc[r] = shared_load(c, smem, 0, ct, LLVMBuildAdd(c->g.b, oidx[r], at, ""));
            if (is_arg)
                acc_i[r] = shared_load(c, smem, ibase, c->g.t_i32, LLVMBuildAdd(c->g.b, iidx[r], at, ""));
            for (int b = 0; b < 32; b++) {
                if (!(use.part_lanes >> b & 1))
                    continue;
                LLVMValueRef v = shuffle(c, 1, acc[r], c_i32(c, 1 << b));
                LLVMValueRef i = is_arg ? shuffle(c, 1, acc_i[r], c_i32(c, 1 << b)) : NULL;
                combine(c, op->reduce, combine_dt, &acc[r], &acc_i[r], v, i);
            }
        }
        for (uint32_t r = 0; !use.part_lanes && r < n; r++) {
            if (r & fold)
                continue;
            for (uint32_t p = 0; p < parts; p++) {
                LLVMValueRef slot = LLVMBuildAdd(c->g.b, oidx[r], c_i32(c, (int64_t)p * out_numel), "");
                LLVMValueRef v = shared_load(c, smem, 0, ct, slot);
                LLVMValueRef i = NULL;
                if (is_arg)
                    i = shared_load(c, smem, ibase, c->g.t_i32,
                                    LLVMBuildAdd(c->g.b, iidx[r], c_i32(c, (int64_t)p * out_numel), ""));
                if (!p) {
                    acc[r] = v;
                    acc_i[r] = i;
                } else {
                    combine(c, op->reduce, combine_dt, &acc[r], &acc_i[r], v, i);
                }
            }
        }
        free(oidx);
        free(iidx);
    }
    if (c->g.status == TJ_OK) {
        LLVMValueRef *out = rt->rank > 0 ? regs_for(c, id) : NULL;
        for (uint32_t r = 0; r < (rt->rank > 0 ? n : 1); r++) {
            uint32_t k = r & ~fold;
            LLVMValueRef v = is_arg ? acc_i[k] : acc[k];
            if (by_key && !is_arg)
                v = tjj_gpu_from_order_key(&c->g, v, dt, is_max, op->propagate_nan);
            if (is_float && !is_arg)
                v = tjj_gpu_fround(&c->g, v, dt);
            if (out)
                out[r] = v;
            else
                c->ssa[id] = v;
        }
    }
    free(acc);
    free(acc_i);
}

/* Inclusive prefix sums through shared memory: each element is the
 * sequential sum of its prefix along the axis (the CPU's order). */
static void emit_cumsum(codegen *c, const tji_op *op)
{
    int32_t x = op->args[0], id = op->result;
    if (!check_same_layout(c, x, id))
        return;
    const tji_type *t = type_of(c, id);
    const tjp_layout *L = layout_of(c, id);
    tj_dtype dt = t->dtype;
    int is_float = tjs_dtype_is_float(dt), shift = dim_shift(t, op->axis);
    uint32_t axis_bits = (uint32_t)((t->shape[op->axis] - 1) << shift);
    LLVMTypeRef ct = tjj_gpu_compute_type(&c->g, dt);
    LLVMValueRef smem = shared(c, (uint64_t)tji_numel(t) * type_bytes(c, ct));
    uint32_t n = (uint32_t)nregs_of(c, id), rdup = reg_dup_mask(L);
    LLVMBuilderRef b = c->g.b;
    tjp_shared_use use;
    if (!tjp_shared_use_of(c->g.fn, c->g.plan, c->g.cur_op, &use)) {
        FAIL(c, "internal error: the swizzle pass knows no shared memory for this scan");
        return;
    }
    const tjp_swizzle *S = &use.swizzle;
    LLVMValueRef ts = swizzled_thread_index(c, S, L);
    shared_begin(c);
    for (uint32_t r = 0; r < n; r++)
        if (!(r & rdup))
            shared_store(c, smem, 0, swizzled_index(c, S, ts, L, r), tjj_gpu_fext(&c->g, reg(c, x, r), dt));
    barrier(c);
    LLVMValueRef *out = regs_for(c, id);
    for (uint32_t r = 0; r < n; r++) {
        if (r & rdup) {
            out[r] = out[r & ~rdup];
            continue;
        }
        LLVMValueRef e = element_index(c, L, r);
        LLVMValueRef last = coordinate(c, t, e, op->axis);
        LLVMValueRef base = swizzled(c, b, S, LLVMBuildAnd(b, e, c_i32(c, ~axis_bits), ""), ~axis_bits);
        LLVMBasicBlockRef pre = LLVMGetInsertBlock(b), loop = new_block(c, "cumsum"), done = new_block(c, "cumsum.end");
        LLVMBuildBr(b, loop);
        LLVMPositionBuilderAtEnd(b, loop);
        LLVMValueRef k = LLVMBuildPhi(b, c->g.t_i32, "k"), acc = LLVMBuildPhi(b, ct, "acc");
        LLVMValueRef at = LLVMBuildXor(b, base, swizzled(c, b, S, LLVMBuildShl(b, k, c_i32(c, shift), ""), axis_bits), "");
        LLVMValueRef v = shared_load(c, smem, 0, ct, at);
        LLVMValueRef next = is_float ? LLVMBuildFAdd(b, acc, v, "") : LLVMBuildAdd(b, acc, v, "");
        LLVMValueRef next_k = LLVMBuildAdd(b, k, c_i32(c, 1), "");
        LLVMValueRef zero_k = c_i32(c, 0), zero = LLVMConstNull(ct);
        LLVMAddIncoming(k, &zero_k, &pre, 1);
        LLVMAddIncoming(k, &next_k, &loop, 1);
        LLVMAddIncoming(acc, &zero, &pre, 1);
        LLVMAddIncoming(acc, &next, &loop, 1);
        LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULE, next_k, last, ""), loop, done);
        LLVMPositionBuilderAtEnd(b, done);
        out[r] = is_float ? tjj_gpu_fround(&c->g, next, dt) : next;
    }
}

/* --- print and assert ------------------------------------------------------------------------ */

static LLVMValueRef const_string(codegen *c, const char *s)
{
    LLVMValueRef init = LLVMConstStringInContext2(c->g.ctx, s, strlen(s), 0);
    LLVMValueRef gv = LLVMAddGlobalInAddressSpace(c->g.mod, LLVMTypeOf(init), "tjk_str", ADDR_CONST);
    LLVMSetInitializer(gv, init);
    LLVMSetGlobalConstant(gv, 1);
    LLVMSetLinkage(gv, LLVMPrivateLinkage);
    LLVMSetUnnamedAddress(gv, LLVMGlobalUnnamedAddr);
    return LLVMConstAddrSpaceCast(gv, c->g.t_ptr);
}

static LLVMValueRef entry_alloca(codegen *c, LLVMTypeRef t)
{
    LLVMValueRef a = LLVMBuildAlloca(c->eb, t, "");
    if (LLVMGetPointerAddressSpace(LLVMTypeOf(a)) != 0)
        a = LLVMBuildAddrSpaceCast(c->eb, a, c->g.t_ptr, "");
    return a;
}

/* vprintf's format and the value as vprintf takes it (ints promoted to 32
 * or 64 bits, floats to double, i1 as the string true/false). */
static const char *print_format(codegen *c, const tji_type *t, LLVMValueRef *v)
{
    LLVMBuilderRef b = c->g.b;
    if (t->is_ptr) {
        *v = LLVMBuildPtrToInt(b, *v, c->g.t_i64, "");
        return "%llu";
    }
    switch (t->dtype) {
    case TJ_I1:
        *v = LLVMBuildSelect(b, *v, const_string(c, "true"), const_string(c, "false"), "");
        return "%s";
    case TJ_I8: case TJ_I16:
        *v = LLVMBuildSExt(b, *v, c->g.t_i32, "");
        return "%d";
    case TJ_I32: return "%d";
    case TJ_U8: case TJ_U16:
        *v = LLVMBuildZExt(b, *v, c->g.t_i32, "");
        return "%u";
    case TJ_U32: return "%u";
    case TJ_I64: return "%lld";
    case TJ_U64: return "%llu";
    case TJ_F64: return "%g";
    default:
        *v = LLVMBuildFPExt(b, tjj_gpu_fext(&c->g, *v, t->dtype), c->g.t_double, "");
        return "%g";
    }
}

static void emit_print(codegen *c, const tji_op *op)
{
    int32_t x = op->args[0];
    const tji_type *t = type_of(c, x);
    LLVMBuilderRef b = c->g.b;
    tjs_buf fmt = {0};
    for (const char *p = op->str ? op->str : ""; *p; p++)
        tjs_buf_printf(&fmt, "%s", *p == '%' ? "%%" : (char[2]){*p, 0});
    tjs_buf_printf(&fmt, " (%%d, %%d, %%d)");
    if (t->rank > 0) {
        tjs_buf_printf(&fmt, " [");
        for (int d = 0; d < t->rank; d++)
            tjs_buf_printf(&fmt, "%s%%d", d ? "," : "");
        tjs_buf_printf(&fmt, "]");
    }
    const tjp_layout *L = t->rank > 0 ? layout_of(c, x) : NULL;
    uint32_t n = t->rank > 0 ? (uint32_t)nregs_of(c, x) : 1, rdup = L ? reg_dup_mask(L) : 0;
    LLVMValueRef owner = L ? owner_cond(c, L) : thread0_cond(c);
    LLVMValueRef format = NULL, args = NULL;
    LLVMTypeRef args_t = NULL;
    LLVMTypeRef vprintf_params[2] = {c->g.t_ptr, c->g.t_ptr};
    LLVMTypeRef vprintf_t = LLVMFunctionType(c->g.t_i32, vprintf_params, 2, 0);
    LLVMValueRef vprintf = LLVMGetNamedFunction(c->g.mod, "vprintf");
    if (!vprintf)
        vprintf = LLVMAddFunction(c->g.mod, "vprintf", vprintf_t);
    for (uint32_t r = 0; r < n; r++) {
        if (r & rdup)
            continue;
        LLVMBasicBlockRef cont = guard_begin(c, owner, "print");
        LLVMValueRef v = reg(c, x, r);
        const char *vf = print_format(c, t, &v);
        LLVMValueRef fields[3 + TJ_MAX_RANK + 1];
        int nf = 0;
        for (int i = 0; i < 3; i++)
            fields[nf++] = c->pid[i];
        if (L) {
            LLVMValueRef e = element_index(c, L, r);
            for (int d = 0; d < t->rank; d++)
                fields[nf++] = coordinate(c, t, e, d);
        }
        fields[nf++] = v;
        if (!format) {
            tjs_buf_printf(&fmt, ": %s\n", vf);
            format = const_string(c, fmt.data);
            LLVMTypeRef types[3 + TJ_MAX_RANK + 1];
            for (int i = 0; i < nf; i++)
                types[i] = LLVMTypeOf(fields[i]);
            args_t = LLVMStructTypeInContext(c->g.ctx, types, (unsigned)nf, 0);
            args = entry_alloca(c, args_t);
        }
        for (int i = 0; i < nf; i++)
            LLVMBuildStore(b, fields[i], LLVMBuildStructGEP2(b, args_t, args, (unsigned)i, ""));
        LLVMValueRef call_args[2] = {format, args};
        LLVMBuildCall2(b, vprintf_t, vprintf, call_args, 2, "");
        guard_end(c, cont);
    }
    tjs_buf_free(&fmt);
}

/* A false element: the first failing thread of the launch records the op
 * and the program in the assert record; the kernel goes on. */
static void emit_assert(codegen *c, const tji_op *op)
{
    int32_t x = op->args[0];
    LLVMBuilderRef b = c->g.b;
    uint32_t n = 1, rdup = 0;
    if (rank_of(c, x) > 0) {
        n = (uint32_t)nregs_of(c, x);
        rdup = reg_dup_mask(layout_of(c, x));
    }
    LLVMValueRef bad = NULL;
    for (uint32_t r = 0; r < n; r++)
        if (!(r & rdup)) {
            LLVMValueRef f = LLVMBuildNot(b, reg(c, x, r), "");
            bad = bad ? LLVMBuildOr(b, bad, f, "") : f;
        }
    LLVMBasicBlockRef cont = guard_begin(c, bad, "assert.fail");
    LLVMValueRef won;
    atomic_cas(c, c->assert_info, c_i32(c, 0), c_i32(c, 1), &won);
    LLVMBasicBlockRef cont2 = guard_begin(c, won, "assert.record");
    LLVMValueRef fields[4] = {c_i32(c, c->g.cur_op), c->pid[0], c->pid[1], c->pid[2]};
    for (int i = 0; i < 4; i++) {
        LLVMValueRef off = c_i64(c, 4 + 4 * i);
        LLVMValueRef p = LLVMBuildInBoundsGEP2(b, c->g.t_i8, c->assert_info, &off, 1, "");
        LLVMValueRef st = LLVMBuildStore(b, fields[i], p);
        LLVMSetVolatile(st, 1);
        LLVMSetAlignment(st, 4);
    }
    guard_end(c, cont2);
    guard_end(c, cont);
}

/* --- control flow ------------------------------------------------------------------------------ */

static void emit_region(codegen *c, int32_t rid, const tji_op **yield);

/* Phis (in the current block) for value id's registers, or its scalar. */
static void make_phis(codegen *c, int32_t id)
{
    LLVMTypeRef t = tjj_gpu_value_type(&c->g, type_of(c, id));
    if (rank_of(c, id) == 0) {
        c->ssa[id] = LLVMBuildPhi(c->g.b, t, "");
        return;
    }
    LLVMValueRef *out = regs_for(c, id);
    for (int r = 0; r < nregs_of(c, id); r++)
        out[r] = LLVMBuildPhi(c->g.b, t, "");
}

/* phi_of's phis get src's values coming from block `from`. */
static void add_incoming(codegen *c, int32_t phi_of, int32_t src, LLVMBasicBlockRef from)
{
    int n = rank_of(c, phi_of) > 0 ? nregs_of(c, phi_of) : 1;
    for (int r = 0; r < n; r++) {
        LLVMValueRef phi = reg(c, phi_of, (uint32_t)r), v = reg(c, src, (uint32_t)r);
        LLVMAddIncoming(phi, &v, &from, 1);
    }
}

/* Carried values share a layout wherever they appear (the plan's promise). */
static int check_carried(codegen *c, int32_t a, int32_t b)
{
    if (rank_of(c, a) != rank_of(c, b) || (rank_of(c, a) > 0 && !same_layout(layout_of(c, a), layout_of(c, b)))) {
        FAIL(c, "internal error: a carried value changes layout (values %d and %d)", (int)a, (int)b);
        return 0;
    }
    return 1;
}

static void emit_for(codegen *c, int32_t opi)
{
    const tji_func *fn = c->g.fn;
    const tji_op *op = &fn->ops[opi];
    const tji_region *region = &fn->regions[op->region[0]];
    LLVMBuilderRef b = c->g.b;
    int ncarried = op->nargs - 3;
    int is_signed = tjs_dtype_is_signed(type_of(c, op->args[0])->dtype);
    LLVMValueRef lo = reg(c, op->args[0], 0), hi = reg(c, op->args[1], 0), step = reg(c, op->args[2], 0);
    LLVMValueRef zero = LLVMConstNull(LLVMTypeOf(lo));
    for (int k = 0; k < ncarried; k++)
        if (!check_carried(c, op->args[3 + k], region->args[1 + k]) ||
            !check_carried(c, op->args[3 + k], op->result + k))
            return;

    /* Enter when the step moves lo toward hi; a zero step runs zero times. */
    LLVMValueRef up = is_signed ? LLVMBuildICmp(b, LLVMIntSGT, step, zero, "") : LLVMBuildICmp(b, LLVMIntNE, step, zero, "");
    LLVMValueRef down = is_signed ? LLVMBuildICmp(b, LLVMIntSLT, step, zero, "") : LLVMConstNull(c->g.t_i1);
    LLVMValueRef enter = LLVMBuildSelect(
        b, up, LLVMBuildICmp(b, is_signed ? LLVMIntSLT : LLVMIntULT, lo, hi, ""),
        LLVMBuildSelect(b, down, LLVMBuildICmp(b, LLVMIntSGT, lo, hi, ""), LLVMConstNull(c->g.t_i1), ""), "");
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(b), body = new_block(c, "for"), exit = new_block(c, "for.end");
    LLVMBuildCondBr(b, enter, body, exit);

    LLVMPositionBuilderAtEnd(b, body);
    int32_t iv_id = region->args[0];
    make_phis(c, iv_id);
    LLVMValueRef iv = c->ssa[iv_id];
    LLVMAddIncoming(iv, &lo, &pre, 1);
    for (int k = 0; k < ncarried; k++) {
        make_phis(c, region->args[1 + k]);
        add_incoming(c, region->args[1 + k], op->args[3 + k], pre);
    }

    /* What the body writes, the next trip's reads must see. */
    int stored_before = c->stored;
    c->stored |= region_writes(fn, op->region[0]);
    int32_t nloads_before, *loads_before = loads_save(c, &nloads_before);
    region_loads(c, op->region[0]);
    const tji_op *yield = NULL;
    c->loop_depth++;
    emit_region(c, op->region[0], &yield);
    c->loop_depth--;
    c->g.cur_op = opi;
    c->stored |= stored_before; /* the loop may run zero times */
    loads_restore(c, loads_before, nloads_before);
    if (c->g.status != TJ_OK)
        return;
    if (!yield || yield->nargs != ncarried) {
        FAIL(c, "internal error: the loop body does not end with a yield of %d values", ncarried);
        return;
    }
    for (int k = 0; k < ncarried; k++)
        if (!check_carried(c, yield->args[k], op->result + k))
            return;

    /* The next iteration; the test cannot overflow whatever the bounds. */
    LLVMValueRef next = LLVMBuildAdd(b, iv, step, "");
    LLVMValueRef left_up = LLVMBuildSub(b, hi, iv, ""), left_down = LLVMBuildSub(b, iv, hi, "");
    LLVMValueRef more = LLVMBuildSelect(b, up, LLVMBuildICmp(b, LLVMIntUGT, left_up, step, ""),
                                        LLVMBuildICmp(b, LLVMIntUGT, left_down, LLVMBuildSub(b, zero, step, ""), ""), "");
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(b);
    LLVMAddIncoming(iv, &next, &latch, 1);
    for (int k = 0; k < ncarried; k++)
        add_incoming(c, region->args[1 + k], yield->args[k], latch);
    LLVMBuildCondBr(b, more, body, exit);

    LLVMPositionBuilderAtEnd(b, exit);
    for (int k = 0; k < ncarried; k++) {
        int32_t res = op->result + k;
        make_phis(c, res);
        add_incoming(c, res, op->args[3 + k], pre);
        add_incoming(c, res, yield->args[k], latch);
    }
}

/* One arm of an IF; 0 on failure. */
static int emit_if_arm(codegen *c, int32_t opi, int arm, LLVMBasicBlockRef block, LLVMBasicBlockRef merge,
                       const tji_op **yield, LLVMBasicBlockRef *end)
{
    const tji_op *op = &c->g.fn->ops[opi];
    int n = op->nresults;
    LLVMPositionBuilderAtEnd(c->g.b, block);
    if (op->region[arm] >= 0)
        emit_region(c, op->region[arm], yield);
    c->g.cur_op = opi;
    if (c->g.status != TJ_OK)
        return 0;
    if (n > 0 && (!*yield || (*yield)->nargs != n)) {
        FAIL(c, "internal error: a branch does not end with a yield of %d values", n);
        return 0;
    }
    for (int k = 0; k < n; k++)
        if (!check_carried(c, (*yield)->args[k], op->result + k))
            return 0;
    *end = LLVMGetInsertBlock(c->g.b);
    LLVMBuildBr(c->g.b, merge);
    return 1;
}

static void emit_if(codegen *c, int32_t opi)
{
    const tji_func *fn = c->g.fn;
    const tji_op *op = &fn->ops[opi];
    LLVMBuilderRef b = c->g.b;
    int n = op->nresults;
    LLVMBasicBlockRef arms[2] = {new_block(c, "then"), new_block(c, "else")}, ends[2];
    LLVMBasicBlockRef merge = new_block(c, "if.end");
    const tji_op *yields[2] = {NULL, NULL};
    LLVMBuildCondBr(b, reg(c, op->args[0], 0), arms[0], arms[1]);
    int stored_before = c->stored;
    int32_t nloads_before, *loads_before = loads_save(c, &nloads_before), nloads_then;
    int ok = emit_if_arm(c, opi, 0, arms[0], merge, &yields[0], &ends[0]);
    int stored_after = c->stored;
    int32_t *loads_then = loads_save(c, &nloads_then);
    c->stored = stored_before; /* the else arm starts where the then arm did */
    for (int32_t i = 0; i < nloads_before; i++)
        load_pending(c, loads_before[i]);
    ok = ok && emit_if_arm(c, opi, 1, arms[1], merge, &yields[1], &ends[1]);
    stored_after |= c->stored;
    loads_restore(c, loads_then, nloads_then);
    loads_restore(c, loads_before, nloads_before);
    if (!ok)
        return;
    c->stored = stored_after;
    LLVMPositionBuilderAtEnd(b, merge);
    for (int k = 0; k < n; k++) {
        make_phis(c, op->result + k);
        for (int arm = 0; arm < 2; arm++)
            add_incoming(c, op->result + k, yields[arm]->args[k], ends[arm]);
    }
}

/* ASSUME: a fact for the passes; the value is its operand's. */
static void emit_assume(codegen *c, const tji_op *op)
{
    int32_t x = op->args[0], id = op->result;
    if (rank_of(c, id) == 0) {
        c->ssa[id] = reg(c, x, 0);
        return;
    }
    if (!check_same_layout(c, x, id))
        return;
    LLVMValueRef *out = regs_for(c, id);
    for (uint32_t r = 0; r < (uint32_t)nregs_of(c, id); r++)
        out[r] = reg(c, x, r);
}

static void emit_op(codegen *c, int32_t opi)
{
    const tji_op *op = &c->g.fn->ops[opi];
    c->g.cur_op = opi;
    switch (op->code) {
    case TJI_CONST: emit_const(c, op); return;
    case TJI_PROGRAM_ID: c->ssa[op->result] = c->pid[op->axis >= 0 && op->axis < 3 ? op->axis : 0]; return;
    case TJI_NUM_PROGRAMS: c->ssa[op->result] = c->nprog[op->axis >= 0 && op->axis < 3 ? op->axis : 0]; return;
    case TJI_ARANGE: emit_arange(c, op); return;
    case TJI_SPLAT: emit_splat(c, op); return;
    case TJI_BROADCAST: case TJI_EXPAND_DIMS: case TJI_RESHAPE: case TJI_PERMUTE: emit_shape_op(c, op); return;
    case TJI_CONVERT: emit_convert(c, op); return;
    case TJI_ASSUME: emit_assume(c, op); return;
    case TJI_LOAD: emit_load(c, op); break;
    case TJI_STORE: emit_store(c, op); break;
    case TJI_ATOMIC: case TJI_ATOMIC_CAS: emit_atomic(c, op); break;
    case TJI_REDUCE: emit_reduce(c, op); return;
    case TJI_CUMSUM: emit_cumsum(c, op); return;
    case TJI_FOR: emit_for(c, opi); return;
    case TJI_IF: emit_if(c, opi); return;
    case TJI_YIELD: return; /* read by the FOR or IF around it */
    case TJI_PRINT: emit_print(c, op); return;
    case TJI_ASSERT: emit_assert(c, op); return;
    default: emit_elementwise(c, op); return;
    }
    if (c->bounds) /* after a load, store or atomic */
        tjj_bounds_flush(c->bounds, c->g.b, opi);
}

static void emit_region(codegen *c, int32_t rid, const tji_op **yield)
{
    const tji_region *region = &c->g.fn->regions[rid];
    *yield = NULL;
    for (int32_t i = 0; i < region->nops && c->g.status == TJ_OK; i++) {
        const tji_op *op = &c->g.fn->ops[region->ops[i]];
        if (op->code == TJI_YIELD)
            *yield = op;
        else
            emit_op(c, region->ops[i]);
    }
}

/* --- the kernel -------------------------------------------------------------------------------- */

static tj_status tile_too_large(const tji_func *fn, int32_t op, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tj_status st = tji_verror_at(fn, op, TJ_ERR_COMPILE, fmt, ap);
    va_end(ap);
    return st;
}

/* A layout spreads a tile over 32 * num_warps threads, so a tile of more
 * than 2^MAX_REGS_LOG2 elements per thread is refused by check_plan below
 * in any layout: refused here before the layout passes spend seconds on
 * it (a 2048 x 2048 tile took 13.5 s to be refused). */
tj_status tjj_gpu_check_tile_sizes(const tji_func *fn, int num_warps)
{
    int64_t threads = 32 * (int64_t)(num_warps > 0 ? num_warps : 1), limit = threads << MAX_REGS_LOG2;
    int32_t largest = 0;
    for (int32_t id = 1; id <= fn->nvalues; id++)
        if (tji_numel(tji_typeof(fn, id)) > limit &&
            (!largest || tji_numel(tji_typeof(fn, id)) > tji_numel(tji_typeof(fn, largest))))
            largest = id;
    if (!largest)
        return TJ_OK;
    int64_t n = tji_numel(tji_typeof(fn, largest));
    return tile_too_large(fn, tji_val(fn, largest)->def_op,
                          "a tile of %lld elements needs at least %lld registers per thread with "
                          "num_warps=%d; the limit is %d (use a smaller tile or more warps)",
                          (long long)n, (long long)((n + threads - 1) / threads), num_warps,
                          1 << MAX_REGS_LOG2);
}

/* The plan must give every tile value a layout of its shape for num_warps;
 * and no tile may need more than 2^MAX_REGS_LOG2 distinct registers per
 * thread (registers that are copies cost nothing). The largest is blamed. */
static void check_plan(codegen *c)
{
    const tji_func *fn = c->g.fn;
    const tjp_layout_plan *plan = c->g.plan;
    if (c->num_warps < 1 || c->num_warps > 32 || (c->num_warps & (c->num_warps - 1))) {
        FAIL(c, "num_warps must be a power of two from 1 to 32, not %d", c->num_warps);
        return;
    }
    if (!plan->of || plan->nvalues < fn->nvalues) {
        FAIL(c, "internal error: the layout plan does not cover the kernel's values");
        return;
    }
    int32_t largest = 0;
    int largest_bits = 0;
    for (int32_t id = 1; id <= fn->nvalues; id++) {
        const tji_type *t = type_of(c, id);
        if (t->rank == 0)
            continue;
        const tjp_layout *L = layout_of(c, id);
        int ok = L->rank == t->rank && L->nbits[TJP_REG] <= TJP_MAX_BITS && L->nbits[TJP_LANE] <= 5 &&
                 L->nbits[TJP_WARP] <= c->warp_bits;
        for (int d = 0; ok && d < t->rank; d++)
            ok = L->shape[d] == t->shape[d];
        for (int in = 0; ok && in < TJP_NIN; in++)
            for (int b = 0; ok && b < L->nbits[in]; b++)
                ok = L->basis[in][b] < (uint32_t)tji_numel(t);
        if (!ok) {
            c->g.cur_op = tji_val(fn, id)->def_op;
            FAIL(c, "internal error: value %d has no valid layout in the plan", (int)id);
            return;
        }
        int bits = L->nbits[TJP_REG] - __builtin_popcount(reg_dup_mask(L));
        if (bits > largest_bits || L->nbits[TJP_REG] > 2 * MAX_REGS_LOG2) {
            largest = id;
            largest_bits = L->nbits[TJP_REG] > 2 * MAX_REGS_LOG2 ? L->nbits[TJP_REG] : bits;
        }
    }
    if (largest_bits > MAX_REGS_LOG2) {
        c->g.cur_op = tji_val(fn, largest)->def_op;
        FAIL(c, "a tile of %lld elements needs %d registers per thread with num_warps=%d; the limit is %d "
                "(use a smaller tile or more warps)",
             (long long)tji_numel(type_of(c, largest)), 1 << largest_bits, c->num_warps, 1 << MAX_REGS_LOG2);
        return;
    }
    c->g.cur_op = -1;
}

static void count_uses(codegen *c)
{
    const tji_func *fn = c->g.fn;
    for (int32_t i = 0; i < fn->nops; i++)
        for (int a = 0; a < fn->ops[i].nargs; a++) {
            int32_t v = fn->ops[i].args[a];
            if (v > 0 && v <= fn->nvalues)
                c->uses[v]++;
        }
}

static LLVMTypeRef param_type(const codegen *c, const tji_param *p)
{
    if (p->is_ptr)
        return c->g.t_gptr;
    switch (p->dtype) {
    case TJ_I1: return c->g.t_i8;
    case TJ_F16: case TJ_BF16: return c->g.t_i16;
    default: return tjj_gpu_dtype_type(&c->g, p->dtype);
    }
}

static void build_kernel(codegen *c, const char *entry_name)
{
    const tji_func *fn = c->g.fn;
    int np = fn->nparams, nsizes = fn->check_bounds ? tjj_bounds_nbuffers(fn) : 0;
    LLVMTypeRef *params = tjs_xcalloc((size_t)(np + 1 + nsizes), sizeof(LLVMTypeRef));
    for (int i = 0; i < np; i++)
        params[i] = param_type(c, &fn->params[i]);
    params[np] = c->g.t_gptr;
    for (int k = 0; k < nsizes; k++) /* bounds.h: each buffer's bytes */
        params[np + 1 + k] = c->g.t_i64;
    LLVMTypeRef fty = LLVMFunctionType(c->g.t_void, params, (unsigned)(np + 1 + nsizes), 0);
    free(params);
    LLVMValueRef f = c->g.func = LLVMAddFunction(c->g.mod, entry_name, fty);
    LLVMSetFunctionCallConv(f, LLVMPTXKernelCallConv);
    char ntid[16];
    snprintf(ntid, sizeof ntid, "%d", c->num_warps * 32);
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(c->g.ctx, "nvvm.reqntid", 12, ntid, (unsigned)strlen(ntid)));
    unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c->g.ctx, nounwind, 0));

    c->entry = new_block(c, "entry");
    LLVMPositionBuilderAtEnd(c->eb, c->entry);
    static const char *const axes = "xyz";
    char name[48];
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "llvm.nvvm.read.ptx.sreg.ctaid.%c", axes[i]);
        c->pid[i] = call_intrinsic0(c, c->eb, name);
        snprintf(name, sizeof name, "llvm.nvvm.read.ptx.sreg.nctaid.%c", axes[i]);
        c->nprog[i] = call_intrinsic0(c, c->eb, name);
    }
    c->tid = call_intrinsic0(c, c->eb, "llvm.nvvm.read.ptx.sreg.tid.x");
    c->lane = LLVMBuildAnd(c->eb, c->tid, c_i32(c, 31), "lane");
    c->warp = LLVMBuildLShr(c->eb, c->tid, c_i32(c, 5), "warp");
    c->assert_info = LLVMGetParam(f, (unsigned)np);
    for (int i = 0; i < np; i++) {
        const tji_param *p = &fn->params[i];
        LLVMValueRef v = LLVMGetParam(f, (unsigned)i);
        if (!p->is_ptr && p->dtype == TJ_I1)
            v = LLVMBuildICmp(c->eb, LLVMIntNE, v, LLVMConstNull(c->g.t_i8), "");
        else if (!p->is_ptr && p->dtype == TJ_F16)
            v = LLVMBuildBitCast(c->eb, v, c->g.t_half, "");
        if (p->value > 0 && p->value <= fn->nvalues)
            c->ssa[p->value] = v;
    }
    if (fn->check_bounds)
        c->bounds = tjj_bounds_new_gpu(fn, c->g.ctx, c->eb, c->ssa, f, (unsigned)np + 1, c->assert_info, c->pid,
                                       c->g.device_scope);

    LLVMBasicBlockRef body = new_block(c, "body");
    LLVMPositionBuilderAtEnd(c->g.b, body);
    const tji_op *yield = NULL;
    emit_region(c, 0, &yield);
    LLVMBuildRetVoid(c->g.b);
    LLVMBuildBr(c->eb, body);

    if (c->smem) { /* now that the largest use is known */
        LLVMTypeRef at = LLVMArrayType2(c->g.t_i8, c->smem_bytes);
        LLVMValueRef gv = LLVMAddGlobalInAddressSpace(c->g.mod, at, "tjk_shared", ADDR_SHARED);
        LLVMSetInitializer(gv, LLVMGetUndef(at));
        LLVMSetLinkage(gv, LLVMInternalLinkage);
        LLVMSetAlignment(gv, 16);
        LLVMReplaceAllUsesWith(c->smem, gv);
        LLVMDeleteGlobal(c->smem);
        c->smem = gv;
    }
}

/* --- target and compile ---------------------------------------------------------------------------- */

static pthread_once_t nvptx_once = PTHREAD_ONCE_INIT;

static void nvptx_init(void)
{
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
}

/* The PTX ISA: 8.0 (CUDA 12.0) covers sm_80..sm_90; newer chips need the
 * version that introduced them. */
static const char *ptx_features(int sm)
{
    if (sm >= 120)
        return "+ptx87";
    if (sm >= 100)
        return "+ptx86";
    return "+ptx80";
}

static void dump_module(LLVMModuleRef mod, const char *name, const char *when)
{
    char *text = LLVMPrintModuleToString(mod);
    fprintf(stderr, "; ---- tjit: LLVM IR of GPU kernel '%s' %s optimization ----\n%s", name, when, text);
    LLVMDisposeMessage(text);
}

static char *entry_name_of(const char *name)
{
    char *s = tjs_asprintf("tjk_%s", name ? name : "kernel");
    for (char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
            *p = '_';
    return s;
}

static tj_status compile_error(const char *name, const char *what, char *msg)
{
    tj_status st = tjs_error(TJ_ERR_COMPILE, "error: in kernel '%s': %s: %s", name, what, msg ? msg : "?");
    if (msg)
        LLVMDisposeMessage(msg);
    return st;
}

/* The PTX LLVM wrote, with every `neg.s16 d, a;` (and `abs.s16`) done in
 * 32 bits:
 *     { .reg .b32 %tjn; cvt.s32.s16 %tjn, a; neg.s32 %tjn, %tjn; cvt.u16.u32 d, %tjn; }
 * ptxas (CUDA 13, and the driver's JIT on the H200) keeps a 16-bit value
 * sign-extended in a 32-bit register and assumes neg.s16 leaves it so; the
 * negation of -32768 does not (it is +32768 there, where 16 bits wrap to
 * -32768), and a later arithmetic shift then sees a positive number: an
 * i16 -(-32768) >> 2 gave 8192 instead of -8192, and i8 negations, which
 * LLVM widens to neg.s16 of x << 8, went wrong the same way. abs.s16 has
 * the same edge. The explicit truncation makes ptxas sign-extend again.
 * Malloc'ed, NUL-terminated. */
static char *ptx_without_s16_neg_abs(const char *ptx, size_t len)
{
    static const char *const ops[] = {"neg", "abs"};
    tjs_buf b = {0};
    const char *p = ptx, *end = ptx + len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = eol ? eol + 1 : end;
        const char *at = p;
        while (at < line_end && (*at == ' ' || *at == '\t'))
            at++;
        char d[32], a[32];
        int op = -1;
        for (int k = 0; k < 2 && op < 0; k++)
            if (line_end - at > 8 && !memcmp(at, ops[k], 3) && !memcmp(at + 3, ".s16", 4) &&
                sscanf(at + 7, " %31[^, ] , %31[^; ] ;", d, a) == 2)
                op = k;
        if (op >= 0)
            tjs_buf_printf(&b, "\t{ .reg .b32 %%tjn; cvt.s32.s16 %%tjn, %s; %s.s32 %%tjn, %%tjn; "
                           "cvt.u16.u32 %s, %%tjn; }\n", a, ops[op], d);
        else
            tjs_buf_printf(&b, "%.*s", (int)(line_end - p), p);
        p = line_end;
    }
    return b.data ? b.data : tjs_xstrdup("");
}

/* Codegen into mod; returns the status (the message is set on failure). */
static tj_status generate(codegen *c, const char *entry_name)
{
    const tji_func *fn = c->g.fn;
    c->ssa = tjs_xcalloc((size_t)fn->nvalues + 1, sizeof(LLVMValueRef));
    c->regs = tjs_xcalloc((size_t)fn->nvalues + 1, sizeof(LLVMValueRef *));
    c->uses = tjs_xcalloc((size_t)fn->nvalues + 1, sizeof(int32_t));
    c->loads = tjs_xmalloc(sizeof(int32_t) * ((size_t)fn->nops + 1));
    c->is_load_pending = tjs_xcalloc((size_t)fn->nops + 1, 1);
    tjp_find_provenance(fn, &c->prov);
    c->eb = LLVMCreateBuilderInContext(c->g.ctx);
    c->g.b = LLVMCreateBuilderInContext(c->g.ctx);
    check_plan(c);
    count_uses(c);
    if (c->g.status == TJ_OK)
        build_kernel(c, entry_name);
    LLVMDisposeBuilder(c->g.b);
    LLVMDisposeBuilder(c->eb);
    tjj_bounds_free(c->bounds);
    for (int32_t id = 0; id <= fn->nvalues; id++)
        free(c->regs[id]);
    free(c->regs);
    free(c->ssa);
    free(c->uses);
    free(c->loads);
    free(c->is_load_pending);
    tjp_provenance_free(&c->prov);
    free(c->parts);
    return c->g.status;
}

tj_status tjj_gpu_compile(const tji_func *fn, const tjp_layout_plan *plan, int sm, tjj_gpu_code *out)
{
    memset(out, 0, sizeof *out);
    if (!fn || !plan)
        return tjs_error(TJ_ERR_INVALID_ARG, "tjj_gpu_compile: no program or no layout plan");
    if (sm < 70)
        return tjs_error(TJ_ERR_UNSUPPORTED, "error: in kernel '%s': GPU code needs sm_70 or newer, not sm_%d",
                         fn->name, sm);
    pthread_once(&nvptx_once, nvptx_init);
    LLVMTargetRef target;
    char *msg = NULL;
    if (LLVMGetTargetFromTriple(TRIPLE, &target, &msg))
        return compile_error(fn->name, "the NVPTX target is not available", msg);
    char cpu[16];
    snprintf(cpu, sizeof cpu, "sm_%d", sm);
    LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, TRIPLE, cpu, ptx_features(sm),
                                                      LLVMCodeGenLevelAggressive, LLVMRelocDefault,
                                                      LLVMCodeModelDefault);
    if (!tm)
        return tjs_error(TJ_ERR_COMPILE, "error: in kernel '%s': LLVM cannot target %s", fn->name, cpu);

    LLVMContextRef ctx = LLVMContextCreate();
    char *entry = entry_name_of(fn->name);
    codegen c = {.g = {.fn = fn, .plan = plan, .ctx = ctx, .cur_op = -1, .status = TJ_OK},
                 .num_warps = plan->num_warps};
    c.warp_bits = log2_of(plan->num_warps > 0 ? plan->num_warps : 1);
    c.g.t_void = LLVMVoidTypeInContext(ctx);
    c.g.t_i1 = LLVMInt1TypeInContext(ctx);
    c.g.t_i8 = LLVMInt8TypeInContext(ctx);
    c.g.t_i16 = LLVMInt16TypeInContext(ctx);
    c.g.t_i32 = LLVMInt32TypeInContext(ctx);
    c.g.t_i64 = LLVMInt64TypeInContext(ctx);
    c.g.t_half = LLVMHalfTypeInContext(ctx);
    c.g.t_float = LLVMFloatTypeInContext(ctx);
    c.g.t_double = LLVMDoubleTypeInContext(ctx);
    c.g.t_ptr = LLVMPointerTypeInContext(ctx, 0);
    c.g.t_gptr = LLVMPointerTypeInContext(ctx, ADDR_GLOBAL);
    c.g.device_scope = LLVMGetSyncScopeID(ctx, "device", 6);
    LLVMModuleRef mod = c.g.mod = LLVMModuleCreateWithNameInContext(entry, ctx);
    LLVMSetTarget(mod, TRIPLE);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(mod, td);
    LLVMDisposeTargetData(td);

    tj_status st = generate(&c, entry);
    if (st == TJ_OK && LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg))
        st = compile_error(fn->name, "internal error: invalid LLVM IR", msg);
    else if (msg)
        LLVMDisposeMessage(msg);
    msg = NULL;
    if (st == TJ_OK) {
        if (tjs_dump_enabled("llvm"))
            dump_module(mod, fn->name, "before");
        LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
        LLVMErrorRef err = LLVMRunPasses(mod, "default<O3>", tm, opts);
        LLVMDisposePassBuilderOptions(opts);
        if (err) {
            char *m = LLVMGetErrorMessage(err);
            st = tjs_error(TJ_ERR_COMPILE, "error: in kernel '%s': LLVM optimization failed: %s", fn->name, m);
            LLVMDisposeErrorMessage(m);
        }
        else if (tjs_dump_enabled("llvm"))
            dump_module(mod, fn->name, "after");
    }
    LLVMMemoryBufferRef buf = NULL;
    if (st == TJ_OK && LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &msg, &buf))
        st = compile_error(fn->name, "PTX generation failed", msg);
    if (st == TJ_OK) {
        const char *text = LLVMGetBufferStart(buf);
        size_t len = LLVMGetBufferSize(buf);
        if (memmem(text, len, "neg.s16", 7) || memmem(text, len, "abs.s16", 7)) {
            out->ptx = ptx_without_s16_neg_abs(text, len);
        } else {
            out->ptx = tjs_xmalloc(len + 1);
            memcpy(out->ptx, text, len);
            out->ptx[len] = 0;
        }
        LLVMDisposeMemoryBuffer(buf);
        out->entry = entry;
        entry = NULL;
        out->shared_bytes = (size_t)c.smem_bytes;
        out->num_warps = plan->num_warps;
        if (tjs_dump_enabled("ptx"))
            fprintf(stderr, "// ---- tjit: PTX of kernel '%s' (sm_%d) ----\n%s", fn->name, sm, out->ptx);
    }
    free(entry);
    LLVMDisposeModule(mod);
    LLVMContextDispose(ctx);
    LLVMDisposeTargetMachine(tm);
    return st;
}

void tjj_gpu_code_free(tjj_gpu_code *code)
{
    if (!code)
        return;
    free(code->ptx);
    free(code->entry);
    memset(code, 0, sizeof *code);
}
