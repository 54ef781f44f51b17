/* SPDX-License-Identifier: MIT */
/*
 * dropout_kernel.h — the dropout sample's kernel (samples/dropout.c says how
 * it works), shared with bench/gpu_norm.c, which times it against Triton.
 */
#ifndef TJIT_SAMPLES_DROPOUT_KERNEL_H
#define TJIT_SAMPLES_DROPOUT_KERNEL_H

#include "tjit.h"

/* out = x / (1 - p) where tj_rand(seed, offset) > p, else 0, for offsets
 * below n. */
TJ_KERNEL(seeded_dropout,
          TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(out, f32), TJ_SCALAR(n, i32), TJ_SCALAR(p, f32),
                    TJ_SCALAR(seed, i64)),
          TJ_CONSTS(BLOCK))
{
    tj_val offs = tj_add(tj_mul(tj_program_id(0), BLOCK), tj_arange(0, BLOCK));
    tj_val mask = tj_lt(offs, n);
    tj_val v = tj_load(tj_add(x, offs), .mask = mask);
    tj_val keep = tj_gt(tj_rand(seed, offs), p);
    tj_store(tj_add(out, offs), tj_where(keep, tj_div(v, tj_sub(1.0, p)), 0.0), .mask = mask);
}

#endif
