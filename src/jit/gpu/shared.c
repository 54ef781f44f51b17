/* SPDX-License-Identifier: MIT */
/*
 * shared.c — shared memory, barriers, warp shuffles and CONVERT.
 *
 * Shared memory is one static array, sized to the largest single use; each
 * use begins with a barrier (earlier readers are done; not needed before
 * the first read in a kernel outside loops) and has one between its writes
 * and its reads. More than 48 KiB is a compile error naming the op.
 *
 * Memory order: a load after a store, or an atomic after a store, sees
 * what other threads stored (a barrier in between; see order_after_stores).
 * A store or atomic after a load that may read what it overwrites, from
 * another thread, waits for that load (a barrier; see order_after_loads).
 *
 * Broadcasts hand a value from its owner to its copies: a shuffle within a
 * warp, shared memory across warps (an atomic's old value, a scalar that
 * thread 0 computed). CONVERT is a copy or a permutation of registers where
 * the threads hold the same elements, else it goes through shared memory,
 * at addresses swizzled so that neither the writes nor the reads wait on
 * bank conflicts (swizzle.c chooses).
 */
#include <stdlib.h>
#include <string.h>

#include "gen.h"

/* --- shared memory and warp primitives ------------------------------------------------- */

/* The shared array, for a use of `bytes`; fails past the limit. */
LLVMValueRef tjj_gpu_shared(codegen *c, uint64_t bytes)
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
void tjj_gpu_barrier(codegen *c)
{
    LLVMValueRef zero = c_i32(c, 0);
    tjj_gpu_intrinsic(&c->g, "llvm.nvvm.barrier.cta.sync.aligned.all", NULL, 0, &zero, 1);
    c->stored = 0;
    for (int32_t i = 0; i < c->nloads; i++)
        c->is_load_pending[c->loads[i]] = 0;
    c->nloads = 0;
}

void tjj_gpu_load_pending(codegen *c, int32_t opi)
{
    if (c->is_load_pending[opi])
        return;
    c->is_load_pending[opi] = 1;
    c->loads[c->nloads++] = opi;
}

/* The pending loads, copied (malloc'ed; *n of them), to add back later. */
int32_t *tjj_gpu_loads_save(const codegen *c, int32_t *n)
{
    *n = c->nloads;
    int32_t *copy = tjs_xmalloc(sizeof(int32_t) * ((size_t)c->nloads + 1));
    memcpy(copy, c->loads, sizeof(int32_t) * (size_t)c->nloads);
    return copy;
}

void tjj_gpu_loads_restore(codegen *c, int32_t *saved, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        tjj_gpu_load_pending(c, saved[i]);
    free(saved);
}

/* The loads of region rid and the regions inside it: pending at the top of
 * a loop body, since the previous trip did them. */
void tjj_gpu_region_loads(codegen *c, int32_t rid)
{
    const tji_region *region = &c->g.fn->regions[rid];
    for (int32_t i = 0; i < region->nops; i++) {
        const tji_op *op = &c->g.fn->ops[region->ops[i]];
        if (op->code == TJI_LOAD)
            tjj_gpu_load_pending(c, region->ops[i]);
        for (int k = 0; k < 2; k++)
            if (op->region[k] >= 0)
                tjj_gpu_region_loads(c, op->region[k]);
    }
}

/* Before a shared-memory use writes the buffer: a barrier, so that the
 * readers of an earlier use are done with it — unless nothing has read
 * shared memory yet and no loop can bring an earlier use back. */
void tjj_gpu_shared_begin(codegen *c)
{
    if (c->smem_read || c->loop_depth)
        tjj_gpu_barrier(c);
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
void tjj_gpu_order_after_stores(codegen *c, int kinds)
{
    if (c->stored & kinds)
        tjj_gpu_barrier(c);
}

/* Before a store or an atomic to ptr: a load since the last barrier that
 * may read an address this write changes (alias.c), in another thread
 * than the one writing it, must be done first, as in the CPU's program
 * order (an in-place reversal or transpose). The write needs no barrier
 * where the load is of the same address expression, in the same layout,
 * each element held by one thread only: then every element is loaded and
 * overwritten by one thread, in order. */
void tjj_gpu_order_after_loads(codegen *c, int32_t ptr)
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
        tjj_gpu_barrier(c);
        return;
    }
}

/* The STORED_* kinds of the writes in region rid and the regions inside it. */
int tjj_gpu_region_writes(const tji_func *fn, int32_t rid)
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
                kinds |= tjj_gpu_region_writes(fn, op->region[k]);
    }
    return kinds;
}

/* i1 is kept as a byte in shared memory. */
static LLVMValueRef shared_at(codegen *c, LLVMValueRef smem, uint64_t base, LLVMTypeRef t, LLVMValueRef index)
{
    LLVMValueRef off = c_i64(c, (int64_t)base);
    LLVMValueRef start = LLVMBuildInBoundsGEP2(c->g.b, c->g.t_i8, smem, &off, 1, "");
    LLVMValueRef idx = LLVMBuildZExt(c->g.b, index, c->g.t_i64, "");
    return LLVMBuildInBoundsGEP2(c->g.b, shared_type(c, t), start, &idx, 1, "");
}

void tjj_gpu_shared_store(codegen *c, LLVMValueRef smem, uint64_t base, LLVMValueRef index, LLVMValueRef v)
{
    LLVMTypeRef t = LLVMTypeOf(v);
    if (t == c->g.t_i1)
        v = LLVMBuildZExt(c->g.b, v, c->g.t_i8, "");
    LLVMValueRef st = LLVMBuildStore(c->g.b, v, shared_at(c, smem, base, t, index));
    LLVMSetAlignment(st, (unsigned)type_bytes(c, t));
}

LLVMValueRef tjj_gpu_shared_load(codegen *c, LLVMValueRef smem, uint64_t base, LLVMTypeRef t, LLVMValueRef index)
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
LLVMValueRef tjj_gpu_shuffle(codegen *c, int butterfly, LLVMValueRef v, LLVMValueRef arg)
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
LLVMValueRef tjj_gpu_broadcast_scalar(codegen *c, LLVMValueRef v)
{
    if (c->num_warps == 1)
        return tjj_gpu_shuffle(c, 0, v, c_i32(c, 0));
    LLVMValueRef smem = tjj_gpu_shared(c, type_bytes(c, LLVMTypeOf(v)));
    tjj_gpu_shared_begin(c);
    LLVMBasicBlockRef cont = guard_begin(c, tjj_gpu_thread0_cond(c), "bcast");
    tjj_gpu_shared_store(c, smem, 0, c_i32(c, 0), v);
    guard_end(c, cont);
    tjj_gpu_barrier(c);
    return tjj_gpu_shared_load(c, smem, 0, LLVMTypeOf(v), c_i32(c, 0));
}

/* vals (registers of layout L) are right in the owning slots; make every
 * copy hold its owner's value. */
void tjj_gpu_broadcast_from_owners(codegen *c, const tjp_layout *L, const tji_type *t, LLVMValueRef *vals)
{
    uint32_t n = 1u << L->nbits[TJP_REG], rdup = reg_dup_mask(L);
    uint32_t lane_dup = thread_dup_mask(c, L, TJP_LANE), warp_dup = thread_dup_mask(c, L, TJP_WARP);
    if (warp_dup) {
        LLVMTypeRef vt = LLVMTypeOf(vals[0]);
        LLVMValueRef smem = tjj_gpu_shared(c, (uint64_t)tji_numel(t) * type_bytes(c, vt));
        tjj_gpu_shared_begin(c);
        LLVMBasicBlockRef cont = guard_begin(c, tjj_gpu_owner_cond(c, L), "share");
        for (uint32_t r = 0; r < n; r++)
            if (!(r & rdup))
                tjj_gpu_shared_store(c, smem, 0, tjj_gpu_element_index(c, L, r), vals[r]);
        guard_end(c, cont);
        tjj_gpu_barrier(c);
        for (uint32_t r = 0; r < n; r++)
            if (!(r & rdup))
                vals[r] = tjj_gpu_shared_load(c, smem, 0, vt, tjj_gpu_element_index(c, L, r));
    } else if (lane_dup) {
        LLVMValueRef src = LLVMBuildAnd(c->g.b, c->lane, c_i32(c, ~lane_dup & 31), "");
        for (uint32_t r = 0; r < n; r++)
            if (!(r & rdup))
                vals[r] = tjj_gpu_shuffle(c, 0, vals[r], src);
    }
    for (uint32_t r = 0; r < n; r++)
        if (r & rdup)
            vals[r] = vals[r & ~rdup];
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
LLVMValueRef tjj_gpu_swizzled(codegen *c, LLVMBuilderRef b, const tjp_swizzle *S, LLVMValueRef v, uint32_t bits)
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
LLVMValueRef tjj_gpu_swizzled_thread_index(codegen *c, const tjp_swizzle *S, const tjp_layout *L)
{
    return tjj_gpu_swizzled(c, c->eb, S, tjj_gpu_thread_index(c, L), ~0u);
}

/* The swizzled shared-memory index of register r of layout L. */
LLVMValueRef tjj_gpu_swizzled_index(codegen *c, const tjp_swizzle *S, LLVMValueRef thread, const tjp_layout *L,
                                   uint32_t r)
{
    return LLVMBuildXor(c->g.b, thread, c_i32(c, tjp_swizzle_apply(S, tjp_layout_apply(L, r, 0, 0))), "");
}

void tjj_gpu_emit_convert(codegen *c, const tji_op *op)
{
    int32_t x = op->args[0], id = op->result;
    const tjp_layout *Ls = layout_of(c, x), *Ld = layout_of(c, id);
    const tji_type *t = type_of(c, id);
    uint32_t ns = (uint32_t)nregs_of(c, x), nd = (uint32_t)nregs_of(c, id);
    LLVMValueRef *out = tjj_gpu_regs_for(c, id);
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
            out[r] = tjj_gpu_reg(c, x, s);
        }
        return;
    }
    LLVMTypeRef vt = tjj_gpu_value_type(&c->g, t);
    uint64_t bytes = type_bytes(c, shared_type(c, vt));
    LLVMValueRef smem = tjj_gpu_shared(c, (uint64_t)tji_numel(t) * bytes);
    uint32_t sdup = reg_dup_mask(Ls), ddup = reg_dup_mask(Ld);
    const tjp_swizzle *S = &use.swizzle;
    LLVMValueRef ts = tjj_gpu_swizzled_thread_index(c, S, Ls), td = tjj_gpu_swizzled_thread_index(c, S, Ld);
    tjj_gpu_shared_begin(c);
    for (uint32_t r = 0; r < ns; r++)
        if (!(r & sdup))
            tjj_gpu_shared_store(c, smem, 0, tjj_gpu_swizzled_index(c, S, ts, Ls, r), tjj_gpu_reg(c, x, r));
    tjj_gpu_barrier(c);
    for (uint32_t r = 0; r < nd; r++)
        out[r] = r & ddup ? out[r & ~ddup] : tjj_gpu_shared_load(c, smem, 0, vt, tjj_gpu_swizzled_index(c, S, td, Ld, r));
}
