/* SPDX-License-Identifier: MIT */
/*
 * cpu_elementwise.c — one element of any value: element-wise arithmetic,
 * creation ops (const, arange, splat, program ids) and shape ops, computed
 * where they are read.
 *
 * elem(value, index) produces one element of any value at a multi-index:
 * a scalar is its SSA value, a materialized tile is read from its slot, and
 * a fused tile is computed from its operands' elements: broadcast dims of
 * size 1 read index 0, expand_dims drops an index, arange is lo + i, splat
 * is the scalar, reshape keeps the row-major linear index and permute
 * permutes the multi-index (both read their materialized operand in place,
 * with no copy), and a load is one element load behind a branch on its
 * mask (cpu_memory.c), so an address whose lane is masked off is never
 * touched. What elem() computed is remembered per loop nest (cpu_kernel.c).
 *
 * The element-wise semantics (integer division by 0, over-wide shifts,
 * saturating casts, f16/bf16 rounding, ...) are llvm_scalar.c's, shared with
 * the GPU back end so that both agree bit for bit; only the math
 * functions (the C library's, through LLVM's intrinsics or calls) and
 * float remainder (frem) are this file's.
 */
#include <stdio.h>

#include "cpu_codegen.h"

/* --- element-wise arithmetic ------------------------------------------------ */

/* A call of libm's function name (double) or namef (float) of x (and y,
 * or NULL), for the functions LLVM has no intrinsic for; ORC resolves it
 * in the process. */
static LLVMValueRef libm_call(codegen *g, const char *name, LLVMValueRef x, LLVMValueRef y)
{
    LLVMTypeRef t = LLVMTypeOf(x), params[2] = {t, t};
    LLVMValueRef args[2] = {x, y};
    unsigned n = y ? 2 : 1;
    char fname[16];
    snprintf(fname, sizeof fname, "%s%s", name, t == g->ty.t_double ? "" : "f");
    LLVMTypeRef fty = LLVMFunctionType(t, params, n, 0);
    LLVMValueRef f = LLVMGetNamedFunction(g->mod, fname);
    if (!f)
        f = LLVMAddFunction(g->mod, fname, fty);
    return LLVMBuildCall2(g->b, fty, f, args, n, "");
}

/* lgamma of x by libm's lgamma_r (or lgammaf_r): plain lgamma writes the
 * sign of gamma into the global signgam, a race between the threads that
 * run a launch's programs. */
static LLVMValueRef lgamma_call(codegen *g, LLVMValueRef x)
{
    LLVMTypeRef t = LLVMTypeOf(x), params[2] = {t, g->ty.t_ptr};
    const char *fname = t == g->ty.t_double ? "lgamma_r" : "lgammaf_r";
    LLVMTypeRef fty = LLVMFunctionType(t, params, 2, 0);
    LLVMValueRef f = LLVMGetNamedFunction(g->mod, fname);
    if (!f)
        f = LLVMAddFunction(g->mod, fname, fty);
    LLVMValueRef args[2] = {x, tjj_cpu_entry_alloca(g, g->ty.t_i32, "gamma_sign")};
    return LLVMBuildCall2(g->b, fty, f, args, 2, "");
}

/* The float ops whose code is the CPU's own: libm through LLVM's intrinsics
 * and calls, and frem (a callback of tjj_ls_elementwise). */
static LLVMValueRef target_math(void *target, tji_opcode code, LLVMValueRef x, LLVMValueRef y)
{
    codegen *g = target;
    LLVMBuilderRef b = g->b;
    LLVMValueRef one = LLVMConstReal(LLVMTypeOf(x), 1.0);
    switch (code) {
    case TJI_REM: return LLVMBuildFRem(b, x, y, "");
    case TJI_EXP: return tjj_ls_intrinsic1(&g->ls, "llvm.exp", x);
    case TJI_EXP2: return tjj_ls_intrinsic1(&g->ls, "llvm.exp2", x);
    case TJI_LOG: return tjj_ls_intrinsic1(&g->ls, "llvm.log", x);
    case TJI_LOG2: return tjj_ls_intrinsic1(&g->ls, "llvm.log2", x);
    case TJI_SIGMOID: {
        LLVMValueRef e = tjj_ls_intrinsic1(&g->ls, "llvm.exp", LLVMBuildFNeg(b, x, ""));
        return LLVMBuildFDiv(b, one, LLVMBuildFAdd(b, one, e, ""), "");
    }
    case TJI_SIN: return tjj_ls_intrinsic1(&g->ls, "llvm.sin", x);
    case TJI_COS: return tjj_ls_intrinsic1(&g->ls, "llvm.cos", x);
    case TJI_TANH: return tjj_ls_intrinsic1(&g->ls, "llvm.tanh", x);
    case TJI_POW: return tjj_ls_intrinsic2(&g->ls, "llvm.pow", x, y);
    case TJI_ERF: return libm_call(g, "erf", x, NULL);
    case TJI_LOG1P: return libm_call(g, "log1p", x, NULL);
    case TJI_EXPM1: return libm_call(g, "expm1", x, NULL);
    case TJI_TAN: return libm_call(g, "tan", x, NULL);
    case TJI_ASIN: return libm_call(g, "asin", x, NULL);
    case TJI_ACOS: return libm_call(g, "acos", x, NULL);
    case TJI_ATAN: return libm_call(g, "atan", x, NULL);
    case TJI_SINH: return libm_call(g, "sinh", x, NULL);
    case TJI_COSH: return libm_call(g, "cosh", x, NULL);
    case TJI_ASINH: return libm_call(g, "asinh", x, NULL);
    case TJI_ACOSH: return libm_call(g, "acosh", x, NULL);
    case TJI_ATANH: return libm_call(g, "atanh", x, NULL);
    case TJI_LOG10: return libm_call(g, "log10", x, NULL);
    case TJI_CBRT: return libm_call(g, "cbrt", x, NULL);
    case TJI_EXP10: return libm_call(g, "exp10", x, NULL);
    case TJI_ERFC: return libm_call(g, "erfc", x, NULL);
    case TJI_LGAMMA: return lgamma_call(g, x);
    case TJI_ATAN2: return libm_call(g, "atan2", x, y);
    case TJI_HYPOT: return libm_call(g, "hypot", x, y);
    default: return NULL;
    }
}

/* One element of an element-wise op, from its operands' elements. */
static LLVMValueRef emit_elementwise(codegen *g, const tji_op *op, LLVMValueRef *a)
{
    LLVMValueRef r = tjj_ls_elementwise(&g->ls, g->fn, op, a, target_math, g);
    if (r)
        return r;
    const tji_type *rt = tji_typeof(g->fn, op->result);
    const tji_type *at = op->nargs > 0 ? tji_typeof(g->fn, op->args[0]) : rt;
    tjj_cpu_fail(g, "not defined for %s", at->is_ptr ? "pointers" : tj_dtype_name(at->dtype));
    return LLVMGetPoison(value_type(g, rt));
}

/* --- elements of values --------------------------------------------------------- */

/* The element of value id at idx computed from its defining op. */
void tjj_cpu_refuse_asm(codegen *g)
{
    tjj_cpu_fail(g, "inline PTX (tj_inline_asm_elementwise) runs on a GPU only: the CPU back end "
                 "cannot execute it (launch on a GPU, or write the element's computation with ops)");
}

LLVMValueRef tjj_cpu_def_elem(codegen *g, int32_t id, LLVMValueRef *idx)
{
    const tji_func *fn = g->fn;
    const tji_value *val = tji_val(fn, id);
    const tji_type *t = &val->type;
    if (val->def_op < 0) {
        tjj_cpu_fail(g, "internal: block argument %d has no storage", (int)id);
        return LLVMGetPoison(value_type(g, t));
    }
    const tji_op *op = &fn->ops[val->def_op];
    LLVMValueRef sidx[TJ_MAX_RANK] = {0};
    switch (op->code) {
    case TJI_CONST:
        if (t->dtype == TJ_BF16) /* LLVM rounds the double to bfloat once */
            return LLVMBuildBitCast(g->b, LLVMConstReal(LLVMBFloatTypeInContext(g->ctx), op->fval),
                                    g->ty.t_i16, "");
        if (tjs_dtype_is_fp8(t->dtype))
            return tjj_ls_fp8_const(&g->ls, t->dtype, op->fval);
        if (tjs_dtype_is_float(t->dtype))
            return LLVMConstReal(tjj_ls_dtype_type(&g->ls, t->dtype), op->fval);
        if (t->dtype == TJ_I1)
            return LLVMConstInt(g->ty.t_i1, op->ival != 0, 0);
        return c_int(tjj_ls_dtype_type(&g->ls, t->dtype), op->ival);
    case TJI_PROGRAM_ID:
        return g->pid[op->axis >= 0 && op->axis < 3 ? op->axis : 0];
    case TJI_NUM_PROGRAMS:
        return g->nprog[op->axis >= 0 && op->axis < 3 ? op->axis : 0];
    case TJI_ARANGE:
        return LLVMBuildAdd(g->b, LLVMBuildTrunc(g->b, idx[0], g->ty.t_i32, ""), c_i32(g, op->ival), "");
    case TJI_SPLAT:
        return tjj_cpu_elem(g, op->args[0], NULL);
    case TJI_BROADCAST: {
        const tji_type *st = tji_typeof(fn, op->args[0]);
        for (int d = 0; d < st->rank; d++)
            sidx[d] = st->shape[d] == 1 ? c_i64(g, 0) : idx[d];
        return tjj_cpu_elem(g, op->args[0], sidx);
    }
    case TJI_EXPAND_DIMS:
        for (int d = 0, s = 0; d < t->rank; d++)
            if (d != op->axis)
                sidx[s++] = idx[d];
        return tjj_cpu_elem(g, op->args[0], sidx);
    case TJI_RESHAPE: {
        const tji_type *st = tji_typeof(fn, op->args[0]);
        LLVMValueRef lin = tjj_cpu_linear_index(g, t, idx);
        for (int d = st->rank - 1; d >= 0; d--) {
            LLVMValueRef dim = c_i64(g, st->shape[d]);
            sidx[d] = st->shape[d] == 1 ? c_i64(g, 0) : LLVMBuildURem(g->b, lin, dim, "");
            if (d > 0)
                lin = LLVMBuildUDiv(g->b, lin, dim, "");
        }
        return tjj_cpu_elem(g, op->args[0], sidx);
    }
    case TJI_PERMUTE:
        for (int d = 0; d < t->rank; d++)
            sidx[op->perm[d]] = idx[d];
        return tjj_cpu_elem(g, op->args[0], sidx);
    case TJI_CONVERT: /* a GPU layout change: the identity here */
    case TJI_ASSUME:  /* a fact for the GPU's coalescing */
        return tjj_cpu_elem(g, op->args[0], idx);
    case TJI_LOAD: {
        LLVMValueRef ptr = tjj_cpu_elem(g, op->args[0], idx);
        LLVMValueRef mask = op->nargs > 1 && op->args[1] ? tjj_cpu_elem(g, op->args[1], idx) : NULL;
        if (mask && LLVMIsAConstantInt(mask) && LLVMConstIntGetZExtValue(mask))
            mask = NULL;
        LLVMValueRef other = op->nargs > 2 && op->args[2] ? tjj_cpu_elem(g, op->args[2], idx) : NULL;
        mask = tjj_cpu_bounds_mask(g, val->def_op, op->args[0], ptr, t, mask);
        return tjj_cpu_masked_load(g, t, ptr, mask, other, op->is_volatile);
    }
    case TJI_ADDPTR: {
        LLVMValueRef wide = tjj_cpu_wide_addptr(g, id, idx);
        if (wide)
            return wide;
        break;
    }
    default:
        break;
    }
    if (op->code == TJI_INLINE_ASM) {
        tjj_cpu_refuse_asm(g);
        return LLVMGetPoison(value_type(g, t));
    }
    if ((op->code >= TJI_ADD && op->code <= TJI_ADDPTR) || (op->code >= TJI_NEG && op->code <= TJI_CAST)) {
        LLVMValueRef a[3] = {0};
        for (int i = 0; i < op->nargs && i < 3; i++)
            a[i] = tjj_cpu_elem(g, op->args[i], idx);
        return emit_elementwise(g, op, a);
    }
    tjj_cpu_fail(g, "internal: value %d of op '%s' is read but was not computed", (int)id,
                 tji_opcode_name(op->code));
    return LLVMGetPoison(value_type(g, t));
}

/* The element of any value at idx (idx has the value's rank; NULL for scalars). */
LLVMValueRef tjj_cpu_elem(codegen *g, int32_t id, LLVMValueRef *idx)
{
    const tji_type *t = tji_typeof(g->fn, id);
    if (id == g->true_mask)
        return LLVMConstInt(g->ty.t_i1, 1, 0);
    if (t->rank == 0) {
        if (!g->ssa[id]) {
            tjj_cpu_fail(g, "internal: scalar %d used before it is defined", (int)id);
            g->ssa[id] = LLVMGetPoison(value_type(g, t));
        }
        return g->ssa[id];
    }
    LLVMValueRef v = tjj_cpu_memo_find(g, id, t->rank, idx);
    if (v)
        return v;
    if (g->slot[id] >= 0)
        v = tjj_cpu_load_elem(g, g->slot[id], t, idx);
    else
        v = tjj_cpu_def_elem(g, id, idx);
    tjj_cpu_memo_add(g, id, t->rank, idx, v);
    return v;
}
