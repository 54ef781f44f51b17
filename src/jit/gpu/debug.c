/* SPDX-License-Identifier: MIT */
/*
 * debug.c — PRINT, ASSERT and ASSUME_TRUE in a kernel.
 *
 * PRINT calls vprintf once per element, in its owning thread, with the
 * program id and the element's coordinates. Device asserts do not trap (a
 * trap would poison the CUDA context): the first failing thread wins a
 * compare-and-swap on the record's flag and writes the op index and
 * program id; the launch reports it afterwards. A promise (tj_assume)
 * becomes llvm.assume of each element a thread holds, as Triton's does.
 */
#include <string.h>

#include "gen.h"

/* --- print and assert ------------------------------------------------------------------------ */

static LLVMValueRef const_string(codegen *c, const char *s)
{
    LLVMValueRef init = LLVMConstStringInContext2(c->g.ctx, s, strlen(s), 0);
    LLVMValueRef gv = LLVMAddGlobalInAddressSpace(c->g.mod, LLVMTypeOf(init), "tjk_str", ADDR_CONST);
    LLVMSetInitializer(gv, init);
    LLVMSetGlobalConstant(gv, 1);
    LLVMSetLinkage(gv, LLVMPrivateLinkage);
    LLVMSetUnnamedAddress(gv, LLVMGlobalUnnamedAddr);
    return LLVMConstAddrSpaceCast(gv, c->g.ty.t_ptr);
}

static LLVMValueRef entry_alloca(codegen *c, LLVMTypeRef t)
{
    LLVMValueRef a = LLVMBuildAlloca(c->eb, t, "");
    if (LLVMGetPointerAddressSpace(LLVMTypeOf(a)) != 0)
        a = LLVMBuildAddrSpaceCast(c->eb, a, c->g.ty.t_ptr, "");
    return a;
}

/* vprintf's format and the value as vprintf takes it (ints promoted to 32
 * or 64 bits, floats to double, i1 as the string true/false). */
static const char *print_format(codegen *c, const tji_type *t, LLVMValueRef *v)
{
    LLVMBuilderRef b = c->g.b;
    if (t->is_ptr) {
        *v = LLVMBuildPtrToInt(b, *v, c->g.ty.t_i64, "");
        return "%llu";
    }
    switch (t->dtype) {
    case TJ_I1:
        *v = LLVMBuildSelect(b, *v, const_string(c, "true"), const_string(c, "false"), "");
        return "%s";
    case TJ_I8: case TJ_I16:
        *v = LLVMBuildSExt(b, *v, c->g.ty.t_i32, "");
        return "%d";
    case TJ_I32: return "%d";
    case TJ_U8: case TJ_U16:
        *v = LLVMBuildZExt(b, *v, c->g.ty.t_i32, "");
        return "%u";
    case TJ_U32: return "%u";
    case TJ_I64: return "%lld";
    case TJ_U64: return "%llu";
    case TJ_F64: return "%g";
    default:
        *v = LLVMBuildFPExt(b, tjj_gpu_fext(&c->g, *v, t->dtype), c->g.ty.t_double, "");
        return "%g";
    }
}

void tjj_gpu_emit_print(codegen *c, const tji_op *op)
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
    LLVMValueRef owner = L ? tjj_gpu_owner_cond(c, L) : tjj_gpu_thread0_cond(c);
    LLVMValueRef format = NULL, args = NULL;
    LLVMTypeRef args_t = NULL;
    LLVMTypeRef vprintf_params[2] = {c->g.ty.t_ptr, c->g.ty.t_ptr};
    LLVMTypeRef vprintf_t = LLVMFunctionType(c->g.ty.t_i32, vprintf_params, 2, 0);
    LLVMValueRef vprintf = LLVMGetNamedFunction(c->g.mod, "vprintf");
    if (!vprintf)
        vprintf = LLVMAddFunction(c->g.mod, "vprintf", vprintf_t);
    for (uint32_t r = 0; r < n; r++) {
        if (r & rdup)
            continue;
        LLVMBasicBlockRef cont = tjj_llvm_guard_begin(c->g.b, owner, "print");
        LLVMValueRef v = tjj_gpu_reg(c, x, r);
        const char *vf = print_format(c, t, &v);
        LLVMValueRef fields[3 + TJ_MAX_RANK + 1];
        int nf = 0;
        for (int i = 0; i < 3; i++)
            fields[nf++] = c->pid[i];
        if (L) {
            LLVMValueRef e = tjj_gpu_element_index(c, L, r);
            for (int d = 0; d < t->rank; d++)
                fields[nf++] = tjj_gpu_coordinate(c, t, e, d);
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
        tjj_llvm_guard_end(c->g.b, cont);
    }
    tjs_buf_free(&fmt);
}

/* How many registers of x a thread holds (a scalar: 1); *dup_mask gets
 * the register index bits that mark a copy of a lower register's element
 * (r & *dup_mask: skip r). */
static uint32_t distinct_regs(codegen *c, int32_t x, uint32_t *dup_mask)
{
    *dup_mask = 0;
    if (rank_of(c, x) == 0)
        return 1;
    *dup_mask = reg_dup_mask(layout_of(c, x));
    return (uint32_t)nregs_of(c, x);
}

void tjj_gpu_emit_assume_true(codegen *c, const tji_op *op)
{
    uint32_t rdup, n = distinct_regs(c, op->args[0], &rdup);
    for (uint32_t r = 0; r < n; r++)
        if (!(r & rdup)) {
            LLVMValueRef v = tjj_gpu_reg(c, op->args[0], r);
            tjj_gpu_intrinsic(&c->g, "llvm.assume", NULL, 0, &v, 1);
        }
}

/* A false element: the first failing thread of the launch records the op
 * and the program in the assert record; the kernel goes on. */
void tjj_gpu_emit_assert(codegen *c, const tji_op *op)
{
    int32_t x = op->args[0];
    LLVMBuilderRef b = c->g.b;
    uint32_t rdup, n = distinct_regs(c, x, &rdup);
    LLVMValueRef bad = NULL;
    for (uint32_t r = 0; r < n; r++)
        if (!(r & rdup)) {
            LLVMValueRef f = LLVMBuildNot(b, tjj_gpu_reg(c, x, r), "");
            bad = bad ? LLVMBuildOr(b, bad, f, "") : f;
        }
    LLVMBasicBlockRef cont = tjj_llvm_guard_begin(c->g.b, bad, "assert.fail");
    LLVMValueRef won;
    tjj_gpu_atomic_cas(c, c->assert_info, c_i32(c, 0), c_i32(c, 1), &won);
    LLVMBasicBlockRef cont2 = tjj_llvm_guard_begin(c->g.b, won, "assert.record");
    LLVMValueRef fields[4] = {c_i32(c, c->g.cur_op), c->pid[0], c->pid[1], c->pid[2]};
    for (int i = 0; i < 4; i++) {
        LLVMValueRef off = c_i64(c, 4 + 4 * i);
        LLVMValueRef p = LLVMBuildInBoundsGEP2(b, c->g.ty.t_i8, c->assert_info, &off, 1, "");
        LLVMValueRef st = LLVMBuildStore(b, fields[i], p);
        LLVMSetVolatile(st, 1);
        LLVMSetAlignment(st, 4);
    }
    tjj_llvm_guard_end(c->g.b, cont2);
    tjj_llvm_guard_end(c->g.b, cont);
}
