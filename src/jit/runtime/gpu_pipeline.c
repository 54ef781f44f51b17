/* SPDX-License-Identifier: MIT */
/*
 * gpu_pipeline.c — the GPU half of compiling, for launches and for PTX
 * without a GPU.
 *
 * After tji_build, a GPU variant is analysed (axis info for the arguments'
 * specialization), given coalesced layouts (tjp_coalesce,
 * tjp_assign_layouts), verified and checked again, and compiled to PTX
 * (gpu_codegen.c). The specialization key of a launch (tjf_spec_key: which
 * pointers are 16-byte aligned, which integers are multiples of 16 or equal
 * to 1) says what axis info may assume.
 *
 * Every variant's PTX can also be assembled by ptxas (TJIT_PTXAS, see
 * ptxas.c) — CPU variants included, which then get a GPU compile as well —
 * so that a machine without a GPU still proves the PTX valid. The same
 * pipeline runs without a launch for tj_kernel_ptx(_args) and for the
 * layout explainer, tj_kernel_explain; with TJIT_CHECK_BOUNDS=1 set, that
 * is the bounds-checked code (bounds.h), as a launch would run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bounds.h"
#include "device_impl.h"
#include "ptxas.h"

/* --- compiling for a GPU --------------------------------------------------- */

/* What the parameters of fn are known to be, from a tjf_spec_key; out has
 * one entry per parameter. */
static void spec_of_key(const tji_func *fn, uint64_t key, tjp_param_spec *out)
{
    for (int i = 0; i < fn->nparams; i++) {
        unsigned bits = i < TJF_SPEC_PARAMS ? (unsigned)(key >> (TJF_SPEC_BITS * i)) : 0;
        out[i] = (tjp_param_spec){.ptr_align16 = !!(bits & TJF_SPEC_ALIGN16),
                                  .int_div16 = !!(bits & TJF_SPEC_DIV16),
                                  .is_one = !!(bits & TJF_SPEC_ONE)};
    }
}

/* The key of a compile without a launch: every pointer is a tjit buffer,
 * so 16-byte aligned; nothing is known of scalars. */
static uint64_t spec_without_args(const tj_kernel *kernel)
{
    uint64_t key = 0;
    for (int i = 0; i < kernel->nparams && i < TJF_SPEC_PARAMS; i++)
        if (kernel->params[i].is_ptr && !kernel->params[i].no_specialize)
            key |= (uint64_t)TJF_SPEC_ALIGN16 << (TJF_SPEC_BITS * i);
    return key;
}

/* The GPU passes up to the layouts: axis info for the arguments spec
 * describes, coalescing, layouts, and the checks of both. fn gains the
 * layout pass's conversions. */
static tj_status gpu_layouts(tji_func *fn, const tjp_param_spec *spec, int num_warps,
                             tjp_layout_plan *plan)
{
    tjp_axis_info_result axis = {0};
    tjp_coalesce_result coalesced = {0};
    tj_status st = tjp_axis_info(fn, spec, &axis);
    if (st == TJ_OK)
        st = tjp_coalesce(fn, &axis, num_warps, &coalesced);
    if (st == TJ_OK)
        st = tjp_assign_layouts(fn, num_warps, &coalesced, plan);
    if (st == TJ_OK)
        st = tji_verify(fn);
    if (st == TJ_OK)
        st = tjp_check_layouts(fn, plan);
    tjp_coalesce_free(&coalesced);
    tjp_axis_info_free(&axis);
    return st;
}

/* The explainer's text for fn after gpu_layouts (axis info again, of the
 * values the layout pass added), malloc'ed into *text. */
static tj_status explain_layouts(const tji_func *fn, const tjp_param_spec *spec,
                                 const tjp_layout_plan *plan, char **text)
{
    tjp_axis_info_result axis = {0};
    tj_status st = tjp_axis_info(fn, spec, &axis);
    if (st == TJ_OK)
        *text = tjp_explain(fn, plan, &axis);
    tjp_axis_info_free(&axis);
    return st;
}

/* Layouts, verification and PTX for sm_<sm>: the GPU half of the pipeline
 * after tji_build, for the arguments spec_key describes (tjf_spec_key).
 * TJIT_DUMP=layouts prints the explainer's text on the way. */
tj_status tjj_gpu_pipeline(tji_func *fn, uint64_t spec_key, int num_warps, int sm,
                       tjp_layout_plan *plan, tjj_gpu_code *code)
{
    tjp_param_spec *spec = tjs_xcalloc((size_t)fn->nparams + 1, sizeof *spec);
    spec_of_key(fn, spec_key, spec);
    tj_status st = tjj_gpu_check_tile_sizes(fn, num_warps);
    if (st == TJ_OK)
        st = gpu_layouts(fn, spec, num_warps, plan);
    if (st == TJ_OK && tjs_dump_enabled("layouts")) {
        char *text = NULL;
        st = explain_layouts(fn, spec, plan, &text);
        if (text)
            fprintf(stderr, "%s", text);
        free(text);
    }
    if (st == TJ_OK)
        st = tjj_gpu_compile(fn, plan, sm, code);
    free(spec);
    return st;
}

/* The ptxas that checks every PTX compiled (TJIT_PTXAS), or NULL. */
static const char *ptxas_path(void)
{
    const char *ptxas = getenv("TJIT_PTXAS");
    return ptxas && *ptxas ? ptxas : NULL;
}

/* TJIT_PTXAS: assembles a variant's PTX for TJIT_PTX_TARGET with ptxas.
 * code (for sm_<code_sm>) is reused when it is for that target; otherwise
 * the PTX is compiled here, from plan or (NULL) new layouts of fn for the
 * arguments spec_key describes. */
tj_status tjj_check_with_ptxas(tji_func *fn, uint64_t spec_key, int num_warps,
                               const tjp_layout_plan *plan, const tjj_gpu_code *code,
                               int code_sm)
{
    const char *ptxas = ptxas_path();
    if (!ptxas)
        return TJ_OK;
    int sm;
    tj_status st = tjj_ptx_target("TJIT_PTXAS", NULL, &sm);
    if (st != TJ_OK)
        return st;
    if (code && code_sm == sm)
        return tjj_ptxas_check(ptxas, code->ptx, sm, fn->name);
    tjp_layout_plan own_plan = {0};
    tjj_gpu_code own_code = {0};
    if (plan)
        st = tjj_gpu_compile(fn, plan, sm, &own_code);
    else
        st = tjj_gpu_pipeline(fn, spec_key, num_warps, sm, &own_plan, &own_code);
    if (st == TJ_OK)
        st = tjj_ptxas_check(ptxas, own_code.ptx, sm, fn->name);
    tjj_gpu_code_free(&own_code);
    tjp_layout_plan_free(&own_plan);
    return st;
}

/* --- PTX without a GPU ----------------------------------------------------- */

int tjj_valid_num_warps(int n)
{
    return n >= 1 && n <= MAX_NUM_WARPS && (n & (n - 1)) == 0;
}

/* The specialization key of a compile for args without a launch (NULL:
 * none given): as a launch would see them, every buffer being 16-byte
 * aligned. */
static tj_status spec_of_args(const char *who, const tj_kernel *kernel, const tj_arg *args,
                              int nargs, uint64_t *key)
{
    if (!kernel)
        return tjs_error(TJ_ERR_INVALID_ARG, "%s: kernel is NULL", who);
    if (!args && nargs == 0) {
        *key = spec_without_args(kernel);
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
    int sm;
    uint64_t spec = 0;
    tji_func *fn = NULL;
    tj_status st = tjj_ptx_target(who, target, &sm);
    if (st == TJ_OK)
        st = build_offline(who, kernel, args, nargs, consts, nconsts, &num_warps, &spec, &fn);
    if (st != TJ_OK)
        return st;
    tjp_layout_plan plan = {0};
    tjj_gpu_code code = {0};
    st = tjj_gpu_pipeline(fn, spec, num_warps, sm, &plan, &code);
    if (st == TJ_OK && ptxas_path())
        st = tjj_ptxas_check(ptxas_path(), code.ptx, sm, fn->name);
    if (st == TJ_OK) {
        *out_ptx = code.ptx;
        code.ptx = NULL;
    }
    tjj_gpu_code_free(&code);
    tjp_layout_plan_free(&plan);
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
    tji_func *fn = NULL;
    tj_status st = build_offline(who, kernel, args, nargs, consts, nconsts, &num_warps, &key, &fn);
    if (st != TJ_OK)
        return st;
    tjp_param_spec *spec = tjs_xcalloc((size_t)fn->nparams + 1, sizeof *spec);
    spec_of_key(fn, key, spec);
    tjp_layout_plan plan = {0};
    st = gpu_layouts(fn, spec, num_warps, &plan);
    if (st == TJ_OK)
        st = explain_layouts(fn, spec, &plan, out_text);
    tjp_layout_plan_free(&plan);
    free(spec);
    tji_func_free(fn);
    return st;
}
