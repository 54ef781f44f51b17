/* SPDX-License-Identifier: MIT */
/*
 * test_coalesce.c — the coalescing pass and the vector accesses it buys.
 *
 * Layouts: each kernel goes through the GPU pipeline's passes (axis info
 * with 16-byte aligned pointers, coalescing, layout assignment, verifier,
 * slot-by-slot check) and the chosen layouts are read back: how many
 * consecutive elements a thread holds along which dimension, which
 * dimension the lanes run along, and how many conversions were needed.
 * PTX: tj_kernel_ptx (pointers 16-byte aligned, scalars unknown) must use
 * ld.global.v4 / st.global.v4 where the pass chose vectors (LLVM 22 writes
 * untyped .b32 for f32 too; the predicated inline asm of masked or hinted
 * accesses keeps .f32), also
 * with cache hints, and plain scalar accesses in the fallbacks (a pointer one element
 * off, a stride of 2, a mask against an unknown bound). Under make check
 * ptxas assembles every PTX. Results: the kernels run on the test device
 * and must copy and add exactly.
 */
#include "testlib.h"

#include "builder/ir.h"
#include "passes/passes.h"
#include "jit/pipeline.h"

enum { WARPS = 4, N2 = 64 };

TJ_KERNEL(vadd, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32), TJ_PTR(out, f32)), TJ_CONSTS(BLOCK, HINTED))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val a = tj_load(tj_add(x, offs), .cache = HINTED ? TJ_CACHE_CG : TJ_CACHE_DEFAULT);
    tj_val b = tj_load(tj_add(y, offs));
    tj_store(tj_add(out, offs), tj_add(a, b), .cache = HINTED ? TJ_CACHE_CS : TJ_CACHE_DEFAULT);
}

TJ_KERNEL(copy_f16, TJ_PARAMS(TJ_PTR(x, f16), TJ_PTR(out, f16)), TJ_CONSTS(BLOCK))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_store(tj_add(out, offs), tj_load(tj_add(x, offs)));
}

/* The fallbacks, by MODE: 0 reads x + 1 + i (misaligned), 1 reads x + 2i
 * (strided), 2 masks with i < n (n unknown), 3 masks with i < 64 (a bound
 * known to be a multiple of 16: vectors stay). out[i] = source + 1. */
enum { MISALIGNED, STRIDED, MASK_UNKNOWN, MASK_CONST };
TJ_KERNEL(fallback, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(out, f32), TJ_SCALAR(n, i32)), TJ_CONSTS(MODE, BLOCK))
{
    tj_val offs = tj_arange(0, BLOCK);
    tj_val src = MODE == MISALIGNED ? tj_add(tj_add(x, 1), offs)
                 : MODE == STRIDED  ? tj_add(x, tj_mul(offs, 2))
                                    : tj_add(x, offs);
    tj_val mask = MODE == MASK_UNKNOWN ? tj_lt(offs, n) : MODE == MASK_CONST ? tj_lt(offs, 64) : (tj_val){0};
    tj_val v = tj_load(src, .mask = mask);
    tj_store(tj_add(out, offs), tj_add(v, 1), .mask = mask);
}

/* An N2 x N2 tile of src (row-major, rows N2 apart) written transposed to
 * dst. SWAP_LOAD: the load's strides are swapped instead of the store's.
 * PERMUTE: the tile is transposed with tj_trans and stored row-major. */
TJ_KERNEL(transpose, TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32)), TJ_CONSTS(SWAP_LOAD, PERMUTE))
{
    tj_val r = tj_expand_dims(tj_arange(0, N2), 1), c = tj_expand_dims(tj_arange(0, N2), 0);
    tj_val rowmajor = tj_add(tj_mul(r, N2), c), colmajor = tj_add(tj_mul(c, N2), r);
    if (PERMUTE) {
        tj_store(tj_add(dst, rowmajor), tj_trans(tj_load(tj_add(src, rowmajor))));
    } else {
        tj_val tile = tj_load(tj_add(src, SWAP_LOAD ? colmajor : rowmajor));
        tj_store(tj_add(dst, SWAP_LOAD ? rowmajor : colmajor), tile);
    }
}

/* One tile stored transposed twice: both stores want it in the same
 * other layout, and one conversion serves both. */
TJ_KERNEL(two_stores, TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(d1, f32), TJ_PTR(d2, f32)), TJ_CONSTS())
{
    tj_val r = tj_expand_dims(tj_arange(0, N2), 1), c = tj_expand_dims(tj_arange(0, N2), 0);
    tj_val tile = tj_load(tj_add(src, tj_add(tj_mul(r, N2), c)));
    tj_val colmajor = tj_add(tj_mul(c, N2), r);
    tj_store(tj_add(d1, colmajor), tile);
    tj_store(tj_add(d2, colmajor), tj_add(tile, 1));
}

/* --- the pipeline's passes ------------------------------------------------- */

typedef struct run {
    tji_func *fn;
    tjj_gpu_planned p;
} run;

static void run_free(run *R)
{
    tjj_gpu_planned_free(&R->p);
    tji_func_free(R->fn);
    memset(R, 0, sizeof *R);
}

static int passes(const tj_kernel *k, const int64_t *consts, int nconsts, run *R)
{
    memset(R, 0, sizeof *R);
    if (tji_build(k, consts, nconsts, &R->fn) != TJ_OK) {
        tap_diag("build: %s", tj_last_error());
        return 0;
    }
    tjj_gpu_target target = {.num_warps = WARPS, .spec = tjj_spec_of_buffers(k)};
    int ok = tjj_gpu_plan(R->fn, &target, &R->p) == TJ_OK;
    if (!ok) {
        tap_diag("%s", tj_last_error());
        run_free(R);
    }
    return ok;
}

/* The index of the nth op (from 0) with this code. */
static int32_t nth_op(const tji_func *fn, tji_opcode code, int nth)
{
    for (int32_t i = 0; i < fn->nops; i++)
        if (fn->ops[i].parent >= 0 && fn->ops[i].code == code && nth-- == 0)
            return i;
    return -1;
}

static int count_ops(const tji_func *fn, tji_opcode code)
{
    int n = 0;
    for (int32_t i = 0; i < fn->nops; i++)
        n += fn->ops[i].parent >= 0 && fn->ops[i].code == code;
    return n;
}

/* Row-major bit offset of dimension d. */
static int dim_bit(const tjp_layout *L, int d)
{
    int s = 0;
    for (int i = d + 1; i < L->rank; i++)
        s += __builtin_ctz((unsigned)L->shape[i]);
    return s;
}

/* Consecutive elements along d in a thread's lowest registers. */
static int per_thread(const tjp_layout *L, int d)
{
    int run = 1;
    for (int b = 0; b < L->nbits[TJP_REG] && L->basis[TJP_REG][b] == (uint32_t)run << dim_bit(L, d); b++)
        run *= 2;
    return run;
}

/* The dimension lane bit 0 moves along. */
static int lane_dim(const tjp_layout *L)
{
    uint32_t e = L->basis[TJP_LANE][0];
    for (int d = 0; d < L->rank; d++)
        if (e >> dim_bit(L, d) && !(e >> (dim_bit(L, d) + __builtin_ctz((unsigned)L->shape[d]))))
            return d;
    return -1;
}

/* The layout of the access op (its pointer's) and its vector width. */
static const tjp_layout *access_layout(const run *R, int32_t op, int *vector)
{
    *vector = R->p.plan.vector[op];
    return &R->p.plan.of[R->fn->ops[op].args[0]];
}

static void print_choices(const run *R)
{
    tjs_buf b = {0};
    tjp_coalesce_print(&b, R->fn, &R->p.coalesced);
    for (char *line = strtok(b.data, "\n"); line; line = strtok(NULL, "\n"))
        tap_diag("  %s", line);
    tjs_buf_free(&b);
}

static void test_vector_add_layouts(void)
{
    run R;
    int64_t consts[2] = {1024, 0};
    if (!passes(vadd, consts, 2, &R)) {
        tap_ok(0, "vector add: the passes run");
        return;
    }
    print_choices(&R);
    int good = 1;
    for (int k = 0; k < 3; k++) {
        int32_t op = k < 2 ? nth_op(R.fn, TJI_LOAD, k) : nth_op(R.fn, TJI_STORE, 0);
        int v;
        const tjp_layout *L = access_layout(&R, op, &v);
        good &= v == 4 && per_thread(L, 0) == 4 && lane_dim(L) == 0;
    }
    tap_ok(good && count_ops(R.fn, TJI_CONVERT) == 0,
           "vector add f32: loads and store hold 4 elements per thread, vectors of 4, no conversion");
    run_free(&R);

    int64_t block = 2048;
    if (passes(copy_f16, &block, 1, &R)) {
        int v1, v2;
        const tjp_layout *L = access_layout(&R, nth_op(R.fn, TJI_LOAD, 0), &v1);
        access_layout(&R, nth_op(R.fn, TJI_STORE, 0), &v2);
        tap_ok(v1 == 8 && v2 == 8 && per_thread(L, 0) == 8 && count_ops(R.fn, TJI_CONVERT) == 0,
               "copy f16: vectors of 8 (16 bytes), no conversion");
        run_free(&R);
    } else {
        tap_ok(0, "copy f16: the passes run");
    }

    /* A small tile is spread over all threads, not packed. */
    block = 128;
    if (passes(copy_f16, &block, 1, &R)) {
        int v;
        access_layout(&R, nth_op(R.fn, TJI_LOAD, 0), &v);
        tap_ok(v == 1, "copy f16 of 128 elements on 128 threads: one element each (got %d)", v);
        run_free(&R);
    } else {
        tap_ok(0, "copy f16 128: the passes run");
    }
}

static void test_fallback_layouts(void)
{
    static const struct {
        int mode, vector;
        const char *what;
    } cases[] = {
        {MISALIGNED, 1, "a pointer one element off"},
        {STRIDED, 1, "a stride of 2"},
        {MASK_UNKNOWN, 1, "a mask against an unknown bound"},
        {MASK_CONST, 4, "a mask against 64"},
    };
    for (size_t i = 0; i < TL_COUNT(cases); i++) {
        run R;
        int64_t consts[2] = {cases[i].mode, 1024};
        if (!passes(fallback, consts, 2, &R)) {
            tap_ok(0, "%s: the passes run", cases[i].what);
            continue;
        }
        int v;
        access_layout(&R, nth_op(R.fn, TJI_LOAD, 0), &v);
        tap_ok(v == cases[i].vector, "%s: the load's vector is %d (got %d)", cases[i].what,
               cases[i].vector, v);
        run_free(&R);
    }
}

static void test_transpose_layouts(void)
{
    static const struct {
        int64_t swap_load, permute;
        int load_dim, store_dim;
        const char *what;
    } cases[] = {
        {0, 0, 1, 0, "store with swapped strides"},
        {1, 0, 0, 1, "load with swapped strides"},
        {0, 1, 1, 1, "tj_trans, both row-major"},
    };
    for (size_t i = 0; i < TL_COUNT(cases); i++) {
        run R;
        int64_t consts[2] = {cases[i].swap_load, cases[i].permute};
        if (!passes(transpose, consts, 2, &R)) {
            tap_ok(0, "transpose, %s: the passes run", cases[i].what);
            continue;
        }
        print_choices(&R);
        int vl, vs, shared = 0;
        const tjp_layout *Ll = access_layout(&R, nth_op(R.fn, TJI_LOAD, 0), &vl);
        const tjp_layout *Ls = access_layout(&R, nth_op(R.fn, TJI_STORE, 0), &vs);
        for (int32_t k = 0; k < R.fn->nops; k++)
            if (R.fn->ops[k].parent >= 0 && R.fn->ops[k].code == TJI_CONVERT)
                shared += tjp_layout_conversion(&R.p.plan.of[R.fn->ops[k].args[0]],
                                                &R.p.plan.of[R.fn->ops[k].result]) == TJP_CONVERT_SHARED;
        int ok = vl == 4 && vs == 4 && lane_dim(Ll) == cases[i].load_dim &&
                 per_thread(Ll, cases[i].load_dim) == 4 && lane_dim(Ls) == cases[i].store_dim &&
                 per_thread(Ls, cases[i].store_dim) == 4 && count_ops(R.fn, TJI_CONVERT) == 1 && shared == 1;
        tap_ok(ok, "transpose, %s: lanes along dim %d to load, dim %d to store, vectors of 4, "
               "one conversion through shared memory", cases[i].what, cases[i].load_dim,
               cases[i].store_dim);
        if (!ok)
            tap_diag("  vectors %d %d, lane dims %d %d, conversions %d (%d shared)", vl, vs, lane_dim(Ll),
                     lane_dim(Ls), count_ops(R.fn, TJI_CONVERT), shared);
        run_free(&R);
    }
}

static void test_one_conversion(void)
{
    run R;
    if (!passes(two_stores, NULL, 0, &R)) {
        tap_ok(0, "two transposed stores: the passes run");
        return;
    }
    tap_ok(count_ops(R.fn, TJI_CONVERT) == 1, "two transposed stores of one tile: one conversion (got %d)",
           count_ops(R.fn, TJI_CONVERT));
    run_free(&R);
}

/* --- PTX ------------------------------------------------------------------- */

static char *ptx_of(const tj_kernel *k, const int64_t *consts, int nconsts)
{
    char *ptx = NULL;
    if (tj_kernel_ptx(k, consts, nconsts, "sm_90", WARPS, &ptx) != TJ_OK) {
        tap_diag("  tj_kernel_ptx: %s", tj_last_error());
        return NULL;
    }
    return ptx;
}

static int has_vector_access(const char *ptx)
{
    static const char *const forms[] = {"ld.global.v2", "ld.global.v4", "st.global.v2", "st.global.v4"};
    for (size_t i = 0; ptx && i < TL_COUNT(forms); i++)
        if (strstr(ptx, forms[i]))
            return 1;
    return 0;
}

static void test_ptx(void)
{
    int64_t consts[2] = {1024, 0};
    char *ptx = ptx_of(vadd, consts, 2);
    tap_ok(ptx && strstr(ptx, "ld.global.v4.b32") && strstr(ptx, "st.global.v4.b32"),
           "vector add PTX: ld.global.v4.b32 and st.global.v4.b32 (LLVM 22 spells f32 .b32)");
    free(ptx);

    consts[1] = 1;
    ptx = ptx_of(vadd, consts, 2);
    tap_ok(ptx && strstr(ptx, "ld.global.cg.v4.f32") && strstr(ptx, "st.global.cs.v4.f32"),
           "vector add with hints: ld.global.cg.v4.f32 and st.global.cs.v4.f32");
    free(ptx);

    int64_t block = 2048;
    ptx = ptx_of(copy_f16, &block, 1);
    tap_ok(ptx && strstr(ptx, "ld.global.v4.b32") && strstr(ptx, "st.global.v4.b32"),
           "copy f16 PTX: eight halves per ld.global.v4.b32 / st.global.v4.b32");
    free(ptx);

    /* The load is off; the store to out + i is aligned and stays a vector. */
    static const char *const what[] = {"misaligned", "strided"};
    for (int mode = MISALIGNED; mode <= STRIDED; mode++) {
        int64_t c[2] = {mode, 1024};
        ptx = ptx_of(fallback, c, 2);
        tap_ok(ptx && !strstr(ptx, "ld.global.v") && strstr(ptx, "ld.global.b32") &&
               strstr(ptx, "st.global.v4.b32"), "%s load: scalar ld.global.b32; the store: st.global.v4.b32",
               what[mode]);
        free(ptx);
    }
    int64_t masked[2] = {MASK_UNKNOWN, 1024};
    ptx = ptx_of(fallback, masked, 2);
    tap_ok(ptx && !has_vector_access(ptx) && strstr(ptx, "ld.global.f32") && strstr(ptx, "st.global.f32"),
           "masked by an unknown n: scalar predicated ld.global.f32 / st.global.f32 only");
    free(ptx);
    int64_t c[2] = {MASK_CONST, 1024};
    ptx = ptx_of(fallback, c, 2);
    tap_ok(ptx && strstr(ptx, "ld.global.v4.f32") && strstr(ptx, "st.global.v4.f32") &&
               strstr(ptx, "@%p"),
           "masked by i < 64: still vectors, predicated ld.global.v4.f32 / st.global.v4.f32");
    free(ptx);

    int64_t t[2] = {0, 0};
    ptx = ptx_of(transpose, t, 2);
    tap_ok(ptx && strstr(ptx, "ld.global.v4.b32") && strstr(ptx, "st.global.v4.b32"),
           "transpose by swapped store strides: both sides ld/st.global.v4.b32");
    free(ptx);
}

/* --- results --------------------------------------------------------------- */

static void test_results(tj_device *dev)
{
    enum { BLOCK = 1024, PROGRAMS = 4, TOTAL = BLOCK * PROGRAMS }; /* TOTAL >= N2 * N2 */
    static float x[TOTAL + 2 * BLOCK], y[TOTAL], got[TOTAL], want[TOTAL];
    tl_fill_random(TJ_F32, x, TL_COUNT(x));
    tl_fill_random(TJ_F32, y, TOTAL);
    tj_buffer bx = tl_upload(dev, x, sizeof x), by = tl_upload(dev, y, sizeof y);
    tj_buffer bo = tl_poisoned(dev, sizeof got);
    for (int hinted = 0; hinted < 2; hinted++) {
        tl_repoison(dev, bo, sizeof got);
        tj_launch_cfg cfg = tl_grid(PROGRAMS, 1, 1);
        cfg.num_warps = WARPS;
        if (!tl_launch_failed(vadd_launch(dev, &cfg, bx, by, bo, BLOCK, hinted), "vector add")) {
            for (int i = 0; i < TOTAL; i++)
                want[i] = x[i] + y[i];
            tl_download(dev, bo, got, sizeof got);
            tl_check(hinted ? "vector add with hints" : "vector add", TJ_F32, got, want, TOTAL, 0, 0);
        }
    }
    int n = (int)tl_rand_range(1, BLOCK - 1);
    static const char *const what[] = {"misaligned", "strided", "masked by n", "masked by 64"};
    for (int mode = MISALIGNED; mode <= MASK_CONST; mode++) {
        float poison[BLOCK];
        tl_repoison(dev, bo, sizeof got);
        tl_download(dev, bo, poison, sizeof poison);
        tj_launch_cfg cfg = tl_grid(1, 1, 1);
        cfg.num_warps = WARPS;
        if (tl_launch_failed(fallback_launch(dev, &cfg, bx, bo, n, mode, BLOCK), what[mode]))
            continue;
        for (int i = 0; i < BLOCK; i++) {
            int live = mode == MASK_UNKNOWN ? i < n : mode == MASK_CONST ? i < 64 : 1;
            float src = mode == MISALIGNED ? x[i + 1] : mode == STRIDED ? x[2 * i] : x[i];
            want[i] = live ? src + 1 : poison[i];
        }
        tl_download(dev, bo, got, BLOCK * sizeof(float));
        tl_check(what[mode], TJ_F32, got, want, BLOCK, 0, 0);
    }
    static const char *const tname[] = {"transpose by store strides", "transpose by load strides",
                                        "transpose by tj_trans"};
    for (int k = 0; k < 3; k++) {
        tl_repoison(dev, bo, sizeof got);
        tj_launch_cfg cfg = tl_grid(1, 1, 1);
        cfg.num_warps = WARPS;
        if (tl_launch_failed(transpose_launch(dev, &cfg, bx, bo, k == 1, k == 2), tname[k]))
            continue;
        for (int i = 0; i < N2; i++)
            for (int j = 0; j < N2; j++)
                want[j * N2 + i] = x[i * N2 + j];
        tl_download(dev, bo, got, N2 * N2 * sizeof(float));
        tl_check(tname[k], TJ_F32, got, want, N2 * N2, 0, 0);
    }
    tj_buffer_free(dev, bx);
    tj_buffer_free(dev, by);
    tj_buffer_free(dev, bo);
}

int main(void)
{
    tj_device *dev = tl_setup("test_coalesce");
    test_vector_add_layouts();
    test_fallback_layouts();
    test_transpose_layouts();
    test_one_conversion();
    test_ptx();
    test_results(dev);
    tj_device_close(dev);
    return tap_done();
}
