/* SPDX-License-Identifier: MIT */
/*
 * test_pipeline_loops.c — the software-pipelining pass on kernels built in
 * C (src/passes/pipeline_loops.c; the lit tests tests/ir/pipeline-loops-*
 * check its text op by op).
 *
 * The tutorial's matmul loop (A and B masked along K, their pointers
 * advanced by the loop) at 1 to 4 stages: with S stages both loads become
 * rings of S slots, S - 1 prologue stages plus one copy per ring in the
 * body, S commits, a wait for S - 2 groups at the top of the body and one
 * for 0 after the loop, the dot reading LOCAL_LOADs; at 1 stage nothing
 * changes. The result verifies and reads back as printed. A loop whose
 * addresses come from the induction variable alone is pipelined too; one
 * whose loads feed no dot, or whose next address depends on the
 * accumulator, is left as it was; num_stages out of range is an error.
 */
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "builder/ir.h"
#include "passes/passes.h"

TJ_KERNEL(matmul_tutorial, TJ_PARAMS(TJ_PTR(a, f16), TJ_PTR(b, f16), TJ_PTR(c, f32), TJ_SCALAR(M, i32),
                                     TJ_SCALAR(N, i32), TJ_SCALAR(K, i32)),
          TJ_CONSTS(BM, BN, BK))
{
    tj_val offs_m = tj_mod(tj_add(tj_mul(tj_program_id(0), BM), tj_arange(0, BM)), M);
    tj_val offs_n = tj_mod(tj_add(tj_mul(tj_program_id(1), BN), tj_arange(0, BN)), N);
    tj_val offs_k = tj_arange(0, BK);
    tj_val a_ptrs = tj_add(a, tj_add(tj_mul(tj_expand_dims(offs_m, 1), K), tj_expand_dims(offs_k, 0)));
    tj_val b_ptrs = tj_add(b, tj_add(tj_mul(tj_expand_dims(offs_k, 1), N), tj_expand_dims(offs_n, 0)));
    tj_val acc = tj_zeros(TJ_SHAPE(BM, BN), TJ_F32);
    TJ_FOR(k, 0, K, BK, &acc, &a_ptrs, &b_ptrs) {
        tj_val ta = tj_load(a_ptrs, .mask = tj_lt(tj_expand_dims(offs_k, 0), tj_sub(K, k)), .other = tj_f16(0));
        tj_val tb = tj_load(b_ptrs, .mask = tj_lt(tj_expand_dims(offs_k, 1), tj_sub(K, k)));
        acc = tj_dot(ta, tb, acc);
        a_ptrs = tj_add(a_ptrs, BK);
        b_ptrs = tj_add(b_ptrs, tj_mul(N, BK));
    }
    tj_store(tj_add(c, tj_add(tj_mul(tj_expand_dims(offs_m, 1), N), tj_expand_dims(offs_n, 0))), acc,
             .mask = tj_and(tj_lt(tj_expand_dims(offs_m, 1), M), tj_lt(tj_expand_dims(offs_n, 0), N)));
}

#define TILE_IDX(R, C) tj_add(tj_mul(tj_expand_dims(tj_arange(0, R), 1), C), tj_expand_dims(tj_arange(0, C), 0))

/* Addresses from the induction variable alone (test_dot's loop). */
TJ_KERNEL(dot_by_iv, TJ_PARAMS(TJ_PTR(a, f32), TJ_PTR(b, f32), TJ_PTR(c, f32), TJ_SCALAR(nk, i32)), TJ_CONSTS())
{
    tj_val acc = tj_zeros(TJ_SHAPE(16, 16), TJ_F32);
    TJ_FOR(k, 0, nk, 1, &acc) {
        tj_val ta = tj_load(tj_add(tj_add(a, tj_mul(k, 256)), TILE_IDX(16, 16)));
        tj_val tb = tj_load(tj_add(tj_add(b, tj_mul(k, 256)), TILE_IDX(16, 16)));
        acc = tj_dot(ta, tb, acc);
    }
    tj_store(tj_add(c, TILE_IDX(16, 16)), acc);
}

/* Loads that stay: one feeds a sum, the other's address is the accumulator's. */
TJ_KERNEL(not_pipelined, TJ_PARAMS(TJ_PTR(a, f32), TJ_PTR(c, f32), TJ_SCALAR(n, i32)), TJ_CONSTS())
{
    tj_val s = tj_zeros(TJ_SHAPE(16, 16), TJ_F32);
    tj_val acc = tj_zeros(TJ_SHAPE(16, 16), TJ_F32);
    TJ_FOR(k, 0, n, 16, &s, &acc) {
        s = tj_add(s, tj_load(tj_add(tj_add(a, k), TILE_IDX(16, 16))));
        tj_val t = tj_load(tj_add(a, tj_cast(acc, TJ_I32)));
        acc = tj_dot(t, t, acc);
    }
    tj_store(tj_add(c, TILE_IDX(16, 16)), tj_add(s, acc));
}

typedef struct counts {
    int copies, commits, local_loads, loads, waits_top, wait_after, dot_reads_local;
} counts;

static counts count_ops(const tji_func *fn)
{
    counts n = {0, 0, 0, 0, -1, -1, 0};
    for (int32_t i = 0; i < fn->nops; i++) {
        const tji_op *op = &fn->ops[i];
        if (op->parent < 0)
            continue;
        n.copies += op->code == TJI_ASYNC_COPY;
        n.commits += op->code == TJI_ASYNC_COMMIT;
        n.local_loads += op->code == TJI_LOCAL_LOAD;
        n.loads += op->code == TJI_LOAD;
        if (op->code == TJI_ASYNC_WAIT && op->parent != 0)
            n.waits_top = (int)op->ival;
        if (op->code == TJI_ASYNC_WAIT && op->parent == 0)
            n.wait_after = (int)op->ival;
        if (op->code == TJI_DOT)
            for (int k = 0; k < 2; k++) {
                int32_t d = fn->values[op->args[k]].def_op;
                n.dot_reads_local += d >= 0 && fn->ops[d].code == TJI_LOCAL_LOAD;
            }
    }
    return n;
}

static tji_func *built(const tj_kernel *k, const int64_t *consts, int nconsts)
{
    tji_func *fn = NULL;
    if (tji_build(k, consts, nconsts, &fn) != TJ_OK) {
        tap_diag("%s: %s", k->name, tj_last_error());
        return NULL;
    }
    return fn;
}

/* The pass at stages on k; 1 where it verifies and reads back as printed. */
static int pipelined(tji_func *fn, int stages)
{
    tj_status st = tjp_pipeline_loops(fn, stages);
    if (st == TJ_OK)
        st = tji_verify(fn);
    if (st == TJ_OK)
        st = tjp_check_roundtrip(fn, NULL);
    if (st != TJ_OK)
        tap_diag("%s at %d stages: %s", fn->name, stages, tj_last_error());
    return st == TJ_OK;
}

static void tutorial(int stages)
{
    tji_func *fn = built(matmul_tutorial, (int64_t[]){64, 64, 32}, 3);
    int ok = fn && pipelined(fn, stages);
    counts n = ok ? count_ops(fn) : (counts){0};
    int on = stages > 1;
    tap_ok(ok && n.copies == (on ? 2 * stages : 0) && n.commits == (on ? stages : 0) &&
           n.local_loads == (on ? 2 : 0) && n.loads == (on ? 0 : 2) &&
           n.waits_top == (on ? stages - 2 : -1) && n.wait_after == (on ? 0 : -1) &&
           n.dot_reads_local == (on ? 2 : 0),
           "tutorial matmul at %d stages: %d copies, %d commits, %d local loads, %d loads, wait "
           "%d in the loop and %d after, the dot reads %d local loads", stages, n.copies, n.commits,
           n.local_loads, n.loads, n.waits_top, n.wait_after, n.dot_reads_local);
    /* every ring of S slots: the copies' and local loads' attribute */
    int slots_ok = ok;
    for (int32_t i = 0; fn && i < fn->nops; i++)
        if (fn->ops[i].parent >= 0 &&
            (fn->ops[i].code == TJI_ASYNC_COPY || fn->ops[i].code == TJI_LOCAL_LOAD))
            slots_ok &= fn->ops[i].ring_slots == stages && fn->ops[i].ring <= 1;
    if (on)
        tap_ok(slots_ok, "tutorial matmul at %d stages: rings 0 and 1 of %d slots", stages, stages);
    tji_func_free(fn);
}

int main(void)
{
    setenv("TJIT_CHECK_ROUNDTRIP", "1", 1);
    for (int stages = 1; stages <= 4; stages++)
        tutorial(stages);

    tji_func *fn = built(dot_by_iv, NULL, 0);
    int ok = fn && pipelined(fn, 3);
    counts n = ok ? count_ops(fn) : (counts){0};
    tap_ok(ok && n.copies == 6 && n.loads == 0 && n.dot_reads_local == 2,
           "addresses from the induction variable alone: pipelined (%d copies, %d loads)",
           n.copies, n.loads);
    tji_func_free(fn);

    fn = built(not_pipelined, NULL, 0);
    char *before = fn ? tji_print(fn) : NULL;
    ok = fn && pipelined(fn, 4);
    char *after = ok ? tji_print(fn) : NULL;
    tap_ok(ok && before && after && strcmp(before, after) == 0,
           "a load feeding a sum and one addressed by the accumulator stay loads");
    free(before);
    free(after);

    for (int stages = 0; stages <= 9; stages += 9) {
        tj_status st = fn ? tjp_pipeline_loops(fn, stages) : TJ_ERR_BUILD;
        tap_ok(st == TJ_ERR_INVALID_ARG && tl_error_mentions("num_stages", NULL),
               "num_stages = %d is an error (%s)", stages, tj_status_name(st));
    }
    tji_func_free(fn);
    return tap_done();
}
