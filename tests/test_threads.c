/* SPDX-License-Identifier: MIT */
/*
 * test_threads.c — one device used from several threads at once.
 *
 * The variant cache (issue 8, item 12) must not make a launch wait for an
 * unrelated compile, and must compile a variant that several threads ask
 * for at once only once. Kernel bodies run while their variant compiles, so
 * a body is the hook: it counts its builds, and it can wait for what the
 * test needs to have happened meanwhile — the main thread's launch of a
 * cached kernel, or the other threads queued on the in-flight variant
 * (tjj_variant_waiters, an internal counter). Waits are bounded (60 s) so
 * that the old behaviour fails instead of hanging; nothing is timed.
 *
 * A kernel body that launches (item 9), on its own device or another one,
 * gets a clear error instead of a deadlock, and so does its own launch.
 *
 * The hammer (item 19) runs alloc / write / launch / read / free from four
 * threads at once, over kernels that each thread compiles and that all of
 * them share, and checks every result; under ThreadSanitizer (.ci/run's
 * tsan build) it is also the race detector's workload.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "../src/jit/runtime/device_impl.h"
#include "testlib.h"

static tj_device *dev;

enum { BLOCK = 128, NTHREADS = 4, WAIT_S = 60 };

/* testlib's generator is one state for the process; threads here draw
 * from their own, seeded from it by the thread that starts them. */
static _Thread_local uint64_t rng;
static int rand_range(int lo, int hi)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return lo + (int)((z ^ (z >> 31)) % (uint64_t)(hi - lo + 1));
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;

static struct timespec deadline(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += WAIT_S;
    return t;
}

/* Waits (bounded) until *flag is set; returns whether it was. */
static int wait_flag(int *flag)
{
    struct timespec until = deadline();
    pthread_mutex_lock(&lock);
    while (!*flag && pthread_cond_timedwait(&cond, &lock, &until) == 0)
        ;
    int set = *flag;
    pthread_mutex_unlock(&lock);
    return set;
}

static void set_flag(int *flag)
{
    pthread_mutex_lock(&lock);
    *flag = 1;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
}

/* Waits (bounded, polling) until n threads wait for an in-flight variant. */
static int wait_waiters(int n)
{
    for (int i = 0; i < WAIT_S * 1000; i++) {
        if (tjj_variant_waiters(dev) >= n)
            return 1;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    return 0;
}

/* y = x * A + B, masked to n: the kernel of most tests here. */
#define AXPB_BODY(wait_hook)                                                      \
    {                                                                             \
        wait_hook;                                                                \
        tj_val o = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));  \
        tj_val m = tj_lt(o, n);                                                   \
        tj_val v = tj_load(tj_add(x, o), .mask = m);                              \
        tj_store(tj_add(y, o), tj_add(tj_mul(v, (int)A), (int)B), .mask = m);     \
    }

static int slow_entered, fast_done, slow_saw_fast;
static atomic_int once_builds, bad_builds;
static int once_saw_waiters, bad_saw_waiters, bad_waits = 1;

TJ_KERNEL(fast_k, TJ_PARAMS(TJ_PTR(x, i32), TJ_PTR(y, i32), TJ_SCALAR(n, i32)), TJ_CONSTS(A, B))
AXPB_BODY((void)0)

/* Its build waits until the main thread's launch of cached fast_k is done. */
TJ_KERNEL(slow_k, TJ_PARAMS(TJ_PTR(x, i32), TJ_PTR(y, i32), TJ_SCALAR(n, i32)), TJ_CONSTS(A, B))
AXPB_BODY(set_flag(&slow_entered); slow_saw_fast = wait_flag(&fast_done))

/* Its build counts itself and waits for the other threads to queue. */
TJ_KERNEL(once_k, TJ_PARAMS(TJ_PTR(x, i32), TJ_PTR(y, i32), TJ_SCALAR(n, i32)), TJ_CONSTS(A, B))
AXPB_BODY(atomic_fetch_add(&once_builds, 1); once_saw_waiters = wait_waiters(NTHREADS - 1))

/* The same, and then a shape error: a compile that fails. */
TJ_KERNEL(bad_k, TJ_PARAMS(TJ_PTR(x, i32), TJ_PTR(y, i32), TJ_SCALAR(n, i32)), TJ_CONSTS(A, B))
{
    atomic_fetch_add(&bad_builds, 1);
    if (bad_waits)
        bad_saw_waiters = wait_waiters(NTHREADS - 1);
    tj_val o = tj_arange(0, BLOCK);
    tj_store(tj_add(y, o), tj_add(tj_load(tj_add(x, o)), tj_arange(0, BLOCK / 2))); /* BAD_LINE */
    (void)n;
}

/* x, y and n for a run of an axpb kernel; check() compares y. */
typedef struct axpb_run {
    int n, a, b;
    int32_t *x;
    tj_buffer bx, by;
} axpb_run;

static int axpb_setup(axpb_run *r, int n, int a, int b)
{
    *r = (axpb_run){.n = n, .a = a, .b = b, .x = malloc((size_t)n * sizeof(int32_t))};
    for (int i = 0; i < n; i++)
        r->x[i] = (int32_t)rand_range(-1000, 1000);
    if (tj_buffer_alloc(dev, (size_t)n * 4, &r->bx) != TJ_OK ||
        tj_buffer_alloc(dev, (size_t)n * 4, &r->by) != TJ_OK ||
        tj_buffer_write(dev, r->bx, 0, r->x, (size_t)n * 4) != TJ_OK)
        return 0;
    int32_t *poison = malloc((size_t)n * 4);
    for (int i = 0; i < n; i++)
        poison[i] = INT32_MIN + 7;
    tj_status st = tj_buffer_write(dev, r->by, 0, poison, (size_t)n * 4);
    free(poison);
    return st == TJ_OK;
}

static int axpb_launch(axpb_run *r, const tj_kernel *k)
{
    tj_launch_cfg cfg = {.grid = {(r->n + BLOCK - 1) / BLOCK}};
    tj_arg args[] = {TJ_ARG_BUF(r->bx), TJ_ARG_BUF(r->by), TJ_ARG_I32(r->n)};
    int64_t consts[] = {r->a, r->b};
    return tj_launch(dev, k, &cfg, args, 3, consts, 2) == TJ_OK;
}

/* Reads y back and compares; frees the run. */
static int axpb_check(axpb_run *r)
{
    int32_t *y = malloc((size_t)r->n * 4);
    int bad = tj_buffer_read(dev, r->by, 0, y, (size_t)r->n * 4) != TJ_OK;
    for (int i = 0; !bad && i < r->n; i++)
        bad = y[i] != (int32_t)((uint32_t)r->x[i] * (uint32_t)r->a + (uint32_t)r->b);
    free(y);
    free(r->x);
    tj_buffer_free(dev, r->bx);
    tj_buffer_free(dev, r->by);
    return !bad;
}

/* ---- item 12: a cached launch while another thread compiles --------------- */

static void *launch_slow(void *arg)
{
    axpb_run *r = arg;
    rng = 1;
    intptr_t ok = axpb_launch(r, slow_k);
    if (!ok)
        tap_diag("slow_k: %s", tj_last_error());
    return (void *)ok;
}

static void test_cached_launch_during_compile(void)
{
    axpb_run warm, slow, fast;
    int ok = axpb_setup(&warm, 1000, 3, 1) && axpb_launch(&warm, fast_k) && axpb_check(&warm);
    tap_ok(ok, "fast_k compiles and runs (%s)", tj_last_error());
    int a = rand_range(2, 100);
    ok = axpb_setup(&slow, 999, a, 5) && axpb_setup(&fast, 777, 3, 1);
    pthread_t t;
    pthread_create(&t, NULL, launch_slow, &slow);
    int entered = wait_flag(&slow_entered);
    /* slow_k is compiling on t now; fast_k (cached) must not wait for it. */
    int fast_ok = ok && axpb_launch(&fast, fast_k) && axpb_check(&fast);
    set_flag(&fast_done);
    void *slow_ok;
    pthread_join(t, &slow_ok);
    tap_ok(entered && fast_ok && slow_saw_fast,
           "a launch of a cached variant completes while another thread's compile is blocked "
           "(%s)", !entered ? "the compile never started" : !slow_saw_fast ? "it waited for the compile" : "ok");
    tap_ok(slow_ok && axpb_check(&slow), "the blocked compile then finishes and its launch is right");
}

/* ---- item 12: one compile for threads that ask at once -------------------- */

typedef struct asker {
    const tj_kernel *kernel;
    uint64_t seed;
    int a;
    int n;      /* one length for all askers: on a GPU it is part of the key */
    tj_status st;
    char message[1024];
    int right;
} asker;

static void *ask(void *arg)
{
    asker *q = arg;
    rng = q->seed;
    axpb_run r;
    if (!axpb_setup(&r, q->n, q->a, 9)) {
        q->st = TJ_ERR_INVALID_ARG;
        return NULL;
    }
    tj_launch_cfg cfg = {.grid = {(r.n + BLOCK - 1) / BLOCK}};
    tj_arg args[] = {TJ_ARG_BUF(r.bx), TJ_ARG_BUF(r.by), TJ_ARG_I32(r.n)};
    int64_t consts[] = {r.a, r.b};
    q->st = tj_launch(dev, q->kernel, &cfg, args, 3, consts, 2);
    snprintf(q->message, sizeof q->message, "%s", tj_last_error());
    q->right = axpb_check(&r);
    return NULL;
}

static void ask_all(const tj_kernel *k, int a, asker *q)
{
    pthread_t t[NTHREADS];
    int n = (int)tl_rand_range(1, 2000);
    for (int i = 0; i < NTHREADS; i++) {
        q[i] = (asker){.kernel = k, .a = a, .n = n, .seed = tl_rand_u64()};
        pthread_create(&t[i], NULL, ask, &q[i]);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
}

static void test_compile_once(void)
{
    asker q[NTHREADS];
    ask_all(once_k, rand_range(2, 50), q);
    int all_ok = 1;
    for (int i = 0; i < NTHREADS; i++)
        if (q[i].st != TJ_OK || !q[i].right) {
            all_ok = 0;
            tap_diag("thread %d: %s: %s", i, tj_status_name(q[i].st), q[i].message);
        }
    tap_ok(once_saw_waiters, "%d threads waited for the one in-flight compile", NTHREADS - 1);
    tap_ok(all_ok, "all %d threads launched it and got the right results", NTHREADS);
    tap_ok(atomic_load(&once_builds) == 1, "the variant was built once (built %d times)",
           atomic_load(&once_builds));
}

static void test_failed_compile_reported_to_all(void)
{
    asker q[NTHREADS];
    ask_all(bad_k, 1, q);
    int all_failed = 1;
    for (int i = 0; i < NTHREADS; i++) {
        if (q[i].st != TJ_ERR_SHAPE || !strstr(q[i].message, "test_threads.c") ||
            strcmp(q[i].message, q[0].message) != 0) {
            all_failed = 0;
            tap_diag("thread %d: %s: %s", i, tj_status_name(q[i].st), q[i].message);
        }
    }
    tap_ok(bad_saw_waiters, "%d threads waited for the failing compile", NTHREADS - 1);
    tap_ok(all_failed, "each of the %d threads got its TJ_ERR_SHAPE, naming the line (%s)",
           NTHREADS, q[0].message);
    tap_ok(atomic_load(&bad_builds) == 1, "the failing variant was built once (built %d times)",
           atomic_load(&bad_builds));
    /* A failure is not cached: the next launch tries again. */
    asker again = {.kernel = bad_k, .a = 1, .n = q[0].n, .seed = tl_rand_u64()};
    bad_waits = 0;
    ask(&again);
    tap_ok(again.st == TJ_ERR_SHAPE && atomic_load(&bad_builds) == 2,
           "a later launch builds it again and fails again (%s, built %d times)",
           tj_status_name(again.st), atomic_load(&bad_builds));
}

/* ---- item 9: a launch from a kernel body ---------------------------------- */

static tj_device *other_dev;
static tj_status inner_same, inner_other;
static char inner_same_msg[1024], inner_other_msg[1024];

TJ_KERNEL(inner_k, TJ_PARAMS(TJ_PTR(x, i32), TJ_PTR(y, i32), TJ_SCALAR(n, i32)), TJ_CONSTS(A, B))
AXPB_BODY((void)0)

static void inner_launch(tj_device *d, tj_status *st, char *msg)
{
    tj_buffer b;
    tj_buffer_alloc(d, 64, &b);
    tj_launch_cfg cfg = {.grid = {1}};
    *st = inner_k_launch(d, &cfg, b, b, 16, 1, 0);
    snprintf(msg, 1024, "%s", tj_last_error());
    tj_buffer_free(d, b);
}

TJ_KERNEL(outer_k, TJ_PARAMS(TJ_PTR(x, i32), TJ_PTR(y, i32), TJ_SCALAR(n, i32)), TJ_CONSTS(A, B))
AXPB_BODY(inner_launch(dev, &inner_same, inner_same_msg);
          inner_launch(other_dev, &inner_other, inner_other_msg))

static tj_status outer_status;
static char outer_msg[1024];
static int outer_done;

static void *launch_outer(void *arg)
{
    (void)arg;
    rng = 2;
    axpb_run r;
    axpb_setup(&r, 100, 2, 3);
    outer_status = axpb_launch(&r, outer_k) ? TJ_OK : TJ_ERR_LAUNCH;
    snprintf(outer_msg, sizeof outer_msg, "%s", tj_last_error());
    axpb_check(&r);
    set_flag(&outer_done);
    return NULL;
}

static void test_launch_from_body(void)
{
    if (tj_device_open(&other_dev, TJ_DEVICE_CPU, 0) != TJ_OK) {
        tap_ok(0, "open a second device: %s", tj_last_error());
        return;
    }
    pthread_t t;
    pthread_create(&t, NULL, launch_outer, NULL);
    if (!wait_flag(&outer_done)) {
        tap_ok(0, "a kernel body that launches on its own device deadlocked");
        tap_done();
        _exit(1);
    }
    pthread_join(t, NULL);
    tap_ok(inner_same == TJ_ERR_LAUNCH && strstr(inner_same_msg, "inner_k") &&
               strstr(inner_same_msg, "outer_k"),
           "a launch on the same device from a kernel body -> TJ_ERR_LAUNCH naming both kernels "
           "(got %s: %s)", tj_status_name(inner_same), inner_same_msg);
    tap_ok(inner_other == TJ_ERR_LAUNCH && strstr(inner_other_msg, "inner_k"),
           "a launch on another device from a kernel body -> TJ_ERR_LAUNCH (got %s: %s)",
           tj_status_name(inner_other), inner_other_msg);
    tap_ok(outer_status != TJ_OK && strstr(outer_msg, "inner_k"),
           "the launch whose body launched fails too, saying why (%s)", outer_msg);
    tj_device_close(other_dev);
}

/* ---- item 19: the hammer -------------------------------------------------- */

enum { HAMMER_ITERS = 60 };

typedef struct hammerer {
    int id;
    uint64_t seed;
} hammerer;

static void *hammer(void *arg)
{
    hammerer *h = arg;
    rng = h->seed;
    intptr_t id = h->id, failures = 0;
    for (int it = 0; it < HAMMER_ITERS; it++) {
        axpb_run r;
        /* Shared variants (a in 1..3) and this thread's own (a = 10 + id). */
        int a = it % 4 == 3 ? 10 + (int)id : 1 + it % 3;
        if (!axpb_setup(&r, rand_range(1, 3000), a, (int)id) ||
            !axpb_launch(&r, fast_k) || !axpb_check(&r)) {
            if (failures++ < 3)
                tap_diag("hammer thread %d, iteration %d: %s", (int)id, it, tj_last_error());
        }
    }
    return (void *)failures;
}

static void test_hammer(void)
{
    pthread_t t[NTHREADS];
    hammerer h[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        h[i] = (hammerer){i, tl_rand_u64()};
        pthread_create(&t[i], NULL, hammer, &h[i]);
    }
    intptr_t failures = 0;
    for (int i = 0; i < NTHREADS; i++) {
        void *f;
        pthread_join(t[i], &f);
        failures += (intptr_t)f;
    }
    tap_ok(failures == 0, "%d threads x %d alloc/write/launch/read/free: all right (%d wrong)",
           NTHREADS, HAMMER_ITERS, (int)failures);
}

int main(void)
{
    dev = tl_setup("test_threads");
    rng = tl_rand_u64();
    tap_plan(14);
    test_cached_launch_during_compile();
    test_compile_once();
    test_failed_compile_reported_to_all();
    test_launch_from_body();
    test_hammer();
    tj_device_close(dev);
    return tap_done();
}
