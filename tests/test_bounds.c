/* SPDX-License-Identifier: MIT */
/*
 * test_bounds.c — the bounds-checked mode (TJIT_CHECK_BOUNDS=1 and
 * tj_launch_cfg.check_bounds), on the CPU and, as tests/gpu/test_bounds.gpu,
 * on a GPU.
 *
 * Each kernel forgets a mask: a load, store, atomic add or compare-and-swap
 * runs past the end or before the start of its buffer, in 1-D and 2-D, as
 * scalars, and through a pointer carried by a TJ_FOR loop or chosen by a
 * where() between two buffers. A checked launch must fail with TJ_ERR_BOUNDS (on a GPU at
 * the next synchronize) and a message that names the kernel, the op, the
 * kernel's source line, the program and the offset in elements and bytes
 * with the buffer's size; the accesses inside the buffer are done, the ones
 * outside are not: a load reads 0 there, and the memory around the buffer —
 * its neighbours in the allocator, found by address and poisoned — keeps
 * its poison. Where one lane violates, the offset and program are exact.
 *
 * The modes: correct kernels (masked, so that masked-off lanes point far
 * outside) give the same bits checked and unchecked and no error; the
 * option and the environment choose the variant, and checked and unchecked
 * variants are distinct cache entries (a counter in a kernel body counts
 * its builds); the PTX of a checked kernel has the checks (the buffer sizes
 * as parameters, the record's compare-and-swap) and the unchecked one not.
 */
#include <stdlib.h>

#include "jit/jit.h"
#include "testlib.h"

static tj_device *dev;
static int on_gpu;

enum { BLOCK = 64, N = 256, NEIGHBOURS = 12 };

static int line_store, line_load, line_atomic, line_cas, line_2d, line_loop, line_where, line_scalar[2];

/* ---- kernels --------------------------------------------------------------- */

/* x[start + pid * BLOCK + i] = that offset + 0.5, without a mask. */
TJ_KERNEL(overrun_store, TJ_PARAMS(TJ_PTR(x, f32), TJ_SCALAR(start, i32)), TJ_CONSTS())
{
    tj_val offs = tj_add(tj_add(start, tj_mul(tj_program_id(0), BLOCK)), tj_arange(0, BLOCK));
    line_store = __LINE__; tj_store(tj_add(x, offs), tj_add(tj_cast(offs, TJ_F32), 0.5));
}

/* out[pid * BLOCK + i] = x[start + pid * BLOCK + i], the load without a mask. */
TJ_KERNEL(overrun_load, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(out, f32), TJ_SCALAR(start, i32)),
          TJ_CONSTS())
{
    tj_val i = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    line_load = __LINE__; tj_val v = tj_load(tj_add(x, tj_add(i, start)));
    tj_store(tj_add(out, i), v);
}

/* old[...] = atomic_add(x + start + ..., 1) (i32), or CAS of 0 -> 7. */
TJ_KERNEL(overrun_atomic, TJ_PARAMS(TJ_PTR(x, i32), TJ_PTR(out, i32), TJ_SCALAR(start, i32)),
          TJ_CONSTS(CAS))
{
    tj_val i = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val p = tj_add(x, tj_add(i, start)), old;
    if (CAS) {
        line_cas = __LINE__; old = tj_atomic_cas(p, tj_i32(0), tj_i32(7));
    } else {
        line_atomic = __LINE__; old = tj_atomic_add(p, tj_i32(1));
    }
    tj_store(tj_add(out, i), old);
}

/* Rows pid*16 .. of an M x 32 matrix: STORE writes 1.5 (row mask
 * forgotten), else loads them into out (grid * 16 x 32, in bounds). */
TJ_KERNEL(overrun_2d, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(out, f32)), TJ_CONSTS(STORE))
{
    tj_val rows = tj_add(tj_mul(tj_program_id(0), 16), tj_arange(0, 16));
    tj_val offs = tj_add(tj_mul(tj_expand_dims(rows, 1), 32), tj_expand_dims(tj_arange(0, 32), 0));
    if (STORE) {
        line_2d = __LINE__; tj_store(tj_add(x, offs), tj_full(TJ_SHAPE(16, 32), 1.5, TJ_F32));
    } else {
        line_2d = __LINE__; tj_val v = tj_load(tj_add(x, offs));
        tj_store(tj_add(out, offs), v);
    }
}

/* trips blocks of x get k + 0.25, the pointer carried by the loop. */
TJ_KERNEL(overrun_loop, TJ_PARAMS(TJ_PTR(x, f32), TJ_SCALAR(trips, i32)), TJ_CONSTS())
{
    tj_val p = tj_add(x, tj_arange(0, BLOCK));
    TJ_FOR(k, 0, trips, 1, &p) {
        line_loop = __LINE__; tj_store(p, tj_full(TJ_SHAPE(BLOCK), tj_add(tj_cast(k, TJ_F32), 0.25), TJ_F32));
        p = tj_add(p, BLOCK);
    }
}

/* Program 0 reads a, the others b, through one where()d pointer. */
TJ_KERNEL(overrun_where, TJ_PARAMS(TJ_PTR(a, f32), TJ_PTR(b, f32), TJ_PTR(out, f32),
                                   TJ_SCALAR(start, i32)), TJ_CONSTS())
{
    tj_val i = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val offs = tj_add(tj_arange(0, BLOCK), start);
    tj_val p = tj_where(tj_eq(tj_program_id(0), 0), tj_add(a, offs), tj_add(b, offs));
    line_where = __LINE__; tj_val v = tj_load(p);
    tj_store(tj_add(out, i), v);
}

/* Scalar pointers: x[to] = x[from] + 1. */
TJ_KERNEL(overrun_scalar, TJ_PARAMS(TJ_PTR(x, f64), TJ_SCALAR(from, i64), TJ_SCALAR(to, i64)), TJ_CONSTS())
{
    line_scalar[0] = __LINE__; tj_val v = tj_load(tj_add(x, from));
    line_scalar[1] = __LINE__; tj_store(tj_add(x, to), tj_add(v, 1.0));
}

/* Correct kernels: a masked copy, 1-D, whose masked-off lanes point far
 * past n; counts its builds (TAG tells the variants of test_modes apart). */
static int copy_builds;
TJ_KERNEL(masked_copy, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(out, f32), TJ_SCALAR(n, i32)), TJ_CONSTS(TAG))
{
    copy_builds += TAG;
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val far = tj_where(tj_lt(offs, n), offs, tj_add(offs, 1 << 28));
    tj_val m = tj_lt(offs, n);
    tj_val v = tj_load(tj_add(x, far), .mask = m, .other = tj_f32(-1));
    tj_store(tj_add(out, far), tj_mul(v, 3.0), .mask = m);
}

/* 2-D masked sums and a histogram by atomics. */
TJ_KERNEL(masked_2d_hist, TJ_PARAMS(TJ_PTR(x, i32), TJ_PTR(out, i32), TJ_PTR(hist, i32),
                                    TJ_SCALAR(m, i32), TJ_SCALAR(n, i32)), TJ_CONSTS())
{
    tj_val rows = tj_add(tj_mul(tj_program_id(0), 8), tj_arange(0, 8));
    tj_val cols = tj_arange(0, 32);
    tj_val r2 = tj_expand_dims(rows, 1), c2 = tj_expand_dims(cols, 0);
    tj_val mask = tj_and(tj_lt(r2, m), tj_lt(c2, n));
    tj_val offs = tj_add(tj_mul(r2, n), c2);
    tj_val v = tj_load(tj_add(x, offs), .mask = mask);
    tj_store(tj_add(out, offs), tj_add(v, 1), .mask = mask);
    tj_atomic_add(tj_add(hist, tj_and(v, 15)), tj_i32(1), .mask = mask);
}

/* ---- helpers --------------------------------------------------------------- */

static tj_launch_cfg checked_grid(int64_t grid)
{
    tj_launch_cfg cfg = tl_grid(grid, 1, 1);
    cfg.check_bounds = TJ_CHECK_BOUNDS_ON;
    return cfg;
}

/* The launch's status, on a GPU the next synchronize's. */
static tj_status finished(tj_status st)
{
    return st == TJ_OK && on_gpu ? tj_synchronize(dev) : st;
}

/* What a violation's message must say. elem_lo..elem_hi: the offsets the
 * first violation may have (equal where one lane violates). */
typedef struct expect {
    const char *kernel, *op, *buffer, *dtype;
    int line, prog;        /* prog < 0: any program */
    int64_t elem_lo, elem_hi, buffer_elems, esize;
} expect;

static int check_report(tj_status st, const expect *e, const char *what)
{
    const char *msg = tj_last_error();
    char kernel[96], op[64], line[128], holds[128], buffer[96], prog[64];
    snprintf(kernel, sizeof kernel, "in kernel '%s'", e->kernel);
    snprintf(op, sizeof op, "op '%s'", e->op);
    snprintf(line, sizeof line, "%s: error", tl_where(__FILE__, e->line));
    snprintf(holds, sizeof holds, "which holds %lld elements of %s (%lld bytes)", (long long)e->buffer_elems,
             e->dtype, (long long)(e->buffer_elems * e->esize));
    snprintf(buffer, sizeof buffer, "of buffer '%s'", e->buffer ? e->buffer : "");
    snprintf(prog, sizeof prog, "in program (%d, 0, 0)", e->prog);
    int ok = st == TJ_ERR_BOUNDS &&
             tl_error_mentions(kernel, op, line, holds, e->buffer ? buffer : "of buffer '",
                               e->prog >= 0 ? prog : "in program (", NULL);
    long long elem = 0, byte = 0;
    const char *at = strstr(msg, "element ");
    if (!at || sscanf(at, "element %lld (byte %lld)", &elem, &byte) != 2) {
        tap_diag("  no \"element E (byte B)\" in: %s", msg);
        ok = 0;
    } else if (elem < e->elem_lo || elem > e->elem_hi || byte != elem * e->esize) {
        tap_diag("  element %lld (byte %lld); expected an element in [%lld, %lld] at %lld bytes each", elem,
                 byte, (long long)e->elem_lo, (long long)e->elem_hi, (long long)e->esize);
        ok = 0;
    }
    if (st != TJ_ERR_BOUNDS)
        tap_diag("  status %s (expected TJ_ERR_BOUNDS): %s", tj_status_name(st), msg);
    else if (!ok || getenv("TEST_BOUNDS_VERBOSE"))
        tap_diag("  %s", msg);
    return tap_ok(ok, "%s: reported", what);
}

/* A buffer with allocator neighbours on both sides, all poisoned: the
 * memory an unchecked overrun would hit is the neighbours' (or the
 * allocator's between them), which must keep its poison. */
typedef struct guarded {
    tj_buffer buf, before, after;
    int64_t gap_before, gap_after; /* bytes between them and buf; -1: none found */
} guarded;

static guarded guarded_alloc(size_t bytes)
{
    tj_buffer all[NEIGHBOURS];
    uint64_t addr[NEIGHBOURS];
    for (int i = 0; i < NEIGHBOURS; i++) {
        all[i] = tl_poisoned(dev, bytes);
        addr[i] = tjj_buffer_address(dev, all[i]);
    }
    /* the buffer whose nearest neighbours are closest */
    int best = -1, best_prev = -1, best_next = -1;
    uint64_t best_span = UINT64_MAX;
    for (int t = 0; t < NEIGHBOURS; t++) {
        int prev = -1, next = -1;
        for (int j = 0; j < NEIGHBOURS; j++) {
            if (addr[j] < addr[t] && (prev < 0 || addr[j] > addr[prev]))
                prev = j;
            if (addr[j] > addr[t] && (next < 0 || addr[j] < addr[next]))
                next = j;
        }
        if (prev < 0 || next < 0)
            continue;
        uint64_t span = addr[next] - addr[prev];
        if (span < best_span)
            best = t, best_prev = prev, best_next = next, best_span = span;
    }
    guarded g = {.buf = all[best >= 0 ? best : 0], .gap_before = -1, .gap_after = -1};
    if (best >= 0) {
        g.before = all[best_prev], g.after = all[best_next];
        g.gap_before = (int64_t)(addr[best] - addr[best_prev] - bytes);
        g.gap_after = (int64_t)(addr[best_next] - addr[best] - bytes);
    }
    for (int i = 0; i < NEIGHBOURS; i++)
        if (all[i].handle != g.buf.handle && all[i].handle != g.before.handle && all[i].handle != g.after.handle)
            tj_buffer_free(dev, all[i]);
    return g;
}

static void guarded_free(guarded *g)
{
    tj_buffer_free(dev, g->buf);
    if (g->before.handle)
        tj_buffer_free(dev, g->before);
    if (g->after.handle)
        tj_buffer_free(dev, g->after);
}

/* The neighbours still hold their poison; reach: bytes an unchecked access
 * would have gone past the end (after) or before the start (before). */
static void check_guards(const guarded *g, size_t bytes, int64_t reach_before, int64_t reach_after,
                         const char *what)
{
    unsigned char *got = malloc(bytes);
    int ok = g->gap_before >= 0;
    const tj_buffer side[2] = {g->before, g->after};
    const int64_t gap[2] = {g->gap_before, g->gap_after}, reach[2] = {reach_before, reach_after};
    for (int s = 0; s < 2 && ok; s++) {
        tl_download(dev, side[s], got, bytes);
        ok = tl_poison_intact(got, 0, bytes);
        if (reach[s] > gap[s])
            tap_diag("  the neighbour %s lies %lld bytes away, within the %lld bytes the access reached",
                     s ? "after" : "before", (long long)gap[s], (long long)reach[s]);
    }
    if (g->gap_before < 0)
        tap_diag("  no neighbours found");
    tap_ok(ok, "%s: the memory around the buffer keeps its poison", what);
    free(got);
}

/* ---- forgotten masks ------------------------------------------------------- */

/* 1-D store: start and grid put lanes past the end (start > 0) or before
 * the start (start < 0); elem_lo..hi are the violating offsets. */
static void test_store_1d(int start, int grid, int exact_prog, const char *what)
{
    size_t bytes = N * 4;
    guarded g = guarded_alloc(bytes);
    tj_launch_cfg cfg = checked_grid(grid);
    tj_status st = finished(overrun_store_launch(dev, &cfg, g.buf, start));
    int64_t lo = start < 0 ? start : N, hi = start < 0 ? -1 : start + (int64_t)grid * BLOCK - 1;
    expect e = {"overrun_store", "store", "x", "f32", line_store, exact_prog, lo, hi, N, 4};
    check_report(st, &e, what);
    float got[N];
    tl_download(dev, g.buf, got, bytes);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        int written = i >= start && i < start + grid * BLOCK;
        float want = (float)i + 0.5f;
        int ok = written ? memcmp(&got[i], &want, 4) == 0 : tl_poison_intact(&got[i], 0, 4);
        if (!ok && bad++ < 5)
            tap_diag("  [%d] got %g, expected %s", i, got[i], written ? "i + 0.5" : "poison");
    }
    tap_ok(bad == 0, "%s: the lanes inside the buffer are stored, nothing else", what);
    check_guards(&g, bytes, start < 0 ? -4 * (int64_t)start : 0,
                 start < 0 ? 0 : 4 * (start + (int64_t)grid * BLOCK - N), what);
    guarded_free(&g);
}

static void test_load_1d(int start, int grid, int exact_prog, const char *what)
{
    size_t bytes = N * 4, out_bytes = (size_t)grid * BLOCK * 4;
    float x[N], *got = malloc(out_bytes);
    tl_fill_random(TJ_F32, x, N);
    guarded g = guarded_alloc(bytes);
    tj_buffer out = tl_poisoned(dev, out_bytes);
    tj_buffer_write(dev, g.buf, 0, x, bytes);
    tj_launch_cfg cfg = checked_grid(grid);
    tj_status st = finished(overrun_load_launch(dev, &cfg, g.buf, out, start));
    int64_t lo = start < 0 ? start : N, hi = start < 0 ? -1 : start + (int64_t)grid * BLOCK - 1;
    expect e = {"overrun_load", "load", "x", "f32", line_load, exact_prog, lo, hi, N, 4};
    check_report(st, &e, what);
    tl_download(dev, out, got, out_bytes);
    int bad = 0;
    for (int i = 0; i < grid * BLOCK; i++) {
        int at = start + i;
        float want = at >= 0 && at < N ? x[at] : 0.0f;
        if (memcmp(&got[i], &want, 4) != 0 && bad++ < 5)
            tap_diag("  out[%d] (x[%d]) got %g, expected %g", i, at, got[i], want);
    }
    tap_ok(bad == 0, "%s: lanes inside read x, lanes outside read 0", what);
    check_guards(&g, bytes, 0, 0, what);
    tj_buffer_free(dev, out);
    guarded_free(&g);
    free(got);
}

static void test_atomic_1d(int cas, int start, int grid, int exact_prog, const char *what)
{
    size_t bytes = N * 4, out_bytes = (size_t)grid * BLOCK * 4;
    int32_t x[N], *old = malloc(out_bytes), got[N];
    for (int i = 0; i < N; i++)
        x[i] = cas ? 0 : (int32_t)tl_rand_range(-1000, 1000);
    guarded g = guarded_alloc(bytes);
    tj_buffer out = tl_poisoned(dev, out_bytes);
    tj_buffer_write(dev, g.buf, 0, x, bytes);
    tj_launch_cfg cfg = checked_grid(grid);
    tj_status st = finished(overrun_atomic_launch(dev, &cfg, g.buf, out, start, cas));
    int64_t lo = start < 0 ? start : N, hi = start < 0 ? -1 : start + (int64_t)grid * BLOCK - 1;
    expect e = {"overrun_atomic", cas ? "atomic_cas" : "atomic", "x", "i32", cas ? line_cas : line_atomic,
                exact_prog, lo, hi, N, 4};
    check_report(st, &e, what);
    tl_download(dev, g.buf, got, bytes);
    tl_download(dev, out, old, out_bytes);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        int hit = i >= start && i < start + grid * BLOCK;
        int32_t want = hit ? (cas ? 7 : x[i] + 1) : x[i];
        if (got[i] != want && bad++ < 5)
            tap_diag("  x[%d] = %d, expected %d", i, got[i], want);
    }
    for (int i = 0; i < grid * BLOCK; i++) {
        int at = start + i;
        int32_t want = at >= 0 && at < N ? x[at] : 0;
        if (old[i] != want && bad++ < 5)
            tap_diag("  old[%d] (x[%d]) = %d, expected %d", i, at, old[i], want);
    }
    tap_ok(bad == 0, "%s: lanes inside update x and return its old value, lanes outside 0", what);
    check_guards(&g, bytes, start < 0 ? -4 * (int64_t)start : 0,
                 start < 0 ? 0 : 4 * (start + (int64_t)grid * BLOCK - N), what);
    tj_buffer_free(dev, out);
    guarded_free(&g);
    free(old);
}

/* A 24 x 32 matrix, programs of 16 rows: program 1's rows 24..31 are
 * outside (the row mask forgotten). */
static void test_2d(int store)
{
    enum { M = 24, COLS = 32, GRID = 2 };
    size_t bytes = M * COLS * 4, out_bytes = GRID * 16 * COLS * 4;
    float x[M * COLS], *got = malloc(out_bytes);
    tl_fill_random(TJ_F32, x, M * COLS);
    guarded g = guarded_alloc(bytes);
    tj_buffer_write(dev, g.buf, 0, x, bytes);
    tj_buffer out = tl_poisoned(dev, out_bytes);
    tj_launch_cfg cfg = checked_grid(GRID);
    char what[96];
    snprintf(what, sizeof what, "2-D %s of rows 16..31 of a 24 x 32 matrix", store ? "store" : "load");
    tj_status st = finished(overrun_2d_launch(dev, &cfg, g.buf, out, store));
    expect e = {"overrun_2d", store ? "store" : "load", "x", "f32", line_2d, 1, M * COLS,
                GRID * 16 * COLS - 1, M * COLS, 4};
    check_report(st, &e, what);
    int bad = 0;
    if (store) {
        tl_download(dev, g.buf, got, bytes);
        for (int i = 0; i < M * COLS; i++)
            if (got[i] != 1.5f && bad++ < 5)
                tap_diag("  x[%d] = %g, expected 1.5", i, got[i]);
    } else {
        tl_download(dev, out, got, out_bytes);
        for (int i = 0; i < GRID * 16 * COLS; i++) {
            float want = i < M * COLS ? x[i] : 0.0f;
            if (memcmp(&got[i], &want, 4) != 0 && bad++ < 5)
                tap_diag("  out[%d] = %g, expected %g", i, got[i], want);
        }
    }
    tap_ok(bad == 0, "%s: rows inside done, rows outside not", what);
    check_guards(&g, bytes, 0, store ? (int64_t)(out_bytes - bytes) : 0, what);
    tj_buffer_free(dev, out);
    guarded_free(&g);
    free(got);
}

/* Four trips of a loop over a buffer of 3 blocks + 8: the last trip's lanes
 * 8.. are outside. */
static void test_loop(void)
{
    enum { LEN = 3 * BLOCK + 8, TRIPS = 4 };
    size_t bytes = LEN * 4;
    const char *what = "store in a TJ_FOR loop through a carried pointer";
    guarded g = guarded_alloc(bytes);
    tj_launch_cfg cfg = checked_grid(1);
    tj_status st = finished(overrun_loop_launch(dev, &cfg, g.buf, TRIPS));
    expect e = {"overrun_loop", "store", "x", "f32", line_loop, 0, LEN, TRIPS * BLOCK - 1, LEN, 4};
    check_report(st, &e, what);
    float got[LEN];
    tl_download(dev, g.buf, got, bytes);
    int bad = 0;
    for (int i = 0; i < LEN; i++)
        if (got[i] != (float)(i / BLOCK) + 0.25f && bad++ < 5)
            tap_diag("  x[%d] = %g, expected %g", i, got[i], (float)(i / BLOCK) + 0.25f);
    tap_ok(bad == 0, "%s: the trips inside are stored", what);
    check_guards(&g, bytes, 0, 4 * (TRIPS * BLOCK - LEN), what);
    guarded_free(&g);
}

/* where(pid == 0, a + offs, b + offs): inside either is in bounds; past
 * both, the message names both. */
static void test_where(void)
{
    float a[BLOCK], b[BLOCK], got[2 * BLOCK];
    tl_fill_random(TJ_F32, a, BLOCK);
    tl_fill_random(TJ_F32, b, BLOCK);
    /* a spacer keeps b from starting where a ends */
    tj_buffer ba = tl_upload(dev, a, sizeof a), spacer = tl_poisoned(dev, 4096), bb = tl_upload(dev, b, sizeof b);
    tj_buffer out = tl_poisoned(dev, sizeof got);
    tj_launch_cfg cfg = checked_grid(2);
    tj_status st = finished(overrun_where_launch(dev, &cfg, ba, bb, out, 0));
    tl_download(dev, out, got, sizeof got);
    tap_ok(st == TJ_OK && memcmp(got, a, sizeof a) == 0 && memcmp(got + BLOCK, b, sizeof b) == 0,
           "a pointer from where() between two buffers, inside each: no error, the right values (%s)",
           tj_status_name(st));
    st = finished(overrun_where_launch(dev, &cfg, ba, bb, out, 1));
    /* program 0 misses a, program 1 b: either may be first */
    expect e = {"overrun_where", "load", NULL, "f32", line_where, -1, BLOCK, BLOCK, BLOCK, 4};
    check_report(st, &e, "a pointer from where() between two buffers, one lane past each");
    tap_ok(tl_error_mentions("may point into 'a' or 'b'", NULL), "the message names both buffers");
    tj_buffer_free(dev, ba);
    tj_buffer_free(dev, spacer);
    tj_buffer_free(dev, bb);
    tj_buffer_free(dev, out);
}

/* A scalar load before the start, then a scalar store past the end. */
static void test_scalar(void)
{
    enum { LEN = 40 };
    double x[LEN], got[LEN];
    tl_fill_random(TJ_F64, x, LEN);
    tj_buffer b = tl_upload(dev, x, sizeof x);
    tj_launch_cfg cfg = checked_grid(1);
    for (int which = 0; which < 2; which++) {
        int64_t from = which ? 3 : -1, to = which ? LEN : 5;
        tj_status st = finished(overrun_scalar_launch(dev, &cfg, b, from, to));
        expect e = {"overrun_scalar", which ? "store" : "load", "x", "f64", line_scalar[which], 0,
                    which ? LEN : -1, which ? LEN : -1, LEN, 8};
        check_report(st, &e, which ? "scalar store one element past the end" : "scalar load one before the start");
        tl_download(dev, b, got, sizeof got);
        double want5 = 1.0; /* the load read 0 */
        tap_ok(which ? memcmp(got, x, sizeof x) == 0
                     : memcmp(got, x, 5 * sizeof *x) == 0 && got[5] == want5 &&
                           memcmp(got + 6, x + 6, (LEN - 6) * sizeof *x) == 0,
               "%s: %s", which ? "scalar store" : "scalar load",
               which ? "nothing is written" : "the load reads 0, the store inside is done");
        memcpy(x, got, sizeof x);
    }
    tj_buffer_free(dev, b);
}

/* ---- correct kernels and the modes ----------------------------------------- */

static tj_status run_copy(tj_check_bounds mode, tj_buffer x, tj_buffer out, int n, int grid, int tag)
{
    tj_launch_cfg cfg = tl_grid(grid, 1, 1);
    cfg.check_bounds = mode;
    return finished(masked_copy_launch(dev, &cfg, x, out, n, tag));
}

/* Masked kernels give the same bits checked and unchecked, and the
 * reference's; no error although masked-off lanes point far outside. */
static void test_same_results(void)
{
    int n = (int)tl_rand_range(3 * BLOCK + 1, 6 * BLOCK - 1), grid = (n + BLOCK - 1) / BLOCK;
    float *x = malloc(4 * (size_t)n), *got[2] = {malloc(4 * (size_t)n), malloc(4 * (size_t)n)};
    tl_fill_random(TJ_F32, x, (size_t)n);
    tj_buffer bx = tl_upload(dev, x, 4 * (size_t)n), bo = tl_poisoned(dev, 4 * (size_t)n);
    tj_status st[2];
    for (int c = 0; c < 2; c++) {
        tl_repoison(dev, bo, 4 * (size_t)n);
        st[c] = run_copy(c ? TJ_CHECK_BOUNDS_ON : TJ_CHECK_BOUNDS_OFF, bx, bo, n, grid, 0);
        tl_download(dev, bo, got[c], 4 * (size_t)n);
    }
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (got[1][i] != 3.0f * x[i] && bad++ < 5)
            tap_diag("  [%d] got %g, expected %g", i, got[1][i], 3.0f * x[i]);
    tap_ok(st[0] == TJ_OK && st[1] == TJ_OK && bad == 0 && memcmp(got[0], got[1], 4 * (size_t)n) == 0,
           "masked 1-D copy (n = %d): checked = unchecked = reference, no error (%s, %s)", n,
           tj_status_name(st[0]), tj_status_name(st[1]));
    if (st[1] != TJ_OK)
        tap_diag("  %s", tj_last_error());
    tj_buffer_free(dev, bx);
    tj_buffer_free(dev, bo);
    free(x), free(got[0]), free(got[1]);

    int m = (int)tl_rand_range(9, 30), cols = (int)tl_rand_range(5, 32), rgrid = (m + 7) / 8;
    size_t bytes = (size_t)m * (size_t)cols * 4;
    int32_t *xi = malloc(bytes), *outs[2] = {malloc(bytes), malloc(bytes)}, hists[2][16], want_hist[16] = {0};
    for (int i = 0; i < m * cols; i++) {
        xi[i] = (int32_t)tl_rand_range(0, 1 << 20);
        want_hist[xi[i] & 15]++;
    }
    tj_buffer b2 = tl_upload(dev, xi, bytes), bo2 = tl_poisoned(dev, bytes), bh = tl_poisoned(dev, sizeof hists[0]);
    for (int c = 0; c < 2; c++) {
        tl_repoison(dev, bo2, bytes);
        int32_t zero[16] = {0};
        tj_buffer_write(dev, bh, 0, zero, sizeof zero);
        tj_launch_cfg cfg = tl_grid(rgrid, 1, 1);
        cfg.check_bounds = c ? TJ_CHECK_BOUNDS_ON : TJ_CHECK_BOUNDS_OFF;
        st[c] = finished(masked_2d_hist_launch(dev, &cfg, b2, bo2, bh, m, cols));
        tl_download(dev, bo2, outs[c], bytes);
        tl_download(dev, bh, hists[c], sizeof hists[c]);
    }
    bad = 0;
    for (int i = 0; i < m * cols; i++)
        bad += outs[1][i] != xi[i] + 1;
    bad += memcmp(hists[1], want_hist, sizeof want_hist) != 0;
    tap_ok(st[0] == TJ_OK && st[1] == TJ_OK && bad == 0 && memcmp(outs[0], outs[1], bytes) == 0 &&
               memcmp(hists[0], hists[1], sizeof hists[0]) == 0,
           "masked 2-D load/store and a histogram by atomics (%d x %d): checked = unchecked = reference "
           "(%s, %s)", m, cols, tj_status_name(st[0]), tj_status_name(st[1]));
    tj_buffer_free(dev, b2);
    tj_buffer_free(dev, bo2);
    tj_buffer_free(dev, bh);
    free(xi), free(outs[0]), free(outs[1]);
}

/* The option, the environment and the cache: counted builds of masked_copy. */
static void test_modes(void)
{
    int n = 2 * BLOCK + 5, grid = 3;
    float x[3 * BLOCK];
    tl_fill_random(TJ_F32, x, 3 * BLOCK);
    tj_buffer bx = tl_upload(dev, x, sizeof x), bo = tl_poisoned(dev, sizeof x);
    unsetenv("TJIT_CHECK_BOUNDS");
    int before = copy_builds, ok = 1;
    struct { tj_check_bounds mode; const char *env; int builds; } steps[] = {
        {TJ_CHECK_BOUNDS_DEFAULT, NULL, 1}, /* unset: unchecked, built */
        {TJ_CHECK_BOUNDS_ON, NULL, 2},      /* checked: another variant */
        {TJ_CHECK_BOUNDS_OFF, NULL, 2},     /* both cached from now on */
        {TJ_CHECK_BOUNDS_ON, NULL, 2},
        {TJ_CHECK_BOUNDS_DEFAULT, "1", 2},
        {TJ_CHECK_BOUNDS_OFF, "1", 2},
        {TJ_CHECK_BOUNDS_DEFAULT, "0", 2},
    };
    for (size_t i = 0; i < TL_COUNT(steps); i++) {
        if (steps[i].env)
            setenv("TJIT_CHECK_BOUNDS", steps[i].env, 1);
        tj_status st = run_copy(steps[i].mode, bx, bo, n, grid, 1);
        if (st != TJ_OK || copy_builds - before != steps[i].builds) {
            tap_diag("  step %zu: %s, %d builds (expected %d)", i, tj_status_name(st), copy_builds - before,
                     steps[i].builds);
            ok = 0;
        }
    }
    tap_ok(ok, "checked and unchecked variants are distinct cache entries; option and environment pick them");

    /* the environment alone turns the checks on */
    setenv("TJIT_CHECK_BOUNDS", "1", 1);
    tj_buffer small = tl_poisoned(dev, 4 * BLOCK);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    tj_status st = finished(overrun_store_launch(dev, &cfg, small, 1));
    expect e = {"overrun_store", "store", "x", "f32", line_store, 0, BLOCK, BLOCK, BLOCK, 4};
    check_report(st, &e, "TJIT_CHECK_BOUNDS=1 with the default option");
    unsetenv("TJIT_CHECK_BOUNDS");

    cfg.check_bounds = (tj_check_bounds)7;
    st = overrun_store_launch(dev, &cfg, small, 0);
    tap_ok(st == TJ_ERR_INVALID_ARG && tl_error_mentions("check_bounds", NULL),
           "an invalid check_bounds is refused (%s)", tj_status_name(st));
    tap_ok(strcmp(tj_status_name(TJ_ERR_BOUNDS), "TJ_ERR_BOUNDS") == 0, "tj_status_name(TJ_ERR_BOUNDS)");

    /* the device goes on working after violations */
    st = run_copy(TJ_CHECK_BOUNDS_ON, bx, bo, n, grid, 1);
    float got[3 * BLOCK];
    tl_download(dev, bo, got, sizeof got);
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += got[i] != 3.0f * x[i];
    tap_ok(st == TJ_OK && bad == 0, "a correct launch after the violations succeeds (%s)", tj_status_name(st));
    tj_buffer_free(dev, small);
    tj_buffer_free(dev, bx);
    tj_buffer_free(dev, bo);
}

/* The PTX of the checked kernel has the checks, the unchecked one not. */
static void test_ptx(void)
{
    char *ptx[2] = {NULL, NULL};
    tj_status st[2];
    for (int c = 0; c < 2; c++) {
        if (c)
            setenv("TJIT_CHECK_BOUNDS", "1", 1);
        else
            unsetenv("TJIT_CHECK_BOUNDS");
        st[c] = tj_kernel_ptx(overrun_load, NULL, 0, NULL, 4, &ptx[c]);
    }
    unsetenv("TJIT_CHECK_BOUNDS");
    if (st[0] != TJ_OK || st[1] != TJ_OK) {
        tap_ok(0, "tj_kernel_ptx, unchecked and checked: %s, %s: %s", tj_status_name(st[0]),
               tj_status_name(st[1]), tj_last_error());
        free(ptx[0]), free(ptx[1]);
        return;
    }
    /* parameters x, out, start, the record; checked: x's and out's sizes */
    int params[2] = {tl_count(ptx[0], ".param ."), tl_count(ptx[1], ".param .")};
    int cas[2] = {tl_count(ptx[0], "atom."), tl_count(ptx[1], "atom.")};
    tap_ok(params[0] == 4 && params[1] == 6, "PTX parameters: unchecked %d (4), checked %d (6)", params[0],
           params[1]);
    tap_ok(cas[0] == 0 && cas[1] > 0 && strstr(ptx[1], "cas"),
           "the checked PTX records a violation by compare-and-swap (%d atom.), the unchecked has none (%d)",
           cas[1], cas[0]);
    tap_ok(tl_count(ptx[1], "setp.") > tl_count(ptx[0], "setp.") && tl_count(ptx[1], "@%p") > tl_count(ptx[0], "@%p"),
           "the checked PTX compares addresses and predicates its accesses (setp %d vs %d)",
           tl_count(ptx[1], "setp."), tl_count(ptx[0], "setp."));
    free(ptx[0]), free(ptx[1]);
}

int main(void)
{
    dev = tl_setup("test_bounds");
    on_gpu = tj_device_get_kind(dev) == TJ_DEVICE_GPU;
    unsetenv("TJIT_CHECK_BOUNDS");

    test_store_1d(N - 16, 1, 0, "1-D store 48 elements past the end");
    test_store_1d(N - 3 * BLOCK + 1, 3, 2, "1-D store, program 2's last lane past the end");
    test_store_1d(-48, 1, 0, "1-D store 48 elements before the start");
    test_store_1d(-1, 3, 0, "1-D store, program 0's first lane before the start");
    test_load_1d(N - 24, 1, 0, "1-D load 40 elements past the end");
    test_load_1d(N - 2 * BLOCK + 1, 2, 1, "1-D load, program 1's last lane past the end");
    test_load_1d(-1, 2, 0, "1-D load, program 0's first lane before the start");
    test_atomic_1d(0, N - 8, 1, 0, "atomic add 56 elements past the end");
    test_atomic_1d(0, -1, 1, 0, "atomic add, one lane before the start");
    test_atomic_1d(1, N - BLOCK + 1, 1, 0, "atomic_cas, one lane past the end");
    test_atomic_1d(1, -40, 2, 0, "atomic_cas 40 elements before the start");
    test_2d(1);
    test_2d(0);
    test_loop();
    test_where();
    test_scalar();
    test_same_results();
    test_modes();
    test_ptx();
    tj_device_close(dev);
    return tap_done();
}
