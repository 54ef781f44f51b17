/* SPDX-License-Identifier: MIT */
/*
 * test_warp_spec_ptx.c — warp specialization of the block-pointer matmul,
 * read without a GPU (src/passes/warp_specialize.c, src/jit/gpu/warp_spec.c).
 *
 * The kernel is test_tma_ptx's: samples/matmul_kernel.h's block-pointer
 * matmul at 128x256x64 f16, 3 stages, specialized as a launch with M = N =
 * K = 4096 would be, so both rings are TMA rings. On sm_90a:
 *  - the plan: one producer warpgroup after the 8 consumer warps; the copies
 *    are the producer's alone, the loop's wait and commits nobody's, the
 *    dot and the stores the consumers'; registers moved 40 / 232 from a cap
 *    of 168 (384 threads);
 *  - the PTX: .reqntid 384 and .maxnreg 168, setmaxnreg.dec 40 and .inc
 *    232, empty barriers set up with one arrival per consumer warp beside
 *    the full ones, the producer waiting on them before each copy, the
 *    consumers arriving after each wgmma wait and after the loop; one
 *    bar.sync 0 (the set-up's, before the split) and the consumers' named
 *    barrier 1 of 256 threads after it; the same 15 TMA copies;
 *  - with 4 warps, 256 threads keep 255 registers: no setmaxnreg; with 16
 *    the budgets fit the block's registers at launch (a budget that fit
 *    only the register file hung the H200 once); 32 have no room for a
 *    producer;
 *  - TJ_WARP_SPECIALIZE_OFF keeps the unspecialized kernel; _ON where it
 *    cannot be (sm_90; the tutorial's pointer tiles, copied by cp.async)
 *    fails with the reason; the default there is the plain kernel, and so
 *    it is where C may alias A or B (one buffer for several pointers);
 *  - two sibling loops whose rings differ in size (no ring family): not
 *    specialized, with that reason;
 *  - the persistent form (a tile loop around the K loop): its rings never
 *    share bytes with the epilogue's conversion (they did, racing with the
 *    next tile's copies), and on sm_90a it is specialized as well;
 *  - the explainer names both sides.
 * Where make check sets TJIT_PTXAS, every PTX is assembled by ptxas (which
 * fails on any wgmma serialization report).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder/ir.h"
#include "ffi_bind/ffi_bind.h"
#include "jit/pipeline.h"
#include "jit/runtime/ptxas.h"
#include "tap.h"
#include "testlib.h"
#include "tjit.h"
#include "../samples/matmul_kernel.h"

MATMUL_BODY_KERNEL(bp_matmul, f16, f32, TJ_F32, matmul_block_ptr_body)

/* The tutorial's pointer tiles: cp.async rings, no TMA. */
MATMUL_BODY_KERNEL(ptr_matmul, f16, f32, TJ_F32, matmul_tutorial_body)

/* Persistent (Triton's tutorial 09): the tile loop around the K loop. */
MATMUL_BODY_KERNEL(ps_matmul, f16, f16, TJ_F16, matmul_persistent_body)

/* Two sibling loops of TMA rings whose slots differ (K blocks of BK over
 * the first half of K, then of BK / 2): the second loop's rings can join
 * no family of the first's (alloc_shared.c). */
static void two_tiles_body(tj_val a, tj_val b, tj_val c, tj_val M, tj_val N, tj_val K, tj_val stride_am,
                           tj_val stride_ak, tj_val stride_bk, tj_val stride_bn, tj_val stride_cm, tj_val stride_cn,
                           int64_t BM, int64_t BN, int64_t BK, int64_t group_m, tj_input_precision precision,
                           tj_dtype c_dtype)
{
    (void)group_m;
    tj_val row0 = tj_mul(tj_program_id(0), BM), col0 = tj_mul(tj_program_id(1), BN), half = tj_floordiv(K, 2);
    tj_val acc = tj_zeros(TJ_SHAPE(BM, BN), TJ_F32);
    for (int part = 0; part < 2; part++) {
        int64_t bk = part ? BK / 2 : BK;
        tj_val k0 = part ? half : tj_i32(0);
        tj_val ab = tj_make_block_ptr(a, TJ_VALS(M, K), TJ_VALS(stride_am, stride_ak), TJ_VALS(row0, k0),
                                      TJ_SHAPE(BM, bk), TJ_SHAPE(1, 0));
        tj_val bb = tj_make_block_ptr(b, TJ_VALS(K, N), TJ_VALS(stride_bk, stride_bn), TJ_VALS(k0, col0),
                                      TJ_SHAPE(bk, BN), TJ_SHAPE(1, 0));
        TJ_FOR(k, k0, part ? K : half, bk, &acc, &ab, &bb) {
            acc = tj_dot(tj_load(ab, .boundary_check = TJ_DIMS(0, 1)), tj_load(bb, .boundary_check = TJ_DIMS(0, 1)),
                         acc, .input_precision = precision);
            ab = tj_advance(ab, TJ_VALS(0, bk));
            bb = tj_advance(bb, TJ_VALS(bk, 0));
        }
    }
    tj_val cb = tj_make_block_ptr(c, TJ_VALS(M, N), TJ_VALS(stride_cm, stride_cn), TJ_VALS(row0, col0),
                                  TJ_SHAPE(BM, BN), TJ_SHAPE(1, 0));
    tj_store(cb, tj_cast(acc, c_dtype), .boundary_check = TJ_DIMS(0, 1));
}
MATMUL_BODY_KERNEL(two_tiles, f16, f32, TJ_F32, two_tiles_body)

#define NO_BUFFER TJ_ARG_BUF((tj_buffer){0})

static tj_arg args4096[12];

/* A launch's arguments with M = N = K = 4096, row-major. */
static void set_args(void)
{
    tj_arg args[12] = {NO_BUFFER,        NO_BUFFER,        NO_BUFFER,     TJ_ARG_I32(4096),
                       TJ_ARG_I32(4096), TJ_ARG_I32(4096), TJ_ARG_I32(4096), TJ_ARG_I32(1),
                       TJ_ARG_I32(4096), TJ_ARG_I32(1),    TJ_ARG_I32(4096), TJ_ARG_I32(1)};
    memcpy(args4096, args, sizeof args);
}

static uint64_t spec_of(const tj_kernel *k)
{
    tjf_value values[12];
    if (tjf_check_args(k, args4096, 12, values) != TJ_OK)
        return 0;
    return tjf_spec_key(k, values) | tjj_spec_of_buffers(k);
}

/* The artifact of kernel k at 128x256x64 (the status, its message kept
 * for the caller), at num_stages stages. */
static tj_status compile_stages(const tj_kernel *k, int sm, int arch_specific, int warps, int mode, int stages,
                                tjj_artifact *art)
{
    int64_t consts[3] = {128, 256, 64};
    tji_func *fn = NULL;
    memset(art, 0, sizeof *art);
    tj_status st = tji_build(k, consts, 3, &fn);
    if (st == TJ_OK)
        st = tjj_compile_gpu(fn, &(tjj_gpu_target){.sm = sm, .arch_specific = arch_specific, .num_warps = warps,
                                                   .spec = spec_of(k), .num_stages = stages,
                                                   .warp_specialize = mode},
                             art);
    if (st == TJ_OK && tjj_ptxas_path())
        st = tjj_ptxas_check(tjj_ptxas_path(), art->gpu.ptx, sm, arch_specific, fn->name);
    tji_func_free(fn);
    return st;
}

static tj_status compile(const tj_kernel *k, int sm, int arch_specific, int warps, int mode, tjj_artifact *art)
{
    return compile_stages(k, sm, arch_specific, warps, mode, 3, art);
}

/* Does any shared-memory step of the plan share bytes with a ring? */
static int steps_overlap_rings(const tjj_artifact *art, int32_t nops)
{
    const tjp_layout_plan *p = &art->plan;
    for (int32_t i = 0; i < nops && i < p->nops; i++) {
        const tjp_shared_step *s = &p->shared[i];
        for (int r = 0; s->kind != TJP_STEP_NONE && s->bytes && r < p->nrings; r++) {
            uint64_t lo = p->rings[r].offset, hi = lo + p->rings[r].slot_bytes * (uint64_t)p->rings[r].slots;
            if (p->rings[r].op >= 0 && s->offset < hi && lo < s->offset + s->bytes)
                return 1;
        }
    }
    return 0;
}

/* The role of the first op of code in fn's plan (-1: none). */
static int role_of(const tji_func *fn, const tjp_warp_spec *ws, tji_opcode code, int in_loop)
{
    int32_t body = fn->ops[ws->loop].region[0];
    for (int32_t i = 0; i < fn->nops; i++)
        if (fn->ops[i].parent >= 0 && fn->ops[i].code == code && (fn->ops[i].parent == body) == in_loop)
            return ws->role[i];
    return -1;
}

static void plan_8_warps(void)
{
    int64_t consts[3] = {128, 256, 64};
    tji_func *fn = NULL;
    tjj_gpu_planned planned;
    tj_status st = tji_build(bp_matmul, consts, 3, &fn);
    if (st == TJ_OK)
        st = tjj_gpu_plan(fn, &(tjj_gpu_target){.sm = 90, .arch_specific = 1, .num_warps = 8,
                                                .spec = spec_of(bp_matmul), .num_stages = 3},
                          &planned);
    const tjp_warp_spec *ws = st == TJ_OK ? planned.plan.warp_spec : NULL;
    tap_ok(ws && ws->producer_warps == 4 && ws->producer_regs == 40 && ws->consumer_regs == 232 &&
               ws->entry_regs == 168 && fn->ops[ws->loop].code == TJI_FOR,
           "sm_90a, 8 warps: a producer warpgroup, registers 40 / 232 from 168 at entry");
    tap_ok(ws && role_of(fn, ws, TJI_ASYNC_COPY, 1) == TJP_ROLE_PRODUCER &&
               role_of(fn, ws, TJI_ASYNC_COPY, 0) == TJP_ROLE_PRODUCER &&
               role_of(fn, ws, TJI_ASYNC_WAIT, 1) == 0 && role_of(fn, ws, TJI_ASYNC_COMMIT, 1) == 0 &&
               role_of(fn, ws, TJI_ASYNC_WAIT, 0) == TJP_ROLE_CONSUMER &&
               role_of(fn, ws, TJI_DOT, 1) == TJP_ROLE_CONSUMER && role_of(fn, ws, TJI_STORE, 0) == TJP_ROLE_CONSUMER &&
               role_of(fn, ws, TJI_LOCAL_LOAD, 1) == TJP_ROLE_CONSUMER &&
               ws->role[ws->loop] == (TJP_ROLE_PRODUCER | TJP_ROLE_CONSUMER),
           "roles: the copies the producer's, the loop's wait and commit nobody's, the dot, the ring reads "
           "and the store the consumers', the loop both's");
    int tiles_in_producer = 0;
    for (int32_t v = 1; ws && v <= fn->nvalues; v++)
        tiles_in_producer += ws->producer_value[v] && tji_typeof(fn, v)->rank > 0;
    tap_ok(ws && !tiles_in_producer, "the producer computes scalars only");
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    tjj_gpu_planned_free(&planned);
    tji_func_free(fn);
}

static void ptx_8_warps(void)
{
    tjj_artifact art;
    tj_status st = compile(bp_matmul, 90, 1, 8, TJ_WARP_SPECIALIZE_DEFAULT, &art);
    const char *p = st == TJ_OK ? art.gpu.ptx : "";
    tap_ok(st == TJ_OK && strstr(p, ".reqntid 384") && strstr(p, ".maxnreg 168") &&
               tl_count(p, "setmaxnreg.dec.sync.aligned.u32 40;") == 1 &&
               tl_count(p, "setmaxnreg.inc.sync.aligned.u32 232;") == 1 && art.gpu.producer_warps == 4,
           "PTX: 384 threads, a cap of 168 registers, setmaxnreg.dec 40 and .inc 232");
    tap_ok(st == TJ_OK && tl_count(p, "mbarrier.init.shared::cta.b64") == 16, /* 4 slots x 2 rings x 2 */
           "PTX: full and empty mbarriers for 4 slots of both rings");
    tap_ok(st == TJ_OK && tl_count(p, "cp.async.bulk.tensor.2d.shared::cluster.global") == 15 &&
               tl_count(p, "mbarrier.arrive.expect_tx") == 6 && tl_count(p, "cp.async.cg") == 0 &&
               tl_count(p, "cp.async.bulk.tensor.2d.global.shared::cta") == 8,
           "PTX: the same 15 TMA copies (6 arrivals with their bytes), no cp.async; C by a TMA store (8 boxes)");
    tap_ok(st == TJ_OK && tl_count(p, "mbarrier.try_wait.parity") == 6 + 2 &&
               tl_count(p, "@p mbarrier.arrive.shared::cta.b64") == 4,
           "PTX: the producer waits on an empty barrier before each of its 6 arrivals, the consumers on 2 "
           "full ones; they release both rings after the loop's wgmma wait and after the loop");
    tap_ok(st == TJ_OK && tl_count(p, "bar.sync \t0;") == 1 && tl_count(p, "bar.sync \t1, 256;") >= 1,
           "PTX: one bar.sync 0 (the set-up's), the consumers' named barrier 1 of 256 threads after it");
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    tjj_artifact_free(&art); /* also after a failure: the plan stays in it */
}

/* The artifact of bp_matmul at bm x bn x 64 on sm_90a with `warps` warps. */
static tj_status compile_tile(int64_t bm, int64_t bn, int warps, int stages, tjj_artifact *art)
{
    int64_t consts[3] = {bm, bn, 64};
    tji_func *fn = NULL;
    memset(art, 0, sizeof *art);
    tj_status st = tji_build(bp_matmul, consts, 3, &fn);
    if (st == TJ_OK)
        st = tjj_compile_gpu(fn, &(tjj_gpu_target){.sm = 90, .arch_specific = 1, .num_warps = warps,
                                                   .spec = spec_of(bp_matmul), .num_stages = stages},
                             art);
    if (st == TJ_OK && tjj_ptxas_path())
        st = tjj_ptxas_check(tjj_ptxas_path(), art->gpu.ptx, 90, 1, fn->name);
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    tji_func_free(fn);
    return st;
}

static void other_warps(void)
{
    tjj_artifact art;
    tj_status st = compile_tile(128, 128, 4, 3, &art);
    tap_ok(st == TJ_OK && art.plan.warp_spec && strstr(art.gpu.ptx, ".reqntid 256") &&
               !strstr(art.gpu.ptx, "setmaxnreg") && !strstr(art.gpu.ptx, ".maxnreg"),
           "4 warps, 128x128x64: specialized, 256 threads keep their 255 registers (no setmaxnreg)");
    tjj_artifact_free(&art);
    /* 16 warps hung the H200 in setmaxnreg.inc with a budget that fit the
     * register file but not the block (112 where 640 threads x 96 at launch
     * leave 104): the budget is the block's */
    st = compile_tile(256, 128, 16, 2, &art);
    tap_ok(st == TJ_OK && art.plan.warp_spec && strstr(art.gpu.ptx, ".reqntid 640") &&
               strstr(art.gpu.ptx, ".maxnreg 96") && tl_count(art.gpu.ptx, "setmaxnreg.inc.sync.aligned.u32 104;") == 1 &&
               tl_count(art.gpu.ptx, "setmaxnreg.dec.sync.aligned.u32 40;") == 1,
           "16 warps, 256x128x64: specialized, 640 threads, registers 40 / 104 from 96 at entry "
           "(16 x 32 x 104 + 4 x 32 x 40 <= 640 x 96)");
    tjj_artifact_free(&art);
    st = compile_tile(128, 128, 32, 2, &art);
    tap_ok(st == TJ_OK && !art.plan.warp_spec && strstr(art.plan.why_not_specialized, "num_warps 4, 8 or 16"),
           "32 warps: not specialized (no room for a producer warpgroup), and why (%s)",
           st == TJ_OK && art.plan.why_not_specialized ? art.plan.why_not_specialized : "-");
    tjj_artifact_free(&art);
}

static void not_specialized(void)
{
    tjj_artifact art;
    tj_status st = compile(bp_matmul, 90, 1, 8, TJ_WARP_SPECIALIZE_OFF, &art);
    tap_ok(st == TJ_OK && !art.plan.warp_spec && strstr(art.gpu.ptx, ".reqntid 256") &&
               !strstr(art.gpu.ptx, "setmaxnreg") && tl_count(art.gpu.ptx, "bar.sync \t0;") > 1 &&
               art.gpu.producer_warps == 0,
           "TJ_WARP_SPECIALIZE_OFF: 256 threads, the loop's bar.sync 0, no setmaxnreg");
    tjj_artifact_free(&art);

    st = compile(bp_matmul, 90, 0, 8, TJ_WARP_SPECIALIZE_ON, &art);
    tap_ok(st == TJ_ERR_UNSUPPORTED && strstr(tj_last_error(), "warp specialization was asked for") &&
               strstr(tj_last_error(), "sm_90a") && strstr(tj_last_error(), "bp_matmul"),
           "TJ_WARP_SPECIALIZE_ON on sm_90 fails, naming the kernel and the target it needs");
    tjj_artifact_free(&art);
    tap_diag("%s", tj_last_error());

    st = compile(ptr_matmul, 90, 1, 8, TJ_WARP_SPECIALIZE_ON, &art);
    tap_ok(st == TJ_ERR_UNSUPPORTED && strstr(tj_last_error(), "cp.async, not TMA"),
           "TJ_WARP_SPECIALIZE_ON with the tutorial's pointer tiles fails: its rings are cp.async's");
    tjj_artifact_free(&art);
    tap_diag("%s", tj_last_error());

    st = compile(ptr_matmul, 90, 1, 8, TJ_WARP_SPECIALIZE_DEFAULT, &art);
    tap_ok(st == TJ_OK && !art.plan.warp_spec && art.plan.why_not_specialized &&
               strstr(art.gpu.ptx, ".reqntid 256"),
           "the default with pointer tiles: the plain kernel, and why");
    tjj_artifact_free(&art);
}

/* A launch that passed one buffer for several pointers: C may be A or B,
 * and the producer's copies would not wait for the consumers' stores. */
static void aliased(void)
{
    int64_t consts[3] = {128, 256, 64};
    tji_func *fn = NULL;
    tjj_gpu_planned planned;
    tj_status st = tji_build(bp_matmul, consts, 3, &fn);
    if (st == TJ_OK) {
        fn->params_may_alias = 1;
        st = tjj_gpu_plan(fn, &(tjj_gpu_target){.sm = 90, .arch_specific = 1, .num_warps = 8,
                                                .spec = spec_of(bp_matmul), .num_stages = 3},
                          &planned);
    }
    tap_ok(st == TJ_OK && !planned.plan.warp_spec && planned.plan.why_not_specialized &&
               strstr(planned.plan.why_not_specialized, "writes memory that its TMA copies may read"),
           "pointers that may alias: not specialized (%s)",
           st == TJ_OK && planned.plan.why_not_specialized ? planned.plan.why_not_specialized : tj_last_error());
    tjj_gpu_planned_free(&planned);
    tji_func_free(fn);
}

/* The persistent kernel: its rings live across the tile loop (the next
 * tile's prologue must not overwrite the epilogue's buffer: every warp's
 * cp.async on sm_80 and sm_90, the producer a tile ahead on sm_90a), and
 * on sm_90a the producer runs the tile loop too. */
static void persistent(void)
{
    static const struct { int sm, arch, stages; const char *what; } targets[] = {
        {80, 0, 3, "sm_80"}, {90, 0, 3, "sm_90"}, {90, 1, 2, "sm_90a, 2 stages"}};
    for (int t = 0; t < 3; t++) {
        tjj_artifact art;
        tj_status st = compile_stages(ps_matmul, targets[t].sm, targets[t].arch, 8, TJ_WARP_SPECIALIZE_DEFAULT,
                                      targets[t].stages, &art);
        int has_steps = 0;
        for (int32_t i = 0; st == TJ_OK && i < art.plan.nops; i++)
            has_steps += art.plan.shared[i].kind != TJP_STEP_NONE;
        tap_ok(st == TJ_OK && art.plan.nrings == 2 && has_steps && !steps_overlap_rings(&art, art.plan.nops),
               "persistent, %s: the epilogue's shared memory does not share bytes with the rings (%d steps)",
               targets[t].what, has_steps);
        if (st != TJ_OK)
            tap_diag("%s", tj_last_error());
        if (t == 2)
            tap_ok(st == TJ_OK && art.plan.warp_spec && strstr(art.gpu.ptx, ".reqntid 384") &&
                       tl_count(art.gpu.ptx, "cp.async.bulk.tensor") == 10,
                   "persistent, sm_90a: warp-specialized, the producer walking the tiles too (10 TMA copies)");
        tjj_artifact_free(&art);
    }
}

/* Two loops of rings whose tiles differ: not specialized, and why; the
 * plain kernel still assembles. */
static void loops_apart(void)
{
    int64_t consts[3] = {128, 128, 64};
    tji_func *fn = NULL;
    tjj_artifact art = {0};
    tj_status st = tji_build(two_tiles, consts, 3, &fn);
    if (st == TJ_OK)
        st = tjj_compile_gpu(fn, &(tjj_gpu_target){.sm = 90, .arch_specific = 1, .num_warps = 8,
                                                   .spec = spec_of(two_tiles), .num_stages = 3},
                             &art);
    if (st == TJ_OK && tjj_ptxas_path())
        st = tjj_ptxas_check(tjj_ptxas_path(), art.gpu.ptx, 90, 1, fn->name);
    const char *why = st == TJ_OK && art.plan.why_not_specialized ? art.plan.why_not_specialized : "-";
    tap_ok(st == TJ_OK && !art.plan.warp_spec && strstr(why, "in no family of the first loop's rings") &&
               tl_count(art.gpu.ptx, "cp.async.bulk.tensor") > 0 && !strstr(art.gpu.ptx, "setmaxnreg"),
           "two loops with K blocks of 64 and 32: TMA, not specialized (%s)", why);
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    tjj_artifact_free(&art);
    tji_func_free(fn);
}

static void explained(void)
{
    int64_t consts[3] = {128, 256, 64};
    char *text = NULL;
    setenv("TJIT_PTX_TARGET", "sm_90a", 1);
    tj_status st = tj_kernel_explain(bp_matmul, args4096, 12, consts, 3, 8, &text);
    unsetenv("TJIT_PTX_TARGET");
    tap_ok(st == TJ_OK && strstr(text, "warp specialization: warps 8..11 are the producer") &&
               strstr(text, "setmaxnreg 40 for the producer, 232 for the consumers") &&
               strstr(text, "the producer warp issuing once the slot's empty mbarrier"),
           "the explainer names the producer and the consumers, and how a copy waits");
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    free(text);
}

int main(void)
{
    tap_plan(22);
    set_args();
    plan_8_warps();
    ptx_8_warps();
    other_warps();
    not_specialized();
    aliased();
    persistent();
    loops_apart();
    explained();
    return tap_done();
}
