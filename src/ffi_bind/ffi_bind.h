/* SPDX-License-Identifier: MIT */
/*
 * ffi_bind.h — kernel signatures as libffi call interfaces.
 *
 * A kernel's parameters become an ffi_cif for the CPU back end's ABI (see
 * src/jit/jit.h), used to call compiled CPU kernels, and the argument array
 * of cuLaunchKernel for GPU kernels. The same module checks
 * host arguments (tj_arg) against the signature and converts them to the
 * bytes each parameter takes, so every launch path reports a wrong argument
 * the same way: kernel, argument index and name, expected and given.
 */
#ifndef TJIT_FFI_BIND_H
#define TJIT_FFI_BIND_H

#include <ffi.h>

#include "../builder/ir.h"

/* One argument converted to the callee's representation (8 bytes hold any). */
typedef union tjf_value {
    void *ptr;
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    float f32;
    double f64;
} tjf_value;

typedef struct tjf_sig {
    int nparams;           /* kernel parameters; the cif has 7 more */
    ffi_cif cif;
    ffi_type **types;      /* nparams + 7 */
} tjf_sig;

TJI_FUNC tj_status tjf_sig_init(tjf_sig *sig, const tj_kernel *kernel);
TJI_FUNC void tjf_sig_free(tjf_sig *sig);

/* Checks args against the kernel's parameters (count, buffer or scalar,
 * dtype or a value that fits it) and converts scalars; pointer slots are
 * left for the caller to fill from the buffers. */
TJI_FUNC tj_status tjf_check_args(const tj_kernel *kernel, const tj_arg *args, int nargs,
                                  tjf_value *values);

/* Argument specialization: what a GPU launch knows of each argument and
 * compiles a variant for — a pointer 16-byte aligned, an integer a nonzero
 * multiple of 16, an integer equal to 1 — as TJF_SPEC_BITS bits per parameter, for
 * the first TJF_SPEC_PARAMS parameters (later ones and those declared with
 * TJ_*_NOSPEC are not specialized on). values as tjf_check_args left them,
 * pointer slots holding addresses in .u64. */
enum { TJF_SPEC_ALIGN16 = 1, TJF_SPEC_DIV16 = 2, TJF_SPEC_ONE = 4, TJF_SPEC_BITS = 3,
       TJF_SPEC_PARAMS = 21 };
TJI_FUNC uint64_t tjf_spec_key(const tj_kernel *kernel, const tjf_value *values);
/* The key's last bit (alias.c): pointer parameters whose accesses may
 * overlap. Both back ends compile for it. A launch sets it where two
 * arguments' bytes overlap (launch.c); tjf_alias_bit, for compiles without
 * a launch, where one buffer handle is passed for several pointers (args
 * as checked by tjf_check_args). */
#define TJF_SPEC_ALIASED (UINT64_C(1) << 63)
TJI_FUNC uint64_t tjf_alias_bit(const tj_kernel *kernel, const tj_arg *args, int nargs);

/* The kernelParams array of cuLaunchKernel for a GPU kernel (jit.h's GPU
 * ABI): params[i] points at values[i] for each kernel parameter — pointer
 * parameters hold the buffer's device address in .u64, scalars what
 * tjf_check_args stored (little-endian, at the start of the union, as wide
 * as the parameter) — and params[nparams] at *assert_info, the device
 * address of the kernel's assert record. params has nparams + 1 slots. */
TJI_FUNC void tjf_gpu_params(const tjf_sig *sig, tjf_value *values, uint64_t *assert_info,
                             void **params);

/* Runs CPU program instances first .. first+count-1 (linear indices into
 * the grid) through the cif. values holds the kernel parameters;
 * first/count/nprog/scratch/rt are appended. */
TJI_FUNC void tjf_call_cpu(const tjf_sig *sig, void *entry, const tjf_value *values,
                           int64_t first, int64_t count, const int32_t nprog[3],
                           void *scratch, void *rt);

#endif
