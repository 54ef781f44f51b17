/* SPDX-License-Identifier: MIT */
/*
 * context.c — tjit's CUDA context, current only for the length of a call.
 *
 * The driver keeps a current context per thread, and an application that
 * also uses CUDA — the runtime on the primary context, its own driver
 * contexts, another library — owns that setting. tjit used to make its
 * device's context current and leave it so; a caller that had another one
 * current (or none, on purpose) found it changed after any tjit call. Now
 * each public call that reaches the driver opens a scope (TJJ_CONTEXT_SCOPE,
 * device_impl.h): the first time the call needs its device's context
 * (tjj_gpu_enter), the context is pushed unless it is already current; when
 * the call returns, the scope pops what it pushed. Calls made inside a call
 * (tj_bench's launches) nest: the outermost scope that pushed pops. So the
 * thread's current context is the same after a tjit call as before it.
 *
 * The scope ends through GCC's and Clang's cleanup attribute, which runs at
 * every return of the function, so no exit path can forget it. Outside any
 * scope (internal code run by tests) tjj_gpu_enter sets the context as it
 * always did.
 */
#include "device_impl.h"

/* This thread's calls: how deep, and which scope pushed which context. */
static _Thread_local struct {
    int depth;
    int pushed_at;            /* the depth of the scope that pushed; 0: none */
    const tjcu_driver *cu;
    tjcu_context context;
} calls;

tjj_context_scope tjj_context_scope_begin(void)
{
    return (tjj_context_scope){++calls.depth};
}

static void pop(void)
{
    tjcu_context popped;
    calls.cu->cuCtxPopCurrent(&popped);
    calls.pushed_at = 0;
}

void tjj_context_scope_end(const tjj_context_scope *scope)
{
    if (calls.pushed_at == scope->depth)
        pop();
    calls.depth--;
}

tj_status tjj_cuda_make_current(const tjcu_driver *cu, tjcu_context context, const char *who)
{
    if (calls.depth == 0)
        return tjj_cu_check(cu->cuCtxSetCurrent(context), who, "cuCtxSetCurrent");
    if (calls.pushed_at && calls.context == context)
        return TJ_OK;
    tjcu_context current = NULL;
    tj_status st = tjj_cu_check(cu->cuCtxGetCurrent(&current), who, "cuCtxGetCurrent");
    if (st != TJ_OK || current == context)
        return st;
    if (calls.pushed_at) /* another device's, pushed earlier in this call */
        pop();
    st = tjj_cu_check(cu->cuCtxPushCurrent(context), who, "cuCtxPushCurrent");
    if (st == TJ_OK) {
        calls.pushed_at = calls.depth;
        calls.cu = cu;
        calls.context = context;
    }
    return st;
}
