/* SPDX-License-Identifier: MIT */
/*
 * widen_fp8_dots.c — the CPU's fp8 dot: its operands cast to f16 first.
 *
 * A DOT keeps fp8 operands (f8e4m3, f8e5m2, mixed) as built, because the
 * GPU multiplies them as they are on sm_89+ (mma.sync .e4m3/.e5m2) and
 * widens them in registers elsewhere (accelerate_dot.c). The CPU's
 * micro-kernel (cpu_dot.c) loads a vector of b's row per k for every block
 * of rows, so an fp8 -> f32 conversion there, integer code of some twenty
 * instructions, would run M / MR times per element. Instead this pass puts a
 * CAST to f16 before the dot for each fp8 operand: the materialize pass
 * gives it an array of its own, computed once per element, and the dot
 * reads f16, one vcvtph2ps per vector. f16 holds every value of both
 * formats, so the dot's result is the f32 fma chain over the fp8 values,
 * bit for bit — the same program the builder made when it did this itself.
 * Run on the CPU only, before materialize.
 */
#include "passes.h"

tj_status tjp_widen_fp8_dots(tji_func *fn)
{
    for (int32_t r = 0; r < fn->nregions; r++)
        for (int pos = 0; pos < fn->regions[r].nops; pos++) {
            int32_t i = fn->regions[r].ops[pos];
            if (fn->ops[i].code != TJI_DOT)
                continue;
            for (int k = 0; k < 2; k++) {
                int32_t x = fn->ops[i].args[k];
                tji_type t = *tji_typeof(fn, x);
                if (t.is_ptr || !tjs_dtype_is_fp8(t.dtype))
                    continue;
                t.dtype = TJ_F16;
                int32_t cast = tji_insert_op(fn, TJI_CAST, r, pos++, fn->ops[i].loc);
                tji_set_operands(fn, cast, &x, 1);
                tji_set_operand(fn, i, k, tji_new_results(fn, cast, &t, 1));
            }
        }
    return TJ_OK;
}
