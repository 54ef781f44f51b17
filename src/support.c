/* SPDX-License-Identifier: MIT */
/*
 * support.c — errors, allocation, arenas and small facts every stage shares.
 *
 * Errors are reported the way errno is, but with a message: each thread has
 * one buffer holding the text of its last failure. An internal function that
 * fails writes it with tjs_error() and returns the status; public entry
 * points return that status, and tj_last_error() reads the text back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static _Thread_local char last_error[2048];

tj_status tjs_verror(tj_status status, const char *fmt, va_list ap)
{
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    return status;
}

tj_status tjs_error(tj_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tjs_verror(status, fmt, ap);
    va_end(ap);
    return status;
}

void tjs_clear_error(void) { last_error[0] = '\0'; }

const char *tj_last_error(void) { return last_error; }

const char *tj_status_name(tj_status status)
{
    static const char *const names[] = {
        "TJ_OK", "TJ_ERR_INVALID_ARG", "TJ_ERR_SHAPE", "TJ_ERR_TYPE",
        "TJ_ERR_BUILD", "TJ_ERR_COMPILE", "TJ_ERR_LAUNCH", "TJ_ERR_DEVICE",
        "TJ_ERR_OUT_OF_MEMORY", "TJ_ERR_ASSERT", "TJ_ERR_UNSUPPORTED",
        "TJ_ERR_BOUNDS",
    };
    if ((unsigned)status < sizeof names / sizeof names[0])
        return names[status];
    return "TJ_ERR_?";
}

const char *tj_version(void) { return TJ_VERSION_STRING; }
int tj_version_number(void) { return TJ_VERSION_NUMBER; }

/* Out of memory inside the compiler leaves no sane way on; the host API's
 * buffer allocations do not come here and report TJ_ERR_OUT_OF_MEMORY. */
static void *oom(size_t n)
{
    fprintf(stderr, "tjit: out of memory allocating %zu bytes\n", n);
    abort();
}

void *tjs_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    return p ? p : oom(n);
}

void *tjs_xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    return p ? p : oom(count * size);
}

void *tjs_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    return q ? q : oom(n);
}

char *tjs_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(tjs_xmalloc(n), s, n);
}

static void buf_vprintf(tjs_buf *b, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    if (b->len + (size_t)n + 1 > b->cap) {
        b->cap = (b->len + (size_t)n + 1) * 2;
        b->data = tjs_xrealloc(b->data, b->cap);
    }
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, again);
    va_end(again);
    b->len += (size_t)n;
}

void tjs_buf_printf(tjs_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(b, fmt, ap);
    va_end(ap);
}

char *tjs_asprintf(const char *fmt, ...)
{
    tjs_buf b = {0};
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    return b.data;
}

void tjs_buf_free(tjs_buf *b)
{
    free(b->data);
    *b = (tjs_buf){0};
}

/* Arena: a list of chunks; big requests get a chunk of their own. */
typedef struct chunk {
    struct chunk *next;
    size_t used, size;
    _Alignas(16) unsigned char data[];
} chunk;

struct tjs_arena {
    chunk *head;
};

tjs_arena *tjs_arena_new(void) { return tjs_xcalloc(1, sizeof(tjs_arena)); }

void *tjs_arena_alloc(tjs_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (!a->head || a->head->used + n > a->head->size) {
        size_t size = n > 60000 ? n : 60000;
        chunk *c = tjs_xmalloc(sizeof(chunk) + size);
        c->used = 0;
        c->size = size;
        c->next = a->head;
        a->head = c;
    }
    void *p = a->head->data + a->head->used;
    a->head->used += n;
    return memset(p, 0, n);
}

char *tjs_arena_strdup(tjs_arena *a, const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(tjs_arena_alloc(a, n), s, n);
}

void tjs_arena_free(tjs_arena *a)
{
    if (!a)
        return;
    for (chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(a);
}

/* TJIT_DUMP is a comma-separated list of stages, or "all". */
int tjs_dump_enabled(const char *stage)
{
    const char *env = getenv("TJIT_DUMP");
    if (!env || !*env)
        return 0;
    size_t n = strlen(stage);
    for (const char *p = env; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if ((len == n && strncmp(p, stage, n) == 0) || (len == 3 && strncmp(p, "all", 3) == 0))
            return 1;
        p += len + (end ? 1 : 0);
    }
    return 0;
}

/* --- dtypes -------------------------------------------------------------- */

static const struct {
    const char *name;
    int bits, is_float, is_signed;
} dtype_info[TJ_DTYPE_COUNT] = {
    [TJ_I1] = {"i1", 1, 0, 0},     [TJ_I8] = {"i8", 8, 0, 1},
    [TJ_I16] = {"i16", 16, 0, 1},  [TJ_I32] = {"i32", 32, 0, 1},
    [TJ_I64] = {"i64", 64, 0, 1},  [TJ_U8] = {"u8", 8, 0, 0},
    [TJ_U16] = {"u16", 16, 0, 0},  [TJ_U32] = {"u32", 32, 0, 0},
    [TJ_U64] = {"u64", 64, 0, 0},  [TJ_F16] = {"f16", 16, 1, 1},
    [TJ_BF16] = {"bf16", 16, 1, 1}, [TJ_F32] = {"f32", 32, 1, 1},
    [TJ_F64] = {"f64", 64, 1, 1},  [TJ_F8E4M3] = {"f8e4m3", 8, 1, 1},
    [TJ_F8E5M2] = {"f8e5m2", 8, 1, 1},
};

static int dtype_ok(tj_dtype t) { return (unsigned)t < TJ_DTYPE_COUNT; }

const char *tj_dtype_name(tj_dtype t) { return dtype_ok(t) ? dtype_info[t].name : "?"; }

size_t tj_dtype_size(tj_dtype t)
{
    if (!dtype_ok(t))
        return 0;
    return t == TJ_I1 ? 1 : (size_t)dtype_info[t].bits / 8;
}

int tjs_dtype_is_float(tj_dtype t) { return dtype_ok(t) && dtype_info[t].is_float; }
int tjs_dtype_is_int(tj_dtype t) { return dtype_ok(t) && !dtype_info[t].is_float; }
int tjs_dtype_is_signed(tj_dtype t)
{
    return dtype_ok(t) && !dtype_info[t].is_float && dtype_info[t].is_signed;
}
int tjs_dtype_bits(tj_dtype t) { return dtype_ok(t) ? dtype_info[t].bits : 0; }
int tjs_dtype_is_fp8(tj_dtype t) { return t == TJ_F8E4M3 || t == TJ_F8E5M2; }

/* --- 16-bit floats: round to nearest even, NaN kept quiet ---------------- */

static uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

static float bits_f32(uint32_t u)
{
    float x;
    memcpy(&x, &u, 4);
    return x;
}

uint16_t tj_f32_to_bf16(float x)
{
    uint32_t u = f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

float tj_bf16_to_f32(uint16_t b) { return bits_f32((uint32_t)b << 16); }

uint16_t tj_f32_to_f16(float x)
{
    uint32_t u = f32_bits(x);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t absu = u & 0x7fffffffu;
    if (absu > 0x7f800000u) /* NaN */
        return (uint16_t)(sign | 0x7e00u | ((absu >> 13) & 0x3ffu));
    if (absu >= 0x477ff000u) /* rounds to infinity (or is) */
        return (uint16_t)(sign | 0x7c00u);
    if (absu < 0x38800000u) { /* subnormal or zero in f16 */
        /* Scale by 2^24 in float: the addition rounds to nearest even. */
        float f = bits_f32(absu) + 0.5f;
        return (uint16_t)(sign | (f32_bits(f) - f32_bits(0.5f)));
    }
    uint32_t mant_odd = (absu >> 13) & 1u;
    absu += 0xc8000fffu + mant_odd; /* rebias exponent (-112 << 23) and round */
    return (uint16_t)(sign | (absu >> 13));
}

float tj_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0x1f)
        return bits_f32(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) { /* zero or subnormal: mant * 2^-24 */
        float f = (float)mant * 5.9604644775390625e-08f;
        return sign ? -f : f;
    }
    return bits_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

/* --- 8-bit floats: round to nearest even, saturating (tjit.h) -------------
 * The same steps, as LLVM IR, are llvm_scalar.c's fp8 conversions: the two
 * must agree bit for bit (tests/test_fp8.c checks both against a reference
 * built from the format definition). */

typedef struct fp8_format {
    int mant_bits, bias;
    uint32_t max_code; /* the largest finite magnitude's bits */
    int has_inf;       /* e5m2: exponent all ones is inf/NaN; e4m3: only 0x7f is NaN */
} fp8_format;

static const fp8_format f8e4m3 = {3, 7, 0x7e, 0}, f8e5m2 = {2, 15, 0x7b, 1};

static uint8_t f32_to_fp8(float x, const fp8_format *f)
{
    uint32_t u = f32_bits(x), sign = (u >> 24) & 0x80u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return 0x7f;
    int m = f->mant_bits;
    uint32_t code = 0;
    if (a >= (uint32_t)(128 - f->bias) << 23) { /* normal: drop 23 - m bits, ties to even */
        int drop = 23 - m;
        uint32_t r = a + ((1u << (drop - 1)) - 1) + ((a >> drop) & 1);
        code = (r >> drop) - ((uint32_t)(127 - f->bias) << m); /* a carry moves into the exponent */
    } else if (a >> 23) { /* subnormal in fp8: count units of 2^(1 - bias - m) */
        int shift = 151 - f->bias - m - (int)(a >> 23); /* 24 - m or more */
        uint32_t sig = (a & 0x7fffffu) | 0x800000u;
        if (shift < 32) {
            uint32_t rest = sig & ((1u << shift) - 1), half = 1u << (shift - 1);
            code = (sig >> shift) + (rest > half || (rest == half && ((sig >> shift) & 1)));
        }
    } /* f32 subnormals are far below half the smallest fp8 subnormal: 0 */
    return (uint8_t)(sign | (code > f->max_code ? f->max_code : code));
}

static float fp8_to_f32(uint8_t x, const fp8_format *f)
{
    int m = f->mant_bits;
    uint32_t sign = (uint32_t)(x & 0x80u) << 24, mag = x & 0x7fu;
    uint32_t e = mag >> m, mant = mag & ((1u << m) - 1);
    if (f->has_inf ? e == (0x7fu >> m) : mag == 0x7fu)
        return bits_f32(sign | 0x7f800000u | (f->has_inf && !mant ? 0 : 0x400000u));
    if (e == 0) { /* zero or subnormal: mant * 2^(1 - bias - m), exact in f32 */
        float v = (float)mant * bits_f32((uint32_t)(128 - f->bias - m) << 23);
        return bits_f32(sign | f32_bits(v));
    }
    return bits_f32(sign | ((e + 127 - (uint32_t)f->bias) << 23) | (mant << (23 - m)));
}

uint8_t tj_f32_to_f8e4m3(float x) { return f32_to_fp8(x, &f8e4m3); }
float tj_f8e4m3_to_f32(uint8_t b) { return fp8_to_f32(b, &f8e4m3); }
uint8_t tj_f32_to_f8e5m2(float x) { return f32_to_fp8(x, &f8e5m2); }
float tj_f8e5m2_to_f32(uint8_t b) { return fp8_to_f32(b, &f8e5m2); }
