/* SPDX-License-Identifier: MIT */
/*
 * cpu_codegen.c — tile IR to LLVM IR for the host CPU: loops over arrays.
 *
 * The generated program function computes one program instance; an entry
 * function loops over a chunk of program ids around it, inlined (the ABI is
 * in jit.h), so the host makes one call per chunk; it walks a 2-D grid in
 * groups of pid0 rows (GRID_GROUP, at build_runner). The fusion plan (materialize.c) says which tile values live
 * in arrays; everything else is an expression that is evaluated element by
 * element where it is read. The generator walks the ops of each region in
 * order:
 *
 *  - A scalar becomes an SSA value at its op.
 *  - A materialized tile gets a slot in the per-thread scratch buffer (its
 *    byte offset fixed at compile time, 64-byte aligned; scratch_bytes is the
 *    total) and a loop nest over its shape that evaluates its element
 *    expression and stores it. Tiles never live on the stack: they can be
 *    large, and the scratch buffer is reused by every program of a thread.
 *  - elem(value, index) produces one element of any value at a multi-index:
 *    a scalar is its SSA value, a materialized tile is read from its slot, and
 *    a fused tile is computed from its operands' elements: broadcast dims of
 *    size 1 read index 0, expand_dims drops an index, arange is lo + i, splat
 *    is the scalar, reshape keeps the row-major linear index and permute
 *    permutes the multi-index (both read their materialized operand in place,
 *    with no copy), and a load is one element load behind a branch on its
 *    mask, so an address whose lane is masked off is never touched.
 *    Within one loop nest, elem() remembers what it computed for a
 *    (value, index) pair, so a value read twice (x * x) or a chain of
 *    element-wise ops sharing operands is emitted once; memory of what was
 *    computed in a conditional block is dropped when the block is left, since
 *    it does not dominate what follows.
 *  - Stores and atomics run a loop nest over the pointer tile, evaluating
 *    pointer and mask first and the stored value only on the lanes whose mask
 *    is true. A masked store whose mask is plain index arithmetic is emitted
 *    twice, behind a check that the whole mask is true: full tiles take the
 *    copy without masks (plain vector loads and stores), ragged edges the
 *    masked one. Atomics are seq_cst atomicrmw/cmpxchg (16-bit floats: a
 *    compare-and-swap loop computing in f32); a masked-off lane does nothing
 *    and reads as old value 0.
 *  - Reductions loop over the result's indices with an inner loop along the
 *    axis; the first element seeds the accumulator, so a max over all-NaN
 *    elements is NaN and an empty identity is never needed. Float sums may be
 *    reassociated (any order is a valid sum order; a GPU adds as a tree), so
 *    LLVM vectorizes them. Float max/min/argmax/argmin compare the integer
 *    order keys of llvm_scalar.c (-0 below +0, NaN ignored or propagated),
 *    so they are integer reductions, vectorized and the same bits as the
 *    GPU's. (They once used minnum/maxnum, whose vectorized form in LLVM 22
 *    skipped the scalar remainder of loops of 7 or 15 trips: a tile of 8 or
 *    16 along the axis was reduced over its first 5 or 13 elements;
 *    tests/test_minmax.c keeps those lengths.) An argmax/argmin loop
 *    stays a loop, neither unrolled nor vectorized: fully unrolled, a chain
 *    of 31 compare-selects on addresses that do not change from program to
 *    program (a [1,32] or [32,1] tile at constant offsets) sent LLVM 22's
 *    loop vectorizer, working on the loop over programs around it, into
 *    endless recursion (tests/llvm/argmax_loop_vectorize_hang.ll). CUMSUM
 *    is sequential along its axis.
 *  - PRINT hands a materialized array to tjj_rt_print; ASSERT checks each
 *    element and, on the first false one, calls tjj_rt_assert_fail with the
 *    user's file:line and returns from the program instance.
 *  - FOR is a real loop: scalar carried values are phis, tile carried values
 *    live in the slots of the region's block arguments (the loop's results
 *    share those slots). Yields copy into them, through temporaries when one
 *    yielded value is another carried array (yield(b, a) swaps correctly).
 *    IF is a branch; scalar results are phis, tile results are arrays both
 *    branches write.
 *
 * Loop indices are i64 and the stored arrays are addressed with nuw/nsw
 * arithmetic, so LLVM sees plain affine loops: after O3 an element-wise
 * kernel is one vectorized loop (masked loads and stores on ragged tiles).
 *
 * The element-wise semantics (integer division by 0, over-wide shifts,
 * saturating casts, f16/bf16 rounding, ...) are llvm_scalar.c's, shared with
 * the GPU back end so that both agree bit for bit; only exp, exp2, log,
 * log2, sigmoid (LLVM's libm intrinsics) and float remainder (frem) are
 * this file's. Besides: argmax/argmin give the first index of the extreme
 * value, ignore NaN (or, propagating it, give the first NaN's index), and
 * give 0 when every element is NaN; f16 and bf16
 * reductions and prefix sums accumulate in f32. A FOR whose step is 0
 * runs zero times; the loop test never overflows, whatever the bounds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/DebugInfo.h>

#include "bounds.h"
#include "cpu_backend.h"
#include "llvm_scalar.h"

typedef struct memo_entry {
    int32_t id;
    LLVMValueRef idx[TJ_MAX_RANK];
    LLVMValueRef value;
} memo_entry;

typedef struct codegen {
    const tji_func *fn;
    const tjp_plan *plan;
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMValueRef func;
    LLVMBasicBlockRef entry;
    LLVMTypeRef t_void, t_i1, t_i8, t_i16, t_i32, t_i64, t_half, t_float, t_double, t_ptr;
    tjj_ls ls;             /* the same state for the shared element-wise code */

    LLVMValueRef *ssa;     /* per value id: a scalar's SSA value */
    int64_t *slot;         /* per value id: a tile's scratch offset, or -1 */
    int64_t **yield_temps; /* per FOR op: scratch offsets of swap temporaries, or NULL */
    uint64_t scratch_bytes;
    LLVMValueRef scratch, rt, pid[3], nprog[3];

    memo_entry *memo;
    size_t nmemo, memo_cap;
    int32_t true_mask;     /* a mask value known to be all true here, or 0 */
    LLVMValueRef no_unroll; /* loop metadata of a large kernel's loops, or NULL */
    tjj_bounds_gen *bounds; /* TJIT_CHECK_BOUNDS: every access is checked */

    int32_t cur_op;        /* the op being emitted, for messages */
    tj_status status;      /* the first error */
} codegen;

/* --- errors -------------------------------------------------------------- */

TJS_PRINTF(2, 3) static void fail(codegen *g, const char *fmt, ...)
{
    if (g->status != TJ_OK)
        return;
    va_list ap;
    va_start(ap, fmt);
    g->status = tji_verror_at(g->fn, g->cur_op, TJ_ERR_COMPILE, fmt, ap);
    va_end(ap);
}

/* --- types and constants ------------------------------------------------- */

static int is_half_float(tj_dtype t) { return t == TJ_F16 || t == TJ_BF16; }

static int rank_of(const codegen *g, int32_t id) { return tji_typeof(g->fn, id)->rank; }

static int64_t numel_of(const tji_type *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++)
        n *= t->shape[d];
    return n;
}

static LLVMTypeRef value_type(const codegen *g, const tji_type *t)
{
    return t->is_ptr ? g->t_ptr : tjj_ls_dtype_type(&g->ls, t->dtype);
}

static LLVMTypeRef value_mem_type(const codegen *g, const tji_type *t)
{
    return t->is_ptr ? g->t_ptr : tjj_ls_mem_type(&g->ls, t->dtype);
}

static uint64_t value_mem_size(const tji_type *t)
{
    return t->is_ptr ? sizeof(void *) : tj_dtype_size(t->dtype);
}

static LLVMValueRef c_i64(const codegen *g, int64_t v) { return LLVMConstInt(g->t_i64, (unsigned long long)v, 1); }
static LLVMValueRef c_i32(const codegen *g, int64_t v) { return LLVMConstInt(g->t_i32, (unsigned long long)v, 1); }
static LLVMValueRef c_int(LLVMTypeRef t, int64_t v) { return LLVMConstInt(t, (unsigned long long)v, 1); }

static void set_nuw_nsw(LLVMValueRef v)
{
    if (LLVMIsAInstruction(v)) {
        LLVMSetNUW(v, 1);
        LLVMSetNSW(v, 1);
    }
}

static LLVMValueRef add_nuw(codegen *g, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef v = LLVMBuildAdd(g->b, a, b, "");
    set_nuw_nsw(v);
    return v;
}

static LLVMValueRef mul_nuw(codegen *g, LLVMValueRef a, LLVMValueRef b)
{
    LLVMValueRef v = LLVMBuildMul(g->b, a, b, "");
    set_nuw_nsw(v);
    return v;
}

static LLVMBasicBlockRef new_block(codegen *g, const char *name)
{
    return LLVMAppendBasicBlockInContext(g->ctx, g->func, name);
}

/* --- memo: what elem() computed in the current loop nest --------------------- */

static void memo_clear(codegen *g) { g->nmemo = 0; }
static size_t memo_mark(const codegen *g) { return g->nmemo; }
static void memo_release(codegen *g, size_t mark) { g->nmemo = mark; }

static LLVMValueRef memo_find(const codegen *g, int32_t id, int rank, LLVMValueRef *idx)
{
    for (size_t i = g->nmemo; i-- > 0;) {
        const memo_entry *e = &g->memo[i];
        if (e->id == id && (rank == 0 || memcmp(e->idx, idx, sizeof(LLVMValueRef) * (size_t)rank) == 0))
            return e->value;
    }
    return NULL;
}

static void memo_add(codegen *g, int32_t id, int rank, LLVMValueRef *idx, LLVMValueRef v)
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

typedef struct nest {
    int rank;
    int64_t dims[TJ_MAX_RANK];
    LLVMBasicBlockRef header[TJ_MAX_RANK];
    LLVMValueRef iv[TJ_MAX_RANK];
} nest;

/* A loop ID node (the usual self-referential one) holding the hints
 * "llvm.loop.unroll.disable" and, with no_vectorize, vectorize.enable false. */
static LLVMValueRef loop_hints(codegen *g, int no_vectorize)
{
    LLVMMetadataRef self = LLVMTemporaryMDNode(g->ctx, NULL, 0);
    LLVMMetadataRef unroll = LLVMMDStringInContext2(g->ctx, "llvm.loop.unroll.disable", 24);
    LLVMMetadataRef vec[2] = {LLVMMDStringInContext2(g->ctx, "llvm.loop.vectorize.enable", 26),
                              LLVMValueAsMetadata(LLVMConstInt(g->t_i1, 0, 0))};
    LLVMMetadataRef ops[3] = {self, LLVMMDNodeInContext2(g->ctx, &unroll, 1),
                              LLVMMDNodeInContext2(g->ctx, vec, 2)};
    LLVMMetadataRef id = LLVMMDNodeInContext2(g->ctx, ops, no_vectorize ? 3 : 2);
    LLVMMetadataReplaceAllUsesWith(self, id);
    return LLVMMetadataAsValue(g->ctx, id);
}

static void set_loop_hints(codegen *g, LLVMValueRef latch_branch, LLVMValueRef hints)
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
        g->no_unroll = loop_hints(g, 0);
}

/* One counted loop [0, n) with an i64 index; the body starts in the header. */
static LLVMValueRef loop_begin(codegen *g, LLVMBasicBlockRef *header)
{
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b);
    *header = new_block(g, "loop");
    LLVMBuildBr(g->b, *header);
    LLVMPositionBuilderAtEnd(g->b, *header);
    LLVMValueRef iv = LLVMBuildPhi(g->b, g->t_i64, "i");
    LLVMValueRef zero = c_i64(g, 0);
    LLVMAddIncoming(iv, &zero, &pre, 1);
    return iv;
}

static void loop_end(codegen *g, LLVMBasicBlockRef header, LLVMValueRef iv, int64_t n)
{
    LLVMValueRef next = add_nuw(g, iv, c_i64(g, 1));
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b);
    LLVMAddIncoming(iv, &next, &latch, 1);
    LLVMBasicBlockRef exit = new_block(g, "loop.end");
    LLVMValueRef br = LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntULT, next, c_i64(g, n), ""),
                                      header, exit);
    if (g->no_unroll)
        set_loop_hints(g, br, g->no_unroll);
    LLVMPositionBuilderAtEnd(g->b, exit);
}

/* Opens loops over every dim of shape that is not 1; idx gets the indices. */
static void nest_begin(codegen *g, nest *n, int rank, const int32_t *shape, LLVMValueRef *idx)
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
        n->iv[d] = idx[d] = loop_begin(g, &n->header[d]);
    }
}

static void nest_end(codegen *g, nest *n)
{
    for (int d = n->rank - 1; d >= 0; d--)
        if (n->iv[d])
            loop_end(g, n->header[d], n->iv[d], n->dims[d]);
    memo_clear(g);
}

/* --- scratch slots ------------------------------------------------------------ */

static LLVMValueRef scratch_at(codegen *g, int64_t offset)
{
    LLVMValueRef off = c_i64(g, offset);
    return LLVMBuildInBoundsGEP2(g->b, g->t_i8, g->scratch, &off, 1, "");
}

static LLVMValueRef linear_index(codegen *g, const tji_type *t, LLVMValueRef *idx)
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
    LLVMValueRef lin = linear_index(g, t, idx);
    return LLVMBuildInBoundsGEP2(g->b, value_mem_type(g, t), scratch_at(g, offset), &lin, 1, "");
}

static void store_elem(codegen *g, int64_t offset, const tji_type *t, LLVMValueRef *idx,
                       LLVMValueRef v)
{
    LLVMValueRef st = LLVMBuildStore(g->b, tjj_ls_to_mem(&g->ls, v, t), slot_elem_ptr(g, offset, t, idx));
    LLVMSetAlignment(st, (unsigned)value_mem_size(t));
}

static LLVMValueRef load_elem(codegen *g, int64_t offset, const tji_type *t, LLVMValueRef *idx)
{
    LLVMValueRef ld = LLVMBuildLoad2(g->b, value_mem_type(g, t), slot_elem_ptr(g, offset, t, idx), "");
    LLVMSetAlignment(ld, (unsigned)value_mem_size(t));
    return tjj_ls_from_mem(&g->ls, ld, t);
}

/* --- element-wise arithmetic ------------------------------------------------ */

/* The float ops whose code is the CPU's own: libm through LLVM's intrinsics
 * and frem (a callback of tjj_ls_elementwise). */
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
    case TJI_ERF: { /* no intrinsic: libm's erff / erf */
        LLVMTypeRef t = LLVMTypeOf(x);
        const char *name = t == g->t_double ? "erf" : "erff";
        LLVMTypeRef fty = LLVMFunctionType(t, &t, 1, 0);
        LLVMValueRef f = LLVMGetNamedFunction(g->mod, name);
        if (!f)
            f = LLVMAddFunction(g->mod, name, fty);
        return LLVMBuildCall2(b, fty, f, &x, 1, "");
    }
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
    fail(g, "not defined for %s", at->is_ptr ? "pointers" : tj_dtype_name(at->dtype));
    return LLVMGetPoison(value_type(g, rt));
}

/* --- elements of values --------------------------------------------------------- */

static LLVMValueRef elem(codegen *g, int32_t id, LLVMValueRef *idx);

/* A checked variant's mask of the access of op (index) at ptr, an element
 * of pointer value ptr_id: off where the address is outside its buffers,
 * the first such lane reported (bounds.h). Unchecked: mask itself. */
static LLVMValueRef bounds_mask(codegen *g, int32_t op, int32_t ptr_id, LLVMValueRef ptr,
                                const tji_type *t, LLVMValueRef mask)
{
    if (!g->bounds)
        return mask;
    mask = tjj_bounds_check(g->bounds, g->b, ptr_id, ptr, value_mem_size(t), value_mem_size(t), mask);
    tjj_bounds_flush(g->bounds, g->b, op);
    return mask;
}

/* A masked element load: the address is touched only where mask is true. */
static LLVMValueRef masked_load(codegen *g, const tji_type *t, LLVMValueRef ptr, LLVMValueRef mask,
                                LLVMValueRef other, int is_volatile)
{
    LLVMTypeRef mt = value_mem_type(g, t);
    if (!other)
        other = LLVMConstNull(value_type(g, t));
    LLVMBasicBlockRef cur = NULL, then = NULL, merge = NULL;
    if (mask) {
        cur = LLVMGetInsertBlock(g->b);
        then = new_block(g, "load");
        merge = new_block(g, "load.end");
        LLVMBuildCondBr(g->b, mask, then, merge);
        LLVMPositionBuilderAtEnd(g->b, then);
    }
    LLVMValueRef ld = LLVMBuildLoad2(g->b, mt, ptr, "");
    LLVMSetAlignment(ld, (unsigned)value_mem_size(t));
    if (is_volatile)
        LLVMSetVolatile(ld, 1);
    LLVMValueRef v = tjj_ls_from_mem(&g->ls, ld, t);
    if (!mask)
        return v;
    LLVMBasicBlockRef then_end = LLVMGetInsertBlock(g->b);
    LLVMBuildBr(g->b, merge);
    LLVMPositionBuilderAtEnd(g->b, merge);
    LLVMValueRef phi = LLVMBuildPhi(g->b, value_type(g, t), "");
    LLVMValueRef vals[2] = {v, other};
    LLVMBasicBlockRef blocks[2] = {then_end, cur};
    LLVMAddIncoming(phi, vals, blocks, 2);
    return phi;
}

/* The element of value id at idx computed from its defining op. */
static LLVMValueRef def_elem(codegen *g, int32_t id, LLVMValueRef *idx)
{
    const tji_func *fn = g->fn;
    const tji_value *val = tji_val(fn, id);
    const tji_type *t = &val->type;
    if (val->def_op < 0) {
        fail(g, "internal: block argument %d has no storage", (int)id);
        return LLVMGetPoison(value_type(g, t));
    }
    const tji_op *op = &fn->ops[val->def_op];
    LLVMValueRef sidx[TJ_MAX_RANK] = {0};
    switch (op->code) {
    case TJI_CONST:
        if (t->dtype == TJ_BF16) /* LLVM rounds the double to bfloat once */
            return LLVMBuildBitCast(g->b, LLVMConstReal(LLVMBFloatTypeInContext(g->ctx), op->fval),
                                    g->t_i16, "");
        if (tjs_dtype_is_float(t->dtype))
            return LLVMConstReal(tjj_ls_dtype_type(&g->ls, t->dtype), op->fval);
        if (t->dtype == TJ_I1)
            return LLVMConstInt(g->t_i1, op->ival != 0, 0);
        return c_int(tjj_ls_dtype_type(&g->ls, t->dtype), op->ival);
    case TJI_PROGRAM_ID:
        return g->pid[op->axis >= 0 && op->axis < 3 ? op->axis : 0];
    case TJI_NUM_PROGRAMS:
        return g->nprog[op->axis >= 0 && op->axis < 3 ? op->axis : 0];
    case TJI_ARANGE:
        return LLVMBuildAdd(g->b, LLVMBuildTrunc(g->b, idx[0], g->t_i32, ""), c_i32(g, op->ival), "");
    case TJI_SPLAT:
        return elem(g, op->args[0], NULL);
    case TJI_BROADCAST: {
        const tji_type *st = tji_typeof(fn, op->args[0]);
        for (int d = 0; d < st->rank; d++)
            sidx[d] = st->shape[d] == 1 ? c_i64(g, 0) : idx[d];
        return elem(g, op->args[0], sidx);
    }
    case TJI_EXPAND_DIMS:
        for (int d = 0, s = 0; d < t->rank; d++)
            if (d != op->axis)
                sidx[s++] = idx[d];
        return elem(g, op->args[0], sidx);
    case TJI_RESHAPE: {
        const tji_type *st = tji_typeof(fn, op->args[0]);
        LLVMValueRef lin = linear_index(g, t, idx);
        for (int d = st->rank - 1; d >= 0; d--) {
            LLVMValueRef dim = c_i64(g, st->shape[d]);
            sidx[d] = st->shape[d] == 1 ? c_i64(g, 0) : LLVMBuildURem(g->b, lin, dim, "");
            if (d > 0)
                lin = LLVMBuildUDiv(g->b, lin, dim, "");
        }
        return elem(g, op->args[0], sidx);
    }
    case TJI_PERMUTE:
        for (int d = 0; d < t->rank; d++)
            sidx[op->perm[d]] = idx[d];
        return elem(g, op->args[0], sidx);
    case TJI_CONVERT: /* a GPU layout change: the identity here */
    case TJI_ASSUME:  /* a fact for the GPU's coalescing */
        return elem(g, op->args[0], idx);
    case TJI_LOAD: {
        LLVMValueRef ptr = elem(g, op->args[0], idx);
        LLVMValueRef mask = op->nargs > 1 && op->args[1] ? elem(g, op->args[1], idx) : NULL;
        if (mask && LLVMIsAConstantInt(mask) && LLVMConstIntGetZExtValue(mask))
            mask = NULL;
        LLVMValueRef other = op->nargs > 2 && op->args[2] ? elem(g, op->args[2], idx) : NULL;
        mask = bounds_mask(g, val->def_op, op->args[0], ptr, t, mask);
        return masked_load(g, t, ptr, mask, other, op->is_volatile);
    }
    default:
        break;
    }
    if ((op->code >= TJI_ADD && op->code <= TJI_ADDPTR) || (op->code >= TJI_NEG && op->code <= TJI_CAST)) {
        LLVMValueRef a[3] = {0};
        for (int i = 0; i < op->nargs && i < 3; i++)
            a[i] = elem(g, op->args[i], idx);
        return emit_elementwise(g, op, a);
    }
    fail(g, "internal: value %d of op '%s' is read but was not computed", (int)id,
         tji_opcode_name(op->code));
    return LLVMGetPoison(value_type(g, t));
}

/* The element of any value at idx (idx has the value's rank; NULL for scalars). */
static LLVMValueRef elem(codegen *g, int32_t id, LLVMValueRef *idx)
{
    const tji_type *t = tji_typeof(g->fn, id);
    if (id == g->true_mask)
        return LLVMConstInt(g->t_i1, 1, 0);
    if (t->rank == 0) {
        if (!g->ssa[id]) {
            fail(g, "internal: scalar %d used before it is defined", (int)id);
            g->ssa[id] = LLVMGetPoison(value_type(g, t));
        }
        return g->ssa[id];
    }
    LLVMValueRef v = memo_find(g, id, t->rank, idx);
    if (v)
        return v;
    if (g->slot[id] >= 0)
        v = load_elem(g, g->slot[id], t, idx);
    else
        v = def_elem(g, id, idx);
    memo_add(g, id, t->rank, idx, v);
    return v;
}

/* Fills the array at offset (of type t) with the elements of value src. */
static void copy_value_to(codegen *g, int64_t offset, int32_t src)
{
    const tji_type *t = tji_typeof(g->fn, src);
    if (g->slot[src] == offset)
        return;
    if (g->slot[src] >= 0) {
        LLVMBuildMemCpy(g->b, scratch_at(g, offset), 64, scratch_at(g, g->slot[src]), 64,
                        c_i64(g, numel_of(t) * (int64_t)value_mem_size(t)));
        return;
    }
    nest n;
    LLVMValueRef idx[TJ_MAX_RANK];
    nest_begin(g, &n, t->rank, t->shape, idx);
    store_elem(g, offset, t, idx, def_elem(g, src, idx));
    nest_end(g, &n);
}

/* --- ops ----------------------------------------------------------------------- */

static void emit_region(codegen *g, int32_t rid, const tji_op **yield);

/* Branch on cond (if not NULL) into a block; returns the block to continue in. */
static LLVMBasicBlockRef guard_begin(codegen *g, LLVMValueRef cond, const char *name)
{
    if (!cond)
        return NULL;
    LLVMBasicBlockRef then = new_block(g, name), cont = new_block(g, "cont");
    LLVMBuildCondBr(g->b, cond, then, cont);
    LLVMPositionBuilderAtEnd(g->b, then);
    return cont;
}

static void guard_end(codegen *g, LLVMBasicBlockRef cont)
{
    if (!cont)
        return;
    LLVMBuildBr(g->b, cont);
    LLVMPositionBuilderAtEnd(g->b, cont);
}

static void emit_materialized(codegen *g, int32_t id)
{
    const tji_type *t = tji_typeof(g->fn, id);
    nest n;
    LLVMValueRef idx[TJ_MAX_RANK];
    nest_begin(g, &n, t->rank, t->shape, idx);
    LLVMValueRef v = def_elem(g, id, idx);
    if (g->slot[id] >= 0)
        store_elem(g, g->slot[id], t, idx, v);
    nest_end(g, &n);
}

static void emit_store_nest(codegen *g, const tji_op *op)
{
    const tji_type *pt = tji_typeof(g->fn, op->args[0]);
    const tji_type *vt = tji_typeof(g->fn, op->args[1]);
    nest n;
    LLVMValueRef idx[TJ_MAX_RANK];
    nest_begin(g, &n, pt->rank, pt->shape, idx);
    LLVMValueRef mask = op->nargs > 2 && op->args[2] ? elem(g, op->args[2], idx) : NULL;
    if (mask && LLVMIsAConstantInt(mask) && LLVMConstIntGetZExtValue(mask))
        mask = NULL;
    LLVMValueRef ptr = elem(g, op->args[0], idx);
    mask = bounds_mask(g, (int32_t)(op - g->fn->ops), op->args[0], ptr, vt, mask);
    size_t mark = memo_mark(g);
    LLVMBasicBlockRef cont = guard_begin(g, mask, "store");
    LLVMValueRef v = elem(g, op->args[1], idx);
    LLVMValueRef st = LLVMBuildStore(g->b, tjj_ls_to_mem(&g->ls, v, vt), ptr);
    LLVMSetAlignment(st, (unsigned)value_mem_size(vt));
    memo_release(g, mark);
    guard_end(g, cont);
    nest_end(g, &n);
}

/* A mask computed from indices and scalars only (no loads), so evaluating
 * it once more is cheap and has no effect. */
static int mask_is_arithmetic(const codegen *g, int32_t id, int depth)
{
    const tji_value *v = tji_val(g->fn, id);
    if (v->type.rank == 0 || g->slot[id] >= 0)
        return 1;
    if (v->def_op < 0 || depth > 64)
        return 0;
    const tji_op *op = &g->fn->ops[v->def_op];
    if (op->code == TJI_LOAD)
        return 0;
    for (int i = 0; i < op->nargs; i++)
        if (op->args[i] && !mask_is_arithmetic(g, op->args[i], depth + 1))
            return 0;
    return 1;
}

static LLVMValueRef entry_alloca(codegen *g, LLVMTypeRef t, const char *name)
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

/* A masked store of a tile is emitted twice: a first loop checks whether the
 * whole mask is true (a vectorized and-reduction), and then either an
 * unmasked copy of the store loop runs, with every load under the same mask
 * unmasked too, or the masked loop does. Full tiles, the common case, then
 * use plain vector loads and stores; only ragged edges pay for masks. */
static void emit_store(codegen *g, const tji_op *op)
{
    int32_t mask = op->nargs > 2 ? op->args[2] : 0;
    const tji_type *pt = tji_typeof(g->fn, op->args[0]);
    if (!mask || pt->rank == 0 || g->true_mask || !mask_is_arithmetic(g, mask, 0)) {
        emit_store_nest(g, op);
        return;
    }
    LLVMValueRef all = entry_alloca(g, g->t_i1, "all");
    LLVMBuildStore(g->b, LLVMConstInt(g->t_i1, 1, 0), all);
    nest n;
    LLVMValueRef idx[TJ_MAX_RANK];
    nest_begin(g, &n, pt->rank, pt->shape, idx);
    LLVMValueRef m = elem(g, mask, idx);
    LLVMBuildStore(g->b, LLVMBuildAnd(g->b, LLVMBuildLoad2(g->b, g->t_i1, all, ""), m, ""), all);
    nest_end(g, &n);
    LLVMBasicBlockRef full = new_block(g, "full"), ragged = new_block(g, "ragged"), done = new_block(g, "stored");
    LLVMBuildCondBr(g->b, LLVMBuildLoad2(g->b, g->t_i1, all, ""), full, ragged);
    LLVMPositionBuilderAtEnd(g->b, full);
    g->true_mask = mask;
    emit_store_nest(g, op);
    g->true_mask = 0;
    LLVMBuildBr(g->b, done);
    LLVMPositionBuilderAtEnd(g->b, ragged);
    emit_store_nest(g, op);
    LLVMBuildBr(g->b, done);
    LLVMPositionBuilderAtEnd(g->b, done);
}

/* A compare-and-swap loop for 16-bit float atomics, done in f32. */
static LLVMValueRef atomic_half_loop(codegen *g, tj_atomic_op aop, tj_dtype dt, LLVMValueRef ptr,
                                     LLVMValueRef v)
{
    LLVMTypeRef it = g->t_i16;
    LLVMValueRef start = LLVMBuildLoad2(g->b, it, ptr, "");
    LLVMSetAlignment(start, 2);
    LLVMSetOrdering(start, LLVMAtomicOrderingMonotonic);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b), body = new_block(g, "cas");
    LLVMBuildBr(g->b, body);
    LLVMPositionBuilderAtEnd(g->b, body);
    LLVMValueRef old = LLVMBuildPhi(g->b, it, "");
    LLVMValueRef old_v = dt == TJ_F16 ? LLVMBuildBitCast(g->b, old, g->t_half, "") : old;
    LLVMValueRef x = tjj_ls_fext(&g->ls, old_v, dt), y = tjj_ls_fext(&g->ls, v, dt), r;
    switch (aop) {
    case TJ_ATOMIC_ADD: r = tjj_ls_fround(&g->ls, LLVMBuildFAdd(g->b, x, y, ""), dt); break;
    case TJ_ATOMIC_MAX: r = tjj_ls_fround(&g->ls, tjj_ls_intrinsic2(&g->ls, "llvm.maxnum", x, y), dt); break;
    case TJ_ATOMIC_MIN: r = tjj_ls_fround(&g->ls, tjj_ls_intrinsic2(&g->ls, "llvm.minnum", x, y), dt); break;
    default: r = v; break;
    }
    LLVMValueRef new_bits = dt == TJ_F16 ? LLVMBuildBitCast(g->b, r, it, "") : r;
    LLVMValueRef pair = LLVMBuildAtomicCmpXchg(g->b, ptr, old, new_bits, LLVMAtomicOrderingSequentiallyConsistent,
                                               LLVMAtomicOrderingSequentiallyConsistent, 0);
    LLVMValueRef seen = LLVMBuildExtractValue(g->b, pair, 0, "");
    LLVMValueRef ok = LLVMBuildExtractValue(g->b, pair, 1, "");
    LLVMBasicBlockRef body_end = LLVMGetInsertBlock(g->b), done = new_block(g, "cas.end");
    LLVMAddIncoming(old, &start, &pre, 1);
    LLVMAddIncoming(old, &seen, &body_end, 1);
    LLVMBuildCondBr(g->b, ok, done, body);
    LLVMPositionBuilderAtEnd(g->b, done);
    return dt == TJ_F16 ? LLVMBuildBitCast(g->b, seen, g->t_half, "") : seen;
}

static LLVMValueRef atomic_rmw(codegen *g, const tji_op *op, const tji_type *vt, LLVMValueRef ptr,
                               LLVMValueRef v)
{
    tj_dtype dt = vt->dtype;
    int is_float = tjs_dtype_is_float(dt), is_signed = tjs_dtype_is_signed(dt);
    if (is_half_float(dt))
        return atomic_half_loop(g, op->atomic, dt, ptr, v);
    LLVMAtomicRMWBinOp bop;
    switch (op->atomic) {
    case TJ_ATOMIC_ADD: bop = is_float ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd; break;
    case TJ_ATOMIC_MAX:
        bop = is_float ? LLVMAtomicRMWBinOpFMax : is_signed ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpUMax;
        break;
    case TJ_ATOMIC_MIN:
        bop = is_float ? LLVMAtomicRMWBinOpFMin : is_signed ? LLVMAtomicRMWBinOpMin : LLVMAtomicRMWBinOpUMin;
        break;
    default: bop = LLVMAtomicRMWBinOpXchg; break;
    }
    LLVMValueRef old = LLVMBuildAtomicRMW(g->b, bop, ptr, tjj_ls_to_mem(&g->ls, v, vt),
                                          LLVMAtomicOrderingSequentiallyConsistent, 0);
    return tjj_ls_from_mem(&g->ls, old, vt);
}

static void emit_atomic(codegen *g, const tji_op *op)
{
    const tji_func *fn = g->fn;
    const tji_type *pt = tji_typeof(fn, op->args[0]);
    const tji_type *rt = tji_typeof(fn, op->result);
    int is_cas = op->code == TJI_ATOMIC_CAS;
    nest n;
    LLVMValueRef idx[TJ_MAX_RANK];
    nest_begin(g, &n, pt->rank, pt->shape, idx);
    LLVMValueRef mask = !is_cas && op->nargs > 2 && op->args[2] ? elem(g, op->args[2], idx) : NULL;
    LLVMValueRef ptr = elem(g, op->args[0], idx);
    mask = bounds_mask(g, (int32_t)(op - fn->ops), op->args[0], ptr, rt, mask);
    size_t mark = memo_mark(g);
    LLVMBasicBlockRef before = LLVMGetInsertBlock(g->b);
    LLVMBasicBlockRef cont = guard_begin(g, mask, "atomic");
    LLVMValueRef old;
    if (is_cas) {
        LLVMValueRef cmp = tjj_ls_to_mem(&g->ls, elem(g, op->args[1], idx), rt);
        LLVMValueRef v = tjj_ls_to_mem(&g->ls, elem(g, op->args[2], idx), rt);
        if (tjs_dtype_is_float(rt->dtype)) { /* cmpxchg compares bits */
            LLVMTypeRef it = LLVMIntTypeInContext(g->ctx, (unsigned)tjs_dtype_bits(rt->dtype));
            cmp = LLVMBuildBitCast(g->b, cmp, it, "");
            v = LLVMBuildBitCast(g->b, v, it, "");
        }
        LLVMValueRef pair = LLVMBuildAtomicCmpXchg(g->b, ptr, cmp, v, LLVMAtomicOrderingSequentiallyConsistent,
                                                   LLVMAtomicOrderingSequentiallyConsistent, 0);
        old = LLVMBuildExtractValue(g->b, pair, 0, "");
        if (tjs_dtype_is_float(rt->dtype))
            old = LLVMBuildBitCast(g->b, old, tjj_ls_mem_type(&g->ls, rt->dtype), "");
        old = tjj_ls_from_mem(&g->ls, old, rt);
    } else {
        old = atomic_rmw(g, op, tji_typeof(fn, op->args[1]), ptr, elem(g, op->args[1], idx));
    }
    memo_release(g, mark);
    if (cont) {
        LLVMBasicBlockRef then_end = LLVMGetInsertBlock(g->b);
        guard_end(g, cont);
        LLVMValueRef phi = LLVMBuildPhi(g->b, value_type(g, rt), "");
        LLVMValueRef vals[2] = {old, LLVMConstNull(value_type(g, rt))};
        LLVMBasicBlockRef blocks[2] = {then_end, before};
        LLVMAddIncoming(phi, vals, blocks, 2);
        old = phi;
    }
    if (rt->rank == 0)
        g->ssa[op->result] = old;
    else if (g->slot[op->result] >= 0)
        store_elem(g, g->slot[op->result], rt, idx, old);
    nest_end(g, &n);
}

/* Reductions: loop over the result's indices, inner loop along the axis. */
static void emit_reduce(codegen *g, const tji_op *op)
{
    const tji_func *fn = g->fn;
    int32_t x = op->args[0];
    const tji_type *xt = tji_typeof(fn, x), *rt = tji_typeof(fn, op->result);
    tj_dtype dt = xt->dtype;
    int axis = op->axis, len = xt->shape[axis];
    int is_float = tjs_dtype_is_float(dt), is_signed = tjs_dtype_is_signed(dt);
    int is_arg = op->reduce == TJ_REDUCE_ARGMAX || op->reduce == TJ_REDUCE_ARGMIN;
    int is_max = op->reduce == TJ_REDUCE_MAX || op->reduce == TJ_REDUCE_ARGMAX;
    LLVMTypeRef acc_t = tjj_ls_compute_type(&g->ls, dt), float_t = acc_t;
    /* float max/min/argmax/argmin compare order keys, as signed integers */
    int by_key = is_float && op->reduce != TJ_REDUCE_SUM;
    if (by_key) {
        acc_t = acc_t == g->t_double ? g->t_i64 : g->t_i32;
        is_float = 0, is_signed = 1;
    }
#define ELEMENT(v) (by_key ? tjj_ls_order_key(&g->ls, (v), is_max, op->propagate_nan) : (v))

    nest n;
    LLVMValueRef oidx[TJ_MAX_RANK], xidx[TJ_MAX_RANK];
    nest_begin(g, &n, rt->rank, rt->shape, oidx);
    for (int d = 0, s = 0; d < xt->rank; d++)
        xidx[d] = d == axis ? c_i64(g, 0) : oidx[s++];
    LLVMValueRef acc = ELEMENT(tjj_ls_fext(&g->ls, elem(g, x, xidx), dt)), best = c_i32(g, 0);
    if (len > 1) {
        size_t mark = memo_mark(g);
        LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b), header = new_block(g, "reduce");
        LLVMBuildBr(g->b, header);
        LLVMPositionBuilderAtEnd(g->b, header);
        LLVMValueRef k = LLVMBuildPhi(g->b, g->t_i64, "k");
        LLVMValueRef acc_phi = LLVMBuildPhi(g->b, acc_t, "acc");
        LLVMValueRef best_phi = is_arg ? LLVMBuildPhi(g->b, g->t_i32, "best") : NULL;
        LLVMValueRef one = c_i64(g, 1);
        LLVMAddIncoming(k, &one, &pre, 1);
        LLVMAddIncoming(acc_phi, &acc, &pre, 1);
        if (is_arg)
            LLVMAddIncoming(best_phi, &best, &pre, 1);
        xidx[axis] = k;
        LLVMValueRef v = ELEMENT(tjj_ls_fext(&g->ls, elem(g, x, xidx), dt)), next_acc, next_best = NULL;
        switch (op->reduce) {
        case TJ_REDUCE_SUM:
            if (is_float) {
                next_acc = LLVMBuildFAdd(g->b, acc_phi, v, "");
                /* Any order is a valid sum order (a GPU adds as a tree):
                 * let LLVM vectorize it. */
                LLVMSetFastMathFlags(next_acc, LLVMFastMathAllowReassoc);
            } else {
                next_acc = LLVMBuildAdd(g->b, acc_phi, v, "");
            }
            break;
        case TJ_REDUCE_MAX:
            next_acc = tjj_ls_intrinsic2(&g->ls, is_signed ? "llvm.smax" : "llvm.umax", acc_phi, v);
            break;
        case TJ_REDUCE_MIN:
            next_acc = tjj_ls_intrinsic2(&g->ls, is_signed ? "llvm.smin" : "llvm.umin", acc_phi, v);
            break;
        default: { /* strictly better: the first extreme element wins */
            LLVMValueRef better = LLVMBuildICmp(g->b, is_max ? (is_signed ? LLVMIntSGT : LLVMIntUGT)
                                                             : (is_signed ? LLVMIntSLT : LLVMIntULT),
                                                v, acc_phi, "");
            next_acc = LLVMBuildSelect(g->b, better, v, acc_phi, "");
            next_best = LLVMBuildSelect(g->b, better, LLVMBuildTrunc(g->b, k, g->t_i32, ""), best_phi, "");
            break;
        }
        }
        LLVMValueRef next_k = add_nuw(g, k, one);
        LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b), exit = new_block(g, "reduce.end");
        LLVMAddIncoming(k, &next_k, &latch, 1);
        LLVMAddIncoming(acc_phi, &next_acc, &latch, 1);
        if (is_arg)
            LLVMAddIncoming(best_phi, &next_best, &latch, 1);
        LLVMValueRef br = LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntULT, next_k, c_i64(g, len), ""),
                                          header, exit);
        /* argmax/argmin: see the top of the file */
        if (is_arg)
            set_loop_hints(g, br, loop_hints(g, 1));
        else if (g->no_unroll)
            set_loop_hints(g, br, g->no_unroll);
        LLVMPositionBuilderAtEnd(g->b, exit);
        acc = next_acc;
        best = next_best;
        memo_release(g, mark);
    }
#undef ELEMENT
    if (by_key && !is_arg)
        acc = tjj_ls_from_order_key(&g->ls, acc, float_t, is_max, op->propagate_nan);
    LLVMValueRef result = is_arg ? best : is_float || by_key ? tjj_ls_fround(&g->ls, acc, dt) : acc;
    if (rt->rank == 0)
        g->ssa[op->result] = result;
    else if (g->slot[op->result] >= 0)
        store_elem(g, g->slot[op->result], rt, oidx, result);
    nest_end(g, &n);
}

/* Inclusive prefix sum: sequential along the axis. */
static void emit_cumsum(codegen *g, const tji_op *op)
{
    const tji_func *fn = g->fn;
    int32_t x = op->args[0];
    const tji_type *t = tji_typeof(fn, op->result);
    tj_dtype dt = t->dtype;
    int axis = op->axis, len = t->shape[axis];
    int is_float = tjs_dtype_is_float(dt);
    int32_t outer[TJ_MAX_RANK];
    memcpy(outer, t->shape, sizeof outer);
    outer[axis] = 1;
    nest n;
    LLVMValueRef idx[TJ_MAX_RANK];
    nest_begin(g, &n, t->rank, outer, idx);
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b), header = new_block(g, "cumsum");
    LLVMBuildBr(g->b, header);
    LLVMPositionBuilderAtEnd(g->b, header);
    LLVMValueRef k = LLVMBuildPhi(g->b, g->t_i64, "k");
    LLVMValueRef acc = LLVMBuildPhi(g->b, tjj_ls_compute_type(&g->ls, dt), "acc");
    LLVMValueRef zero = c_i64(g, 0), acc0 = LLVMConstNull(tjj_ls_compute_type(&g->ls, dt));
    LLVMAddIncoming(k, &zero, &pre, 1);
    LLVMAddIncoming(acc, &acc0, &pre, 1);
    size_t mark = memo_mark(g);
    idx[axis] = k;
    LLVMValueRef v = tjj_ls_fext(&g->ls, elem(g, x, idx), dt);
    LLVMValueRef next = is_float ? LLVMBuildFAdd(g->b, acc, v, "") : LLVMBuildAdd(g->b, acc, v, "");
    if (g->slot[op->result] >= 0)
        store_elem(g, g->slot[op->result], t, idx, is_float ? tjj_ls_fround(&g->ls, next, dt) : next);
    memo_release(g, mark);
    LLVMValueRef next_k = add_nuw(g, k, c_i64(g, 1));
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b), exit = new_block(g, "cumsum.end");
    LLVMAddIncoming(k, &next_k, &latch, 1);
    LLVMAddIncoming(acc, &next, &latch, 1);
    LLVMBuildCondBr(g->b, LLVMBuildICmp(g->b, LLVMIntULT, next_k, c_i64(g, len), ""), header, exit);
    LLVMPositionBuilderAtEnd(g->b, exit);
    nest_end(g, &n);
}

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

static void emit_print(codegen *g, const tji_op *op)
{
    int32_t x = op->args[0];
    const tji_type *t = tji_typeof(g->fn, x);
    LLVMValueRef data;
    if (t->rank == 0) {
        data = entry_alloca(g, g->t_i64, "print"); /* holds any scalar */
        LLVMBuildStore(g->b, tjj_ls_to_mem(&g->ls, g->ssa[x], t), data);
    } else if (g->slot[x] >= 0) {
        data = scratch_at(g, g->slot[x]);
    } else {
        fail(g, "internal: printed tile has no storage");
        return;
    }
    LLVMTypeRef params[12] = {g->t_ptr, g->t_ptr, g->t_i32, g->t_i32, g->t_i32, g->t_i32,
                              g->t_ptr, g->t_i32, g->t_i32, g->t_i32, g->t_i32, g->t_i32};
    LLVMTypeRef fty;
    LLVMValueRef f = runtime_fn(g, "tjj_rt_print", g->t_void, params, 12, &fty);
    tj_dtype dt = t->is_ptr ? TJ_U64 : t->dtype;
    LLVMValueRef args[12] = {g->rt, global_string(g, op->str), g->pid[0], g->pid[1], g->pid[2],
                             c_i32(g, dt), data, c_i32(g, t->rank)};
    for (int d = 0; d < TJ_MAX_RANK; d++)
        args[8 + d] = c_i32(g, d < t->rank ? t->shape[d] : 1);
    LLVMBuildCall2(g->b, fty, f, args, 12, "");
}

/* A false element reports the failure and ends this program instance. */
static void emit_assert(codegen *g, const tji_op *op)
{
    const tji_type *t = tji_typeof(g->fn, op->args[0]);
    LLVMValueRef msg = global_string(g, op->str), file = global_string(g, op->loc.file);
    nest n;
    LLVMValueRef idx[TJ_MAX_RANK];
    nest_begin(g, &n, t->rank, t->shape, idx);
    LLVMValueRef ok = elem(g, op->args[0], t->rank ? idx : NULL);
    LLVMBasicBlockRef bad = new_block(g, "assert.fail"), cont = new_block(g, "assert.ok");
    LLVMBuildCondBr(g->b, ok, cont, bad);
    LLVMPositionBuilderAtEnd(g->b, bad);
    LLVMTypeRef params[7] = {g->t_ptr, g->t_ptr, g->t_ptr, g->t_i32, g->t_i32, g->t_i32, g->t_i32};
    LLVMTypeRef fty;
    LLVMValueRef f = runtime_fn(g, "tjj_rt_assert_fail", g->t_void, params, 7, &fty);
    LLVMValueRef args[7] = {g->rt, msg, file, c_i32(g, op->loc.line), g->pid[0], g->pid[1], g->pid[2]};
    LLVMBuildCall2(g->b, fty, f, args, 7, "");
    LLVMBuildRetVoid(g->b);
    LLVMPositionBuilderAtEnd(g->b, cont);
    nest_end(g, &n);
}

static int is_const_op(const codegen *g, int32_t id, int64_t *value)
{
    const tji_value *v = tji_val(g->fn, id);
    if (v->def_op < 0 || g->fn->ops[v->def_op].code != TJI_CONST)
        return 0;
    *value = g->fn->ops[v->def_op].ival;
    return 1;
}

static void emit_for(codegen *g, int32_t opi)
{
    const tji_func *fn = g->fn;
    const tji_op *op = &fn->ops[opi];
    const tji_region *reg = &fn->regions[op->region[0]];
    int ncarried = op->nargs - 3;
    tj_dtype dt = tji_typeof(fn, op->args[0])->dtype;
    int is_signed = tjs_dtype_is_signed(dt);
    LLVMValueRef lo = g->ssa[op->args[0]], hi = g->ssa[op->args[1]], step = g->ssa[op->args[2]];
    LLVMTypeRef it = LLVMTypeOf(lo);
    LLVMValueRef zero = LLVMConstNull(it);

    /* Tile carried values start in the slots of the block arguments. */
    for (int k = 0; k < ncarried; k++) {
        int32_t arg = reg->args[1 + k];
        if (rank_of(g, arg) > 0)
            copy_value_to(g, g->slot[arg], op->args[3 + k]);
    }
    LLVMValueRef up = is_signed ? LLVMBuildICmp(g->b, LLVMIntSGT, step, zero, "")
                                : LLVMBuildICmp(g->b, LLVMIntNE, step, zero, "");
    LLVMValueRef down = is_signed ? LLVMBuildICmp(g->b, LLVMIntSLT, step, zero, "")
                                  : LLVMConstNull(g->t_i1);
    LLVMValueRef enter = LLVMBuildSelect(
        g->b, up, LLVMBuildICmp(g->b, is_signed ? LLVMIntSLT : LLVMIntULT, lo, hi, ""),
        LLVMBuildSelect(g->b, down, LLVMBuildICmp(g->b, LLVMIntSGT, lo, hi, ""), LLVMConstNull(g->t_i1), ""),
        "");
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(g->b);
    LLVMBasicBlockRef body = new_block(g, "for"), exit = new_block(g, "for.end");
    LLVMBuildCondBr(g->b, enter, body, exit);

    LLVMPositionBuilderAtEnd(g->b, body);
    LLVMValueRef iv = LLVMBuildPhi(g->b, it, "iv");
    LLVMAddIncoming(iv, &lo, &pre, 1);
    g->ssa[reg->args[0]] = iv;
    LLVMValueRef *phis = tjs_xcalloc((size_t)ncarried + 1, sizeof(LLVMValueRef));
    for (int k = 0; k < ncarried; k++) {
        int32_t arg = reg->args[1 + k];
        if (rank_of(g, arg) > 0)
            continue;
        phis[k] = LLVMBuildPhi(g->b, value_type(g, tji_typeof(fn, arg)), "");
        LLVMAddIncoming(phis[k], &g->ssa[op->args[3 + k]], &pre, 1);
        g->ssa[arg] = phis[k];
    }

    const tji_op *yield = NULL;
    emit_region(g, op->region[0], &yield);
    g->cur_op = opi;
    if (!yield || yield->nargs != ncarried) {
        fail(g, "internal: loop body does not end with a yield of %d values", ncarried);
        free(phis);
        LLVMBuildBr(g->b, exit);
        LLVMPositionBuilderAtEnd(g->b, exit);
        return;
    }
    /* Tile yields: through temporaries when a yielded value is another
     * carried array, so that yield(b, a) swaps. */
    int64_t *temps = g->yield_temps[opi];
    for (int k = 0; k < ncarried; k++) {
        int32_t arg = reg->args[1 + k];
        if (rank_of(g, arg) > 0)
            copy_value_to(g, temps ? temps[k] : g->slot[arg], yield->args[k]);
    }
    if (temps)
        for (int k = 0; k < ncarried; k++) {
            int32_t arg = reg->args[1 + k];
            const tji_type *t = tji_typeof(fn, arg);
            if (t->rank > 0)
                LLVMBuildMemCpy(g->b, scratch_at(g, g->slot[arg]), 64, scratch_at(g, temps[k]), 64,
                                c_i64(g, numel_of(t) * (int64_t)value_mem_size(t)));
        }

    /* Next iteration; the test cannot overflow. */
    int64_t cstep;
    LLVMValueRef next, more;
    if (is_const_op(g, op->args[2], &cstep) && (cstep == 1 || (cstep == -1 && is_signed))) {
        next = LLVMBuildAdd(g->b, iv, step, "");
        if (is_signed)
            LLVMSetNSW(next, 1);
        else
            LLVMSetNUW(next, 1);
        more = LLVMBuildICmp(g->b, cstep == 1 ? (is_signed ? LLVMIntSLT : LLVMIntULT) : LLVMIntSGT,
                             next, hi, "");
    } else {
        next = LLVMBuildAdd(g->b, iv, step, "");
        LLVMValueRef left_up = LLVMBuildSub(g->b, hi, iv, ""), left_down = LLVMBuildSub(g->b, iv, hi, "");
        more = LLVMBuildSelect(g->b, up, LLVMBuildICmp(g->b, LLVMIntUGT, left_up, step, ""),
                               LLVMBuildICmp(g->b, LLVMIntUGT, left_down, LLVMBuildSub(g->b, zero, step, ""), ""),
                               "");
    }
    LLVMBasicBlockRef latch = LLVMGetInsertBlock(g->b);
    LLVMAddIncoming(iv, &next, &latch, 1);
    for (int k = 0; k < ncarried; k++)
        if (phis[k])
            LLVMAddIncoming(phis[k], &g->ssa[yield->args[k]], &latch, 1);
    LLVMBuildCondBr(g->b, more, body, exit);

    LLVMPositionBuilderAtEnd(g->b, exit);
    for (int k = 0; k < ncarried; k++) {
        if (!phis[k])
            continue;
        LLVMValueRef r = LLVMBuildPhi(g->b, LLVMTypeOf(phis[k]), "");
        LLVMValueRef vals[2] = {g->ssa[op->args[3 + k]], g->ssa[yield->args[k]]};
        LLVMBasicBlockRef blocks[2] = {pre, latch};
        LLVMAddIncoming(r, vals, blocks, 2);
        g->ssa[op->result + k] = r;
    }
    free(phis);
}

static void emit_if(codegen *g, int32_t opi)
{
    const tji_func *fn = g->fn;
    const tji_op *op = &fn->ops[opi];
    int n = op->nresults;
    LLVMBasicBlockRef arms[2], ends[2], merge = new_block(g, "if.end");
    arms[0] = new_block(g, "then");
    arms[1] = new_block(g, "else");
    LLVMBuildCondBr(g->b, g->ssa[op->args[0]], arms[0], arms[1]);
    LLVMValueRef *vals = tjs_xcalloc((size_t)(2 * n + 1), sizeof(LLVMValueRef));
    for (int arm = 0; arm < 2; arm++) {
        LLVMPositionBuilderAtEnd(g->b, arms[arm]);
        const tji_op *yield = NULL;
        if (op->region[arm] >= 0)
            emit_region(g, op->region[arm], &yield);
        g->cur_op = opi;
        if (n > 0 && (!yield || yield->nargs != n)) {
            fail(g, "internal: branch does not end with a yield of %d values", n);
        } else {
            for (int k = 0; k < n; k++) {
                int32_t r = op->result + k;
                if (rank_of(g, r) > 0)
                    copy_value_to(g, g->slot[r], yield->args[k]);
                else
                    vals[arm * n + k] = g->ssa[yield->args[k]];
            }
        }
        ends[arm] = LLVMGetInsertBlock(g->b);
        LLVMBuildBr(g->b, merge);
    }
    LLVMPositionBuilderAtEnd(g->b, merge);
    for (int k = 0; k < n; k++) {
        int32_t r = op->result + k;
        if (rank_of(g, r) > 0)
            continue;
        LLVMTypeRef t = value_type(g, tji_typeof(fn, r));
        LLVMValueRef phi = LLVMBuildPhi(g->b, t, "");
        LLVMValueRef in[2] = {vals[k] ? vals[k] : LLVMGetPoison(t), vals[n + k] ? vals[n + k] : LLVMGetPoison(t)};
        LLVMAddIncoming(phi, in, ends, 2);
        g->ssa[r] = phi;
    }
    free(vals);
}

static int pure_op(const tji_op *op)
{
    switch (op->code) {
    case TJI_STORE: case TJI_ATOMIC: case TJI_ATOMIC_CAS: case TJI_PRINT: case TJI_ASSERT:
    case TJI_FOR: case TJI_IF: case TJI_YIELD:
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
    case TJI_STORE: emit_store(g, op); return;
    case TJI_ATOMIC: case TJI_ATOMIC_CAS: emit_atomic(g, op); return;
    case TJI_REDUCE:
        if (rank_of(g, op->result) == 0 || g->slot[op->result] >= 0)
            emit_reduce(g, op);
        return;
    case TJI_CUMSUM:
        if (g->slot[op->result] >= 0)
            emit_cumsum(g, op);
        return;
    case TJI_PRINT: emit_print(g, op); return;
    case TJI_ASSERT: emit_assert(g, op); return;
    case TJI_FOR: emit_for(g, opi); return;
    case TJI_IF: emit_if(g, opi); return;
    case TJI_YIELD: return; /* read by the FOR or IF around it */
    default: break;
    }
    if (op->nresults != 1) {
        fail(g, "internal: op with %d results", (int)op->nresults);
        return;
    }
    int32_t id = op->result;
    if (rank_of(g, id) == 0) {
        g->ssa[id] = def_elem(g, id, NULL);
        return;
    }
    if (!g->plan->materialize[id])
        return; /* fused: computed where it is read */
    if (g->slot[id] >= 0 || !pure_op(op))
        emit_materialized(g, id);
}

static void emit_region(codegen *g, int32_t rid, const tji_op **yield)
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

/* Every materialized tile that is read gets an array; block arguments and IF
 * results always do (they are written by yields), FOR results share their
 * block arguments' arrays. */
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
        if (v->def_op < 0 || code == TJI_IF || g->plan->uses[id] > 0)
            g->slot[id] = take_scratch(g, &v->type);
    }
    for (int32_t i = 0; i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        if (op->code != TJI_FOR || op->region[0] < 0)
            continue;
        const tji_region *reg = &fn->regions[op->region[0]];
        int swap = 0;
        for (int k = 0; k + 1 < reg->nargs && k < op->nresults; k++)
            g->slot[op->result + k] = g->slot[reg->args[1 + k]];
        const tji_op *yield = reg->nops > 0 ? &fn->ops[reg->ops[reg->nops - 1]] : NULL;
        if (!yield || yield->code != TJI_YIELD)
            continue;
        for (int k = 0; k < yield->nargs; k++)
            for (int j = 1; j < reg->nargs; j++)
                if (yield->args[k] == reg->args[j] && j != k + 1 && rank_of(g, reg->args[j]) > 0)
                    swap = 1;
        if (!swap)
            continue;
        g->yield_temps[i] = tjs_xcalloc((size_t)yield->nargs + 1, sizeof(int64_t));
        for (int k = 0; k < yield->nargs && k + 1 < reg->nargs; k++)
            if (rank_of(g, reg->args[1 + k]) > 0)
                g->yield_temps[i][k] = take_scratch(g, tji_typeof(fn, reg->args[1 + k]));
    }
}

/* --- the kernel function ------------------------------------------------------ */

static LLVMTypeRef abi_type(const codegen *g, const tji_param *p)
{
    if (p->is_ptr)
        return g->t_ptr;
    switch (p->dtype) {
    case TJ_I1: return g->t_i8;
    case TJ_F16: case TJ_BF16: return g->t_i16;
    default: return tjj_ls_dtype_type(&g->ls, p->dtype);
    }
}

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
    int np = fn->nparams, nall = np + 8;
    LLVMTypeRef *params = tjs_xcalloc((size_t)nall, sizeof(LLVMTypeRef));
    for (int i = 0; i < np; i++)
        params[i] = abi_type(g, &fn->params[i]);
    for (int i = 0; i < 6; i++)
        params[np + i] = g->t_i32;
    params[np + 6] = params[np + 7] = g->t_ptr;
    LLVMTypeRef fty = LLVMFunctionType(g->t_void, params, (unsigned)nall, 0);
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
    for (int i = 0; i < np; i++) {
        const tji_param *p = &fn->params[i];
        LLVMValueRef v = LLVMGetParam(g->func, (unsigned)i);
        if (!p->is_ptr && p->dtype == TJ_I1)
            v = LLVMBuildICmp(g->b, LLVMIntNE, v, LLVMConstNull(g->t_i8), "");
        else if (!p->is_ptr && p->dtype == TJ_F16)
            v = LLVMBuildBitCast(g->b, v, g->t_half, "");
        if (p->value > 0 && p->value <= fn->nvalues)
            g->ssa[p->value] = v;
    }
    if (fn->check_bounds)
        g->bounds = tjj_bounds_new_cpu(fn, g->ctx, g->b, g->ssa, g->rt, g->pid);
    const tji_op *yield = NULL;
    emit_region(g, 0, &yield);
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
    LLVMTypeRef *program_params = tjs_xcalloc((size_t)np + 8, sizeof(LLVMTypeRef));
    LLVMGetParamTypes(program_ty, program_params);
    for (int i = 0; i < np; i++)
        params[i] = program_params[i];
    params[np] = params[np + 1] = g->t_i64;
    params[np + 2] = params[np + 3] = params[np + 4] = g->t_i32;
    params[np + 5] = params[np + 6] = g->t_ptr;
    LLVMValueRef run = LLVMAddFunction(g->mod, symbol, LLVMFunctionType(g->t_void, params, (unsigned)nall, 0));
    free(params);
    add_attr(g, run, LLVMAttributeFunctionIndex, "nounwind", 0);
    add_string_attr(g, run, "target-cpu", target->cpu);
    add_string_attr(g, run, "target-features", target->features);
    prefer_vector_width(g, run);

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
    LLVMValueRef n0 = LLVMBuildZExt(g->b, LLVMGetParam(run, (unsigned)np + 2), g->t_i64, "");
    LLVMValueRef n1 = LLVMBuildZExt(g->b, LLVMGetParam(run, (unsigned)np + 3), g->t_i64, "");
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
    LLVMValueRef i = LLVMBuildPhi(g->b, g->t_i64, "");
    LLVMValueRef p0 = LLVMBuildPhi(g->b, g->t_i64, "pid0");
    LLVMValueRef p1 = LLVMBuildPhi(g->b, g->t_i64, "pid1");
    LLVMValueRef p2 = LLVMBuildPhi(g->b, g->t_i64, "pid2");
    LLVMValueRef g0 = LLVMBuildPhi(g->b, g->t_i64, "group0");
    LLVMValueRef *args = tjs_xcalloc((size_t)np + 8, sizeof(LLVMValueRef));
    for (int k = 0; k < np; k++)
        args[k] = LLVMGetParam(run, (unsigned)k);
    args[np] = LLVMBuildTrunc(g->b, p0, g->t_i32, "");
    args[np + 1] = LLVMBuildTrunc(g->b, p1, g->t_i32, "");
    args[np + 2] = LLVMBuildTrunc(g->b, p2, g->t_i32, "");
    for (int k = 0; k < 3; k++)
        args[np + 3 + k] = LLVMGetParam(run, (unsigned)(np + 2 + k));
    args[np + 6] = LLVMGetParam(run, (unsigned)np + 5);
    args[np + 7] = LLVMGetParam(run, (unsigned)np + 6);
    LLVMBuildCall2(g->b, program_ty, g->func, args, (unsigned)np + 8, "");
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
    codegen g = {.fn = fn, .plan = plan, .ctx = ctx, .cur_op = -1, .status = TJ_OK};
    g.t_void = LLVMVoidTypeInContext(ctx);
    g.t_i1 = LLVMInt1TypeInContext(ctx);
    g.t_i8 = LLVMInt8TypeInContext(ctx);
    g.t_i16 = LLVMInt16TypeInContext(ctx);
    g.t_i32 = LLVMInt32TypeInContext(ctx);
    g.t_i64 = LLVMInt64TypeInContext(ctx);
    g.t_half = LLVMHalfTypeInContext(ctx);
    g.t_float = LLVMFloatTypeInContext(ctx);
    g.t_double = LLVMDoubleTypeInContext(ctx);
    g.t_ptr = LLVMPointerTypeInContext(ctx, 0);
    g.ssa = tjs_xcalloc((size_t)fn->nvalues + 1, sizeof(LLVMValueRef));
    g.slot = tjs_xcalloc((size_t)fn->nvalues + 1, sizeof(int64_t));
    g.yield_temps = tjs_xcalloc((size_t)fn->nops + 1, sizeof(int64_t *));

    g.mod = LLVMModuleCreateWithNameInContext(symbol, ctx);
    LLVMSetTarget(g.mod, target->triple);
    LLVMSetDataLayout(g.mod, target->data_layout);
    g.b = LLVMCreateBuilderInContext(ctx);
    g.ls = (tjj_ls){ctx, g.mod, g.b, g.t_i1, g.t_i8, g.t_i16, g.t_i32, g.t_i64, g.t_half, g.t_float, g.t_double};
    layout_scratch(&g);
    set_large_kernel_loops(&g);
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
