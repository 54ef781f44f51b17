/* SPDX-License-Identifier: MIT */
/*
 * cpu_rows.c — the row walk: a 2-D tile's rows interleaved across programs.
 *
 * A kernel that copies a 2-D tile per program (a strided view, a gather,
 * an element-wise map of a matrix) touches one piece of each of the tile's
 * rows in every program: a 16 x 64 f32 tile is 16 rows of 256 bytes (more
 * for a strided source), and the next program along the row continues all
 * 16 at once. On the CPU this was measured on (AMD Zen 4) that is past
 * what the hardware prefetcher follows — it behaves as if it kept about
 * eight streams: the same 16 x 64 loop nest written in C ran at 0.33-0.41
 * of a loop streaming whole rows, 8- and 4-row tiles at 0.9-1.1 (RESULTS.md,
 * issue 8). Walking the programs in another order cannot help, since each
 * program opens all of its tile's rows, and software prefetches of the next
 * tile, tried in C, gained nothing consistent.
 *
 * So a kernel of that kind is run differently: the entry point walks a run
 * of consecutive programs along the program id that continues the rows
 * (row_walk_pid), and calls the program once per slice of
 * TJJ_CPU_ROW_SLICE rows for every program of the run, before the next
 * slice: a thread then streams a few rows at a time, as a C loop over rows
 * does. Each program still computes every element of its tile exactly once,
 * its rows in their order; only programs' rows interleave, which programs,
 * being independent (they run concurrently on every back end), allow.
 *
 * Which kernels (tjj_cpu_plan_row_walk): structurally, those whose whole
 * work is one store of a 2-D tile computed element by element in its loop
 * nest — no array in scratch, no control flow, reduction, scan, atomic,
 * print, assert, scalar or volatile load, not bounds-checked (whose first
 * reported lane follows program order) — so that a program run in slices
 * does what it does whole. Then, from the address arithmetic, those where
 * rows are the memory's direction: the store is contiguous along the
 * tile's last dim, one program id moves it by exactly the tile's width
 * (the walk's id), and no load is walked by a constant step down the tile's
 * rows (a transpose's source is: its rows are the memory's columns, and it
 * stays in the grouped walk of build_runner). The address analysis only
 * chooses the order; results do not depend on it.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu_codegen.h"

/* --- how an address moves with the tile's indices and the program ids ---- */

/* How a value changes when one index (a tile dim or a program id) steps
 * by 1: not at all, by a compile-time constant, by a run-time invariant,
 * or in a way this analysis does not follow. */
typedef enum coef_kind { COEF_ZERO, COEF_CONST, COEF_RUNTIME, COEF_OPAQUE } coef_kind;

typedef struct coef {
    coef_kind kind;
    int64_t k; /* COEF_CONST */
} coef;

typedef struct lin {
    coef dim[TJ_MAX_RANK], pid[3];
    int known;     /* an invariant of compile-time value `value` */
    int64_t value;
} lin;

/* The analysis visits a DAG; past this many visits it gives up. */
enum { LIN_BUDGET = 4096 };

static coef coef_sum(coef a, coef b, int negate_b)
{
    if (b.kind == COEF_ZERO)
        return a;
    if (a.kind == COEF_ZERO)
        return b.kind == COEF_CONST && negate_b ? (coef){COEF_CONST, -b.k} : b;
    if (a.kind == COEF_OPAQUE || b.kind == COEF_OPAQUE)
        return (coef){COEF_OPAQUE, 0};
    int64_t k;
    if (a.kind == COEF_CONST && b.kind == COEF_CONST &&
        !(negate_b ? __builtin_sub_overflow(a.k, b.k, &k) : __builtin_add_overflow(a.k, b.k, &k)))
        return k ? (coef){COEF_CONST, k} : (coef){COEF_ZERO, 0};
    return (coef){COEF_RUNTIME, 0};
}

/* c scaled by the invariant s. */
static coef coef_scale(coef c, const lin *s)
{
    if (c.kind == COEF_OPAQUE)
        return c;
    if (c.kind == COEF_ZERO || (s->known && s->value == 0))
        return (coef){COEF_ZERO, 0};
    int64_t k;
    if (c.kind == COEF_CONST && s->known && !__builtin_mul_overflow(c.k, s->value, &k))
        return (coef){COEF_CONST, k};
    return (coef){COEF_RUNTIME, 0};
}

static int lin_invariant(const lin *l)
{
    for (int d = 0; d < TJ_MAX_RANK; d++)
        if (l->dim[d].kind != COEF_ZERO)
            return 0;
    for (int p = 0; p < 3; p++)
        if (l->pid[p].kind != COEF_ZERO)
            return 0;
    return 1;
}

static lin lin_opaque(void)
{
    lin l = {0};
    for (int d = 0; d < TJ_MAX_RANK; d++)
        l.dim[d].kind = COEF_OPAQUE;
    for (int p = 0; p < 3; p++)
        l.pid[p].kind = COEF_OPAQUE;
    return l;
}

static lin lin_of(const tji_func *fn, int32_t id, int *budget);

static lin lin_combine(const tji_func *fn, const tji_op *op, int *budget)
{
    lin a = lin_of(fn, op->args[0], budget), b = lin_of(fn, op->args[1], budget), r = {0};
    switch (op->code) {
    case TJI_ADD: case TJI_SUB: case TJI_ADDPTR: {
        int neg = op->code == TJI_SUB;
        for (int d = 0; d < TJ_MAX_RANK; d++)
            r.dim[d] = coef_sum(a.dim[d], b.dim[d], neg);
        for (int p = 0; p < 3; p++)
            r.pid[p] = coef_sum(a.pid[p], b.pid[p], neg);
        r.known = a.known && b.known && op->code != TJI_ADDPTR &&
                  !(neg ? __builtin_sub_overflow(a.value, b.value, &r.value)
                        : __builtin_add_overflow(a.value, b.value, &r.value));
        return r;
    }
    case TJI_MUL: case TJI_SHL: {
        if (op->code == TJI_SHL) {
            if (!b.known || b.value < 0 || b.value > 30)
                return lin_opaque();
            b.value = (int64_t)1 << b.value;
        }
        const lin *s = lin_invariant(&b) ? &b : op->code == TJI_MUL && lin_invariant(&a) ? &a : NULL;
        if (!s)
            return lin_opaque();
        const lin *x = s == &b ? &a : &b;
        for (int d = 0; d < TJ_MAX_RANK; d++)
            r.dim[d] = coef_scale(x->dim[d], s);
        for (int p = 0; p < 3; p++)
            r.pid[p] = coef_scale(x->pid[p], s);
        r.known = a.known && b.known && !__builtin_mul_overflow(a.value, b.value, &r.value);
        return r;
    }
    default:
        return lin_opaque();
    }
}

/* The coefficients of value id (an integer or pointer, scalar or tile) in
 * its own dims and the program ids. */
static lin lin_of(const tji_func *fn, int32_t id, int *budget)
{
    lin r = {0};
    const tji_value *v = tji_val(fn, id);
    if (--*budget < 0)
        return lin_opaque();
    if (v->def_op < 0)
        return r; /* a parameter or block argument: invariant */
    const tji_op *op = &fn->ops[v->def_op];
    switch (op->code) {
    case TJI_CONST:
        r.known = !tjs_dtype_is_float(v->type.dtype);
        r.value = op->ival;
        return r;
    case TJI_PROGRAM_ID:
        r.pid[op->axis].kind = COEF_CONST;
        r.pid[op->axis].k = 1;
        return r;
    case TJI_NUM_PROGRAMS:
        return r;
    case TJI_ARANGE:
        r.dim[0].kind = COEF_CONST;
        r.dim[0].k = 1;
        return r;
    case TJI_SPLAT: case TJI_BROADCAST: case TJI_EXPAND_DIMS: case TJI_PERMUTE: case TJI_CAST:
    case TJI_ASSUME: case TJI_CONVERT: {
        const tji_type *xt = tji_typeof(fn, op->args[0]);
        if (op->code == TJI_CAST && (xt->is_ptr || v->type.is_ptr) &&
            (xt->is_ptr != v->type.is_ptr || tjs_dtype_bits(xt->dtype) != tjs_dtype_bits(v->type.dtype)))
            return lin_opaque(); /* steps of another size: bytes, or other elements */
        lin a = lin_of(fn, op->args[0], budget);
        r = a;
        memset(r.dim, 0, sizeof r.dim);
        for (int d = 0; d < v->type.rank; d++) {
            int from = op->code == TJI_SPLAT ? -1
                     : op->code == TJI_EXPAND_DIMS ? (d < op->axis ? d : d > op->axis ? d - 1 : -1)
                     : op->code == TJI_PERMUTE ? op->perm[d] : d;
            if (from >= 0 && from < xt->rank && xt->shape[from] != 1)
                r.dim[d] = a.dim[from];
        }
        return r;
    }
    case TJI_ADD: case TJI_SUB: case TJI_MUL: case TJI_SHL: case TJI_ADDPTR:
        return lin_combine(fn, op, budget);
    default:
        return lin_opaque();
    }
}

/* --- which kernels --------------------------------------------------------- */

/* Does any load feeding value id (a tile whose dims are the store nest's
 * dims map[]: -1 where a dim is none of them) step by a compile-time
 * constant as the nest's row (dim 0) steps? */
static int load_walks_rows(const tji_func *fn, int32_t id, const int *map, int *budget)
{
    const tji_value *v = tji_val(fn, id);
    if (--*budget < 0)
        return 1;
    if (v->type.rank == 0 || v->def_op < 0)
        return 0;
    const tji_op *op = &fn->ops[v->def_op];
    if (op->code == TJI_LOAD) {
        lin l = lin_of(fn, op->args[0], budget);
        for (int d = 0; d < v->type.rank; d++)
            if (map[d] == 0 && v->type.shape[d] != 1 && l.dim[d].kind == COEF_CONST)
                return 1;
    }
    for (int i = 0; i < op->nargs; i++) {
        const tji_type *at = op->args[i] ? tji_typeof(fn, op->args[i]) : NULL;
        if (!at || at->rank == 0)
            continue;
        int amap[TJ_MAX_RANK];
        for (int d = 0; d < at->rank; d++)
            amap[d] = op->code == TJI_EXPAND_DIMS ? map[d < op->axis ? d : d + 1]
                    : op->code == TJI_RESHAPE ? -1 : map[d];
        if (op->code == TJI_PERMUTE)
            for (int d = 0; d < v->type.rank; d++)
                amap[op->perm[d]] = map[d];
        if (load_walks_rows(fn, op->args[i], amap, budget))
            return 1;
    }
    return 0;
}

/* The one store of a kernel that is nothing but that store (see the top),
 * or -1. */
static int32_t only_store(const codegen *g)
{
    const tji_func *fn = g->fn;
    const tji_region *body = &fn->regions[0];
    int32_t store = -1;
    if (fn->check_bounds || g->scratch_bytes > 0)
        return -1;
    for (int32_t i = 0; i < body->nops; i++) {
        const tji_op *op = &fn->ops[body->ops[i]];
        switch (op->code) {
        case TJI_STORE:
            if (store >= 0)
                return -1;
            store = body->ops[i];
            break;
        case TJI_LOAD:
            if (op->is_volatile || tji_typeof(fn, op->result)->rank == 0)
                return -1;
            break;
        case TJI_ATOMIC: case TJI_ATOMIC_CAS: case TJI_REDUCE: case TJI_CUMSUM: case TJI_DOT:
        case TJI_FOR: case TJI_IF: case TJI_WHILE: case TJI_PRINT: case TJI_ASSERT: case TJI_ASSUME_TRUE:
        case TJI_BARRIER:
            return -1;
        default:
            break;
        }
    }
    return store;
}

void tjj_cpu_plan_row_walk(codegen *g)
{
    const tji_func *fn = g->fn;
    int32_t s = only_store(g);
    if (s < 0)
        return;
    const tji_op *store = &fn->ops[s];
    const tji_type *pt = tji_typeof(fn, store->args[0]);
    if (pt->rank != 2 || pt->shape[0] <= TJJ_CPU_ROW_SLICE)
        return;
    int budget = LIN_BUDGET;
    lin addr = lin_of(fn, store->args[0], &budget);
    if (addr.dim[1].kind != COEF_CONST || addr.dim[1].k != 1)
        return;
    int walk = -1;
    for (int p = 1; p >= 0 && walk < 0; p--)
        if (addr.pid[p].kind == COEF_CONST && addr.pid[p].k == pt->shape[1])
            walk = p;
    const int map[TJ_MAX_RANK] = {0, 1, -1, -1};
    if (walk < 0 || load_walks_rows(fn, store->args[1], map, &budget) ||
        (store->nargs > 2 && store->args[2] && load_walks_rows(fn, store->args[2], map, &budget)))
        return;
    g->row_store = s;
    g->row_walk_pid = walk;
}

/* --- the entry point ----------------------------------------------------------- */

static LLVMValueRef umin_i64(LLVMBuilderRef b, LLVMValueRef x, LLVMValueRef y)
{
    return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, x, y, ""), x, y, "");
}

/* Programs first .. first+count-1 of the order in which the walk's id is
 * fastest, the other of pid0/pid1 next, pid2 slowest, cut into runs along
 * the walk's id; for each run, each slice of rows for every program of the
 * run. The ids of `first` come by division; then they step. */
void tjj_cpu_build_row_walk(codegen *g, LLVMValueRef run, LLVMTypeRef program_ty)
{
    LLVMBuilderRef b = g->b;
    int np = g->fn->nparams, w = g->row_walk_pid, o = 1 - w;
    int64_t rows = tji_typeof(g->fn, g->fn->ops[g->row_store].args[0])->shape[0];
    int64_t nslices = (rows + TJJ_CPU_ROW_SLICE - 1) / TJJ_CPU_ROW_SLICE;
    LLVMTypeRef i64 = g->ty.t_i64;
    LLVMValueRef one = c_i64(g, 1), zero = c_i64(g, 0);
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(g->ctx, run, "entry");
    LLVMBasicBlockRef start = LLVMAppendBasicBlockInContext(g->ctx, run, "start");
    LLVMBasicBlockRef run_bb = LLVMAppendBasicBlockInContext(g->ctx, run, "run");
    LLVMBasicBlockRef slice_bb = LLVMAppendBasicBlockInContext(g->ctx, run, "slice");
    LLVMBasicBlockRef prog_bb = LLVMAppendBasicBlockInContext(g->ctx, run, "program");
    LLVMBasicBlockRef slice_end = LLVMAppendBasicBlockInContext(g->ctx, run, "slice.end");
    LLVMBasicBlockRef run_end = LLVMAppendBasicBlockInContext(g->ctx, run, "run.end");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, run, "done");

    LLVMPositionBuilderAtEnd(b, entry);
    LLVMValueRef first = LLVMGetParam(run, (unsigned)np), count = LLVMGetParam(run, (unsigned)np + 1);
    LLVMValueRef end = LLVMBuildAdd(b, first, count, "");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, first, end, ""), start, done);

    LLVMPositionBuilderAtEnd(b, start);
    LLVMValueRef nw = LLVMBuildZExt(b, LLVMGetParam(run, (unsigned)(np + 2 + w)), i64, "");
    LLVMValueRef no = LLVMBuildZExt(b, LLVMGetParam(run, (unsigned)(np + 2 + o)), i64, "");
    LLVMValueRef rest0 = LLVMBuildUDiv(b, first, nw, "");
    LLVMValueRef w_first = LLVMBuildURem(b, first, nw, "");
    LLVMValueRef o_first = LLVMBuildURem(b, rest0, no, ""), p2_first = LLVMBuildUDiv(b, rest0, no, "");
    LLVMBuildBr(b, run_bb);

    /* a run: the programs of one (other id, pid2) from i on; the first
     * starts where `first` is, every later one at walk id 0 */
    LLVMPositionBuilderAtEnd(b, run_bb);
    LLVMValueRef i = LLVMBuildPhi(b, i64, "i"), w0 = LLVMBuildPhi(b, i64, "w0");
    LLVMValueRef po = LLVMBuildPhi(b, i64, "other"), p2 = LLVMBuildPhi(b, i64, "pid2");
    LLVMValueRef pid[3];
    pid[o] = LLVMBuildTrunc(b, po, g->ty.t_i32, "");
    pid[2] = LLVMBuildTrunc(b, p2, g->ty.t_i32, "");
    LLVMValueRef len = umin_i64(b, LLVMBuildSub(b, nw, w0, ""), LLVMBuildSub(b, end, i, ""));
    LLVMBuildBr(b, slice_bb);

    LLVMPositionBuilderAtEnd(b, slice_bb);
    LLVMValueRef s = LLVMBuildPhi(b, i64, "slice");
    LLVMValueRef lo = LLVMBuildMul(b, s, c_i64(g, TJJ_CPU_ROW_SLICE), "");
    LLVMValueRef hi = umin_i64(b, LLVMBuildAdd(b, lo, c_i64(g, TJJ_CPU_ROW_SLICE), ""), c_i64(g, rows));
    LLVMBuildBr(b, prog_bb);

    LLVMPositionBuilderAtEnd(b, prog_bb);
    LLVMValueRef k = LLVMBuildPhi(b, i64, "k");
    pid[w] = LLVMBuildTrunc(b, LLVMBuildAdd(b, w0, k, ""), g->ty.t_i32, "");
    LLVMValueRef *args = tjs_xcalloc((size_t)np + 10, sizeof(LLVMValueRef));
    for (int a = 0; a < np; a++)
        args[a] = LLVMGetParam(run, (unsigned)a);
    for (int a = 0; a < 3; a++) {
        args[np + a] = pid[a];
        args[np + 3 + a] = LLVMGetParam(run, (unsigned)(np + 2 + a));
    }
    args[np + 6] = LLVMGetParam(run, (unsigned)np + 5);
    args[np + 7] = LLVMGetParam(run, (unsigned)np + 6);
    args[np + 8] = lo;
    args[np + 9] = hi;
    LLVMBuildCall2(b, program_ty, g->func, args, (unsigned)np + 10, "");
    free(args);
    LLVMValueRef k_next = LLVMBuildAdd(b, k, one, "");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, k_next, len, ""), prog_bb, slice_end);

    LLVMPositionBuilderAtEnd(b, slice_end);
    LLVMValueRef s_next = LLVMBuildAdd(b, s, one, "");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, s_next, c_i64(g, nslices), ""), slice_bb, run_end);

    LLVMPositionBuilderAtEnd(b, run_end);
    LLVMValueRef i_next = LLVMBuildAdd(b, i, len, "");
    LLVMValueRef po_inc = LLVMBuildAdd(b, po, one, "");
    LLVMValueRef wrap = LLVMBuildICmp(b, LLVMIntUGE, po_inc, no, "");
    LLVMValueRef po_next = LLVMBuildSelect(b, wrap, zero, po_inc, "");
    LLVMValueRef p2_next = LLVMBuildSelect(b, wrap, LLVMBuildAdd(b, p2, one, ""), p2, "");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntSLT, i_next, end, ""), run_bb, done);

    LLVMValueRef vi[2] = {first, i_next}, vs[2] = {zero, s_next}, vk[2] = {zero, k_next};
    LLVMValueRef vw[2] = {w_first, zero}, vo[2] = {o_first, po_next}, v2[2] = {p2_first, p2_next};
    LLVMBasicBlockRef fi[2] = {start, run_end}, fs[2] = {run_bb, slice_end}, fk[2] = {slice_bb, prog_bb};
    LLVMAddIncoming(i, vi, fi, 2);
    LLVMAddIncoming(w0, vw, fi, 2);
    LLVMAddIncoming(po, vo, fi, 2);
    LLVMAddIncoming(p2, v2, fi, 2);
    LLVMAddIncoming(s, vs, fs, 2);
    LLVMAddIncoming(k, vk, fk, 2);

    LLVMPositionBuilderAtEnd(b, done);
    LLVMBuildRetVoid(b);
}
