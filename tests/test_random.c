/* SPDX-License-Identifier: MIT */
/*
 * test_random.c — tj_randint, tj_randint4x, tj_rand, tj_randn and
 * tj_umulhi (and tj_rand4x, tj_randn4x) are Triton's, bit for bit.
 *
 * The reference is a plain C Philox (4x32 and 4x64, any number of rounds),
 * first checked on Random123's known-answer vectors; Triton's functions
 * are spelled on top of it (counter (offset, 0, 0, 0), key = the seed's
 * halves; the uniform fold and scale; Box-Muller's first output). Kernels
 * on the test device (TJIT_TEST_DEVICE) then draw for random seeds and
 * offsets (fresh each run; the seed is printed) and every element must
 * match: the integers and the uniforms exactly, the normals exactly on the
 * CPU (whose log, sqrt and cos are the C library's, as the reference's)
 * and within a few ulp on a GPU (tjit's own log and cos); an i32 seed, a
 * scalar offset, a C number as the seed and a 2-D tile of offsets are
 * handled as Triton handles them. umulhi of each 32- and 64-bit dtype is
 * checked against the C product's high half. Bad operands are errors
 * naming the file:line, the kernel and the op; the kernels' PTX assembles
 * with ptxas for sm_80, sm_90 and sm_90a where make check sets TJIT_PTXAS.
 */
#include "testlib.h"
#include "jit/runtime/ptxas.h"

enum { N = 512 };

/* ---- the reference --------------------------------------------------------- */

static uint32_t mulhi32(uint32_t a, uint32_t b) { return (uint32_t)(((uint64_t)a * b) >> 32); }

__extension__ typedef unsigned __int128 u128;
static uint64_t mulhi64(uint64_t a, uint64_t b) { return (uint64_t)(((u128)a * b) >> 64); }

static void philox32(const uint32_t ctr[4], const uint32_t key[2], int rounds, uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int r = 0; r < rounds; r++) {
        uint32_t n0 = mulhi32(0xCD9E8D57u, c2) ^ c1 ^ k0, n2 = mulhi32(0xD2511F53u, c0) ^ c3 ^ k1;
        c1 = 0xCD9E8D57u * c2, c3 = 0xD2511F53u * c0, c0 = n0, c2 = n2;
        k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

static void philox64(const uint64_t ctr[4], const uint64_t key[2], int rounds, uint64_t out[4])
{
    uint64_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int r = 0; r < rounds; r++) {
        uint64_t n0 = mulhi64(0xCA5A826395121157u, c2) ^ c1 ^ k0;
        uint64_t n2 = mulhi64(0xD2E7470EE14C6C93u, c0) ^ c3 ^ k1;
        c1 = 0xCA5A826395121157u * c2, c3 = 0xD2E7470EE14C6C93u * c0, c0 = n0, c2 = n2;
        k0 += 0x9E3779B97F4A7C15u, k1 += 0xBB67AE8584CAA73Bu;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

/* Triton's randint4x: 32-bit offsets. */
static void ref4x32(uint64_t seed, uint32_t offset, int rounds, uint32_t out[4])
{
    philox32((const uint32_t[4]){offset, 0, 0, 0}, (const uint32_t[2]){(uint32_t)seed, (uint32_t)(seed >> 32)},
             rounds, out);
}

static void ref4x64(uint64_t seed, uint64_t offset, int rounds, uint64_t out[4])
{
    philox64((const uint64_t[4]){offset, 0, 0, 0}, (const uint64_t[2]){seed, 0}, rounds, out);
}

static float uniform32(uint32_t x)
{
    int32_t s = (int32_t)x;
    return (float)(s < 0 ? ~s : s) * (float)4.6566127342e-10; /* Python's double, then f32 */
}

static float uniform64(uint64_t x)
{
    int64_t s = (int64_t)x;
    return (float)(s < 0 ? ~s : s) * (float)1.0842020432385337e-19;
}

/* Box-Muller as Triton's pair_uniform_to_normal: r cos(th), r sin(th). */
static float normal(float u1, float u2, int second)
{
    u1 = fmaxf((float)1.0e-7, u1);
    float th = (float)6.283185307179586 * u2;
    float r = sqrtf(-2.0f * logf(u1));
    return second ? r * sinf(th) : r * cosf(th);
}

static void known_answers(void)
{
    static const struct { uint32_t ctr[4], key[2], out[4]; } kat32[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    static const struct { uint64_t ctr[4], key[2], out[4]; } kat64[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x16554d9eca36314c, 0xdb20fe9d672d0fdc, 0xd7e772cee186176b, 0x7e68b68aec7ba23b}},
        {{~0ull, ~0ull, ~0ull, ~0ull}, {~0ull, ~0ull},
         {0x87b092c3013fe90b, 0x438c3c67be8d0224, 0x9cc7d7c69cd777b6, 0xa09caebf594f0ba0}},
    };
    for (size_t i = 0; i < TL_COUNT(kat32); i++) {
        uint32_t out[4];
        philox32(kat32[i].ctr, kat32[i].key, 10, out);
        tap_ok(!memcmp(out, kat32[i].out, sizeof out), "reference philox4x32-10, known answer %zu: %08x %08x %08x %08x",
               i + 1, out[0], out[1], out[2], out[3]);
    }
    for (size_t i = 0; i < TL_COUNT(kat64); i++) {
        uint64_t out[4];
        philox64(kat64[i].ctr, kat64[i].key, 10, out);
        tap_ok(!memcmp(out, kat64[i].out, sizeof out), "reference philox4x64-10, known answer %zu: %016llx ...",
               i + 1, (unsigned long long)out[0]);
    }
    tap_ok(uniform32(0x7fffffffu) < 1.0f && uniform32(0x80000000u) < 1.0f && uniform32(0) == 0 &&
           uniform64(~0ull >> 1) < 1.0f && uniform64(1ull << 63) < 1.0f,
           "the reference's uniforms stay below 1 at the extreme integers");
}

/* ---- the kernels --------------------------------------------------------------- */

/* Everything from one (seed, offsets): randint4x's four, randint, rand and
 * randn, with .n_rounds = ROUNDS (0: the default). */
#define RANDOM_KERNEL(NAME, ODT, RDT)                                                              \
    TJ_KERNEL(NAME, TJ_PARAMS(TJ_PTR(offsets, ODT), TJ_SCALAR(seed, i64), TJ_PTR(o0, RDT),          \
                              TJ_PTR(o1, RDT), TJ_PTR(o2, RDT), TJ_PTR(o3, RDT), TJ_PTR(ri, RDT),  \
                              TJ_PTR(u, f32), TJ_PTR(n, f32)),                                     \
              TJ_CONSTS(ROUNDS))                                                                   \
    {                                                                                              \
        tj_val i = tj_arange(0, N), offs = tj_load(tj_add(offsets, i)), r[4];                      \
        tj_randint4x(seed, offs, &r[0], &r[1], &r[2], &r[3], .n_rounds = (int)ROUNDS);             \
        tj_store(tj_add(o0, i), r[0]);                                                             \
        tj_store(tj_add(o1, i), r[1]);                                                             \
        tj_store(tj_add(o2, i), r[2]);                                                             \
        tj_store(tj_add(o3, i), r[3]);                                                             \
        tj_store(tj_add(ri, i), tj_randint(seed, offs, .n_rounds = (int)ROUNDS));                  \
        tj_store(tj_add(u, i), tj_rand(seed, offs, .n_rounds = (int)ROUNDS));                      \
        tj_store(tj_add(n, i), tj_randn(seed, offs, .n_rounds = (int)ROUNDS));                     \
    }
RANDOM_KERNEL(random32, i32, u32)
RANDOM_KERNEL(random64, i64, u64)

/* rand4x's four uniforms and randn4x's four normals, rows 0-3 and 4-7 of f. */
#define RANDOM4X_KERNEL(NAME, ODT)                                                                 \
    TJ_KERNEL(NAME, TJ_PARAMS(TJ_PTR(offsets, ODT), TJ_SCALAR(seed, i64), TJ_PTR(f, f32)), TJ_CONSTS()) \
    {                                                                                              \
        tj_val i = tj_arange(0, N), offs = tj_load(tj_add(offsets, i)), u[4], n[4];                \
        tj_rand4x(seed, offs, &u[0], &u[1], &u[2], &u[3]);                                         \
        tj_randn4x(seed, offs, &n[0], &n[1], &n[2], &n[3]);                                        \
        for (int k = 0; k < 4; k++) {                                                              \
            tj_store(tj_add(f, tj_add(i, k * N)), u[k]);                                           \
            tj_store(tj_add(f, tj_add(i, (k + 4) * N)), n[k]);                                     \
        }                                                                                          \
    }
RANDOM4X_KERNEL(random4x_32, u32)
RANDOM4X_KERNEL(random4x_64, i64)

/* A 32-bit seed (sign-extended, as Triton's seed.to(uint64)), u32 offsets
 * made from a scalar and an arange, randint with the default rounds; a
 * scalar offset (a scalar result); a C number as the seed. */
#define LIT_SEED 0xDEADBEEFCAFEF00Dull
TJ_KERNEL(random_i32_seed, TJ_PARAMS(TJ_SCALAR(seed, i32), TJ_SCALAR(base, u32), TJ_PTR(out, u32),
                                     TJ_PTR(scalar, u32), TJ_PTR(lit, u32), TJ_PTR(two_d, f32)),
          TJ_CONSTS())
{
    tj_val i = tj_arange(0, N), idx = TL_TILE_IDX(16, 32);
    tj_store(tj_add(out, i), tj_randint(seed, tj_add(base, tj_cast(i, TJ_U32))));
    tj_store(scalar, tj_randint(seed, base));
    tj_store(tj_add(lit, i), tj_randint(LIT_SEED, i));
    tj_store(tj_add(two_d, idx), tj_rand(seed, idx));
}

/* umulhi of two tiles, and of a tile and a literal. */
#define UMULHI_KERNEL(NAME, DT)                                                                    \
    TJ_KERNEL(NAME, TJ_PARAMS(TJ_PTR(a, DT), TJ_PTR(b, DT), TJ_PTR(o, DT), TJ_PTR(p, DT)),        \
              TJ_CONSTS())                                                                         \
    {                                                                                              \
        tj_val i = tj_arange(0, N), x = tj_load(tj_add(a, i));                                     \
        tj_store(tj_add(o, i), tj_umulhi(x, tj_load(tj_add(b, i))));                               \
        tj_store(tj_add(p, i), tj_umulhi(x, 1234567));                                             \
    }
UMULHI_KERNEL(umulhi_i32, i32)
UMULHI_KERNEL(umulhi_u32, u32)
UMULHI_KERNEL(umulhi_i64, i64)
UMULHI_KERNEL(umulhi_u64, u64)

/* ---- runs ------------------------------------------------------------------------ */

static tj_device *dev;
static int on_gpu;

static tj_buffer buf(size_t bytes, const void *data)
{
    return data ? tl_upload(dev, data, bytes) : tl_poisoned(dev, bytes);
}

/* The ulps between got and want (f32); 0 for equal values. */
static double ulps(float got, float want)
{
    if (got == want)
        return 0;
    if (!isfinite(got) || !isfinite(want))
        return INFINITY;
    float a = fabsf(want);
    return fabs((double)got - want) / (double)(nextafterf(a, INFINITY) - a);
}

static void check_random(int wide, int rounds)
{
    const tj_kernel *k = wide ? random64 : random32;
    size_t w = wide ? 8 : 4;
    uint64_t seed = tl_rand_u64();
    uint64_t offs[N];
    for (int i = 0; i < N; i++)
        offs[i] = tl_rand_u64();
    uint32_t offs32[N];
    for (int i = 0; i < N; i++)
        offs32[i] = (uint32_t)(i < 4 ? (uint32_t[]){0, 1, 0x7fffffff, 0xffffffff}[i] : offs[i]);
    tj_buffer bo = buf(N * w, wide ? (void *)offs : (void *)offs32);
    tj_buffer b[5], bu = buf(N * 4, NULL), bn = buf(N * 4, NULL);
    for (int j = 0; j < 5; j++)
        b[j] = buf(N * w, NULL);
    tj_arg args[] = {TJ_ARG_BUF(bo), TJ_ARG_I64((int64_t)seed), TJ_ARG_BUF(b[0]), TJ_ARG_BUF(b[1]),
                     TJ_ARG_BUF(b[2]), TJ_ARG_BUF(b[3]), TJ_ARG_BUF(b[4]), TJ_ARG_BUF(bu), TJ_ARG_BUF(bn)};
    tj_launch_cfg cfg = {.grid = {1}};
    int64_t consts[] = {rounds};
    tj_status st = tj_launch(dev, k, &cfg, args, 9, consts, 1);
    if (st != TJ_OK)
        tap_diag("%s: %s", k->name, tj_last_error());
    static uint64_t got[5][N];
    float gu[N], gn[N];
    for (int j = 0; j < 5 && st == TJ_OK; j++)
        tl_download(dev, b[j], got[j], N * w);
    if (st == TJ_OK)
        tl_download(dev, bu, gu, sizeof gu), tl_download(dev, bn, gn, sizeof gn);
    int bad_int = 0, bad_u = 0, bad_n = 0, out_of_range = 0, exact_n = 0;
    double worst_n = 0;
    int eff = rounds ? rounds : 10;
    for (int i = 0; st == TJ_OK && i < N; i++) {
        uint64_t want[4], g[5];
        if (wide) {
            ref4x64(seed, offs[i], eff, want);
            for (int j = 0; j < 5; j++)
                g[j] = got[j][i];
        } else {
            uint32_t w32[4];
            ref4x32(seed, offs32[i], eff, w32);
            for (int j = 0; j < 4; j++)
                want[j] = w32[j];
            for (int j = 0; j < 5; j++)
                g[j] = ((const uint32_t *)got[j])[i];
        }
        for (int j = 0; j < 5; j++)
            if (g[j] != want[j < 4 ? j : 0] && bad_int++ < 4)
                tap_diag("offset %llx: output %d is %llx, expected %llx",
                         (unsigned long long)(wide ? offs[i] : offs32[i]), j, (unsigned long long)g[j],
                         (unsigned long long)want[j < 4 ? j : 0]);
        float u1 = wide ? uniform64(want[0]) : uniform32((uint32_t)want[0]);
        float u2 = wide ? uniform64(want[1]) : uniform32((uint32_t)want[1]);
        if (memcmp(&gu[i], &u1, 4) && bad_u++ < 4)
            tap_diag("rand at offset %llx: %.9g, expected %.9g", (unsigned long long)offs[i], gu[i], u1);
        out_of_range += !(gu[i] >= 0 && gu[i] < 1);
        float n = normal(u1, u2, 0);
        double e = ulps(gn[i], n);
        exact_n += e == 0;
        worst_n = e > worst_n ? e : worst_n;
        if (e > (on_gpu ? 8 : 0) && bad_n++ < 4)
            tap_diag("randn at offset %llx: %.9g, expected %.9g (%.1f ulp)", (unsigned long long)offs[i], gn[i], n, e);
    }
    const char *what = wide ? "i64 offsets (Philox 4x64)" : "i32 offsets";
    char rs[32];
    snprintf(rs, sizeof rs, rounds ? "%d rounds" : "default rounds", rounds);
    tap_ok(st == TJ_OK && !bad_int, "randint4x and randint, %s, %s, seed %llx: every element the reference's",
           what, rs, (unsigned long long)seed);
    tap_ok(st == TJ_OK && !bad_u && !out_of_range, "rand, %s, %s: bit for bit, in [0, 1)", what, rs);
    tap_diag("randn, %s: %d of %d exact, worst %.1f ulp", what, exact_n, N, worst_n);
    tap_ok(st == TJ_OK && !bad_n, "randn, %s, %s: %s", what, rs, on_gpu ? "within 8 ulp" : "bit for bit");
    tj_buffer_free(dev, bo), tj_buffer_free(dev, bu), tj_buffer_free(dev, bn);
    for (int j = 0; j < 5; j++)
        tj_buffer_free(dev, b[j]);
}

static void check_random4x(int wide)
{
    uint64_t seed = tl_rand_u64(), offs[N];
    uint32_t offs32[N];
    for (int i = 0; i < N; i++)
        offs[i] = tl_rand_u64(), offs32[i] = (uint32_t)offs[i];
    tj_buffer bo = buf(N * (wide ? 8 : 4), wide ? (void *)offs : (void *)offs32), bf = buf(8 * N * 4, NULL);
    tj_arg args[] = {TJ_ARG_BUF(bo), TJ_ARG_I64((int64_t)seed), TJ_ARG_BUF(bf)};
    tj_launch_cfg cfg = {.grid = {1}};
    const tj_kernel *k = wide ? random4x_64 : random4x_32;
    tj_status st = tj_launch(dev, k, &cfg, args, 3, NULL, 0);
    if (st != TJ_OK)
        tap_diag("%s: %s", k->name, tj_last_error());
    static float got[8][N];
    if (st == TJ_OK)
        tl_download(dev, bf, got, sizeof got);
    int bad_u = 0, bad_n = 0;
    double worst = 0;
    for (int i = 0; st == TJ_OK && i < N; i++) {
        float u[4];
        if (wide) {
            uint64_t w[4];
            ref4x64(seed, offs[i], 10, w);
            for (int j = 0; j < 4; j++)
                u[j] = uniform64(w[j]);
        } else {
            uint32_t w[4];
            ref4x32(seed, offs32[i], 10, w);
            for (int j = 0; j < 4; j++)
                u[j] = uniform32(w[j]);
        }
        for (int j = 0; j < 4; j++) {
            float n = normal(u[j & 2], u[(j & 2) + 1], j & 1);
            double e = ulps(got[4 + j][i], n);
            worst = e > worst ? e : worst;
            if (memcmp(&got[j][i], &u[j], 4) && bad_u++ < 4)
                tap_diag("rand4x[%d] at offset %llx: %.9g, expected %.9g", j, (unsigned long long)offs[i], got[j][i], u[j]);
            if (e > (on_gpu ? 8 : 0) && bad_n++ < 4)
                tap_diag("randn4x[%d] at offset %llx: %.9g, expected %.9g", j, (unsigned long long)offs[i], got[4 + j][i], n);
        }
    }
    const char *what = wide ? "i64 offsets" : "u32 offsets";
    tap_ok(st == TJ_OK && !bad_u, "rand4x, %s: the four uniforms bit for bit", what);
    tap_ok(st == TJ_OK && !bad_n, "randn4x, %s: r cos and r sin of both pairs %s (worst %.1f ulp)", what,
           on_gpu ? "within 8 ulp" : "bit for bit", worst);
    tj_buffer_free(dev, bo), tj_buffer_free(dev, bf);
}

static void check_i32_seed(void)
{
    int32_t seed = (int32_t)tl_rand_u64() | INT32_MIN; /* negative: its high word is all ones */
    uint32_t base = (uint32_t)tl_rand_u64();
    tj_buffer bo = buf(N * 4, NULL), bs = buf(4, NULL), bl = buf(N * 4, NULL), b2 = buf(N * 4, NULL);
    tj_launch_cfg cfg = {.grid = {1}};
    tj_status st = random_i32_seed_launch(dev, &cfg, seed, base, bo, bs, bl, b2);
    if (st != TJ_OK)
        tap_diag("%s", tj_last_error());
    uint32_t got[N], lit[N], one = 0, want[4];
    float two_d[N];
    int bad = 0, bad_lit = 0, bad_2d = 0;
    if (st == TJ_OK) {
        tl_download(dev, bo, got, sizeof got), tl_download(dev, bs, &one, 4);
        tl_download(dev, bl, lit, sizeof lit), tl_download(dev, b2, two_d, sizeof two_d);
    }
    for (int i = 0; st == TJ_OK && i < N; i++) {
        ref4x32((uint64_t)(int64_t)seed, base + (uint32_t)i, 10, want);
        bad += got[i] != want[0];
        ref4x32(LIT_SEED, (uint32_t)i, 10, want);
        bad_lit += lit[i] != want[0];
        ref4x32((uint64_t)(int64_t)seed, (uint32_t)i, 10, want);
        float u = uniform32(want[0]);
        bad_2d += memcmp(&two_d[i], &u, 4) != 0;
    }
    tap_ok(st == TJ_OK && !bad, "randint of an i32 seed (%d, sign-extended) and u32 offsets", (int)seed);
    ref4x32((uint64_t)(int64_t)seed, base, 10, want);
    tap_ok(st == TJ_OK && one == want[0], "randint of a scalar offset is a scalar: %08x", one);
    tap_ok(st == TJ_OK && !bad_lit, "randint of a C number as the seed (%llx)", LIT_SEED);
    tap_ok(st == TJ_OK && !bad_2d, "rand of a [16, 32] tile of offsets");
    tj_buffer_free(dev, bo), tj_buffer_free(dev, bs), tj_buffer_free(dev, bl), tj_buffer_free(dev, b2);
}

static void check_umulhi(const tj_kernel *k, tj_dtype dt)
{
    size_t w = tj_dtype_size(dt);
    uint64_t a[N], b[N], got[N], lit[N];
    for (int i = 0; i < N; i++)
        a[i] = tl_rand_u64(), b[i] = i < 8 ? ~0ull << (i * 8) : tl_rand_u64();
    uint32_t a32[N], b32[N];
    for (int i = 0; i < N; i++)
        a32[i] = (uint32_t)a[i], b32[i] = (uint32_t)b[i];
    tj_buffer ba = buf(N * w, w == 4 ? (void *)a32 : (void *)a), bb = buf(N * w, w == 4 ? (void *)b32 : (void *)b);
    tj_buffer bo = buf(N * w, NULL), bp = buf(N * w, NULL);
    tj_arg args[] = {TJ_ARG_BUF(ba), TJ_ARG_BUF(bb), TJ_ARG_BUF(bo), TJ_ARG_BUF(bp)};
    tj_launch_cfg cfg = {.grid = {1}};
    tj_status st = tj_launch(dev, k, &cfg, args, 4, NULL, 0);
    if (st != TJ_OK)
        tap_diag("%s: %s", k->name, tj_last_error());
    int bad = 0;
    if (st == TJ_OK)
        tl_download(dev, bo, got, N * w), tl_download(dev, bp, lit, N * w);
    for (int i = 0; st == TJ_OK && i < N; i++) {
        uint64_t g = w == 4 ? ((uint32_t *)got)[i] : got[i], gl = w == 4 ? ((uint32_t *)lit)[i] : lit[i];
        uint64_t want = w == 4 ? mulhi32(a32[i], b32[i]) : mulhi64(a[i], b[i]);
        uint64_t want_l = w == 4 ? mulhi32(a32[i], 1234567) : mulhi64(a[i], 1234567);
        if ((g != want || gl != want_l) && bad++ < 4)
            tap_diag("umulhi(%llx, %llx) = %llx, expected %llx", (unsigned long long)a[i],
                     (unsigned long long)b[i], (unsigned long long)g, (unsigned long long)want);
    }
    tap_ok(st == TJ_OK && !bad, "umulhi of %s: the high half of the unsigned product", tj_dtype_name(dt));
    tj_buffer_free(dev, ba), tj_buffer_free(dev, bb), tj_buffer_free(dev, bo), tj_buffer_free(dev, bp);
}

/* ---- errors -------------------------------------------------------------------- */

static int l_float_seed, l_float_offset, l_i16_offset, l_ptr_offset, l_rounds, l_umulhi_f32, l_umulhi_i16;

TJ_KERNEL(bad_float_seed, TJ_PARAMS(TJ_PTR(out, f32), TJ_SCALAR(s, f32)), TJ_CONSTS())
{
    l_float_seed = __LINE__ + 1;
    tj_store(tj_add(out, tj_arange(0, 16)), tj_rand(s, tj_arange(0, 16)));
}
TJ_KERNEL(bad_float_offset, TJ_PARAMS(TJ_PTR(out, f32), TJ_SCALAR(s, i64)), TJ_CONSTS())
{
    tj_val offs = tj_cast(tj_arange(0, 16), TJ_F32);
    l_float_offset = __LINE__ + 1;
    tj_store(tj_add(out, tj_arange(0, 16)), tj_randn(s, offs));
}
TJ_KERNEL(bad_i16_offset, TJ_PARAMS(TJ_PTR(out, u32), TJ_SCALAR(s, i64)), TJ_CONSTS())
{
    tj_val offs = tj_cast(tj_arange(0, 16), TJ_I16), r[4];
    l_i16_offset = __LINE__ + 1;
    tj_randint4x(s, offs, &r[0], &r[1], &r[2], &r[3]);
    tj_store(tj_add(out, tj_arange(0, 16)), r[0]);
}
TJ_KERNEL(bad_ptr_offset, TJ_PARAMS(TJ_PTR(out, u32), TJ_SCALAR(s, i64)), TJ_CONSTS())
{
    l_ptr_offset = __LINE__ + 1;
    tj_store(tj_add(out, tj_arange(0, 16)), tj_randint(s, tj_add(out, tj_arange(0, 16))));
}
TJ_KERNEL(bad_rounds, TJ_PARAMS(TJ_PTR(out, u32), TJ_SCALAR(s, i64)), TJ_CONSTS())
{
    l_rounds = __LINE__ + 1;
    tj_store(tj_add(out, tj_arange(0, 16)), tj_randint(s, tj_arange(0, 16), .n_rounds = -3));
}
TJ_KERNEL(bad_umulhi_f32, TJ_PARAMS(TJ_PTR(out, f32)), TJ_CONSTS())
{
    tj_val x = tj_load(tj_add(out, tj_arange(0, 16)));
    l_umulhi_f32 = __LINE__ + 1;
    tj_store(tj_add(out, tj_arange(0, 16)), tj_umulhi(x, x));
}
TJ_KERNEL(bad_umulhi_i16, TJ_PARAMS(TJ_PTR(out, i16)), TJ_CONSTS())
{
    tj_val x = tj_load(tj_add(out, tj_arange(0, 16)));
    l_umulhi_i16 = __LINE__ + 1;
    tj_store(tj_add(out, tj_arange(0, 16)), tj_umulhi(x, x));
}

static void expect_error(const tj_kernel *k, tj_arg extra, int nargs, tj_status want, const int *line,
                         const char *op, const char *word)
{
    tj_buffer scratch = buf(64, NULL);
    tj_arg args[] = {TJ_ARG_BUF(scratch), extra};
    tj_launch_cfg cfg = {.grid = {1}};
    tj_status st = tj_launch(dev, k, &cfg, args, nargs, NULL, 0);
    int ok = st == want;
    if (!ok)
        tap_diag("  got %s, expected %s: %s", tj_status_name(st), tj_status_name(want), tj_last_error());
    else
        ok = tl_error_mentions(tl_where(__FILE__, *line), k->name, op, word, NULL);
    tap_diag("  %s", tj_last_error());
    tap_ok(ok, "%s -> %s at %s naming '%s'", k->name, tj_status_name(want), tl_where(__FILE__, *line), op);
    tj_buffer_free(dev, scratch);
}

static void errors(void)
{
    expect_error(bad_float_seed, TJ_ARG_F32(1.5), 2, TJ_ERR_TYPE, &l_float_seed, "rand", "seed");
    expect_error(bad_float_offset, TJ_ARG_I64(7), 2, TJ_ERR_TYPE, &l_float_offset, "randn", "offset");
    expect_error(bad_i16_offset, TJ_ARG_I64(7), 2, TJ_ERR_TYPE, &l_i16_offset, "randint4x", "i16");
    expect_error(bad_ptr_offset, TJ_ARG_I64(7), 2, TJ_ERR_TYPE, &l_ptr_offset, "randint", "offset");
    expect_error(bad_rounds, TJ_ARG_I64(7), 2, TJ_ERR_BUILD, &l_rounds, "randint", "n_rounds");
    expect_error(bad_umulhi_f32, TJ_ARG_I32(0), 1, TJ_ERR_TYPE, &l_umulhi_f32, "umulhi", "f32");
    expect_error(bad_umulhi_i16, TJ_ARG_I32(0), 1, TJ_ERR_TYPE, &l_umulhi_i16, "umulhi", "i16");
}

/* ---- PTX ------------------------------------------------------------------------- */

static void ptx(void)
{
    static const char *const targets[] = {"sm_80", "sm_90", "sm_90a"};
    const tj_kernel *const ks[] = {random32, random64, random4x_32, random4x_64, random_i32_seed, umulhi_i32,
                                    umulhi_u64};
    const char *path = tjj_ptxas_path();
    for (size_t t = 0; t < TL_COUNT(targets); t++) {
        int sm = 0, arch_specific = 0, ok = tjj_ptx_target("test", targets[t], &sm, &arch_specific) == TJ_OK;
        for (size_t i = 0; ok && i < TL_COUNT(ks); i++) {
            int64_t consts[] = {0};
            char *text = NULL;
            tj_status st = tj_kernel_ptx(ks[i], consts, ks[i]->nconsts, targets[t], 4, &text);
            if (st == TJ_OK && path)
                st = tjj_ptxas_check(path, text, sm, arch_specific, ks[i]->name);
            if (st != TJ_OK) {
                tap_diag("%s for %s: %s", ks[i]->name, targets[t], tj_last_error());
                ok = 0;
            }
            free(text);
        }
        tap_ok(ok, "the kernels' PTX for %s%s", targets[t], path ? ", assembled by ptxas" : " (no ptxas)");
    }
}

int main(void)
{
    dev = tl_setup("test_random");
    on_gpu = tj_device_get_kind(dev) == TJ_DEVICE_GPU;
    tap_plan(6 + 3 * 6 + 4 + 4 + 4 + 7 + 3);
    known_answers();
    for (int wide = 0; wide < 2; wide++)
        for (int rounds = 0; rounds <= 7; rounds += 7)
            check_random(wide, rounds);
    check_random(0, 1);
    check_random(1, 13);
    check_random4x(0);
    check_random4x(1);
    check_i32_seed();
    check_umulhi(umulhi_i32, TJ_I32);
    check_umulhi(umulhi_u32, TJ_U32);
    check_umulhi(umulhi_i64, TJ_I64);
    check_umulhi(umulhi_u64, TJ_U64);
    errors();
    ptx();
    tj_device_close(dev);
    return tap_done();
}
