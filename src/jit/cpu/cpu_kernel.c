/* SPDX-License-Identifier: MIT */
/*
 * cpu_kernel.c — tile IR to LLVM IR for the host CPU: loops over arrays.
 * This file is the driver: the scratch layout, the op dispatch, the loop
 * nests that execute the fusion plan, and the program and entry functions;
 * each op family has a file of its own (cpu_codegen.h lists them).
 *
 * The generated program function computes one program instance; an entry
 * function loops over a chunk of program ids around it, inlined (the ABI is
 * in jit.h), so the host makes one call per chunk; it walks a 2-D grid in
 * groups of pid0 rows (GRID_GROUP, at build_runner), or, for a kernel that
 * only stores a row-contiguous 2-D tile, a few of its rows at a time across
 * programs (the row walk, cpu_rows.c). The fusion plan
 * (materialize.c) says which tile values live in arrays; everything else is
 * an expression that is evaluated element by element where it is read
 * (cpu_elementwise.c). The generator walks the ops of each region in order:
 *
 *  - A scalar becomes an SSA value at its op.
 *  - A materialized tile gets a slot in the per-thread scratch buffer (its
 *    byte offset fixed at compile time, 64-byte aligned; scratch_bytes is the
 *    total) and a loop nest over its shape that evaluates its element
 *    expression and stores it. Tiles never live on the stack: they can be
 *    large, and the scratch buffer is reused by every program of a thread.
 *  - Within one loop nest, elem() remembers what it computed for a
 *    (value, index) pair (the memo below), so a value read twice (x * x)
 *    or a chain of element-wise ops sharing operands is emitted once;
 *    memory of what was computed in a conditional block is dropped when the
 *    block is left, since it does not dominate what follows.
 *  - Stores, atomics, reductions, prefix sums, FOR, IF, PRINT and ASSERT go
 *    to their files.
 *
 * Loop indices are i64 and the stored arrays are addressed with nuw/nsw
 * arithmetic, so LLVM sees plain affine loops: after O3 an element-wise
 * kernel is one vectorized loop (masked loads and stores on ragged tiles).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>

#include "cpu_codegen.h"

/* --- memo: what elem() computed in the current loop nest --------------- */

LLVMValueRef tjj_cpu_memo_find(const codegen *g, int32_t id, int rank, LLVMValueRef *idx)
{
    for (size_t i = g->nmemo; i-- > 0;) {
        const memo_entry *e = &g->memo[i];
        if (e->id == id && (rank == 0 || memcmp(e->idx, idx, sizeof(LLVMValueRef) * (size_t)rank) == 0))
            return e->value;
    }
    return NULL;
}

void tjj_cpu_memo_add(codegen *g, int32_t id, int rank, LLVMValueRef *idx, LLVMValueRef v)
{
    if (g->nmemo == g->memo_cap) {
        g->memo_cap = g->memo_cap ? g->memo_cap * 2 : 64;
        g->memo = tjs_xrealloc(g->memo, g->memo_cap * sizeof(memo_entry));
    }
    memo_entry *e = &g->memo[g->nmemo++];
    e->id = id;
    memset(e->idx, 0, sizeof e->idx);
    if (rank > 0)
        memcpy(e->idx, idx, sizeof(LLVMValueRef) * (size_t)rank);
    e->value = v;
}

/* --- loop nests -------------------------------------------------------------- */

/* A loop ID node (the usual self-referential one) holding the hints
 * "llvm.loop.unroll.disable" and, with no_vectorize, vectorize.enable false. */
LLVMValueRef tjj_cpu_loop_hints(codegen *g, int no_vectorize)
{
    LLVMMetadataRef unroll = LLVMMDStringInContext2(g->ctx, "llvm.loop.unroll.disable", 24);
    LLVMMetadataRef vec[2] = {LLVMMDStringInContext2(g->ctx, "llvm.loop.vectorize.enable", 26),
                              LLVMValueAsMetadata(LLVMConstInt(g->ty.t_i1, 0, 0))};
    LLVMMetadataRef hints[2] = {LLVMMDNodeInContext2(g->ctx, &unroll, 1), LLVMMDNodeInContext2(g->ctx, vec, 2)};
    return tjj_llvm_loop_id(g->ctx, hints, no_vectorize ? 2 : 1);
}

void tjj_cpu_set_loop_hints(codegen *g, LLVMValueRef latch_branch, LLVMValueRef hints)
{
    LLVMSetMetadata(latch_branch, LLVMGetMDKindIDInContext(g->ctx, "llvm.loop", 9), hints);
}

/* A kernel of more than LARGE_KERNEL_OPS ops keeps its loops rolled: fully
 * unrolled, and with the scratch arrays between them forwarded, the loops
 * of a long chain become one basic block that LLVM's instruction scheduler
 * takes quadratic time over (materialize.c bounds each loop's size; this
 * keeps the loops apart). Small kernels unroll as before. */
enum { LARGE_KERNEL_OPS = 512 };
static void set_large_kernel_loops(codegen *g)
{
    if (g->fn->nops > LARGE_KERNEL_OPS)
        g->no_unroll = tjj_cpu_loop_hints(g, 0);
}

/* One counted loop [lo, hi) with an i64 index, lo < hi; the body starts in
 * the header. */
static LLVMValueRef loop_begin(codegen *g, LLVMBasicBlockRef *header, LLVMValueRef lo)
{
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b);
    *header = new_block(g, "loop");
    LLVMBuildBr(g->b, *header);
    LLVMPositionBuilderAtEnd(g->b, *header);
    LLVMValueRef iv = LLVMBuildPhi(g->b, g->ty.t_i64, "i");
    LLVMAddIncoming(iv, &lo, &pre, 1);
    return iv;
}

static void loop_end(codegen *g, LLVMBasicBlockRef header, LLVMValueRef iv, LLVMValueRef hi)
{
    LLVMValueRef next = add_nuw(g, iv, c_i64(g, 1));
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b);
    LLVMAddIncoming(iv, &next, &latch, 1);
    LLVMBasicBlockRef exit = new_block(g, "loop.end");
    LLVMValueRef br = LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntULT, next, hi, ""),
                                      header, exit);
    if (g->no_unroll)
        tjj_cpu_set_loop_hints(g, br, g->no_unroll);
    LLVMPositionBuilderAtEnd(g->b, exit);
}

/* Opens loops over every dim of shape that is not 1; idx gets the indices.
 * Dim 0 runs over the rows [g->row_lo, g->row_hi) where the row walk has
 * set them (cpu_rows.c), over all of it otherwise. */
void tjj_cpu_nest_begin(codegen *g, nest *n, int rank, const int32_t *shape, LLVMValueRef *idx)
{
    memo_clear(g);
    n->rank = rank;
    for (int d = 0; d < rank; d++) {
        n->dims[d] = shape[d];
        n->iv[d] = NULL;
        if (shape[d] == 1) {
            idx[d] = c_i64(g, 0);
            continue;
        }
        int rows = d == 0 && g->row_lo;
        n->hi[d] = rows ? g->row_hi : c_i64(g, shape[d]);
        n->iv[d] = idx[d] = loop_begin(g, &n->header[d], rows ? g->row_lo : c_i64(g, 0));
    }
}

void tjj_cpu_nest_end(codegen *g, nest *n)
{
    for (int d = n->rank - 1; d >= 0; d--)
        if (n->iv[d])
            loop_end(g, n->header[d], n->iv[d], n->hi[d]);
    memo_clear(g);
}

/* --- scratch slots ------------------------------------------------------------ */

LLVMValueRef tjj_cpu_scratch_at(codegen *g, int64_t offset)
{
    LLVMValueRef off = c_i64(g, offset);
    return LLVMBuildInBoundsGEP2(g->b, g->ty.t_i8, g->scratch, &off, 1, "");
}

LLVMValueRef tjj_cpu_linear_index(codegen *g, const tji_type *t, LLVMValueRef *idx)
{
    LLVMValueRef lin = NULL;
    int64_t stride = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        if (t->shape[d] != 1) {
            LLVMValueRef term = stride == 1 ? idx[d] : mul_nuw(g, idx[d], c_i64(g, stride));
            lin = lin ? add_nuw(g, lin, term) : term;
        }
        stride *= t->shape[d];
    }
    return lin ? lin : c_i64(g, 0);
}

/* Address of element idx of an array of type t at scratch offset. */
static LLVMValueRef slot_elem_ptr(codegen *g, int64_t offset, const tji_type *t, LLVMValueRef *idx)
{
    LLVMValueRef lin = tjj_cpu_linear_index(g, t, idx);
    return LLVMBuildInBoundsGEP2(g->b, value_mem_type(g, t), tjj_cpu_scratch_at(g, offset), &lin, 1, "");
}

void tjj_cpu_store_elem(codegen *g, int64_t offset, const tji_type *t, LLVMValueRef *idx,
                        LLVMValueRef v)
{
    LLVMValueRef st = LLVMBuildStore(g->b, tjj_ls_to_mem(&g->ls, v, t), slot_elem_ptr(g, offset, t, idx));
    LLVMSetAlignment(st, (unsigned)value_mem_size(t));
}

LLVMValueRef tjj_cpu_load_elem(codegen *g, int64_t offset, const tji_type *t, LLVMValueRef *idx)
{
    LLVMValueRef ld = LLVMBuildLoad2(g->b, value_mem_type(g, t), slot_elem_ptr(g, offset, t, idx), "");
    LLVMSetAlignment(ld, (unsigned)value_mem_size(t));
    return tjj_ls_from_mem(&g->ls, ld, t);
}

/* Fills the array at offset (of type t) with the elements of value src. */
void tjj_cpu_copy_value_to(codegen *g, int64_t offset, int32_t src)
{
    const tji_type *t = tji_typeof(g->fn, src);
    if (g->slot[src] == offset)
        return;
    if (g->slot[src] >= 0) {
        LLVMBuildMemCpy(g->b, tjj_cpu_scratch_at(g, offset), 64, tjj_cpu_scratch_at(g, g->slot[src]), 64,
                        c_i64(g, numel_of(t) * (int64_t)value_mem_size(t)));
        return;
    }
    nest n;
    LLVMValueRef idx[TJ_MAX_RANK];
    tjj_cpu_nest_begin(g, &n, t->rank, t->shape, idx);
    tjj_cpu_store_elem(g, offset, t, idx, tjj_cpu_def_elem(g, src, idx));
    tjj_cpu_nest_end(g, &n);
}

/* --- ops ----------------------------------------------------------------------- */

static void emit_materialized(codegen *g, int32_t id)
{
    const tji_type *t = tji_typeof(g->fn, id);
    nest n;
    LLVMValueRef idx[TJ_MAX_RANK];
    tjj_cpu_nest_begin(g, &n, t->rank, t->shape, idx);
    LLVMValueRef v = tjj_cpu_def_elem(g, id, idx);
    if (g->slot[id] >= 0)
        tjj_cpu_store_elem(g, g->slot[id], t, idx, v);
    tjj_cpu_nest_end(g, &n);
}

LLVMValueRef tjj_cpu_entry_alloca(codegen *g, LLVMTypeRef t, const char *name)
{
    LLVMBasicBlockRef here = LLVMGetInsertBlock(g->b);
    LLVMValueRef first = LLVMGetFirstInstruction(g->entry);
    if (first)
        LLVMPositionBuilderBefore(g->b, first);
    else
        LLVMPositionBuilderAtEnd(g->b, g->entry);
    LLVMValueRef a = LLVMBuildAlloca(g->b, t, name);
    LLVMPositionBuilderAtEnd(g->b, here);
    return a;
}

static int pure_op(const tji_op *op)
{
    switch (op->code) {
    case TJI_STORE: case TJI_ATOMIC: case TJI_ATOMIC_CAS: case TJI_PRINT: case TJI_ASSERT:
    case TJI_ASSUME_TRUE: case TJI_FOR: case TJI_IF: case TJI_YIELD: case TJI_WHILE: case TJI_CONDITION: case TJI_BARRIER:
        return 0;
    case TJI_LOAD:
        return !op->is_volatile;
    default:
        return 1;
    }
}

static void emit_op(codegen *g, int32_t opi)
{
    const tji_func *fn = g->fn;
    const tji_op *op = &fn->ops[opi];
    g->cur_op = opi;
    switch (op->code) {
    case TJI_STORE: tjj_cpu_emit_store(g, op); return;
    case TJI_ATOMIC: case TJI_ATOMIC_CAS: tjj_cpu_emit_atomic(g, op); return;
    case TJI_REDUCE:
        if (rank_of(g, op->result) == 0 || g->slot[op->result] >= 0)
            tjj_cpu_emit_reduce(g, op);
        return;
    case TJI_CUMSUM:
        if (g->slot[op->result] >= 0)
            tjj_cpu_emit_cumsum(g, op);
        return;
    case TJI_DOT:
        if (g->slot[op->result] >= 0)
            tjj_cpu_emit_dot(g, op);
        return;
    case TJI_PRINT: tjj_cpu_emit_print(g, op); return;
    case TJI_ASSERT: tjj_cpu_emit_assert(g, op); return;
    case TJI_ASSUME_TRUE: return; /* nothing here reads it; told to LLVM, a false one could
                                     drop a division's guard and crash the process */
    case TJI_FOR: tjj_cpu_emit_for(g, opi); return;
    case TJI_IF: tjj_cpu_emit_if(g, opi); return;
    case TJI_WHILE: tjj_cpu_emit_while(g, opi); return;
    case TJI_CONDITION: tjj_cpu_emit_condition(g, opi); return;
    case TJI_YIELD: return; /* read by the FOR, IF or WHILE around it */
    case TJI_BARRIER: return; /* one thread runs the program, in order */
    default: break;
    }
    if (op->nresults != 1) {
        tjj_cpu_fail(g, "internal: op with %d results", (int)op->nresults);
        return;
    }
    int32_t id = op->result;
    if (op->code == TJI_INLINE_ASM) /* here, not where it is read: a result nobody reads too */
        tjj_cpu_refuse_asm(g);
    if (rank_of(g, id) == 0) {
        g->ssa[id] = tjj_cpu_def_elem(g, id, NULL);
        return;
    }
    if (!g->plan->materialize[id])
        return; /* fused: computed where it is read */
    if (g->slot[id] >= 0 || !pure_op(op))
        emit_materialized(g, id);
}

void tjj_cpu_emit_region(codegen *g, int32_t rid, const tji_op **yield)
{
    const tji_region *reg = &g->fn->regions[rid];
    *yield = NULL;
    for (int32_t i = 0; i < reg->nops && g->status == TJ_OK; i++) {
        const tji_op *op = &g->fn->ops[reg->ops[i]];
        if (op->code == TJI_YIELD)
            *yield = op;
        else
            emit_op(g, reg->ops[i]);
    }
}

/* --- scratch layout -------------------------------------------------------------- */

static int64_t take_scratch(codegen *g, const tji_type *t)
{
    int64_t offset = (int64_t)g->scratch_bytes;
    uint64_t bytes = (uint64_t)numel_of(t) * value_mem_size(t);
    g->scratch_bytes += (bytes + 63) & ~(uint64_t)63;
    return offset;
}

/* The carried variable a dot accumulates into in place: its accumulator is
 * a FOR's block argument read by nothing else, and the dot's result is
 * yielded back in its place and nowhere else (acc = tj_dot(a, b, acc) in a
 * loop). The result then takes the argument's array: the micro-kernel reads
 * each block of it before writing that block, and the loop's copy from
 * result to argument disappears. Returns the argument, or 0. */
static int32_t dot_in_place(const tji_func *fn, const tji_op *op, const tjp_plan *plan)
{
    int32_t acc = op->args[2];
    const tji_value *v = tji_val(fn, acc);
    if (v->def_op >= 0 || plan->uses[acc] != 1 || v->def_region != op->parent)
        return 0;
    const tji_region *reg = &fn->regions[v->def_region];
    if (reg->parent_op < 0 || fn->ops[reg->parent_op].code != TJI_FOR || reg->nops == 0)
        return 0;
    const tji_op *yield = &fn->ops[reg->ops[reg->nops - 1]];
    int at = -1;
    for (int j = 1; j < reg->nargs; j++)
        if (reg->args[j] == acc)
            at = j - 1;
    if (yield->code != TJI_YIELD || at < 0 || at >= yield->nargs || yield->args[at] != op->result)
        return 0;
    for (int k = 0; k < yield->nargs; k++)
        if (k != at && yield->args[k] == op->result)
            return 0;
    return acc;
}

/* Every materialized tile that is read gets an array; block arguments, IF
 * results and WHILE results always do (they are written by yields, and a
 * WHILE's by its condition), FOR results share their block arguments'
 * arrays, and a dot accumulating in place its argument's. */
static void layout_scratch(codegen *g)
{
    const tji_func *fn = g->fn;
    for (int32_t id = 1; id <= fn->nvalues; id++) {
        const tji_value *v = tji_val(fn, id);
        g->slot[id] = -1;
        if (v->type.rank == 0 || !g->plan->materialize[id])
            continue;
        tji_opcode code = v->def_op >= 0 ? fn->ops[v->def_op].code : TJI_YIELD;
        if (code == TJI_FOR)
            continue;
        if (code == TJI_DOT && dot_in_place(fn, &fn->ops[v->def_op], g->plan))
            continue; /* below, once its argument has an array */
        if (v->def_op < 0 || code == TJI_IF || code == TJI_WHILE || g->plan->uses[id] > 0)
            g->slot[id] = take_scratch(g, &v->type);
    }
    /* The argument of an in-place dot may come after the dot's result in id
     * order (a pass that remade the loop, as lower-block-ptrs does). */
    for (int32_t id = 1; id <= fn->nvalues; id++) {
        const tji_value *v = tji_val(fn, id);
        if (v->type.rank == 0 || !g->plan->materialize[id] || v->def_op < 0 ||
            fn->ops[v->def_op].code != TJI_DOT)
            continue;
        int32_t in_place = dot_in_place(fn, &fn->ops[v->def_op], g->plan);
        if (in_place)
            g->slot[id] = g->slot[in_place];
    }
    for (int32_t i = 0; i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        if ((op->code != TJI_FOR && op->code != TJI_WHILE) || op->region[0] < 0)
            continue;
        const tji_region *reg = &fn->regions[op->region[0]];
        int swap = 0, first = op->code == TJI_FOR; /* the carried arguments' first */
        for (int k = 0; first && k + 1 < reg->nargs && k < op->nresults; k++)
            g->slot[op->result + k] = g->slot[reg->args[1 + k]];
        const tji_op *yield = reg->nops > 0 ? &fn->ops[reg->ops[reg->nops - 1]] : NULL;
        if (!yield || yield->code != TJI_YIELD)
            continue;
        for (int k = 0; k < yield->nargs; k++)
            for (int j = first; j < reg->nargs; j++)
                if (yield->args[k] == reg->args[j] && j != k + first && rank_of(g, reg->args[j]) > 0)
                    swap = 1;
        if (!swap)
            continue;
        g->yield_temps[i] = tjs_xcalloc((size_t)yield->nargs + 1, sizeof(int64_t));
        for (int k = 0; k < yield->nargs && k + first < reg->nargs; k++)
            if (rank_of(g, reg->args[k + first]) > 0)
                g->yield_temps[i][k] = take_scratch(g, tji_typeof(fn, reg->args[k + first]));
    }
}

/* --- the kernel function ------------------------------------------------------ */

static void add_attr(codegen *g, LLVMValueRef f, LLVMAttributeIndex i, const char *name, uint64_t v)
{
    unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
    LLVMAddAttributeAtIndex(f, i, LLVMCreateEnumAttribute(g->ctx, kind, v));
}

static void add_string_attr(codegen *g, LLVMValueRef f, const char *name, const char *value)
{
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                               LLVMCreateStringAttribute(g->ctx, name, (unsigned)strlen(name), value,
                                                         (unsigned)strlen(value)));
}

/* 256-bit vectors even where the host has AVX-512: LLVM already prefers
 * them on Intel's AVX-512 cores, but not on AMD Zen 4, which executes a
 * 512-bit operation as two 256-bit halves; there the 512-bit loops that O3
 * made of streaming kernels moved memory slower (RESULTS.md, issue 8). */
static void prefer_vector_width(codegen *g, LLVMValueRef f)
{
    add_string_attr(g, f, "prefer-vector-width", "256");
}

static void build_kernel(codegen *g, const tjj_cpu_target *target, const char *symbol)
{
    const tji_func *fn = g->fn;
    int np = fn->nparams, nall = np + 10;
    LLVMTypeRef *params = tjs_xcalloc((size_t)nall, sizeof(LLVMTypeRef));
    for (int i = 0; i < np; i++)
        params[i] = tjj_llvm_param_type(&g->ty, &fn->params[i], g->ty.t_ptr);
    for (int i = 0; i < 6; i++)
        params[np + i] = g->ty.t_i32;
    params[np + 6] = params[np + 7] = g->ty.t_ptr;
    params[np + 8] = params[np + 9] = g->ty.t_i64; /* the row walk's rows [lo, hi) */
    LLVMTypeRef fty = LLVMFunctionType(g->ty.t_void, params, (unsigned)nall, 0);
    free(params);
    char *name = tjs_asprintf("%s.program", symbol);
    g->func = LLVMAddFunction(g->mod, name, fty);
    free(name);
    LLVMSetLinkage(g->func, LLVMInternalLinkage);
    add_attr(g, g->func, LLVMAttributeFunctionIndex, "nounwind", 0);
    add_attr(g, g->func, LLVMAttributeFunctionIndex, "alwaysinline", 0);
    add_string_attr(g, g->func, "target-cpu", target->cpu);
    add_string_attr(g, g->func, "target-features", target->features);
    prefer_vector_width(g, g->func);
    LLVMAttributeIndex scratch_index = (LLVMAttributeIndex)(np + 6 + 1); /* params count from 1 */
    add_attr(g, g->func, scratch_index, "noalias", 0);
    add_attr(g, g->func, scratch_index, "align", 64);

    g->entry = new_block(g, "entry");
    LLVMPositionBuilderAtEnd(g->b, g->entry);
    for (int i = 0; i < 3; i++) {
        g->pid[i] = LLVMGetParam(g->func, (unsigned)(np + i));
        g->nprog[i] = LLVMGetParam(g->func, (unsigned)(np + 3 + i));
    }
    g->scratch = LLVMGetParam(g->func, (unsigned)(np + 6));
    g->rt = LLVMGetParam(g->func, (unsigned)(np + 7));
    if (g->row_store >= 0) { /* its store's nests are the kernel's only ones */
        g->row_lo = LLVMGetParam(g->func, (unsigned)(np + 8));
        g->row_hi = LLVMGetParam(g->func, (unsigned)(np + 9));
    }
    for (int i = 0; i < np; i++) {
        const tji_param *p = &fn->params[i];
        LLVMValueRef v = tjj_llvm_param_value(&g->ty, g->b, p, LLVMGetParam(g->func, (unsigned)i));
        if (p->value > 0 && p->value <= fn->nvalues)
            g->ssa[p->value] = v;
    }
    if (fn->check_bounds)
        g->bounds = tjj_bounds_new_cpu(fn, g->ctx, g->b, g->ssa, g->rt, g->pid);
    const tji_op *yield = NULL;
    tjj_cpu_emit_region(g, 0, &yield);
    LLVMBuildRetVoid(g->b);
    tjj_bounds_free(g->bounds);
    g->bounds = NULL;
}

/* The order in which the entry point visits a 2-D grid: GRID_GROUP
 * consecutive pid0 values for each pid1, then the next group of pid0 (pid2
 * slowest). Programs are independent, so any order is correct; this one
 * keeps a worker's consecutive programs near each other in both grid
 * dimensions, where a plain pid0-fastest order walks a whole column of
 * tiles first (a strided 2-D gather ran 4x slower that way). */
enum { GRID_GROUP = 8 };

static LLVMValueRef min_i64(codegen *g, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, a, b, ""), a, b, "");
}

/* The entry point (jit.h): runs programs first .. first+count-1, in the
 * grouped order above, in a loop around the inlined program function, so a
 * chunk of the grid costs one call from the host, not one per program. The
 * program ids of `first` are computed once by division; then they step. */
static void build_runner(codegen *g, const tjj_cpu_target *target, const char *symbol)
{
    int np = g->fn->nparams, nall = np + 7;
    LLVMTypeRef *params = tjs_xcalloc((size_t)nall, sizeof(LLVMTypeRef));
    LLVMTypeRef program_ty = LLVMGlobalGetValueType(g->func);
    LLVMTypeRef *program_params = tjs_xcalloc((size_t)np + 10, sizeof(LLVMTypeRef));
    LLVMGetParamTypes(program_ty, program_params);
    for (int i = 0; i < np; i++)
        params[i] = program_params[i];
    params[np] = params[np + 1] = g->ty.t_i64;
    params[np + 2] = params[np + 3] = params[np + 4] = g->ty.t_i32;
    params[np + 5] = params[np + 6] = g->ty.t_ptr;
    LLVMValueRef run = LLVMAddFunction(g->mod, symbol, LLVMFunctionType(g->ty.t_void, params, (unsigned)nall, 0));
    free(params);
    add_attr(g, run, LLVMAttributeFunctionIndex, "nounwind", 0);
    add_string_attr(g, run, "target-cpu", target->cpu);
    add_string_attr(g, run, "target-features", target->features);
    prefer_vector_width(g, run);
    if (g->row_store >= 0) {
        tjj_cpu_build_row_walk(g, run, program_ty);
        free(program_params);
        return;
    }

    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(g->ctx, run, "entry");
    LLVMBasicBlockRef start = LLVMAppendBasicBlockInContext(g->ctx, run, "start");
    LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(g->ctx, run, "program");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, run, "done");
    LLVMPositionBuilderAtEnd(g->b, entry);
    LLVMValueRef first = LLVMGetParam(run, (unsigned)np), count = LLVMGetParam(run, (unsigned)np + 1);
    LLVMValueRef end = LLVMBuildAdd(g->b, first, count, "");
    LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, first, end, ""), start, done);

    /* the ids of `first`: plane (pid2), group of pid0 rows, place in it */
    LLVMPositionBuilderAtEnd(g->b, start);
    LLVMValueRef group = c_i64(g, GRID_GROUP), one = c_i64(g, 1), zero = c_i64(g, 0);
    LLVMValueRef n0 = LLVMBuildZExt(g->b, LLVMGetParam(run, (unsigned)np + 2), g->ty.t_i64, "");
    LLVMValueRef n1 = LLVMBuildZExt(g->b, LLVMGetParam(run, (unsigned)np + 3), g->ty.t_i64, "");
    LLVMValueRef plane = LLVMBuildMul(g->b, n0, n1, "");
    LLVMValueRef p2_0 = LLVMBuildUDiv(g->b, first, plane, "");
    LLVMValueRef in_plane = LLVMBuildURem(g->b, first, plane, "");
    LLVMValueRef per_group = LLVMBuildMul(g->b, group, n1, "");
    LLVMValueRef g0_0 = LLVMBuildMul(g->b, LLVMBuildUDiv(g->b, in_plane, per_group, ""), group, "");
    LLVMValueRef in_group = LLVMBuildURem(g->b, in_plane, per_group, "");
    LLVMValueRef size_0 = min_i64(g, group, LLVMBuildSub(g->b, n0, g0_0, ""));
    LLVMValueRef p0_0 = LLVMBuildAdd(g->b, g0_0, LLVMBuildURem(g->b, in_group, size_0, ""), "");
    LLVMValueRef p1_0 = LLVMBuildUDiv(g->b, in_group, size_0, "");
    LLVMBuildBr(g->b, loop);

    LLVMPositionBuilderAtEnd(g->b, loop);
    LLVMValueRef i = LLVMBuildPhi(g->b, g->ty.t_i64, "");
    LLVMValueRef p0 = LLVMBuildPhi(g->b, g->ty.t_i64, "pid0");
    LLVMValueRef p1 = LLVMBuildPhi(g->b, g->ty.t_i64, "pid1");
    LLVMValueRef p2 = LLVMBuildPhi(g->b, g->ty.t_i64, "pid2");
    LLVMValueRef g0 = LLVMBuildPhi(g->b, g->ty.t_i64, "group0");
    LLVMValueRef *args = tjs_xcalloc((size_t)np + 10, sizeof(LLVMValueRef));
    for (int k = 0; k < np; k++)
        args[k] = LLVMGetParam(run, (unsigned)k);
    args[np] = LLVMBuildTrunc(g->b, p0, g->ty.t_i32, "");
    args[np + 1] = LLVMBuildTrunc(g->b, p1, g->ty.t_i32, "");
    args[np + 2] = LLVMBuildTrunc(g->b, p2, g->ty.t_i32, "");
    for (int k = 0; k < 3; k++)
        args[np + 3 + k] = LLVMGetParam(run, (unsigned)(np + 2 + k));
    args[np + 6] = LLVMGetParam(run, (unsigned)np + 5);
    args[np + 7] = LLVMGetParam(run, (unsigned)np + 6);
    args[np + 8] = args[np + 9] = zero; /* all rows: only the row walk slices them */
    LLVMBuildCall2(g->b, program_ty, g->func, args, (unsigned)np + 10, "");
    free(args);
    free(program_params);

    /* step: next pid0 in the group; past its end, the next pid1; past the
     * last pid1, the next group; past the last group, the next plane */
    LLVMValueRef size = min_i64(g, group, LLVMBuildSub(g->b, n0, g0, ""));
    LLVMValueRef p0_next = LLVMBuildAdd(g->b, p0, one, ""), p1_next = LLVMBuildAdd(g->b, p1, one, "");
    LLVMValueRef g0_next = LLVMBuildAdd(g->b, g0, group, "");
    LLVMValueRef wrap0 = LLVMBuildICmp(g->b, LLVMIntUGE, p0_next, LLVMBuildAdd(g->b, g0, size, ""), "");
    LLVMValueRef wrap1 = LLVMBuildAnd(g->b, wrap0, LLVMBuildICmp(g->b, LLVMIntUGE, p1_next, n1, ""), "");
    LLVMValueRef wrap2 = LLVMBuildAnd(g->b, wrap1, LLVMBuildICmp(g->b, LLVMIntUGE, g0_next, n0, ""), "");
    LLVMValueRef g0_step = LLVMBuildSelect(g->b, wrap1, LLVMBuildSelect(g->b, wrap2, zero, g0_next, ""), g0, "");
    LLVMValueRef p0_step = LLVMBuildSelect(g->b, wrap0, g0_step, p0_next, "");
    LLVMValueRef p1_step = LLVMBuildSelect(g->b, wrap0, LLVMBuildSelect(g->b, wrap1, zero, p1_next, ""), p1, "");
    LLVMValueRef p2_step = LLVMBuildSelect(g->b, wrap2, LLVMBuildAdd(g->b, p2, one, ""), p2, "");
    LLVMValueRef next = LLVMBuildAdd(g->b, i, one, "");
    LLVMBasicBlockRef from[2] = {start, loop};
    LLVMValueRef vi[2] = {first, next}, v0[2] = {p0_0, p0_step}, v1[2] = {p1_0, p1_step};
    LLVMValueRef v2[2] = {p2_0, p2_step}, vg[2] = {g0_0, g0_step};
    LLVMAddIncoming(i, vi, from, 2);
    LLVMAddIncoming(p0, v0, from, 2);
    LLVMAddIncoming(p1, v1, from, 2);
    LLVMAddIncoming(p2, v2, from, 2);
    LLVMAddIncoming(g0, vg, from, 2);
    LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntSLT, next, end, ""), loop, done);
    LLVMPositionBuilderAtEnd(g->b, done);
    LLVMBuildRetVoid(g->b);
}

tj_status tjj_cpu_codegen(const tji_func *fn, const tjp_plan *plan, LLVMContextRef ctx,
                          const tjj_cpu_target *target, const char *symbol, LLVMModuleRef *module,
                          size_t *scratch_bytes)
{
    codegen g = {.fn = fn, .plan = plan, .ctx = ctx, .cur_op = -1, .row_store = -1, .status = TJ_OK};
    tjj_llvm_types_init(&g.ty, ctx);
    g.ssa = tjs_xcalloc((size_t)fn->nvalues + 1, sizeof(LLVMValueRef));
    g.slot = tjs_xcalloc((size_t)fn->nvalues + 1, sizeof(int64_t));
    g.yield_temps = tjs_xcalloc((size_t)fn->nops + 1, sizeof(int64_t *));

    g.mod = LLVMModuleCreateWithNameInContext(symbol, ctx);
    LLVMSetTarget(g.mod, target->triple);
    LLVMSetDataLayout(g.mod, target->data_layout);
    g.b = LLVMCreateBuilderInContext(ctx);
    g.ls = tjj_ls_view(&g.ty, g.mod, g.b);
    layout_scratch(&g);
    set_large_kernel_loops(&g);
    tjj_cpu_plan_row_walk(&g);
    build_kernel(&g, target, symbol);
    build_runner(&g, target, symbol);
    LLVMDisposeBuilder(g.b);

    for (int32_t i = 0; i < fn->nops; i++)
        free(g.yield_temps[i]);
    free(g.yield_temps);
    free(g.ssa);
    free(g.slot);
    free(g.memo);
    if (g.status != TJ_OK) {
        LLVMDisposeModule(g.mod);
        return g.status;
    }
    *module = g.mod;
    *scratch_bytes = (size_t)g.scratch_bytes;
    return TJ_OK;
}
