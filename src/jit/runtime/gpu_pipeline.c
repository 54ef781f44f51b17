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
 * layout explainer, tj_kernel_explain (offline.c).
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
const char *tjj_ptxas_path(void)
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
    const char *ptxas = tjj_ptxas_path();
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

/* tj_kernel_explain's text for fn, laid out for num_warps and the
 * arguments spec_key describes, malloc'ed into *text. */
tj_status tjj_gpu_explain(tji_func *fn, uint64_t spec_key, int num_warps, char **text)
{
    tjp_param_spec *spec = tjs_xcalloc((size_t)fn->nparams + 1, sizeof *spec);
    spec_of_key(fn, spec_key, spec);
    tjp_layout_plan plan = {0};
    tj_status st = gpu_layouts(fn, spec, num_warps, &plan);
    if (st == TJ_OK)
        st = explain_layouts(fn, spec, &plan, text);
    tjp_layout_plan_free(&plan);
    free(spec);
    return st;
}
