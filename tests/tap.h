/* SPDX-License-Identifier: MIT */
/*
 * tap.h — a tiny Test Anything Protocol writer for tjit's test programs.
 *
 * Each test program prints one TAP stream on stdout: test points ("ok 3 -
 * what"), diagnostics ("# ..."), skips, and a plan. The plan is printed at
 * the end by tap_done() unless tap_plan() announced it first; both forms are
 * valid TAP, and a trailing plan lets a program count its points as it goes.
 * tap_done() returns the exit status: 0 only if every point passed and the
 * count matches an announced plan. A program that cannot go on prints
 * "Bail out!" with tap_bail_out(), which exits non-zero.
 *
 * Header only: every function is static inline, so a test program includes
 * it and links nothing more. stdout is flushed after each line so that the
 * stream stays in order with whatever the library prints itself.
 */
#ifndef TJIT_TESTS_TAP_H
#define TJIT_TESTS_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(__GNUC__)
#define TAP_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TAP_PRINTF(f, a)
#endif

typedef struct tap_state {
    int planned;   /* -1 until tap_plan() */
    int run;       /* points printed so far */
    int failed;
} tap_state;

static inline tap_state *tap__state(void)
{
    static tap_state state = {-1, 0, 0};
    return &state;
}

/* Announces the number of points up front. */
static inline void tap_plan(int n)
{
    tap__state()->planned = n;
    printf("1..%d\n", n);
    fflush(stdout);
}

static inline void tap__vdiag(const char *fmt, va_list ap)
{
    char line[4096];
    vsnprintf(line, sizeof line, fmt, ap);
    /* Each line of the message becomes its own "# " line. */
    for (char *p = line; *p;) {
        char *nl = p;
        while (*nl && *nl != '\n')
            nl++;
        printf("# %.*s\n", (int)(nl - p), p);
        p = *nl ? nl + 1 : nl;
    }
    fflush(stdout);
}

/* A diagnostic line (or several, one per '\n' in the message). */
static inline TAP_PRINTF(1, 2) void tap_diag(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tap__vdiag(fmt, ap);
    va_end(ap);
}

/* One test point; returns pass so that callers can add details on failure. */
static inline TAP_PRINTF(2, 3) int tap_ok(int pass, const char *fmt, ...)
{
    tap_state *s = tap__state();
    char desc[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(desc, sizeof desc, fmt, ap);
    va_end(ap);
    /* '#' in a description would start a directive: replace it. */
    for (char *p = desc; *p; p++)
        if (*p == '#' || *p == '\n')
            *p = ' ';
    s->run++;
    if (!pass)
        s->failed++;
    printf("%sok %d - %s\n", pass ? "" : "not ", s->run, desc);
    fflush(stdout);
    return pass;
}

/* n points skipped for a reason (they count as passed). */
static inline void tap_skip(int n, const char *reason)
{
    tap_state *s = tap__state();
    for (int i = 0; i < n; i++) {
        s->run++;
        printf("ok %d # SKIP %s\n", s->run, reason);
    }
    fflush(stdout);
}

/* Stops the whole run: the harness reports it as an error. */
static inline TAP_PRINTF(1, 2) void tap_bail_out(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("Bail out! %s\n", msg);
    fflush(stdout);
    exit(1);
}

/* Prints the trailing plan if none was announced, and the exit status:
 * 0 if all points ran and passed. */
static inline int tap_done(void)
{
    tap_state *s = tap__state();
    if (s->planned < 0) {
        printf("1..%d\n", s->run);
    } else if (s->planned != s->run) {
        tap_diag("planned %d tests but ran %d", s->planned, s->run);
        fflush(stdout);
        return 1;
    }
    if (s->failed)
        tap_diag("%d of %d tests failed", s->failed, s->run);
    fflush(stdout);
    return s->failed ? 1 : 0;
}

#endif
