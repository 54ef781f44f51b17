/* SPDX-License-Identifier: MIT */
/*
 * internal.h — what every part of tjit shares and no user sees.
 *
 * The public/internal line follows Lua's: public names are tj_/TJ_ and
 * exported (TJ_API); everything else is compiled with hidden visibility, so
 * a name declared TJI_FUNC never leaves the shared library. Module prefixes:
 * tji_ (tile IR and builder), tjp_ (passes), tjj_ (JIT back ends and
 * runtime), tjf_ (libffi binding), tjs_ (support: errors, arenas).
 *
 * Errors: a failing internal function sets the thread's message with
 * tjs_error() and returns its status; the public entry point passes both on.
 */
#ifndef TJIT_INTERNAL_H
#define TJIT_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "tjit.h"

#define TJI_FUNC __attribute__((visibility("hidden")))
#define TJS_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* Sets the calling thread's error message and returns status. */
TJI_FUNC tj_status tjs_error(tj_status status, const char *fmt, ...) TJS_PRINTF(2, 3);
TJI_FUNC tj_status tjs_verror(tj_status status, const char *fmt, va_list ap);
TJI_FUNC void tjs_clear_error(void);

/* Allocation that reports out-of-memory instead of returning NULL silently:
 * these abort only if the process cannot even format a message. Callers that
 * can recover use plain malloc and report TJ_ERR_OUT_OF_MEMORY. */
TJI_FUNC void *tjs_xmalloc(size_t n);
TJI_FUNC void *tjs_xcalloc(size_t count, size_t size);
TJI_FUNC void *tjs_xrealloc(void *p, size_t n);
TJI_FUNC char *tjs_xstrdup(const char *s);
TJI_FUNC char *tjs_asprintf(const char *fmt, ...) TJS_PRINTF(1, 2);

/* A growable string, for printers and messages. */
typedef struct tjs_buf {
    char *data;
    size_t len, cap;
} tjs_buf;
TJI_FUNC void tjs_buf_printf(tjs_buf *b, const char *fmt, ...) TJS_PRINTF(2, 3);
TJI_FUNC void tjs_buf_free(tjs_buf *b);

/* An arena: many small allocations freed together (one per tile program). */
typedef struct tjs_arena tjs_arena;
TJI_FUNC tjs_arena *tjs_arena_new(void);
TJI_FUNC void *tjs_arena_alloc(tjs_arena *a, size_t n); /* zeroed, 16-aligned */
TJI_FUNC char *tjs_arena_strdup(tjs_arena *a, const char *s);
TJI_FUNC void tjs_arena_free(tjs_arena *a);

/* TJIT_DUMP=ir,llvm,... : is this stage asked for? */
TJI_FUNC int tjs_dump_enabled(const char *stage);

/* dtype facts shared by all stages */
TJI_FUNC int tjs_dtype_is_float(tj_dtype t);
TJI_FUNC int tjs_dtype_is_signed(tj_dtype t);   /* signed ints; not i1 */
TJI_FUNC int tjs_dtype_is_int(tj_dtype t);      /* all integers and i1 */
TJI_FUNC int tjs_dtype_bits(tj_dtype t);        /* i1: 1 */
TJI_FUNC int tjs_dtype_is_fp8(tj_dtype t);      /* f8e4m3, f8e5m2: floats kept as bytes */

#endif
