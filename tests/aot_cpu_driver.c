/* SPDX-License-Identifier: MIT */
/*
 * aot_cpu_driver.c — a program built from a kernel exported for the CPU
 * (tests/test_aot.sh): it includes aot_vadd_cpu.h and links with
 * aot_vadd_cpu.c and aot_vadd_cpu.o only, no tjit, no LLVM.
 *
 * It runs aot_vadd (out = x + scale * y, masked to n) over aligned arrays,
 * then 4 bytes past alignment with a ragged n, and one element, checking
 * every element and that those past n are left alone; and that a grid
 * dimension of 0 is EINVAL. Each case runs on the online CPUs, on the
 * calling thread alone, on 3 threads and on more threads than programs.
 * Outside sanitizers (whose own pthread_create this would displace) the
 * threads each launch starts are counted by interposing pthread_create.
 * Prints each failure; exits 1 on any.
 */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "aot_vadd_cpu.h"

static int started; /* threads the last launch started */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define COUNTED 0
#else
#define COUNTED 1

/* The launcher's threads, counted; then the C library's pthread_create. */
int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg)
{
    static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "pthread_create");
    __atomic_add_fetch(&started, 1, __ATOMIC_RELAXED);
    return real ? real(thread, attr, start, arg) : EAGAIN;
}
#endif

enum { N = 5000, BLOCK = 256 };

static _Alignas(64) float x[N], y[N], out[N];

/* threads: as aot_vadd_cpu_threads takes it; -1: aot_vadd_cpu. */
static int run(int off, int n, int threads, const char *what)
{
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = (float)(3 * i % 17);
        out[i] = -1.0f;
    }
    unsigned programs = (unsigned)((n + BLOCK - 1) / BLOCK);
    started = 0;
    int r = threads < 0 ? aot_vadd_cpu(programs, 1, 1, x + off, y + off, out + off, n, 0.5f)
                        : aot_vadd_cpu_threads((unsigned)threads, programs, 1, 1, x + off, y + off, out + off, n,
                                               0.5f);
    int bad = r != 0;
    if (r != 0)
        printf("FAIL: %s, threads %d: the launcher returned %d\n", what, threads, r);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    long want = threads < 0 || threads == 0 ? online : threads;
    want = (want > (long)programs ? (long)programs : want) - 1;
    if (COUNTED && started != want) {
        printf("FAIL: %s, threads %d: %d threads started, want %ld (%u programs, %ld CPUs)\n", what, threads,
               started, want, programs, online);
        bad = 1;
    }
    for (int i = 0; i < N; i++) {
        float want = i >= off && i < off + n ? x[i] + 0.5f * y[i] : -1.0f;
        if (out[i] != want && bad++ < 5)
            printf("FAIL: %s, threads %d: out[%d] = %g, want %g\n", what, threads, i, out[i], want);
    }
    printf("%s, threads %d: %s\n", what, threads, bad ? "wrong" : "right");
    return bad != 0;
}

int main(void)
{
    static const int threads[] = {-1, 0, 1, 3, 1000};
    int failed = 0;
    for (unsigned t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        failed |= run(0, N - 37, threads[t], "aligned");
        failed |= run(1, N - 40, threads[t], "4 bytes past alignment");
        failed |= run(3, 1, threads[t], "one element, misaligned");
    }
    int r = aot_vadd_cpu(0, 1, 1, x, y, out, N, 0.5f);
    int r_threads = aot_vadd_cpu_threads(4, 1, 0, 1, x, y, out, N, 0.5f);
    if (r != EINVAL || r_threads != EINVAL) {
        printf("FAIL: a grid of 0 programs gave %d and %d, want EINVAL\n", r, r_threads);
        failed = 1;
    }
    printf("threads %s\n", COUNTED ? "counted" : "not counted (a sanitizer's pthread_create)");
    return failed;
}
