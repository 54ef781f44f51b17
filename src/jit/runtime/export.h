/* SPDX-License-Identifier: MIT */
/*
 * export.h — what the two ahead-of-time exports share: tj_kernel_export_c
 * (export_c.c, the GPU) and tj_kernel_export_cpu (export_cpu.c).
 */
#ifndef TJIT_EXPORT_H
#define TJIT_EXPORT_H

#include "../../internal.h"

/* The C type a launcher takes for a parameter: pointer for pointers; a
 * scalar as jit.h's ABI passes it (f16/bf16 and the 8-bit floats as their
 * bits, i1 as a byte); NULL for a dtype tjit does not know. */
TJI_FUNC const char *tjj_export_c_type(const tj_param_desc *p, const char *pointer);
/* The launcher's name: the last component of output, which must be a C
 * identifier (else TJ_ERR_INVALID_ARG, who prefixing the message). */
TJI_FUNC tj_status tjj_export_launcher_name(const char *who, const char *output, const char **name);
/* Refuses a NULL kernel or options, or options of another size. */
TJI_FUNC tj_status tjj_export_check_args(const char *who, const tj_kernel *kernel, const tj_export_opts *opts);
/* Writes size bytes of data to path, replacing it. */
TJI_FUNC tj_status tjj_export_write_file(const char *who, const char *path, const void *data, size_t size);

#endif
