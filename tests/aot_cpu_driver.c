/* SPDX-License-Identifier: MIT */
/*
 * aot_cpu_driver.c — a program built from a kernel exported for the CPU
 * (tests/test_aot.sh): it includes aot_vadd_cpu.h and links with
 * aot_vadd_cpu.c and aot_vadd_cpu.o only, no tjit, no LLVM.
 *
 * It runs aot_vadd (out = x + scale * y, masked to n) over aligned arrays,
 * then 4 bytes past alignment with a ragged n, and one element, checking
 * every element and that those past n are left alone; and that a grid
 * dimension of 0 is EINVAL. Prints each failure; exits 1 on any.
 */
#include <errno.h>
#include <stdio.h>

#include "aot_vadd_cpu.h"

enum { N = 5000, BLOCK = 256 };

static _Alignas(64) float x[N], y[N], out[N];

static int run(int off, int n, const char *what)
{
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = (float)(3 * i % 17);
        out[i] = -1.0f;
    }
    int r = aot_vadd_cpu((unsigned)((n + BLOCK - 1) / BLOCK), 1, 1, x + off, y + off, out + off, n, 0.5f);
    int bad = r != 0;
    if (r != 0)
        printf("FAIL: %s: aot_vadd_cpu returned %d\n", what, r);
    for (int i = 0; i < N; i++) {
        float want = i >= off && i < off + n ? x[i] + 0.5f * y[i] : -1.0f;
        if (out[i] != want && bad++ < 5)
            printf("FAIL: %s: out[%d] = %g, want %g\n", what, i, out[i], want);
    }
    printf("%s: %s\n", what, bad ? "wrong" : "right");
    return bad != 0;
}

int main(void)
{
    int failed = run(0, N - 37, "aligned");
    failed |= run(1, N - 40, "4 bytes past alignment");
    failed |= run(3, 1, "one element, misaligned");
    int r = aot_vadd_cpu(0, 1, 1, x, y, out, N, 0.5f);
    if (r != EINVAL) {
        printf("FAIL: a grid of 0 programs gave %d, want EINVAL\n", r);
        failed = 1;
    }
    return failed;
}
