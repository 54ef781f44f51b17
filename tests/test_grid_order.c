/* SPDX-License-Identifier: MIT */
/*
 * test_grid_order.c — every program of a grid runs exactly once, with its
 * own ids.
 *
 * The CPU back end does not visit a grid in plain pid0-fastest order: its
 * entry point walks groups of pid0 values for each pid1 (cpu/cpu_kernel.c,
 * build_runner), stepping the three ids without division, and the thread
 * pool hands that walk out in chunks. A mistake there would skip some
 * programs and run others twice, or hand a program the wrong ids. Each
 * program here adds 1 atomically to the counter of the ids it was given and
 * records tj_num_programs, so any skipped, repeated or misnumbered program
 * shows. The grids cover each dimension below, at and above the group size,
 * a 1-wide middle dimension, 3-D grids, grids larger than a chunk, and
 * random shapes.
 */
#include "testlib.h"

static tj_device *dev;

TJ_KERNEL(visit, TJ_PARAMS(TJ_PTR(counts, i32), TJ_PTR(sizes, i32)), TJ_CONSTS())
{
    tj_val p0 = tj_program_id(0), p1 = tj_program_id(1), p2 = tj_program_id(2);
    tj_val n0 = tj_num_programs(0), n1 = tj_num_programs(1), n2 = tj_num_programs(2);
    tj_val id = tj_add(p0, tj_mul(n0, tj_add(p1, tj_mul(n1, p2))));
    tj_atomic_add(tj_add(counts, id), 1);
    tj_val at = tj_add(sizes, tj_mul(id, 3));
    tj_store(at, n0);
    tj_store(tj_add(at, 1), n1);
    tj_store(tj_add(at, 2), n2);
}

static void test_grid(int32_t n0, int32_t n1, int32_t n2)
{
    char what[96];
    snprintf(what, sizeof what, "grid %d x %d x %d: each program once, with its ids", n0, n1, n2);
    size_t total = (size_t)n0 * n1 * n2;
    int32_t *counts = calloc(total, sizeof *counts), *sizes = malloc(total * 3 * sizeof *sizes);
    tj_buffer bc = tl_upload(dev, counts, total * sizeof *counts);
    tj_buffer bs = tl_poisoned(dev, total * 3 * sizeof *sizes);
    tj_launch_cfg cfg = tl_grid(n0, n1, n2);
    if (!tl_launch_failed(visit_launch(dev, &cfg, bc, bs), what)) {
        tl_download(dev, bc, counts, total * sizeof *counts);
        tl_download(dev, bs, sizes, total * 3 * sizeof *sizes);
        size_t bad = total;
        for (size_t i = 0; i < total && bad == total; i++)
            if (counts[i] != 1 || sizes[3 * i] != n0 || sizes[3 * i + 1] != n1 ||
                sizes[3 * i + 2] != n2)
                bad = i;
        if (bad < total)
            tap_diag("program (%zu, %zu, %zu) ran %d times, saw %d x %d x %d", bad % (size_t)n0,
                     bad / (size_t)n0 % (size_t)n1, bad / ((size_t)n0 * n1), counts[bad],
                     sizes[3 * bad], sizes[3 * bad + 1], sizes[3 * bad + 2]);
        tap_ok(bad == total, "%s", what);
    }
    tj_buffer_free(dev, bc);
    tj_buffer_free(dev, bs);
    free(counts);
    free(sizes);
}

int main(void)
{
    dev = tl_setup("test_grid_order");
    static const int32_t grids[][3] = {
        {1, 1, 1},   {7, 1, 1},    {8, 1, 1},   {1, 9, 1},    {8, 3, 1},  {9, 5, 1},
        {16, 16, 1}, {17, 13, 3},  {3, 40, 2},  {100, 1, 7},  {5, 1, 300}, {1, 1, 50},
        {2000, 1, 1}, {1000, 37, 1}, {23, 600, 1}, {8, 8, 8},
    };
    for (size_t i = 0; i < TL_COUNT(grids); i++)
        test_grid(grids[i][0], grids[i][1], grids[i][2]);
    for (int i = 0; i < 8; i++)
        test_grid((int32_t)tl_rand_range(1, 70), (int32_t)tl_rand_range(1, 70),
                  (int32_t)tl_rand_range(1, 5));
    tj_device_close(dev);
    return tap_done();
}
