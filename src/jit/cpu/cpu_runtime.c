/* SPDX-License-Identifier: MIT */
/*
 * cpu_runtime.c — the C functions that compiled CPU kernels call.
 *
 * Kernels report into a per-launch tjj_cpu_rt: device prints go to stdout
 * under the launch's lock (lines of one print never interleave with another
 * program's), and the first failed device assert of the launch is recorded
 * as a message in tjit's error format; the launcher turns it into
 * TJ_ERR_ASSERT. Nothing here ever aborts the process.
 *
 * LLVM may also lower 16-bit float conversions to calls of compiler-rt
 * helpers (__extendhfsf2, __truncsfhf2, ...) when the host has no
 * instruction for them. tjit does not rely on compiler-rt or libgcc being
 * loaded: it defines those helpers here under private names, and the ORC
 * set-up (cpu_orc.c) binds the helper names to them as absolute symbols,
 * from the table tjj_cpu_runtime_symbols. On x86-64 LLVM passes half and
 * bfloat values in SSE registers, as C passes _Float16, so the helpers use
 * _Float16 in their signatures where the compiler has it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cpu_backend.h"

void tjj_rt_assert_fail(tjj_cpu_rt *rt, const char *msg, const char *file, int line,
                        int32_t pid0, int32_t pid1, int32_t pid2)
{
    pthread_mutex_lock(&rt->lock);
    if (!rt->assert_failed) {
        rt->assert_failed = 1;
        snprintf(rt->message, sizeof rt->message,
                 "%s:%d: error: in kernel '%s', op 'assert': device assertion failed "
                 "in program (%" PRId32 ", %" PRId32 ", %" PRId32 "): %s",
                 file ? file : "?", line, rt->kernel_name ? rt->kernel_name : "?",
                 pid0, pid1, pid2, msg ? msg : "");
    }
    pthread_mutex_unlock(&rt->lock);
}

float tjj_rt_f16_to_f32(uint16_t h) { return tj_f16_to_f32(h); }
uint16_t tjj_rt_f32_to_f16(float f) { return tj_f32_to_f16(f); }
float tjj_rt_bf16_to_f32(uint16_t h) { return tj_bf16_to_f32(h); }
uint16_t tjj_rt_f32_to_bf16(float f) { return tj_f32_to_bf16(f); }

static void print_element(tj_dtype dtype, const unsigned char *p)
{
    switch (dtype) {
    case TJ_I1: printf("%s", *p ? "true" : "false"); break;
    case TJ_I8: { int8_t v; memcpy(&v, p, 1); printf("%" PRId8, v); break; }
    case TJ_I16: { int16_t v; memcpy(&v, p, 2); printf("%" PRId16, v); break; }
    case TJ_I32: { int32_t v; memcpy(&v, p, 4); printf("%" PRId32, v); break; }
    case TJ_I64: { int64_t v; memcpy(&v, p, 8); printf("%" PRId64, v); break; }
    case TJ_U8: printf("%u", (unsigned)*p); break;
    case TJ_U16: { uint16_t v; memcpy(&v, p, 2); printf("%" PRIu16, v); break; }
    case TJ_U32: { uint32_t v; memcpy(&v, p, 4); printf("%" PRIu32, v); break; }
    case TJ_U64: { uint64_t v; memcpy(&v, p, 8); printf("%" PRIu64, v); break; }
    case TJ_F16: { uint16_t v; memcpy(&v, p, 2); printf("%g", (double)tj_f16_to_f32(v)); break; }
    case TJ_BF16: { uint16_t v; memcpy(&v, p, 2); printf("%g", (double)tj_bf16_to_f32(v)); break; }
    case TJ_F32: { float v; memcpy(&v, p, 4); printf("%g", (double)v); break; }
    case TJ_F64: { double v; memcpy(&v, p, 8); printf("%g", v); break; }
    case TJ_F8E4M3: printf("%g", (double)tj_f8e4m3_to_f32(*p)); break;
    case TJ_F8E5M2: printf("%g", (double)tj_f8e5m2_to_f32(*p)); break;
    default: printf("?"); break;
    }
}

void tjj_rt_print(tjj_cpu_rt *rt, const char *prefix, int32_t pid0, int32_t pid1,
                  int32_t pid2, int32_t dtype, const void *data, int32_t rank, int32_t d0,
                  int32_t d1, int32_t d2, int32_t d3)
{
    const int32_t dims[TJ_MAX_RANK] = {d0, d1, d2, d3};
    size_t size = tj_dtype_size((tj_dtype)dtype);
    int64_t numel = 1;
    for (int i = 0; i < rank && i < TJ_MAX_RANK; i++)
        numel *= dims[i];
    pthread_mutex_lock(&rt->lock);
    flockfile(stdout);
    for (int64_t e = 0; e < numel; e++) {
        printf("%s (%" PRId32 ", %" PRId32 ", %" PRId32 ")", prefix ? prefix : "", pid0,
               pid1, pid2);
        if (rank > 0) {
            int64_t idx[TJ_MAX_RANK], rest = e;
            for (int i = rank - 1; i >= 0; i--) {
                idx[i] = rest % dims[i];
                rest /= dims[i];
            }
            printf(" [");
            for (int i = 0; i < rank; i++)
                printf("%s%" PRId64, i ? "," : "", idx[i]);
            printf("]");
        }
        printf(": ");
        print_element((tj_dtype)dtype, (const unsigned char *)data + (size_t)e * size);
        printf("\n");
    }
    fflush(stdout);
    funlockfile(stdout);
    pthread_mutex_unlock(&rt->lock);
}

/* --- helpers LLVM may call for 16-bit floats ----------------------------- */

#if defined(__FLT16_MAX__)
typedef _Float16 half_reg; /* passed in an SSE register, as LLVM expects */
#else
typedef uint16_t half_reg;
#endif

static half_reg bits_to_reg(uint16_t bits)
{
    half_reg h;
    memcpy(&h, &bits, sizeof bits);
    return h;
}

static uint16_t reg_to_bits(half_reg h)
{
    uint16_t bits;
    memcpy(&bits, &h, sizeof bits);
    return bits;
}

/* f64 -> 16-bit float with one rounding: through f32 would round twice.
 * Rounding to f32 toward zero and marking dropped bits in the lowest bit
 * ("round to odd") and then to 16 bits gives the correctly rounded result,
 * since f32 keeps more than 16 + 2 bits of mantissa. */
static float f64_to_f32_odd(double d)
{
    float f = (float)d;
    if (f == f && (double)f != d) {
        uint32_t u;
        memcpy(&u, &f, 4);
        if (((double)f > d) == (d > 0)) /* rounded away from zero: step back */
            u -= 1;
        u |= 1;
        memcpy(&f, &u, 4);
    }
    return f;
}

static float rt_extendhfsf2(half_reg h) { return tj_f16_to_f32(reg_to_bits(h)); }
static double rt_extendhfdf2(half_reg h) { return tj_f16_to_f32(reg_to_bits(h)); }
static half_reg rt_truncsfhf2(float f) { return bits_to_reg(tj_f32_to_f16(f)); }
static half_reg rt_truncdfhf2(double d) { return bits_to_reg(tj_f32_to_f16(f64_to_f32_odd(d))); }
static half_reg rt_truncsfbf2(float f) { return bits_to_reg(tj_f32_to_bf16(f)); }
static half_reg rt_truncdfbf2(double d) { return bits_to_reg(tj_f32_to_bf16(f64_to_f32_odd(d))); }
/* The older GNU names pass the bits in integer registers. */
static float rt_gnu_h2f_ieee(uint16_t h) { return tj_f16_to_f32(h); }
static uint16_t rt_gnu_f2h_ieee(float f) { return tj_f32_to_f16(f); }

const tjj_cpu_symbol tjj_cpu_runtime_symbols[] = {
    {"tjj_rt_assert_fail", (void *)tjj_rt_assert_fail},
    {"tjj_rt_print", (void *)tjj_rt_print},
    {"tjj_rt_f16_to_f32", (void *)tjj_rt_f16_to_f32},
    {"tjj_rt_f32_to_f16", (void *)tjj_rt_f32_to_f16},
    {"tjj_rt_bf16_to_f32", (void *)tjj_rt_bf16_to_f32},
    {"tjj_rt_f32_to_bf16", (void *)tjj_rt_f32_to_bf16},
    {"__extendhfsf2", (void *)rt_extendhfsf2},
    {"__extendhfdf2", (void *)rt_extendhfdf2},
    {"__truncsfhf2", (void *)rt_truncsfhf2},
    {"__truncdfhf2", (void *)rt_truncdfhf2},
    {"__truncsfbf2", (void *)rt_truncsfbf2},
    {"__truncdfbf2", (void *)rt_truncdfbf2},
    {"__gnu_h2f_ieee", (void *)rt_gnu_h2f_ieee},
    {"__gnu_f2h_ieee", (void *)rt_gnu_f2h_ieee},
    {NULL, NULL},
};
