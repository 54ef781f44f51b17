/* SPDX-License-Identifier: MIT */
/*
 * compile_log.h — seeing where a compile's time goes (TJIT_LOG=compile).
 *
 * A compile is a straight list of stages: the kernel body's build, each
 * pass, LLVM IR generation, LLVM's optimization, code emission, ptxas,
 * the driver's load. A tjj_stage_times rides along with the compile (the
 * variant cache makes one, the pipeline and back ends add to it) and each
 * stage, when it returns, records the time since the previous one ended:
 * tjj_timed wraps a call's status, so a pipeline line stays one call.
 * The stages therefore tile the compile without overlapping, and their sum
 * never exceeds the total. Every function takes NULL for "not timed", so a
 * compile nobody watches pays nothing but a pointer test.
 *
 * TJIT_LOG is a comma-separated list of words, like TJIT_DUMP; "compile"
 * is the only word yet. An unknown word is reported once per process, on
 * stderr, and ignored: an environment variable cannot fail a call.
 */
#ifndef TJIT_COMPILE_LOG_H
#define TJIT_COMPILE_LOG_H

#include "../internal.h"

enum { TJJ_MAX_STAGES = 40 };

typedef struct tjj_stage {
    const char *name; /* a string literal: stages keep the pointer */
    double seconds;
} tjj_stage;

typedef struct tjj_stage_times {
    double start;     /* monotonic seconds when the compile began */
    double mark;      /* ... when the last stage recorded ended */
    int n;
    tjj_stage stage[TJJ_MAX_STAGES];
} tjj_stage_times;

/* CLOCK_MONOTONIC, in seconds. */
TJI_FUNC double tjj_monotonic_seconds(void);
/* The compile starts now. */
TJI_FUNC void tjj_stages_begin(tjj_stage_times *t);
/* Stage name ended now: it took the time since the last mark. A name seen
 * before adds to its entry (the checks after every pass add up). */
TJI_FUNC void tjj_stage_done(tjj_stage_times *t, const char *name);
/* tjj_stage_done(t, name), then st: `st = tjj_timed(t, "coalesce", pass(...))`. */
TJI_FUNC tj_status tjj_timed(tjj_stage_times *t, const char *name, tj_status st);

/* Is word in TJIT_LOG? */
TJI_FUNC int tjj_log_enabled(const char *word);
/* One line on stderr: "tjit compile: FACTS | stage ms | ... | total ms". */
TJI_FUNC void tjj_log_compile(const char *facts, const tjj_stage_times *t);

#endif
