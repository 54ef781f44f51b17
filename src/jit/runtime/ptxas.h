/* SPDX-License-Identifier: MIT */
/*
 * ptxas.h — PTX targets and the ptxas check (ptxas.c).
 */
#ifndef TJIT_PTXAS_H
#define TJIT_PTXAS_H

#include "../../internal.h"

/* The PTX target named by target ("sm_90"), or by $TJIT_PTX_TARGET when
 * target is NULL, or sm_90 when that is unset too, as 10 * major + minor.
 * A malformed name or one below sm_80 is TJ_ERR_INVALID_ARG; who prefixes
 * the message. */
TJI_FUNC tj_status tjj_ptx_target(const char *who, const char *target, int *sm);

/* Assembles ptx for sm_<sm> with the ptxas program at path (searched in
 * PATH if it has no '/'), output discarded. A rejection is TJ_ERR_COMPILE
 * with ptxas's own message, naming the kernel. */
TJI_FUNC tj_status tjj_ptxas_check(const char *path, const char *ptx, int sm,
                                   const char *kernel_name);

#endif
