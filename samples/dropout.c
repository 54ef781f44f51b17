/* SPDX-License-Identifier: MIT */
/*
 * dropout — Triton's tutorial 04, "low-memory dropout": y = x * keep / (1 - p)
 * where keep is a random mask that drops each element with probability p.
 *
 * A dropout layer must apply the same mask in its backward pass. Storing
 * the mask costs as much memory traffic as x itself; the seeded version
 * stores nothing: the mask is tj_rand(seed, offset) > p, a pure function of
 * the seed and the element's index (Philox, a counter-based generator), so
 * the backward pass recomputes it from the seed alone. tj_rand gives the
 * same numbers as Triton's tl.rand, bit for bit, on every device.
 *
 * The host checks every element against plain C with its own Philox 4x32-10
 * (the same uniform from the same seed and offset, the same f32 division),
 * that a second launch with the seed gives the same output and that
 * another seed drops other elements, and prints the kept fraction (about
 * 1 - p).
 *
 *     usage: dropout [n]        (default n = 10^7 + 37)
 */
#include "common.h"
#include "dropout_kernel.h"

enum { BLOCK = 1024 };

/* Philox 4x32-10 as Triton draws it: counter (offset, 0, 0, 0), key the
 * seed's low and high words; the first word only. */
static uint32_t philox_first(uint64_t seed, uint32_t offset)
{
    uint32_t c0 = offset, c1 = 0, c2 = 0, c3 = 0, k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p2 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p2 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p2, c3 = (uint32_t)p0, c0 = n0, c2 = n2;
        k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
    }
    return c0;
}

/* tl.rand's uniform: the word as a signed integer folded onto [0, 2^31),
 * scaled in f32 (the scale a Python double rounded to f32). */
static float uniform(uint32_t word)
{
    int32_t s = (int32_t)word;
    return (float)(s < 0 ? ~s : s) * (float)4.6566127342e-10;
}

struct launch_args {
    tj_device *dev;
    tj_buffer x, out;
    int32_t n;
    float p;
    int64_t seed;
};

static void launch(void *ctx)
{
    struct launch_args *a = ctx;
    tj_launch_cfg cfg = {.grid = {cdiv(a->n, BLOCK)}};
    CHECK(seeded_dropout_launch(a->dev, &cfg, a->x, a->out, a->n, a->p, a->seed, BLOCK));
}

int main(int argc, char **argv)
{
    const int64_t n = size_arg(argc, argv, 1, 10000000 + 37);
    const float p = 0.25f;
    tj_device *dev = open_default_device();
    uint64_t sseed = sample_seed();
    printf("dropout: n = %lld, p = %g, BLOCK = %d, seed = %llu\n", (long long)n, p, BLOCK,
           (unsigned long long)sseed);

    float *x = xmalloc((size_t)n * sizeof(float));
    float *out = xmalloc((size_t)n * sizeof(float));
    float *want = xmalloc((size_t)n * sizeof(float));
    fill_random(x, (size_t)n, -1, 1);
    /* The dropout seed: the sample's, its bits spread over all 64. */
    int64_t seed = (int64_t)(sseed * 0x9E3779B97F4A7C15ull);

    struct launch_args args = {dev, device_floats(dev, x, (size_t)n), device_floats(dev, NULL, (size_t)n),
                               (int32_t)n, p, seed};
    launch(&args);
    CHECK(tj_buffer_read(dev, args.out, 0, out, (size_t)n * sizeof(float)));

    int64_t kept = 0;
    for (int64_t i = 0; i < n; i++) {
        int keep = uniform(philox_first((uint64_t)seed, (uint32_t)i)) > p;
        want[i] = keep ? x[i] / (1.0f - p) : 0.0f;
        kept += keep;
    }
    int64_t bad = first_mismatch(out, want, (size_t)n, 0, 0);
    if (bad >= 0)
        printf("out[%lld] = %g, expected %g\n", (long long)bad, out[bad], want[bad]);

    /* The same seed again: the same output (the backward pass's mask). */
    launch(&args);
    CHECK(tj_buffer_read(dev, args.out, 0, want, (size_t)n * sizeof(float)));
    int same = !memcmp(out, want, (size_t)n * sizeof(float));
    /* Another seed: another mask. */
    args.seed = seed ^ 0x5DEECE66Dll;
    launch(&args);
    CHECK(tj_buffer_read(dev, args.out, 0, want, (size_t)n * sizeof(float)));
    int64_t differ = 0;
    for (int64_t i = 0; i < n; i++)
        differ += (out[i] == 0) != (want[i] == 0);
    int other = n < 64 || differ > 0;
    printf("kept %.4f of the elements (expected about %.2f); the same seed %s, another seed "
           "changes %lld masks\n", (double)kept / (double)n, 1.0 - p, same ? "repeats" : "DIFFERS",
           (long long)differ);

    args.seed = seed;
    double seconds = median_seconds(dev, 10, launch, &args);
    double gbps = 2.0 * (double)n * sizeof(float) / seconds / 1e9;
    int fail = bad >= 0 || !same || !other;
    printf("%s  dropout  %.2f GB/s  (%.3f ms, median of 10 runs)\n", fail ? "FAIL" : "PASS", gbps,
           seconds * 1e3);

    tj_device_close(dev);
    free(x);
    free(out);
    free(want);
    return fail;
}
