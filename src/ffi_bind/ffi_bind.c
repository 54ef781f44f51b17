/* SPDX-License-Identifier: MIT */
/*
 * ffi_bind.c — kernel signatures as libffi call interfaces, and the checks
 * that turn host arguments into the bytes a kernel parameter takes.
 *
 * A compiled CPU kernel is an ordinary C function whose parameter list is
 * only known at run time (see jit.h): the kernel's own parameters, then the
 * program id and grid (6 × int32), the scratch pointer and the runtime state.
 * libffi calls such a function portably: tjf_sig_init describes the list once
 * per compiled variant as an ffi_cif, and tjf_call_cpu calls a chunk of
 * program instances through it. A GPU kernel takes the same parameters, then the
 * address of its assert record; cuLaunchKernel wants them as an array of
 * pointers to each argument's bytes, which tjf_gpu_params makes from the
 * same converted values (the driver copies as many bytes as the PTX
 * parameter is wide, so a value's low bytes at the start of the union are
 * exactly what it reads on a little-endian host).
 *
 * Both launch paths — the typed NAME_launch made by TJ_KERNEL and the
 * generic tj_launch — arrive here with an array of tj_arg, so every mistake
 * in arguments is reported in one place and one style: the kernel, the
 * argument's 1-based index and name, what the parameter takes and what was
 * given. Scalars are converted the way C converts, except where C would lose
 * the value silently: an integer that does not fit the parameter's type is an
 * error, and a floating value is never truncated into an integer parameter.
 *
 * The converted values also give a GPU launch its specialization key
 * (tjf_spec_key): the facts about the arguments that the compiled variant
 * may rely on, read from the same bytes the kernel will receive.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ffi_bind.h"

/* The trailing parameters of every CPU kernel: first, count, nprog0..2,
 * scratch, rt. */
enum { TRAILING_PARAMS = 7, MAX_PARAMS = 240 };

tj_arg tj__arg_int(tj_dtype dtype, int64_t value)
{
    /* Typed launches only send integer dtypes here; anything else becomes an
     * i64 that the signature check converts or rejects like any scalar. */
    if (!tjs_dtype_is_int(dtype))
        dtype = TJ_I64;
    return (tj_arg){dtype, 0, {.i = value}};
}

tj_arg tj__arg_float(tj_dtype dtype, double value)
{
    if (!tjs_dtype_is_float(dtype))
        dtype = TJ_F64;
    return (tj_arg){dtype, 0, {.f = value}};
}

static ffi_type *scalar_ffi_type(tj_dtype dtype)
{
    switch (dtype) {
    case TJ_I1: return &ffi_type_uint8;
    case TJ_I8: return &ffi_type_sint8;
    case TJ_I16: return &ffi_type_sint16;
    case TJ_I32: return &ffi_type_sint32;
    case TJ_I64: return &ffi_type_sint64;
    case TJ_U8: return &ffi_type_uint8;
    case TJ_U16: return &ffi_type_uint16;
    case TJ_U32: return &ffi_type_uint32;
    case TJ_U64: return &ffi_type_uint64;
    case TJ_F16: return &ffi_type_uint16;
    case TJ_BF16: return &ffi_type_uint16;
    case TJ_F32: return &ffi_type_float;
    case TJ_F64: return &ffi_type_double;
    case TJ_F8E4M3: case TJ_F8E5M2: return &ffi_type_uint8;
    default: return NULL;
    }
}

tj_status tjf_sig_init(tjf_sig *sig, const tj_kernel *kernel)
{
    memset(sig, 0, sizeof *sig);
    if (kernel->nparams < 0 || kernel->nparams > MAX_PARAMS)
        return tjs_error(TJ_ERR_LAUNCH, "kernel '%s': %d parameters (at most %d are supported)",
                         kernel->name, kernel->nparams, MAX_PARAMS);
    int n = kernel->nparams;
    ffi_type **types = tjs_xcalloc((size_t)n + TRAILING_PARAMS, sizeof *types);
    for (int i = 0; i < n; i++) {
        const tj_param_desc *p = &kernel->params[i];
        types[i] = p->is_ptr ? &ffi_type_pointer : scalar_ffi_type(p->dtype);
        if (!types[i]) {
            free(types);
            return tjs_error(TJ_ERR_LAUNCH, "kernel '%s': parameter %d '%s' has an invalid dtype (%d)",
                             kernel->name, i + 1, p->name, (int)p->dtype);
        }
    }
    types[n] = types[n + 1] = &ffi_type_sint64;
    for (int i = 2; i < 5; i++)
        types[n + i] = &ffi_type_sint32;
    types[n + 5] = types[n + 6] = &ffi_type_pointer;
    ffi_status st = ffi_prep_cif(&sig->cif, FFI_DEFAULT_ABI, (unsigned)(n + TRAILING_PARAMS),
                                 &ffi_type_void, types);
    if (st != FFI_OK) {
        free(types);
        return tjs_error(TJ_ERR_LAUNCH, "kernel '%s': libffi cannot describe its signature (ffi_prep_cif: %d)",
                         kernel->name, (int)st);
    }
    sig->nparams = n;
    sig->types = types;
    return TJ_OK;
}

void tjf_sig_free(tjf_sig *sig)
{
    free(sig->types);
    memset(sig, 0, sizeof *sig);
}

/* An integer argument as sign and magnitude, so that every value of i64 and
 * u64 compares exactly against every parameter's range. */
typedef struct int_value {
    int negative;
    uint64_t magnitude;
} int_value;

static int_value arg_int_value(const tj_arg *a)
{
    if (!tjs_dtype_is_signed(a->dtype) && a->dtype != TJ_I1)
        return (int_value){0, a->v.u};
    if (a->v.i < 0)
        return (int_value){1, (uint64_t)0 - (uint64_t)a->v.i};
    return (int_value){0, (uint64_t)a->v.i};
}

static int int_fits(int_value v, tj_dtype dtype)
{
    int bits = tjs_dtype_bits(dtype);
    if (dtype == TJ_I1)
        return !v.negative && v.magnitude <= 1;
    if (tjs_dtype_is_signed(dtype)) {
        uint64_t max = ((uint64_t)1 << (bits - 1)) - 1;
        return v.negative ? v.magnitude <= max + 1 : v.magnitude <= max;
    }
    uint64_t max = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    return !v.negative && v.magnitude <= max;
}

/* The two's-complement bits of v, truncated by the caller to the width. */
static uint64_t int_bits(int_value v)
{
    return v.negative ? (uint64_t)0 - v.magnitude : v.magnitude;
}

static void store_int(tjf_value *out, tj_dtype dtype, uint64_t bits)
{
    switch (tjs_dtype_bits(dtype)) {
    case 1:
    case 8: out->u8 = (uint8_t)bits; break;
    case 16: out->u16 = (uint16_t)bits; break;
    case 32: out->u32 = (uint32_t)bits; break;
    default: out->u64 = bits; break;
    }
}

/* x as an f32 rounded to odd: where x falls between two floats, the one
 * whose last mantissa bit is 1. Rounding that to a 16-bit float gives the
 * same result as rounding x directly (the f32 keeps enough extra bits), so
 * a double argument for an f16/bf16/fp8 parameter is rounded once, not twice. */
static float f32_round_to_odd(double x)
{
    float f = (float)x;
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if ((double)f == x || isinf(f) || isnan(f) || (bits & 1))
        return f;
    return nextafterf(f, (double)f < x ? INFINITY : -INFINITY);
}

static void store_float(tjf_value *out, tj_dtype dtype, double x)
{
    switch (dtype) {
    case TJ_F16: out->u16 = tj_f32_to_f16(f32_round_to_odd(x)); break;
    case TJ_BF16: out->u16 = tj_f32_to_bf16(f32_round_to_odd(x)); break;
    case TJ_F8E4M3: out->u8 = tj_f32_to_f8e4m3(f32_round_to_odd(x)); break;
    case TJ_F8E5M2: out->u8 = tj_f32_to_f8e5m2(f32_round_to_odd(x)); break;
    case TJ_F32: out->f32 = (float)x; break;
    default: out->f64 = x; break;
    }
}

/* "5000000000 (i64)" or "18446744073709551615 (u64)" */
static void format_int(char *buf, size_t n, int_value v, tj_dtype dtype)
{
    snprintf(buf, n, "%s%llu (%s)", v.negative ? "-" : "", (unsigned long long)v.magnitude,
             tj_dtype_name(dtype));
}

static tj_status check_scalar(const tj_kernel *kernel, int index, const tj_param_desc *p,
                              const tj_arg *a, tjf_value *out)
{
    if (a->is_buffer)
        return tjs_error(TJ_ERR_LAUNCH, "kernel '%s': argument %d '%s' is a scalar %s, got a tj_buffer",
                         kernel->name, index, p->name, tj_dtype_name(p->dtype));
    if ((unsigned)a->dtype >= TJ_DTYPE_COUNT)
        return tjs_error(TJ_ERR_LAUNCH, "kernel '%s': argument %d '%s' has an invalid dtype (%d)",
                         kernel->name, index, p->name, (int)a->dtype);
    if (tjs_dtype_is_int(p->dtype)) {
        if (tjs_dtype_is_float(a->dtype))
            return tjs_error(TJ_ERR_LAUNCH,
                             "kernel '%s': argument %d '%s' is an integer scalar %s, got a float %s (%g)",
                             kernel->name, index, p->name, tj_dtype_name(p->dtype),
                             tj_dtype_name(a->dtype), a->v.f);
        int_value v = arg_int_value(a);
        if (!int_fits(v, p->dtype)) {
            char text[64];
            format_int(text, sizeof text, v, a->dtype);
            return tjs_error(TJ_ERR_LAUNCH, "kernel '%s': argument %d '%s' is a scalar %s; %s does not fit in it",
                             kernel->name, index, p->name, tj_dtype_name(p->dtype), text);
        }
        store_int(out, p->dtype, int_bits(v));
        return TJ_OK;
    }
    if (tjs_dtype_is_float(a->dtype)) {
        store_float(out, p->dtype, a->v.f);
    } else {
        int_value v = arg_int_value(a);
        double x = (double)v.magnitude;
        store_float(out, p->dtype, v.negative ? -x : x);
    }
    return TJ_OK;
}

tj_status tjf_check_args(const tj_kernel *kernel, const tj_arg *args, int nargs,
                         tjf_value *values)
{
    if (nargs != kernel->nparams)
        return tjs_error(TJ_ERR_LAUNCH, "kernel '%s': expects %d argument%s, got %d", kernel->name,
                         kernel->nparams, kernel->nparams == 1 ? "" : "s", nargs);
    if (nargs > 0 && !args)
        return tjs_error(TJ_ERR_INVALID_ARG, "kernel '%s': args is NULL but %d arguments are expected",
                         kernel->name, nargs);
    for (int i = 0; i < nargs; i++) {
        const tj_param_desc *p = &kernel->params[i];
        const tj_arg *a = &args[i];
        memset(&values[i], 0, sizeof values[i]);
        if (p->is_ptr) {
            if (!a->is_buffer)
                return tjs_error(TJ_ERR_LAUNCH,
                                 "kernel '%s': argument %d '%s' is a pointer to %s and takes a tj_buffer, got a scalar %s",
                                 kernel->name, i + 1, p->name, tj_dtype_name(p->dtype),
                                 tj_dtype_name(a->dtype));
            continue;
        }
        tj_status st = check_scalar(kernel, i + 1, p, a, &values[i]);
        if (st != TJ_OK)
            return st;
    }
    return TJ_OK;
}

uint64_t tjf_spec_key(const tj_kernel *kernel, const tjf_value *values)
{
    uint64_t key = 0;
    for (int i = 0; i < kernel->nparams && i < TJF_SPEC_PARAMS; i++) {
        const tj_param_desc *p = &kernel->params[i];
        uint64_t v = values[i].u64, bits = 0;
        if (p->no_specialize)
            continue;
        if (p->is_ptr)
            bits = v % 16 == 0 ? TJF_SPEC_ALIGN16 : 0;
        else if (tjs_dtype_is_int(p->dtype) && p->dtype != TJ_I1)
            /* the value sits zero-extended at the start of the union; 0 is
             * not "a multiple of 16" here, so that a divisor known to be
             * one is known not to be 0 (axis_info.c's floored modulo) */
            bits = (v != 0 && v % 16 == 0 ? TJF_SPEC_DIV16 : 0) | (v == 1 ? TJF_SPEC_ONE : 0);
        key |= bits << (TJF_SPEC_BITS * i);
    }
    return key;
}

uint64_t tjf_alias_bit(const tj_kernel *kernel, const tj_arg *args, int nargs)
{
    for (int i = 0; i < nargs && i < kernel->nparams; i++)
        for (int j = 0; kernel->params[i].is_ptr && j < i; j++)
            if (kernel->params[j].is_ptr && args[i].v.buf.handle != 0 && /* 0: a placeholder */
                args[j].v.buf.handle == args[i].v.buf.handle)
                return TJF_SPEC_ALIASED;
    return 0;
}

void tjf_gpu_params(const tjf_sig *sig, tjf_value *values, uint64_t *assert_info,
                    void **params)
{
    for (int i = 0; i < sig->nparams; i++)
        params[i] = &values[i];
    params[sig->nparams] = assert_info;
}

void tjf_call_cpu(const tjf_sig *sig, void *entry, const tjf_value *values, int64_t first,
                  int64_t count, const int32_t nprog[3], void *scratch, void *rt)
{
    void *avalues[MAX_PARAMS + TRAILING_PARAMS];
    int n = sig->nparams;
    for (int i = 0; i < n; i++)
        avalues[i] = (void *)&values[i];
    avalues[n] = &first;
    avalues[n + 1] = &count;
    for (int i = 0; i < 3; i++)
        avalues[n + 2 + i] = (void *)&nprog[i];
    avalues[n + 5] = &scratch;
    avalues[n + 6] = &rt;
    ffi_call((ffi_cif *)&sig->cif, FFI_FN(entry), NULL, avalues);
}
