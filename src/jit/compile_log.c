/* SPDX-License-Identifier: MIT */
/*
 * compile_log.c — TJIT_LOG and the stage clock of a compile
 * (compile_log.h says what they are for).
 *
 * The clock is CLOCK_MONOTONIC: wall-clock time can jump (NTP, a user
 * setting the date) and a stage must never come out negative. A compile
 * line is formatted whole and written with one fputs, so that the lines
 * of compiles running on several threads at once do not interleave.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "compile_log.h"

double tjj_monotonic_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void tjj_stages_begin(tjj_stage_times *t)
{
    if (!t)
        return;
    t->n = 0;
    t->start = t->mark = tjj_monotonic_seconds();
}

void tjj_stage_done(tjj_stage_times *t, const char *name)
{
    if (!t)
        return;
    double now = tjj_monotonic_seconds();
    int i = 0;
    while (i < t->n && strcmp(t->stage[i].name, name) != 0)
        i++;
    if (i == t->n) {
        if (t->n == TJJ_MAX_STAGES)
            i = t->n - 1; /* more stages than the table holds: the last one absorbs them */
        else
            t->stage[t->n++] = (tjj_stage){name, 0};
    }
    t->stage[i].seconds += now - t->mark;
    t->mark = now;
}

tj_status tjj_timed(tjj_stage_times *t, const char *name, tj_status st)
{
    tjj_stage_done(t, name);
    return st;
}

/* --- TJIT_LOG ------------------------------------------------------------ */

static const char *const known_words[] = {"compile"};
enum { NKNOWN = sizeof known_words / sizeof *known_words };

static int is_known(const char *word, size_t len)
{
    for (int k = 0; k < NKNOWN; k++)
        if (strlen(known_words[k]) == len && strncmp(word, known_words[k], len) == 0)
            return 1;
    return 0;
}

/* The first unknown word of the process's TJIT_LOG is reported, once. */
static void warn_unknown(const char *word, size_t len)
{
    static atomic_flag warned = ATOMIC_FLAG_INIT;
    if (atomic_flag_test_and_set(&warned))
        return;
    char known[128] = "";
    for (int k = 0; k < NKNOWN; k++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", k ? ", " : "", known_words[k]);
    fprintf(stderr, "tjit: TJIT_LOG: unknown word '%.*s' ignored (known: %s)\n", (int)len, word, known);
}

int tjj_log_enabled(const char *word)
{
    const char *env = getenv("TJIT_LOG");
    if (!env || !*env)
        return 0;
    int found = 0;
    size_t n = strlen(word);
    for (const char *p = env; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, word, n) == 0)
            found = 1;
        else if (len && !is_known(p, len))
            warn_unknown(p, len);
        p += len + (p[len] == ',');
    }
    return found;
}

void tjj_log_compile(const char *facts, const tjj_stage_times *t)
{
    double total = tjj_monotonic_seconds() - t->start;
    tjs_buf line = {0};
    tjs_buf_printf(&line, "tjit compile: %s", facts);
    for (int i = 0; i < t->n; i++)
        tjs_buf_printf(&line, " | %s %.3f", t->stage[i].name, t->stage[i].seconds * 1e3);
    tjs_buf_printf(&line, " | total %.3f ms\n", total * 1e3);
    fputs(line.data, stderr);
    tjs_buf_free(&line);
}
