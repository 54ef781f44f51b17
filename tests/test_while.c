/* SPDX-License-Identifier: MIT */
/*
 * test_while.c — TJ_WHILE loops and tj_debug_barrier.
 *
 * A loop that runs a data-dependent number of times (zero for some
 * programs), carrying an i32, an i64, an f64 scalar and an f32 tile; a loop
 * whose body works before its condition (its results are the values there,
 * as a do-while); an integer condition; Collatz step counts: a TJ_WHILE
 * nested in a TJ_FOR that holds a TJ_IF/TJ_ELSE; a TJ_WHILE in a TJ_WHILE;
 * a spin lock across programs (the CPU runs them on a thread pool):
 * tj_atomic_cas takes it, tj_atomic_xchg releases it, and inside it every
 * program adds its row to a shared accumulator and bumps a counter, then
 * lingers (a loop of volatile loads, so that without the lock programs do
 * overlap), so the sums are exact, and each program saw a count of its own,
 * only if no two programs were ever inside at once. Then the errors (a tile
 * condition, a carried value whose dtype changes, no condition, two, one
 * outside a loop) name the kernel, the op and the line, and
 * tj_kernel_explain names the debug barriers. Each kernel's PTX, with its
 * bar.sync, assembles with ptxas for sm_80, sm_90 and sm_90a where make
 * check found ptxas; so do the layer_norm sample's (Triton's tutorial 05).
 */
#include "testlib.h"

#include "jit/runtime/ptxas.h"
#include "../samples/layer_norm_kernel.h"

static tj_device *dev;

enum { BLOCK = 16, PROGRAMS = 24 };

/* Per program: while x < limit: x = x * 3 / 2 + 1, n += 1, d *= 0.5,
 * acc += row. */
TJ_KERNEL(grow,
          TJ_PARAMS(TJ_PTR(xs, i32), TJ_PTR(row, f32), TJ_PTR(out_x, i32), TJ_PTR(out_n, i64),
                    TJ_PTR(out_d, f64), TJ_PTR(out_acc, f32), TJ_SCALAR(limit, i32)),
          TJ_CONSTS())
{
    tj_val pid = tj_program_id(0), offs = tj_arange(0, BLOCK);
    tj_val x = tj_load(tj_add(xs, pid));
    tj_val n = tj_i64(0), d = tj_f64(1.0);
    tj_val acc = tj_zeros(TJ_SHAPE(BLOCK), TJ_F32);
    tj_val r = tj_load(tj_add(row, offs));
    TJ_WHILE(&x, &n, &d, &acc) {
        TJ_WHILE_COND(tj_lt(x, limit));
        x = tj_add(tj_floordiv(tj_mul(x, 3), 2), 1);
        n = tj_add(n, 1);
        d = tj_mul(d, 0.5);
        acc = tj_add(acc, r);
    }
    tj_store(tj_add(out_x, pid), x);
    tj_store(tj_add(out_n, pid), n);
    tj_store(tj_add(out_d, pid), d);
    tj_store(tj_add(tj_add(out_acc, tj_mul(pid, BLOCK)), offs), acc);
}

static void test_grow(void)
{
    int32_t xs[PROGRAMS], got_x[PROGRAMS], limit = (int32_t)tl_rand_range(50, 5000);
    int64_t got_n[PROGRAMS];
    double got_d[PROGRAMS];
    float row[BLOCK], got_acc[PROGRAMS * BLOCK];
    tl_fill_random(TJ_F32, row, BLOCK);
    for (int p = 0; p < PROGRAMS; p++) /* a quarter start at or past the limit */
        xs[p] = (int32_t)(p % 4 == 0 ? tl_rand_range(limit, limit + 100) : tl_rand_range(0, limit));
    tj_buffer bx = tl_upload(dev, xs, sizeof xs), br = tl_upload(dev, row, sizeof row),
              box = tl_poisoned(dev, sizeof got_x), bon = tl_poisoned(dev, sizeof got_n),
              bod = tl_poisoned(dev, sizeof got_d), boa = tl_poisoned(dev, sizeof got_acc);
    tj_launch_cfg cfg = tl_grid(PROGRAMS, 1, 1);
    if (tl_launch_failed(grow_launch(dev, &cfg, bx, br, box, bon, bod, boa, limit), "grow"))
        return;
    tl_download(dev, box, got_x, sizeof got_x);
    tl_download(dev, bon, got_n, sizeof got_n);
    tl_download(dev, bod, got_d, sizeof got_d);
    tl_download(dev, boa, got_acc, sizeof got_acc);
    int ok = 1, zero_trips = 0;
    for (int p = 0; p < PROGRAMS; p++) {
        int32_t x = xs[p];
        int64_t n = 0;
        double d = 1.0;
        float acc[BLOCK] = {0};
        while (x < limit) {
            x = x * 3 / 2 + 1; /* x >= 0 here: floor = truncation */
            n++;
            d *= 0.5;
            for (int j = 0; j < BLOCK; j++)
                acc[j] += row[j];
        }
        zero_trips += n == 0;
        if (got_x[p] != x || got_n[p] != n || got_d[p] != d ||
            memcmp(&got_acc[p * BLOCK], acc, sizeof acc) != 0) {
            tap_diag("  program %d (x from %d): x %d, n %lld, d %g; expected %d, %lld, %g", p, xs[p],
                     got_x[p], (long long)got_n[p], got_d[p], x, (long long)n, d);
            ok = 0;
        }
    }
    tap_ok(ok && zero_trips > 0, "TJ_WHILE(x < %d) carrying i32, i64, f64 and an f32 tile, "
           "%d of %d programs running it zero times", (int)limit, zero_trips, PROGRAMS);
}

/* i = 0, s = 0; loop { s += i; if !(i < n) break; i += 1 }: the body before
 * the condition runs once more than the rest. */
TJ_KERNEL(do_while, TJ_PARAMS(TJ_PTR(out, i32), TJ_SCALAR(n, i32)), TJ_CONSTS())
{
    tj_val i = tj_i32(0), s = tj_i32(0);
    TJ_WHILE(&i, &s) {
        s = tj_add(s, i);
        TJ_WHILE_COND(tj_lt(i, n));
        i = tj_add(i, 1);
    }
    tj_store(out, i);
    tj_store(tj_add(out, 1), s);
}

static void test_do_while(int32_t n)
{
    int32_t got[2], i = 0, s = 0;
    for (;;) {
        s += i;
        if (!(i < n))
            break;
        i++;
    }
    tj_buffer bo = tl_poisoned(dev, sizeof got);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    if (tl_launch_failed(do_while_launch(dev, &cfg, bo, n), "do_while"))
        return;
    tl_download(dev, bo, got, sizeof got);
    tap_ok(got[0] == i && got[1] == s, "TJ_WHILE with work before TJ_WHILE_COND, n = %d: "
           "i %d, s %d (expected %d, %d)", (int)n, got[0], got[1], (int)i, (int)s);
}

/* An integer condition (nonzero: go on): count x down to 0. */
TJ_KERNEL(count_down, TJ_PARAMS(TJ_PTR(out, i64), TJ_SCALAR(x0, i64)), TJ_CONSTS())
{
    tj_val x = x0, n = tj_i32(0);
    TJ_WHILE(&x, &n) {
        TJ_WHILE_COND(x);
        x = tj_sub(x, 1);
        n = tj_add(n, 1);
    }
    tj_store(out, tj_add(tj_mul(tj_cast(n, TJ_I64), 1000), x));
}

static void test_count_down(int64_t x0)
{
    int64_t got = -1;
    tj_buffer bo = tl_poisoned(dev, sizeof got);
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    if (tl_launch_failed(count_down_launch(dev, &cfg, bo, x0), "count_down"))
        return;
    tl_download(dev, bo, &got, sizeof got);
    tap_ok(got == x0 * 1000, "TJ_WHILE_COND on an i64 (nonzero: go on) from %lld: %lld trips, "
           "ending at 0 (got %lld)", (long long)x0, (long long)x0, (long long)got);
}

/* For each of the program's COUNT numbers, its Collatz steps: a TJ_WHILE
 * in a TJ_FOR, with a TJ_IF/TJ_ELSE in the TJ_WHILE. */
TJ_KERNEL(collatz, TJ_PARAMS(TJ_PTR(xs, i64), TJ_PTR(steps, i32), TJ_PTR(total, i64),
                             TJ_SCALAR(count, i32)),
          TJ_CONSTS())
{
    tj_val pid = tj_program_id(0);
    tj_val sum = tj_i64(0);
    TJ_FOR(k, 0, count, 1, &sum) {
        tj_val at = tj_add(tj_mul(pid, count), k);
        tj_val v = tj_load(tj_add(xs, at));
        tj_val n = tj_i32(0);
        TJ_WHILE(&v, &n) {
            TJ_WHILE_COND(tj_ne(v, 1));
            TJ_IF(tj_eq(tj_mod(v, 2), 0), &v) {
                v = tj_floordiv(v, 2);
            } TJ_ELSE {
                v = tj_add(tj_mul(v, 3), 1);
            }
            n = tj_add(n, 1);
        }
        tj_store(tj_add(steps, at), n);
        sum = tj_add(sum, tj_cast(n, TJ_I64));
    }
    tj_store(tj_add(total, pid), sum);
}

static void test_collatz(void)
{
    enum { P = 6, COUNT = 9 };
    int64_t xs[P * COUNT], total[P], got_total[P];
    int32_t steps[P * COUNT], got_steps[P * COUNT];
    for (int p = 0; p < P; p++) {
        total[p] = 0;
        for (int k = 0; k < COUNT; k++) {
            int64_t v = xs[p * COUNT + k] = k == 0 ? 1 : tl_rand_range(1, 100000);
            int32_t n = 0;
            while (v != 1) {
                v = v % 2 == 0 ? v / 2 : 3 * v + 1;
                n++;
            }
            steps[p * COUNT + k] = n;
            total[p] += n;
        }
    }
    tj_buffer bx = tl_upload(dev, xs, sizeof xs), bs = tl_poisoned(dev, sizeof steps),
              bt = tl_poisoned(dev, sizeof total);
    tj_launch_cfg cfg = tl_grid(P, 1, 1);
    if (tl_launch_failed(collatz_launch(dev, &cfg, bx, bs, bt, COUNT), "collatz"))
        return;
    tl_download(dev, bs, got_steps, sizeof got_steps);
    tl_download(dev, bt, got_total, sizeof got_total);
    int ok = memcmp(got_steps, steps, sizeof steps) == 0 && memcmp(got_total, total, sizeof total) == 0;
    if (!ok)
        tap_diag("  first number %lld: %d steps (expected %d)", (long long)xs[1], got_steps[1], steps[1]);
    tap_ok(ok, "Collatz steps: TJ_WHILE in a TJ_FOR, with a TJ_IF/TJ_ELSE inside (%d numbers)",
           P * COUNT);
}

/* out[p] = the number of pairs (i, j), 0 <= j <= i < n[p], with (i + j) % 3
 * == 0: a TJ_WHILE inside a TJ_WHILE, the inner one's bound the outer's
 * counter. */
TJ_KERNEL(pairs, TJ_PARAMS(TJ_PTR(ns, i32), TJ_PTR(out, i32)), TJ_CONSTS())
{
    tj_val pid = tj_program_id(0), n = tj_load(tj_add(ns, pid));
    tj_val i = tj_i32(0), hits = tj_i32(0);
    TJ_WHILE(&i, &hits) {
        TJ_WHILE_COND(tj_lt(i, n));
        tj_val j = tj_i32(0);
        TJ_WHILE(&j, &hits) {
            TJ_WHILE_COND(tj_le(j, i));
            hits = tj_add(hits, tj_cast(tj_eq(tj_mod(tj_add(i, j), 3), 0), TJ_I32));
            j = tj_add(j, 1);
        }
        i = tj_add(i, 1);
    }
    tj_store(tj_add(out, pid), hits);
}

static void test_pairs(void)
{
    enum { P = 8 };
    int32_t ns[P], want[P], got[P];
    for (int p = 0; p < P; p++) {
        ns[p] = p == 0 ? 0 : (int32_t)tl_rand_range(1, 60);
        want[p] = 0;
        for (int i = 0; i < ns[p]; i++)
            for (int j = 0; j <= i; j++)
                want[p] += (i + j) % 3 == 0;
    }
    tj_buffer bn = tl_upload(dev, ns, sizeof ns), bo = tl_poisoned(dev, sizeof got);
    tj_launch_cfg cfg = tl_grid(P, 1, 1);
    if (tl_launch_failed(pairs_launch(dev, &cfg, bn, bo), "pairs"))
        return;
    tl_download(dev, bo, got, sizeof got);
    tap_ok(memcmp(got, want, sizeof want) == 0, "a TJ_WHILE inside a TJ_WHILE (%d programs, "
           "n = %d first: %d pairs, expected %d)", P, (int)ns[1], (int)got[1], (int)want[1]);
}

/* Each program adds its row to acc and 1 to count under a spin lock, and
 * writes the count it saw there after releasing it. */
TJ_KERNEL(locked_sum,
          TJ_PARAMS(TJ_PTR(lock, i32), TJ_PTR(count, i32), TJ_PTR(acc, i64), TJ_PTR(rows, i64),
                    TJ_PTR(seen, i32)),
          TJ_CONSTS())
{
    tj_val pid = tj_program_id(0), offs = tj_arange(0, BLOCK);
    tj_val mine = tj_load(tj_add(rows, tj_add(tj_mul(pid, BLOCK), offs)));
    TJ_WHILE() {
        TJ_WHILE_COND(tj_eq(tj_atomic_cas(lock, 0, 1), 1));
    }
    tj_val c = tj_load(count, .is_volatile = 1);
    tj_val a = tj_load(tj_add(acc, offs), .is_volatile = 1);
    tj_val t = tj_i32(0); /* time inside, for another program to race in without the lock */
    TJ_FOR(k, 0, 50000, 1, &t) {
        t = tj_add(t, tj_load(count, .is_volatile = 1));
    }
    tj_debug_barrier();
    tj_store(count, tj_add(c, 1));
    tj_store(tj_add(acc, offs), tj_add(a, mine));
    tj_debug_barrier();
    tj_atomic_xchg(lock, 0);
    tj_store(tj_add(seen, pid), c);
}

static void test_spin_lock(void)
{
    enum { P = 64 };
    int64_t rows[P * BLOCK], want[BLOCK] = {0}, got[BLOCK];
    int32_t zero = 0, got_count = -1, got_lock = -1, seen[P], hits[P] = {0};
    for (int i = 0; i < P * BLOCK; i++) {
        rows[i] = tl_rand_range(-1000000, 1000000);
        want[i % BLOCK] += rows[i];
    }
    int64_t acc0[BLOCK] = {0};
    tj_buffer bl = tl_upload(dev, &zero, 4), bc = tl_upload(dev, &zero, 4),
              ba = tl_upload(dev, acc0, sizeof acc0), br = tl_upload(dev, rows, sizeof rows),
              bs = tl_poisoned(dev, sizeof seen);
    tj_launch_cfg cfg = tl_grid(P, 1, 1);
    if (tl_launch_failed(locked_sum_launch(dev, &cfg, bl, bc, ba, br, bs), "locked_sum"))
        return;
    tl_download(dev, bs, seen, sizeof seen);
    int distinct = 1; /* the counts seen inside are 0 .. P-1, once each */
    for (int p = 0; p < P; p++) {
        if (seen[p] < 0 || seen[p] >= P || hits[seen[p]]++)
            distinct = 0;
    }
    tl_download(dev, ba, got, sizeof got);
    tl_download(dev, bc, &got_count, 4);
    tl_download(dev, bl, &got_lock, 4);
    int ok = memcmp(got, want, sizeof want) == 0 && got_count == P && got_lock == 0 && distinct;
    if (!ok)
        tap_diag("  count %d (expected %d), lock %d, acc[0] %lld (expected %lld), counts seen %s",
                 got_count, P, got_lock, (long long)got[0], (long long)want[0],
                 distinct ? "distinct" : "repeated");
    tap_ok(ok, "a spin lock across %d programs (TJ_WHILE on tj_atomic_cas, tj_atomic_xchg): "
           "exact sums and count, each count seen by one program (read inside, stored after "
           "the release)", P);
}

/* --- errors ------------------------------------------------------------------ */

static int l_tile_cond, l_retype, l_no_cond, l_two_conds, l_outside, l_in_if;

TJ_KERNEL(bad_tile_cond, TJ_PARAMS(TJ_PTR(x, i32)), TJ_CONSTS())
{
    tj_val v = tj_load(tj_add(x, tj_arange(0, BLOCK)));
    TJ_WHILE(&v) {
        TJ_WHILE_COND(tj_lt(v, 10)); l_tile_cond = __LINE__;
        v = tj_add(v, 1);
    }
    tj_store(tj_add(x, tj_arange(0, BLOCK)), v);
}

TJ_KERNEL(bad_retype, TJ_PARAMS(TJ_PTR(x, i32)), TJ_CONSTS())
{
    tj_val v = tj_load(x);
    TJ_WHILE(&v) { l_retype = __LINE__;
        TJ_WHILE_COND(tj_lt(v, 10));
        v = tj_cast(v, TJ_F32);
    }
    tj_store(x, tj_cast(v, TJ_I32));
}

TJ_KERNEL(bad_no_cond, TJ_PARAMS(TJ_PTR(x, i32)), TJ_CONSTS())
{
    tj_val v = tj_load(x);
    TJ_WHILE(&v) { l_no_cond = __LINE__;
        v = tj_add(v, 1);
    }
    tj_store(x, v);
}

TJ_KERNEL(bad_two_conds, TJ_PARAMS(TJ_PTR(x, i32)), TJ_CONSTS())
{
    tj_val v = tj_load(x);
    TJ_WHILE(&v) {
        TJ_WHILE_COND(tj_lt(v, 10));
        v = tj_add(v, 1);
        TJ_WHILE_COND(tj_lt(v, 5)); l_two_conds = __LINE__;
    }
    tj_store(x, v);
}

TJ_KERNEL(bad_outside, TJ_PARAMS(TJ_PTR(x, i32)), TJ_CONSTS())
{
    tj_val v = tj_load(x);
    TJ_WHILE_COND(tj_lt(v, 10)); l_outside = __LINE__;
    tj_store(x, v);
}

TJ_KERNEL(bad_in_if, TJ_PARAMS(TJ_PTR(x, i32)), TJ_CONSTS())
{
    tj_val v = tj_load(x);
    TJ_WHILE(&v) {
        TJ_IF(tj_gt(v, 0)) {
            TJ_WHILE_COND(tj_lt(v, 10)); l_in_if = __LINE__;
        }
        v = tj_add(v, 1);
    }
    tj_store(x, v);
}

static void expect_error(const tj_kernel *k, tj_status want, const int *line, const char *text,
                         const char *what)
{
    tj_buffer b = tl_poisoned(dev, BLOCK * 4);
    tj_arg args[] = {TJ_ARG_BUF(b)};
    tj_launch_cfg cfg = tl_grid(1, 1, 1);
    tj_status st = tj_launch(dev, k, &cfg, args, 1, NULL, 0);
    int ok = st == want && tl_error_mentions(k->name, tl_where(__FILE__, *line), text, NULL);
    if (st != want)
        tap_diag("  status %s (expected %s): %s", tj_status_name(st), tj_status_name(want), tj_last_error());
    tap_ok(ok, "%s: %s at its line", what, tj_status_name(want));
}

static void test_errors(void)
{
    expect_error(bad_tile_cond, TJ_ERR_SHAPE, &l_tile_cond, "must be a scalar", "a tile condition");
    expect_error(bad_retype, TJ_ERR_TYPE, &l_retype, "changes type from i32 to f32",
                 "a carried i32 that becomes f32");
    expect_error(bad_no_cond, TJ_ERR_BUILD, &l_no_cond, "without a TJ_WHILE_COND", "no TJ_WHILE_COND");
    expect_error(bad_two_conds, TJ_ERR_BUILD, &l_two_conds, "a second TJ_WHILE_COND", "two TJ_WHILE_CONDs");
    expect_error(bad_outside, TJ_ERR_BUILD, &l_outside, "outside a TJ_WHILE", "TJ_WHILE_COND outside a loop");
    expect_error(bad_in_if, TJ_ERR_BUILD, &l_in_if, "outside a TJ_WHILE", "TJ_WHILE_COND inside a TJ_IF");
}

/* --- PTX ------------------------------------------------------------------------ */

/* The layer_norm sample's kernels at its default sizes' constants. */
static void test_layer_norm_ptx(void)
{
    static const struct { const tj_kernel *const *k; int64_t consts[2]; int n; } kernels[] = {
        {&layer_norm_fwd, {1024}, 1}, {&layer_norm_bwd_dx, {256, 1024}, 2}, {&layer_norm_bwd_dwdb, {32, 128}, 2},
    };
    static const char *const sm[] = {"sm_80", "sm_90", "sm_90a"};
    for (size_t i = 0; i < TL_COUNT(kernels); i++)
        for (int t = 0; t < 3; t++) {
            const tj_kernel *k = *kernels[i].k;
            char *ptx = NULL;
            tj_status st = tj_kernel_ptx(k, kernels[i].consts, kernels[i].n, sm[t], 4, &ptx);
            if (st == TJ_OK && tjj_ptxas_path())
                st = tjj_ptxas_check(tjj_ptxas_path(), ptx, t ? 90 : 80, t == 2, k->name);
            if (st != TJ_OK)
                tap_diag("  %s", tj_last_error());
            tap_ok(st == TJ_OK, "layer_norm sample, %s: PTX for %s%s", k->name, sm[t],
                   tjj_ptxas_path() ? ", assembled by ptxas" : "");
            free(ptx);
        }
}

/* The "last program to arrive" pattern (split reductions): each program
 * stores its part, adds 1 to count, and the one that sees count reach
 * nprog - 1 sums every part. It needs the add to be acquire-release: on a
 * GPU the PTX must fence it on both sides. */
TJ_KERNEL(last_arrival, TJ_PARAMS(TJ_PTR(parts, i32), TJ_PTR(count, i32), TJ_PTR(total, i32)), TJ_CONSTS(NPROG))
{
    tj_val pid = tj_program_id(0);
    tj_store(tj_add(parts, pid), tj_add(tj_mul(pid, 3), 1));
    tj_val seen = tj_atomic_add(count, 1);
    TJ_IF(tj_eq(seen, NPROG - 1)) {
        tj_store(total, tj_sum(tj_load(tj_add(parts, tj_arange(0, NPROG)), .is_volatile = 1), 0));
    }
}

static void test_atomic_order(void)
{
    enum { NPROG = 64 };
    int64_t nprog = NPROG;
    int32_t zero = 0, total = -1;
    tj_buffer parts = tl_poisoned(dev, NPROG * 4), count = tl_upload(dev, &zero, 4), out = tl_upload(dev, &total, 4);
    tj_launch_cfg cfg = {.grid = {NPROG}};
    tj_arg args[] = {TJ_ARG_BUF(parts), TJ_ARG_BUF(count), TJ_ARG_BUF(out)};
    if (!tl_launch_failed(tj_launch(dev, last_arrival, &cfg, args, 3, &nprog, 1), "last arrival")) {
        tl_download(dev, out, &total, 4);
        tap_ok(total == 3 * NPROG * (NPROG - 1) / 2 + NPROG, "the last of %d programs to add 1 sums every "
               "program's part: %d", NPROG, total);
    }
    tj_buffer_free(dev, parts), tj_buffer_free(dev, count), tj_buffer_free(dev, out);
    char *ptx = NULL;
    tj_status st = tj_kernel_ptx(last_arrival, &nprog, 1, "sm_90", 4, &ptx);
    const char *add = st == TJ_OK ? strstr(ptx, "atom.global.add") : NULL;
    const char *before = add ? strstr(ptx, "fence.acq_rel.gpu") : NULL;
    int ok = add && before && before < add && strstr(add, "fence.acq_rel.gpu");
    if (!ok)
        tap_diag("  %s", st == TJ_OK ? "no fence.acq_rel.gpu on both sides of atom.global.add" : tj_last_error());
    tap_ok(ok, "tj_atomic_add is acquire-release on a GPU: fence.acq_rel.gpu before and after its atom");
    free(ptx);
}

/* tj_kernel_explain names each debug barrier with its line. */
static void test_explain(void)
{
    char *text = NULL;
    tj_status st = tj_kernel_explain(locked_sum, NULL, 0, NULL, 0, 4, &text);
    if (st != TJ_OK)
        tap_diag("  %s", tj_last_error());
    tap_ok(st == TJ_OK && text && tl_count(text, "debug_barrier (op") == 2 && strstr(text, "bar.sync 0"),
           "tj_kernel_explain names both debug barriers of locked_sum");
    free(text);
}

/* The last occurrence of what in text before end, or NULL. */
static const char *last_before(const char *text, const char *end, const char *what)
{
    const char *last = NULL;
    for (const char *p = strstr(text, what); p && p < end; p = strstr(p + 1, what))
        last = p;
    return last;
}

/* Does a fence.acq_rel.gpu come between the last global store before the
 * xchg and the xchg (the lock's release publishes the stores)? */
static int release_fenced(const char *ptx)
{
    const char *xchg = strstr(ptx, "atom.global.exch");
    const char *fence = xchg ? last_before(ptx, xchg, "fence.acq_rel.gpu") : NULL;
    const char *store = xchg ? last_before(ptx, xchg, "st.global") : NULL;
    return fence && (!store || store < fence);
}

static void test_ptx(void)
{
    static const struct { const tj_kernel *const *k; const char *sm; int sm_num, arch_specific; } targets[] = {
        {&grow, "sm_80", 80, 0}, {&grow, "sm_90", 90, 0}, {&grow, "sm_90a", 90, 1},
        {&collatz, "sm_80", 80, 0}, {&collatz, "sm_90a", 90, 1},
        {&locked_sum, "sm_80", 80, 0}, {&locked_sum, "sm_90", 90, 0}, {&locked_sum, "sm_90a", 90, 1},
        {&do_while, "sm_90", 90, 0}, {&pairs, "sm_80", 80, 0}, {&pairs, "sm_90a", 90, 1},
    };
    for (size_t i = 0; i < TL_COUNT(targets); i++) {
        const tj_kernel *k = *targets[i].k;
        char *ptx = NULL;
        tj_status st = tj_kernel_ptx(k, NULL, 0, targets[i].sm, 4, &ptx);
        if (st == TJ_OK && tjj_ptxas_path())
            st = tjj_ptxas_check(tjj_ptxas_path(), ptx, targets[i].sm_num, targets[i].arch_specific, k->name);
        if (st != TJ_OK)
            tap_diag("  %s", tj_last_error());
        int bars = ptx ? tl_count(ptx, "bar.sync") : 0;
        /* the lock's release publishes the stores before it */
        int fenced = ptx && release_fenced(ptx);
        int ok = st == TJ_OK && (k != locked_sum || (bars >= 2 && fenced));
        if (st == TJ_OK && !ok)
            tap_diag("  %d bar.sync in the PTX, %s", bars, fenced ? "fenced" : "no fence before the exch");
        tap_ok(ok, "%s: PTX for %s%s%s", k->name, targets[i].sm,
               tjj_ptxas_path() ? ", assembled by ptxas" : " (no ptxas: not assembled)",
               k == locked_sum ? ", with the debug barriers' bar.sync and a fenced xchg" : "");
        free(ptx);
    }
}

int main(void)
{
    dev = tl_setup("test_while");
    test_grow();
    test_do_while((int32_t)tl_rand_range(1, 40));
    test_do_while(0);
    test_do_while((int32_t)tl_rand_range(-40, -1));
    test_count_down(tl_rand_range(0, 300));
    test_count_down(0);
    test_collatz();
    test_pairs();
    test_spin_lock();
    test_atomic_order();
    test_errors();
    test_explain();
    test_ptx();
    test_layer_norm_ptx();
    tj_device_close(dev);
    return tap_done();
}
