/* SPDX-License-Identifier: MIT */
/*
 * test_shared_plan.c — shared memory and barriers as the plan's decisions
 * (src/passes/alloc_shared.c, barriers.c), and dynamic shared memory.
 *
 *  - Offsets: in kernels with several steps through shared memory (a
 *    transpose, a scan, a reduction across warps, an argmax with its index
 *    buffer), the buffers of one step (live at once) do not overlap, every
 *    buffer lies inside the allocation, each step's size is what its tile
 *    needs (counted here from the shapes), and the allocation is the
 *    largest step (steps of different ops are never live at once).
 *  - Barriers: each step has one between its writes and its reads; the
 *    first step outside loops needs none before its writes, every later one
 *    and every one in a loop does; an in-place reversal has one before its
 *    store (the plan and the PTX agree, tests/ptx_barriers.h), vector add
 *    none at all.
 *  - A transpose needing 64 KiB compiles to PTX with one extern shared
 *    array aligned to 1024 bytes, which ptxas accepts (make check sets
 *    TJIT_PTXAS, and tj_kernel_ptx assembles what it returns).
 *  - A transpose needing 256 KiB, more than any GPU gives a block, is a
 *    compile error naming the kernel and the size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder/ir.h"
#include "jit/pipeline.h"
#include "passes/passes.h"
#include "ptx_barriers.h"

TJ_KERNEL(transpose, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32)), TJ_CONSTS(T))
{
    tj_val r = tj_expand_dims(tj_arange(0, T), 1), c = tj_expand_dims(tj_arange(0, T), 0);
    tj_val v = tj_load(tj_add(x, tj_add(tj_mul(r, T), c)));
    tj_store(tj_add(y, tj_add(tj_mul(c, T), r)), v);
}

/* A transpose, then a column argmax across warps and a scan. */
TJ_KERNEL(several, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32), TJ_PTR(z, i32)), TJ_CONSTS(T))
{
    tj_val r = tj_expand_dims(tj_arange(0, T), 1), c = tj_expand_dims(tj_arange(0, T), 0);
    tj_val v = tj_load(tj_add(x, tj_add(tj_mul(r, T), c)));
    tj_store(tj_add(y, tj_add(tj_mul(c, T), r)), v);
    tj_store(tj_add(z, tj_arange(0, T)), tj_argmax(v, 0));
    tj_val o = tj_arange(0, T * T);
    tj_store(tj_add(y, o), tj_cumsum(tj_load(tj_add(x, o)), 0));
}

TJ_KERNEL(scan_loop, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32), TJ_SCALAR(n, i32)), TJ_CONSTS(N))
{
    TJ_FOR(k, 0, n, 1) {
        tj_val o = tj_add(tj_mul(k, N), tj_arange(0, N));
        tj_store(tj_add(y, o), tj_cumsum(tj_load(tj_add(x, o)), 0));
    }
}

TJ_KERNEL(reverse_in_place, TJ_PARAMS(TJ_PTR(x, f32)), TJ_CONSTS(N))
{
    tj_val o = tj_arange(0, N);
    tj_val v = tj_load(tj_add(x, o));
    tj_store(tj_add(x, tj_sub(N - 1, o)), v);
}

TJ_KERNEL(vector_add, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32), TJ_PTR(out, f32)), TJ_CONSTS(N))
{
    tj_val o = tj_add(tj_mul(tj_program_id(0), N), tj_arange(0, N));
    tj_store(tj_add(out, o), tj_add(tj_load(tj_add(x, o)), tj_load(tj_add(y, o))));
}

/* fn built for T and its plan after every GPU pass up to the barriers
 * (coalescing included, which makes a transpose's load and store disagree). */
static tji_func *planned(const tj_kernel *k, int64_t t, int warps, tjp_layout_plan *plan)
{
    tji_func *fn = NULL;
    tjj_gpu_planned out = {0};
    memset(plan, 0, sizeof *plan);
    int ok = tji_build(k, &t, 1, &fn) == TJ_OK &&
             tjj_gpu_plan(fn, &(tjj_gpu_target){.num_warps = warps}, &out) == TJ_OK;
    *plan = out.plan;
    out.plan = (tjp_layout_plan){0};
    tjj_gpu_planned_free(&out);
    if (!ok) {
        tap_diag("%s: %s", k->name, tj_last_error());
        tjp_layout_plan_free(plan);
        tji_func_free(fn);
        return NULL;
    }
    return fn;
}

/* The ops with a step of kind, by op index. */
static int steps_of(const tji_func *fn, const tjp_layout_plan *plan, int kind, int32_t *out, int max)
{
    int n = 0;
    for (int32_t i = 0; i < fn->nops && n < max; i++)
        if (plan->shared[i].kind == kind)
            out[n++] = i;
    return n;
}

static int overlap(uint64_t a, uint64_t an, uint64_t b, uint64_t bn)
{
    return an && bn && a < b + bn && b < a + an;
}

static void test_offsets(void)
{
    enum { T = 64, WARPS = 4 };
    tjp_layout_plan plan;
    tji_func *fn = planned(several, T, WARPS, &plan);
    if (!fn) {
        tap_ok(0, "several: planned");
        return;
    }
    int32_t conv[4], red[4], scan[4];
    int nconv = steps_of(fn, &plan, TJP_STEP_CONVERT, conv, 4), nred = steps_of(fn, &plan, TJP_STEP_REDUCE, red, 4);
    int nscan = steps_of(fn, &plan, TJP_STEP_CUMSUM, scan, 4);
    tap_ok(nconv >= 1 && nred == 1 && nscan == 1, "several: %d conversions, %d reductions and %d scans go "
           "through shared memory (at least 1, 1, 1)", nconv, nred, nscan);
    uint64_t largest = 0;
    int inside = 1, sizes = 1;
    for (int32_t i = 0; i < fn->nops; i++) {
        const tjp_shared_step *s = &plan.shared[i];
        if (s->kind == TJP_STEP_NONE)
            continue;
        uint64_t end = s->offset + s->bytes;
        if (s->index_bytes && s->index_offset + s->index_bytes > end)
            end = s->index_offset + s->index_bytes;
        largest = end > largest ? end : largest;
        inside &= end <= plan.shared_bytes && s->bytes > 0;
        if (s->kind == TJP_STEP_CONVERT || s->kind == TJP_STEP_CUMSUM)
            sizes &= s->bytes == (uint64_t)tji_numel(tji_typeof(fn, fn->ops[i].args[0])) * 4;
    }
    tap_ok(inside, "several: every buffer lies inside the allocation of %llu bytes",
           (unsigned long long)plan.shared_bytes);
    tap_ok(sizes, "several: a conversion or scan of a tile of f32 takes 4 bytes per element");
    tap_ok(plan.shared_bytes == largest && plan.shared_bytes >= (uint64_t)T * T * 4,
           "several: the allocation (%llu bytes) is the largest step (%llu), at least the %d-byte transpose",
           (unsigned long long)plan.shared_bytes, (unsigned long long)largest, T * T * 4);
    if (nred == 1) {
        const tjp_shared_step *s = &plan.shared[red[0]];
        uint64_t slots = (uint64_t)s->use.parts * (uint64_t)s->use.numel;
        tap_ok(s->use.has_index && s->use.parts > 1 && s->bytes == slots * 4 && s->index_bytes == slots * 4,
               "argmax across warps: %d parts x %lld results, values and indices of 4 bytes each",
               s->use.parts, (long long)s->use.numel);
        tap_ok(!overlap(s->offset, s->bytes, s->index_offset, s->index_bytes) && s->index_offset % 4 == 0,
               "argmax: its value buffer (%llu..%llu) and index buffer (%llu..%llu), live at once, do not overlap",
               (unsigned long long)s->offset, (unsigned long long)(s->offset + s->bytes),
               (unsigned long long)s->index_offset, (unsigned long long)(s->index_offset + s->index_bytes));
    }
    /* barriers around the steps, in program order */
    int between = 1, first_free = 0, later_wait = 1, nsteps = 0;
    for (int32_t k = 0; k < fn->regions[0].nops; k++) {
        int32_t i = fn->regions[0].ops[k];
        if (plan.shared[i].kind == TJP_STEP_NONE)
            continue;
        between &= !!(plan.barrier[i] & TJP_BARRIER_SHARED_READ);
        if (nsteps++ == 0)
            first_free = !(plan.barrier[i] & TJP_BARRIER_SHARED_WRITE);
        else
            later_wait &= !!(plan.barrier[i] & TJP_BARRIER_SHARED_WRITE);
    }
    tap_ok(between && nsteps >= 3, "several: each of its %d steps has a barrier between its writes and reads", nsteps);
    tap_ok(first_free, "several: the first step needs no barrier before its writes (nothing read shared memory)");
    tap_ok(later_wait, "several: every later step waits for the readers of the one before (they share bytes)");
    tjp_layout_plan_free(&plan);
    tji_func_free(fn);
}

static void test_loop_and_order(void)
{
    tjp_layout_plan plan;
    tji_func *fn = planned(scan_loop, 256, 4, &plan);
    int32_t scan[2];
    int ok = fn && steps_of(fn, &plan, TJP_STEP_CUMSUM, scan, 2) == 1;
    tap_ok(ok && (plan.barrier[scan[0]] & TJP_BARRIER_SHARED_WRITE) && (plan.barrier[scan[0]] & TJP_BARRIER_SHARED_READ),
           "a scan in a loop waits before its writes (the previous trip read the buffer) and between");
    if (fn) {
        tjp_layout_plan_free(&plan);
        tji_func_free(fn);
    }

    fn = planned(reverse_in_place, 1024, 4, &plan);
    int store_waits = 0, load_waits = 1;
    for (int32_t i = 0; fn && i < fn->nops; i++) {
        if (fn->ops[i].code == TJI_STORE)
            store_waits = !!(plan.barrier[i] & TJP_BARRIER_BEFORE);
        if (fn->ops[i].code == TJI_LOAD)
            load_waits = !!(plan.barrier[i] & TJP_BARRIER_BEFORE);
    }
    tap_ok(fn && store_waits && !load_waits, "reversal in place: the plan puts a barrier before the store, none before the load");
    int64_t n = 1024;
    tap_ok(tl_barrier_between(reverse_in_place, NULL, 0, n) == 1, "reversal in place: its PTX has that barrier");
    if (fn) {
        tjp_layout_plan_free(&plan);
        tji_func_free(fn);
    }
    fn = planned(vector_add, 1024, 4, &plan);
    int any = 0;
    for (int32_t i = 0; fn && i < fn->nops; i++)
        any |= plan.barrier[i];
    tap_ok(fn && !any && plan.shared_bytes == 0, "vector add: no barrier and no shared memory in the plan");
    tap_ok(tl_barrier_between(vector_add, NULL, 0, n) == 0, "vector add: its PTX has no barrier between load and store");
    if (fn) {
        tjp_layout_plan_free(&plan);
        tji_func_free(fn);
    }
}

static void test_dynamic(void)
{
    int64_t t = 128; /* 128 x 128 f32: 64 KiB through shared memory */
    char *ptx = NULL;
    tj_status st = tj_kernel_ptx(transpose, &t, 1, "sm_90", 4, &ptx);
    tap_ok(st == TJ_OK && ptx && strstr(ptx, ".extern .shared .align 1024 .b8 tjk_shared[];") &&
               !strstr(ptx, ".shared .align 16"),
           "a 64 KiB transpose compiles to PTX with one dynamic shared array aligned to 1024 (%s)",
           tj_status_name(st));
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    const char *ptxas = getenv("TJIT_PTXAS");
    if (ptxas && *ptxas)
        tap_ok(st == TJ_OK, "ptxas (%s) accepts that PTX (tj_kernel_ptx assembled it)", ptxas);
    else
        tap_skip(1, "TJIT_PTXAS is not set: no ptxas to assemble the PTX");
    free(ptx);
    tjp_layout_plan plan;
    tji_func *fn = planned(transpose, 128, 4, &plan);
    tap_ok(fn && plan.shared_bytes == 128 * 128 * 4, "its plan asks for %llu bytes (128 x 128 x 4 = 65536)",
           fn ? (unsigned long long)plan.shared_bytes : 0ull);
    if (fn) {
        tjp_layout_plan_free(&plan);
        tji_func_free(fn);
    }

    t = 256; /* 256 KiB: more than any GPU gives a block */
    ptx = NULL;
    st = tj_kernel_ptx(transpose, &t, 1, "sm_90", 8, &ptx);
    tap_ok(st == TJ_ERR_COMPILE && !ptx && tl_error_mentions("transpose", "262144 bytes of shared memory", "232448", NULL),
           "a 256 KiB transpose is a compile error naming the kernel and the size (%s: %s)", tj_status_name(st),
           tj_last_error());
    free(ptx);
}

int main(void)
{
    tj_device_close(tl_setup("test_shared_plan"));
    test_offsets();
    test_loop_and_order();
    test_dynamic();
    return tap_done();
}
