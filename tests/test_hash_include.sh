#!/bin/sh
# SPDX-License-Identifier: MIT
# test_hash_include.sh — every file that hashes includes xxHash through
# src/jit/hash.h, never <xxhash.h> itself. configure --enable-static-xxhash
# (the build scripts/gpu-pack.sh makes for the GPU machine, which has no
# libxxhash) links no libxxhash and relies on hash.h compiling the hash into
# each file; one direct include left libtjit.so with undefined XXH3 symbols
# (the ptxas verdicts' keys, found when a package failed to link).
srcdir=${srcdir:-.}
echo "1..1"
direct=$(grep -rlE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<xxhash\.h>' \
             "$srcdir/src" "$srcdir/tests" "$srcdir/tools" "$srcdir/bench" "$srcdir/samples" 2>/dev/null |
         grep -v '/src/jit/hash\.h$')
if [ -z "$direct" ]; then
    echo "ok 1 - only src/jit/hash.h includes <xxhash.h>"
else
    echo "not ok 1 - files that include <xxhash.h> themselves (include src/jit/hash.h):"
    echo "$direct" | sed 's/^/# /'
fi
