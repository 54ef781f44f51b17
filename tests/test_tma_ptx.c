/* SPDX-License-Identifier: MIT */
/*
 * test_tma_ptx.c — Hopper's TMA path of a block-pointer matmul, read
 * without a GPU (src/passes/tma.c, src/jit/gpu/tma.c).
 *
 * The kernel is the block-pointer matmul of samples/matmul_block_ptr.c
 * (samples/matmul_kernel.h's matmul_block_ptr_body: A [BM, BK] and B [BK,
 * BN] blocks of kernel parameters, advanced along K, C stored in f32), compiled for sm_90a with 8 warps and 128x256x64 f16 tiles at 3
 * stages, as a launch with M = N = K = 4096 and row-major operands would
 * be specialized:
 *  - both rings are filled by TMA: 2 prologue stages and the loop's copy,
 *    one box for A (64 f16 = the 128-byte NVMMA row) and four for B (256
 *    columns), so 15 cp.async.bulk.tensor and no cp.async; each read
 *    waits on its slot's mbarrier; the two tensor maps are 128-byte
 *    grid-constant parameters; the warp stays converged (the copies are
 *    predicated, not branched around);
 *  - the maps the launch must encode: A from parameter 0 with extents
 *    (M, K) from parameters 3 and 5, strides (stride_am, 1), box 128 x 64;
 *    B from parameter 1, (K, N), (stride_bk, 1), box 64 x 64; swizzle 128;
 *  - K = 1000: A's row stride is not known to be a multiple of 16 (the
 *    specialization tells multiples of 16 only), so its map could not be
 *    encoded for every launch of the variant: A is copied by the threads
 *    (element by element here, as before), B (stride N) keeps TMA (12);
 *  - sm_90 (no "a"), or the launch's fallback (no_tma), has no TMA at all;
 *  - C (f32, 128 x 256) is a TMA store: staged in shared memory in the
 *    NVMMA layout, 8 boxes of 128 x 32, the third map (stride_cm, 1); not
 *    where N is no multiple of 16 elements (the engine stores whole
 *    16-byte chunks past the edge);
 *  - the explainer says which copies and stores are TMA's;
 *  - a block-pointer load that is not pipelined (a copy) compiles too, its
 *    store a TMA store; a store in a loop, or followed by a load, stays
 *    the threads'; of two stores, the first waits for its writes.
 * The kernels are compiled without warp specialization (every warp runs
 * the loop, thread 0 issuing the copies): test_warp_spec_ptx reads the
 * specialized form. Where make check sets TJIT_PTXAS, every PTX is
 * assembled by ptxas.
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
#include "batched_desc.h"

MATMUL_BODY_KERNEL(bp_matmul, f16, f32, TJ_F32, matmul_block_ptr_body)

/* A block copied, no dot: its load is not pipelined, so it keeps no TMA tensor. */
TJ_KERNEL(bp_copy, TJ_PARAMS(TJ_PTR(src, f16), TJ_PTR(dst, f16), TJ_SCALAR(M, i32), TJ_SCALAR(N, i32)),
          TJ_CONSTS(BM, BN))
{
    tj_val o0 = tj_mul(tj_program_id(0), BM), o1 = tj_mul(tj_program_id(1), BN);
    tj_val a = tj_make_block_ptr(src, TJ_VALS(M, N), TJ_VALS(N, 1), TJ_VALS(o0, o1), TJ_SHAPE(BM, BN), TJ_SHAPE(1, 0));
    tj_val b = tj_make_block_ptr(dst, TJ_VALS(M, N), TJ_VALS(N, 1), TJ_VALS(o0, o1), TJ_SHAPE(BM, BN), TJ_SHAPE(1, 0));
    tj_store(b, tj_load(a, .boundary_check = TJ_DIMS(0, 1)), .boundary_check = TJ_DIMS(0, 1));
}

/* The block stored in every trip of a loop. */
TJ_KERNEL(bp_store_in_loop, TJ_PARAMS(TJ_PTR(src, f16), TJ_PTR(dst, f16), TJ_SCALAR(M, i32), TJ_SCALAR(N, i32)),
          TJ_CONSTS(BM, BN))
{
    tj_val o0 = tj_mul(tj_program_id(0), BM);
    tj_val a = tj_make_block_ptr(src, TJ_VALS(M, N), TJ_VALS(N, 1), TJ_VALS(o0, 0), TJ_SHAPE(BM, BN), TJ_SHAPE(1, 0));
    tj_val b = tj_make_block_ptr(dst, TJ_VALS(M, N), TJ_VALS(N, 1), TJ_VALS(o0, 0), TJ_SHAPE(BM, BN), TJ_SHAPE(1, 0));
    TJ_FOR(j, 0, tj_cdiv(N, BN), 1) {
        tj_val col = tj_mul(j, BN);
        tj_store(tj_advance(b, TJ_VALS(0, col)), tj_load(tj_advance(a, TJ_VALS(0, col))));
    }
}

/* A block stored, then a row of it loaded back: the store must have landed. */
TJ_KERNEL(bp_store_then_load, TJ_PARAMS(TJ_PTR(src, f16), TJ_PTR(dst, f16), TJ_SCALAR(M, i32), TJ_SCALAR(N, i32)),
          TJ_CONSTS(BM, BN))
{
    tj_val o0 = tj_mul(tj_program_id(0), BM), o1 = tj_mul(tj_program_id(1), BN);
    tj_val a = tj_make_block_ptr(src, TJ_VALS(M, N), TJ_VALS(N, 1), TJ_VALS(o0, o1), TJ_SHAPE(BM, BN), TJ_SHAPE(1, 0));
    tj_val b = tj_make_block_ptr(dst, TJ_VALS(M, N), TJ_VALS(N, 1), TJ_VALS(o0, o1), TJ_SHAPE(BM, BN), TJ_SHAPE(1, 0));
    tj_store(b, tj_load(a));
    tj_val back = tj_load(b);
    tj_store(a, tj_add(back, back));
}

/* Two blocks stored, one after the other. */
TJ_KERNEL(bp_two_stores, TJ_PARAMS(TJ_PTR(src, f16), TJ_PTR(dst, f16), TJ_SCALAR(M, i32), TJ_SCALAR(N, i32)),
          TJ_CONSTS(BM, BN))
{
    tj_val o0 = tj_mul(tj_program_id(0), BM), o1 = tj_mul(tj_program_id(1), BN);
    tj_val a = tj_make_block_ptr(src, TJ_VALS(M, N), TJ_VALS(N, 1), TJ_VALS(o0, o1), TJ_SHAPE(BM, BN), TJ_SHAPE(1, 0));
    tj_val b = tj_make_block_ptr(dst, TJ_VALS(M, N), TJ_VALS(N, 1), TJ_VALS(o0, o1), TJ_SHAPE(BM, BN), TJ_SHAPE(1, 0));
    tj_val x = tj_load(a);
    tj_store(b, x);
    tj_store(a, tj_add(x, x));
}

#define NO_BUFFER TJ_ARG_BUF((tj_buffer){0})
#define LOAD_BOX "cp.async.bulk.tensor.2d.shared::cluster.global"
#define STORE_BOX "cp.async.bulk.tensor.2d.global.shared::cta"


/* N of the launch the compiles below specialize for, and the row stride
 * of B and C (0: N). */
static int32_t spec_n = 4096, spec_ld = 0;

static uint64_t spec_of(int32_t m, int32_t n, int32_t k)
{
    int32_t ld = spec_ld ? spec_ld : n;
    tj_arg args[12] = {NO_BUFFER, NO_BUFFER, NO_BUFFER, TJ_ARG_I32(m), TJ_ARG_I32(n), TJ_ARG_I32(k),
                       TJ_ARG_I32(k), TJ_ARG_I32(1), TJ_ARG_I32(ld), TJ_ARG_I32(1), TJ_ARG_I32(ld), TJ_ARG_I32(1)};
    tjf_value values[12];
    if (tjf_check_args(bp_matmul, args, 12, values) != TJ_OK)
        return 0;
    return tjf_spec_key(bp_matmul, values) | tjj_spec_of_buffers(bp_matmul);
}

/* The artifact for K = k on sm_<sm>[a] (0 on failure, reported). */
static int compile(int32_t k, int sm, int arch_specific, int no_tma, tjj_artifact *art)
{
    int64_t consts[3] = {128, 256, 64};
    tji_func *fn = NULL;
    memset(art, 0, sizeof *art);
    tj_status st = tji_build(bp_matmul, consts, 3, &fn);
    if (st == TJ_OK)
        st = tjj_compile_gpu(fn, &(tjj_gpu_target){.sm = sm, .arch_specific = arch_specific, .num_warps = 8,
                                                   .spec = spec_of(4096, spec_n, k), .num_stages = 3,
                                                   .no_tma = no_tma, .warp_specialize = TJ_WARP_SPECIALIZE_OFF},
                             art);
    if (st == TJ_OK && tjj_ptxas_path())
        st = tjj_ptxas_check(tjj_ptxas_path(), art->gpu.ptx, sm, arch_specific, fn->name);
    if (st != TJ_OK)
        tap_diag("K = %d, sm_%d%s: %s", (int)k, sm, arch_specific ? "a" : "", tj_last_error());
    tji_func_free(fn);
    return st == TJ_OK;
}

static int src_is(const tjj_tmap_src *s, int32_t param, int64_t value)
{
    return s->param == param && (param >= 0 || s->value == value);
}

static void both_by_tma(void)
{
    tjj_artifact art;
    int ok = compile(4096, 90, 1, 0, &art);
    const char *ptx = ok ? art.gpu.ptx : "";
    tap_ok(ok && tl_count(ptx, LOAD_BOX) == 15 && !tl_count(ptx, "cp.async.cg") && !tl_count(ptx, "cp.async.ca"),
           "sm_90a, 4096^3: A and B by TMA (2 + 1 stages x (1 + 4) boxes), no cp.async (%d bulk copies)",
           tl_count(ptx, LOAD_BOX));
    tap_ok(ok && tl_count(ptx, STORE_BOX) == 8 && tl_count(ptx, "cp.async.bulk.commit_group") == 1 &&
               tl_count(ptx, "cp.async.bulk.wait_group.read 0") == 1 && !tl_count(ptx, "st.global") &&
               tl_count(ptx, "fence.proxy.async.shared::cta") >= 2,
           "C by a TMA store: 8 boxes of 128 x 32 f32 after a proxy fence, one bulk group, waited for "
           "until read; no st.global (%d boxes)", tl_count(ptx, STORE_BOX));
    tap_ok(ok && tl_count(ptx, "mbarrier.try_wait.parity") == 2 && tl_count(ptx, "mbarrier.init") == 8 &&
               tl_count(ptx, "mbarrier.arrive.expect_tx") == 6,
           "one wait per ring and iteration, 4 + 4 mbarriers set up, an expect_tx per copy");
    tap_ok(ok && tl_count(ptx, ".param .align 64 .b8") == 3 && tl_count(ptx, "[128]") == 3,
           "three 128-byte, 64-byte aligned tensor-map parameters (A, B, C)");
    tap_ok(ok && tl_count(ptx, "@p cp.async.bulk.tensor") == 15 && tl_count(ptx, "wgmma.mma_async") > 0,
           "copies predicated (the warp stays converged for wgmma)");
    const tjj_tmap_info *m = ok && art.gpu.ntmaps == 3 ? art.gpu.tmaps : NULL;
    tap_ok(m && m[0].base_param == 0 && src_is(&m[0].shape[0], 3, 0) && src_is(&m[0].shape[1], 5, 0) &&
               src_is(&m[0].strides[0], 6, 0) && src_is(&m[0].strides[1], -1, 1) && m[0].contiguous == 1 &&
               m[0].box[0] == 128 && m[0].box[1] == 64 && m[0].swizzle_bytes == 128 && m[0].elem_bytes == 2 &&
               m[0].dtype == TJ_F16 && m[0].rank == 2,
           "A's map: parameter 0, extents (M, K), strides (stride_am, 1), box 128 x 64, 128-byte swizzle");
    tap_ok(m && m[1].base_param == 1 && src_is(&m[1].shape[0], 5, 0) && src_is(&m[1].shape[1], 4, 0) &&
               src_is(&m[1].strides[0], 8, 0) && src_is(&m[1].strides[1], -1, 1) && m[1].contiguous == 1 &&
               m[1].box[0] == 64 && m[1].box[1] == 64,
           "B's map: parameter 1, extents (K, N), strides (stride_bk, 1), box 64 x 64");
    tap_ok(m && m[2].base_param == 2 && src_is(&m[2].shape[0], 3, 0) && src_is(&m[2].shape[1], 4, 0) &&
               src_is(&m[2].strides[0], 10, 0) && src_is(&m[2].strides[1], -1, 1) && m[2].contiguous == 1 &&
               m[2].box[0] == 128 && m[2].box[1] == 32 && m[2].swizzle_bytes == 128 && m[2].elem_bytes == 4 &&
               m[2].dtype == TJ_F32,
           "C's map: parameter 2, extents (M, N), strides (stride_cm, 1), box 128 x 32 f32, 128-byte swizzle");
    if (ok)
        tjj_artifact_free(&art);
}

static void a_falls_back(void)
{
    tjj_artifact art;
    int ok = compile(1000, 90, 1, 0, &art);
    const char *ptx = ok ? art.gpu.ptx : "";
    tap_ok(ok && tl_count(ptx, LOAD_BOX) == 12 && tl_count(ptx, "st.shared.b16") > 0 && art.gpu.ntmaps == 2 &&
               art.gpu.tmaps[0].base_param == 1 && art.gpu.tmaps[1].base_param == 2,
           "K = 1000 (A's row stride not known to be a multiple of 16): A copied by the threads, "
           "B by TMA (%d bulk copies), C's map after B's", tl_count(ptx, LOAD_BOX));
    if (ok)
        tjj_artifact_free(&art);
}

/* N = 4104 in rows of 4112: B's and C's rows are 16-byte strides, but C's
 * extent is no multiple of 16 elements, and the engine would store the
 * last chunk of a row whole. */
static void ragged_store(void)
{
    tjj_artifact art;
    spec_n = 4104, spec_ld = 4112;
    int ok = compile(4096, 90, 1, 0, &art);
    spec_n = 4096, spec_ld = 0;
    const char *ptx = ok ? art.gpu.ptx : "";
    tap_ok(ok && tl_count(ptx, LOAD_BOX) == 15 && !tl_count(ptx, STORE_BOX) && tl_count(ptx, "st.global") &&
               art.gpu.ntmaps == 2,
           "N = 4104 in rows of 4112 (C's extent no multiple of 16 elements): A and B by TMA, C by the threads");
    if (ok)
        tjj_artifact_free(&art);
}

static void no_tma(int sm, int arch_specific, int fallback, const char *what)
{
    tjj_artifact art;
    int ok = compile(4096, sm, arch_specific, fallback, &art);
    tap_ok(ok && !tl_count(art.gpu.ptx, "cp.async.bulk") && !tl_count(art.gpu.ptx, "mbarrier") && !art.gpu.ntmaps &&
               tl_count(art.gpu.ptx, "cp.async.cg") > 0,
           "%s: no TMA, cp.async", what);
    if (ok)
        tjj_artifact_free(&art);
}

/* tj_kernel_explain names the copies TMA's, with their boxes. */
static void explained(void)
{
    tj_arg args[12] = {NO_BUFFER, NO_BUFFER, NO_BUFFER, TJ_ARG_I32(4096), TJ_ARG_I32(4096), TJ_ARG_I32(4096),
                       TJ_ARG_I32(4096), TJ_ARG_I32(1), TJ_ARG_I32(4096), TJ_ARG_I32(1), TJ_ARG_I32(4096), TJ_ARG_I32(1)};
    int64_t consts[3] = {128, 256, 64};
    char *text = NULL;
    setenv("TJIT_PTX_TARGET", "sm_90a", 1);
    tj_status st = tj_kernel_explain(bp_matmul, args, 12, consts, 3, 8, &text);
    unsetenv("TJIT_PTX_TARGET");
    tap_ok(st == TJ_OK && strstr(text, "copies: TMA (cp.async.bulk.tensor) from tensor map 0, 1 box of 128 x 64") &&
               strstr(text, "from tensor map 1, 4 boxes of 64 x 64") && !strstr(text, "copies: cp.async") &&
               strstr(text, "TMA store (cp.async.bulk.tensor) to tensor map 2, 8 boxes of 128 x 32"),
           "the explainer says the copies and the store are TMA's, with their boxes");
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    free(text);
}

/* The PTX of kernel k (4 arguments: two pointers, M, N; 64 x 64 blocks)
 * for sm_90a, as a launch with M = N = 4096 would specialize it. */
static char *copy_ptx(const tj_kernel *k)
{
    tj_arg args[4] = {NO_BUFFER, NO_BUFFER, TJ_ARG_I32(4096), TJ_ARG_I32(4096)};
    int64_t consts[2] = {64, 64};
    char *ptx = NULL;
    if (tj_kernel_ptx_args(k, args, 4, consts, 2, "sm_90a", 4, &ptx) != TJ_OK) {
        tap_diag("%s", tj_last_error());
        return NULL;
    }
    if (tjj_ptxas_path() && tjj_ptxas_check(tjj_ptxas_path(), ptx, 90, 1, "copy") != TJ_OK) {
        tap_diag("%s", tj_last_error());
        free(ptx);
        return NULL;
    }
    return ptx;
}

/* A block-pointer load left as a load compiles for sm_90a with a spec that
 * would allow TMA (its tensor operands once reached code generation); the
 * store after it is a TMA store. */
static void unpipelined_copy(void)
{
    char *ptx = copy_ptx(bp_copy);
    tap_ok(ptx && !tl_count(ptx, LOAD_BOX) && tl_count(ptx, "ld.global") && tl_count(ptx, STORE_BOX) == 1 &&
               !tl_count(ptx, "st.global") && tl_count(ptx, "st.shared.v4.b32") == 4 &&
               tl_count(ptx, "cp.async.bulk.wait_group.read 0") == 1,
           "a block copy (no dot) for sm_90a: its load by the threads, its store by TMA (one 64 x 64 box, "
           "staged by 16-byte writes)");
    free(ptx);
}

/* Where a TMA store could be seen early, the threads store. */
static void stores_kept(void)
{
    char *ptx = copy_ptx(bp_store_in_loop);
    tap_ok(ptx && !tl_count(ptx, "cp.async.bulk") && tl_count(ptx, "st.global"),
           "a block store inside a loop: the threads store it");
    free(ptx);
    ptx = copy_ptx(bp_store_then_load);
    tap_ok(ptx && tl_count(ptx, STORE_BOX) == 1 && tl_count(ptx, "st.global") &&
               tl_count(ptx, "cp.async.bulk.wait_group 0") == 0,
           "a store followed by a load of the tensor: the threads store it; the last store is TMA's");
    free(ptx);
    ptx = copy_ptx(bp_two_stores);
    tap_ok(ptx && tl_count(ptx, STORE_BOX) == 2 && tl_count(ptx, "cp.async.bulk.wait_group 0;") == 1 &&
               tl_count(ptx, "cp.async.bulk.wait_group.read 0;") == 1,
           "two TMA stores: the first waits for its writes (a store follows), the last until read");
    free(ptx);
}

/* The batched matmul of 3-D descriptors (batched_desc.h) for sm_90a, with
 * Z = 4 problems of 512^3 and batch strides that are multiples of 16. */
static void batched(void)
{
    tj_arg args[BMM_NPARAMS] = {NO_BUFFER, NO_BUFFER, NO_BUFFER, TJ_ARG_I32(4), TJ_ARG_I32(512), TJ_ARG_I32(512),
                                TJ_ARG_I32(512), TJ_ARG_I32(512 * 512), TJ_ARG_I32(512 * 512),
                                TJ_ARG_I32(512 * 512)};
    tjf_value values[BMM_NPARAMS];
    int64_t consts[3] = {128, 128, 64};
    tji_func *fn = NULL;
    tjj_artifact art = {0};
    tj_status st = tjf_check_args(bmm_desc, args, BMM_NPARAMS, values);
    if (st == TJ_OK)
        st = tji_build(bmm_desc, consts, 3, &fn);
    if (st == TJ_OK)
        st = tjj_compile_gpu(fn, &(tjj_gpu_target){.sm = 90, .arch_specific = 1, .num_warps = 8,
                                                   .spec = tjf_spec_key(bmm_desc, values) |
                                                           tjj_spec_of_buffers(bmm_desc),
                                                   .num_stages = 3, .warp_specialize = TJ_WARP_SPECIALIZE_OFF},
                             &art);
    if (st == TJ_OK && tjj_ptxas_path())
        st = tjj_ptxas_check(tjj_ptxas_path(), art.gpu.ptx, 90, 1, fn->name);
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    const char *ptx = st == TJ_OK ? art.gpu.ptx : "";
    tap_ok(st == TJ_OK && tl_count(ptx, "cp.async.bulk.tensor.3d.shared::cluster.global") == 3 * 3 &&
               !tl_count(ptx, "cp.async.cg") && tl_count(ptx, "cp.async.bulk.tensor.3d.global.shared::cta") == 4 &&
               tl_count(ptx, "wgmma.mma_async") > 0,
           "3-D descriptors, sm_90a: A and B by 3-D TMA boxes (3 copies x (1 + 2) boxes), C by a 3-D TMA store "
           "(4 boxes), wgmma");
    const tjj_tmap_info *m = st == TJ_OK && art.gpu.ntmaps == 3 ? art.gpu.tmaps : NULL;
    int maps_ok = m != NULL;
    for (int i = 0; maps_ok && i < 3; i++)
        maps_ok = m[i].rank == 3 && m[i].contiguous == 2 && m[i].box[0] == 1 && src_is(&m[i].shape[0], 3, 0) &&
                  src_is(&m[i].strides[0], 7 + m[i].base_param, 0) && src_is(&m[i].strides[2], -1, 1);
    tap_ok(maps_ok && m[2].base_param == 2 && m[2].box[1] == 128 && m[2].box[2] == 32,
           "their maps are 3-D: extent Z and the batch stride argument in dimension 0, a box of one problem's "
           "tile (C's 1 x 128 x 32)");
    tji_func_free(fn);
    tjj_artifact_free(&art);
}

int main(void)
{
    tap_plan(19);
    both_by_tma();
    a_falls_back();
    ragged_store();
    no_tma(90, 0, 0, "sm_90");
    no_tma(90, 1, 1, "sm_90a with no_tma (the launch's fallback)");
    explained();
    unpipelined_copy();
    stores_kept();
    batched();
    return tap_done();
}
