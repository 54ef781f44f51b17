/* SPDX-License-Identifier: MIT */
/*
 * stream_k.c — STREAM_K_ARRIVE and STREAM_K_ADD: the pieces of a tile that
 * several programs compute meet (src/passes/stream_k.c makes them).
 *
 * The launch passes a workspace (a hidden parameter after the program
 * count): first a counter per stream-K tile (zero between launches),
 * then, past 8R bytes rounded up to 128 (R: the programs that take
 * ranges, at least the stream-K tiles), two slots of partial sums per
 * such program, each one piece tile of 4-byte elements in the computing
 * threads' register order
 * (slot_order: a warp's access is 512 contiguous bytes). A program's
 * pieces are at most two that are not whole tiles — the tail of its first
 * tile, slot 2 me, and the head of its last, slot 2 me + 1 — so the slot
 * of program q's piece of a tile is 2q plus 1 where q's range starts
 * before the tile.
 *
 * Nobody waits. A piece arrives: thread 0 reads the tile's counter
 * (acquire); if every other piece has arrived, this one is the last and
 * keeps its sum in registers. Otherwise the computing threads store their
 * registers into the piece's slot, meet at a barrier, and thread 0 counts
 * the piece in with one atomic add (acq_rel, after a gpu fence, so the
 * stores are everyone's before the count is); the piece that brings the
 * count to all but itself is the last. A barrier with an OR across the
 * threads (bar.red.or) tells every thread thread 0's answer. The last piece
 * then adds the other pieces' slots to its registers (ld.global.cg, from
 * L2: no L1 copy of another SM's writes) and sets the counter back to
 * zero for the next launch. Since a piece waits for nothing, no piece
 * depends on another program being resident, in any launch order.
 *
 * Under warp specialization these run in the consumers only: their named
 * barrier (warp_spec.c's) and their thread 0, which is the block's.
 */
#include <stdio.h>

#include "gen.h"

enum { COUNTERS_ALIGN = 128 };

/* The operands the pass gave both ops. */
typedef struct pieces {
    LLVMValueRef piece, iters, units, programs, me; /* i32, i32, i64, i32, i32 */
    LLVMValueRef start;                             /* the tile's first unit (i64) */
    LLVMValueRef per;                               /* units, or 1 where there are none (a
                                                       whole tile's: never divided by 0) */
} pieces;

static LLVMValueRef wide(codegen *c, LLVMValueRef v)
{
    return LLVMBuildSExt(c->g.b, v, c->g.ty.t_i64, "");
}

static pieces operands(codegen *c, const tji_op *op)
{
    pieces p = {c->ssa[op->args[1]], c->ssa[op->args[2]], c->ssa[op->args[3]], c->ssa[op->args[4]],
                c->ssa[op->args[5]], NULL, NULL};
    p.start = LLVMBuildMul(c->g.b, wide(c, p.piece), wide(c, p.iters), "sk.start");
    p.per = LLVMBuildSelect(c->g.b, LLVMBuildICmp(c->g.b, LLVMIntEQ, p.units, c_i64(c, 0), ""), c_i64(c, 1),
                            p.units, "");
    return p;
}

/* The program whose range holds unit g: ceil((g + 1) P / units) - 1. */
static LLVMValueRef owner(codegen *c, const pieces *p, LLVMValueRef g)
{
    LLVMBuilderRef b = c->g.b;
    LLVMValueRef num = LLVMBuildMul(b, LLVMBuildAdd(b, g, c_i64(c, 1), ""), wide(c, p->programs), "");
    num = LLVMBuildAdd(b, num, LLVMBuildSub(b, p->per, c_i64(c, 1), ""), "");
    LLVMValueRef q = LLVMBuildSDiv(b, num, p->per, "");
    return LLVMBuildTrunc(b, LLVMBuildSub(b, q, c_i64(c, 1), ""), c->g.ty.t_i32, "");
}

/* Program q's slot for this tile. */
static LLVMValueRef slot_of(codegen *c, const pieces *p, LLVMValueRef q)
{
    LLVMBuilderRef b = c->g.b;
    LLVMValueRef g0 = LLVMBuildSDiv(b, LLVMBuildMul(b, wide(c, q), p->units, ""), wide(c, p->programs), "");
    LLVMValueRef before = LLVMBuildZExt(b, LLVMBuildICmp(b, LLVMIntSLT, g0, p->start, ""), c->g.ty.t_i32, "");
    return LLVMBuildAdd(b, LLVMBuildShl(b, q, c_i32(c, 1), ""), before, "");
}

static LLVMValueRef counter_of(codegen *c, const pieces *p)
{
    LLVMValueRef idx = wide(c, p->piece);
    return LLVMBuildInBoundsGEP2(c->g.b, c->g.ty.t_i32, c->stream_k_workspace, &idx, 1, "sk.counter");
}

/* Word 0 of slot `slot`: past the 2P counters (rounded up). */
static LLVMValueRef slot_base(codegen *c, const pieces *p, LLVMValueRef slot, int64_t numel)
{
    LLVMBuilderRef b = c->g.b;
    LLVMValueRef counters = LLVMBuildMul(b, wide(c, p->programs), c_i64(c, 8), "");
    counters = LLVMBuildAnd(b, LLVMBuildAdd(b, counters, c_i64(c, COUNTERS_ALIGN - 1), ""),
                            c_i64(c, -COUNTERS_ALIGN), "");
    LLVMValueRef words = LLVMBuildAdd(b, LLVMBuildSDiv(b, counters, c_i64(c, 4), ""),
                                      LLVMBuildMul(b, wide(c, slot), c_i64(c, numel), ""), "");
    return LLVMBuildInBoundsGEP2(b, c->g.ty.t_i32, c->stream_k_workspace, &words, 1, "sk.slot");
}

/* Every computing thread learns whether pred held in any of them (and
 * they all meet). */
static LLVMValueRef barrier_or(codegen *c, LLVMValueRef pred)
{
    char text[200];
    if (c->role == TJP_ROLE_CONSUMER)
        snprintf(text, sizeof text, "{ .reg .pred p, q; setp.ne.u32 p, $1, 0; bar.red.or.pred q, 1, %d, p; "
                 "selp.u32 $0, 1, 0, q; }", 32 * c->num_warps);
    else
        snprintf(text, sizeof text, "{ .reg .pred p, q; setp.ne.u32 p, $1, 0; bar.red.or.pred q, 0, p; "
                 "selp.u32 $0, 1, 0, q; }");
    LLVMValueRef word = LLVMBuildZExt(c->g.b, pred, c->g.ty.t_i32, "");
    LLVMValueRef r = tjj_gpu_ptx(c, c->g.ty.t_i32, text, "=r,r", &word, 1);
    return LLVMBuildICmp(c->g.b, LLVMIntNE, r, c_i32(c, 0), "");
}

/* Thread 0's value of PTX `text` (result $0, counter $1), 0 elsewhere. */
static LLVMValueRef thread0_word(codegen *c, const char *text, LLVMValueRef counter)
{
    LLVMBasicBlockRef from = LLVMGetInsertBlock(c->g.b);
    LLVMBasicBlockRef cont = tjj_llvm_guard_begin(c->g.b, tjj_gpu_thread0_cond(c), "sk.t0");
    LLVMBasicBlockRef in = LLVMGetInsertBlock(c->g.b);
    LLVMValueRef v = tjj_gpu_ptx(c, c->g.ty.t_i32, text, "=r,l", &counter, 1);
    tjj_llvm_guard_end(c->g.b, cont);
    LLVMValueRef phi = LLVMBuildPhi(c->g.b, c->g.ty.t_i32, "");
    LLVMValueRef vals[] = {v, c_i32(c, 0)};
    LLVMBasicBlockRef blocks[] = {in, from};
    LLVMAddIncoming(phi, vals, blocks, 2);
    return phi;
}

/* Where a thread's registers go in a slot. Where every element has one
 * owner, in the registers' order: chunk j (registers j v .. j v + v - 1)
 * of computing thread t at word (j T + t) v, so a warp's access is 512
 * contiguous bytes of 16-byte parts; the piece that sums reads its
 * registers back from the same places, as every piece of a tile has the
 * same layout. Where threads hold copies, an element at its own index
 * (the copies write the same word). */
typedef struct slot_order {
    int width;         /* registers an access moves: 4, 2 or 1 */
    int by_fragment;   /* the registers' order (else the elements') */
    int64_t threads;   /* the computing threads */
} slot_order;

static slot_order order_of(codegen *c, int32_t acc)
{
    const tjp_layout *L = layout_of(c, acc);
    int n = nregs_of(c, acc);
    slot_order o = {.threads = 32 * (int64_t)c->num_warps};
    o.by_fragment = o.threads * n == tji_numel(type_of(c, acc));
    if (o.by_fragment)
        o.width = n % 4 == 0 ? 4 : n % 2 == 0 ? 2 : 1;
    else /* neighbouring registers, where they are neighbouring elements */
        o.width = L->nbits[TJP_REG] > 0 && L->basis[TJP_REG][0] == 1 ? 2 : 1;
    return o;
}

static LLVMValueRef word_ptr(codegen *c, const slot_order *o, int32_t acc, LLVMValueRef base, uint32_t r)
{
    LLVMBuilderRef b = c->g.b;
    LLVMValueRef idx;
    if (o->by_fragment) {
        LLVMValueRef t = LLVMBuildZExt(b, c->tid, c->g.ty.t_i64, "");
        idx = LLVMBuildAdd(b, c_i64(c, (int64_t)(r / (uint32_t)o->width) * o->threads), t, "");
        idx = LLVMBuildMul(b, idx, c_i64(c, o->width), "");
    } else {
        idx = LLVMBuildZExt(b, tjj_gpu_element_index(c, layout_of(c, acc), r), c->g.ty.t_i64, "");
    }
    return LLVMBuildInBoundsGEP2(b, c->g.ty.t_i32, base, &idx, 1, "");
}

static void save_piece(codegen *c, int32_t acc, LLVMValueRef base)
{
    slot_order o = order_of(c, acc);
    LLVMTypeRef vt = LLVMVectorType(c->g.ty.t_i32, (unsigned)o.width);
    for (int r = 0; r < nregs_of(c, acc); r += o.width) {
        LLVMValueRef v = LLVMGetUndef(vt);
        for (int k = 0; k < o.width; k++) {
            LLVMValueRef x = LLVMBuildBitCast(c->g.b, tjj_gpu_reg(c, acc, (uint32_t)(r + k)), c->g.ty.t_i32, "");
            v = LLVMBuildInsertElement(c->g.b, v, x, c_i32(c, k), "");
        }
        LLVMValueRef st = LLVMBuildStore(c->g.b, v, word_ptr(c, &o, acc, base, (uint32_t)r));
        LLVMSetAlignment(st, (unsigned)(4 * o.width));
    }
}

/* o.width words of another piece at ptr, as i32s: through L2 alone
 * (ld.global.cg), as an L1 line of this SM could hold older words. */
static void load_piece_words(codegen *c, const slot_order *o, LLVMValueRef ptr, LLVMValueRef *out)
{
    static const char *const text[] = {NULL, "ld.global.cg.b32 $0, [$1];", "ld.global.cg.v2.b32 {$0, $1}, [$2];",
                                       NULL, "ld.global.cg.v4.b32 {$0, $1, $2, $3}, [$4];"};
    static const char *const constraints[] = {NULL, "=r,l", "=r,=r,l", NULL, "=r,=r,=r,=r,l"};
    LLVMTypeRef words[4] = {c->g.ty.t_i32, c->g.ty.t_i32, c->g.ty.t_i32, c->g.ty.t_i32};
    if (o->width == 1) {
        out[0] = tjj_gpu_ptx(c, c->g.ty.t_i32, text[1], constraints[1], &ptr, 1);
        return;
    }
    LLVMValueRef got = tjj_gpu_ptx(c, LLVMStructTypeInContext(c->g.ctx, words, (unsigned)o->width, 0),
                                   text[o->width], constraints[o->width], &ptr, 1);
    for (int k = 0; k < o->width; k++)
        out[k] = LLVMBuildExtractValue(c->g.b, got, (unsigned)k, "");
}

void tjj_gpu_emit_stream_k_arrive(codegen *c, const tji_op *op)
{
    LLVMBuilderRef b = c->g.b;
    pieces p = operands(c, op);
    LLVMValueRef first = owner(c, &p, p.start);
    LLVMValueRef last = owner(c, &p, LLVMBuildSub(b, LLVMBuildAdd(b, p.start, wide(c, p.iters), ""), c_i64(c, 1), ""));
    LLVMValueRef others = LLVMBuildSub(b, last, first, "sk.others");
    LLVMValueRef split = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSGE, p.piece, c_i32(c, 0), ""),
                                      LLVMBuildICmp(b, LLVMIntSGT, others, c_i32(c, 0), ""), "sk.split");
    LLVMBasicBlockRef from = LLVMGetInsertBlock(b);
    LLVMBasicBlockRef meet = new_block(c, "sk.meet"), join = new_block(c, "sk.joined");
    LLVMBuildCondBr(b, split, meet, join);

    LLVMPositionBuilderAtEnd(b, meet);
    LLVMValueRef counter = counter_of(c, &p);
    LLVMValueRef seen = thread0_word(c, "ld.acquire.gpu.global.u32 $0, [$1];", counter);
    LLVMValueRef done = barrier_or(c, LLVMBuildAnd(b, tjj_gpu_thread0_cond(c),
                                                   LLVMBuildICmp(b, LLVMIntEQ, seen, others, ""), ""));
    LLVMBasicBlockRef after_check = LLVMGetInsertBlock(b);
    LLVMBasicBlockRef save = new_block(c, "sk.save"), saved = new_block(c, "sk.saved");
    LLVMBuildCondBr(b, done, saved, save);

    LLVMPositionBuilderAtEnd(b, save);
    LLVMValueRef slot = slot_of(c, &p, p.me);
    save_piece(c, op->args[0], slot_base(c, &p, slot, tji_numel(type_of(c, op->args[0]))));
    tjj_gpu_bar_sync(c);
    LLVMValueRef old = thread0_word(c, "fence.acq_rel.gpu; atom.acq_rel.gpu.global.add.u32 $0, [$1], 1;", counter);
    LLVMValueRef was_last = barrier_or(c, LLVMBuildAnd(b, tjj_gpu_thread0_cond(c),
                                                       LLVMBuildICmp(b, LLVMIntEQ, old, others, ""), ""));
    LLVMBasicBlockRef after_save = LLVMGetInsertBlock(b);
    LLVMBuildBr(b, saved);

    LLVMPositionBuilderAtEnd(b, saved);
    LLVMValueRef met = LLVMBuildPhi(b, c->g.ty.t_i1, "");
    LLVMAddIncoming(met, (LLVMValueRef[]){LLVMConstInt(c->g.ty.t_i1, 1, 0), was_last},
                    (LLVMBasicBlockRef[]){after_check, after_save}, 2);
    LLVMBuildBr(b, join);

    LLVMPositionBuilderAtEnd(b, join);
    LLVMValueRef result = LLVMBuildPhi(b, c->g.ty.t_i1, "");
    LLVMAddIncoming(result, (LLVMValueRef[]){LLVMConstInt(c->g.ty.t_i1, 1, 0), met},
                    (LLVMBasicBlockRef[]){from, saved}, 2);
    /* The answer is the block's, but ptxas cannot tell through bar.red and
     * thread 0's branches: from lane 0, it sees the epilogue's branch, and
     * so the next trip's K loop, as uniform (its ring on uniform registers,
     * no YIELD; measured in the SASS, RESULTS.md). */
    LLVMValueRef word = LLVMBuildZExt(b, result, c->g.ty.t_i32, "");
    c->ssa[op->result] = LLVMBuildICmp(b, LLVMIntNE, tjj_gpu_shuffle(c, 0, word, c_i32(c, 0)), c_i32(c, 0),
                                       "sk.last");
}

void tjj_gpu_emit_stream_k_add(codegen *c, const tji_op *op)
{
    LLVMBuilderRef b = c->g.b;
    int32_t acc = op->args[0];
    int n = nregs_of(c, acc), is_float = type_of(c, acc)->dtype == TJ_F32;
    LLVMTypeRef et = is_float ? c->g.ty.t_float : c->g.ty.t_i32;
    slot_order o = order_of(c, acc);
    pieces p = operands(c, op);
    LLVMValueRef split = LLVMBuildICmp(b, LLVMIntSGE, p.piece, c_i32(c, 0), "");
    LLVMValueRef first = LLVMBuildSelect(b, split, owner(c, &p, p.start), p.me, "");
    LLVMValueRef end = LLVMBuildSub(b, LLVMBuildAdd(b, p.start, wide(c, p.iters), ""), c_i64(c, 1), "");
    LLVMValueRef last = LLVMBuildSelect(b, split, owner(c, &p, end), p.me, "");

    /* the sum lives in an alloca through the loop over the other pieces */
    LLVMValueRef sum = LLVMBuildAlloca(c->eb, LLVMArrayType(et, (unsigned)n), "sk.sum");
    for (int r = 0; r < n; r++) {
        LLVMValueRef idx[] = {c_i32(c, 0), c_i32(c, r)};
        LLVMBuildStore(b, tjj_gpu_reg(c, acc, (uint32_t)r), LLVMBuildInBoundsGEP2(b, LLVMArrayType(et, (unsigned)n),
                                                                                    sum, idx, 2, ""));
    }
    LLVMBasicBlockRef from = LLVMGetInsertBlock(b);
    LLVMBasicBlockRef head = new_block(c, "sk.next"), other = new_block(c, "sk.other");
    LLVMBasicBlockRef add = new_block(c, "sk.add"), skip = new_block(c, "sk.skip"), done = new_block(c, "sk.done");
    LLVMBuildBr(b, head);
    LLVMPositionBuilderAtEnd(b, head);
    LLVMValueRef q = LLVMBuildPhi(b, c->g.ty.t_i32, "sk.q");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSGT, q, last, ""), done, other);
    LLVMPositionBuilderAtEnd(b, other);
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntEQ, q, p.me, ""), skip, add);

    LLVMPositionBuilderAtEnd(b, add);
    LLVMValueRef base = slot_base(c, &p, slot_of(c, &p, q), tji_numel(type_of(c, acc)));
    for (int r = 0; r < n; r += o.width) {
        LLVMValueRef words[4];
        load_piece_words(c, &o, word_ptr(c, &o, acc, base, (uint32_t)r), words);
        for (int k = 0; k < o.width; k++) {
            LLVMValueRef idx[] = {c_i32(c, 0), c_i32(c, r + k)};
            LLVMValueRef at = LLVMBuildInBoundsGEP2(b, LLVMArrayType(et, (unsigned)n), sum, idx, 2, "");
            LLVMValueRef x = LLVMBuildBitCast(b, words[k], et, "");
            LLVMValueRef cur = LLVMBuildLoad2(b, et, at, "");
            LLVMBuildStore(b, is_float ? LLVMBuildFAdd(b, cur, x, "") : LLVMBuildAdd(b, cur, x, ""), at);
        }
    }
    LLVMBuildBr(b, skip);
    LLVMPositionBuilderAtEnd(b, skip);
    LLVMValueRef next = LLVMBuildAdd(b, q, c_i32(c, 1), "");
    LLVMBuildBr(b, head);
    LLVMAddIncoming(q, (LLVMValueRef[]){first, next}, (LLVMBasicBlockRef[]){from, skip}, 2);

    LLVMPositionBuilderAtEnd(b, done);
    /* the counter starts the next launch at zero */
    LLVMBasicBlockRef cont = tjj_llvm_guard_begin(b, LLVMBuildAnd(b, split, tjj_gpu_thread0_cond(c), ""), "sk.reset");
    LLVMValueRef st = LLVMBuildStore(b, c_i32(c, 0), counter_of(c, &p));
    LLVMSetVolatile(st, 1);
    tjj_llvm_guard_end(b, cont);
    LLVMValueRef *out = tjj_gpu_regs_for(c, op->result);
    for (int r = 0; r < n; r++) {
        LLVMValueRef idx[] = {c_i32(c, 0), c_i32(c, r)};
        out[r] = LLVMBuildLoad2(b, et, LLVMBuildInBoundsGEP2(b, LLVMArrayType(et, (unsigned)n), sum, idx, 2, ""), "");
    }
}
