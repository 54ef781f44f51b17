/* SPDX-License-Identifier: MIT */
/*
 * plan_scan.h — the token level of plan_parse.c: a cursor over one line of
 * annotation text and the small readers of words, numbers and ", key"
 * items the grammar is written in. Each reader takes what it names and
 * moves on, or leaves the cursor and returns 0; bad() records what was
 * expected and where, which the parse reports as line:column. Private to
 * plan_parse.c, kept apart so that the grammar reads without them.
 */
#ifndef TJIT_PLAN_SCAN_H
#define TJIT_PLAN_SCAN_H

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "passes.h"

typedef struct cursor {
    const char *s;
    const char **err, **at;
} cursor;

static inline void spaces(cursor *c)
{
    while (*c->s == ' ' || *c->s == '\t')
        c->s++;
}

static inline int bad(cursor *c, const char *what)
{
    *c->err = what;
    *c->at = c->s;
    return 0;
}

static inline int take(cursor *c, const char *word)
{
    spaces(c);
    size_t n = strlen(word);
    if (strncmp(c->s, word, n) != 0)
        return 0;
    c->s += n;
    return 1;
}

/* word, not followed by more of an instruction's name (".e5m2" after
 * "m16n8k32.e4m3"). */
static inline int take_word(cursor *c, const char *word)
{
    const char *at = c->s;
    if (!take(c, word))
        return 0;
    if (*c->s == '.' || isalnum((unsigned char)*c->s)) {
        c->s = at;
        return 0;
    }
    return 1;
}

static inline int need(cursor *c, const char *word, const char *what)
{
    return take(c, word) || bad(c, what);
}

static inline int number(cursor *c, long long lo, long long hi, long long *out, const char *what)
{
    spaces(c);
    char *end;
    if ((*c->s < '0' || *c->s > '9') && *c->s != '-')
        return bad(c, what);
    long long v = strtoll(c->s, &end, 10);
    if (end == c->s || v < lo || v > hi)
        return bad(c, what);
    c->s = end;
    *out = v;
    return 1;
}

/* ", key" next: taken; else nothing read. */
static inline int take_item(cursor *c, const char *key)
{
    const char *save = c->s;
    if (take(c, ",") && take(c, key))
        return 1;
    c->s = save;
    return 0;
}

/* An offset (lo 0) or a size (lo 1) in bytes. */
static inline int byte_number(cursor *c, long long lo, uint64_t *out)
{
    long long v;
    if (!number(c, lo, TJP_SHARED_MAX, &v, lo ? "a size in bytes (1..232448)"
                                              : "a byte offset (0..232448)"))
        return 0;
    *out = (uint64_t)v;
    return 1;
}

/* ", key=N". */
static inline int byte_item(cursor *c, const char *key, long long lo, uint64_t *out)
{
    return need(c, ",", "','") && need(c, key, key) && byte_number(c, lo, out);
}

#endif
