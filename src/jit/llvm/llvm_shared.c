/* SPDX-License-Identifier: MIT */
/*
 * llvm_shared.c — the small LLVM helpers that the CPU and the GPU back end
 * once each had a copy of: the type cache, the kernel parameter ABI, the
 * TJIT_DUMP=llvm module dump, the optimizer run, a loop's unroll hint,
 * guards and the record of the first error.
 *
 * Each was short, and each copy was right, but they had begun to drift
 * (the GPU's optimizer run and the CPU's disposed of LLVM's error message
 * differently, the two dumps printed different headers by hand); in one
 * place a fix, or a new back end (an AOT object writer, a disk cache),
 * reaches both; both back ends call them (the GPU since issue 9's second
 * wave, with PTX unchanged). What differs by target stays a parameter: the pointer
 * type of parameters (generic on the CPU, global on the GPU), whether the
 * vectorizers run, the dump's target label.
 *
 * The parameter ABI is jit.h's: scalars are passed as their memory form
 * (i1 as a byte, f16 and bf16 as their 16 bits, so that the C caller and
 * libffi never pass a half), and become SSA values (i1, half) in the
 * entry block.
 */
#include <stdio.h>

#include <llvm-c/DebugInfo.h>
#include <llvm-c/Error.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "llvm_scalar.h"
#include "llvm_shared.h"

/* --- the type cache --------------------------------------------------------- */

void tjj_llvm_types_init(tjj_llvm_types *ty, LLVMContextRef ctx)
{
    ty->ctx = ctx;
    ty->t_void = LLVMVoidTypeInContext(ctx);
    ty->t_i1 = LLVMInt1TypeInContext(ctx);
    ty->t_i8 = LLVMInt8TypeInContext(ctx);
    ty->t_i16 = LLVMInt16TypeInContext(ctx);
    ty->t_i32 = LLVMInt32TypeInContext(ctx);
    ty->t_i64 = LLVMInt64TypeInContext(ctx);
    ty->t_half = LLVMHalfTypeInContext(ctx);
    ty->t_float = LLVMFloatTypeInContext(ctx);
    ty->t_double = LLVMDoubleTypeInContext(ctx);
    ty->t_ptr = LLVMPointerTypeInContext(ctx, 0);
}

/* --- errors ------------------------------------------------------------------------- */

void tjj_llvm_fail(tj_status *status, const tji_func *fn, int32_t op, const char *fmt, ...)
{
    if (*status != TJ_OK)
        return;
    va_list ap;
    va_start(ap, fmt);
    *status = tji_verror_at(fn, op, TJ_ERR_COMPILE, fmt, ap);
    va_end(ap);
}

/* --- the kernel parameter ABI ----------------------------------------------------- */

LLVMTypeRef tjj_llvm_param_type(const tjj_llvm_types *ty, const tji_param *p, LLVMTypeRef ptr_type)
{
    if (p->is_ptr)
        return ptr_type;
    switch (p->dtype) {
    case TJ_I1: return ty->t_i8;
    case TJ_F16: case TJ_BF16: return ty->t_i16;
    default: {
        tjj_ls ls = tjj_ls_view(ty, NULL, NULL);
        return tjj_ls_dtype_type(&ls, p->dtype);
    }
    }
}

LLVMValueRef tjj_llvm_param_value(const tjj_llvm_types *ty, LLVMBuilderRef b, const tji_param *p,
                                  LLVMValueRef arg)
{
    if (!p->is_ptr && p->dtype == TJ_I1)
        return LLVMBuildICmp(b, LLVMIntNE, arg, LLVMConstNull(ty->t_i8), "");
    if (!p->is_ptr && p->dtype == TJ_F16)
        return LLVMBuildBitCast(b, arg, ty->t_half, "");
    return arg;
}

/* --- dump and optimizer --------------------------------------------------------------- */

void tjj_llvm_dump(LLVMModuleRef mod, const char *target, const char *name, const char *when)
{
    if (!tjs_dump_enabled("llvm"))
        return;
    char *text = LLVMPrintModuleToString(mod);
    fprintf(stderr, "; ---- tjit: LLVM IR of %skernel '%s' %s optimization ----\n%s", target, name, when,
            text);
    LLVMDisposeMessage(text);
}

tj_status tjj_llvm_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, int vectorize, const char *name)
{
    LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
    if (vectorize) {
        LLVMPassBuilderOptionsSetLoopVectorization(opts, 1);
        LLVMPassBuilderOptionsSetSLPVectorization(opts, 1);
    }
    LLVMErrorRef err = LLVMRunPasses(mod, "default<O3>", tm, opts);
    LLVMDisposePassBuilderOptions(opts);
    if (!err)
        return TJ_OK;
    char *m = LLVMGetErrorMessage(err);
    tj_status st = tjs_error(TJ_ERR_COMPILE, "error: in kernel '%s': LLVM optimization failed: %s", name, m);
    LLVMDisposeErrorMessage(m);
    return st;
}

/* --- loops ------------------------------------------------------------------------------ */

LLVMValueRef tjj_llvm_loop_id(LLVMContextRef ctx, const LLVMMetadataRef *hints, unsigned n)
{
    LLVMMetadataRef ops[4];
    ops[0] = LLVMTemporaryMDNode(ctx, NULL, 0);
    for (unsigned i = 0; i < n && i < 3; i++)
        ops[1 + i] = hints[i];
    LLVMMetadataRef id = LLVMMDNodeInContext2(ctx, ops, 1 + (n < 3 ? n : 3));
    LLVMMetadataReplaceAllUsesWith(ops[0], id);
    return LLVMMetadataAsValue(ctx, id);
}

void tjj_llvm_loop_unroll(LLVMContextRef ctx, LLVMValueRef branch, int unroll)
{
    if (!unroll)
        return;
    LLVMMetadataRef hint;
    if (unroll == 1) {
        LLVMMetadataRef name = LLVMMDStringInContext2(ctx, "llvm.loop.unroll.disable", 24);
        hint = LLVMMDNodeInContext2(ctx, &name, 1);
    } else {
        LLVMMetadataRef count[2] = {
            LLVMMDStringInContext2(ctx, "llvm.loop.unroll.count", 22),
            LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(ctx), (unsigned long long)unroll, 0))};
        hint = LLVMMDNodeInContext2(ctx, count, 2);
    }
    LLVMSetMetadata(branch, LLVMGetMDKindIDInContext(ctx, "llvm.loop", 9), tjj_llvm_loop_id(ctx, &hint, 1));
}

/* --- guards ---------------------------------------------------------------------------- */

static LLVMBasicBlockRef block_after(LLVMBuilderRef b, const char *name)
{
    LLVMValueRef fn = LLVMGetBasicBlockParent(LLVMGetInsertBlock(b));
    return LLVMAppendBasicBlockInContext(LLVMGetModuleContext(LLVMGetGlobalParent(fn)), fn, name);
}

LLVMBasicBlockRef tjj_llvm_guard_begin(LLVMBuilderRef b, LLVMValueRef cond, const char *name)
{
    if (!cond)
        return NULL;
    LLVMBasicBlockRef then = block_after(b, name), cont = block_after(b, "cont");
    LLVMBuildCondBr(b, cond, then, cont);
    LLVMPositionBuilderAtEnd(b, then);
    return cont;
}

void tjj_llvm_guard_end(LLVMBuilderRef b, LLVMBasicBlockRef cont)
{
    if (!cont)
        return;
    LLVMBuildBr(b, cont);
    LLVMPositionBuilderAtEnd(b, cont);
}

LLVMValueRef tjj_llvm_guard_value(LLVMBuilderRef b, LLVMBasicBlockRef cont, LLVMBasicBlockRef before,
                                  LLVMValueRef v, LLVMValueRef otherwise)
{
    if (!cont)
        return v;
    LLVMBasicBlockRef then_end = LLVMGetInsertBlock(b);
    tjj_llvm_guard_end(b, cont);
    LLVMValueRef phi = LLVMBuildPhi(b, LLVMTypeOf(v), "");
    LLVMValueRef vals[2] = {v, otherwise};
    LLVMBasicBlockRef blocks[2] = {then_end, before};
    LLVMAddIncoming(phi, vals, blocks, 2);
    return phi;
}
