/* SPDX-License-Identifier: MIT */
/*
 * tma.c — the rings that Hopper's tensor-memory accelerator fills
 * (src/passes/tma.c chose them; the plan marks them tma), and the blocks
 * it stores.
 *
 * Such a ring's copy is not one cp.async per thread: thread 0 announces
 * the slot's bytes on the slot's mbarrier (arrive.expect_tx) and issues
 * one cp.async.bulk.tensor per box of the slot (one NVMMA column block
 * each, tjp_tma_box), from the kernel's tensor map of the ring; the
 * hardware writes the box through the swizzle wgmma reads, zeros where
 * the box leaves the tensor, and completes the barrier's phase when all
 * the bytes have landed. Where the iteration does not exist nothing is
 * issued, so every phase that completes is one some read waits for.
 *
 * The read (the ring's LOCAL_LOAD, which for wgmma emits no load) waits
 * for its slot's phase: mbarrier.try_wait.parity in a loop. Each slot's
 * fills are read in order, one read per fill, so the parity a read waits
 * for is the number of earlier reads of that slot, mod 2: a word of bits
 * per ring, one per slot, flipped at each read. It is an alloca that
 * LLVM turns into registers; it runs on across every run of the loop (an
 * outer loop, the next row block), as the barriers' phases do — they are
 * set up once, at the kernel's start (count 1: thread 0's arrival), and
 * live for the whole kernel (alloc_shared.c). The rings of a family
 * (alloc_shared.c) share their barriers and so their phase words: a later
 * loop's fills of a slot follow the earlier loop's.
 *
 * The wait that starts each iteration still ends with bar.sync (async.c):
 * it is what tells thread 0 that every warpgroup is done with the slot it
 * refills next (the ring's extra slot keeps the one an asynchronous
 * wgmma still reads out of its way). A warp-specialized kernel
 * (warp_spec.c) has no such wait: its producer warp issues the copies once
 * each slot's "empty" mbarrier says the consumers are done with it.
 *
 * A TMA store (a STORE whose plan step is TMA_STORE) runs the other way:
 * every thread writes its registers of the block into the step's buffer
 * in the NVMMA layout and fences them for the async proxy
 * (fence.proxy.async), a barrier gathers the writes, and thread 0 issues
 * one cp.async.bulk.tensor store per column block, commits them as a bulk
 * group and waits until the engine has read the buffer (or, where another
 * store follows, until the writes are done) — so the buffer is free again
 * when the next step's barrier lets anyone write it. In a persistent
 * kernel's tile loop (src/passes/tma.c) the group stays in flight: the
 * next trip's store waits for the read before its barrier and writes, and
 * the loop's end for the writes (tjj_gpu_tma_store_after_loop). There
 * a block of more than two boxes is staged two boxes at a time
 * (step->staged_boxes, the plan's): box j is written to slot j % 2 once
 * the store of box j - 2 has been read, and stored at once, so the
 * buffer costs two boxes, not the block — what lets a 128x256 tile keep
 * a third stage of its rings in a persistent kernel.
 *
 * The tensor maps are parameters of the kernel, 128 bytes each, after the
 * assert record: byval and "nvvm.grid_constant", so that the kernel reads
 * them where the launch put them (a copy in local memory is no address
 * TMA can use). tjj_gpu_tma_maps tells the launch what each holds.
 */
#include <stdio.h>
#include <string.h>

#include "gen.h"

/* A warpgroup's threads; the named barriers of a store's bands start
 * after the CTA's (0) and the consumers' (1, warp_spec.c). */
enum { WARPGROUP_THREADS = 128, FIRST_BAND_BARRIER = 2 };

LLVMValueRef tjj_gpu_ptx(codegen *c, LLVMTypeRef ret, const char *text, const char *constraints,
                         LLVMValueRef *args, unsigned nargs)
{
    LLVMTypeRef params[8];
    for (unsigned i = 0; i < nargs; i++)
        params[i] = LLVMTypeOf(args[i]);
    LLVMTypeRef fty = LLVMFunctionType(ret, params, nargs, 0);
    char cons[96];
    snprintf(cons, sizeof cons, "%s%s~{memory}", constraints, *constraints ? "," : "");
    LLVMValueRef fn = LLVMGetInlineAsm(fty, text, strlen(text), cons, strlen(cons), 1, 0,
                                       LLVMInlineAsmDialectATT, 0);
    return LLVMBuildCall2(c->g.b, fty, fn, args, nargs, "");
}

/* How many tensor maps the TMA rings read (the stores' come after). */
static int ring_maps(const tjp_layout_plan *plan)
{
    int n = 0;
    for (int r = 0; plan->rings && r < plan->nrings; r++)
        if (plan->rings[r].op >= 0 && plan->rings[r].tma && plan->rings[r].tma_map + 1 > n)
            n = plan->rings[r].tma_map + 1;
    return n;
}

int tjj_gpu_tma_count(const tjp_layout_plan *plan)
{
    int n = ring_maps(plan);
    for (int32_t i = 0; plan->shared && i < plan->nops; i++)
        if (plan->shared[i].kind == TJP_STEP_TMA_STORE && plan->shared[i].tma_map + 1 > n)
            n = plan->shared[i].tma_map + 1;
    return n;
}

void tjj_gpu_tma_params(codegen *c, LLVMValueRef f, unsigned first, int n)
{
    LLVMContextRef ctx = c->g.ctx;
    LLVMTypeRef map = LLVMArrayType2(c->g.ty.t_i8, TJJ_TMAP_BYTES);
    unsigned byval = LLVMGetEnumAttributeKindForName("byval", 5);
    unsigned align = LLVMGetEnumAttributeKindForName("align", 5);
    for (int k = 0; k < n; k++) {
        unsigned at = first + (unsigned)k + 1; /* attribute indices count the return as 0 */
        LLVMAddAttributeAtIndex(f, at, LLVMCreateTypeAttribute(ctx, byval, map));
        LLVMAddAttributeAtIndex(f, at, LLVMCreateEnumAttribute(ctx, align, 64));
        LLVMAddAttributeAtIndex(f, at, LLVMCreateStringAttribute(ctx, "nvvm.grid_constant", 18, "", 0));
    }
}

/* The 32-bit shared address of byte `offset` (plus an i32 `extra`, or NULL). */
static LLVMValueRef shared_address(codegen *c, uint64_t offset, LLVMValueRef extra)
{
    LLVMValueRef a = LLVMBuildAdd(c->g.b, LLVMBuildPtrToInt(c->g.b, tjj_gpu_shared(c), c->g.ty.t_i32, ""),
                                  c_i32(c, (int64_t)offset), "");
    return extra ? LLVMBuildAdd(c->g.b, a, extra, "") : a;
}

/* The "full" mbarrier of the slot (an i32 value) of ring R. */
static LLVMValueRef barrier_of(codegen *c, const tjp_ring *R, LLVMValueRef slot)
{
    return shared_address(c, R->barriers, LLVMBuildMul(c->g.b, slot, c_i32(c, 8), ""));
}

LLVMValueRef tjj_gpu_tma_empty_barrier(codegen *c, const tjp_ring *R, LLVMValueRef slot)
{
    return shared_address(c, tjp_ring_empty_barriers(R), LLVMBuildMul(c->g.b, slot, c_i32(c, 8), ""));
}

void tjj_gpu_tma_setup(codegen *c)
{
    const tjp_layout_plan *plan = c->g.plan;
    if (!ring_maps(plan))
        return;
    LLVMBasicBlockRef cont = tjj_llvm_guard_begin(c->g.b, tjj_gpu_thread0_cond(c), "tma.init");
    for (int r = 0; r < plan->nrings; r++) {
        const tjp_ring *R = &plan->rings[r];
        for (int s = 0; R->op >= 0 && R->tma && R->family == r && s < R->slots; s++) {
            tjj_gpu_ptx(c, c->g.ty.t_void, "mbarrier.init.shared::cta.b64 [$0], 1;", "r",
                (LLVMValueRef[]){barrier_of(c, R, c_i32(c, s))}, 1);
            if (plan->warp_spec) /* one arrival per consumer warp (warp_spec.c), of both blocks of a pair */
                tjj_gpu_ptx(c, c->g.ty.t_void, "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r",
                            (LLVMValueRef[]){tjj_gpu_tma_empty_barrier(c, R, c_i32(c, s)),
                                             c_i32(c, c->num_warps * (plan->pairs ? 2 : 1))}, 2);
        }
    }
    /* the barriers' set-up, seen by the async proxy that completes them */
    tjj_gpu_ptx(c, c->g.ty.t_void, "fence.mbarrier_init.release.cluster;", "", NULL, 0);
    tjj_gpu_intrinsic(&c->g, "llvm.nvvm.fence.proxy.async.shared_cta", NULL, 0, NULL, 0);
    tjj_llvm_guard_end(c->g.b, cont);
    tjj_gpu_intrinsic(&c->g, "llvm.nvvm.barrier.cta.sync.aligned.all", NULL, 0, (LLVMValueRef[]){c_i32(c, 0)}, 1);
    if (plan->pairs)
        tjj_gpu_cluster_setup(c);
    c->tma_phase = tjj_gpu_ring_words(c, 0, "tma.phase");
    if (plan->warp_spec)
        tjj_gpu_warp_spec_setup(c);
}

LLVMValueRef *tjj_gpu_ring_words(codegen *c, int32_t init, const char *name)
{
    const tjp_layout_plan *plan = c->g.plan;
    LLVMValueRef *words = tjs_xcalloc((size_t)plan->nrings, sizeof *words);
    for (int r = 0; r < plan->nrings; r++)
        if (plan->rings[r].op >= 0 && plan->rings[r].tma && plan->rings[r].family == r) {
            words[r] = LLVMBuildAlloca(c->eb, c->g.ty.t_i32, name);
            LLVMBuildStore(c->eb, c_i32(c, init), words[r]);
        }
    for (int r = 0; r < plan->nrings; r++)
        words[r] = words[plan->rings[r].family];
    return words;
}

LLVMValueRef tjj_gpu_next_parity(codegen *c, LLVMValueRef word_at, LLVMValueRef slot)
{
    LLVMBuilderRef b = c->g.b;
    LLVMValueRef word = LLVMBuildLoad2(b, c->g.ty.t_i32, word_at, "");
    LLVMValueRef parity = LLVMBuildAnd(b, LLVMBuildLShr(b, word, slot, ""), c_i32(c, 1), "");
    LLVMBuildStore(b, LLVMBuildXor(b, word, LLVMBuildShl(b, c_i32(c, 1), slot, ""), ""), word_at);
    return parity;
}

void tjj_gpu_mbarrier_wait(codegen *c, LLVMValueRef bar, LLVMValueRef parity)
{
    LLVMBuilderRef b = c->g.b;
    LLVMBasicBlockRef spin = new_block(c, "mbar.wait"), done = new_block(c, "mbar.ready");
    LLVMBuildBr(b, spin);
    LLVMPositionBuilderAtEnd(b, spin);
    LLVMValueRef ready = tjj_gpu_ptx(c, c->g.ty.t_i32,
                                     "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2; "
                                     "selp.u32 $0, 1, 0, p; }",
                                     "=r,r,r", (LLVMValueRef[]){bar, parity}, 2);
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntNE, ready, c_i32(c, 0), ""), done, spin);
    LLVMPositionBuilderAtEnd(b, done);
}

LLVMValueRef tjj_gpu_tma_exists(codegen *c, const tji_op *op)
{
    return live_cond(tjj_gpu_reg(c, op->args[TJI_TMA_FIRST + 3 * op->tma_rank + 1], 0));
}

/* A box's coordinates from op's tensor offsets, the tile's dimension cd
 * being the contiguous one: along it, across it, and (a 3-D tensor's) the
 * batch, NULL for a 2-D tensor. */
static void box_origin(codegen *c, const tji_op *op, int cd, LLVMValueRef *inner, LLVMValueRef *outer,
                       LLVMValueRef *batch)
{
    int r = op->tma_rank, first = r - 2; /* the tile's dims are the tensor's last two */
    const int32_t *offsets = op->args + TJI_TMA_FIRST + 1 + 2 * r;
    *inner = tjj_gpu_reg(c, offsets[first + cd], 0);
    *outer = tjj_gpu_reg(c, offsets[first + 1 - cd], 0);
    *batch = first ? tjj_gpu_reg(c, offsets[0], 0) : NULL;
}

void tjj_gpu_emit_tma_copy(codegen *c, const tji_op *op, const tjp_ring *R)
{
    LLVMValueRef exists = tjj_gpu_tma_exists(c, op), go = tjj_gpu_thread0_cond(c);
    tjj_gpu_issue_tma_copy(c, op, R, exists ? LLVMBuildAnd(c->g.b, go, exists, "") : go, NULL);
}

/* One box from tensor coordinates (x, y[, batch]) to shared byte `at`,
 * completing on bar, where on (i32): into this block, or where `to` (an
 * i32 mask of the pair's ranks) is given, into each block it names at the
 * same offset (.multicast::cluster). */
static void copy_box(codegen *c, LLVMValueRef at, LLVMValueRef map, LLVMValueRef x, LLVMValueRef y,
                     LLVMValueRef batch, LLVMValueRef bar, LLVMValueRef on, LLVMValueRef to)
{
    LLVMValueRef args[8] = {at, map, x, y};
    int n = 4;
    if (batch)
        args[n++] = batch;
    args[n++] = bar;
    args[n++] = on;
    const char *coords = batch ? "$2, $3, $4" : "$2, $3";
    char decl[48] = "", text[360];
    if (to) {
        snprintf(decl, sizeof decl, ".reg .b16 to; cvt.u16.u32 to, $%d; ", n);
        args[n++] = to;
    }
    snprintf(text, sizeof text,
             "{ .reg .pred p; %ssetp.ne.b32 p, $%d, 0; "
             "@p cp.async.bulk.tensor.%dd.shared::cluster.global.tile.mbarrier::complete_tx::bytes%s "
             "[$0], [$1, {%s}], [$%d]%s; }",
             decl, batch ? 6 : 5, batch ? 3 : 2, to ? ".multicast::cluster" : "", coords, batch ? 5 : 4,
             to ? ", to" : "");
    static const char *const constraints[] = {"r,l,r,r,r,r", "r,l,r,r,r,r,r", "r,l,r,r,r,r,r,r"};
    tjj_gpu_ptx(c, c->g.ty.t_void, text, constraints[n - 6], args, n);
}

void tjj_gpu_issue_tma_copy(codegen *c, const tji_op *op, const tjp_ring *R, LLVMValueRef go, LLVMValueRef shared)
{
    LLVMBuilderRef b = c->g.b;
    const tji_type *t = type_of(c, op->args[0]);
    const tjp_pairs *pairs = c->g.plan->pairs;
    int cd = R->tma_contiguous, ncols, splits;
    uint32_t box[2];
    tjp_pair_boxes(R, t, pairs && pairs->multicast[R - c->g.plan->rings], box, &ncols, &splits);
    LLVMValueRef slot = tjj_gpu_reg(c, op->args[1], 0), inner, outer, batch;
    box_origin(c, op, cd, &inner, &outer, &batch);
    LLVMValueRef map = LLVMGetParam(c->g.func, c->tma_first_param + (unsigned)R->tma_map);
    /* predicated, not branched around: the warp stays converged for the
     * warpgroup-wide wgmma that follows */
    LLVMValueRef on = LLVMBuildZExt(b, go, c->g.ty.t_i32, "");
    LLVMValueRef bar = barrier_of(c, R, slot);
    tjj_gpu_ptx(c, c->g.ty.t_void,
        "{ .reg .pred p; setp.ne.b32 p, $2, 0; @p mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1; }",
        "r,r,r", (LLVMValueRef[]){bar, c_i32(c, (int64_t)(tji_numel(t) * R->elem_bytes)), on}, 3);
    LLVMValueRef dst = shared_address(c, R->offset, LLVMBuildMul(b, slot, c_i32(c, (int64_t)R->slot_bytes), ""));
    uint64_t box_bytes = (uint64_t)box[0] * box[1] * (uint64_t)R->elem_bytes;
    /* A ring the pair may share: one copy per box either way, so that the
     * producer's instruction stream stays as short as alone (two copies a
     * box, plain and multicast, made the paired kernel's producer the
     * bottleneck: RESULTS.md, 2026-12-07). Shared, this block issues its
     * half of the boxes to both blocks (mask 0b11); not, all of them to
     * itself alone (its own rank's bit). */
    LLVMValueRef to = NULL, alone = NULL;
    if (shared) {
        to = LLVMBuildSelect(b, shared, c_i32(c, 3), LLVMBuildShl(b, c_i32(c, 1), c->cluster_rank, ""), "to");
        alone = LLVMBuildNot(b, shared, "alone");
    }
    int nboxes = ncols * splits;
    for (int j = 0; j < nboxes; j++) {
        int col = j / splits, part = j % splits;
        LLVMValueRef x = LLVMBuildAdd(b, inner, c_i32(c, (int64_t)col * box[cd]), "");
        LLVMValueRef y = LLVMBuildAdd(b, outer, c_i32(c, (int64_t)part * box[1 - cd]), "");
        LLVMValueRef at = LLVMBuildAdd(b, dst, c_i32(c, (int64_t)((uint64_t)j * box_bytes)), "");
        LLVMValueRef box_on = on;
        if (shared) {
            LLVMValueRef mine = LLVMBuildICmp(b, LLVMIntEQ, c->cluster_rank, c_i32(c, j / (nboxes / 2)), "");
            box_on = LLVMBuildZExt(b, LLVMBuildAnd(b, go, LLVMBuildOr(b, alone, mine, ""), ""), c->g.ty.t_i32, "");
        }
        copy_box(c, at, map, x, y, batch, bar, box_on, to);
    }
}

void tjj_gpu_tma_wait(codegen *c, const tji_op *op, const tjp_ring *R)
{
    int ring = op->ring;
    if (!c->tma_phase || !c->tma_phase[ring]) {
        FAIL(c, "internal error: TMA ring %d has no phase", ring);
        return;
    }
    LLVMValueRef slot = tjj_gpu_reg(c, op->args[0], 0);
    tjj_gpu_mbarrier_wait(c, barrier_of(c, R, slot), tjj_gpu_next_parity(c, c->tma_phase[ring], slot));
}

/* The thread that issues (and so waits for) a store's bulk groups: thread
 * 0, or where the store has bands (src/passes/tma.c) the first thread of
 * each warpgroup, for its band. */
static LLVMValueRef issuer_cond(codegen *c, const tjp_shared_step *step)
{
    if (!step->store_bands)
        return tjj_gpu_thread0_cond(c);
    LLVMValueRef first = LLVMBuildAnd(c->eb, c->tid, c_i32(c, WARPGROUP_THREADS - 1), "");
    return LLVMBuildICmp(c->eb, LLVMIntEQ, first, c_i32(c, 0), "");
}

/* The issuing thread waits for its bulk groups as `wait` says. */
static void bulk_wait(codegen *c, const tjp_shared_step *step, const char *wait)
{
    LLVMBasicBlockRef cont = tjj_llvm_guard_begin(c->g.b, issuer_cond(c, step), "tma.store.wait");
    tjj_gpu_ptx(c, c->g.ty.t_void, wait, "", NULL, 0);
    tjj_llvm_guard_end(c->g.b, cont);
}

/* Stores boxes [first, first + n) of op's block (box[] each, box_bytes
 * apart from shared byte `from` on; `rows` added to the block's first
 * row) as one bulk group. */
static void issue_store(codegen *c, const tji_op *op, const tjp_shared_step *step, const uint32_t box[2],
                        int first, int n, LLVMValueRef from, LLVMValueRef rows)
{
    LLVMBuilderRef b = c->g.b;
    LLVMValueRef col, row, batch;
    box_origin(c, op, 1, &col, &row, &batch);
    if (rows)
        row = LLVMBuildAdd(b, row, rows, "");
    LLVMValueRef map = LLVMGetParam(c->g.func, c->tma_first_param + (unsigned)step->tma_map);
    uint64_t box_bytes = (uint64_t)box[0] * box[1] * (uint64_t)step->use.swizzle.elem_bytes;
    for (int j = first; j < first + n; j++) {
        LLVMValueRef x = LLVMBuildAdd(b, col, c_i32(c, (int64_t)j * box[1]), "");
        LLVMValueRef at = LLVMBuildAdd(b, from, c_i32(c, (int64_t)((uint64_t)(j - first) * box_bytes)), "");
        if (batch)
            tjj_gpu_ptx(c, c->g.ty.t_void,
                        "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [$0, {$1, $2, $3}], [$4];",
                        "l,r,r,r,r", (LLVMValueRef[]){map, x, row, batch, at}, 5);
        else
            tjj_gpu_ptx(c, c->g.ty.t_void,
                        "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [$0, {$1, $2}], [$3];",
                        "l,r,r,r", (LLVMValueRef[]){map, x, row, at}, 4);
    }
    tjj_gpu_ptx(c, c->g.ty.t_void, "cp.async.bulk.commit_group;", "", NULL, 0);
}

/* The threads that write a staged box meet: all of them, or where the
 * store has bands (band_barrier: the warpgroup's named barrier) only the
 * warpgroup's. */
static void staging_barrier(codegen *c, LLVMValueRef band_barrier)
{
    if (!band_barrier) {
        tjj_gpu_bar_sync(c);
        return;
    }
    tjj_gpu_intrinsic(&c->g, "llvm.nvvm.barrier.cta.sync.aligned.count", NULL, 0,
                      (LLVMValueRef[]){band_barrier, c_i32(c, WARPGROUP_THREADS)}, 2);
}

/* A block staged box by box (step->staged_boxes slots of a box, used in
 * turn): before the threads write box j, the issuing thread waits until
 * at most its last group (box j - 1's, in the other slot) is still being
 * read, so slot j % slots is free; then each box's writes, a barrier, and
 * its store, left in flight while the next box is written. With bands,
 * each warpgroup does so for its band alone: the band's rows of the box
 * sit one band after another in the slot (an NVMMA box of R rows is its
 * bands' boxes in turn), and the tensor map's box is a band. */
static void emit_staged_store(codegen *c, const tji_op *op, const tjp_shared_step *step, const uint32_t box[2],
                              int nboxes)
{
    const tji_type *t = type_of(c, op->args[1]);
    uint64_t box_bytes = (uint64_t)box[0] * box[1] * (uint64_t)step->use.swizzle.elem_bytes;
    uint32_t band_box[2] = {step->store_bands ? box[0] / (uint32_t)step->store_bands : box[0], box[1]};
    LLVMValueRef band_rows = NULL, band_from = NULL, band_barrier = NULL;
    if (step->store_bands) {
        LLVMValueRef group = LLVMBuildUDiv(c->g.b, c->tid, c_i32(c, WARPGROUP_THREADS), "");
        band_barrier = LLVMBuildAdd(c->g.b, group, c_i32(c, FIRST_BAND_BARRIER), "");
        band_rows = LLVMBuildMul(c->g.b, group, c_i32(c, band_box[0]), "");
        band_from = LLVMBuildMul(c->g.b, group, c_i32(c, (int64_t)(box_bytes / (uint64_t)step->store_bands)), "");
    }
    char wait[64];
    snprintf(wait, sizeof wait, "cp.async.bulk.wait_group.read %d;", step->staged_boxes - 1);
    for (int j = 0; j < nboxes; j++) {
        int slot = j % step->staged_boxes;
        bulk_wait(c, step, wait);
        staging_barrier(c, band_barrier);
        tjj_box_write only = {.cols = t->shape[1], .box_cols = (int32_t)box[1], .box = j, .slot = slot,
                              .box_elems = box[0] * box[1]};
        tjj_gpu_write_tile(c, op->args[1], &step->use.swizzle, step->offset, step->use.write_vector, &only);
        tjj_gpu_intrinsic(&c->g, "llvm.nvvm.fence.proxy.async.shared_cta", NULL, 0, NULL, 0);
        staging_barrier(c, band_barrier);
        LLVMBasicBlockRef cont = tjj_llvm_guard_begin(c->g.b, issuer_cond(c, step), "tma.store");
        issue_store(c, op, step, band_box, j, 1, shared_address(c, step->offset + (uint64_t)slot * box_bytes, band_from),
                    band_rows);
        if (step->tma_complete && j == nboxes - 1) /* a later store waits for the writes */
            tjj_gpu_ptx(c, c->g.ty.t_void, "cp.async.bulk.wait_group 0;", "", NULL, 0);
        tjj_llvm_guard_end(c->g.b, cont);
    }
}

void tjj_gpu_emit_tma_store(codegen *c, const tji_op *op, const tjp_shared_step *step)
{
    const tji_type *t = type_of(c, op->args[1]);
    uint32_t box[2];
    int nboxes;
    tjp_tma_store_box(step, t, box, &nboxes);
    if (step->staged_boxes) { /* only in a tile loop (src/passes/tma.c) */
        emit_staged_store(c, op, step, box, nboxes);
        return;
    }
    int in_flight = tjp_tma_store_tile_loop(c->g.fn, c->g.cur_op) >= 0;
    if (in_flight) { /* the last trip's store has read the buffer before anyone writes it */
        bulk_wait(c, step, "cp.async.bulk.wait_group.read 0;");
        tjj_gpu_bar_sync(c);
    } else {
        tjj_gpu_barrier(c, TJP_BARRIER_BEFORE);
        tjj_gpu_barrier(c, TJP_BARRIER_SHARED_WRITE);
    }
    tjj_gpu_write_tile(c, op->args[1], &step->use.swizzle, step->offset, step->use.write_vector, NULL);
    /* each thread's writes, seen by the copy engine's (async proxy) reads */
    tjj_gpu_intrinsic(&c->g, "llvm.nvvm.fence.proxy.async.shared_cta", NULL, 0, NULL, 0);
    tjj_gpu_barrier(c, TJP_BARRIER_SHARED_READ);
    LLVMBasicBlockRef cont = tjj_llvm_guard_begin(c->g.b, tjj_gpu_thread0_cond(c), "tma.store");
    issue_store(c, op, step, box, 0, nboxes, shared_address(c, step->offset, NULL), NULL);
    /* the buffer is free once read; a later store waits for the writes; in
     * the tile loop the next trip's store or the loop's end waits */
    if (step->tma_complete)
        tjj_gpu_ptx(c, c->g.ty.t_void, "cp.async.bulk.wait_group 0;", "", NULL, 0);
    else if (!in_flight)
        tjj_gpu_ptx(c, c->g.ty.t_void, "cp.async.bulk.wait_group.read 0;", "", NULL, 0);
    tjj_llvm_guard_end(c->g.b, cont);
}

void tjj_gpu_tma_store_after_loop(codegen *c, int32_t opi)
{
    const tji_func *fn = c->g.fn;
    for (int32_t i = 0; c->role != TJP_ROLE_PRODUCER && i < fn->nops && i < c->g.plan->nops; i++)
        if (c->g.plan->shared[i].kind == TJP_STEP_TMA_STORE && tjp_tma_store_tile_loop(fn, i) == opi) {
            bulk_wait(c, &c->g.plan->shared[i], "cp.async.bulk.wait_group 0;");
            return;
        }
}

/* Map m's tensor: the one op (a copy or a store) carries. */
static void map_tensor(const tji_func *fn, const tji_op *op, tjj_tmap_info *m)
{
    const int32_t *tensor = op->args + TJI_TMA_FIRST;
    int64_t unused;
    tjp_tma_source(fn, tensor[0], &m->base_param, &unused);
    m->rank = op->tma_rank;
    for (int d = 0; d < m->rank; d++) {
        tjp_tma_source(fn, tensor[1 + d], &m->shape[d].param, &m->shape[d].value);
        tjp_tma_source(fn, tensor[1 + m->rank + d], &m->strides[d].param, &m->strides[d].value);
    }
}

/* Map m's box and contiguous dimension from a 2-D tile's (cd, box): a
 * 3-D tensor's box is one tile of the batch. */
static void map_box(tjj_tmap_info *m, int cd, const uint32_t box[2])
{
    int first = m->rank - 2;
    m->contiguous = first + cd;
    for (int d = 0; d < first; d++)
        m->box[d] = 1;
    m->box[first] = box[0];
    m->box[first + 1] = box[1];
}

tjj_tmap_info *tjj_gpu_tma_maps(const tji_func *fn, const tjp_layout_plan *plan, int *n)
{
    *n = tjj_gpu_tma_count(plan);
    if (!*n)
        return NULL;
    tjj_tmap_info *maps = tjs_xcalloc((size_t)*n, sizeof *maps);
    uint32_t box[2];
    int nboxes;
    for (int r = 0; r < plan->nrings; r++) {
        const tjp_ring *R = &plan->rings[r];
        if (R->op < 0 || !R->tma)
            continue;
        const tji_op *copy = NULL;
        for (int32_t i = 0; i < fn->nops && !copy; i++)
            if (fn->ops[i].parent >= 0 && fn->ops[i].code == TJI_ASYNC_COPY && fn->ops[i].ring == r)
                copy = &fn->ops[i];
        const tji_type *t = tji_typeof(fn, copy->args[0]);
        tjj_tmap_info *m = &maps[R->tma_map];
        map_tensor(fn, copy, m);
        m->dtype = t->dtype;
        m->elem_bytes = R->elem_bytes;
        int splits;
        tjp_pair_boxes(R, t, plan->pairs && plan->pairs->multicast[r], box, &nboxes, &splits);
        map_box(m, R->tma_contiguous, box);
        m->swizzle_bytes = R->swizzle_bytes;
    }
    for (int32_t i = 0; plan->shared && i < plan->nops; i++) {
        const tjp_shared_step *step = &plan->shared[i];
        if (step->kind != TJP_STEP_TMA_STORE)
            continue;
        const tji_type *t = tji_typeof(fn, fn->ops[i].args[1]);
        tjj_tmap_info *m = &maps[step->tma_map];
        map_tensor(fn, &fn->ops[i], m);
        m->dtype = t->dtype;
        m->elem_bytes = step->use.swizzle.elem_bytes;
        tjp_tma_store_box(step, t, box, &nboxes);
        if (step->store_bands) /* each warpgroup stores its band of a box */
            box[0] /= (uint32_t)step->store_bands;
        map_box(m, 1, box);
        m->swizzle_bytes = step->swizzle_bytes;
    }
    return maps;
}
