/* SPDX-License-Identifier: MIT */
/*
 * test_addresses.c — pointers made from integers and integers made from
 * pointers (tj_int_to_ptr, tj_ptr_to_int: Triton's x.to(tl.pointer_type(dt))
 * and p.to(tl.int64)), on the device under test (TJIT_TEST_DEVICE).
 *
 * The use they exist for is Triton's grouped GEMM: a table in memory holds
 * the addresses of the group's matrices. Here a table holds addresses into
 * several buffers (aligned and not, hinted with tj_multiple_of and not),
 * and each program reads its array through one, plainly, as a block
 * pointer and as a tensor descriptor; a pointer's address must be the buffer's address (as
 * tj_buffer_address gives it) plus the offset in bytes; and an address
 * turned into a pointer again, after integer arithmetic, must read what the
 * pointer reads.
 *
 * tjit knows nothing of such a pointer, so it must assume the worst of it:
 * a store through it must be seen by a later load of any buffer (the PTX
 * has a barrier between a load of x and a store through an address, which
 * may be x's), its alignment is what the hint says and nothing more (a
 * misaligned address works), and a bounds-checked launch leaves its
 * accesses alone while still checking the parameters' (it reported every
 * access through such a pointer as outside all buffers before). Then the
 * errors, at the user's line, and the PTX.
 */
#include "ptx_barriers.h"
#include "testlib.h"

enum { N = 256, G = 5 };

static tj_device *dev;

/* out[g][i] = 2 * (array g)[i], array g found at the address table[g]. */
TJ_KERNEL(table_gather, TJ_PARAMS(TJ_PTR(table, i64), TJ_PTR(out, f32)), TJ_CONSTS())
{
    tj_val g = tj_program_id(0), offs = tj_arange(0, N);
    tj_val src = tj_int_to_ptr(tj_load(tj_add(table, g)), TJ_F32);
    tj_store(tj_add(out, tj_add(tj_mul(g, N), offs)), tj_mul(tj_load(tj_add(src, offs)), 2.0));
}

/* The same with addresses the user promises are multiples of 16 bytes. */
TJ_KERNEL(table_gather_aligned, TJ_PARAMS(TJ_PTR(table, i64), TJ_PTR(out, f32)), TJ_CONSTS())
{
    tj_val g = tj_program_id(0), offs = tj_arange(0, N);
    tj_val src = tj_int_to_ptr(tj_multiple_of(tj_load(tj_add(table, g)), 16), TJ_F32);
    tj_store(tj_add(out, tj_add(tj_mul(g, N), offs)), tj_mul(tj_load(tj_add(src, offs)), 2.0));
}

/* Array g seen as a 16 x 16 block (rows of 16), transposed into out. */
TJ_KERNEL(table_block_ptr, TJ_PARAMS(TJ_PTR(table, i64), TJ_PTR(out, f32)), TJ_CONSTS())
{
    tj_val g = tj_program_id(0);
    tj_val src = tj_int_to_ptr(tj_load(tj_add(table, g)), TJ_F32);
    tj_val a = tj_make_block_ptr(src, TJ_VALS(16, 16), TJ_VALS(16, 1), TJ_VALS(0, 0), TJ_SHAPE(16, 16),
                                 TJ_SHAPE(1, 0));
    tj_val rows = tj_expand_dims(tj_arange(0, 16), 1), cols = tj_expand_dims(tj_arange(0, 16), 0);
    tj_store(tj_add(out, tj_add(tj_mul(g, N), tj_add(tj_mul(cols, 16), rows))), tj_load(a));
}

/* The same through a tensor descriptor (tutorial 08's TMA form). */
TJ_KERNEL(table_descriptor, TJ_PARAMS(TJ_PTR(table, i64), TJ_PTR(out, f32)), TJ_CONSTS())
{
    tj_val g = tj_program_id(0);
    tj_val src = tj_int_to_ptr(tj_multiple_of(tj_load(tj_add(table, g)), 16), TJ_F32);
    tj_val d = tj_make_tensor_descriptor(src, TJ_VALS(16, 16), TJ_VALS(16, 1), TJ_SHAPE(16, 16));
    tj_val rows = tj_expand_dims(tj_arange(0, 16), 1), cols = tj_expand_dims(tj_arange(0, 16), 0);
    tj_store(tj_add(out, tj_add(tj_mul(g, N), tj_add(tj_mul(cols, 16), rows))), tj_descriptor_load(d, TJ_VALS(0, 0)));
}

/* A 64 x 64 block at the address addr, a kernel argument, copied to out:
 * on Hopper a block pointer over a parameter with these strides is a TMA
 * copy, one over an address is not (no tensor map can be made of it). */
TJ_KERNEL(block_at_address, TJ_PARAMS(TJ_SCALAR(addr, i64), TJ_PTR(out, f32)), TJ_CONSTS())
{
    tj_val a = tj_make_block_ptr(tj_int_to_ptr(addr, TJ_F32), TJ_VALS(64, 64), TJ_VALS(64, 1), TJ_VALS(0, 0),
                                 TJ_SHAPE(64, 64), TJ_SHAPE(1, 0));
    tj_val b = tj_make_block_ptr(out, TJ_VALS(64, 64), TJ_VALS(64, 1), TJ_VALS(0, 0), TJ_SHAPE(64, 64),
                                 TJ_SHAPE(1, 0));
    tj_store(b, tj_load(a));
}

/* o[i] = the address of x[i]; s = the address of x, from a scalar pointer. */
TJ_KERNEL(addresses, TJ_PARAMS(TJ_PTR(x, f64), TJ_PTR(o, i64), TJ_PTR(s, i64)), TJ_CONSTS())
{
    tj_val offs = tj_arange(0, N);
    tj_store(tj_add(o, offs), tj_ptr_to_int(tj_add(x, offs)));
    tj_store(s, tj_ptr_to_int(x));
}

/* o[i] = x[N-1-i], through addresses computed as integers. */
TJ_KERNEL(round_trip, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(o, f32)), TJ_CONSTS())
{
    tj_val offs = tj_arange(0, N);
    tj_val at = tj_add(tj_ptr_to_int(x), tj_mul(tj_cast(tj_sub(N - 1, offs), TJ_I64), 4));
    tj_store(tj_add(o, offs), tj_load(tj_int_to_ptr(at, TJ_F32)));
}

/* x reversed into the array at addr (x's own address: in place). */
TJ_KERNEL(reverse_to_address, TJ_PARAMS(TJ_PTR(x, f32), TJ_SCALAR(addr, i64)), TJ_CONSTS(BLOCK))
{
    tj_val o = tj_arange(0, BLOCK);
    tj_val v = tj_load(tj_add(x, o));
    tj_store(tj_add(tj_int_to_ptr(addr, TJ_F32), tj_sub(BLOCK - 1, o)), v);
}

/* The table holds x's address: x is tripled through it; then x is read
 * again, reversed (r) and as before (same): both must see the store. */
TJ_KERNEL(store_then_load, TJ_PARAMS(TJ_PTR(table, i64), TJ_PTR(x, f32), TJ_PTR(r, f32), TJ_PTR(same, f32)),
          TJ_CONSTS())
{
    tj_val offs = tj_arange(0, N);
    tj_val y = tj_int_to_ptr(tj_load(table), TJ_F32);
    tj_store(tj_add(y, offs), tj_mul(tj_load(tj_add(x, offs)), 3.0));
    tj_store(tj_add(r, offs), tj_load(tj_add(x, tj_sub(N - 1, offs))));
    tj_store(tj_add(same, offs), tj_load(tj_add(x, offs)));
}

/* table_gather into out of n elements per program, masked. */
TJ_KERNEL(table_gather_n, TJ_PARAMS(TJ_PTR(table, i64), TJ_PTR(out, f32), TJ_SCALAR(n, i32)), TJ_CONSTS())
{
    tj_val g = tj_program_id(0), offs = tj_arange(0, N);
    tj_val src = tj_int_to_ptr(tj_load(tj_add(table, g)), TJ_F32);
    tj_store(tj_add(out, tj_add(tj_mul(g, n), offs)), tj_load(tj_add(src, offs)), .mask = tj_lt(offs, n));
}

static int l_i32, l_float, l_not_ptr, l_block;
TJ_KERNEL(address_of_i32, TJ_PARAMS(TJ_PTR(o, f32)), TJ_CONSTS())
{
    l_i32 = __LINE__ + 1;
    tj_store(tj_int_to_ptr(tj_arange(0, N), TJ_F32), 1.0f);
}
TJ_KERNEL(address_of_float, TJ_PARAMS(TJ_PTR(o, f32)), TJ_CONSTS())
{
    l_float = __LINE__ + 1;
    tj_store(tj_int_to_ptr(tj_load(o), TJ_F32), 1.0f);
}
TJ_KERNEL(address_of_pointer, TJ_PARAMS(TJ_PTR(o, f32)), TJ_CONSTS())
{
    tj_store(tj_int_to_ptr(o, TJ_F32), 1.0f);
}
TJ_KERNEL(pointer_of_int, TJ_PARAMS(TJ_PTR(o, i64)), TJ_CONSTS())
{
    l_not_ptr = __LINE__ + 1;
    tj_store(o, tj_ptr_to_int(tj_load(o)));
}
TJ_KERNEL(pointer_of_block, TJ_PARAMS(TJ_PTR(o, f32), TJ_PTR(p, i64)), TJ_CONSTS())
{
    tj_val b = tj_make_block_ptr(o, TJ_VALS(16, 16), TJ_VALS(16, 1), TJ_VALS(0, 0), TJ_SHAPE(16, 16),
                                 TJ_SHAPE(1, 0));
    l_block = __LINE__ + 1;
    tj_store(p, tj_ptr_to_int(b));
}
TJ_KERNEL(address_dtype, TJ_PARAMS(TJ_PTR(o, i64)), TJ_CONSTS())
{
    tj_store(o, tj_ptr_to_int(tj_int_to_ptr(tj_load(o), (tj_dtype)99)));
}

/* ---- helpers --------------------------------------------------------------- */

static uint64_t address_of(tj_buffer b)
{
    uint64_t a = 0;
    if (tj_buffer_address(dev, b, &a) != TJ_OK)
        tap_bail_out("tj_buffer_address: %s", tj_last_error());
    return a;
}

static float *random_floats(int n)
{
    float *x = malloc((size_t)n * sizeof *x);
    for (int i = 0; i < n; i++)
        x[i] = (float)tl_rand_double(-100, 100);
    return x;
}

/* Runs a table kernel over G arrays, array g at element shift[g] of buffer
 * g % 2 (two buffers of G arrays each, random); out must be each array
 * read as want_of says. */
typedef float (*want_fn)(const float *array, int i);
static float twice(const float *a, int i) { return 2 * a[i]; }
static float transposed(const float *a, int i) { return a[(i % 16) * 16 + i / 16]; }

static void run_table(const tj_kernel *k, const int *shift, want_fn want_of, const char *what)
{
    int len = (G + 1) * N;
    float *data[2] = {random_floats(len), random_floats(len)};
    tj_buffer buf[2] = {tl_upload(dev, data[0], len * sizeof(float)), tl_upload(dev, data[1], len * sizeof(float))};
    int64_t table[G];
    for (int g = 0; g < G; g++)
        table[g] = (int64_t)(address_of(buf[g % 2]) + (uint64_t)(g * N + shift[g]) * sizeof(float));
    tj_buffer bt = tl_upload(dev, table, sizeof table), bo = tl_poisoned(dev, G * N * sizeof(float));
    tj_launch_cfg cfg = tl_grid(G, 1, 1);
    tj_arg args[] = {TJ_ARG_BUF(bt), TJ_ARG_BUF(bo)};
    if (!tl_launch_failed(tj_launch(dev, k, &cfg, args, 2, NULL, 0), what)) {
        float *out = malloc(G * N * sizeof *out);
        tl_download(dev, bo, out, G * N * sizeof *out);
        int wrong = 0;
        for (int g = 0; g < G; g++)
            for (int i = 0; i < N; i++) {
                float w = want_of(data[g % 2] + g * N + shift[g], i);
                if (memcmp(&out[g * N + i], &w, sizeof w) != 0 && wrong++ < 4)
                    tap_diag("array %d, element %d: %g, expected %g", g, i, out[g * N + i], w);
            }
        tap_ok(!wrong, "%s (%d wrong)", what, wrong);
        free(out);
    }
    tj_buffer_free(dev, bt), tj_buffer_free(dev, bo);
    tj_buffer_free(dev, buf[0]), tj_buffer_free(dev, buf[1]);
    free(data[0]), free(data[1]);
}

/* ---- tests ------------------------------------------------------------------ */

static void test_addresses(void)
{
    tj_buffer bx = tl_poisoned(dev, N * sizeof(double)), bo = tl_poisoned(dev, N * 8), bs = tl_poisoned(dev, 8);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bo), TJ_ARG_BUF(bs)};
    const char *what = "tj_ptr_to_int: x + i is x's address plus 8i bytes, x's is tj_buffer_address's";
    if (!tl_launch_failed(tj_launch(dev, addresses, &cfg, args, 3, NULL, 0), what)) {
        uint64_t o[N], s, base = address_of(bx);
        tl_download(dev, bo, o, sizeof o);
        tl_download(dev, bs, &s, sizeof s);
        int wrong = s != base;
        for (int i = 0; i < N; i++)
            if (o[i] != base + 8u * (uint64_t)i && wrong++ < 4)
                tap_diag("element %d: 0x%llx, expected 0x%llx", i, (unsigned long long)o[i],
                         (unsigned long long)(base + 8u * (uint64_t)i));
        tap_ok(!wrong, "%s", what);
    }
    tj_buffer_free(dev, bx), tj_buffer_free(dev, bo), tj_buffer_free(dev, bs);
}

static void test_round_trip(void)
{
    float *x = random_floats(N), o[N];
    tj_buffer bx = tl_upload(dev, x, N * sizeof *x), bo = tl_poisoned(dev, sizeof o);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_BUF(bo)};
    const char *what = "an address computed as an integer reads what the pointer reads (x reversed)";
    if (!tl_launch_failed(tj_launch(dev, round_trip, &cfg, args, 2, NULL, 0), what)) {
        tl_download(dev, bo, o, sizeof o);
        int wrong = 0;
        for (int i = 0; i < N; i++)
            wrong += memcmp(&o[i], &x[N - 1 - i], sizeof *o) != 0;
        tap_ok(!wrong, "%s (%d wrong)", what, wrong);
    }
    tj_buffer_free(dev, bx), tj_buffer_free(dev, bo);
    free(x);
}

/* x reversed in place through its own address shifted by `shift`
 * elements: y[BLOCK-1-i] = x[i] with y = x + shift. */
static void test_reverse_to_address(int block, int shift)
{
    int len = block + shift;
    float *x = random_floats(len), *got = malloc((size_t)len * sizeof *got), *want = malloc((size_t)len * sizeof *want);
    memcpy(want, x, (size_t)len * sizeof *x);
    for (int i = 0; i < block; i++)
        want[shift + block - 1 - i] = x[i];
    tj_buffer bx = tl_upload(dev, x, (size_t)len * sizeof *x);
    int64_t addr = (int64_t)(address_of(bx) + (uint64_t)shift * sizeof(float)), b = block;
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    tj_arg args[] = {TJ_ARG_BUF(bx), TJ_ARG_INT(TJ_I64, addr)};
    char what[128];
    snprintf(what, sizeof what, "%d elements reversed into x + %d through its address: loads before stores", block,
             shift);
    if (!tl_launch_failed(tj_launch(dev, reverse_to_address, &cfg, args, 2, &b, 1), what)) {
        tl_download(dev, bx, got, (size_t)len * sizeof *got);
        int wrong = 0;
        for (int i = 0; i < len; i++)
            if (memcmp(&got[i], &want[i], sizeof *got) != 0 && wrong++ < 4)
                tap_diag("element %d: %g, expected %g", i, got[i], want[i]);
        tap_ok(!wrong, "%s (%d wrong)", what, wrong);
    }
    tj_buffer_free(dev, bx);
    free(x), free(got), free(want);
}

static void test_store_then_load(void)
{
    float *x = random_floats(N), r[N], same[N];
    tj_buffer bx = tl_upload(dev, x, N * sizeof *x), br = tl_poisoned(dev, sizeof r), bs = tl_poisoned(dev, sizeof same);
    int64_t table[1] = {(int64_t)address_of(bx)};
    tj_buffer bt = tl_upload(dev, table, sizeof table);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    tj_arg args[] = {TJ_ARG_BUF(bt), TJ_ARG_BUF(bx), TJ_ARG_BUF(br), TJ_ARG_BUF(bs)};
    const char *what = "a store through x's address from a table is seen by the loads of x after it";
    if (!tl_launch_failed(tj_launch(dev, store_then_load, &cfg, args, 4, NULL, 0), what)) {
        tl_download(dev, br, r, sizeof r);
        tl_download(dev, bs, same, sizeof same);
        int wrong = 0;
        for (int i = 0; i < N; i++) {
            float wr = x[N - 1 - i] * 3.0f, ws = x[i] * 3.0f;
            wrong += memcmp(&r[i], &wr, 4) != 0 || memcmp(&same[i], &ws, 4) != 0;
        }
        tap_ok(!wrong, "%s (%d wrong)", what, wrong);
    }
    tj_buffer_free(dev, bt), tj_buffer_free(dev, bx), tj_buffer_free(dev, br), tj_buffer_free(dev, bs);
    free(x);
}

/* Bounds-checked: the table's pointers are not checked (they point into
 * no parameter), out is: n elements per program fit in G * n, and one
 * program's worth less does not. */
static void test_checked(void)
{
    float *data = random_floats(G * N);
    tj_buffer bd = tl_upload(dev, data, G * N * sizeof *data);
    int64_t table[G];
    for (int g = 0; g < G; g++)
        table[g] = (int64_t)(address_of(bd) + (uint64_t)g * N * sizeof(float));
    tj_buffer bt = tl_upload(dev, table, sizeof table), bo = tl_poisoned(dev, G * N * sizeof(float));
    tj_buffer small = tl_poisoned(dev, (G - 1) * N * sizeof(float));
    tj_launch_cfg cfg = tl_grid(G, 1, 1);
    cfg.check_bounds = TJ_CHECK_BOUNDS_ON;
    tj_arg args[] = {TJ_ARG_BUF(bt), TJ_ARG_BUF(bo), TJ_ARG_INT(TJ_I32, N)};
    tj_status st = tj_launch(dev, table_gather_n, &cfg, args, 3, NULL, 0);
    if (st == TJ_OK)
        st = tj_synchronize(dev);
    float *out = malloc(G * N * sizeof *out);
    int wrong = -1;
    if (st == TJ_OK) {
        tl_download(dev, bo, out, G * N * sizeof *out);
        wrong = memcmp(out, data, G * N * sizeof *out) != 0;
    } else {
        tap_diag("%s: %s", tj_status_name(st), tj_last_error());
    }
    tap_ok(wrong == 0, "bounds-checked: loads through addresses from a table are not reported, and read right");
    args[1] = TJ_ARG_BUF(small);
    st = tj_launch(dev, table_gather_n, &cfg, args, 3, NULL, 0);
    if (st == TJ_OK)
        st = tj_synchronize(dev);
    tap_ok(st == TJ_ERR_BOUNDS && tl_error_mentions("table_gather_n", "of buffer 'out'", NULL),
           "bounds-checked: a store past out in the same kernel is reported (%s)", tj_status_name(st));
    tj_buffer_free(dev, bd), tj_buffer_free(dev, bt), tj_buffer_free(dev, bo), tj_buffer_free(dev, small);
    free(data), free(out);
}

static void test_block_at_address(void)
{
    float *x = random_floats(64 * 64), *o = malloc(64 * 64 * sizeof *o);
    tj_buffer bx = tl_upload(dev, x, 64 * 64 * sizeof *x), bo = tl_poisoned(dev, 64 * 64 * sizeof *o);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    tj_arg args[] = {TJ_ARG_INT(TJ_I64, (int64_t)address_of(bx)), TJ_ARG_BUF(bo)};
    const char *what = "a block pointer at an address given as an i64 argument";
    if (!tl_launch_failed(tj_launch(dev, block_at_address, &cfg, args, 2, NULL, 0), what)) {
        tl_download(dev, bo, o, 64 * 64 * sizeof *o);
        tap_ok(memcmp(o, x, 64 * 64 * sizeof *o) == 0, "%s", what);
    }
    char *ptx = NULL;
    tj_status st = tj_kernel_ptx_args(block_at_address, args, 2, NULL, 0, "sm_90a", 4, &ptx);
    tap_ok(st == TJ_OK && strstr(ptx, "cp.async.bulk.tensor.2d.global.shared") &&
               !strstr(ptx, "cp.async.bulk.tensor.2d.shared") && strstr(ptx, "ld.global.v4"),
           "PTX (sm_90a): the store through out is a TMA copy, the load at the address plain 16-byte loads");
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    free(ptx);
    tj_buffer_free(dev, bx), tj_buffer_free(dev, bo);
    free(x), free(o);
}

static void test_ptx(void)
{
    tj_buffer a;
    if (tj_buffer_alloc(dev, 4 * 1024, &a) != TJ_OK)
        tap_bail_out("tj_buffer_alloc: %s", tj_last_error());
    tj_arg args[] = {TJ_ARG_BUF(a), TJ_ARG_INT(TJ_I64, (int64_t)address_of(a))};
    tap_ok(tl_barrier_between(reverse_to_address, args, 2, 1024) == 1,
           "PTX: a store through an address has a barrier after the load of x before it");
    tj_buffer_free(dev, a);
    const tj_kernel *ks[] = {table_gather,     table_gather_aligned, table_block_ptr, table_descriptor,
                             block_at_address, addresses,            round_trip,      store_then_load,
                             table_gather_n};
    tl_ptx_of_every(ks, (int)TL_COUNT(ks));
    /* one warp: 8 elements a thread */
    char *ptx = NULL;
    int vectors = tj_kernel_ptx(table_gather_aligned, NULL, 0, "sm_90", 1, &ptx) == TJ_OK &&
                  strstr(ptx, "ld.global.v4.b32") != NULL;
    free(ptx);
    ptx = NULL;
    int scalars = tj_kernel_ptx(table_gather, NULL, 0, "sm_90", 1, &ptx) == TJ_OK && strstr(ptx, "ld.global.b32") &&
                  !strstr(ptx, "ld.global.v");
    free(ptx);
    tap_ok(vectors && scalars, "PTX: 16-byte loads through a hinted address, single ones through a bare one");
}

static void test_errors(void)
{
    char *ir = NULL;
    tap_ok(tj_kernel_ir(round_trip, NULL, 0, &ir) == TJ_OK && strstr(ir, "= cast %") && strstr(ir, "*f32"),
           "the IR prints address casts as casts");
    free(ir);
    tl_build_refused(address_of_i32, TJ_ERR_TYPE, "'int_to_ptr'", "(cast it to i64 first)");
    tap_ok(tl_error_mentions(tl_where(__FILE__, l_i32), NULL), "  at the user's line");
    tl_build_refused(address_of_float, TJ_ERR_TYPE, "'int_to_ptr'", "an address is an i64 or u64, not f32");
    tap_ok(tl_error_mentions(tl_where(__FILE__, l_float), NULL), "  at the user's line");
    tl_build_refused(address_of_pointer, TJ_ERR_TYPE, "'int_to_ptr'", "an address is an i64 or u64, not *f32");
    tl_build_refused(pointer_of_int, TJ_ERR_TYPE, "'ptr_to_int'", "not a pointer");
    tap_ok(tl_error_mentions(tl_where(__FILE__, l_not_ptr), NULL), "  at the user's line");
    tl_build_refused(pointer_of_block, TJ_ERR_TYPE, "'ptr_to_int'", "operand 1 is a block pointer");
    tap_ok(tl_error_mentions(tl_where(__FILE__, l_block), NULL), "  at the user's line");
    tl_build_refused(address_dtype, TJ_ERR_BUILD, "'int_to_ptr'", "unknown dtype 99");
}

int main(void)
{
    dev = tl_setup("test_addresses");
    tap_plan(5 + 2 + 3 + 1 + 2 + 2 + 3 + 11);
    static const int aligned[G] = {0, 0, 0, 0, 0}, ragged[G] = {1, 3, 0, 7, 2}, by16[G] = {4, 0, 8, 12, 4};
    run_table(table_gather, aligned, twice, "arrays at addresses from a table");
    run_table(table_gather, ragged, twice, "arrays at addresses from a table, not 16-byte aligned");
    run_table(table_gather_aligned, by16, twice, "arrays at addresses from a table, hinted multiples of 16");
    run_table(table_block_ptr, ragged, transposed, "block pointers at addresses from a table");
    run_table(table_descriptor, by16, transposed, "tensor descriptors at addresses from a table");
    test_addresses();
    test_round_trip();
    test_reverse_to_address(1024, 0);
    test_reverse_to_address(1024, 1);
    test_reverse_to_address(8, 3);
    test_store_then_load();
    test_block_at_address();
    test_checked();
    test_ptx();
    test_errors();
    tj_device_close(dev);
    return tap_done();
}
