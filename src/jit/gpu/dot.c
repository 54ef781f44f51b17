/* SPDX-License-Identifier: MIT */
/*
 * dot.c — DOT on the GPU, in the form the plan chose
 * (src/passes/accelerate_dot.c): fused multiply-adds in each thread, or
 * mma.sync on tensor cores.
 *
 * Both read their operands in registers, in the layouts the plan put them
 * in (the conversions of loaded tiles into those went through shared
 * memory before this op); a register's element is the layout's, so the
 * code finds the registers it needs by inverting the layouts, never by
 * assuming their order beyond what layout_mma.c's essay promises and
 * tests/test_dot_gpu_plan.c checks against the PTX ISA: one instruction's
 * fragment is consecutive registers, element i of the fragment first.
 *
 * FMA: for each register of the result, acc, then one fma (integer
 * multiply and add for i8) per k, k = 0, 1, ... in order: the CPU
 * reference's sum, so f32 IEEE results agree with it. TF32 truncates each
 * input as the CPU does (its low 13 bits cleared) and TF32X3 adds
 * a_lo*b_hi, a_hi*b_lo, a_hi*b_hi (the high part rounded to nearest, ties
 * away, Inf/NaN kept; the low part truncated).
 *
 * MMA: each accumulator fragment (16 x 8, four registers) gets, for each
 * step along K, one mma.sync (three for TF32X3, in the CPU's order of the
 * parts) from the A fragment of its rows and the B fragment of its columns
 * in the same warp's registers, through LLVM's NVVM intrinsics:
 * m16n8k16.row.col.f32.f32 (f16 in <2 x half>), .bf16 (bf16 pairs packed
 * in i32), m16n8k8.row.col.tf32 (the f32 bits in i32: the tensor cores
 * read the top 19 and drop the rest, which is TF32's truncation, so no
 * instruction converts them; TF32X3's high part is rounded by one
 * cvt.rna.tf32.f32), m16n8k32.row.col.s8 (four
 * i8 per i32, s32 accumulators, wrapping as the CPU's). Accumulation is f32 (s32); an f16 result is
 * rounded once at the end, an f16 accumulator widened at the start. Every
 * intrinsic needs sm_80 (the plan chose MMA only there; a plan read from
 * text that asks for it elsewhere is refused here, since LLVM would abort
 * on an instruction the target lacks). A batched dot repeats this per
 * batch, which the layouts hold in registers.
 *
 * fp8 operands (e4m3, e5m2, mixed) come in two MMA forms. With elem_bytes 1
 * (sm_89+) their fragments are i8's, four bytes per word, and the
 * instruction is mma.sync.aligned.m16n8k32.row.col.f32.<A>.<B>.f32 — as
 * inline PTX, since LLVM 22 has no NVVM intrinsic for it (a call of
 * llvm.nvvm.mma.m16n8k32.row.col.e4m3.e4m3.f32 is an unknown external
 * function, not an instruction), which needs PTX ISA 8.4 (target.c). With
 * elem_bytes 2 (sm_80..88, or K = 16) each register is widened to f16 while
 * the fragments are packed, through the shared fp8 -> f32 conversion and an
 * exact rounding to f16, and the dot is f16's m16n8k16.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

/* The register of L holding element e in the thread part of lane 0, warp
 * 0 (a register's element relative to its thread is the same in every
 * thread: layouts are linear); -1 where no register alone holds it. */
static int64_t reg_holding(const tjp_layout *L, uint32_t e)
{
    uint32_t r, l, w;
    if (!tjp_layout_invert(L, e, &r, &l, &w) || l || w)
        return -1;
    return r;
}

/* x (f32) rounded to tf32 as the CPU back end does: nearest, ties away,
 * on the low 13 bits, Inf and NaN kept; as its bits (i32). For mma.sync
 * (hw) one cvt.rna.tf32.f32 does it (sm_80, as mma itself): the same on
 * every finite value and Inf, and any NaN stays a NaN, which is all an mma
 * can tell; the FMA form keeps the integer formula, bit for bit the CPU's. */
static LLVMValueRef tf32_rounded(codegen *c, LLVMValueRef x, int hw)
{
    LLVMBuilderRef b = c->g.b;
    if (hw)
        return tjj_gpu_intrinsic(&c->g, "llvm.nvvm.f2tf32.rna", NULL, 0, &x, 1);
    LLVMValueRef u = LLVMBuildBitCast(b, x, c->g.ty.t_i32, "");
    LLVMValueRef rounded = LLVMBuildAnd(b, LLVMBuildAdd(b, u, c_i32(c, 0x1000), ""), c_i32(c, (int32_t)0xFFFFE000u), "");
    LLVMValueRef exp = LLVMBuildAnd(b, u, c_i32(c, 0x7F800000), "");
    LLVMValueRef special = LLVMBuildICmp(b, LLVMIntEQ, exp, c_i32(c, 0x7F800000), "");
    return LLVMBuildSelect(b, special, u, rounded, "");
}

/* x (f32) truncated to tf32, its low 13 bits cleared, as its bits (i32):
 * what the tensor cores read of any f32, so for mma.sync (hw) the bits as
 * they are; the FMA form clears them, bit for bit the CPU's. */
static LLVMValueRef tf32_truncated(codegen *c, LLVMValueRef x, int hw)
{
    LLVMValueRef u = LLVMBuildBitCast(c->g.b, x, c->g.ty.t_i32, "");
    return hw ? u : LLVMBuildAnd(c->g.b, u, c_i32(c, (int32_t)0xFFFFE000u), "");
}

static LLVMValueRef as_float(codegen *c, LLVMValueRef bits)
{
    return LLVMBuildBitCast(c->g.b, bits, c->g.ty.t_float, "");
}

/* The parts of an operand element for the precision, as f32 (or i32 for
 * i8): [0] the value (TF32: rounded; TF32X3: the high part), [1] TF32X3's
 * low part. */
typedef struct parts {
    LLVMValueRef v[2];
} parts;

static parts split(codegen *c, LLVMValueRef x, tj_dtype dt, tj_input_precision prec, int hw)
{
    parts p = {{NULL, NULL}};
    if (dt == TJ_I8) {
        p.v[0] = LLVMBuildSExt(c->g.b, x, c->g.ty.t_i32, "");
        return p;
    }
    x = tjj_gpu_fext(&c->g, x, dt);
    if (dt != TJ_F32 || prec == TJ_PRECISION_IEEE) {
        p.v[0] = x;
        return p;
    }
    if (prec == TJ_PRECISION_TF32) {
        p.v[0] = as_float(c, tf32_truncated(c, x, hw));
        return p;
    }
    p.v[0] = as_float(c, tf32_rounded(c, x, hw));
    p.v[1] = as_float(c, tf32_truncated(c, LLVMBuildFSub(c->g.b, x, p.v[0], ""), hw));
    return p;
}

/* The operands' registers split into parts, computed once each (hw: for
 * mma.sync, as tf32_rounded and tf32_truncated say). */
typedef struct operand {
    int32_t id;
    tj_dtype dt;
    int hw;
    parts *of;
    uint8_t *done;
} operand;

static const parts *part_of(codegen *c, operand *o, uint32_t r, tj_input_precision prec)
{
    if (!o->done[r]) {
        o->of[r] = split(c, tjj_gpu_reg(c, o->id, r), o->dt, prec, o->hw);
        o->done[r] = 1;
    }
    return &o->of[r];
}

static operand operand_of(codegen *c, int32_t id, int hw)
{
    size_t n = (size_t)nregs_of(c, id);
    return (operand){id, type_of(c, id)->dtype, hw, tjs_xcalloc(n, sizeof(parts)), tjs_xcalloc(n, 1)};
}

static void operand_free(operand *o)
{
    free(o->of);
    free(o->done);
}

static LLVMValueRef multiply_add(codegen *c, int is_int, LLVMValueRef a, LLVMValueRef b, LLVMValueRef acc)
{
    if (is_int)
        return LLVMBuildAdd(c->g.b, acc, LLVMBuildMul(c->g.b, a, b, ""), "");
    LLVMValueRef args[3] = {a, b, acc};
    LLVMTypeRef t = c->g.ty.t_float;
    return tjj_gpu_intrinsic(&c->g, "llvm.fma", &t, 1, args, 3);
}

/* The accumulator's register r widened to the sum's type (f32, i32). */
static LLVMValueRef acc_start(codegen *c, int32_t acc, uint32_t r)
{
    LLVMValueRef v = tjj_gpu_reg(c, acc, r);
    tj_dtype dt = type_of(c, acc)->dtype;
    return dt == TJ_F16 || dt == TJ_BF16 ? tjj_gpu_fext(&c->g, v, dt) : v;
}

static LLVMValueRef result_of(codegen *c, tj_dtype dt, LLVMValueRef sum)
{
    return dt == TJ_F16 || dt == TJ_BF16 ? tjj_gpu_fround(&c->g, sum, dt) : sum;
}

/* Element index parts of a [.., R, C] tile: batch, row, column. */
typedef struct where {
    uint32_t batch, row, col;
} where;

static where where_of(const tji_type *t, uint32_t e)
{
    int r = t->rank;
    uint32_t cols = (uint32_t)t->shape[r - 1], rows = (uint32_t)t->shape[r - 2];
    return (where){e / (rows * cols), e / cols % rows, e % cols};
}

static uint32_t index_of(const tji_type *t, where w)
{
    int r = t->rank;
    uint32_t cols = (uint32_t)t->shape[r - 1], rows = (uint32_t)t->shape[r - 2];
    return (w.batch * rows + w.row) * cols + w.col;
}

/* --- FMA ------------------------------------------------------------------------- */

static void emit_fma(codegen *c, const tji_op *op)
{
    int32_t res = op->result;
    const tji_type *rt = type_of(c, res), *at = type_of(c, op->args[0]), *bt = type_of(c, op->args[1]);
    const tjp_layout *LC = layout_of(c, res), *LA = layout_of(c, op->args[0]), *LB = layout_of(c, op->args[1]);
    uint32_t K = (uint32_t)at->shape[at->rank - 1], n = (uint32_t)nregs_of(c, res), dup = reg_dup_mask(LC);
    int is_int = at->dtype == TJ_I8, three = op->precision == TJ_PRECISION_TF32X3 && at->dtype == TJ_F32;
    operand a = operand_of(c, op->args[0], 0), b = operand_of(c, op->args[1], 0);
    LLVMValueRef *out = tjj_gpu_regs_for(c, res);
    for (uint32_t r = 0; r < n && c->g.status == TJ_OK; r++) {
        if (r & dup)
            continue;
        where e = where_of(rt, tjp_layout_apply(LC, r, 0, 0));
        LLVMValueRef sum = acc_start(c, op->args[2], r);
        for (uint32_t k = 0; k < K; k++) {
            int64_t ra = reg_holding(LA, index_of(at, (where){e.batch, e.row, k}));
            int64_t rb = reg_holding(LB, index_of(bt, (where){e.batch, k, e.col}));
            if (ra < 0 || rb < 0) {
                FAIL(c, "internal error: dot: an operand's layout lacks row %u or column %u in its thread",
                     e.row, e.col);
                break;
            }
            const parts *pa = part_of(c, &a, (uint32_t)ra, op->precision);
            const parts *pb = part_of(c, &b, (uint32_t)rb, op->precision);
            if (three) {
                sum = multiply_add(c, 0, pa->v[1], pb->v[0], sum);
                sum = multiply_add(c, 0, pa->v[0], pb->v[1], sum);
            }
            sum = multiply_add(c, is_int, pa->v[0], pb->v[0], sum);
        }
        out[r] = result_of(c, rt->dtype, sum);
    }
    for (uint32_t r = 0; r < n; r++)
        if (r & dup)
            out[r] = out[r & ~dup];
    operand_free(&a);
    operand_free(&b);
}

/* --- MMA ------------------------------------------------------------------------- */

/* Operand register r as f16 for m16n8k16: itself, or an fp8 one widened
 * (exactly) through the shared conversion to f32. */
static LLVMValueRef as_half(codegen *c, operand *o, uint32_t r, tj_input_precision prec)
{
    if (o->dt == TJ_F16)
        return tjj_gpu_reg(c, o->id, r);
    return tjj_gpu_fround(&c->g, part_of(c, o, r, prec)->v[0], TJ_F16);
}

/* The 32-bit registers of one operand fragment starting at register r0,
 * for the instruction of elem_bytes eb: regs elements packed p to a word,
 * low element first; part: 0 the value (or TF32X3's high part), 1 TF32X3's
 * low part. */
static void pack_fragment(codegen *c, operand *o, int eb, uint32_t r0, int nregs, int part, tj_input_precision prec,
                          LLVMValueRef *words)
{
    LLVMBuilderRef b = c->g.b;
    int p = tjp_mma_elems_per_reg(eb);
    for (int w = 0; w < nregs / p; w++) {
        uint32_t r = r0 + (uint32_t)(w * p);
        if (o->dt == TJ_F16 || (eb == 2 && tjs_dtype_is_fp8(o->dt))) { /* <2 x half> */
            LLVMValueRef v = LLVMGetPoison(LLVMVectorType(c->g.ty.t_half, 2));
            v = LLVMBuildInsertElement(b, v, as_half(c, o, r, prec), c_i32(c, 0), "");
            words[w] = LLVMBuildInsertElement(b, v, as_half(c, o, r + 1, prec), c_i32(c, 1), "");
        } else if (o->dt == TJ_F32) { /* tf32 bits */
            words[w] = LLVMBuildBitCast(b, part_of(c, o, r, prec)->v[part], c->g.ty.t_i32, "");
        } else { /* bf16 (i16) pairs, i8 and fp8 quads */
            LLVMValueRef word = c_i32(c, 0);
            for (int i = 0; i < p; i++) {
                LLVMValueRef x = LLVMBuildZExt(b, tjj_gpu_reg(c, o->id, r + (uint32_t)i), c->g.ty.t_i32, "");
                word = LLVMBuildOr(b, word, LLVMBuildShl(b, x, c_i32(c, 32 / p * i), ""), "");
            }
            words[w] = word;
        }
    }
}

/* The NVVM intrinsic of the operands' dtype (fp8 widened: f16's). */
static const char *mma_name(tj_dtype dt)
{
    switch (dt) {
    case TJ_F16: case TJ_F8E4M3: case TJ_F8E5M2: return "llvm.nvvm.mma.m16n8k16.row.col.f32.f32";
    case TJ_BF16: return "llvm.nvvm.mma.m16n8k16.row.col.bf16";
    case TJ_F32: return "llvm.nvvm.mma.m16n8k8.row.col.tf32";
    default: return "llvm.nvvm.mma.m16n8k32.row.col.s8";
    }
}

/* fp8's mma.sync (LLVM has no intrinsic for it) as inline PTX: A four
 * words, B two, C and D four f32 each, D written over C's registers. Not a
 * side effect, so LLVM may still drop or merge it, but convergent, so it is
 * never moved into or out of control flow the warp may diverge on. */
static LLVMValueRef fp8_mma(codegen *c, tj_dtype a, tj_dtype b, LLVMValueRef *args)
{
    LLVMTypeRef f = c->g.ty.t_float, i = c->g.ty.t_i32;
    LLVMTypeRef params[10] = {i, i, i, i, i, i, f, f, f, f}, quad[4] = {f, f, f, f};
    LLVMTypeRef fty = LLVMFunctionType(LLVMStructTypeInContext(c->g.ty.ctx, quad, 4, 0), params, 10, 0);
    char text[160];
    snprintf(text, sizeof text, "mma.sync.aligned.m16n8k32.row.col.f32.%s.%s.f32 {$0, $1, $2, $3}, "
             "{$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};", a == TJ_F8E4M3 ? "e4m3" : "e5m2",
             b == TJ_F8E4M3 ? "e4m3" : "e5m2");
    static const char constraints[] = "=f,=f,=f,=f,r,r,r,r,r,r,0,1,2,3";
    LLVMValueRef asm_fn = LLVMGetInlineAsm(fty, text, strlen(text), constraints, strlen(constraints), 0, 0,
                                           LLVMInlineAsmDialectATT, 0);
    LLVMValueRef call = LLVMBuildCall2(c->g.b, fty, asm_fn, args, 10, "");
    unsigned convergent = LLVMGetEnumAttributeKindForName("convergent", strlen("convergent"));
    LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c->g.ty.ctx, convergent, 0));
    return call;
}

/* Packed fragments, made once per operand fragment and part. */
typedef struct fragments {
    LLVMValueRef (*words)[2][4];  /* per fragment (register / its size), per part */
    uint8_t (*made)[2];
} fragments;

static LLVMValueRef *fragment(codegen *c, operand *o, int eb, fragments *f, uint32_t r0, int nregs, int part,
                              tj_input_precision prec)
{
    uint32_t i = r0 / (uint32_t)nregs;
    if (!f->made[i][part]) {
        pack_fragment(c, o, eb, r0, nregs, part, prec, f->words[i][part]);
        f->made[i][part] = 1;
    }
    return f->words[i][part];
}

static fragments fragments_of(codegen *c, int32_t id, int nregs)
{
    size_t n = (size_t)nregs_of(c, id) / (size_t)nregs + 1;
    return (fragments){tjs_xcalloc(n, sizeof(LLVMValueRef[2][4])), tjs_xcalloc(n, sizeof(uint8_t[2]))};
}

static void emit_mma(codegen *c, const tji_op *op, const tjp_dot_choice *ch)
{
    int32_t res = op->result;
    const tji_type *rt = type_of(c, res), *at = type_of(c, op->args[0]), *bt = type_of(c, op->args[1]);
    const tjp_layout *LC = layout_of(c, res), *LA = layout_of(c, op->args[0]), *LB = layout_of(c, op->args[1]);
    tj_dtype in = at->dtype;
    int eb = ch->elem_bytes, is_int = in == TJ_I8, fp8 = tjs_dtype_is_fp8(in);
    /* fp8: its own instruction (1 byte, sm_89) or f16's after widening (2) */
    int fits = fp8 ? eb == 2 || (eb == 1 && c->sm >= 89) : eb == (int)tj_dtype_size(in);
    if (c->sm < 80 || !fits) {
        FAIL(c, "mma.sync of %s needs sm_80 or later (of fp8 with elem_bytes 1: sm_89) and the plan's operand "
             "size (the target is sm_%d)", tj_dtype_name(in), c->sm);
        return;
    }
    int na = tjp_mma_fragment_regs(TJP_MMA_A, eb), nb = tjp_mma_fragment_regs(TJP_MMA_B, eb);
    uint32_t K = (uint32_t)at->shape[at->rank - 1], kin = 8u * (uint32_t)tjp_mma_elems_per_reg(eb);
    uint32_t ntiles = (uint32_t)nregs_of(c, res) / 4;
    operand a = operand_of(c, op->args[0], 1), b = operand_of(c, op->args[1], 1);
    fragments fa = fragments_of(c, op->args[0], na), fb = fragments_of(c, op->args[1], nb);
    LLVMValueRef (*acc)[4] = tjs_xcalloc(ntiles, sizeof *acc);
    int64_t *ra = tjs_xcalloc(ntiles, sizeof *ra), *rb = tjs_xcalloc(ntiles, sizeof *rb);
    for (uint32_t t = 0; t < ntiles; t++)
        for (int i = 0; i < 4; i++)
            acc[t][i] = acc_start(c, op->args[2], t * 4 + (uint32_t)i);
    /* parts of (a, b) per mma: TF32X3's lo*hi, hi*lo, hi*hi, else one. */
    static const int order[3][2] = {{1, 0}, {0, 1}, {0, 0}};
    int first = ch->passes == 3 ? 0 : 2;
    const char *name = mma_name(in);
    for (uint32_t k0 = 0; k0 < K && c->g.status == TJ_OK; k0 += kin) {
        for (uint32_t t = 0; t < ntiles; t++) {
            where e = where_of(rt, tjp_layout_apply(LC, t * 4, 0, 0));
            ra[t] = reg_holding(LA, index_of(at, (where){e.batch, e.row, k0}));
            rb[t] = reg_holding(LB, index_of(bt, (where){e.batch, k0, e.col}));
            if (ra[t] < 0 || rb[t] < 0 || ra[t] % na || rb[t] % nb || e.row % 16 || e.col % 8) {
                FAIL(c, "internal error: dot: no mma fragments for the block at row %u, column %u", e.row, e.col);
                break;
            }
        }
        for (uint32_t t = 0; t < ntiles && c->g.status == TJ_OK; t++)
            for (int s = first; s < 3; s++) {
                LLVMValueRef *wa = fragment(c, &a, eb, &fa, (uint32_t)ra[t], na, order[s][0], op->precision);
                LLVMValueRef *wb = fragment(c, &b, eb, &fb, (uint32_t)rb[t], nb, order[s][1], op->precision);
                LLVMValueRef args[10] = {wa[0], wa[1], wa[2], wa[3], wb[0], wb[1],
                                         acc[t][0], acc[t][1], acc[t][2], acc[t][3]};
                LLVMValueRef d = fp8 && eb == 1 ? fp8_mma(c, in, bt->dtype, args)
                                                : tjj_gpu_intrinsic(&c->g, name, NULL, 0, args, 10);
                for (unsigned i = 0; i < 4; i++)
                    acc[t][i] = LLVMBuildExtractValue(c->g.b, d, i, "");
            }
    }
    LLVMValueRef *out = tjj_gpu_regs_for(c, res);
    for (uint32_t t = 0; t < ntiles; t++)
        for (int i = 0; i < 4; i++)
            out[t * 4 + (uint32_t)i] = is_int ? acc[t][i] : result_of(c, rt->dtype, acc[t][i]);
    free(acc);
    free(ra);
    free(rb);
    free(fa.words);
    free(fa.made);
    free(fb.words);
    free(fb.made);
    operand_free(&a);
    operand_free(&b);
}

void tjj_gpu_emit_dot(codegen *c, const tji_op *op)
{
    const tjp_layout_plan *plan = c->g.plan;
    const tjp_dot_choice *ch = plan->dot && c->g.cur_op < plan->nops ? &plan->dot[c->g.cur_op] : NULL;
    if (!ch || ch->form == TJP_DOT_NONE) {
        FAIL(c, "internal error: the plan chose no form for this dot (tjp_accelerate_dots)");
        return;
    }
    if (ch->form == TJP_DOT_WGMMA)
        tjj_gpu_emit_wgmma(c, op, ch);
    else if (ch->form == TJP_DOT_MMA)
        emit_mma(c, op, ch);
    else
        emit_fma(c, op);
}
