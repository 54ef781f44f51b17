/* SPDX-License-Identifier: MIT */
/*
 * ptxas.h — PTX targets and the ptxas check (ptxas.c).
 */
#ifndef TJIT_PTXAS_H
#define TJIT_PTXAS_H

#include "../../internal.h"
#include "../pipeline.h"

/* The PTX target named by target ("sm_90", "sm_90a"), or by
 * $TJIT_PTX_TARGET when target is NULL, or sm_90 when that is unset too:
 * *sm as 10 * major + minor, *arch_specific 1 for the "a" suffix (the
 * architecture-specific features of exactly that chip; sm_90a is the
 * first). A malformed name, one below sm_80 or an "a" below sm_90 is
 * TJ_ERR_INVALID_ARG; who prefixes the message. */
TJI_FUNC tj_status tjj_ptx_target(const char *who, const char *target, int *sm, int *arch_specific);

/* Assembles ptx for sm_<sm> (sm_<sm>a with arch_specific) with the ptxas
 * program at path (searched in PATH if it has no '/'), output discarded.
 * A rejection, or a report that instructions were serialized (ptxas's
 * "Potential Performance Loss" lines), is TJ_ERR_COMPILE with ptxas's own
 * message, naming the kernel. */
TJI_FUNC tj_status tjj_ptxas_check(const char *path, const char *ptx, int sm, int arch_specific,
                                   const char *kernel_name);

/* tjj_ptxas_check, keeping what ptxas made in *cubin (malloc'ed, *cubin_size
 * bytes; NULL where it cannot be read back, which is no failure). */
TJI_FUNC tj_status tjj_ptxas_assemble(const char *path, const char *ptx, int sm, int arch_specific,
                                      const char *kernel_name, char **cubin, size_t *cubin_size);

/* The ptxas that checks every PTX compiled (TJIT_PTXAS), or NULL. */
TJI_FUNC const char *tjj_ptxas_path(void);

/* TJIT_PTXAS: assembles the PTX of artifact a, compiled from fn, for
 * TJIT_PTX_TARGET with ptxas: a's own PTX where it is for that target;
 * else PTX compiled here from a's layouts (a GPU artifact) or, for a CPU
 * artifact, by the GPU pipeline for num_warps and the arguments spec
 * describes. A GPU artifact keeps what ptxas made of its PTX (a->cubin). */
TJI_FUNC tj_status tjj_check_with_ptxas(tji_func *fn, tjj_artifact *a, int num_warps,
                                        uint64_t spec);

#endif
