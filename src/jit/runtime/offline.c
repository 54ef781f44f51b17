/* SPDX-License-Identifier: MIT */
/*
 * offline.c — compiling without a device: tj_kernel_ptx, tj_kernel_ptx_args
 * and the layout explainer, tj_kernel_explain.
 *
 * They run the GPU pipeline a launch would run (../pipeline.c), for the
 * arguments given as a launch would see them (every buffer 16-byte
 * aligned) or, with none, for what every launch may assume; with
 * TJIT_CHECK_BOUNDS=1 set, that is the bounds-checked code (bounds.h), as
 * a launch would run. No GPU is needed: PTX is text.
 */
#include <stdlib.h>

#include "../llvm/bounds.h"
#include "device_impl.h"
#include "ptxas.h"

/* The specialization key of a compile for args without a launch (NULL:
 * none given): as a launch would see them, every buffer being 16-byte
 * aligned. */
static tj_status spec_of_args(const char *who, const tj_kernel *kernel, const tj_arg *args,
                              int nargs, uint64_t *key)
{
    if (!kernel)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: kernel is NULL", who);
    if (!args && nargs == 0) {
        *key = tjj_spec_of_buffers(kernel);
        return TJ_OK;
    }
    tjf_value *values = tjs_xcalloc(kernel->nparams ? (size_t)kernel->nparams : 1, sizeof *values);
    tj_status st = tjf_check_args(kernel, args, nargs, values);
    if (st == TJ_OK)
        *key = tjf_spec_key(kernel, values) | /* buffer slots hold address 0: aligned */
               tjf_alias_bit(kernel, args, nargs);
    free(values);
    return st;
}

/* What compiling without a launch (tj_kernel_ptx*, tj_kernel_explain)
 * starts with: num_warps checked (0: the default), the specialization key
 * of args, and the tile program, built. */
static tj_status build_offline(const char *who, const tj_kernel *kernel, const tj_arg *args,
                               int nargs, const int64_t *consts, int nconsts, int *num_warps,
                               uint64_t *spec, tji_func **fn)
{
    if (*num_warps == 0)
        *num_warps = DEFAULT_NUM_WARPS;
    if (!tjj_valid_num_warps(*num_warps))
        return tjs_error(TJ_ERR_INVALID_ARG,
                         "%s: num_warps = %d (a power of two from 1 to %d, or 0 for %d)",
                         who, *num_warps, MAX_NUM_WARPS, DEFAULT_NUM_WARPS);
    tj_status st = spec_of_args(who, kernel, args, nargs, spec);
    if (st == TJ_OK)
        st = tji_build(kernel, consts, nconsts, fn);
    if (st == TJ_OK) {
        (*fn)->params_may_alias = !!(*spec & TJF_SPEC_ALIASED);
        /* the code a launch would run: checked as TJIT_CHECK_BOUNDS says */
        (*fn)->check_bounds = tjj_bounds_wanted(TJ_CHECK_BOUNDS_DEFAULT);
    }
    return st;
}

/* tj_kernel_ptx and tj_kernel_ptx_args. */
static tj_status kernel_ptx(const char *who, const tj_kernel *kernel, const tj_arg *args, int nargs,
                            const int64_t *consts, int nconsts, const char *target, int num_warps,
                            char **out_ptx)
{
    tjs_clear_error();
    if (!out_ptx)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: out_ptx is NULL", who);
    *out_ptx = NULL;
    int sm, arch_specific;
    uint64_t spec = 0;
    tji_func *fn = NULL;
    tj_status st = tjj_ptx_target(who, target, &sm, &arch_specific);
    if (st == TJ_OK)
        st = build_offline(who, kernel, args, nargs, consts, nconsts, &num_warps, &spec, &fn);
    if (st != TJ_OK)
        return st;
    tjj_artifact artifact;
    st = tjj_compile_gpu(
        fn, &(tjj_gpu_target){.sm = sm, .arch_specific = arch_specific, .num_warps = num_warps, .spec = spec},
        &artifact);
    if (st == TJ_OK && tjj_ptxas_path())
        st = tjj_ptxas_check(tjj_ptxas_path(), artifact.gpu.ptx, sm, arch_specific, fn->name);
    if (st == TJ_OK) {
        *out_ptx = artifact.gpu.ptx;
        artifact.gpu.ptx = NULL;
    }
    tjj_artifact_free(&artifact);
    tji_func_free(fn);
    return st;
}

tj_status tj_kernel_ptx(const tj_kernel *kernel, const int64_t *consts, int nconsts,
                        const char *target, int num_warps, char **out_ptx)
{
    return kernel_ptx("tj_kernel_ptx", kernel, NULL, 0, consts, nconsts, target, num_warps, out_ptx);
}

tj_status tj_kernel_ptx_args(const tj_kernel *kernel, const tj_arg *args, int nargs,
                             const int64_t *consts, int nconsts, const char *target, int num_warps,
                             char **out_ptx)
{
    return kernel_ptx("tj_kernel_ptx_args", kernel, args, nargs, consts, nconsts, target, num_warps,
                      out_ptx);
}

tj_status tj_kernel_explain(const tj_kernel *kernel, const tj_arg *args, int nargs,
                            const int64_t *consts, int nconsts, int num_warps, char **out_text)
{
    static const char who[] = "tj_kernel_explain";
    tjs_clear_error();
    if (!out_text)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: out_text is NULL", who);
    *out_text = NULL;
    uint64_t key = 0;
    int sm, arch_specific;
    tji_func *fn = NULL;
    /* the target a NULL target of tj_kernel_ptx means: what a dot becomes depends on it */
    tj_status st = tjj_ptx_target(who, NULL, &sm, &arch_specific);
    if (st == TJ_OK)
        st = build_offline(who, kernel, args, nargs, consts, nconsts, &num_warps, &key, &fn);
    if (st != TJ_OK)
        return st;
    tjj_gpu_planned planned;
    st = tjj_gpu_plan(
        fn, &(tjj_gpu_target){.sm = sm, .arch_specific = arch_specific, .num_warps = num_warps, .spec = key},
        &planned);
    if (st == TJ_OK)
        *out_text = tjj_gpu_explain(fn, &planned);
    tjj_gpu_planned_free(&planned);
    tji_func_free(fn);
    return st;
}
