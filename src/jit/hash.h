/* SPDX-License-Identifier: MIT */
/*
 * hash.h — xxHash, the way every file of tjit that hashes includes it.
 *
 * tjit hashes with libxxhash (XXH3: the variant keys, the disk cache's
 * checksums, the ptxas verdicts' keys). A build that travels to a machine
 * without libxxhash (configure --enable-static-xxhash, for
 * scripts/gpu-pack.sh) compiles the hash into each file that uses it,
 * xxhash.h's own XXH_INLINE_ALL, and links no libxxhash at all: a file that
 * included <xxhash.h> without it would leave undefined references in
 * libtjit.so. So no file includes <xxhash.h> but this one.
 */
#ifndef TJIT_JIT_HASH_H
#define TJIT_JIT_HASH_H

#ifdef TJIT_XXHASH_INLINE
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

#endif
