/* SPDX-License-Identifier: MIT */
/*
 * matmul_spec.h — the specialization key of a row-major n x n x n launch of
 * a matmul kernel with samples/matmul_kernel.h's twelve parameters (A, B,
 * C, M, N, K and the six strides), for tests that compile such a kernel
 * for a GPU without launching it.
 */
#ifndef TJIT_TESTS_MATMUL_SPEC_H
#define TJIT_TESTS_MATMUL_SPEC_H

#include "ffi_bind/ffi_bind.h"
#include "jit/pipeline.h"
#include "tjit.h"

static inline uint64_t tl_matmul_spec(const tj_kernel *k, int n)
{
    enum { NARGS = 12 };
    const tj_arg none = TJ_ARG_BUF((tj_buffer){0});
    tj_arg args[NARGS] = {none, none, none, TJ_ARG_I32(n), TJ_ARG_I32(n), TJ_ARG_I32(n),
                          TJ_ARG_I32(n), TJ_ARG_I32(1), TJ_ARG_I32(n), TJ_ARG_I32(1), TJ_ARG_I32(n),
                          TJ_ARG_I32(1)};
    tjf_value values[NARGS];
    if (tjf_check_args(k, args, NARGS, values) != TJ_OK)
        return tjj_spec_of_buffers(k);
    return tjf_spec_key(k, values) | tjj_spec_of_buffers(k);
}

#endif
