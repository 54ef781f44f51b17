/* SPDX-License-Identifier: MIT */
/*
 * test_layout_assign.c — the GPU layout pass on real kernels.
 *
 * Each kernel is built, given layouts for 1, 2, 4 and 8 warps, verified,
 * and checked slot by slot (tjp_check_layouts: every op's operands hold,
 * register for register, what the op needs). Where the answer is known, the
 * number and kind of layout conversions is checked too: none for element-wise
 * kernels, one through shared memory for a transpose. Everything runs twice:
 * with loads and stores anchored at the default layouts, and at the layouts
 * of the coalescing pass (coalesce.c). A corrupted plan must be caught, so
 * the checker can fail.
 */
#include <stdlib.h>
#include <string.h>

#include "builder/ir.h"
#include "jit/pipeline.h"
#include "passes/passes.h"
#include "tap.h"

TJ_KERNEL(vadd, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32), TJ_PTR(out, f32), TJ_SCALAR(n, i32)),
          TJ_CONSTS(BLOCK))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val mask = tj_lt(offs, n);
    tj_val a = tj_load(tj_add(x, offs), .mask = mask);
    tj_val b = tj_load(tj_add(y, offs), .mask = mask);
    tj_store(tj_add(out, offs), tj_add(a, b), .mask = mask);
}

TJ_KERNEL(transpose, TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(m, i32), TJ_SCALAR(n, i32)),
          TJ_CONSTS(B))
{
    tj_val rows = tj_add(tj_mul(tj_program_id(0), B), tj_arange(0, B));
    tj_val cols = tj_add(tj_mul(tj_program_id(1), B), tj_arange(0, B));
    tj_val r = tj_expand_dims(rows, 1), c = tj_expand_dims(cols, 0);
    tj_val in_mask = tj_and(tj_lt(r, m), tj_lt(c, n));
    tj_val tile = tj_load(tj_add(src, tj_add(tj_mul(r, n), c)), .mask = in_mask);
    tj_val rt = tj_expand_dims(rows, 0), ct = tj_expand_dims(cols, 1);
    tj_val out_mask = tj_and(tj_lt(rt, m), tj_lt(ct, n));
    tj_store(tj_add(dst, tj_add(tj_mul(ct, m), rt)), tj_trans(tile), .mask = out_mask);
}

TJ_KERNEL(softmax, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32), TJ_SCALAR(n, i32)), TJ_CONSTS(BLOCK))
{
    tj_val row = tj_program_id(0), cols = tj_arange(0, BLOCK);
    tj_val mask = tj_lt(cols, n);
    tj_val v = tj_load(tj_add(x, tj_add(tj_mul(row, n), cols)), .mask = mask,
                       .other = tj_f32(-1e30));
    tj_val e = tj_exp(tj_sub(v, tj_max(v, 0)));
    tj_store(tj_add(y, tj_add(tj_mul(row, n), cols)), tj_div(e, tj_sum(e, 0)), .mask = mask);
}

/* Row sums of a 2-D tile, a broadcast back, a loop with a carried tile and a
 * reshape: the shape-changing ops together. */
TJ_KERNEL(mixed, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32), TJ_SCALAR(iters, i32)), TJ_CONSTS(M, N))
{
    tj_val r = tj_expand_dims(tj_arange(0, M), 1), c = tj_expand_dims(tj_arange(0, N), 0);
    tj_val tile = tj_load(tj_add(x, tj_add(tj_mul(r, N), c)));
    tj_val acc = tj_zeros(TJ_SHAPE(M, N), TJ_F32);
    TJ_FOR(k, 0, iters, 1, &acc) {
        tj_val sums = tj_sum(tile, 1);
        acc = tj_add(acc, tj_mul(tj_expand_dims(sums, 1), tj_cast(k, TJ_F32)));
        TJ_IF(tj_gt(k, 2), &acc) { acc = tj_sub(acc, tile); }
    }
    tj_val flat = tj_reshape(tj_permute(tj_reshape(acc, TJ_SHAPE(M, N / 2, 2)), TJ_SHAPE(0, 2, 1)),
                             TJ_SHAPE(M * N));
    tj_store(tj_add(y, tj_arange(0, M * N)), flat);
    tj_store(tj_add(y, tj_arange(0, M)), tj_argmax(tile, 1));
}

/* Independently of the pass's own checker: the operand of each 2-D PERMUTE
 * holds, in every slot, the transposed element of the result's slot. */
static int permutes_hold(const tji_func *fn, const tjp_layout_plan *plan)
{
    int seen = 0;
    for (int32_t i = 0; i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        if (op->parent < 0 || op->code != TJI_PERMUTE)
            continue;
        const tjp_layout *R = &plan->of[op->result], *X = &plan->of[op->args[0]];
        if (memcmp(R->nbits, X->nbits, sizeof R->nbits))
            return 0;
        for (uint32_t w = 0; w < 1u << R->nbits[TJP_WARP]; w++)
            for (uint32_t l = 0; l < 1u << R->nbits[TJP_LANE]; l++)
                for (uint32_t r = 0; r < 1u << R->nbits[TJP_REG]; r++) {
                    uint32_t e = tjp_layout_apply(R, r, l, w), f = tjp_layout_apply(X, r, l, w);
                    uint32_t row = e / (uint32_t)R->shape[1], col = e % (uint32_t)R->shape[1];
                    if (f != col * (uint32_t)X->shape[1] + row)
                        return 0;
                }
        seen++;
    }
    return seen > 0;
}

static int count_ops(const tji_func *fn, tji_opcode code)
{
    int n = 0;
    for (int32_t i = 0; i < fn->nops; i++)
        n += fn->ops[i].parent >= 0 && fn->ops[i].code == code;
    return n;
}

/* Whether assigned() anchors accesses at the coalescing pass's layouts
 * (axis info for 16-byte aligned pointers) or at the default ones. */
static int coalescing;

/* Builds, assigns, verifies and checks; returns the function (or NULL). */
static tji_func *assigned(const tj_kernel *k, const int64_t *consts, int nconsts, int warps,
                          tjp_layout_plan *plan)
{
    tji_func *fn;
    if (tji_build(k, consts, nconsts, &fn) != TJ_OK) {
        tap_diag("build: %s", tj_last_error());
        return NULL;
    }
    tjj_gpu_target target = {.num_warps = warps, .spec = tjj_spec_of_buffers(k),
                             .default_layouts = !coalescing};
    tjj_gpu_planned planned;
    tj_status st = tjj_gpu_plan(fn, &target, &planned);
    *plan = planned.plan;
    planned.plan = (tjp_layout_plan){0};
    tjj_gpu_planned_free(&planned);
    if (st != TJ_OK) {
        tap_diag("%s", tj_last_error());
        tjp_layout_plan_free(plan);
        tji_func_free(fn);
        return NULL;
    }
    return fn;
}

int main(void)
{
    static const int warps[] = {1, 2, 4, 8};
    for (int run = 0; run < 8; run++) {
        int w = run % 4;
        coalescing = run >= 4;
        if (w == 0)
            tap_diag("layouts %s coalescing", coalescing ? "with" : "without");
        tjp_layout_plan plan;
        int64_t block = 1024;
        tji_func *fn = assigned(vadd, &block, 1, warps[w], &plan);
        tap_ok(fn && count_ops(fn, TJI_CONVERT) == 0,
               "vector add, %d warps: layouts check, no conversion", warps[w]);
        if (fn) {
            tjp_layout_plan_free(&plan);
            tji_func_free(fn);
        }

        int64_t tb = 32;
        fn = assigned(transpose, &tb, 1, warps[w], &plan);
        int shared = 0, converts = 0;
        for (int32_t i = 0; fn && i < fn->nops; i++)
            if (fn->ops[i].parent >= 0 && fn->ops[i].code == TJI_CONVERT) {
                converts++;
                shared += tjp_layout_conversion(&plan.of[fn->ops[i].args[0]],
                                                &plan.of[fn->ops[i].result]) == TJP_CONVERT_SHARED;
            }
        /* With one warp every element is within the warp: shuffles would do. */
        tap_ok(fn && permutes_hold(fn, &plan), "transpose, %d warps: the permuted tile's slots hold the transposed elements", warps[w]);
        tap_ok(fn && converts == 1 && shared == (warps[w] > 1),
               "transpose 32x32, %d warps: one conversion, %s (%d, %d)", warps[w],
               warps[w] > 1 ? "through shared memory" : "within the warp", converts, shared);
        if (fn) {
            tjp_layout_plan_free(&plan);
            tji_func_free(fn);
        }

        int64_t sb = 4096;
        fn = assigned(softmax, &sb, 1, warps[w], &plan);
        tap_ok(fn && count_ops(fn, TJI_CONVERT) == 0,
               "softmax row of 4096, %d warps: layouts check, no conversion", warps[w]);
        if (fn) {
            tjp_layout_plan_free(&plan);
            tji_func_free(fn);
        }

        int64_t mn[2] = {16, 64};
        fn = assigned(mixed, mn, 2, warps[w], &plan);
        tap_ok(fn != NULL, "reduce, broadcast, loop, if, reshape and permute, %d warps", warps[w]);
        if (fn) {
            tjp_layout_plan_free(&plan);
            tji_func_free(fn);
        }
    }

    /* The checker must catch a plan that puts an operand in the wrong place. */
    tjp_layout_plan plan;
    int64_t block = 256;
    tji_func *fn = assigned(vadd, &block, 1, 4, &plan);
    int caught = 0;
    for (int32_t i = 0; fn && i < fn->nops && !caught; i++) {
        tji_op *op = &fn->ops[i];
        if (op->parent >= 0 && op->code == TJI_ADD && tji_typeof(fn, op->result)->dtype == TJ_F32) {
            tjp_layout *L = &plan.of[op->args[0]];
            uint32_t t = L->basis[TJP_LANE][0]; /* swap two lane bits */
            L->basis[TJP_LANE][0] = L->basis[TJP_LANE][1];
            L->basis[TJP_LANE][1] = t;
            caught = tjp_check_layouts(fn, &plan) != TJ_OK;
        }
    }
    tap_ok(caught, "a plan with an operand in the wrong lanes is rejected");
    if (fn) {
        tjp_layout_plan_free(&plan);
        tji_func_free(fn);
    }

    /* The checker tests one slot per input bit (the layouts are linear);
     * a wrong operand of each shape-changing op must still be caught: for
     * every such operand, two of its distinct basis vectors swapped. */
    static const tji_opcode shape_ops[] = {TJI_BROADCAST, TJI_EXPAND_DIMS, TJI_PERMUTE, TJI_RESHAPE, TJI_MUL};
    int64_t mn[2] = {16, 64};
    fn = assigned(mixed, mn, 2, 4, &plan);
    for (size_t c = 0; c < sizeof shape_ops / sizeof shape_ops[0]; c++) {
        int tried = 0, missed = 0;
        for (int32_t i = 0; fn && i < fn->nops; i++) {
            tji_op *op = &fn->ops[i];
            if (op->parent < 0 || op->code != shape_ops[c] || tji_typeof(fn, op->args[0])->rank == 0)
                continue;
            tjp_layout *L = &plan.of[op->args[0]], saved = *L;
            uint32_t *first = NULL, *second = NULL;
            for (int in = 0; in < TJP_NIN && !second; in++)
                for (int b = 0; b < L->nbits[in] && !second; b++) {
                    uint32_t *v = &L->basis[in][b];
                    if (!first && *v)
                        first = v;
                    else if (first && *v && *v != *first)
                        second = v;
                }
            if (!second)
                continue;
            uint32_t t = *first;
            *first = *second, *second = t;
            tried++;
            missed += tjp_check_layouts(fn, &plan) == TJ_OK;
            tjs_clear_error();
            *L = saved;
        }
        tap_ok(fn && tried > 0 && missed == 0 && tjp_check_layouts(fn, &plan) == TJ_OK,
               "%s: %d operands with two basis vectors swapped, %d missed by the checker; restored, the plan "
               "checks",
               tji_opcode_name(shape_ops[c]), tried, missed);
    }
    if (fn) {
        tjp_layout_plan_free(&plan);
        tji_func_free(fn);
    }
    return tap_done();
}
