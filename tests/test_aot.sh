#!/bin/sh
# SPDX-License-Identifier: MIT
# test_aot.sh — a program built from an exported kernel needs neither tjit
# nor LLVM (tj_kernel_export_c, src/jit/runtime/export_c.c).
#
# tests/test_aot_export writes aot_vadd.h and aot_vadd.c (and aot_scalars.*,
# compiled too, and the CPU export aot_vadd_cpu.*, built into a program
# run here, without tjit or LLVM either); this script compiles them with tests/aot_driver.c using
# $TJIT_CC (configure's CC) and -Wall -Wextra -Werror, linked with -ldl
# -lpthread only, and checks that
# the program's dynamic dependencies name neither libtjit nor libLLVM;
# that the header goes with cuda.h included before it, where configure
# found cuda.h; that, where ptxas ran (TJIT_PTXAS), every variant carries a
# cubin (ptxas assembled its PTX, warnings of serialization failing the
# export); runs the launcher over a stand-in libcuda.so.1
# (tests/aot_fake_cuda.c) to check what it loads and launches for devices
# of several compute capabilities; then runs the program, which checks its
# results on a GPU and exits 77 where there is none: a skip.
tests=${TESTS_DIR:-tests}
src=${srcdir:-.}
cc=${TJIT_CC:-cc}
tmp=${TMPDIR:-/tmp}/tjit_aot.$$
mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' EXIT

n=0
status=0
ok() { # $1: 0 for a pass, $2: what
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then
        echo "ok $n - $2"
    else
        echo "not ok $n - $2"
        status=1
    fi
}

"$tests/test_aot_export" "$tmp" >"$tmp/export.log" 2>&1
ok $? "test_aot_export exports aot_vadd and aot_scalars"
sed 's/^/# /' "$tmp/export.log"

"$cc" $TJIT_CFLAGS -std=c11 -Wall -Wextra -Werror -I"$tmp" -o "$tmp/aot_driver" "$src/tests/aot_driver.c" \
    "$tmp/aot_vadd.c" -ldl -lpthread >"$tmp/cc.log" 2>&1
ok $? "the driver compiles and links with $cc, -ldl -lpthread only"
sed 's/^/# /' "$tmp/cc.log"

"$cc" $TJIT_CFLAGS -std=c11 -Wall -Wextra -Werror -I"$tmp" -c -o "$tmp/aot_scalars.o" "$tmp/aot_scalars.c" \
    >"$tmp/cc2.log" 2>&1
ok $? "aot_scalars.c (one variant, scalars of five dtypes) compiles cleanly"
sed 's/^/# /' "$tmp/cc2.log"

if [ -x "$tmp/aot_driver" ]; then
    deps=$(ldd "$tmp/aot_driver" 2>&1)
    echo "$deps" | sed 's/^/# ldd: /'
    echo "# size: $(wc -c <"$tmp/aot_driver") bytes"
    ! echo "$deps" | grep -Eq 'libtjit|libLLVM|libffi|not found'
    ok $? "the program needs neither libtjit nor LLVM"
else
    ok 1 "the program needs neither libtjit nor LLVM (not built)"
fi

if [ -n "$CUDA_INCLUDE" ] && [ -f "$CUDA_INCLUDE/cuda.h" ]; then
    printf '#include <cuda.h>\n#include "aot_vadd.h"\nCUresult (*f)(CUstream, unsigned, unsigned, unsigned, CUdeviceptr, CUdeviceptr, CUdeviceptr, int32_t, float) = aot_vadd;\n' \
        >"$tmp/with_cuda.c"
    "$cc" -std=c11 -Wall -Wextra -Werror -fsyntax-only -I"$CUDA_INCLUDE" -I"$tmp" "$tmp/with_cuda.c" \
        >"$tmp/cuda.log" 2>&1
    ok $? "the header goes with cuda.h included first, and its types are cuda.h's"
    sed 's/^/# /' "$tmp/cuda.log"
else
    n=$((n + 1))
    echo "ok $n # SKIP no cuda.h"
fi

if [ -n "$TJIT_PTXAS" ]; then
    cubins=$(grep -c '^static const unsigned char tjx_cubin_' "$tmp/aot_vadd.c")
    [ "$cubins" -eq 4 ]
    ok $? "ptxas assembled all four variants' PTX into cubins (found $cubins)"
else
    n=$((n + 1))
    echo "ok $n # SKIP no ptxas"
fi

# The CPU export: a program from aot_vadd_cpu.o and .c alone.
"$cc" $TJIT_CFLAGS -std=c11 -Wall -Wextra -Werror -I"$tmp" -o "$tmp/aot_cpu_driver" \
    "$src/tests/aot_cpu_driver.c" "$tmp/aot_vadd_cpu.c" "$tmp/aot_vadd_cpu.o" >"$tmp/cpu.log" 2>&1
ok $? "a program from the CPU export compiles and links with $cc, nothing else"
sed 's/^/# /' "$tmp/cpu.log"
if [ -x "$tmp/aot_cpu_driver" ]; then
    deps=$(ldd "$tmp/aot_cpu_driver" 2>&1)
    echo "$deps" | sed 's/^/# ldd: /'
    echo "# size: $(wc -c <"$tmp/aot_cpu_driver") bytes"
    ! echo "$deps" | grep -Eq 'libtjit|libLLVM|libffi|not found'
    ok $? "the CPU program needs neither libtjit nor LLVM"
    out=$("$tmp/aot_cpu_driver" 2>&1)
    ok $? "the CPU program's results, aligned and misaligned"
    echo "$out" | sed 's/^/# /'
fi

# The launcher's logic over a stand-in libcuda.so.1 (tests/aot_fake_cuda.c):
# the device it plays decides what is loaded. With cubins (ptxas ran), a
# 9.0 device gets sm_90a's, an 8.6 one sm_80's (same major), a 10.0 one
# sm_80's PTX (sm_90a runs on 9.0 alone); a 7.5 device nothing.
mkdir -p "$tmp/fake"
"$cc" $TJIT_CFLAGS -std=c11 -Wall -Wextra -Werror -shared -fPIC -o "$tmp/fake/libcuda.so.1" \
    "$src/tests/aot_fake_cuda.c" >"$tmp/fake.log" 2>&1 &&
"$cc" $TJIT_CFLAGS -std=c11 -Wall -Wextra -Werror -I"$tmp" -o "$tmp/aot_fake_driver" \
    "$src/tests/aot_fake_driver.c" "$tmp/aot_vadd.c" -ldl -lpthread >>"$tmp/fake.log" 2>&1
ok $? "the stand-in driver and its program build"
sed 's/^/# /' "$tmp/fake.log"
binary=ptx
[ -n "$TJIT_PTXAS" ] && binary=cubin
for case in "90 $binary" "86 $binary" "100 ptx" "75 none"; do
    set -- $case
    out=$(FAKE_CUDA_CC=$1 LD_LIBRARY_PATH="$tmp/fake" "$tmp/aot_fake_driver" "$2" 2>&1)
    ok $? "a device of compute capability $1: the launcher loads $2"
    [ -n "$out" ] && echo "$out" | sed 's/^/# /'
done

if [ -x "$tmp/aot_driver" ]; then
    out=$("$tmp/aot_driver" 2>&1)
    rc=$?
    echo "$out" | sed 's/^/# /'
    n=$((n + 1))
    case $rc in
        0) echo "ok $n - the exported kernel's results on the GPU, aligned and misaligned" ;;
        77) echo "ok $n # SKIP no GPU" ;;
        *) echo "not ok $n - the exported kernel's results on the GPU (exit $rc)"; status=1 ;;
    esac
fi
echo "1..$n"
exit $status
