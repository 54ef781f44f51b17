/* SPDX-License-Identifier: MIT */
/*
 * inline_asm.c — the user's inline PTX (tj_inline_asm_elementwise,
 * tj_inline_asm: Triton's tl.inline_asm_elementwise) on a pack of elements.
 *
 * One run of the PTX takes pack elements of each operand (1 by default).
 * Their bits are packed into registers of the constraint letters' widths,
 * lane 0 in the lowest bits: four i8 make one "r" register, four f16 two
 * of them, one f32 one "r" or "f". The builder checked that every
 * operand's pack fills whole registers (tji_asm_constraints_wrong), so the
 * constraints list the output's registers ("=r" each), then each input's,
 * in the order of the PTX's $0, $1, ... Pure PTX (Triton's default) is
 * arithmetic to LLVM, which may move, merge or drop a run; a volatile op
 * (is_pure=False) is an asm with side effects, which LLVM keeps, once per
 * run, in order with the kernel's other side effects.
 *
 * Which elements share a run is the register order of the thread (its
 * layout's registers r .. r + pack - 1): lane k of every operand is the
 * same element, which is all an element-wise PTX may assume (Triton
 * promises no more). A last, partial pack is filled with zeros and its
 * extra results dropped.
 */
#include <string.h>

#include "backend.h"

/* The register type of a constraint letter. */
static LLVMTypeRef register_type(const tjj_gpu_gen *g, char letter)
{
    switch (letter) {
    case 'h': return LLVMInt16TypeInContext(g->ctx);
    case 'r': return g->ty.t_i32;
    case 'l': return g->ty.t_i64;
    case 'f': return g->ty.t_float;
    default: return g->ty.t_double;
    }
}

/* The letters of constraints "=r,=r,r,h", in order (outputs' first). */
static int letters_of(const char *constraints, char *letters, int max)
{
    int n = 0;
    for (const char *p = constraints; *p && n < max; p++)
        if (*p != '=' && *p != ',')
            letters[n++] = *p;
    return n;
}

/* lanes[0 .. pack) of dtype dt as nregs registers of letter's type. */
static void pack_lanes(tjj_gpu_gen *g, char letter, tj_dtype dt, const LLVMValueRef *lanes, int pack,
                       LLVMValueRef *regs)
{
    LLVMTypeRef rt = register_type(g, letter), et = tjj_gpu_dtype_type(g, dt);
    int per = tji_asm_letter_bits(letter) / tjs_dtype_bits(dt); /* elements per register */
    for (int r = 0; r * per < pack; r++) {
        if (per == 1) {
            regs[r] = LLVMBuildBitCast(g->b, lanes[r], rt, "");
            continue;
        }
        LLVMValueRef v = LLVMGetPoison(LLVMVectorType(et, (unsigned)per));
        for (int k = 0; k < per; k++)
            v = LLVMBuildInsertElement(g->b, v, lanes[r * per + k], LLVMConstInt(g->ty.t_i32, (unsigned)k, 0), "");
        regs[r] = LLVMBuildBitCast(g->b, v, rt, "");
    }
}

/* The inverse: registers of letter's type to lanes[0 .. pack) of dt. */
static void unpack_lanes(tjj_gpu_gen *g, char letter, tj_dtype dt, const LLVMValueRef *regs, int pack,
                         LLVMValueRef *lanes)
{
    LLVMTypeRef et = tjj_gpu_dtype_type(g, dt);
    int per = tji_asm_letter_bits(letter) / tjs_dtype_bits(dt);
    for (int r = 0; r * per < pack; r++) {
        if (per == 1) {
            lanes[r] = LLVMBuildBitCast(g->b, regs[r], et, "");
            continue;
        }
        LLVMValueRef v = LLVMBuildBitCast(g->b, regs[r], LLVMVectorType(et, (unsigned)per), "");
        for (int k = 0; k < per; k++)
            lanes[r * per + k] = LLVMBuildExtractElement(g->b, v, LLVMConstInt(g->ty.t_i32, (unsigned)k, 0), "");
    }
}

void tjj_gpu_inline_asm(tjj_gpu_gen *g, const tji_op *op, LLVMValueRef *const *in, LLVMValueRef *out)
{
    enum { MAX_REGISTERS = 64 };
    int pack = op->asm_pack > 1 ? op->asm_pack : 1;
    char letters[MAX_REGISTERS];
    letters_of(op->constraints, letters, MAX_REGISTERS);
    tj_dtype rdt = tji_typeof(g->fn, op->result)->dtype;
    int nout = pack * tjs_dtype_bits(rdt) / tji_asm_letter_bits(letters[0]);
    LLVMTypeRef params[MAX_REGISTERS], outs[MAX_REGISTERS];
    LLVMValueRef args[MAX_REGISTERS], results[MAX_REGISTERS];
    int nin = 0;
    for (int i = 0; i < op->nargs; i++) {
        tj_dtype dt = tji_typeof(g->fn, op->args[i])->dtype;
        char letter = letters[nout + nin];
        int regs = pack * tjs_dtype_bits(dt) / tji_asm_letter_bits(letter);
        pack_lanes(g, letter, dt, in[i], pack, &args[nin]);
        for (int r = 0; r < regs; r++)
            params[nin + r] = register_type(g, letter);
        nin += regs;
    }
    for (int r = 0; r < nout; r++)
        outs[r] = register_type(g, letters[0]);
    LLVMTypeRef rt = nout == 1 ? outs[0] : LLVMStructTypeInContext(g->ctx, outs, (unsigned)nout, 0);
    LLVMTypeRef fty = LLVMFunctionType(rt, params, (unsigned)nin, 0);
    LLVMValueRef fn = LLVMGetInlineAsm(fty, op->str, strlen(op->str), op->constraints, strlen(op->constraints),
                                       op->is_volatile != 0, 0, LLVMInlineAsmDialectATT, 0);
    LLVMValueRef call = LLVMBuildCall2(g->b, fty, fn, args, (unsigned)nin, "");
    for (int r = 0; r < nout; r++)
        results[r] = nout == 1 ? call : LLVMBuildExtractValue(g->b, call, (unsigned)r, "");
    unpack_lanes(g, letters[0], rdt, results, pack, out);
}
