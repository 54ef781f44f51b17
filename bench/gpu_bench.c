/* SPDX-License-Identifier: MIT */
/*
 * gpu_bench — tjit's kernels on the GPU, timed with CUDA events, for the
 * side-by-side comparison with Triton (bench/triton_bench.py holds the same
 * kernels in Triton; bench/gpu_compare.sh runs both and joins them).
 *
 * Five memory-bound fp32 kernels, each far larger than the 60 MB L2:
 * vector add (2^28 elements); strided add, out[i] = x[i*s] + y[i*s] for
 * s = 1, 2, 4, 8 (2^25 outputs); transpose (8192 x 8192, 64 x 64 tiles on a
 * 2-D grid; once with tj_trans, once as transpose_ptrs, storing the tile
 * through swapped pointers); row softmax (8192 x 4096, one program per row,
 * BLOCK = 4096); 3x3 box filter with zero padding (8192 x 8192). Tile sizes
 * and warp counts are the ones triton_bench.py uses.
 *
 * Softmax and the box filter also run in a few other configurations, the
 * same list on both sides (softmax_warps_tried and box_configs here,
 * SOFTMAX_WARPS_TRIED and BOX_CONFIGS in triton_bench.py): the first of
 * each list is the reference row ("softmax", "box_filter"), the others are
 * named after their configuration ("softmax_w8", "box_filter_32x64_w8"), so
 * that each compiler's best configuration can be compared too.
 *
 * The math of the softmax rows is Triton's on both sides: Triton's tl.exp
 * is ex2.approx of x*log2(e) and its f32 `/` is div.full.f32, which are
 * tjit's tj_fast_exp and tj_fast_div. Two more softmax rows:
 * "softmax_precise" (tjit's tj_exp, within 2 ulp, and IEEE tj_div, against
 * Triton with libdevice's exp and tl.math.div_rn) shows what accurate math
 * costs on each side; "softmax_fast" computes exp2((x - max) * log2(e)) and
 * one reciprocal of the sum per row multiplied in, the cheapest form.
 *
 * Definitions, the same on both sides:
 *
 *   bandwidth     WARMUP launches, then RUNS launches each between two CUDA
 *                 events recorded on the default stream, all enqueued back
 *                 to back so the GPU stays busy and the host's launch time
 *                 stays outside the intervals; the figure is the median
 *                 interval. GB/s counts useful bytes (1e9 a GB): each element
 *                 the algorithm must read once plus each element it writes
 *                 once — 3*n*4 for vector and strided add whatever the
 *                 stride, 2*R*C*4 for transpose, softmax and box filter —
 *                 not the sectors the hardware fetches.
 *   cold_compile  wall time of a kernel's first launch and a synchronize
 *                 (building the tile program, LLVM, PTX, module load, the
 *                 run) minus the median of ten warm launches with a
 *                 synchronize, on a small problem (vector add on 4096
 *                 elements, softmax on one row of 4096), in a process where a
 *                 tiny primer kernel has already started the compiler; the
 *                 on-disk cache, where tjit has one, is a fresh empty
 *                 directory (TJIT_CACHE_DIR, removed at exit). The primer's own first launch is
 *                 reported as first_compile.
 *   ptx_compile   wall time of tj_kernel_ptx for the GPU's target: the
 *                 compiler alone, without the driver's PTX-to-SASS step
 *                 (median of 3 calls; it has no cache).
 *   launch_cost   host wall time of N back-to-back launches of vector add on
 *                 4096 elements without synchronizing, divided by N; the
 *                 median of 5 batches; once through the typed
 *                 name_launch() entry point, once through tj_launch().
 *
 * tjit launches on the primary context and the NULL stream, so the events
 * (CUDA driver functions this program loads itself with dlopen) go on the
 * NULL stream of the same context. Each kernel's result is checked once
 * against a C reference after the output was poisoned with NaN: all of it
 * for the exact kernels, sampled rows for softmax and the box filter.
 *
 * TJIT_PTXAS, TJIT_LAUNCH_BLOCKING and TJIT_DUMP are unset: they would
 * add work to what is timed.
 *
 * Output: one JSON line per measurement. A kernel that fails to build or
 * launch is a line with "error", and the run goes on with the next one; the
 * exit status is 1 when any kernel failed or computed a wrong result.
 *
 *     usage: gpu_bench [--runs N] [--warmup N] [--quick] [--device gpu|cpu]
 *     (--quick: small sizes; --device cpu: a smoke test of this program on
 *      tjit's CPU back end where there is no GPU, timed by wall clock)
 */
#define _GNU_SOURCE /* nftw, mkdtemp, setenv */
#include <dlfcn.h>
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tjit.h"
#include "bench_util.h"

/* ------------------------------------------------------------------------ */
/* The tjit kernels                                                         */
/* ------------------------------------------------------------------------ */

enum {
    ADD_BLOCK = 1024, ADD_WARPS = 4,
    TRANSPOSE_TILE = 64, TRANSPOSE_WARPS = 4,
    SOFTMAX_WARPS = 16, /* the reference configuration: the first of the lists below */
    PRIMER_BLOCK = 128,
    LAUNCH_N = 4096, LAUNCH_CALLS = 1000, LAUNCH_BATCHES = 5
};

TJ_KERNEL(primer_kernel, TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32)), TJ_CONSTS(BLOCK))
{
    tj_val offs = tj_arange(0, BLOCK);
    tj_store(tj_add(dst, offs), tj_add(tj_load(tj_add(src, offs)), 1.0f));
}

TJ_KERNEL(vector_add_kernel,
          TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32), TJ_PTR(out, f32), TJ_SCALAR(n, i32)),
          TJ_CONSTS(BLOCK))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val mask = tj_lt(offs, n);
    tj_val a = tj_load(tj_add(x, offs), .mask = mask);
    tj_val b = tj_load(tj_add(y, offs), .mask = mask);
    tj_store(tj_add(out, offs), tj_add(a, b), .mask = mask);
}

TJ_KERNEL(strided_add_kernel,
          TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(y, f32), TJ_PTR(out, f32), TJ_SCALAR(n, i32),
                    TJ_SCALAR(stride, i32)),
          TJ_CONSTS(BLOCK))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val mask = tj_lt(offs, n);
    tj_val in_offs = tj_mul(offs, stride);
    tj_val a = tj_load(tj_add(x, in_offs), .mask = mask);
    tj_val b = tj_load(tj_add(y, in_offs), .mask = mask);
    tj_store(tj_add(out, offs), tj_add(a, b), .mask = mask);
}

/* Load a tile of rows r, columns c; store its transpose as the tile of dst
 * at rows c, columns r (contiguous along r). The store's mask is computed
 * in the stored orientation rather than transposed. */
TJ_KERNEL(transpose_kernel,
          TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(rows, i32),
                    TJ_SCALAR(cols, i32)),
          TJ_CONSTS(TILE_R, TILE_C))
{
    tj_val r = tj_add(tj_mul(tj_program_id(0), TILE_R), tj_arange(0, TILE_R));
    tj_val c = tj_add(tj_mul(tj_program_id(1), TILE_C), tj_arange(0, TILE_C));
    tj_val r_col = tj_expand_dims(r, 1), c_row = tj_expand_dims(c, 0);
    tj_val load_mask = tj_and(tj_lt(r_col, rows), tj_lt(c_row, cols));
    tj_val tile = tj_load(tj_add(src, tj_add(tj_mul(r_col, cols), c_row)), .mask = load_mask);
    tj_val c_col = tj_expand_dims(c, 1), r_row = tj_expand_dims(r, 0);
    tj_val store_mask = tj_and(tj_lt(c_col, cols), tj_lt(r_row, rows));
    tj_store(tj_add(dst, tj_add(tj_mul(c_col, rows), r_row)), tj_trans(tile),
             .mask = store_mask);
}

/* The same transpose without tj_trans: the loaded tile is stored unchanged
 * through pointers with the roles of rows and columns swapped; making the
 * stores contiguous is then the compiler's business. */
TJ_KERNEL(transpose_ptrs_kernel,
          TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(rows, i32),
                    TJ_SCALAR(cols, i32)),
          TJ_CONSTS(TILE_R, TILE_C))
{
    tj_val r = tj_expand_dims(tj_add(tj_mul(tj_program_id(0), TILE_R), tj_arange(0, TILE_R)), 1);
    tj_val c = tj_expand_dims(tj_add(tj_mul(tj_program_id(1), TILE_C), tj_arange(0, TILE_C)), 0);
    tj_val mask = tj_and(tj_lt(r, rows), tj_lt(c, cols));
    tj_val tile = tj_load(tj_add(src, tj_add(tj_mul(r, cols), c)), .mask = mask);
    tj_store(tj_add(dst, tj_add(tj_mul(c, rows), r)), tile, .mask = mask);
}

/* PRECISE = 0: Triton's math (tj_fast_exp, tj_fast_div); 1: tj_exp, tj_div. */
TJ_KERNEL(softmax_kernel,
          TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(cols, i32),
                    TJ_SCALAR(row_stride, i32)),
          TJ_CONSTS(BLOCK, PRECISE))
{
    tj_val row_start = tj_mul(tj_program_id(0), row_stride);
    tj_val offs = tj_arange(0, BLOCK);
    tj_val mask = tj_lt(offs, cols);
    tj_val x = tj_load(tj_add(src, tj_add(row_start, offs)), .mask = mask,
                       .other = tj_f32(-INFINITY));
    tj_val shifted = tj_sub(x, tj_max(x, 0));
    tj_val num = PRECISE ? tj_exp(shifted) : tj_fast_exp(shifted);
    tj_val sum = tj_sum(num, 0);
    tj_store(tj_add(dst, tj_add(row_start, offs)), PRECISE ? tj_div(num, sum) : tj_fast_div(num, sum),
             .mask = mask);
}

/* The same function as softmax_kernel with the cheaper math: exp2 of the
 * scaled difference (one ex2 instruction) and one reciprocal per row. */
TJ_KERNEL(softmax_fast_kernel,
          TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(cols, i32),
                    TJ_SCALAR(row_stride, i32)),
          TJ_CONSTS(BLOCK))
{
    tj_val row_start = tj_mul(tj_program_id(0), row_stride);
    tj_val offs = tj_arange(0, BLOCK);
    tj_val mask = tj_lt(offs, cols);
    tj_val x = tj_load(tj_add(src, tj_add(row_start, offs)), .mask = mask,
                       .other = tj_f32(-INFINITY));
    tj_val num = tj_exp2(tj_mul(tj_sub(x, tj_max(x, 0)), 1.4426950408889634f));
    tj_store(tj_add(dst, tj_add(row_start, offs)), tj_mul(num, tj_div(1.0f, tj_sum(num, 0))),
             .mask = mask);
}

TJ_KERNEL(box_filter_kernel,
          TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(height, i32),
                    TJ_SCALAR(width, i32)),
          TJ_CONSTS(BLOCK_H, BLOCK_W))
{
    tj_val r = tj_expand_dims(tj_add(tj_mul(tj_program_id(0), BLOCK_H), tj_arange(0, BLOCK_H)), 1);
    tj_val c = tj_expand_dims(tj_add(tj_mul(tj_program_id(1), BLOCK_W), tj_arange(0, BLOCK_W)), 0);
    tj_val acc = tj_zeros(TJ_SHAPE(BLOCK_H, BLOCK_W), TJ_F32);
    for (int dr = -1; dr <= 1; dr++) {
        tj_val rr = tj_add(r, dr);
        tj_val row_ok = tj_and(tj_ge(rr, 0), tj_lt(rr, height));
        for (int dc = -1; dc <= 1; dc++) {
            tj_val cc = tj_add(c, dc);
            tj_val inside = tj_and(row_ok, tj_and(tj_ge(cc, 0), tj_lt(cc, width)));
            acc = tj_add(acc, tj_load(tj_add(src, tj_add(tj_mul(rr, width), cc)),
                                      .mask = inside, .other = tj_f32(0)));
        }
    }
    tj_val out_mask = tj_and(tj_lt(r, height), tj_lt(c, width));
    tj_store(tj_add(dst, tj_add(tj_mul(r, width), c)), tj_mul(acc, 1.0f / 9.0f),
             .mask = out_mask);
}

/* ------------------------------------------------------------------------ */
/* CUDA events, from the driver loaded here                                 */
/* ------------------------------------------------------------------------ */

typedef struct CUctx_st *cu_context;
typedef struct CUstream_st *cu_stream;
typedef struct CUevent_st *cu_event;

static struct {
    unsigned (*device_get)(int *device, int ordinal);
    unsigned (*device_get_attribute)(int *value, unsigned attribute, int device);
    unsigned (*primary_ctx_retain)(cu_context *ctx, int device);
    unsigned (*ctx_set_current)(cu_context ctx);
    unsigned (*event_create)(cu_event *event, unsigned flags);
    unsigned (*event_record)(cu_event event, cu_stream stream);
    unsigned (*event_synchronize)(cu_event event);
    unsigned (*event_elapsed_time)(float *ms, cu_event start, cu_event end);
    unsigned (*event_destroy)(cu_event event);
    unsigned (*get_error_name)(unsigned result, const char **name);
} cu;

static char cu_error[256];

/* A driver call's failure as text in cu_error; returns whether it failed. */
static int cu_failed(unsigned result, const char *what)
{
    if (result == 0)
        return 0;
    const char *name = NULL;
    if (cu.get_error_name(result, &name) != 0 || !name)
        name = "unknown CUDA error";
    snprintf(cu_error, sizeof cu_error, "%s: %s (%u)", what, name, result);
    return 1;
}

/* dlsym gives a data pointer; memcpy makes it the function pointer. */
static int resolve(void *lib, void *fn_ptr, size_t size, const char *symbol,
                   const char *fallback)
{
    void *p = dlsym(lib, symbol);
    if (!p && fallback)
        p = dlsym(lib, fallback);
    if (!p) {
        snprintf(cu_error, sizeof cu_error, "libcuda.so.1 lacks %s", symbol);
        return 0;
    }
    memcpy(fn_ptr, &p, size);
    return 1;
}

static char ptx_target[16]; /* "sm_90": GPU 0's compute capability */

/* Loads the event functions, makes GPU 0's primary context (the one tjit
 * launches in) current on this thread and names the GPU's PTX target. */
static int cuda_events_init(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(cu_error, sizeof cu_error, "dlopen: %s", dlerror());
        return 0;
    }
#define RESOLVE(field, symbol, fallback) \
    resolve(lib, &cu.field, sizeof cu.field, symbol, fallback)
    if (!RESOLVE(device_get, "cuDeviceGet", NULL) ||
        !RESOLVE(device_get_attribute, "cuDeviceGetAttribute", NULL) ||
        !RESOLVE(primary_ctx_retain, "cuDevicePrimaryCtxRetain", NULL) ||
        !RESOLVE(ctx_set_current, "cuCtxSetCurrent", NULL) ||
        !RESOLVE(event_create, "cuEventCreate", NULL) ||
        !RESOLVE(event_record, "cuEventRecord", NULL) ||
        !RESOLVE(event_synchronize, "cuEventSynchronize", NULL) ||
        !RESOLVE(event_elapsed_time, "cuEventElapsedTime_v2", "cuEventElapsedTime") ||
        !RESOLVE(event_destroy, "cuEventDestroy_v2", NULL) ||
        !RESOLVE(get_error_name, "cuGetErrorName", NULL))
        return 0;
#undef RESOLVE
    enum { COMPUTE_CAPABILITY_MAJOR = 75, COMPUTE_CAPABILITY_MINOR = 76 };
    int device, major, minor;
    cu_context ctx;
    if (cu_failed(cu.device_get(&device, 0), "cuDeviceGet") ||
        cu_failed(cu.device_get_attribute(&major, COMPUTE_CAPABILITY_MAJOR, device),
                  "cuDeviceGetAttribute") ||
        cu_failed(cu.device_get_attribute(&minor, COMPUTE_CAPABILITY_MINOR, device),
                  "cuDeviceGetAttribute") ||
        cu_failed(cu.primary_ctx_retain(&ctx, device), "cuDevicePrimaryCtxRetain") ||
        cu_failed(cu.ctx_set_current(ctx), "cuCtxSetCurrent"))
        return 0;
    snprintf(ptx_target, sizeof ptx_target, "sm_%d%d", major, minor);
    return 1;
}

/* ------------------------------------------------------------------------ */
/* Output                                                                   */
/* ------------------------------------------------------------------------ */

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch == '\n')
            fputs("\\n", stdout);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
}

static const char *device_name = "";

/* Starts a JSON line: {"impl":"tjit","what":WHAT,"kernel":KERNEL */
static void record_begin(const char *what, const char *kernel)
{
    printf("{\"impl\":\"tjit\",\"what\":\"%s\"", what);
    if (kernel)
        printf(",\"kernel\":\"%s\"", kernel);
}

static void record_end(void)
{
    fputs(",\"device\":", stdout);
    json_string(device_name);
    puts("}");
    fflush(stdout);
}

static void record_error(const char *what, const char *kernel, const char *message)
{
    record_begin(what, kernel);
    fputs(",\"error\":", stdout);
    json_string(message);
    record_end();
    fprintf(stderr, "gpu_bench: %s %s: %s\n", what, kernel ? kernel : "", message);
}

/* A tjit failure as "TJ_ERR_X: message". */
static const char *tj_failure(tj_status status)
{
    static char text[1024];
    snprintf(text, sizeof text, "%s: %s", tj_status_name(status), tj_last_error());
    return text;
}

/* ------------------------------------------------------------------------ */
/* Jobs: one kernel with its buffers and sizes, and its timing              */
/* ------------------------------------------------------------------------ */

struct job {
    const char *kernel;       /* the name in the output */
    tj_status (*launch)(const struct job *j);
    tj_buffer x, y, out;
    int32_t n, stride;        /* vector and strided add */
    int32_t rows, cols;       /* transpose, softmax (rows x cols), box (height x width) */
    int tile_r, tile_c;       /* box filter tile */
    int warps;                /* softmax, box filter */
};

/* The configurations tried on both sides (triton_bench.py has the same
 * lists); the first of each is the reference one. */
static const int softmax_warps_tried[] = {SOFTMAX_WARPS, 8, 4};
static const struct { int tile_r, tile_c, warps; } box_configs[] = {
    {16, 64, 4}, {32, 64, 4}, {32, 64, 8}, {16, 128, 4}, {32, 128, 8}, {64, 64, 8}};

static tj_device *dev;
static int use_events = 1, runs = 100, warmup = 10;

static tj_status launch_primer(const struct job *j)
{
    tj_launch_cfg cfg = {.grid = {1}, .num_warps = 4};
    return primer_kernel_launch(dev, &cfg, j->x, j->out, PRIMER_BLOCK);
}

static tj_status launch_vector_add(const struct job *j)
{
    tj_launch_cfg cfg = {.grid = {(j->n + ADD_BLOCK - 1) / ADD_BLOCK}, .num_warps = ADD_WARPS};
    return vector_add_kernel_launch(dev, &cfg, j->x, j->y, j->out, j->n, ADD_BLOCK);
}

static tj_status launch_strided_add(const struct job *j)
{
    tj_launch_cfg cfg = {.grid = {(j->n + ADD_BLOCK - 1) / ADD_BLOCK}, .num_warps = ADD_WARPS};
    return strided_add_kernel_launch(dev, &cfg, j->x, j->y, j->out, j->n, j->stride,
                                     ADD_BLOCK);
}

static tj_status launch_transpose(const struct job *j)
{
    tj_launch_cfg cfg = {.grid = {(j->rows + TRANSPOSE_TILE - 1) / TRANSPOSE_TILE,
                                  (j->cols + TRANSPOSE_TILE - 1) / TRANSPOSE_TILE},
                         .num_warps = TRANSPOSE_WARPS};
    return transpose_kernel_launch(dev, &cfg, j->x, j->out, j->rows, j->cols, TRANSPOSE_TILE,
                                   TRANSPOSE_TILE);
}

static tj_status launch_transpose_ptrs(const struct job *j)
{
    tj_launch_cfg cfg = {.grid = {(j->rows + TRANSPOSE_TILE - 1) / TRANSPOSE_TILE,
                                  (j->cols + TRANSPOSE_TILE - 1) / TRANSPOSE_TILE},
                         .num_warps = TRANSPOSE_WARPS};
    return transpose_ptrs_kernel_launch(dev, &cfg, j->x, j->out, j->rows, j->cols,
                                        TRANSPOSE_TILE, TRANSPOSE_TILE);
}

static int64_t next_pow2(int64_t n)
{
    int64_t p = 1;
    while (p < n)
        p *= 2;
    return p;
}

static tj_status launch_softmax(const struct job *j)
{
    tj_launch_cfg cfg = {.grid = {j->rows}, .num_warps = j->warps};
    return softmax_kernel_launch(dev, &cfg, j->x, j->out, j->cols, j->cols,
                                 next_pow2(j->cols), 0);
}

static tj_status launch_softmax_precise(const struct job *j)
{
    tj_launch_cfg cfg = {.grid = {j->rows}, .num_warps = j->warps};
    return softmax_kernel_launch(dev, &cfg, j->x, j->out, j->cols, j->cols,
                                 next_pow2(j->cols), 1);
}

static tj_status launch_softmax_fast(const struct job *j)
{
    tj_launch_cfg cfg = {.grid = {j->rows}, .num_warps = j->warps};
    return softmax_fast_kernel_launch(dev, &cfg, j->x, j->out, j->cols, j->cols,
                                      next_pow2(j->cols));
}

static tj_status launch_box_filter(const struct job *j)
{
    tj_launch_cfg cfg = {.grid = {(j->rows + j->tile_r - 1) / j->tile_r,
                                  (j->cols + j->tile_c - 1) / j->tile_c},
                         .num_warps = j->warps};
    return box_filter_kernel_launch(dev, &cfg, j->x, j->out, j->rows, j->cols, j->tile_r,
                                    j->tile_c);
}

/* The median time of one launch in ms (see the top comment), or a negative
 * value after reporting the failure as the kernel's bandwidth record. */
static double median_launch_ms(const struct job *j)
{
    tj_status st = TJ_OK;
    for (int i = 0; i < warmup && st == TJ_OK; i++)
        st = j->launch(j);
    if (st != TJ_OK) {
        record_error("bandwidth", j->kernel, tj_failure(st));
        return -1;
    }
    double *ms = xmalloc((size_t)runs * sizeof(double));
    if (use_events) {
        cu_event *events = xmalloc(2 * (size_t)runs * sizeof(cu_event));
        int created = 0, ok = 1;
        while (ok && created < 2 * runs) {
            if (cu_failed(cu.event_create(&events[created], 0), "cuEventCreate"))
                ok = 0;
            else
                created++;
        }
        for (int r = 0; ok && r < runs; r++) {
            ok = !cu_failed(cu.event_record(events[2 * r], NULL), "cuEventRecord");
            if (ok && (st = j->launch(j)) != TJ_OK)
                ok = 0;
            ok = ok && !cu_failed(cu.event_record(events[2 * r + 1], NULL), "cuEventRecord");
        }
        ok = ok && !cu_failed(cu.event_synchronize(events[2 * runs - 1]), "cuEventSynchronize");
        for (int r = 0; ok && r < runs; r++) {
            float t;
            ok = !cu_failed(cu.event_elapsed_time(&t, events[2 * r], events[2 * r + 1]),
                            "cuEventElapsedTime");
            ms[r] = t;
        }
        for (int i = 0; i < created; i++)
            cu.event_destroy(events[i]);
        free(events);
        if (!ok) {
            record_error("bandwidth", j->kernel, st != TJ_OK ? tj_failure(st) : cu_error);
            free(ms);
            return -1;
        }
    } else {
        for (int r = 0; r < runs && st == TJ_OK; r++) {
            double t0 = now_seconds();
            if ((st = j->launch(j)) == TJ_OK)
                st = tj_synchronize(dev);
            ms[r] = (now_seconds() - t0) * 1e3;
        }
    }
    /* Errors a kernel reports asynchronously (device asserts, faults). */
    if (st == TJ_OK)
        st = tj_synchronize(dev);
    if (st != TJ_OK) {
        record_error("bandwidth", j->kernel, tj_failure(st));
        free(ms);
        return -1;
    }
    double result = median(ms, runs);
    free(ms);
    return result;
}

/* ------------------------------------------------------------------------ */
/* Checking against C                                                       */
/* ------------------------------------------------------------------------ */

static float *host_x, *host_y, *host_out, *host_nan;

/* Poisons the first count floats of the output, launches once and reads
 * them back into host_out. */
static tj_status run_once(const struct job *j, size_t count)
{
    tj_status st = tj_buffer_write(dev, j->out, 0, host_nan, count * sizeof(float));
    if (st == TJ_OK)
        st = j->launch(j);
    if (st == TJ_OK)
        st = tj_synchronize(dev);
    if (st == TJ_OK)
        st = tj_buffer_read(dev, j->out, 0, host_out, count * sizeof(float));
    return st;
}

/* got within atol + rtol * |want| (NaN never is). */
static int close_enough(float got, double want, double atol, double rtol)
{
    return fabs((double)got - want) <= atol + rtol * fabs(want);
}

static int report_mismatch(const char *kernel, int64_t at, float got, double want)
{
    fprintf(stderr, "gpu_bench: %s: element %lld is %.9g, expected %.9g\n", kernel,
            (long long)at, got, want);
    return 0;
}

static int check_strided_add(const struct job *j)
{
    for (int64_t i = 0; i < j->n; i++) {
        float want = host_x[i * j->stride] + host_y[i * j->stride];
        if (!(host_out[i] == want))
            return report_mismatch(j->kernel, i, host_out[i], want);
    }
    return 1;
}

static int check_transpose(const struct job *j)
{
    for (int64_t r = 0; r < j->rows; r++)
        for (int64_t c = 0; c < j->cols; c++) {
            float want = host_x[r * j->cols + c];
            if (!(host_out[c * j->rows + r] == want))
                return report_mismatch(j->kernel, c * j->rows + r, host_out[c * j->rows + r],
                                       want);
        }
    return 1;
}

/* Rows 0, 1, every 61st and the last two: the edges and a spread between. */
static int sampled_row(int64_t r, int64_t rows)
{
    return r < 2 || r >= rows - 2 || r % 61 == 0;
}

static int check_softmax(const struct job *j)
{
    for (int64_t r = 0; r < j->rows; r++) {
        if (!sampled_row(r, j->rows))
            continue;
        const float *x = host_x + r * j->cols;
        double max = -INFINITY, sum = 0;
        for (int64_t c = 0; c < j->cols; c++)
            max = x[c] > max ? x[c] : max;
        for (int64_t c = 0; c < j->cols; c++)
            sum += exp(x[c] - max);
        for (int64_t c = 0; c < j->cols; c++) {
            double want = exp(x[c] - max) / sum;
            float got = host_out[r * j->cols + c];
            if (!close_enough(got, want, 1e-7, 1e-4))
                return report_mismatch(j->kernel, r * j->cols + c, got, want);
        }
    }
    return 1;
}

static int check_box_filter(const struct job *j)
{
    const int64_t h = j->rows, w = j->cols;
    for (int64_t r = 0; r < h; r++) {
        if (!sampled_row(r, h))
            continue;
        for (int64_t c = 0; c < w; c++) {
            double sum = 0;
            for (int64_t rr = r - 1; rr <= r + 1; rr++)
                for (int64_t cc = c - 1; cc <= c + 1; cc++)
                    if (rr >= 0 && rr < h && cc >= 0 && cc < w)
                        sum += host_x[rr * w + cc];
            if (!close_enough(host_out[r * w + c], sum / 9, 1e-5, 1e-5))
                return report_mismatch(j->kernel, r * w + c, host_out[r * w + c], sum / 9);
        }
    }
    return 1;
}

/* One kernel: check once, then time; one bandwidth record. Returns whether
 * it ran and was right. */
static int bench(const struct job *j, size_t out_count, int (*check)(const struct job *),
                 double useful_bytes, const char *params_json)
{
    tj_status st = run_once(j, out_count);
    if (st != TJ_OK) {
        record_error("bandwidth", j->kernel, tj_failure(st));
        return 0;
    }
    int correct = check(j);
    double ms = median_launch_ms(j);
    if (ms < 0)
        return 0;
    record_begin("bandwidth", j->kernel);
    printf(",\"dtype\":\"f32\",\"shape\":");
    if (j->n)
        printf("[%d]", j->n);
    else
        printf("[%d,%d]", j->rows, j->cols);
    printf(",\"bytes\":%.0f,\"runs\":%d,\"ms\":%.5f,\"gbps\":%.2f%s,\"correct\":%s,"
           "\"timer\":\"%s\"",
           useful_bytes, runs, ms, useful_bytes / (ms * 1e-3) / 1e9, params_json,
           correct ? "true" : "false", use_events ? "cuda_events" : "wall_clock");
    record_end();
    return correct;
}

static int check_vector_add(const struct job *j)
{
    return check_strided_add(j); /* stride 1 */
}

/* ------------------------------------------------------------------------ */
/* Compile time and launch cost                                             */
/* ------------------------------------------------------------------------ */

static double launch_synced_seconds(const struct job *j, tj_status *st)
{
    double t0 = now_seconds();
    if ((*st = j->launch(j)) == TJ_OK)
        *st = tj_synchronize(dev);
    return now_seconds() - t0;
}

static int measure_compile(const char *what, const struct job *j)
{
    tj_status st;
    double first = launch_synced_seconds(j, &st);
    if (st != TJ_OK) {
        record_error(what, j->kernel, tj_failure(st));
        return 0;
    }
    double warm[10];
    for (int i = 0; i < 10; i++) {
        warm[i] = launch_synced_seconds(j, &st);
        if (st != TJ_OK) {
            record_error(what, j->kernel, tj_failure(st));
            return 0;
        }
    }
    double warm_s = median(warm, 10);
    record_begin(what, j->kernel);
    if (!strcmp(what, "first_compile"))
        printf(",\"ms\":%.3f", first * 1e3);
    else
        printf(",\"first_ms\":%.3f,\"warm_ms\":%.4f,\"ms\":%.3f", first * 1e3, warm_s * 1e3,
               (first - warm_s) * 1e3);
    record_end();
    return 1;
}

/* tj_kernel_ptx: the compiler alone (build, layouts, LLVM O3, PTX), without
 * the driver's PTX-to-SASS step; the median of three calls. */
static int measure_ptx_compile(const char *kernel_name, const tj_kernel *kernel,
                               const int64_t *consts, int nconsts, int num_warps)
{
    double seconds[3];
    for (int i = 0; i < 3; i++) {
        char *ptx = NULL;
        double t0 = now_seconds();
        tj_status st = tj_kernel_ptx(kernel, consts, nconsts, ptx_target[0] ? ptx_target : NULL,
                                     num_warps, &ptx);
        seconds[i] = now_seconds() - t0;
        free(ptx);
        if (st != TJ_OK) {
            record_error("ptx_compile", kernel_name, tj_failure(st));
            return 0;
        }
    }
    record_begin("ptx_compile", kernel_name);
    printf(",\"target\":\"%s\",\"ms\":%.3f", ptx_target[0] ? ptx_target : "default",
           median(seconds, 3) * 1e3);
    record_end();
    return 1;
}

static tj_status launch_generic(const struct job *j)
{
    const tj_arg args[] = {TJ_ARG_BUF(j->x), TJ_ARG_BUF(j->y), TJ_ARG_BUF(j->out),
                           TJ_ARG_I32(j->n)};
    const int64_t consts[] = {ADD_BLOCK};
    tj_launch_cfg cfg = {.grid = {(j->n + ADD_BLOCK - 1) / ADD_BLOCK}, .num_warps = ADD_WARPS};
    return tj_launch(dev, vector_add_kernel, &cfg, args, 4, consts, 1);
}

static int measure_launch_cost(const char *how, struct job *j)
{
    double per_call[LAUNCH_BATCHES];
    tj_status st = tj_synchronize(dev);
    for (int b = 0; b < LAUNCH_BATCHES && st == TJ_OK; b++) {
        double t0 = now_seconds();
        for (int i = 0; i < LAUNCH_CALLS && st == TJ_OK; i++)
            st = j->launch(j);
        per_call[b] = (now_seconds() - t0) / LAUNCH_CALLS;
        if (st == TJ_OK)
            st = tj_synchronize(dev);
    }
    if (st != TJ_OK) {
        record_error("launch_cost", NULL, tj_failure(st));
        return 0;
    }
    record_begin("launch_cost", NULL);
    printf(",\"how\":\"%s\",\"calls\":%d,\"us\":%.3f", how, LAUNCH_CALLS,
           median(per_call, LAUNCH_BATCHES) * 1e6);
    record_end();
    return 1;
}

/* ------------------------------------------------------------------------ */
/* main                                                                     */
/* ------------------------------------------------------------------------ */

static uint64_t rng_state;

static void fill_random(float *a, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        a[i] = -1.0f + 2.0f * (float)(rng_state >> 40) * (1.0f / 16777216.0f);
    }
}

static tj_buffer device_buffer(const float *host, size_t count)
{
    tj_buffer buf;
    tj_status st = tj_buffer_alloc(dev, count * sizeof(float), &buf);
    if (st == TJ_OK && host)
        st = tj_buffer_write(dev, buf, 0, host, count * sizeof(float));
    if (st != TJ_OK) {
        record_error("setup", NULL, tj_failure(st));
        exit(2);
    }
    return buf;
}

static char cache_dir[64];

static int remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb, (void)type, (void)ftw;
    return remove(path);
}

static void remove_cache_dir(void)
{
    if (cache_dir[0])
        nftw(cache_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int parse_count(const char *text, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || *end || v < 1 || v > 100000)
        return 0;
    *out = (int)v;
    return 1;
}

int main(int argc, char **argv)
{
    int quick = 0;
    tj_device_kind kind = TJ_DEVICE_GPU;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            quick = 1;
        } else if (!strcmp(argv[i], "--runs") && i + 1 < argc && parse_count(argv[i + 1], &runs)) {
            i++;
        } else if (!strcmp(argv[i], "--warmup") && i + 1 < argc &&
                   parse_count(argv[i + 1], &warmup)) {
            i++;
        } else if (!strcmp(argv[i], "--device") && i + 1 < argc &&
                   (!strcmp(argv[i + 1], "gpu") || !strcmp(argv[i + 1], "cpu"))) {
            kind = !strcmp(argv[++i], "cpu") ? TJ_DEVICE_CPU : TJ_DEVICE_GPU;
        } else {
            fprintf(stderr, "usage: %s [--runs N] [--warmup N] [--quick] [--device gpu|cpu]\n",
                    argv[0]);
            return 2;
        }
    }
    use_events = kind == TJ_DEVICE_GPU;
    /* Debugging aids that would change what is timed: ptxas on every
     * compile, launches that wait, dumps. */
    unsetenv("TJIT_PTXAS");
    unsetenv("TJIT_LAUNCH_BLOCKING");
    unsetenv("TJIT_DUMP");

    /* A cold compile needs an empty on-disk cache. */
    snprintf(cache_dir, sizeof cache_dir, "%s", "/tmp/tjit-bench-cache-XXXXXX");
    if (!mkdtemp(cache_dir) || setenv("TJIT_CACHE_DIR", cache_dir, 1) != 0) {
        fprintf(stderr, "gpu_bench: cannot make a fresh cache directory: %s\n", strerror(errno));
        return 2;
    }
    atexit(remove_cache_dir);

    tj_status st = tj_device_open(&dev, kind, 0);
    if (st != TJ_OK) {
        record_error("setup", NULL, tj_failure(st));
        return 2;
    }
    device_name = tj_device_name(dev);
    if (use_events && !cuda_events_init()) {
        record_error("setup", NULL, cu_error);
        return 2;
    }
    record_begin("versions", NULL);
    printf(",\"tjit\":\"%s\"", tj_version());
    record_end();

    const int64_t add_n = (int64_t)1 << (quick ? 20 : 28);
    const int64_t strided_n = (int64_t)1 << (quick ? 17 : 25);
    const int64_t tr_n = quick ? 1024 : 8192;
    const int64_t sm_rows = quick ? 256 : 8192, sm_cols = 4096;
    const int64_t box_n = quick ? 1024 : 8192;
    int ok = 1;

    rng_state = (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid();
    rng_state = rng_state ? rng_state : 1;
    host_x = xmalloc((size_t)add_n * sizeof(float));
    host_y = xmalloc((size_t)add_n * sizeof(float));
    host_out = xmalloc((size_t)add_n * sizeof(float));
    host_nan = xmalloc((size_t)add_n * sizeof(float));
    fill_random(host_x, (size_t)add_n);
    fill_random(host_y, (size_t)add_n);
    for (int64_t i = 0; i < add_n; i++)
        host_nan[i] = NAN;

    /* Compiler start-up, cold compiles and launch cost on small buffers. */
    struct job small = {.kernel = "vector_add", .launch = launch_vector_add,
                        .x = device_buffer(host_x, LAUNCH_N), .y = device_buffer(host_y, LAUNCH_N),
                        .out = device_buffer(NULL, LAUNCH_N), .n = LAUNCH_N, .stride = 1};
    struct job primer = small;
    primer.kernel = "primer";
    primer.launch = launch_primer;
    ok &= measure_compile("first_compile", &primer);
    ok &= measure_compile("cold_compile", &small);
    struct job small_softmax = {.kernel = "softmax", .launch = launch_softmax, .x = small.x,
                                .out = small.out, .rows = LAUNCH_N / (int32_t)sm_cols,
                                .cols = (int32_t)sm_cols, .warps = SOFTMAX_WARPS};
    ok &= measure_compile("cold_compile", &small_softmax);
    const int64_t add_consts[] = {ADD_BLOCK}, softmax_consts[] = {next_pow2(sm_cols), 0};
    ok &= measure_ptx_compile("vector_add", vector_add_kernel, add_consts, 1, ADD_WARPS);
    ok &= measure_ptx_compile("softmax", softmax_kernel, softmax_consts, 2, SOFTMAX_WARPS);
    ok &= measure_launch_cost("typed name_launch()", &small);
    small.launch = launch_generic;
    ok &= measure_launch_cost("tj_launch()", &small);

    /* The big buffers: every kernel reads x (and y) and writes out. */
    tj_buffer x = device_buffer(host_x, (size_t)add_n), y = device_buffer(host_y, (size_t)add_n);
    tj_buffer out = device_buffer(NULL, (size_t)add_n);
    char params[256];

    struct job add = {.kernel = "vector_add", .launch = launch_vector_add, .x = x, .y = y,
                      .out = out, .n = (int32_t)add_n, .stride = 1};
    snprintf(params, sizeof params,
             ",\"block\":%d,\"num_warps\":%d,\"config\":\"BLOCK %d, %d warps\"", ADD_BLOCK,
             ADD_WARPS, ADD_BLOCK, ADD_WARPS);
    ok &= bench(&add, (size_t)add_n, check_vector_add, 3.0 * (double)add_n * 4, params);

    for (int s = 1; s <= 8; s *= 2) {
        char name[32];
        snprintf(name, sizeof name, "strided_add_s%d", s);
        struct job strided = {.kernel = name, .launch = launch_strided_add, .x = x, .y = y,
                              .out = out, .n = (int32_t)strided_n, .stride = s};
        snprintf(params, sizeof params,
                 ",\"stride\":%d,\"block\":%d,\"num_warps\":%d,"
                 "\"config\":\"BLOCK %d, %d warps\"",
                 s, ADD_BLOCK, ADD_WARPS, ADD_BLOCK, ADD_WARPS);
        ok &= bench(&strided, (size_t)strided_n, check_strided_add,
                    3.0 * (double)strided_n * 4, params);
    }

    struct job transpose = {.kernel = "transpose", .launch = launch_transpose, .x = x,
                            .out = out, .rows = (int32_t)tr_n, .cols = (int32_t)tr_n};
    snprintf(params, sizeof params,
             ",\"tile\":[%d,%d],\"num_warps\":%d,\"config\":\"%dx%d tiles, %d warps\"",
             TRANSPOSE_TILE, TRANSPOSE_TILE, TRANSPOSE_WARPS, TRANSPOSE_TILE, TRANSPOSE_TILE,
             TRANSPOSE_WARPS);
    ok &= bench(&transpose, (size_t)(tr_n * tr_n), check_transpose,
                2.0 * (double)(tr_n * tr_n) * 4, params);

    transpose.kernel = "transpose_ptrs";
    transpose.launch = launch_transpose_ptrs;
    ok &= bench(&transpose, (size_t)(tr_n * tr_n), check_transpose,
                2.0 * (double)(tr_n * tr_n) * 4, params);

    const int n_softmax = (int)(sizeof softmax_warps_tried / sizeof softmax_warps_tried[0]);
    for (int i = 0; i <= n_softmax + 1; i++) {
        /* Each warp count tried, then softmax_fast and softmax_precise at
         * the reference one. */
        int fast = i == n_softmax, precise = i == n_softmax + 1;
        int warps = fast || precise ? SOFTMAX_WARPS : softmax_warps_tried[i];
        char name[32];
        if (fast || precise)
            snprintf(name, sizeof name, fast ? "softmax_fast" : "softmax_precise");
        else if (i == 0)
            snprintf(name, sizeof name, "softmax");
        else
            snprintf(name, sizeof name, "softmax_w%d", warps);
        struct job softmax = {.kernel = name,
                              .launch = fast ? launch_softmax_fast
                                        : precise ? launch_softmax_precise : launch_softmax,
                              .x = x, .out = out, .rows = (int32_t)sm_rows,
                              .cols = (int32_t)sm_cols, .warps = warps};
        snprintf(params, sizeof params,
                 ",\"block\":%lld,\"num_warps\":%d,\"config\":\"BLOCK %lld, %d warps%s\"",
                 (long long)next_pow2(sm_cols), warps, (long long)next_pow2(sm_cols), warps,
                 fast ? ", exp2 + 1/sum" : precise ? ", precise exp and div" : "");
        ok &= bench(&softmax, (size_t)(sm_rows * sm_cols), check_softmax,
                    2.0 * (double)(sm_rows * sm_cols) * 4, params);
    }

    for (size_t i = 0; i < sizeof box_configs / sizeof box_configs[0]; i++) {
        char name[48];
        if (i == 0)
            snprintf(name, sizeof name, "box_filter");
        else
            snprintf(name, sizeof name, "box_filter_%dx%d_w%d", box_configs[i].tile_r,
                     box_configs[i].tile_c, box_configs[i].warps);
        struct job box = {.kernel = name, .launch = launch_box_filter, .x = x, .out = out,
                          .rows = (int32_t)box_n, .cols = (int32_t)box_n,
                          .tile_r = box_configs[i].tile_r, .tile_c = box_configs[i].tile_c,
                          .warps = box_configs[i].warps};
        snprintf(params, sizeof params,
                 ",\"tile\":[%d,%d],\"num_warps\":%d,\"config\":\"%dx%d tiles, %d warps\"",
                 box.tile_r, box.tile_c, box.warps, box.tile_r, box.tile_c, box.warps);
        ok &= bench(&box, (size_t)(box_n * box_n), check_box_filter,
                    2.0 * (double)(box_n * box_n) * 4, params);
    }

    tj_device_close(dev);
    free(host_x);
    free(host_y);
    free(host_out);
    free(host_nan);
    return ok ? 0 : 1;
}
