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
 *
 * The tutorial's PTX (through tjj_compile_gpu, specialized as a launch
 * with aligned buffers and M, N, K multiples of 16 would be) for sm_80 and
 * sm_90 at 1 to 4 stages: cp.async copies of 16 bytes (.cg) where
 * pipelined and none at 1 stage, S commit_groups, a wait_group(S-2) in
 * the loop and a wait_group(0) after it, the rings' bytes in the kernel's
 * shared memory, the stable keys of different num_stages apart; ptxas
 * (TJIT_PTXAS) assembles each with no output at all (no warning). The
 * rings too big for a block are a compile error that names num_stages.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"
#include "builder/ir.h"
#include "ffi_bind/ffi_bind.h"
#include "jit/pipeline.h"
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

/* Addresses from the induction variable alone (test_dot's loop). */
TJ_KERNEL(dot_by_iv, TJ_PARAMS(TJ_PTR(a, f32), TJ_PTR(b, f32), TJ_PTR(c, f32), TJ_SCALAR(nk, i32)), TJ_CONSTS())
{
    tj_val acc = tj_zeros(TJ_SHAPE(16, 16), TJ_F32);
    TJ_FOR(k, 0, nk, 1, &acc) {
        tj_val ta = tj_load(tj_add(tj_add(a, tj_mul(k, 256)), TL_TILE_IDX(16, 16)));
        tj_val tb = tj_load(tj_add(tj_add(b, tj_mul(k, 256)), TL_TILE_IDX(16, 16)));
        acc = tj_dot(ta, tb, acc);
    }
    tj_store(tj_add(c, TL_TILE_IDX(16, 16)), acc);
}

/* Loads that stay: one feeds a sum, the other's address is the accumulator's. */
TJ_KERNEL(not_pipelined, TJ_PARAMS(TJ_PTR(a, f32), TJ_PTR(c, f32), TJ_SCALAR(n, i32)), TJ_CONSTS())
{
    tj_val s = tj_zeros(TJ_SHAPE(16, 16), TJ_F32);
    tj_val acc = tj_zeros(TJ_SHAPE(16, 16), TJ_F32);
    TJ_FOR(k, 0, n, 16, &s, &acc) {
        s = tj_add(s, tj_load(tj_add(tj_add(a, k), TL_TILE_IDX(16, 16))));
        tj_val t = tj_load(tj_add(a, tj_cast(acc, TJ_I32)));
        acc = tj_dot(t, t, acc);
    }
    tj_store(tj_add(c, TL_TILE_IDX(16, 16)), tj_add(s, acc));
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
    tj_status st = tjp_pipeline_loops(fn, stages, NULL);
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

/* Occurrences of needle in text. */
static int count_of(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* ptxas's output for ptx at sm_<sm> ("" when silent), or NULL where it
 * failed or there is no TJIT_PTXAS. */
static char *ptxas_output(const char *ptx, int sm, int *rc)
{
    const char *ptxas = getenv("TJIT_PTXAS");
    if (!ptxas || !*ptxas)
        return NULL;
    char path[] = "/tmp/tjit-pipeline-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "w");
    fputs(ptx, f);
    fclose(f);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' -arch=sm_%d -o /dev/null '%s' 2>&1", ptxas, sm, path);
    FILE *p = popen(cmd, "r");
    char *out = calloc(1, 65536);
    size_t n = p ? fread(out, 1, 65535, p) : 0;
    out[n] = 0;
    *rc = p ? pclose(p) : -1;
    unlink(path);
    return out;
}

static uint64_t tutorial_spec(void)
{
    uint64_t spec = tjj_spec_of_buffers(matmul_tutorial);
    for (int i = 3; i < 6; i++) /* M, N, K */
        spec |= (uint64_t)TJF_SPEC_DIV16 << (TJF_SPEC_BITS * i);
    return spec;
}

static void tutorial_ptx(int sm, int stages)
{
    tji_func *fn = built(matmul_tutorial, (int64_t[]){64, 64, 32}, 3);
    tjj_artifact a = {0};
    tj_status st = fn ? tjj_compile_gpu(fn, &(tjj_gpu_target){.sm = sm, .num_warps = 4,
                                                            .spec = tutorial_spec(),
                                                            .num_stages = stages}, &a)
                      : TJ_ERR_BUILD;
    if (st != TJ_OK)
        tap_diag("compile: %s", tj_last_error());
    const char *ptx = st == TJ_OK ? a.gpu.ptx : "";
    int on = stages > 1;
    int copies = count_of(ptx, "cp.async.cg.shared.global"), any = count_of(ptx, "cp.async.c");
    int commits = count_of(ptx, "cp.async.commit_group"), waits = count_of(ptx, "cp.async.wait_group");
    char wait_in[48];
    snprintf(wait_in, sizeof wait_in, "cp.async.wait_group \t%d;", on ? stages - 2 : 0);
    /* rings: 3 x 64x32 f16 + 3 x 32x64 f16 at 3 stages */
    size_t ring_bytes = on ? (size_t)stages * 2 * 64 * 32 * 2 : 0;
    tap_ok(st == TJ_OK && (on ? copies > 0 && commits == stages && waits == 2 &&
                                strstr(ptx, wait_in) && strstr(ptx, "cp.async.wait_group \t0;")
                              : any == 0 && commits == 0 && waits == 0) &&
               a.gpu.shared_bytes >= ring_bytes,
           "tutorial PTX for sm_%d at %d stages: %d cp.async.cg, %d commit_group, %d wait_group, "
           "%zu bytes of shared memory", sm, stages, copies, commits, waits,
           st == TJ_OK ? a.gpu.shared_bytes : 0);
    int rc = 0;
    char *out = st == TJ_OK ? ptxas_output(ptx, sm, &rc) : NULL;
    if (out) {
        tap_ok(rc == 0 && out[0] == 0, "ptxas sm_%d at %d stages: assembled, no warning%s%s", sm,
               stages, out[0] ? ": " : "", out);
    } else {
        tap_skip(1, "TJIT_PTXAS is not set: no ptxas to assemble the PTX");
    }
    free(out);
    tjj_artifact_free(&a);
    tji_func_free(fn);
}

/* The keys of one kernel at two num_stages differ (and 0 is the default). */
static void keys_apart(void)
{
    tji_func *fn = built(matmul_tutorial, (int64_t[]){64, 64, 32}, 3);
    if (!fn) {
        tap_ok(0, "stable keys of num_stages");
        return;
    }
    tjj_stable_key k0 = tjj_variant_key(fn, 0, 90, 0, 4, 0, 0, 0, 0, 0, 0), kd = tjj_variant_key(fn, 0, 90, 0, 4, TJJ_DEFAULT_NUM_STAGES, 0, 0, 0, 0, 0),
                   k2 = tjj_variant_key(fn, 0, 90, 0, 4, 2, 0, 0, 0, 0, 0), k3 = tjj_variant_key(fn, 0, 90, 0, 4, 3, 0, 0, 0, 0, 0);
    tap_ok((k2.high != k3.high || k2.low != k3.low) && k0.high == kd.high && k0.low == kd.low,
           "stable keys: num_stages 2 and 3 apart, 0 is the default (%d)", TJJ_DEFAULT_NUM_STAGES);
    tji_func_free(fn);
}

/* Rings past what any GPU gives a block: an error that says to lower num_stages. */
static void rings_too_big(void)
{
    tji_func *fn = built(matmul_tutorial, (int64_t[]){128, 128, 128}, 3);
    tjj_artifact a = {0};
    tj_status st = fn ? tjj_compile_gpu(fn, &(tjj_gpu_target){.sm = 90, .num_warps = 8,
                                                            .spec = tutorial_spec(),
                                                            .num_stages = 8}, &a)
                      : TJ_ERR_BUILD;
    tap_ok(st == TJ_ERR_COMPILE && tl_error_mentions("matmul_tutorial", "lower num_stages",
                                                     "8 slots each", NULL),
           "8 stages of 128x128 f16 rings: %s (%s)", tj_status_name(st), tj_last_error());
    tjj_artifact_free(&a);
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
        tj_status st = fn ? tjp_pipeline_loops(fn, stages, NULL) : TJ_ERR_BUILD;
        tap_ok(st == TJ_ERR_INVALID_ARG && tl_error_mentions("num_stages", NULL),
               "num_stages = %d is an error (%s)", stages, tj_status_name(st));
    }
    tji_func_free(fn);

    for (int sm = 80; sm <= 90; sm += 10)
        for (int stages = 1; stages <= 4; stages++)
            tutorial_ptx(sm, stages);
    keys_apart();
    rings_too_big();
    return tap_done();
}
