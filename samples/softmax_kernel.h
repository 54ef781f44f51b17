/* SPDX-License-Identifier: MIT */
/*
 * softmax_kernel.h — the softmax sample's kernel (samples/softmax.c says
 * how it works), shared with bench/cache_bench.c, which times its first
 * launch with and without the disk cache.
 */
#ifndef TJIT_SAMPLES_SOFTMAX_KERNEL_H
#define TJIT_SAMPLES_SOFTMAX_KERNEL_H

#include <math.h>

#include "tjit.h"

TJ_KERNEL(softmax_kernel,
          TJ_PARAMS(TJ_PTR(src, f32), TJ_PTR(dst, f32), TJ_SCALAR(cols, i32),
                    TJ_SCALAR(row_stride, i32)),
          TJ_CONSTS(BLOCK))
{
    tj_val row_start = tj_mul(tj_program_id(0), row_stride);
    tj_val offs = tj_arange(0, BLOCK);
    tj_val mask = tj_lt(offs, cols);
    tj_val x = tj_load(tj_add(src, tj_add(row_start, offs)), .mask = mask,
                       .other = tj_f32(-INFINITY));
    tj_val shifted = tj_sub(x, tj_max(x, 0));
    tj_val num = tj_exp(shifted);
    tj_val den = tj_sum(num, 0);
    tj_store(tj_add(dst, tj_add(row_start, offs)), tj_div(num, den), .mask = mask);
}

#endif
