/* SPDX-License-Identifier: MIT */
/*
 * aot_fake_record.h — what the stand-in libcuda.so.1 (aot_fake_cuda.c)
 * records and its test driver (aot_fake_driver.c) reads through dlsym: one
 * declaration, so that both sides agree on the layout.
 */
#ifndef TJIT_AOT_FAKE_RECORD_H
#define TJIT_AOT_FAKE_RECORD_H

#include <stdint.h>

typedef struct fake_record {
    int loads, unloads, cubin_loads, ptx_loads, launches, attribute_sets;
    const void *function;
    unsigned grid[3], block[3], shared;
    uint64_t param[6];
} fake_record;

#endif
