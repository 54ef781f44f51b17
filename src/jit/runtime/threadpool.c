/* SPDX-License-Identifier: MIT */
/*
 * threadpool.c — the host threads that run a CPU launch's grid.
 *
 * A launch is a range of program instances [0, n). tjj_pool_run hands the
 * range out in chunks through one atomic counter: every worker (the calling
 * thread included) takes the next chunk until none is left, so fast workers
 * take more and no scheduling decision is made up front. The pool's threads
 * are created once, on the first run (pthread_once), and then sleep on a
 * condition variable between runs; starting threads per launch would cost
 * more than a small kernel.
 *
 * One run at a time: a mutex serializes callers from different threads. That
 * also makes a worker index exclusive — while fn runs with index w, no other
 * thread in the process runs with w — so callers can keep per-worker state
 * (the CPU back end's scratch memory) in an array indexed by it. A call made
 * from inside fn runs inline on the calling worker instead of waiting for a
 * pool that it is itself part of.
 *
 * The number of workers is the number of cores this process may run on
 * (its CPU affinity), or TJIT_NUM_THREADS where set.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity */
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../jit.h"

enum { MAX_WORKERS = 1024 };

static pthread_once_t count_once = PTHREAD_ONCE_INIT;
static int worker_count;

static pthread_once_t start_once = PTHREAD_ONCE_INIT;
static int helper_count; /* threads started besides the caller */

static pthread_mutex_t run_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t job_ready = PTHREAD_COND_INITIALIZER;
static pthread_cond_t job_done = PTHREAD_COND_INITIALIZER;

/* The current run; written by the caller under state_lock before it wakes
 * the helpers. */
static struct {
    tjj_task_fn fn;
    void *ctx;
    uint64_t n, chunk;
    _Atomic uint64_t next;
    uint64_t generation; /* bumped per run: a helper's signal to start */
    int helpers_busy;    /* helpers that have not finished this run */
} job;

/* The worker index of this thread while it runs a task, else -1. */
static _Thread_local int current_worker = -1;

static void count_workers(void)
{
    int n = 0;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        n = CPU_COUNT(&set);
    if (n <= 0)
        n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    const char *env = getenv("TJIT_NUM_THREADS");
    if (env && *env) {
        char *end;
        errno = 0;
        long v = strtol(env, &end, 10);
        if (errno || *end || v < 1)
            fprintf(stderr, "tjit: ignoring TJIT_NUM_THREADS=%s (expected a positive integer)\n", env);
        else
            n = v > MAX_WORKERS ? MAX_WORKERS : (int)v;
    }
    worker_count = n < 1 ? 1 : n > MAX_WORKERS ? MAX_WORKERS : n;
}

int tjj_pool_workers(void)
{
    pthread_once(&count_once, count_workers);
    return worker_count;
}

static void work(int worker)
{
    for (;;) {
        uint64_t first = atomic_fetch_add_explicit(&job.next, job.chunk, memory_order_relaxed);
        if (first >= job.n)
            return;
        uint64_t count = job.n - first < job.chunk ? job.n - first : job.chunk;
        job.fn(job.ctx, worker, (int64_t)first, (int64_t)count);
    }
}

static void *helper_main(void *arg)
{
    current_worker = (int)(intptr_t)arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&state_lock);
    for (;;) {
        while (job.generation == seen)
            pthread_cond_wait(&job_ready, &state_lock);
        seen = job.generation;
        pthread_mutex_unlock(&state_lock);
        work(current_worker);
        pthread_mutex_lock(&state_lock);
        if (--job.helpers_busy == 0)
            pthread_cond_signal(&job_done);
    }
    return NULL;
}

/* fork() copies only the calling thread: the child's pool has no helpers
 * and runs everything on its caller. Holding run_lock across the fork keeps
 * a run from being half done in the child's copy of the state. */
static void before_fork(void) { pthread_mutex_lock(&run_lock); }
static void after_fork_in_parent(void) { pthread_mutex_unlock(&run_lock); }
static void after_fork_in_child(void)
{
    helper_count = 0;
    pthread_mutex_unlock(&run_lock);
}

/* Helpers never take signals meant for the application; they are detached
 * and live as long as the process. If a thread cannot be created the pool
 * simply has fewer. */
static void start_helpers(void)
{
    pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int want = tjj_pool_workers() - 1;
    for (int i = 1; i <= want; i++) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&t, &attr, helper_main, (void *)(intptr_t)i);
        pthread_attr_destroy(&attr);
        if (rc != 0)
            break;
        helper_count++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void run_inline(int worker, uint64_t n, uint64_t chunk, tjj_task_fn fn, void *ctx)
{
    for (uint64_t first = 0; first < n; first += chunk) {
        uint64_t count = n - first < chunk ? n - first : chunk;
        fn(ctx, worker, (int64_t)first, (int64_t)count);
    }
}

void tjj_pool_run(int64_t n, int64_t chunk, tjj_task_fn fn, void *ctx)
{
    if (n <= 0)
        return;
    uint64_t un = (uint64_t)n, uchunk = chunk < 1 ? 1 : (uint64_t)chunk;
    if (current_worker >= 0) {
        run_inline(current_worker, un, uchunk, fn, ctx);
        return;
    }
    pthread_once(&start_once, start_helpers);
    pthread_mutex_lock(&run_lock);
    current_worker = 0;
    if (helper_count == 0 || un <= uchunk) {
        run_inline(0, un, uchunk, fn, ctx);
    } else {
        pthread_mutex_lock(&state_lock);
        job.fn = fn;
        job.ctx = ctx;
        job.n = un;
        job.chunk = uchunk;
        atomic_store_explicit(&job.next, 0, memory_order_relaxed);
        job.helpers_busy = helper_count;
        job.generation++;
        pthread_cond_broadcast(&job_ready);
        pthread_mutex_unlock(&state_lock);

        work(0);

        pthread_mutex_lock(&state_lock);
        while (job.helpers_busy > 0)
            pthread_cond_wait(&job_done, &state_lock);
        pthread_mutex_unlock(&state_lock);
    }
    current_worker = -1;
    pthread_mutex_unlock(&run_lock);
}
