/* SPDX-License-Identifier: MIT */
/*
 * cpu_debug.c — PRINT and ASSERT.
 *
 * PRINT hands a materialized array (or a scalar in a stack slot) to
 * tjj_rt_print; ASSERT checks each element and, on the first false one,
 * calls tjj_rt_assert_fail with the user's file:line and returns from the
 * program instance. Both functions are cpu_runtime.c's, bound by address.
 */
#include "cpu_codegen.h"

static LLVMValueRef global_string(codegen *g, const char *s)
{
    return LLVMBuildGlobalString(g->b, s ? s : "", "str");
}

static LLVMValueRef runtime_fn(codegen *g, const char *name, LLVMTypeRef ret, LLVMTypeRef *params,
                               unsigned nparams, LLVMTypeRef *fty)
{
    *fty = LLVMFunctionType(ret, params, nparams, 0);
    LLVMValueRef f = LLVMGetNamedFunction(g->mod, name);
    if (!f) {
        f = LLVMAddFunction(g->mod, name, *fty);
        LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                                   LLVMCreateEnumAttribute(g->ctx, LLVMGetEnumAttributeKindForName("nounwind", 8), 0));
    }
    return f;
}

void tjj_cpu_emit_print(codegen *g, const tji_op *op)
{
    int32_t x = op->args[0];
    const tji_type *t = tji_typeof(g->fn, x);
    LLVMValueRef data;
    if (t->rank == 0) {
        data = tjj_cpu_entry_alloca(g, g->ty.t_i64, "print"); /* holds any scalar */
        LLVMBuildStore(g->b, tjj_ls_to_mem(&g->ls, g->ssa[x], t), data);
    } else if (g->slot[x] >= 0) {
        data = tjj_cpu_scratch_at(g, g->slot[x]);
    } else {
        tjj_cpu_fail(g, "internal: printed tile has no storage");
        return;
    }
    LLVMTypeRef params[12] = {g->ty.t_ptr, g->ty.t_ptr, g->ty.t_i32, g->ty.t_i32, g->ty.t_i32, g->ty.t_i32,
                              g->ty.t_ptr, g->ty.t_i32, g->ty.t_i32, g->ty.t_i32, g->ty.t_i32, g->ty.t_i32};
    LLVMTypeRef fty;
    LLVMValueRef f = runtime_fn(g, "tjj_rt_print", g->ty.t_void, params, 12, &fty);
    tj_dtype dt = t->is_ptr ? TJ_U64 : t->dtype;
    LLVMValueRef args[12] = {g->rt, global_string(g, op->str), g->pid[0], g->pid[1], g->pid[2],
                             c_i32(g, dt), data, c_i32(g, t->rank)};
    for (int d = 0; d < TJ_MAX_RANK; d++)
        args[8 + d] = c_i32(g, d < t->rank ? t->shape[d] : 1);
    LLVMBuildCall2(g->b, fty, f, args, 12, "");
}

/* A false element reports the failure and ends this program instance. */
void tjj_cpu_emit_assert(codegen *g, const tji_op *op)
{
    const tji_type *t = tji_typeof(g->fn, op->args[0]);
    LLVMValueRef msg = global_string(g, op->str), file = global_string(g, op->loc.file);
    nest n;
    LLVMValueRef idx[TJ_MAX_RANK];
    tjj_cpu_nest_begin(g, &n, t->rank, t->shape, idx);
    LLVMValueRef ok = tjj_cpu_elem(g, op->args[0], t->rank ? idx : NULL);
    LLVMBasicBlockRef bad = new_block(g, "assert.fail"), cont = new_block(g, "assert.ok");
    LLVMBuildCondBr(g->b, ok, cont, bad);
    LLVMPositionBuilderAtEnd(g->b, bad);
    LLVMTypeRef params[7] = {g->ty.t_ptr, g->ty.t_ptr, g->ty.t_ptr, g->ty.t_i32, g->ty.t_i32, g->ty.t_i32, g->ty.t_i32};
    LLVMTypeRef fty;
    LLVMValueRef f = runtime_fn(g, "tjj_rt_assert_fail", g->ty.t_void, params, 7, &fty);
    LLVMValueRef args[7] = {g->rt, msg, file, c_i32(g, op->loc.line), g->pid[0], g->pid[1], g->pid[2]};
    LLVMBuildCall2(g->b, fty, f, args, 7, "");
    LLVMBuildRetVoid(g->b);
    LLVMPositionBuilderAtEnd(g->b, cont);
    tjj_cpu_nest_end(g, &n);
}
