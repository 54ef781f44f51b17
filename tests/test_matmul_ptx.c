/* SPDX-License-Identifier: MIT */
/*
 * test_matmul_ptx.c — the GPU code of Triton's tutorial matmul, read
 * without a GPU: what makes it fast must be in its PTX.
 *
 * The kernel is the tutorial's (samples/matmul_kernel.h): grouped program ids,
 * row and column offsets wrapped with `% M` and `% N`, a K tail masked,
 * pointer tiles carried by the loop; C is stored as the f32 accumulator,
 * so that every 16-bit shared access would be the K loop's. Compiled as a launch with
 * M = N = K = 4096 and unit inner strides would be (tjf_spec_key), for
 * sm_90 with 4 warps and 128x128x32 tiles, NN and NT (B stored N x K,
 * read through its strides: its tile's 16-byte pieces run along K):
 *  - unpipelined (num_stages 1): both tiles load 16-byte vectors (no
 *    ld.global.b16: the wrapped columns `% N` keep runs of 16 when N is a
 *    nonzero multiple of 16, axis_info.c's floored modulo) and the dot
 *    reads A by ldmatrix.x4 and B by ldmatrix.x4.trans (NN) or, stored
 *    transposed in shared memory, by ldmatrix.x4 (NT), never 16 bits at a
 *    time;
 *  - pipelined (num_stages 3): every copy is a 16-byte cp.async, and the
 *    rings are read by ldmatrix (x4 and x4.trans), never element by element
 *    (no ld.shared.b16: tjp_ldmatrix_ring), each instruction where the dot
 *    first reads its registers (an mma comes before the last ldmatrix),
 *    at 32-bit shared addresses (NVPTX's short pointers, target.c), most
 *    of them a register shared with other fragments plus an immediate
 *    offset (tjj_gpu_swizzled_index);
 *    the f32 epilogue's conversion moves 8- and 16-byte vectors;
 *  - with N = 1000 (not a multiple of 16) the wrapped column offsets may
 *    break anywhere, so B's loads are element loads: the rule claims no
 *    more than it knows;
 *  - the specialization gives "a multiple of 16" to 4096 and 16, not to 0
 *    (a divisor of 0 would make `x % n` constant, not consecutive);
 *  - with C in f16, the accumulator is cast before its conversion for the
 *    store, not after (layout_assign.c);
 *  - tj_kernel_explain shows the rings, their copies and ldmatrix reads.
 * Where make check sets TJIT_PTXAS, every PTX is assembled by ptxas.
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

MATMUL_TUTORIAL_KERNEL(tutorial_matmul, f16, f16, f32, TJ_F32, TJ_PRECISION_IEEE)
MATMUL_TUTORIAL_KERNEL(tutorial_matmul_f16, f16, f16, f16, TJ_F16, TJ_PRECISION_IEEE)

/* A buffer argument that is only a slot: compiles without launches look up no handle. */
#define NO_BUFFER TJ_ARG_BUF((tj_buffer){0})

/* A launch's arguments for these sizes (row-major A and C; B row-major,
 * or for NT stored N x K and read through its strides), and their
 * specialization key. */
static void launch_args(int32_t m, int32_t n, int32_t k, int nt, tj_arg args[12])
{
    const tj_arg a[12] = {NO_BUFFER, NO_BUFFER, NO_BUFFER, TJ_ARG_I32(m), TJ_ARG_I32(n),
                          TJ_ARG_I32(k), TJ_ARG_I32(k), TJ_ARG_I32(1), TJ_ARG_I32(nt ? 1 : n),
                          TJ_ARG_I32(nt ? k : 1), TJ_ARG_I32(n), TJ_ARG_I32(1)};
    memcpy(args, a, sizeof a);
}

static uint64_t spec_of(const tj_kernel *kernel, int32_t m, int32_t n, int32_t k, int nt)
{
    tj_arg args[12];
    launch_args(m, n, k, nt, args);
    tjf_value values[12];
    if (tjf_check_args(kernel, args, 12, values) != TJ_OK)
        return 0;
    return tjf_spec_key(kernel, values) | tjj_spec_of_buffers(kernel);
}

/* The PTX for sm_90, 4 warps, 128x128x32 tiles (NULL on failure, reported). */
static char *ptx_of(int32_t n, int stages, int nt)
{
    int64_t consts[4] = {128, 128, 32, 8};
    tji_func *fn = NULL;
    tjj_artifact art = {0};
    tj_status st = tji_build(tutorial_matmul, consts, 4, &fn);
    if (st == TJ_OK)
        st = tjj_compile_gpu(fn, &(tjj_gpu_target){.sm = 90, .num_warps = 4, .spec = spec_of(tutorial_matmul, 4096, n, 4096, nt),
                                                   .num_stages = stages},
                             &art);
    if (st == TJ_OK && tjj_ptxas_path())
        st = tjj_ptxas_check(tjj_ptxas_path(), art.gpu.ptx, 90, 0, fn->name);
    char *ptx = NULL;
    if (st == TJ_OK) {
        ptx = art.gpu.ptx;
        art.gpu.ptx = NULL;
    } else {
        tap_diag("N = %d, num_stages %d%s: %s", (int)n, stages, nt ? ", NT" : "", tj_last_error());
    }
    if (fn)
        tjj_artifact_free(&art);
    tji_func_free(fn);
    return ptx;
}

/* NN: B's 16-byte rows run along N, so B is read by ldmatrix.x4.trans;
 * NT: they run along K, the buffer stores B transposed (ldmatrix.c's second
 * swizzle) and B is read by plain ldmatrix.x4, like A. */
static const char *b_read(int nt) { return nt ? "x4 (stored transposed)" : "x4.trans"; }

static int ldmatrix_as_expected(const char *ptx, int nt)
{
    int plain = tl_count(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16");
    int trans = tl_count(ptx, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16");
    return nt ? plain > 0 && trans == 0 : plain > 0 && trans > 0;
}

static void unpipelined(int nt)
{
    char *ptx = ptx_of(4096, 1, nt);
    const char *p = nt ? "NT" : "NN";
    tap_ok(ptx && tl_count(ptx, "ld.global.b16") == 0 && tl_count(ptx, "ld.global.v4.b32") >= 2,
           "%s, num_stages 1: A and B load 16-byte vectors (ld.global.b16: %d)", p,
           ptx ? tl_count(ptx, "ld.global.b16") : -1);
    int b16 = ptx ? tl_count(ptx, "st.shared.b16") + tl_count(ptx, "ld.shared.b16") : -1;
    tap_ok(ptx && b16 == 0 && ldmatrix_as_expected(ptx, nt),
           "%s, num_stages 1: A read by ldmatrix.x4, B by ldmatrix.%s, no 16-bit shared accesses (%d)", p,
           b_read(nt), b16);
    free(ptx);
}

static void pipelined(int nt)
{
    char *ptx = ptx_of(4096, 3, nt);
    const char *p = nt ? "NT" : "NN";
    int copies16 = ptx ? tl_count(ptx, "cp.async.cg.shared.global") : 0;
    tap_ok(ptx && copies16 > 0 && tl_count(ptx, "cp.async.ca.") == 0 && tl_count(ptx, "st.shared.b16") == 0,
           "%s, num_stages 3: every copy a 16-byte cp.async.cg (%d), none element by element", p, copies16);
    int b16 = ptx ? tl_count(ptx, "ld.shared.b16") + tl_count(ptx, "ld.shared.u16") : -1;
    tap_ok(ptx && b16 == 0 && ldmatrix_as_expected(ptx, nt),
           "%s, num_stages 3: the rings are read by ldmatrix (A x4, B %s), no 16-bit shared loads (%d)", p,
           b_read(nt), b16);
    /* read where first used: not the whole tile before the first mma */
    const char *first_mma = ptx ? strstr(ptx, "mma.sync") : NULL, *last_ldm = NULL;
    for (const char *q = ptx; q && (q = strstr(q, "ldmatrix.sync")) != NULL; q++)
        last_ldm = q;
    tap_ok(first_mma && last_ldm && first_mma < last_ldm,
           "%s, num_stages 3: the dot's fragments are loaded between its mma instructions", p);
    /* shared addresses in 32 bits: one register each, 32-bit adds */
    int wide = 0, narrow = 0;
    for (const char *q = ptx; q && (q = strstr(q, "ldmatrix.sync")) != NULL; q++) {
        const char *end = strchr(q, '\n'), *at = strstr(q, "[%r");
        if (at && end && at < end)
            *(at[3] == 'd' ? &wide : &narrow) += 1;
    }
    tap_ok(ptx && narrow > 0 && wide == 0,
           "%s, num_stages 3: ldmatrix addresses are 32-bit registers (%d), none 64-bit (%d)", p, narrow, wide);
    /* fragments whose addresses differ only in bits no thread sets (other
     * m16 or n8 tiles) share one register and an immediate offset */
    int ldm = 0, offset = 0;
    for (const char *q = ptx; q && (q = strstr(q, "ldmatrix.sync")) != NULL; q++, ldm++) {
        const char *end = strchr(q, '\n'), *plus = strchr(q, '+');
        offset += plus && end && plus < end;
    }
    tap_ok(ptx && 4 * offset >= 3 * ldm,
           "%s, num_stages 3: at least 3 in 4 ldmatrix take an immediate offset from a shared register (%d of %d)",
           p, offset, ldm);
    /* the f32 epilogue: the accumulator's pairs written as 8 bytes, the
     * store's 16-byte vectors read back whole */
    int v2 = ptx ? tl_count(ptx, "st.shared.v2.b32") : 0, v4 = ptx ? tl_count(ptx, "ld.shared.v4.b32") : 0;
    int scalar = ptx ? tl_count(ptx, "st.shared.b32") + tl_count(ptx, "ld.shared.b32") : -1;
    tap_ok(ptx && v2 > 0 && v4 > 0 && scalar == 0,
           "%s, num_stages 3: the epilogue's conversion writes st.shared.v2 (%d) and reads ld.shared.v4 (%d), "
           "no 4-byte shared accesses (%d)", p, v2, v4, scalar);
    free(ptx);
}

static void ragged_columns(void)
{
    char *ptx = ptx_of(1000, 1, 0);
    tap_ok(ptx && tl_count(ptx, "ld.global.b16") > 0,
           "N = 1000: the wrapped columns may break anywhere, so B loads elements (%d ld.global.b16)",
           ptx ? tl_count(ptx, "ld.global.b16") : -1);
    free(ptx);
}

static void nonzero_multiples(void)
{
    uint64_t m16 = (uint64_t)TJF_SPEC_DIV16 << (TJF_SPEC_BITS * 4); /* N is parameter 4 */
    tap_ok((spec_of(tutorial_matmul, 4096, 4096, 4096, 0) & m16) &&
               (spec_of(tutorial_matmul, 4096, 16, 4096, 0) & m16),
           "4096 and 16 are nonzero multiples of 16");
    tap_ok(!(spec_of(tutorial_matmul, 4096, 0, 4096, 0) & m16), "0 is not specialized as a multiple of 16");
}

/* C in f16: the accumulator is cast in its mma layout and the f16 tile,
 * half the bytes, goes through shared memory to the store's layout. */
static void narrow_epilogue(void)
{
    int64_t consts[4] = {128, 128, 32, 8};
    tji_func *fn = NULL;
    tjj_gpu_planned planned = {0};
    tj_status st = tji_build(tutorial_matmul_f16, consts, 4, &fn);
    if (st == TJ_OK)
        st = tjj_gpu_plan(fn, &(tjj_gpu_target){.sm = 90, .num_warps = 4,
                                                .spec = spec_of(tutorial_matmul_f16, 4096, 4096, 4096, 0)},
                          &planned);
    int f16 = 0, f32 = 0, vectors_ok = 0;
    for (int32_t i = 0; st == TJ_OK && i < fn->nops; i++)
        if (fn->ops[i].code == TJI_CONVERT && fn->ops[i].parent == 0 &&
            planned.plan.shared[i].kind == TJP_STEP_CONVERT) {
            const tjp_shared_use *u = &planned.plan.shared[i].use;
            tj_dtype dt = tji_typeof(fn, fn->ops[i].args[0])->dtype;
            f16 += dt == TJ_F16;
            f32 += dt == TJ_F32;
            tjp_bank_count w, r;
            tjp_bank_cost(&u->write, &u->swizzle, u->write_vector, &w);
            tjp_bank_cost(&u->read, &u->swizzle, u->read_vector, &r);
            vectors_ok = u->write_vector == 2 && u->read_vector == 8 && w.requests > 0 &&
                         w.wavefronts == w.minimum && r.wavefronts == r.minimum;
            tap_diag("epilogue: vectors %d/%d, writes %lld wavefronts (minimum %lld), reads %lld (%lld)",
                     u->write_vector, u->read_vector, (long long)w.wavefronts, (long long)w.minimum,
                     (long long)r.wavefronts, (long long)r.minimum);
        }
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    tap_ok(st == TJ_OK && f16 == 1 && f32 == 0,
           "C in f16: the epilogue converts the cast f16 tile through shared memory (f16 %d, f32 %d)", f16, f32);
    tap_ok(vectors_ok, "C in f16: the conversion writes 4-byte pairs and reads 16-byte vectors, "
           "without bank conflicts");
    tjj_gpu_planned_free(&planned);
    tji_func_free(fn);
}

/* The explainer shows the rings of a launch's default plan (3 stages):
 * the copies and the ldmatrix reads, with their bank conflicts. */
static void rings_explained(void)
{
    int64_t consts[4] = {128, 128, 32, 8};
    tj_arg args[12];
    launch_args(4096, 4096, 4096, 0, args);
    char *text = NULL;
    tj_status st = tj_kernel_explain(tutorial_matmul, args, 12, consts, 4, 4, &text);
    int copies = text ? tl_count(text, "async copy (op") : 0, reads = text ? tl_count(text, "ring read (op") : 0;
    tap_ok(st == TJ_OK && copies >= 4 && reads == 2 &&
               strstr(text, "shared reads: ldmatrix.sync.aligned.m8n8.x4.trans.b16") &&
               !strstr(text, "bank conflicts: some"),
           "the explainer shows the rings: %d copies, %d ldmatrix reads, no bank conflicts claimed away", copies,
           reads);
    free(text);
}

int main(void)
{
    for (int nt = 0; nt < 2; nt++) {
        unpipelined(nt);
        pipelined(nt);
    }
    ragged_columns();
    nonzero_multiples();
    narrow_epilogue();
    rings_explained();
    return tap_done();
}
