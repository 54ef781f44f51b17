/* SPDX-License-Identifier: MIT */
/*
 * ptx_barriers.h — what the aliasing tests (test_alias, test_provenance)
 * read in a kernel's PTX: whether a barrier orders its first global load
 * before the first global store after it. Without one, a warp may store
 * before another warp has loaded what the store overwrites.
 */
#ifndef TJIT_TESTS_PTX_BARRIERS_H
#define TJIT_TESTS_PTX_BARRIERS_H

#include "testlib.h"

static inline int tl_is_barrier(const char *p)
{
    return strncmp(p, "bar.sync", 8) == 0 || strncmp(p, "barrier.sync", 12) == 0;
}

/* In the sm_90 PTX of k at 4 warps for the constant n (args NULL:
 * tj_kernel_ptx, else tj_kernel_ptx_args): 1 if a barrier lies between the
 * first global load and the first global store after it, 0 if not, -1 if
 * the PTX could not be had or has no such pair. */
static inline int tl_barrier_between(const tj_kernel *k, const tj_arg *args, int nargs, int64_t n)
{
    char *ptx = NULL;
    tj_status st = args ? tj_kernel_ptx_args(k, args, nargs, &n, 1, "sm_90", 4, &ptx)
                        : tj_kernel_ptx(k, &n, 1, "sm_90", 4, &ptx);
    if (st != TJ_OK) {
        tap_diag("  %s: %s: %s", k->name, tj_status_name(st), tj_last_error());
        return -1;
    }
    const char *load = strstr(ptx, "ld.global"), *store = load ? strstr(load, "st.global") : NULL;
    int found = store ? 0 : -1;
    for (const char *p = load; store && p < store; p++)
        found |= tl_is_barrier(p);
    free(ptx);
    return found;
}

#endif
