/* SPDX-License-Identifier: MIT */
/*
 * bench_util.h — what the CPU and GPU benchmarks share: a monotonic clock,
 * the median of a set of timings, and an allocation that ends the run
 * cleanly when memory is short. Header only (static functions).
 */
#ifndef TJIT_BENCH_UTIL_H
#define TJIT_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v in place. */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "benchmark: out of memory (%zu bytes)\n", bytes);
        exit(2);
    }
    return p;
}

#endif
