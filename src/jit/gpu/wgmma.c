/* SPDX-License-Identifier: MIT */
/*
 * wgmma.c — a dot in the WGMMA form (src/passes/wgmma.c): Hopper's
 * warpgroup-wide, asynchronous wgmma.mma_async, operands read from the
 * rings of pipelined loads through matrix descriptors.
 *
 * Each warpgroup (warps 4g .. 4g+3) computes its block of M / groups rows:
 * for every step of 16 along K, one m64nNk16 per 64 rows and per N
 * columns of the instruction, into the accumulator registers that
 * tjp_layout_wgmma_acc gives that instruction (found by inverting the
 * layout, as dot.c finds mma.sync's). The sequence is
 *
 *     wgmma.fence; wgmma.mma_async ...; wgmma.commit_group;
 *     wgmma.wait_group N
 *
 * with N = 1 where the plan says async (the group stays in flight while
 * the next iteration waits for its copies and issues its own; the FOR
 * that carries the accumulator waits with N = 0 after its last trip,
 * tjj_gpu_wgmma_after_loop) and 0 otherwise. Both waits are inline PTX
 * with every accumulator register tied through them: the intrinsic
 * carries no data, so LLVM could read the accumulators before the wait,
 * which is wrong, and ptxas serializes the wgmma when it sees them read
 * (C7515). wgmma.mma_async itself has no NVVM intrinsic in LLVM 22 and is
 * inline PTX too, its accumulators tied in and out; both are side effects
 * and convergent, so LLVM neither drops nor moves them.
 *
 * A register A operand (ch->a_in_regs, 16-bit) is four 32-bit registers
 * per instruction instead of A's descriptor: the fragment at the
 * instruction's (row, k), which tjp_layout_wgmma_a puts in eight
 * consecutive registers, found by inverting the layout as the
 * accumulators are.
 *
 * A TF32 register operand (four tf32 registers per instruction) is read
 * from its ring: A stored along M (B along K; a_in_regs) as it is, or B
 * stored along N (NN, ch->b_in_regs) through the transposed product: the same
 * instructions on Cᵀ = Bᵀ Aᵀ, their rows along N and their columns along
 * M, the register operand B's fragment at (k, row), wgmma's B A's ring
 * (whose K-major descriptor is the same whether A or B reads it), the
 * accumulators found in the transposed layout at C's (column, row).
 * Either way the ring's reads come only where this code first asks for
 * them (its read_at_use: shared.c's deferred reads), so the loads of a
 * K step (of two, where there are four or more) sit right before its
 * instructions and overlap the previous step's; a wgmma.fence follows
 * them (it orders register writes before the wgmma that reads them).
 * Async, each K step is a group of its own, and the wait before the
 * loads leaves in flight only the groups after the previous iteration's
 * same steps, the last readers of the registers those loads overwrite.
 *
 * A descriptor is the slot's shared address (the ring's offset, the slot
 * times its bytes, and for A the warpgroup's rows), shifted right by 4 into
 * bits 0-13, LBO and SBO (bits 16-29, 32-45, bytes >> 4) and the swizzle
 * mode (bits 62-63: 1 = 128 bytes, 2 = 64, 3 = 32). An instruction's own
 * start adds the swizzled byte offset of its first element, which is its
 * address because that element starts an 8-row atom (the XOR is 0 there;
 * the hardware applies it to every address it forms).
 *
 * The operands' LOCAL_LOADs emit nothing (async.c); the copies into the
 * rings are generic-proxy writes that wgmma reads through the async proxy,
 * so the wait before the reads adds fence.proxy.async (async.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

enum { MAX_ACC = 256, MAX_BLOCKS = 8 /* m64 blocks of a warpgroup */ };

/* The ring wgmma reads operand v from (its slot's value into *slot), and
 * into *view the ring as v sees it (tjp_wgmma_view: through tj_trans,
 * the transpose); NULL after a failure. */
static const tjp_ring *operand_ring(codegen *c, int32_t v, int32_t *slot, tjp_ring *view)
{
    const tji_func *fn = c->g.fn;
    const tjp_layout_plan *p = c->g.plan;
    int trans;
    int32_t read = tjp_wgmma_operand_read(fn, v, &trans);
    const tji_op *ll = read >= 0 ? &fn->ops[read] : NULL;
    if (!ll || !p->rings || ll->ring < 0 || ll->ring >= p->nrings || !p->rings[ll->ring].wgmma) {
        FAIL(c, "internal error: a wgmma operand is not read from a ring in the NVMMA layout");
        return NULL;
    }
    *slot = ll->args[0];
    tjp_wgmma_view(&p->rings[ll->ring], type_of(c, ll->result), trans, view);
    return &p->rings[ll->ring];
}

/* The descriptor of the slot's start plus `extra` bytes (an i32 value or
 * NULL), as tjp_wgmma_operand describes the operand. */
static LLVMValueRef descriptor(codegen *c, const tjp_ring *R, const tji_type *t, int is_b, int32_t slot,
                               LLVMValueRef extra)
{
    LLVMBuilderRef b = c->g.b;
    tjp_wgmma_desc d;
    tjp_wgmma_operand(R, t, is_b, &d);
    uint64_t lbo = d.lbo >> 4, sbo = d.sbo >> 4, mode = (uint64_t)d.mode;
    LLVMValueRef base = LLVMBuildPtrToInt(b, tjj_gpu_shared(c), c->g.ty.t_i32, "");
    LLVMValueRef addr = LLVMBuildAdd(b, base, c_i32(c, (int64_t)R->offset), "");
    addr = LLVMBuildAdd(b, addr, LLVMBuildMul(b, tjj_gpu_reg(c, slot, 0), c_i32(c, (int64_t)R->slot_bytes), ""), "");
    if (extra)
        addr = LLVMBuildAdd(b, addr, extra, "");
    LLVMValueRef start = LLVMBuildAnd(b, LLVMBuildLShr(b, addr, c_i32(c, 4), ""), c_i32(c, 0x3FFF), "");
    uint64_t high = lbo << 16 | sbo << 32 | mode << 62;
    return LLVMBuildOr(b, LLVMBuildZExt(b, start, c->g.ty.t_i64, ""), c_i64(c, (int64_t)high), "");
}

static void mark_convergent(codegen *c, LLVMValueRef call)
{
    unsigned convergent = LLVMGetEnumAttributeKindForName("convergent", strlen("convergent"));
    LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c->g.ty.ctx, convergent, 0));
}

/* Inline PTX `text` whose n results (f32, or i32 where is_int) are tied
 * to acc[0..n-1] and replace them, with `extra` more arguments of types
 * extra_types and constraints extra_constraints ahead of those. */
static void tied_asm(codegen *c, const char *text, LLVMValueRef *acc, int n, int is_int, LLVMValueRef *extra,
                     LLVMTypeRef *extra_types, const char *extra_constraints, int nextra)
{
    LLVMTypeRef f = is_int ? c->g.ty.t_i32 : c->g.ty.t_float, results[MAX_ACC], params[MAX_ACC + 4];
    LLVMValueRef args[MAX_ACC + 4];
    tjs_buf cons = {0};
    for (int i = 0; i < n; i++) {
        results[i] = f;
        tjs_buf_printf(&cons, "%s=%s", i ? "," : "", is_int ? "r" : "f");
    }
    for (int i = 0; i < nextra; i++) {
        params[i] = extra_types[i];
        args[i] = extra[i];
    }
    if (nextra)
        tjs_buf_printf(&cons, ",%s", extra_constraints);
    for (int i = 0; i < n; i++) {
        params[nextra + i] = f;
        args[nextra + i] = acc[i];
        tjs_buf_printf(&cons, ",%d", i);
    }
    LLVMTypeRef fty = LLVMFunctionType(LLVMStructTypeInContext(c->g.ty.ctx, results, (unsigned)n, 0), params,
                                       (unsigned)(n + nextra), 0);
    LLVMValueRef asm_fn = LLVMGetInlineAsm(fty, text, strlen(text), cons.data, cons.len, 1, 0,
                                           LLVMInlineAsmDialectATT, 0);
    LLVMValueRef call = LLVMBuildCall2(c->g.b, fty, asm_fn, args, (unsigned)(n + nextra), "");
    mark_convergent(c, call);
    for (int i = 0; i < n; i++)
        acc[i] = LLVMBuildExtractValue(c->g.b, call, (unsigned)i, "");
    tjs_buf_free(&cons);
}

/* wgmma.wait_group.sync.aligned n, the accumulators tied through it. */
static void wait_group(codegen *c, int n, LLVMValueRef *acc, int nacc, int is_int)
{
    char text[64];
    snprintf(text, sizeof text, "wgmma.wait_group.sync.aligned %d;", n);
    tied_asm(c, text, acc, nacc, is_int, NULL, NULL, NULL, 0);
}

static const char *ptx_type(tj_dtype dt)
{
    switch (dt) {
    case TJ_BF16: return "bf16";
    case TJ_F32: return "tf32";
    case TJ_F8E4M3: return "e4m3";
    case TJ_F8E5M2: return "e5m2";
    case TJ_I8: return "s8";
    default: return "f16";
    }
}

/* One wgmma.mma_async of m64<n>k<32 bytes> of A's and B's dtypes into
 * acc[0 .. n/2-1], adding to them where scale_d (an i32) is not 0; A from
 * its descriptor, or where a_words is not NULL from those four registers;
 * the transposes exist for 16-bit operands only (A's for a descriptor
 * only), the input scales for floats. */
static void mma_async(codegen *c, int n, int eb, tj_dtype a, tj_dtype b, int trans_a, int trans_b,
                      LLVMValueRef desc_a, const LLVMValueRef *a_words, LLVMValueRef desc_b, LLVMValueRef scale_d,
                      LLVMValueRef *acc)
{
    int h = n / 2, na = a_words ? 4 : 1;
    tjs_buf text = {0};
    /* operands: results $0..$h-1, then A ($h, or $h..$h+3), desc_b, scale-d */
    tjs_buf_printf(&text, "{\n.reg .pred p;\nsetp.ne.b32 p, $%d, 0;\n"
                   "wgmma.mma_async.sync.aligned.m64n%dk%d.%s.%s.%s {", h + na + 1, n, 32 / eb,
                   a == TJ_I8 ? "s32" : "f32", ptx_type(a), ptx_type(b));
    for (int i = 0; i < h; i++)
        tjs_buf_printf(&text, "%s$%d", i ? ", " : "", i);
    if (a_words)
        tjs_buf_printf(&text, "}, {$%d, $%d, $%d, $%d}, $%d, p", h, h + 1, h + 2, h + 3, h + 4);
    else
        tjs_buf_printf(&text, "}, $%d, $%d, p", h, h + 1);
    if (eb == 2 && a_words)
        tjs_buf_printf(&text, ", 1, 1, %d", trans_b);
    else if (eb == 2)
        tjs_buf_printf(&text, ", 1, 1, %d, %d", trans_a, trans_b);
    else if (a != TJ_I8)
        tjs_buf_printf(&text, ", 1, 1");
    tjs_buf_printf(&text, ";\n}");
    LLVMValueRef extra[6];
    LLVMTypeRef types[6];
    for (int i = 0; i < na; i++) {
        extra[i] = a_words ? a_words[i] : desc_a;
        types[i] = a_words ? c->g.ty.t_i32 : c->g.ty.t_i64;
    }
    extra[na] = desc_b, types[na] = c->g.ty.t_i64;
    extra[na + 1] = scale_d, types[na + 1] = c->g.ty.t_i32;
    tied_asm(c, text.data, acc, h, a == TJ_I8, extra, types, a_words ? "r,r,r,r,l,r" : "l,l,r", na + 2);
    tjs_buf_free(&text);
}

/* The four 32-bit registers of the register-A fragment whose first element
 * is A's register r0 (tjp_layout_wgmma_a: eight 16-bit elements in the
 * ISA's order), packed two to a word, low element first. */
static void a_fragment(codegen *c, int32_t a, tj_dtype dt, uint32_t r0, LLVMValueRef *words)
{
    LLVMBuilderRef b = c->g.b;
    for (uint32_t w = 0; w < 4; w++) {
        LLVMValueRef lo = tjj_gpu_reg(c, a, r0 + 2 * w), hi = tjj_gpu_reg(c, a, r0 + 2 * w + 1);
        if (dt == TJ_F16) {
            LLVMValueRef v = LLVMGetPoison(LLVMVectorType(c->g.ty.t_half, 2));
            v = LLVMBuildInsertElement(b, v, lo, c_i32(c, 0), "");
            v = LLVMBuildInsertElement(b, v, hi, c_i32(c, 1), "");
            words[w] = LLVMBuildBitCast(b, v, c->g.ty.t_i32, "");
        } else { /* bf16, held as i16 */
            LLVMValueRef high = LLVMBuildShl(b, LLVMBuildZExt(b, hi, c->g.ty.t_i32, ""), c_i32(c, 16), "");
            words[w] = LLVMBuildOr(b, LLVMBuildZExt(b, lo, c->g.ty.t_i32, ""), high, "");
        }
    }
}

/* The FOR whose body holds op (-1, after a failure, where none does). */
static int32_t loop_of(codegen *c, const tji_op *op)
{
    const tji_func *fn = c->g.fn;
    for (int32_t i = 0; i < fn->nops; i++)
        if (fn->ops[i].parent >= 0 && fn->ops[i].code == TJI_FOR && fn->ops[i].region[0] == op->parent)
            return i;
    FAIL(c, "internal error: wgmma: an accumulator that skips its zeros outside a loop");
    return -1;
}

int tjj_gpu_wgmma_skips_init(codegen *c, int32_t opi, int k)
{
    const tji_func *fn = c->g.fn;
    const tjp_layout_plan *p = c->g.plan;
    const tji_region *body = &fn->regions[fn->ops[opi].region[0]];
    for (int32_t j = 0; p->dot && j < body->nops; j++) {
        int32_t i = body->ops[j];
        if (i < p->nops && fn->ops[i].code == TJI_DOT && p->dot[i].form == TJP_DOT_WGMMA && p->dot[i].skip_zero_init &&
            fn->ops[i].args[2] == body->args[1 + k])
            return 1;
    }
    return 0;
}

/* The wgmma's register A operand at the instruction's (row, k) into
 * words: A's fragment (a_in_regs: eight 16-bit elements packed in pairs,
 * or four tf32) or, for the transposed product (b_in_regs), Bᵀ's: the four
 * tf32 registers of B at (k, row). 0 after a failure. */
static int register_operand(codegen *c, const tji_op *op, const tjp_dot_choice *ch, uint32_t row, uint32_t k,
                            LLVMValueRef *words)
{
    int32_t v = op->args[ch->b_in_regs ? 1 : 0];
    const tji_type *t = type_of(c, v);
    uint32_t pos = ch->b_in_regs ? k << log2_of((uint32_t)t->shape[1]) | row
                                 : row << log2_of((uint32_t)t->shape[1]) | k;
    uint32_t r, lane, warp, per = ch->elem_bytes == 4 ? 4 : 8;
    if (!tjp_layout_invert(layout_of(c, v), pos, &r, &lane, &warp) || lane || warp || r % per) {
        FAIL(c, "internal error: wgmma: %s's registers are not the fragment at row %u, k %u",
             ch->b_in_regs ? "B" : "A", row, k);
        return 0;
    }
    if (ch->elem_bytes == 2)
        a_fragment(c, v, t->dtype, r, words);
    for (uint32_t w = 0; ch->elem_bytes == 4 && w < 4; w++) /* tf32: one element a word */
        words[w] = LLVMBuildBitCast(c->g.b, tjj_gpu_reg(c, v, r + w), c->g.ty.t_i32, "");
    return 1;
}

/* Is v read from a ring where first used (the ring's read_at_use: a TF32
 * register operand)? Then each K step loads its own fragments. */
static int read_at_use(codegen *c, int32_t v)
{
    const tjp_layout_plan *p = c->g.plan;
    int32_t def = tji_val(c->g.fn, v)->def_op;
    const tji_op *ll = def >= 0 ? &c->g.fn->ops[def] : NULL;
    return ll && ll->code == TJI_LOCAL_LOAD && p->rings && ll->ring >= 0 && ll->ring < p->nrings &&
           p->rings[ll->ring].read_at_use && !p->rings[ll->ring].ldmatrix;
}

/* Does the loop body that holds op carry its accumulator in? */
static int accumulator_carried(codegen *c, const tji_op *op)
{
    const tji_region *body = &c->g.fn->regions[op->parent];
    for (int i = 1; op->args[2] && i < body->nargs; i++)
        if (body->args[i] == op->args[2])
            return 1;
    return 0;
}

void tjj_gpu_emit_wgmma(codegen *c, const tji_op *op, const tjp_dot_choice *ch)
{
    int32_t res = op->result, slot_a = 0, slot_b = 0;
    const tji_type *rt = type_of(c, res), *at = type_of(c, op->args[0]), *bt = type_of(c, op->args[1]);
    if (c->sm != 90 || !c->arch_specific) {
        FAIL(c, "wgmma needs the sm_90a target (the target is sm_%d%s)", c->sm, c->arch_specific ? "a" : "");
        return;
    }
    int is_int = at->dtype == TJ_I8, eb = ch->elem_bytes, swap = ch->b_in_regs;
    tj_dtype acc_dt = is_int ? TJ_I32 : TJ_F32;
    int kinds_ok = at->dtype == TJ_F16 || at->dtype == TJ_BF16 ? bt->dtype == at->dtype && eb == 2
                   : at->dtype == TJ_F32 ? bt->dtype == TJ_F32 && op->precision == TJ_PRECISION_TF32 && eb == 4
                   : is_int ? bt->dtype == TJ_I8 && eb == 1
                            : tjs_dtype_is_fp8(at->dtype) && tjs_dtype_is_fp8(bt->dtype) && eb == 1;
    if (!kinds_ok || rt->dtype != acc_dt || (op->args[2] && type_of(c, op->args[2])->dtype != acc_dt)) {
        FAIL(c, "internal error: wgmma takes f16, bf16, tf32 or fp8 operands into f32, or i8 into i32");
        return;
    }
    if ((ch->a_in_regs && eb != 2 && eb != 4) || (swap && (eb != 4 || ch->a_in_regs))) {
        FAIL(c, "internal error: wgmma reads A from registers for 16-bit and tf32 operands only, B for tf32");
        return;
    }
    /* the register operand read from its ring K step by K step */
    int staged = (ch->a_in_regs || swap) && read_at_use(c, op->args[swap ? 1 : 0]);
    if (ch->async && (ch->a_in_regs || swap) && !staged) {
        FAIL(c, "internal error: wgmma: an asynchronous register operand not read from a ring where used");
        return;
    }
    /* A's ring (wgmma's A, or for the transposed product its B) and B's,
     * released after the wait, and as the operands see them (VA, VB) */
    tjp_ring view_a, view_b;
    const tjp_ring *RA = ch->a_in_regs ? NULL : operand_ring(c, op->args[0], &slot_a, &view_a);
    if (!ch->a_in_regs && !RA)
        return;
    const tjp_ring *RB = swap ? NULL : operand_ring(c, op->args[1], &slot_b, &view_b);
    if (!swap && !RB)
        return;
    const tjp_ring *VA = RA ? &view_a : NULL, *VB = RB ? &view_b : NULL;
    const tjp_layout *LC = layout_of(c, res);
    int n = ch->instr_n, groups = c->num_warps / 4, nacc = nregs_of(c, res);
    uint32_t M = (uint32_t)at->shape[0], K = (uint32_t)at->shape[1], N = (uint32_t)bt->shape[1];
    /* the instructions' rows (M, or N for the transposed product) and columns */
    uint32_t rows = (swap ? N : M) / (uint32_t)groups, cols = swap ? M : N;
    if (nacc > MAX_ACC || n / 2 > MAX_ACC || groups < 1) {
        FAIL(c, "internal error: wgmma: %d accumulator registers per thread", nacc);
        return;
    }
    /* the warpgroup's rows of A: the swizzled offsets of its row bits,
     * which no instruction's own offset shares (so adding is XOR) */
    LLVMBuilderRef b = c->g.b;
    LLVMValueRef group = LLVMBuildLShr(b, c->warp, c_i32(c, 2), ""), group_bytes = c_i32(c, 0);
    uint64_t group_bits = 0, local_bits = 0;
    for (int j = 0; VA && !swap && (1 << j) < groups; j++) {
        uint64_t off = tjp_wgmma_offset(VA, at, rows << j, 0);
        group_bits |= off;
        LLVMValueRef on = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, group, c_i32(c, 1 << j), ""), c_i32(c, 0), "");
        group_bytes = LLVMBuildAdd(b, group_bytes, LLVMBuildSelect(b, on, c_i32(c, (int64_t)off), c_i32(c, 0), ""), "");
    }
    tjp_wgmma_desc ka = {.k_major = 1}, kb = {.k_major = 1};
    if (VA)
        tjp_wgmma_operand(VA, at, 0, &ka);
    if (VB)
        tjp_wgmma_operand(VB, bt, 1, &kb);
    if (eb != 2 && (!ka.k_major || !kb.k_major)) {
        FAIL(c, "internal error: wgmma of %s operands reads them K-major only", tj_dtype_name(at->dtype));
        return;
    }
    LLVMValueRef desc_a = VA ? descriptor(c, VA, at, 0, slot_a, swap ? NULL : group_bytes) : NULL;
    LLVMValueRef desc_b = VB ? descriptor(c, VB, bt, 1, slot_b, NULL) : desc_a;
    /* skip_zero_init: the first K step overwrites — on the loop's first
     * iteration for a carried accumulator, always for a +0.0 constant */
    LLVMValueRef first_scale = c_i32(c, 1), acc[MAX_ACC];
    int carried = ch->skip_zero_init && accumulator_carried(c, op);
    int32_t loop = carried ? loop_of(c, op) : -1;
    if (carried && loop < 0)
        return;
    if (ch->skip_zero_init && !carried)
        first_scale = c_i32(c, 0);
    if (loop >= 0) {
        const tji_op *f = &c->g.fn->ops[loop];
        LLVMValueRef iv = tjj_gpu_reg(c, c->g.fn->regions[f->region[0]].args[0], 0);
        first_scale = LLVMBuildZExt(b, LLVMBuildICmp(b, LLVMIntNE, iv, tjj_gpu_reg(c, f->args[0], 0), ""),
                                    c->g.ty.t_i32, "");
    }
    LLVMTypeRef acc_type = is_int ? c->g.ty.t_i32 : c->g.ty.t_float;
    for (int r = 0; r < nacc; r++)
        acc[r] = ch->skip_zero_init && !carried ? LLVMGetPoison(acc_type)
                 : op->args[2]                  ? tjj_gpu_reg(c, op->args[2], (uint32_t)r)
                                                : LLVMConstNull(acc_type);
    if (rows / 64 > MAX_BLOCKS) {
        FAIL(c, "internal error: wgmma: %u rows per warpgroup", rows);
        return;
    }
    if (!staged)
        tjj_gpu_intrinsic(&c->g, "llvm.nvvm.wgmma.fence.sync.aligned", NULL, 0, NULL, 0);
    uint32_t kstep = 32u / (uint32_t)eb, ksteps = K / kstep;
    /* Staged: the register operand's fragments are loaded (the ring's
     * reads wait for their first use) right before the fence that orders
     * those register writes before the instructions that read them, and
     * the fence waits for the loads: so the fragments of two K steps are
     * loaded at once, behind one fence, halving those waits, where there
     * are four steps or more. (Loading a step ahead, after the fence of
     * the step before, is no way around it: a register write between a
     * fence and its wgmma makes ptxas inject a fence of its own there,
     * C7519, which waits for those loads all the same.) Async, each step
     * is a group, and the loads overwrite the registers of the last
     * iteration's same steps: the wait before them leaves in flight only
     * the groups committed after those, ksteps - per_fence of them. */
    const uint32_t per_fence = staged && ksteps >= 4 && ksteps % 2 == 0 ? 2 : 1;
    LLVMValueRef words[2][MAX_BLOCKS][4];
    for (uint32_t step = 0; step < ksteps && c->g.status == TJ_OK; step++) {
        uint32_t k0 = step * kstep;
        if (staged && step % per_fence == 0) {
            if (ch->async)
                wait_group(c, (int)(ksteps - per_fence), acc, nacc, is_int);
            for (uint32_t s = 0; s < per_fence; s++)
                for (uint32_t row0 = 0; row0 < rows; row0 += 64)
                    if (!register_operand(c, op, ch, row0, k0 + s * kstep, words[s][row0 / 64]))
                        return;
            tjj_gpu_intrinsic(&c->g, "llvm.nvvm.wgmma.fence.sync.aligned", NULL, 0, NULL, 0);
        }
        for (uint32_t row0 = 0; row0 < rows && c->g.status == TJ_OK; row0 += 64)
            for (uint32_t col0 = 0; col0 < cols && c->g.status == TJ_OK; col0 += (uint32_t)n) {
                uint32_t r0, lane, warp;
                uint32_t at_c = swap ? col0 << log2_of(N) | row0 : row0 << log2_of(N) | col0;
                if (!tjp_layout_invert(LC, at_c, &r0, &lane, &warp) || lane || warp || r0 % (uint32_t)(n / 2) ||
                    (int)r0 + n / 2 > nacc) {
                    FAIL(c, "internal error: wgmma: no accumulator registers for the block at row %u, column %u",
                         row0, col0);
                    break;
                }
                /* wgmma's B: B at (k, col), or Aᵀ (A at (col, k)) */
                uint64_t off_b = swap ? tjp_wgmma_offset(VA, at, col0, k0) : tjp_wgmma_offset(VB, bt, k0, col0);
                LLVMValueRef a_desc = NULL, a_words[4], *a_regs = NULL;
                if (staged) {
                    a_regs = words[step % per_fence][row0 / 64];
                } else if (RA) {
                    uint64_t off_a = tjp_wgmma_offset(VA, at, row0, k0);
                    local_bits |= off_a;
                    a_desc = LLVMBuildAdd(b, desc_a, c_i64(c, (int64_t)(off_a >> 4)), "");
                } else if (register_operand(c, op, ch, row0, k0, a_words)) {
                    a_regs = a_words;
                } else {
                    break;
                }
                mma_async(c, n, eb, at->dtype, bt->dtype, !ka.k_major, !kb.k_major, a_desc, a_regs,
                          LLVMBuildAdd(b, desc_b, c_i64(c, (int64_t)(off_b >> 4)), ""),
                          k0 ? c_i32(c, 1) : first_scale, acc + r0);
            }
        if (staged && ch->async && c->g.status == TJ_OK)
            tjj_gpu_intrinsic(&c->g, "llvm.nvvm.wgmma.commit_group.sync.aligned", NULL, 0, NULL, 0);
    }
    if (group_bits & local_bits)
        FAIL(c, "internal error: wgmma: a warpgroup's rows and an instruction's offset share address bits");
    if (c->g.status != TJ_OK)
        return;
    if (!(staged && ch->async)) { /* else each K step committed its group */
        tjj_gpu_intrinsic(&c->g, "llvm.nvvm.wgmma.commit_group.sync.aligned", NULL, 0, NULL, 0);
        wait_group(c, ch->async ? 1 : 0, acc, nacc, is_int);
    }
    /* a slot that several dots read is released by the last of them:
     * after its wait, or the next where its group stays in flight, every
     * group that read the slot is complete */
    int32_t opi = (int32_t)(op - c->g.fn->ops);
    if (RA && tjp_wgmma_last_reader(c->g.fn, opi, 0))
        tjj_gpu_release_after_wait(c, RA, tjj_gpu_reg(c, slot_a, 0), ch->async);
    if (RB && tjp_wgmma_last_reader(c->g.fn, opi, 1))
        tjj_gpu_release_after_wait(c, RB, tjj_gpu_reg(c, slot_b, 0), ch->async);
    LLVMValueRef *out = tjj_gpu_regs_for(c, res);
    for (int r = 0; r < nacc; r++)
        out[r] = acc[r];
}

void tjj_gpu_wgmma_after_loop(codegen *c, int32_t opi)
{
    const tji_func *fn = c->g.fn;
    const tjp_layout_plan *p = c->g.plan;
    const tji_region *body = &fn->regions[fn->ops[opi].region[0]];
    if (!p->dot || !body->nops || c->g.status != TJ_OK || c->role == TJP_ROLE_PRODUCER)
        return;
    const tji_op *yield = &fn->ops[body->ops[body->nops - 1]];
    for (int32_t k = 0; k < body->nops; k++) {
        int32_t i = body->ops[k];
        if (i >= p->nops || fn->ops[i].code != TJI_DOT || p->dot[i].form != TJP_DOT_WGMMA || !p->dot[i].async)
            continue;
        for (int y = 0; y < yield->nargs; y++)
            if (yield->args[y] == fn->ops[i].result) {
                int32_t res = fn->ops[opi].result + y, slot;
                tjp_ring view;
                wait_group(c, 0, tjj_gpu_regs_for(c, res), nregs_of(c, res), type_of(c, res)->dtype == TJ_I32);
                for (int a = 0; a < 2 && c->role; a++) {
                    const tjp_ring *R =
                        tjp_wgmma_reads_ring(&p->dot[i], a) ? operand_ring(c, fn->ops[i].args[a], &slot, &view) : NULL;
                    if (R)
                        tjj_gpu_release_pending(c, R);
                }
            }
    }
}
