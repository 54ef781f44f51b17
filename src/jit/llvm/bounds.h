/* SPDX-License-Identifier: MIT */
/*
 * bounds.h — the bounds-checked mode, across the stack.
 *
 * A launch with TJIT_CHECK_BOUNDS=1 (or tj_launch_cfg.check_bounds) runs a
 * variant compiled with tji_func.check_bounds set, cached apart from the
 * unchecked one. In it, both back ends check every load, store and atomic
 * lane whose mask holds against the buffers its pointer may point into
 * (src/passes/provenance.c, tjp_find_provenance): a lane outside all of them is turned off — the access is
 * not performed, a load reads its `other` — and the first such lane of the
 * launch is written into a failure record, the same tjj_gpu_assert a device
 * assert fills (jit.h), by a compare-and-swap on its `failed` word. The
 * launcher turns the record into TJ_ERR_BOUNDS with tjj_bounds_message: on
 * the CPU when the launch returns, on a GPU at the next synchronize, as it
 * does for device asserts.
 *
 * A buffer's base is its pointer parameter (tjit has no views: a pointer
 * parameter is the start of its buffer); its size in bytes comes with the
 * launch: on the CPU through tjj_cpu_rt.buffer_sizes, on a GPU as one extra
 * i64 kernel parameter per pointer parameter, after the assert record.
 */
#ifndef TJIT_BOUNDS_H
#define TJIT_BOUNDS_H

#include <llvm-c/Core.h>

#include "../jit.h"

/* --- bounds_check.c: the checks, emitted by either back end ------------------- */

typedef struct tjj_bounds_gen tjj_bounds_gen;

/* The CPU kernel's checks: b is the program function's builder, positioned
 * in its entry block (the sizes are loaded there); ssa holds the
 * parameters' values (cpu/cpu_kernel.c's ssa array). */
TJI_FUNC tjj_bounds_gen *tjj_bounds_new_cpu(const tji_func *fn, LLVMContextRef ctx, LLVMBuilderRef b,
                                            LLVMValueRef *ssa, LLVMValueRef rt, const LLVMValueRef pid[3]);
/* The GPU kernel's: sizes are parameters first_size.. of func (one per
 * pointer parameter, tjj_bounds_nbuffers of them); record is the assert
 * record parameter; scope the sync scope of its compare-and-swap. */
TJI_FUNC tjj_bounds_gen *tjj_bounds_new_gpu(const tji_func *fn, LLVMContextRef ctx, LLVMBuilderRef b,
                                            LLVMValueRef *ssa, LLVMValueRef func, unsigned first_size,
                                            LLVMValueRef record, const LLVMValueRef pid[3],
                                            unsigned scope);
TJI_FUNC void tjj_bounds_free(tjj_bounds_gen *bg);
/* Pointer parameters of fn: the extra parameters of a checked GPU kernel. */
TJI_FUNC int tjj_bounds_nbuffers(const tji_func *fn);

/* Emitted at b: the condition of an access of `bytes` (elements of
 * elem_bytes) at addr, an address of pointer value ptr_id, under cond
 * (NULL: always): cond and the access inside one of ptr_id's buffers. A
 * lane where cond holds and the access is outside is remembered for
 * tjj_bounds_flush (the first of the op's accesses, in emission order). */
TJI_FUNC LLVMValueRef tjj_bounds_check(tjj_bounds_gen *bg, LLVMBuilderRef b, int32_t ptr_id,
                                       LLVMValueRef addr, uint64_t bytes, uint64_t elem_bytes,
                                       LLVMValueRef cond);
/* Emitted at b: if an access checked since the last flush was outside,
 * records it as a violation by op (op index) unless one is recorded. */
TJI_FUNC void tjj_bounds_flush(tjj_bounds_gen *bg, LLVMBuilderRef b, int32_t op);

/* --- bounds_check.c: the launcher's side ------------------------------------------ */

/* Is a launch with this option checked? (TJ_CHECK_BOUNDS_DEFAULT: as
 * TJIT_CHECK_BOUNDS says.) Invalid options are the caller's to refuse. */
TJI_FUNC int tjj_bounds_wanted(tj_check_bounds option);

/* What a violation's message needs of a checked variant, kept after its
 * tile program is freed: each memory op's line, name, dtype and buffers. */
typedef struct tjj_bounds_sites tjj_bounds_sites;
TJI_FUNC tjj_bounds_sites *tjj_bounds_sites_new(const tji_func *fn);
TJI_FUNC void tjj_bounds_sites_free(tjj_bounds_sites *s);
/* The message of the violation rec records (malloc'ed), or NULL if rec.op
 * is no memory op of the variant (then it is a device assert's record). */
TJI_FUNC char *tjj_bounds_message(const tjj_bounds_sites *s, const tj_kernel *kernel,
                                  const tjj_gpu_assert *rec);

#endif
