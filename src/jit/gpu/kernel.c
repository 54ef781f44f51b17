/* SPDX-License-Identifier: MIT */
/*
 * kernel.c — the kernel driver of GPU code generation: checks the plan,
 * builds the LLVM function of a kernel and emits its ops one by one.
 *
 * The kernel is one LLVM function with the ptx_kernel calling convention
 * (LLVM 22 ignores nvvm.annotations for IR built in memory) and
 * "nvvm.reqntid" for the block size. Its parameters are jit.h's: the
 * kernel's own (pointers as `ptr addrspace(1)`, so every access is
 * ld.global/st.global/atom.global; scalars as the CPU ABI passes them:
 * llvm_shared.c's tjj_llvm_param_type and tjj_llvm_param_value, shared
 * with the CPU), then the assert record. Program ids are ctaid, their counts nctaid; tid.x
 * gives lane = tid & 31, warp = tid >> 5. Values the threads compute once
 * (indices of layouts, program ids) go into the entry block, which
 * branches to the body at the end.
 *
 * emit_op dispatches each op to the file of its family (gen.h lists them).
 * A tile of more than 2^MAX_REGS_LOG2 distinct registers per thread is an
 * error naming the op, before the layout passes (TJ_ERR_COMPILE) and after
 * them (TJ_ERR_UNSUPPORTED: the layouts, a dot's operands included, need
 * more registers than a GPU has).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"

static LLVMValueRef call_intrinsic0(codegen *c, LLVMBuilderRef b, const char *name)
{
    tjj_ls ls = tjj_ls_view(&c->g.ty, c->g.mod, b);
    return tjj_ls_intrinsic(&ls, name, NULL, 0, NULL, 0);
}


void tjj_gpu_emit_op(codegen *c, int32_t opi)
{
    const tji_op *op = &c->g.fn->ops[opi];
    c->g.cur_op = opi;
    switch (op->code) {
    case TJI_CONST: tjj_gpu_emit_const(c, op); return;
    case TJI_PROGRAM_ID: c->ssa[op->result] = c->pid[op->axis >= 0 && op->axis < 3 ? op->axis : 0]; return;
    case TJI_NUM_PROGRAMS: c->ssa[op->result] = c->nprog[op->axis >= 0 && op->axis < 3 ? op->axis : 0]; return;
    case TJI_LOGICAL_PROGRAMS: c->ssa[op->result] = c->logical_programs; return;
    case TJI_ARANGE: tjj_gpu_emit_arange(c, op); return;
    case TJI_SPLAT: tjj_gpu_emit_splat(c, op); return;
    case TJI_BROADCAST: case TJI_EXPAND_DIMS: case TJI_RESHAPE: case TJI_PERMUTE: tjj_gpu_emit_shape_op(c, op); return;
    case TJI_CONVERT: tjj_gpu_emit_convert(c, op); return;
    case TJI_ASSUME: tjj_gpu_emit_assume(c, op); return;
    case TJI_LOAD: tjj_gpu_emit_load(c, op); break;
    case TJI_STORE: tjj_gpu_emit_store(c, op); break;
    case TJI_ATOMIC: case TJI_ATOMIC_CAS: tjj_gpu_emit_atomic(c, op); break;
    case TJI_REDUCE: tjj_gpu_emit_reduce(c, op); return;
    case TJI_CUMSUM: tjj_gpu_emit_cumsum(c, op); return;
    case TJI_FOR: tjj_gpu_emit_for(c, opi); return;
    case TJI_IF: tjj_gpu_emit_if(c, opi); return;
    case TJI_WHILE: tjj_gpu_emit_while(c, opi); return;
    case TJI_CONDITION: tjj_gpu_emit_condition(c, opi); return;
    case TJI_YIELD: return; /* read by the FOR, IF or WHILE around it */
    case TJI_BARRIER: tjj_gpu_barrier(c, TJP_BARRIER_BEFORE); return; /* always in the plan */
    case TJI_PRINT: tjj_gpu_emit_print(c, op); return;
    case TJI_ASSERT: tjj_gpu_emit_assert(c, op); return;
    case TJI_ASSUME_TRUE: tjj_gpu_emit_assume_true(c, op); return;
    case TJI_DOT: tjj_gpu_emit_dot(c, op); return;
    case TJI_STREAM_K_ARRIVE: tjj_gpu_emit_stream_k_arrive(c, op); return;
    case TJI_STREAM_K_ADD: tjj_gpu_emit_stream_k_add(c, op); return;
    case TJI_ASYNC_COPY: tjj_gpu_emit_async_copy(c, op); return;
    case TJI_ASYNC_COMMIT: tjj_gpu_emit_async_commit(c); return;
    case TJI_ASYNC_WAIT: tjj_gpu_emit_async_wait(c, op); return;
    case TJI_LOCAL_LOAD: tjj_gpu_emit_local_load(c, op); return;
    default: tjj_gpu_emit_elementwise(c, op); return;
    }
    if (c->bounds) /* after a load, store or atomic */
        tjj_bounds_flush(c->bounds, c->g.b, opi);
}
/* --- the kernel -------------------------------------------------------------------------------- */

/* A layout spreads a tile over 32 * num_warps threads, so a tile of more
 * than 2^MAX_REGS_LOG2 elements per thread is refused by check_plan below
 * in any layout: refused here before the layout passes spend seconds on
 * it (a 2048 x 2048 tile took 13.5 s to be refused). */
tj_status tjj_gpu_check_tile_sizes(const tji_func *fn, int num_warps)
{
    int64_t threads = 32 * (int64_t)(num_warps > 0 ? num_warps : 1), limit = threads << MAX_REGS_LOG2;
    int32_t largest = 0;
    for (int32_t id = 1; id <= fn->nvalues; id++)
        if (tji_numel(tji_typeof(fn, id)) > limit &&
            (!largest || tji_numel(tji_typeof(fn, id)) > tji_numel(tji_typeof(fn, largest))))
            largest = id;
    if (!largest)
        return TJ_OK;
    int64_t n = tji_numel(tji_typeof(fn, largest));
    return tji_error_at(fn, tji_val(fn, largest)->def_op, TJ_ERR_COMPILE,
                        "a tile of %lld elements needs at least %lld registers per thread with "
                        "num_warps=%d; the limit is %d (use a smaller tile or more warps)",
                        (long long)n, (long long)((n + threads - 1) / threads), num_warps,
                        1 << MAX_REGS_LOG2);
}

/* The plan must give every tile value a layout of its shape for num_warps;
 * and no tile may need more than 2^MAX_REGS_LOG2 distinct registers per
 * thread (registers that are copies cost nothing). The largest is blamed. */
static void check_plan(codegen *c)
{
    const tji_func *fn = c->g.fn;
    const tjp_layout_plan *plan = c->g.plan;
    if (c->num_warps < 1 || c->num_warps > 32 || (c->num_warps & (c->num_warps - 1))) {
        FAIL(c, "num_warps must be a power of two from 1 to 32, not %d", c->num_warps);
        return;
    }
    if (!plan->of || plan->nvalues < fn->nvalues) {
        FAIL(c, "internal error: the layout plan does not cover the kernel's values");
        return;
    }
    if (!plan->shared || !plan->barrier || plan->nops < fn->nops) {
        FAIL(c, "internal error: the plan has no shared-memory steps or barriers "
                "(tjp_choose_swizzles, tjp_alloc_shared, tjp_place_barriers)");
        return;
    }
    int32_t largest = 0;
    int largest_bits = 0;
    for (int32_t id = 1; id <= fn->nvalues; id++) {
        const tji_type *t = type_of(c, id);
        if (t->rank == 0)
            continue;
        const tjp_layout *L = layout_of(c, id);
        int ok = L->rank == t->rank && L->nbits[TJP_REG] <= TJP_MAX_BITS && L->nbits[TJP_LANE] <= 5 &&
                 L->nbits[TJP_WARP] <= c->warp_bits;
        for (int d = 0; ok && d < t->rank; d++)
            ok = L->shape[d] == t->shape[d];
        for (int in = 0; ok && in < TJP_NIN; in++)
            for (int b = 0; ok && b < L->nbits[in]; b++)
                ok = L->basis[in][b] < (uint32_t)tji_numel(t);
        if (!ok) {
            c->g.cur_op = tji_val(fn, id)->def_op;
            FAIL(c, "internal error: value %d has no valid layout in the plan", (int)id);
            return;
        }
        int bits = L->nbits[TJP_REG] - __builtin_popcount(reg_dup_mask(L));
        if (bits > largest_bits || L->nbits[TJP_REG] > 2 * MAX_REGS_LOG2) {
            largest = id;
            largest_bits = L->nbits[TJP_REG] > 2 * MAX_REGS_LOG2 ? L->nbits[TJP_REG] : bits;
        }
    }
    if (largest_bits > MAX_REGS_LOG2) {
        c->g.cur_op = tji_val(fn, largest)->def_op;
        /* valid, but more than a GPU's registers hold: TJ_ERR_UNSUPPORTED (so
         * the ptxas check of a CPU launch, whose tiles are the CPU's, skips
         * it rather than failing the launch) */
        if (c->g.status == TJ_OK)
            c->g.status = tji_error_at(fn, c->g.cur_op, TJ_ERR_UNSUPPORTED,
                                       "a tile of %lld elements needs %d registers per thread with "
                                       "num_warps=%d; the limit is %d (use a smaller tile or more warps)",
                                       (long long)tji_numel(type_of(c, largest)), 1 << largest_bits,
                                       c->num_warps, 1 << MAX_REGS_LOG2);
        return;
    }
    c->g.cur_op = -1;
}

static void count_uses(codegen *c)
{
    const tji_func *fn = c->g.fn;
    for (int32_t i = 0; i < fn->nops; i++)
        for (int a = 0; a < fn->ops[i].nargs; a++) {
            int32_t v = fn->ops[i].args[a];
            if (v > 0 && v <= fn->nvalues)
                c->uses[v]++;
        }
}

static void build_kernel(codegen *c, const char *entry_name)
{
    const tji_func *fn = c->g.fn;
    int np = fn->nparams, nsizes = fn->check_bounds ? tjj_bounds_nbuffers(fn) : 0;
    int nmaps = tjj_gpu_tma_count(c->g.plan), persistent = tjp_is_persistent(fn);
    int stream_k = tjp_stream_k_piece_bytes(fn) > 0;
    int n = np + 1 + nsizes + nmaps + persistent + stream_k;
    LLVMTypeRef *params = tjs_xcalloc((size_t)n, sizeof(LLVMTypeRef));
    for (int i = 0; i < np; i++)
        params[i] = tjj_llvm_param_type(&c->g.ty, &fn->params[i], c->g.t_gptr);
    params[np] = c->g.t_gptr;
    for (int k = 0; k < nsizes; k++) /* bounds.h: each buffer's bytes */
        params[np + 1 + k] = c->g.ty.t_i64;
    for (int k = 0; k < nmaps; k++) /* tma.c: the tensor maps */
        params[np + 1 + nsizes + k] = LLVMPointerTypeInContext(c->g.ctx, 0);
    if (persistent) /* persistent.c: the programs the launch asked for */
        params[n - 1 - stream_k] = c->g.ty.t_i32;
    if (stream_k) /* stream_k.c: the workspace */
        params[n - 1] = c->g.t_gptr;
    LLVMTypeRef fty = LLVMFunctionType(c->g.ty.t_void, params, (unsigned)n, 0);
    free(params);
    LLVMValueRef f = c->g.func = LLVMAddFunction(c->g.mod, entry_name, fty);
    c->tma_first_param = (unsigned)(np + 1 + nsizes);
    tjj_gpu_tma_params(c, f, c->tma_first_param, nmaps);
    LLVMSetFunctionCallConv(f, LLVMPTXKernelCallConv);
    const tjp_warp_spec *ws = c->g.plan->warp_spec;
    char ntid[16];
    snprintf(ntid, sizeof ntid, "%d", (c->num_warps + (ws ? ws->producer_warps : 0)) * 32);
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(c->g.ctx, "nvvm.reqntid", 12, ntid, (unsigned)strlen(ntid)));
    if (c->g.plan->pairs) /* cluster_pairs.c: blocks 2c and 2c + 1 are one cluster */
        LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                                LLVMCreateStringAttribute(c->g.ctx, "nvvm.cluster_dim", 16, "2,1,1", 5));
    if (ws && ws->entry_regs) { /* setmaxnreg needs a register cap at entry */
        char regs[16];
        snprintf(regs, sizeof regs, "%d", ws->entry_regs);
        LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                                LLVMCreateStringAttribute(c->g.ctx, "nvvm.maxnreg", 12, regs, (unsigned)strlen(regs)));
    }
    unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c->g.ctx, nounwind, 0));

    c->entry = new_block(c, "entry");
    LLVMPositionBuilderAtEnd(c->eb, c->entry);
    static const char *const axes = "xyz";
    char name[48];
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "llvm.nvvm.read.ptx.sreg.ctaid.%c", axes[i]);
        c->pid[i] = call_intrinsic0(c, c->eb, name);
        snprintf(name, sizeof name, "llvm.nvvm.read.ptx.sreg.nctaid.%c", axes[i]);
        c->nprog[i] = call_intrinsic0(c, c->eb, name);
    }
    c->tid = call_intrinsic0(c, c->eb, "llvm.nvvm.read.ptx.sreg.tid.x");
    c->lane = LLVMBuildAnd(c->eb, c->tid, c_i32(c, 31), "lane");
    c->warp = LLVMBuildLShr(c->eb, c->tid, c_i32(c, 5), "warp");
    c->assert_info = LLVMGetParam(f, (unsigned)np);
    if (persistent)
        c->logical_programs = LLVMGetParam(f, (unsigned)(n - 1 - stream_k));
    if (stream_k)
        c->stream_k_workspace = LLVMGetParam(f, (unsigned)n - 1);
    for (int i = 0; i < np; i++) {
        const tji_param *p = &fn->params[i];
        LLVMValueRef v = tjj_llvm_param_value(&c->g.ty, c->eb, p, LLVMGetParam(f, (unsigned)i));
        if (p->value > 0 && p->value <= fn->nvalues)
            c->ssa[p->value] = v;
    }
    if (fn->check_bounds)
        c->bounds = tjj_bounds_new_gpu(fn, c->g.ctx, c->eb, c->ssa, f, (unsigned)np + 1, c->assert_info, c->pid,
                                       c->g.device_scope);

    LLVMBasicBlockRef body = new_block(c, "body");
    LLVMPositionBuilderAtEnd(c->g.b, body);
    tjj_gpu_tma_setup(c);
    const tji_op *yield = NULL;
    if (c->g.plan->warp_spec)
        tjj_gpu_emit_specialized(c);
    else
        tjj_gpu_emit_region(c, 0, &yield);
    LLVMBuildRetVoid(c->g.b);
    LLVMBuildBr(c->eb, body);
}

/* Codegen into mod; returns the status (the message is set on failure). */
tj_status tjj_gpu_generate(codegen *c, const char *entry_name)
{
    const tji_func *fn = c->g.fn;
    c->ssa = tjs_xcalloc((size_t)fn->nvalues + 1, sizeof(LLVMValueRef));
    c->regs = tjs_xcalloc((size_t)fn->nvalues + 1, sizeof(LLVMValueRef *));
    c->uses = tjs_xcalloc((size_t)fn->nvalues + 1, sizeof(int32_t));
    c->eb = LLVMCreateBuilderInContext(c->g.ctx);
    c->g.b = LLVMCreateBuilderInContext(c->g.ctx);
    check_plan(c);
    count_uses(c);
    if (c->g.status == TJ_OK)
        build_kernel(c, entry_name);
    LLVMDisposeBuilder(c->g.b);
    LLVMDisposeBuilder(c->eb);
    tjj_bounds_free(c->bounds);
    for (int32_t id = 0; id <= fn->nvalues; id++) {
        free(c->regs[id]);
        if (c->deferred)
            free(c->deferred[id]);
    }
    free(c->regs);
    free(c->deferred);
    free(c->ssa);
    free(c->peer_ssa);
    free(c->uses);
    free(c->parts);
    free(c->tma_phase);
    free(c->empty_phase);
    free(c->unreleased);
    return c->g.status;
}
