/* SPDX-License-Identifier: MIT */
/*
 * tjit.h — Triton-style GPU tile kernels, written inline in C.
 *
 * This header is the whole public API of tjit: include it alone. Its
 * parts live in tjit/ and are included below it, one per responsibility
 * (tjit_lang.h, tjit_host.h, tjit_tuning.h, and tjit_internal.h for what
 * the macros expand to); errors and element types are here. It has two
 * halves:
 *
 *  1. The kernel language. A kernel is written with TJ_KERNEL: its body is
 *     ordinary C that *builds* a tile program when the kernel is first launched
 *     with a given set of compile-time constants. C control flow in the body
 *     runs at build time (it is the meta-language, like Triton's constexpr);
 *     runtime loops and branches are TJ_FOR and TJ_IF. Every op is a macro that
 *     records the caller's __FILE__ and __LINE__, so an error in a tile program
 *     points at the user's own source line.
 *
 *  2. The host API: devices, buffers, launches and errors. Handles are opaque;
 *     every call that can fail returns a tj_status, and tj_last_error() gives
 *     the message of the last failure on the calling thread.
 *
 * Ownership: tj_device_open() gives a device that the caller closes with
 * tj_device_close(); buffers belong to their device and are released with
 * tj_buffer_free() or when the device closes. Compiled kernels are cached by
 * the device and freed with it, and kept on disk for later processes
 * (TJIT_CACHE, TJIT_CACHE_DIR: README.md, "Disk cache"). Strings returned by tjit stay valid until the
 * next tjit call on the same thread (tj_last_error) or for the life of the
 * object they describe (tj_device_name).
 *
 * Threads: a device may be used from several threads. A kernel variant is
 * built and compiled on the thread that first launches it; kernel bodies
 * run one at a time per device, the rest of compiling and launches of
 * variants already compiled go on meanwhile, and threads that launch the
 * same new variant at once wait for that one compile and share its result
 * or its error. A kernel body runs
 * at build time and must not launch or build kernels: tj_launch (on any
 * device) from a body returns TJ_ERR_LAUNCH, and the body's own build fails
 * with the same message.
 */
#ifndef TJIT_H
#define TJIT_H

#include <stddef.h>
#include <stdint.h>

#include "tjit/tjit_macros.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The typed launch (name_launch, TJ_KERNEL) takes integer parameters as C
 * integers, and C converts a float passed to one silently (2.5 becomes 2).
 * No C function can refuse a float argument there (the launch is a function,
 * not a macro), so this header turns on the compiler's warning for implicit
 * float-to-integer conversions that may change a value (-Wfloat-conversion)
 * for the rest of the translation unit: the launch argument is reported, and
 * so is any such conversion in code after the include (GCC's flag also
 * covers double to float). A warning, never an error, so that the user's own
 * code is not broken by tjit (-Werror does not raise a pragma's warning).
 * Float parameters take a double, so a double argument is no conversion.
 * An explicit cast says a conversion is meant; define
 * TJIT_ALLOW_FLOAT_CONVERSION before including tjit.h to keep C's silent rule. */
#if !defined(TJIT_ALLOW_FLOAT_CONVERSION) && defined(__clang__)
#pragma clang diagnostic warning "-Wfloat-conversion"
#pragma clang diagnostic warning "-Wliteral-conversion"
#elif !defined(TJIT_ALLOW_FLOAT_CONVERSION) && defined(__GNUC__)
#pragma GCC diagnostic warning "-Wfloat-conversion"
#endif

#define TJ_VERSION_MAJOR 0
#define TJ_VERSION_MINOR 1
#define TJ_VERSION_PATCH 0
#define TJ_VERSION_STRING "0.1.0"
/* TJ_VERSION_NUMBER is MAJOR*10000 + MINOR*100 + PATCH, for #if tests. */
#define TJ_VERSION_NUMBER (TJ_VERSION_MAJOR * 10000 + TJ_VERSION_MINOR * 100 + TJ_VERSION_PATCH)

#if defined(__GNUC__)
#define TJ_API __attribute__((visibility("default")))
#define TJ__UNUSED __attribute__((unused))
#else
#define TJ_API
#define TJ__UNUSED
#endif

/* The library's version at run time ("0.1.0"), and as TJ_VERSION_NUMBER. */
TJ_API const char *tj_version(void);
TJ_API int tj_version_number(void);

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

typedef enum tj_status {
    TJ_OK = 0,
    TJ_ERR_INVALID_ARG,  /* a bad argument to a host API call */
    TJ_ERR_SHAPE,        /* tile shapes that do not fit (broadcast, mask, ...) */
    TJ_ERR_TYPE,         /* dtypes for which no rule applies */
    TJ_ERR_BUILD,        /* any other error in a tile program */
    TJ_ERR_COMPILE,      /* LLVM or the device JIT failed */
    TJ_ERR_LAUNCH,       /* bad launch: grid, arguments, buffers */
    TJ_ERR_DEVICE,       /* the device (driver) reported an error */
    TJ_ERR_OUT_OF_MEMORY,
    TJ_ERR_ASSERT,       /* a device assert failed while the kernel ran */
    TJ_ERR_UNSUPPORTED,  /* valid, but not available on this device */
    TJ_ERR_BOUNDS        /* a checked launch accessed memory outside its buffer */
} tj_status;

/* Message of the last failed call on this thread ("" if none). It names the
 * kernel, the op and the user's file:line where a tile program is at fault. */
TJ_API const char *tj_last_error(void);
/* A short constant name for a status ("TJ_ERR_SHAPE"). */
TJ_API const char *tj_status_name(tj_status status);

/* ------------------------------------------------------------------------ */
/* Element types                                                            */
/* ------------------------------------------------------------------------ */

typedef enum tj_dtype {
    TJ_I1, TJ_I8, TJ_I16, TJ_I32, TJ_I64,
    TJ_U8, TJ_U16, TJ_U32, TJ_U64,
    TJ_F16, TJ_BF16, TJ_F32, TJ_F64,
    TJ_F8E4M3, TJ_F8E5M2, /* 8-bit floats (storage, casts and tj_dot), below */
    TJ_DTYPE_COUNT
} tj_dtype;

TJ_API const char *tj_dtype_name(tj_dtype dtype); /* its name, "f32" */
TJ_API size_t tj_dtype_size(tj_dtype dtype);      /* its size in bytes (i1 takes 1) */

/* f16/bf16 values are passed between host and device as their raw 16 bits. */
TJ_API uint16_t tj_f32_to_f16(float x);
TJ_API float tj_f16_to_f32(uint16_t bits);
TJ_API uint16_t tj_f32_to_bf16(float x);
TJ_API float tj_bf16_to_f32(uint16_t bits);

/* 8-bit floats (OCP FP8), passed as their raw byte. f8e4m3 is e4m3fn: bias
 * 7, no infinities, 0x7f and 0xff NaN, largest 448; f8e5m2: bias 15, IEEE
 * infinities and NaNs, largest 57344. They are storage types: a kernel loads,
 * stores, selects (tj_where), casts and multiplies them (tj_dot); any other
 * arithmetic is an error that says to cast to f32 first. Widening to f32 is
 * exact. Narrowing rounds once, to nearest even, and saturates as CUDA's
 * __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...) and PTX's cvt.rn.satfinite
 * do: beyond the largest finite value (infinities too, also for e5m2) gives
 * it with the sign; NaN gives 0x7f. The same bits on every back end. */
TJ_API uint8_t tj_f32_to_f8e4m3(float x);
TJ_API float tj_f8e4m3_to_f32(uint8_t bits);
TJ_API uint8_t tj_f32_to_f8e5m2(float x);
TJ_API float tj_f8e5m2_to_f32(uint8_t bits);

#include "tjit/tjit_lang.h"     /* the kernel language */
#include "tjit/tjit_host.h"     /* the host API */
#include "tjit/tjit_tuning.h"   /* benchmarking and autotuning */
#include "tjit/tjit_internal.h" /* the macros' internals */

#ifdef __cplusplus
}
#endif
#endif /* TJIT_H */
