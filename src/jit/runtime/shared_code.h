/* SPDX-License-Identifier: MIT */
/*
 * shared_code.h — one GPU compile per variant and architecture in a process
 * (shared_code.c): the contract between the pipeline, which asks before it
 * compiles a launch's GPU variant, and device_gpu.c, which publishes what
 * it compiled once its device has loaded it, and releases it with the
 * variant.
 */
#ifndef TJIT_SHARED_CODE_H
#define TJIT_SHARED_CODE_H

#include "../pipeline.h"

typedef enum tjj_shared_claim {
    TJJ_SHARED_OFF,  /* not shared (a CPU artifact; TJIT_DUMP asks for a compile's output) */
    TJJ_SHARED_HIT,  /* the started artifact has the code: one reference taken */
    TJJ_SHARED_MINE  /* no device has it: the caller compiles, then publishes or abandons */
} tjj_shared_claim;

/* For the started artifact a (its key set): the code another device of
 * the process compiled (waiting for a compile in flight), or the claim to
 * compile it. */
TJI_FUNC tjj_shared_claim tjj_shared_code_begin(tjj_artifact *a);
/* The claimed code, compiled and loaded: shared, with one reference (the
 * publisher's variant's). */
TJI_FUNC void tjj_shared_code_publish(const tjj_artifact *a);
/* The claim given up (the compile failed): a waiting device compiles. */
TJI_FUNC void tjj_shared_code_abandon(const tjj_stable_key *key);
/* A variant holding a reference is freed; the last one frees the code. */
TJI_FUNC void tjj_shared_code_release(const tjj_stable_key *key);

/* What the process has done (for tests): codes published, hits, and the
 * entries held now. */
typedef struct tjj_shared_code_counts {
    uint64_t published, hits, held;
} tjj_shared_code_counts;
TJI_FUNC tjj_shared_code_counts tjj_shared_code_count(void);

#endif
