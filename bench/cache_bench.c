/* SPDX-License-Identifier: MIT */
/*
 * cache_bench.c — what the disk cache saves: the first launch of the
 * softmax sample's kernel in a fresh process, with an empty cache (cold:
 * the whole pipeline and LLVM) and with the entry a previous process left
 * (warm: the entry read, checked and loaded).
 *
 *     usage: cache_bench [cpu|gpu] [pairs]     (default: the default device, 5)
 *
 * Each pair is two child processes (fork) on a fresh temporary cache
 * directory: the cold one, then the warm one. A child opens the device,
 * writes the input, and times its first launch up to tj_synchronize, then
 * a second launch the same way (the kernel alone: what the first costs
 * beyond it is the compile or the cache). The medians are printed; the
 * directory is removed at the end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../samples/softmax_kernel.h"
#include "bench_util.h"

enum { ROWS = 4096, COLS = 781, BLOCK = 1024, MAX_PAIRS = 50 };

typedef struct timing {
    double first, second; /* seconds */
    char device[128];
} timing;

static int launch_timed(tj_device *dev, tj_buffer src, tj_buffer dst, double *seconds)
{
    tj_launch_cfg cfg = {.grid = {ROWS}};
    double t0 = now_seconds();
    tj_status st = softmax_kernel_launch(dev, &cfg, src, dst, COLS, COLS, BLOCK);
    if (st == TJ_OK)
        st = tj_synchronize(dev);
    *seconds = now_seconds() - t0;
    if (st != TJ_OK)
        fprintf(stderr, "cache_bench: launch: %s: %s\n", tj_status_name(st), tj_last_error());
    return st == TJ_OK;
}

/* In a child: one process's first and second launch. */
static void child(tj_device_kind kind, int fd)
{
    size_t bytes = (size_t)ROWS * COLS * sizeof(float);
    float *host = xmalloc(bytes);
    for (int i = 0; i < ROWS * COLS; i++)
        host[i] = (float)(i % 97) / 7.0f;
    tj_device *dev = NULL;
    tj_buffer src, dst;
    timing t = {0};
    if (tj_device_open(&dev, kind, 0) != TJ_OK || tj_buffer_alloc(dev, bytes, &src) != TJ_OK ||
        tj_buffer_alloc(dev, bytes, &dst) != TJ_OK ||
        tj_buffer_write(dev, src, 0, host, bytes) != TJ_OK) {
        fprintf(stderr, "cache_bench: %s\n", tj_last_error());
        _exit(1);
    }
    snprintf(t.device, sizeof t.device, "%s", tj_device_name(dev));
    if (!launch_timed(dev, src, dst, &t.first) || !launch_timed(dev, src, dst, &t.second))
        _exit(1);
    tj_device_close(dev);
    free(host);
    _exit(write(fd, &t, sizeof t) == (ssize_t)sizeof t ? 0 : 1);
}

static timing run_child(tj_device_kind kind)
{
    int fds[2];
    timing t = {0};
    if (pipe(fds) != 0)
        exit(2);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        child(kind, fds[1]);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], &t, sizeof t);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (pid < 0 || got != (ssize_t)sizeof t || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "cache_bench: a child failed\n");
        exit(2);
    }
    return t;
}

int main(int argc, char **argv)
{
    tj_device_kind kind = TJ_DEVICE_DEFAULT;
    if (argc > 1 && strcmp(argv[1], "cpu") == 0)
        kind = TJ_DEVICE_CPU;
    else if (argc > 1 && strcmp(argv[1], "gpu") == 0)
        kind = TJ_DEVICE_GPU;
    else if (argc > 1) {
        fprintf(stderr, "usage: cache_bench [cpu|gpu] [pairs]\n");
        return 2;
    }
    int pairs = argc > 2 ? atoi(argv[2]) : 5;
    if (pairs < 1 || pairs > MAX_PAIRS) {
        fprintf(stderr, "cache_bench: pairs: 1 to %d\n", MAX_PAIRS);
        return 2;
    }
    const char *tmp = getenv("TMPDIR");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/tjit-cache-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("cache_bench: mkdtemp");
        return 2;
    }
    setenv("TJIT_CACHE", "1", 1);
    unsetenv("TJIT_DUMP"); /* a dump would compile instead of reading the cache */
    double cold[MAX_PAIRS], warm[MAX_PAIRS], kernel[2 * MAX_PAIRS];
    char device[128] = "";
    for (int i = 0; i < pairs; i++) {
        char sub[600], rm[700];
        snprintf(sub, sizeof sub, "%s/%d", dir, i); /* empty: the cold run's */
        setenv("TJIT_CACHE_DIR", sub, 1);
        timing c = run_child(kind), w = run_child(kind);
        cold[i] = c.first;
        warm[i] = w.first;
        kernel[2 * i] = c.second;
        kernel[2 * i + 1] = w.second;
        snprintf(device, sizeof device, "%s", c.device);
        snprintf(rm, sizeof rm, "rm -rf '%s'", sub);
        if (system(rm) != 0)
            fprintf(stderr, "cache_bench: cannot remove %s\n", sub);
    }
    rmdir(dir);
    printf("softmax_kernel %d x %d (BLOCK %d) on %s, medians of %d pairs of processes:\n", ROWS, COLS, BLOCK,
           device, pairs);
    double k = median(kernel, 2 * pairs);
    double mc = median(cold, pairs), mw = median(warm, pairs);
    printf("  first launch, cold (empty cache):    %9.2f ms  (compile ~%.2f ms)\n", mc * 1e3, (mc - k) * 1e3);
    printf("  first launch, warm (a second process): %7.2f ms  (cache ~%.2f ms)\n", mw * 1e3, (mw - k) * 1e3);
    printf("  a later launch (the kernel alone):   %9.2f ms\n", k * 1e3);
    return 0;
}
