/* SPDX-License-Identifier: MIT */
/*
 * shared.c — shared memory, barriers, warp shuffles and CONVERT.
 *
 * Shared memory is one extern (dynamic) array, aligned to 1024 bytes, of
 * the plan's size (src/passes/alloc_shared.c), which the launch gives; each
 * step through it uses the byte offset the plan gives its op. Barriers go
 * where the plan says (src/passes/barriers.c: memory order of global
 * accesses, and around each shared step): this code decides neither.
 *
 * Broadcasts hand a value from its owner to its copies: a shuffle within a
 * warp, shared memory across warps (an atomic's old value, a scalar that
 * thread 0 computed). CONVERT is a copy or a permutation of registers where
 * the threads hold the same elements, else it goes through shared memory,
 * at addresses swizzled so that neither the writes nor the reads wait on
 * bank conflicts (swizzle.c chooses); where the plan says so, the reads
 * of a dot's 16-bit operand are ldmatrix instructions (ldmatrix.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

/* --- shared memory and barriers ---------------------------------------------------------- */

/* The kernel's dynamic shared array: extern, of the plan's size (the launch
 * gives it), aligned to 1024 bytes (what swizzled tensor-core tiles need). */
LLVMValueRef tjj_gpu_shared(codegen *c)
{
    if (!c->smem) {
        c->smem = LLVMAddGlobalInAddressSpace(c->g.mod, LLVMArrayType2(c->g.ty.t_i8, 0), "tjk_shared", ADDR_SHARED);
        LLVMSetLinkage(c->smem, LLVMExternalLinkage);
        LLVMSetAlignment(c->smem, SHARED_ALIGN);
    }
    return c->smem;
}

/* The plan's shared step of the op being emitted (kind: what it must be). */
const tjp_shared_step *tjj_gpu_step(codegen *c, int kind)
{
    const tjp_shared_step *step = &c->g.plan->shared[c->g.cur_op];
    if (step->kind != kind)
        FAIL(c, "internal error: the shared-memory plan has no step for this op");
    return step;
}

/* bar.sync 0 where the plan puts one (flag: TJP_BARRIER_*) at the op being
 * emitted: every thread of the CTA, at a point all of them reach. It also
 * makes each thread's earlier memory accesses, global ones included,
 * visible to the others. (In a warp-specialized kernel: every consumer
 * thread, tjj_gpu_bar_sync.) */
void tjj_gpu_barrier(codegen *c, int flag)
{
    if (c->g.plan->barrier[c->g.cur_op] & flag)
        tjj_gpu_bar_sync(c);
}

/* Element `index` (of t, which may be a vector of elements) of the buffer at base. */
static LLVMValueRef shared_at(codegen *c, LLVMValueRef smem, uint64_t base, LLVMTypeRef t, LLVMValueRef index)
{
    LLVMValueRef off = c_i64(c, (int64_t)base);
    LLVMValueRef start = LLVMBuildInBoundsGEP2(c->g.b, c->g.ty.t_i8, smem, &off, 1, "");
    LLVMValueRef idx = LLVMBuildZExt(c->g.b, index, c->g.ty.t_i64, "");
    LLVMTypeRef elem = LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetElementType(t) : t;
    return LLVMBuildInBoundsGEP2(c->g.b, shared_type(c, elem), start, &idx, 1, "");
}

void tjj_gpu_shared_store(codegen *c, LLVMValueRef smem, uint64_t base, LLVMValueRef index, LLVMValueRef v)
{
    LLVMTypeRef t = LLVMTypeOf(v);
    if (t == c->g.ty.t_i1)
        v = LLVMBuildZExt(c->g.b, v, c->g.ty.t_i8, "");
    LLVMValueRef st = LLVMBuildStore(c->g.b, v, shared_at(c, smem, base, t, index));
    LLVMSetAlignment(st, (unsigned)type_bytes(c, t));
}

LLVMValueRef tjj_gpu_shared_load(codegen *c, LLVMValueRef smem, uint64_t base, LLVMTypeRef t, LLVMValueRef index)
{
    LLVMValueRef ld = LLVMBuildLoad2(c->g.b, shared_type(c, t), shared_at(c, smem, base, t, index), "");
    LLVMSetAlignment(ld, (unsigned)type_bytes(c, t));
    if (t == c->g.ty.t_i1)
        return LLVMBuildICmp(c->g.b, LLVMIntNE, ld, LLVMConstNull(c->g.ty.t_i8), "");
    return ld;
}

/* A warp shuffle of any value: butterfly (lane ^ arg) or indexed (lane arg).
 * Values are moved as one or two 32-bit words. */
LLVMValueRef tjj_gpu_shuffle(codegen *c, int butterfly, LLVMValueRef v, LLVMValueRef arg)
{
    LLVMBuilderRef b = c->g.b;
    LLVMTypeRef t = LLVMTypeOf(v);
    const char *name = butterfly ? "llvm.nvvm.shfl.sync.bfly.i32" : "llvm.nvvm.shfl.sync.idx.i32";
    uint64_t bytes = type_bytes(c, t);
    LLVMTypeRef it = bytes == 8 ? c->g.ty.t_i64 : LLVMIntTypeInContext(c->g.ctx, t == c->g.ty.t_i1 ? 1 : (unsigned)(8 * bytes));
    LLVMValueRef bits = LLVMGetTypeKind(t) == LLVMPointerTypeKind ? LLVMBuildPtrToInt(b, v, it, "")
                        : LLVMGetTypeKind(t) == LLVMIntegerTypeKind ? v : LLVMBuildBitCast(b, v, it, "");
    LLVMValueRef out;
    if (bytes == 8) {
        LLVMValueRef lo = LLVMBuildTrunc(b, bits, c->g.ty.t_i32, "");
        LLVMValueRef hi = LLVMBuildTrunc(b, LLVMBuildLShr(b, bits, c_i64(c, 32), ""), c->g.ty.t_i32, "");
        LLVMValueRef a_lo[4] = {c_i32(c, -1), lo, arg, c_i32(c, 31)}, a_hi[4] = {c_i32(c, -1), hi, arg, c_i32(c, 31)};
        lo = tjj_gpu_intrinsic(&c->g, name, NULL, 0, a_lo, 4);
        hi = tjj_gpu_intrinsic(&c->g, name, NULL, 0, a_hi, 4);
        out = LLVMBuildOr(b, LLVMBuildZExt(b, lo, c->g.ty.t_i64, ""),
                          LLVMBuildShl(b, LLVMBuildZExt(b, hi, c->g.ty.t_i64, ""), c_i64(c, 32), ""), "");
    } else {
        LLVMValueRef w = it == c->g.ty.t_i32 ? bits : LLVMBuildZExt(b, bits, c->g.ty.t_i32, "");
        LLVMValueRef args[4] = {c_i32(c, -1), w, arg, c_i32(c, 31)};
        out = tjj_gpu_intrinsic(&c->g, name, NULL, 0, args, 4);
        if (it != c->g.ty.t_i32)
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
    const tjp_shared_step *step = tjj_gpu_step(c, TJP_STEP_BROADCAST);
    LLVMValueRef smem = tjj_gpu_shared(c);
    tjj_gpu_barrier(c, TJP_BARRIER_SHARED_WRITE);
    LLVMBasicBlockRef cont = tjj_llvm_guard_begin(c->g.b, tjj_gpu_thread0_cond(c), "bcast");
    tjj_gpu_shared_store(c, smem, step->offset, c_i32(c, 0), v);
    tjj_llvm_guard_end(c->g.b, cont);
    tjj_gpu_barrier(c, TJP_BARRIER_SHARED_READ);
    return tjj_gpu_shared_load(c, smem, step->offset, LLVMTypeOf(v), c_i32(c, 0));
}

/* vals (registers of layout L) are right in the owning slots; make every
 * copy hold its owner's value. */
void tjj_gpu_broadcast_from_owners(codegen *c, const tjp_layout *L, LLVMValueRef *vals)
{
    uint32_t n = 1u << L->nbits[TJP_REG], rdup = reg_dup_mask(L);
    uint32_t lane_dup = thread_dup_mask(c, L, TJP_LANE), warp_dup = thread_dup_mask(c, L, TJP_WARP);
    if (warp_dup) {
        LLVMTypeRef vt = LLVMTypeOf(vals[0]);
        const tjp_shared_step *step = tjj_gpu_step(c, TJP_STEP_BROADCAST);
        LLVMValueRef smem = tjj_gpu_shared(c);
        tjj_gpu_barrier(c, TJP_BARRIER_SHARED_WRITE);
        LLVMBasicBlockRef cont = tjj_llvm_guard_begin(c->g.b, tjj_gpu_owner_cond(c, L), "share");
        for (uint32_t r = 0; r < n; r++)
            if (!(r & rdup))
                tjj_gpu_shared_store(c, smem, step->offset, tjj_gpu_element_index(c, L, r), vals[r]);
        tjj_llvm_guard_end(c->g.b, cont);
        tjj_gpu_barrier(c, TJP_BARRIER_SHARED_READ);
        for (uint32_t r = 0; r < n; r++)
            if (!(r & rdup))
                vals[r] = tjj_gpu_shared_load(c, smem, step->offset, vt, tjj_gpu_element_index(c, L, r));
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
 * (swizzle.c, in the plan's step of the op); this code executes it. The swizzle is
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

/* The bits that A(thread part of L's index) may have: the swizzle is
 * linear, so those of A(lane or warp basis vector), together. */
static uint32_t thread_bits(const tjp_swizzle *S, const tjp_layout *L)
{
    uint32_t bits = 0;
    for (int in = TJP_LANE; in <= TJP_WARP; in++)
        for (int b = 0; b < L->nbits[in]; b++)
            bits |= tjp_swizzle_apply(S, L->basis[in][b]);
    return bits;
}

/* The swizzled shared-memory index of register r of layout L: thread ^
 * A(r), computed as (thread ^ (A(r) & T)) + (A(r) & ~T), T the bits the
 * thread part may have. The two are equal (the parts share no bits), but
 * the second leaves one value per distinct xor part, and a constant that
 * folds into each access's immediate offset: a tile's registers that
 * differ only in bits the threads never set (a dot operand's other m16
 * tiles, say) share one address register instead of one each. */
/* The index of a register whose own bits give a, from the thread's part
 * (thread, on the bits t). */
static LLVMValueRef thread_plus(codegen *c, LLVMValueRef thread, uint32_t a, uint32_t t)
{
    LLVMValueRef x = a & t ? LLVMBuildXor(c->g.b, thread, c_i32(c, a & t), "") : thread;
    return a & ~t ? LLVMBuildNUWAdd(c->g.b, x, c_i32(c, a & ~t), "") : x;
}

LLVMValueRef tjj_gpu_swizzled_index(codegen *c, const tjp_swizzle *S, LLVMValueRef thread, const tjp_layout *L,
                                   uint32_t r)
{
    return thread_plus(c, thread, tjp_swizzle_apply(S, tjp_layout_apply(L, r, 0, 0)), thread_bits(S, L));
}

/* Reads by ldmatrix (src/passes/ldmatrix.c) of the layout Ld from the
 * buffer at base (an i8 shared pointer) under swizzle S: each lane gives
 * the address of one 16-byte row (the address layout), and matrix j's
 * 32-bit result holds registers r + pj .. r + pj + p - 1, low bits first
 * (p = 4 / element bytes). */
static void ldmatrix_setup(codegen *c, const tjp_swizzle *S, int matrices, int trans, LLVMValueRef base,
                           const tjp_layout *Ld, LLVMTypeRef vt, deferred_reads *d)
{
    tjp_ldmatrix_address_layout(Ld, S, &d->at); /* in the buffer's index space: no swizzle left */
    const tjp_swizzle none = {.elem_bytes = S->elem_bytes};
    d->thread = tjj_gpu_swizzled_thread_index(c, &none, &d->at);
    d->base = base;
    d->matrices = matrices;
    d->trans = trans;
    d->elem_bytes = S->elem_bytes;
    d->vt = vt;
}

/* The instruction whose registers start at r0, into out[r0 ..]. */
static void ldmatrix_group(codegen *c, const deferred_reads *d, uint32_t r0, LLVMValueRef *out)
{
    int m = d->matrices, eb = d->elem_bytes, p = 4 / eb;
    LLVMTypeRef it = LLVMIntTypeInContext(c->g.ctx, (unsigned)(8 * eb));
    char name[64];
    snprintf(name, sizeof name, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x%d%s.b16", m, d->trans ? ".trans" : "");
    LLVMTypeRef pt = LLVMPointerTypeInContext(c->g.ctx, ADDR_SHARED);
    const tjp_swizzle none = {.elem_bytes = eb};
    LLVMValueRef index = tjj_gpu_swizzled_index(c, &none, d->thread, &d->at, r0);
    LLVMValueRef idx = LLVMBuildZExt(c->g.b, index, c->g.ty.t_i64, "");
    LLVMValueRef ptr = LLVMBuildInBoundsGEP2(c->g.b, it, d->base, &idx, 1, "");
    LLVMValueRef res = tjj_gpu_intrinsic(&c->g, name, &pt, 1, &ptr, 1);
    for (int j = 0; j < m; j++) {
        LLVMValueRef word = m == 1 ? res : LLVMBuildExtractValue(c->g.b, res, (unsigned)j, "");
        for (int h = 0; h < p; h++) {
            LLVMValueRef part = h ? LLVMBuildLShr(c->g.b, word, c_i32(c, 8 * eb * h), "") : word;
            if (eb < 4)
                part = LLVMBuildTrunc(c->g.b, part, it, "");
            out[r0 + (uint32_t)(p * j + h)] = LLVMBuildBitCast(c->g.b, part, d->vt, "");
        }
    }
}

static int has_ldmatrix(codegen *c)
{
    if (c->sm >= 75)
        return 1;
    FAIL(c, "internal error: the plan reads with ldmatrix, which sm_%d lacks", c->sm);
    return 0;
}

void tjj_gpu_ldmatrix_reads(codegen *c, const tjp_swizzle *S, int matrices, int trans, LLVMValueRef base,
                            const tjp_layout *Ld, LLVMTypeRef vt, LLVMValueRef *out)
{
    if (!has_ldmatrix(c))
        return;
    deferred_reads d;
    ldmatrix_setup(c, S, matrices, trans, base, Ld, vt, &d);
    uint32_t n = (uint32_t)1 << Ld->nbits[TJP_REG], step = (uint32_t)(4 / d.elem_bytes * matrices);
    for (uint32_t r = 0; r < n; r += step)
        ldmatrix_group(c, &d, r, out);
}

static deferred_reads *new_deferred(codegen *c, int32_t id)
{
    if (!c->deferred)
        c->deferred = tjs_xcalloc((size_t)c->g.fn->nvalues + 1, sizeof *c->deferred);
    free(c->deferred[id]);
    c->deferred[id] = tjs_xcalloc(1, sizeof **c->deferred);
    tjj_gpu_regs_for(c, id);
    return c->deferred[id];
}

void tjj_gpu_defer_ldmatrix_reads(codegen *c, int32_t id, const tjp_swizzle *S, int matrices, int trans,
                                  LLVMValueRef base, LLVMTypeRef vt)
{
    if (!has_ldmatrix(c))
        return;
    ldmatrix_setup(c, S, matrices, trans, base, layout_of(c, id), vt, new_deferred(c, id));
}

void tjj_gpu_defer_element_reads(codegen *c, int32_t id, const tjp_swizzle *S, LLVMValueRef base)
{
    deferred_reads *d = new_deferred(c, id);
    d->at = *layout_of(c, id);
    d->swizzle = *S;
    d->thread = tjj_gpu_swizzled_thread_index(c, S, &d->at);
    d->base = base;
    d->elem_bytes = S->elem_bytes;
}

/* Register r of value id (a copy's: its original's) loaded as d says. */
static void element_read(codegen *c, int32_t id, const deferred_reads *d, uint32_t r)
{
    const tji_type *t = type_of(c, id);
    uint32_t dup = reg_dup_mask(&d->at), own = r & ~dup;
    if (!c->regs[id][own]) {
        LLVMTypeRef mem = tjj_gpu_mem_type(&c->g, t);
        LLVMValueRef idx = LLVMBuildZExt(c->g.b, tjj_gpu_swizzled_index(c, &d->swizzle, d->thread, &d->at, own),
                                         c->g.ty.t_i64, "");
        LLVMValueRef ld = LLVMBuildLoad2(c->g.b, mem, LLVMBuildInBoundsGEP2(c->g.b, mem, d->base, &idx, 1, ""), "");
        LLVMSetAlignment(ld, (unsigned)type_bytes(c, mem));
        c->regs[id][own] = tjj_gpu_from_mem(&c->g, ld, t);
    }
    c->regs[id][r] = c->regs[id][own];
}

void tjj_gpu_deferred_read(codegen *c, int32_t id, uint32_t r)
{
    const deferred_reads *d = c->deferred[id];
    if (!d->matrices) {
        element_read(c, id, d, r);
        return;
    }
    uint32_t step = (uint32_t)(4 / d->elem_bytes * d->matrices);
    ldmatrix_group(c, d, r - r % step, c->regs[id]);
}

void tjj_gpu_write_tile(codegen *c, int32_t x, const tjp_swizzle *S, uint64_t offset, int vector,
                        const tjj_box_write *only)
{
    const tjp_layout *L = layout_of(c, x);
    LLVMTypeRef vt = tjj_gpu_value_type(&c->g, type_of(c, x));
    LLVMValueRef smem = tjj_gpu_shared(c), thread = tjj_gpu_swizzled_thread_index(c, S, L);
    uint32_t n = (uint32_t)nregs_of(c, x), dup = reg_dup_mask(L), wv = vector > 1 ? (uint32_t)vector : 1;
    for (uint32_t r = 0; r < n; r += wv) {
        if (r & dup)
            continue;
        uint32_t e = tjp_layout_apply(L, r, 0, 0), a = tjp_swizzle_apply(S, e);
        if (only) { /* the NVMMA index of a box's element: the box's, then its own within the box */
            if ((int)((e & (uint32_t)(only->cols - 1)) / (uint32_t)only->box_cols) != only->box)
                continue;
            a = (a & (only->box_elems - 1)) + (uint32_t)only->slot * only->box_elems;
        }
        LLVMValueRef index = thread_plus(c, thread, a, thread_bits(S, L));
        if (wv == 1) {
            tjj_gpu_shared_store(c, smem, offset, index, tjj_gpu_reg(c, x, r));
            continue;
        }
        LLVMValueRef v = LLVMGetPoison(LLVMVectorType(vt, wv));
        for (uint32_t k = 0; k < wv; k++)
            v = LLVMBuildInsertElement(c->g.b, v, tjj_gpu_reg(c, x, r + k), c_i32(c, k), "");
        tjj_gpu_shared_store(c, smem, offset, index, v);
    }
}

void tjj_gpu_emit_convert(codegen *c, const tji_op *op)
{
    int32_t x = op->args[0], id = op->result;
    const tjp_layout *Ls = layout_of(c, x), *Ld = layout_of(c, id);
    const tji_type *t = type_of(c, id);
    uint32_t ns = (uint32_t)nregs_of(c, x), nd = (uint32_t)nregs_of(c, id);
    LLVMValueRef *out = tjj_gpu_regs_for(c, id);
    const tjp_shared_step *step = &c->g.plan->shared[c->g.cur_op];
    if (step->kind != TJP_STEP_CONVERT) {
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
    LLVMValueRef smem = tjj_gpu_shared(c);
    uint32_t ddup = reg_dup_mask(Ld);
    const tjp_swizzle *S = &step->use.swizzle;
    LLVMValueRef td = tjj_gpu_swizzled_thread_index(c, S, Ld);
    tjj_gpu_barrier(c, TJP_BARRIER_SHARED_WRITE);
    tjj_gpu_write_tile(c, x, S, step->offset, step->use.write_vector, NULL);
    uint32_t rv = (uint32_t)step->use.read_vector;
    tjj_gpu_barrier(c, TJP_BARRIER_SHARED_READ);
    if (step->use.ldmatrix) {
        LLVMValueRef off = c_i64(c, (int64_t)step->offset);
        tjj_gpu_ldmatrix_reads(c, S, step->use.ldmatrix, step->use.ldmatrix_trans,
                               LLVMBuildInBoundsGEP2(c->g.b, c->g.ty.t_i8, smem, &off, 1, ""), Ld, vt, out);
        return;
    }
    if (rv <= 1)
        rv = 1;
    LLVMTypeRef lt = rv > 1 ? LLVMVectorType(vt, rv) : vt;
    for (uint32_t r = 0; r < nd; r += rv) {
        if (r & ddup) {
            for (uint32_t k = 0; k < rv; k++)
                out[r + k] = out[(r + k) & ~ddup];
            continue;
        }
        LLVMValueRef v = tjj_gpu_shared_load(c, smem, step->offset, lt, tjj_gpu_swizzled_index(c, S, td, Ld, r));
        for (uint32_t k = 0; k < rv; k++)
            out[r + k] = rv > 1 ? LLVMBuildExtractElement(c->g.b, v, c_i32(c, k), "") : v;
    }
}
