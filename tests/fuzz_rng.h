/* SPDX-License-Identifier: MIT */
/*
 * fuzz_rng.h — the deterministic generator of the random-program tests.
 *
 * test_differential.c and test_fuzz.c build kernels whose body draws a
 * random program from a constant SEED. The body runs again for every
 * device and every variant, so the draw must depend on the seed alone (not
 * on tl_rand's global state): a splitmix64 stream per program.
 */
#ifndef TJIT_TESTS_FUZZ_RNG_H
#define TJIT_TESTS_FUZZ_RNG_H

#include <stdint.h>

typedef struct gen_rng {
    uint64_t state;
} gen_rng;

static inline uint64_t gen_next(gen_rng *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline int gen_below(gen_rng *r, int n) { return (int)(gen_next(r) % (uint64_t)n); }
static inline double gen_uniform(gen_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * ((double)(gen_next(r) >> 11) * 0x1p-53);
}

#endif
