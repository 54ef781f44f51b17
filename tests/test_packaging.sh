#!/bin/sh
# SPDX-License-Identifier: MIT
# test_packaging.sh — what a program that uses tjit finds of it once it is
# installed: tjit.pc for pkg-config (a static link's flags too) and the
# CMake package (find_package(tjit), the tjit::tjit target). tjit is
# installed into a temporary DESTDIR, and a program is built against each
# and run, with the compiler and flags tjit was built with (TJIT_CC,
# TJIT_CFLAGS: make check passes them; a sanitizer's runtime must come
# first in a program that loads a sanitized libtjit). Without cmake its
# points are skipped.
set -u
cc=${TJIT_CC:-cc}
cflags=${TJIT_CFLAGS:-}
top=$(pwd) # the build folder, where make check runs this
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tjit-packaging-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; sed 's/^/#   /' "$tmp/log" 2>/dev/null | tail -n 20; }
check() { # check DESCRIPTION COMMAND...: a point, its output in $tmp/log
    what=$1
    shift
    if "$@" >"$tmp/log" 2>&1; then ok "$what"; else not_ok "$what"; fi
}
echo "1..7"

# make install into the DESTDIR, from a make of its own (not check's jobs)
check "make install DESTDIR=... installs tjit" \
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$top" install DESTDIR="$root"
prefix=$(PKG_CONFIG_PATH=$top pkg-config --variable=prefix tjit)
libdir=$(PKG_CONFIG_PATH=$top pkg-config --variable=libdir tjit)

# pkg-config on the installed tjit.pc, its paths moved under the DESTDIR
pc() { PKG_CONFIG_PATH=$root$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root pkg-config "$@"; }
static_ok() {
    flags=$(pc --static --libs tjit) && echo "$flags" &&
        case " $flags " in *" -ltjit "*) ;; *) exit 1 ;; esac &&
        case " $flags " in *" -lffi "*) ;; *) exit 1 ;; esac &&
        pc --print-requires-private tjit | grep -qx libffi
}
check "the installed tjit.pc: -ltjit, and libffi by Requires.private for a static link" static_ok

cat >"$tmp/main.c" <<'EOF'
#include <stdio.h>
#include <tjit.h>
int main(void)
{
    tj_device *dev;
    if (tj_device_open(&dev, TJ_DEVICE_CPU, 0) != TJ_OK)
        return 1;
    printf("tjit %s on %s\n", tj_version(), tj_device_name(dev));
    tj_device_close(dev);
    return 0;
}
EOF
run_pc_program() {
    $cc $cflags -o "$tmp/by_pc" "$tmp/main.c" $(pc --cflags --libs tjit) &&
        LD_LIBRARY_PATH=$root$libdir "$tmp/by_pc" | grep -q '^tjit '
}
check "a program built with pkg-config's flags links and runs" run_pc_program

if ! command -v cmake >/dev/null 2>&1; then
    for what in "find_package(tjit) builds and runs a program (no cmake)" \
        "find_package(tjit) of a newer version fails (no cmake)" \
        "find_package(tjit) sees the version (no cmake)" \
        "the installed tree moved elsewhere still works (no cmake)"; do
        n=$((n + 1))
        echo "ok $n # SKIP $what"
    done
    exit 0
fi
mkdir -p "$tmp/cmake"
cat >"$tmp/cmake/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(uses_tjit C)
find_package(tjit ${WANT} REQUIRED)
message(STATUS "tjit_VERSION=${tjit_VERSION}")
add_executable(by_cmake ../main.c)
target_link_libraries(by_cmake PRIVATE tjit::tjit)
EOF
cmake_build() { # cmake_build FOLDER PREFIX WANT (what cmake says also in FOLDER.out)
    cmake -S "$tmp/cmake" -B "$1" -DCMAKE_PREFIX_PATH="$2" -DWANT="$3" -DCMAKE_C_COMPILER="$cc" \
        -DCMAKE_C_FLAGS="$cflags" >"$1.out" 2>&1 &&
        cmake --build "$1" >>"$1.out" 2>&1
    status=$?
    cat "$1.out"
    return $status
}
run_cmake_program() {
    cmake_build "$tmp/b1" "$root$prefix" 0.1 && LD_LIBRARY_PATH=$root$libdir "$tmp/b1/by_cmake" | grep -q '^tjit '
}
check "find_package(tjit 0.1) builds a program against tjit::tjit, and it runs" run_cmake_program
newer_fails() { ! cmake_build "$tmp/b2" "$root$prefix" 9.0; }
check "find_package(tjit 9.0) fails: the installed version is older" newer_fails
check "find_package(tjit) reports tjit.pc's version" \
    grep -q "tjit_VERSION=$(PKG_CONFIG_PATH=$top pkg-config --modversion tjit)\$" "$tmp/b1.out"
moved() {
    mv "$root" "$tmp/elsewhere" && cmake_build "$tmp/b3" "$tmp/elsewhere$prefix" 0.1 &&
        LD_LIBRARY_PATH=$tmp/elsewhere$libdir "$tmp/b3/by_cmake" | grep -q '^tjit '
}
check "the installed tree, moved elsewhere, is still found (paths relative to the config)" moved
