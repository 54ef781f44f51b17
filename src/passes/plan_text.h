/* SPDX-License-Identifier: MIT */
/*
 * plan_text.h — what the printer (plan_text.c) and the reader
 * (plan_parse.c) of the plan's annotations share: the state of one print
 * or parse, and the names of shared-step kinds. Private to those two files.
 */
#ifndef TJIT_PLAN_TEXT_H
#define TJIT_PLAN_TEXT_H

#include "passes.h"

/* A #shared<...> read: the step as the text gives it, and where. */
typedef struct shared_note {
    int32_t op;
    int line, col;
    int allocated;           /* offset= and bytes= given */
    tjp_shared_step step;
} shared_note;

typedef struct text_state {
    /* printing */
    const tjp_layout_plan *plan;
    const tjp_axis_info_result *axis;
    const tjp_coalesce_result *coalesce;
    const tjp_plan *cpu;
    tjp_layout *aliases;      /* distinct layouts, in order of appearance */
    int naliases;
    int32_t *alias_of;        /* per value id: alias number (1-based), 0 none */
    /* parsing */
    char (*names)[16];        /* parsed alias names */
    int num_warps;            /* 0: no #num_warps line read */
    tjp_layout *value_layout; /* per value id */
    uint8_t *has_layout;
    int32_t values_cap;
    uint8_t *vector, *addr_run;   /* per op */
    uint8_t *barrier;         /* per op: the #barrier<...> flags read */
    tjp_dot_choice *dot;      /* per op: the #dot<...> read (form 0: none) */
    int32_t *op_line, *op_col, *barrier_col; /* per op: where its annotations are */
    int32_t ops_cap;
    int32_t nbarrier_notes;
    shared_note *notes;
    int nnotes;
    int has_shared_bytes, has_barriers;  /* the header lines read */
    uint64_t shared_bytes;
    int64_t barriers;
    const char *barriers_at;  /* the #barriers line, for its error */
    int has_warp_spec;        /* a #warp_spec line read: its numbers, where */
    tjp_warp_spec warp_spec;
    const char *warp_spec_at;
    uint8_t *role;            /* per op: the #role<...> read, 1 + TJP_ROLE_* bits; 0: none */
    const char *pairs_at;     /* the #pairs line read, or NULL */
    uint8_t *peer;            /* per op: #peer read */
    tjp_layout_plan *out;
    const char *text;         /* all of it, for columns */
    const char *source;       /* names the text in errors */
} text_state;

/* The parse's per-value and per-op arrays grown to hold id / op
 * (plan_parse.c); the plan built from what was read, checked
 * (plan_finish.c: tji_text_hooks' finish). */
TJI_FUNC void tjp_text_grow_values(text_state *t, int32_t id);
TJI_FUNC void tjp_text_grow_ops(text_state *t, int32_t op);
TJI_FUNC int tjp_text_finish(void *ctx, tji_func *fn);

/* "none", "convert", ... by tjp_shared_step kind; "none", "consumer",
 * "producer", "both" by TJP_ROLE_* bits. */
TJI_FUNC extern const char *const tjp_text_step_kinds[];
TJI_FUNC extern const char *const tjp_text_roles[];

#endif
