/* SPDX-License-Identifier: MIT */
/*
 * cpu_backend.h — how the parts of the CPU back end talk to each other
 * (private to src/jit/cpu/; the rest of tjit sees only jit.h).
 *
 *   cpu_kernel.c and the op-family files of cpu_codegen.h
 *                  tile IR + fusion plan -> one LLVM module with the kernel
 *   cpu_orc.c      the process-wide LLJIT: verify, optimize, link, look up
 *   cpu_runtime.c  C functions the compiled code calls, and their names
 */
#ifndef TJIT_CPU_BACKEND_H
#define TJIT_CPU_BACKEND_H

#include <llvm-c/Core.h>

#include "../../passes/passes.h"
#include "../jit.h"

/* What the module is compiled for: the JIT's target, so that data layout,
 * triple and the per-function target attributes agree with the code ORC
 * will generate. */
typedef struct tjj_cpu_target {
    const char *triple;
    const char *data_layout;
    const char *cpu;
    const char *features;
} tjj_cpu_target;

/* Emits the kernel function `symbol` (jit.h's CPU ABI) into a new module in
 * ctx. On success *module is the caller's and *scratch_bytes is the per-thread
 * scratch it needs; on failure nothing is left to free. */
TJI_FUNC tj_status tjj_cpu_codegen(const tji_func *fn, const tjp_plan *plan,
                                   LLVMContextRef ctx, const tjj_cpu_target *target,
                                   const char *symbol, LLVMModuleRef *module,
                                   size_t *scratch_bytes);

/* The symbols compiled code may reference besides libm and libc, bound by
 * address; the list ends with a NULL name. */
typedef struct tjj_cpu_symbol {
    const char *name;
    void *address;
} tjj_cpu_symbol;
TJI_FUNC extern const tjj_cpu_symbol tjj_cpu_runtime_symbols[];

#endif
