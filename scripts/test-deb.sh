#!/bin/sh
# SPDX-License-Identifier: MIT
# test-deb.sh — the Debian packages (debian/) build and work. The source
# tree (its tracked and untracked files, not what git ignores: no build of
# it comes along) is copied to a temporary folder, where
# `dpkg-buildpackage -b -us -uc` builds libtjit0, libtjit-dev and
# tjit-tools; their contents are checked with dpkg-deb -c (the SONAME'd
# library in libtjit0; headers, .so link, tjit.pc, CMake package and man
# pages in libtjit-dev), then the library's SONAME, the shlibs debhelper
# wrote and the symbols, which must be debian/libtjit0.symbols exactly.
# The packages are unpacked into a scratch root with dpkg -x, a small
# program with a kernel is built there through pkg-config (and CMake,
# where installed) and run on the CPU (TJIT_DEVICE=cpu), and man finds a
# function's page in that root.
#
# The build runs with DEB_BUILD_OPTIONS="nocheck parallel=2" and the
# nocheck build profile (-Pnocheck: the test suite's own build dependencies
# need not be installed): make check inside dpkg-buildpackage is the whole
# test suite, more than ten minutes on two cores, and CI runs it anyway. The whole script
# takes a few minutes (the library's build). It needs debhelper, dpkg-dev
# and the Build-Depends of debian/control; CI does not run it.
#
# Usage: scripts/test-deb.sh [--keep] — TAP on stdout; with --keep the
# temporary folder (the .debs, the build log) is kept and named.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
keep=no
[ "${1:-}" = --keep ] && keep=yes
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tjit-deb-XXXXXX") || exit 1
if [ "$keep" = yes ]; then echo "# kept in $tmp"; else trap 'rm -rf "$tmp"' EXIT; fi
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
    n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"
    sed 's/^/#   /' "$tmp/log" 2>/dev/null | tail -n 25
}
check() { # check DESCRIPTION COMMAND...: a point, its output in $tmp/log
    what=$1
    shift
    if "$@" >"$tmp/log" 2>&1; then ok "$what"; else not_ok "$what"; fi
}
echo "1..9"

copy_tree() {
    mkdir "$tmp/tjit" &&
        if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
            (cd "$src" && git ls-files -z --cached --others --exclude-standard |
                xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
                xargs -0 cp --parents -t "$tmp/tjit")
        else
            cp -a "$src/." "$tmp/tjit"
        fi
}
check "the source tree copied to $tmp/tjit" copy_tree

build() {
    cd "$tmp/tjit" &&
        DEB_BUILD_OPTIONS="nocheck parallel=2" dpkg-buildpackage -b -us -uc -Pnocheck \
            >"$tmp/build.log" 2>&1
    status=$?
    cd "$src" || return 1
    tail -n 25 "$tmp/build.log"
    return $status
}
check "dpkg-buildpackage -b -us -uc (nocheck) builds" build

arch=$(dpkg-architecture -qDEB_HOST_ARCH)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
version=$(cd "$src" && dpkg-parsechangelog -S Version)
deb() { echo "$tmp/${1}_${version}_$arch.deb"; }
debs_exist() {
    for p in libtjit0 libtjit-dev tjit-tools; do
        [ -f "$(deb $p)" ] || { echo "no $(deb $p)"; ls "$tmp"; return 1; }
    done
}
check "libtjit0, libtjit-dev and tjit-tools .debs exist" debs_exist

lib=usr/lib/$multiarch
holds() { # holds PACKAGE PATH...: each path is in the package
    p=$1
    shift
    dpkg-deb -c "$(deb "$p")" >"$tmp/$p.list" || return 1
    for f in "$@"; do
        grep -q " \./$f\( ->.*\)\{0,1\}\$" "$tmp/$p.list" || { echo "$p lacks $f"; cat "$tmp/$p.list"; return 1; }
    done
}
library_only() {
    dpkg-deb -c "$(deb libtjit0)" >"$tmp/libtjit0.list" || return 1
    cat "$tmp/libtjit0.list"
    grep -q " \./$lib/libtjit\.so\.0 -> libtjit\.so\.0\.0\.0\$" "$tmp/libtjit0.list" &&
        grep -q " \./$lib/libtjit\.so\.0\.0\.0\$" "$tmp/libtjit0.list" &&
        ! grep -q '\.h$\|\.pc$\|/cmake/\|/libtjit\.so\( \|$\)\|/bin/' "$tmp/libtjit0.list"
}
check "libtjit0 holds libtjit.so.0 and no development files" library_only
check "libtjit-dev holds the headers, the .so link, tjit.pc, the CMake package and the man pages" \
    holds libtjit-dev usr/include/tjit.h usr/include/tjit/tjit_macros.h usr/include/tjit/tjit_host.h "$lib/libtjit.so" \
    "$lib/pkgconfig/tjit.pc" "$lib/cmake/tjit/tjitConfig.cmake" "$lib/cmake/tjit/tjitConfigVersion.cmake" \
    usr/share/man/man3/tjit.3.gz usr/share/man/man3/tj_launch.3.gz usr/share/man/man3/tj_buffer_free.3.gz
check "tjit-tools holds tjit-opt and its man page" holds tjit-tools usr/bin/tjit-opt \
    usr/share/man/man1/tjit-opt.1.gz

root=$tmp/root
soname_and_shlibs() {
    for p in libtjit0 libtjit-dev tjit-tools; do dpkg -x "$(deb $p)" "$root" || return 1; done
    objdump -p "$root/$lib/libtjit.so.0" | grep -q 'SONAME *libtjit\.so\.0$' || return 1
    dpkg-deb -e "$(deb libtjit0)" "$tmp/control" && cat "$tmp/control/shlibs" &&
        grep -q '^libtjit 0 libtjit0' "$tmp/control/shlibs" &&
        grep -q '^ tj_launch@Base' "$tmp/control/symbols" || return 1
    # the library's exports, both ways (dpkg-gensymbols lets a symbol of the
    # version being built vanish from the list without a word)
    nm -D --defined-only "$root/$lib/libtjit.so.0" | awk '{ print $3 }' | sort >"$tmp/exported"
    sed -n 's/^ \([^ @]*\)@Base .*/\1/p' "$tmp/tjit/debian/libtjit0.symbols" | sort >"$tmp/listed"
    diff "$tmp/listed" "$tmp/exported"
}
check "unpacked with dpkg -x: SONAME libtjit.so.0; libtjit0's shlibs and symbols; the exports are debian/libtjit0.symbols" soname_and_shlibs

cat >"$tmp/scale.c" <<'EOF'
/* out[i] = 3 x[i] - 1 over a length that leaves a ragged last tile */
#include <stdio.h>
#include <tjit.h>

TJ_KERNEL(scale_kernel, TJ_PARAMS(TJ_PTR(x, f32), TJ_PTR(out, f32), TJ_SCALAR(n, i32)),
          TJ_CONSTS(TILE))
{
    tj_val i = tj_add(tj_mul(tj_program_id(0), TILE), tj_arange(0, TILE));
    tj_val in_range = tj_lt(i, n);
    tj_val v = tj_load(tj_add(x, i), .mask = in_range);
    tj_store(tj_add(out, i), tj_sub(tj_mul(v, 3), 1), .mask = in_range);
}

int main(void)
{
    enum { LEN = 1000, TILE = 256 };
    float x[LEN], out[LEN];
    for (int i = 0; i < LEN; i++)
        x[i] = (float)i;
    tj_device *dev;
    tj_buffer xb, ob;
    tj_launch_cfg cfg = {.grid = {(LEN + TILE - 1) / TILE}};
    if (tj_device_open(&dev, TJ_DEVICE_DEFAULT, 0) != TJ_OK ||
        tj_buffer_alloc(dev, sizeof x, &xb) != TJ_OK ||
        tj_buffer_alloc(dev, sizeof out, &ob) != TJ_OK ||
        tj_buffer_write(dev, xb, 0, x, sizeof x) != TJ_OK ||
        scale_kernel_launch(dev, &cfg, xb, ob, LEN, TILE) != TJ_OK ||
        tj_buffer_read(dev, ob, 0, out, sizeof out) != TJ_OK) {
        fprintf(stderr, "%s\n", tj_last_error());
        return 1;
    }
    for (int i = 0; i < LEN; i++)
        if (out[i] != 3.0f * (float)i - 1.0f) {
            fprintf(stderr, "out[%d] = %g\n", i, out[i]);
            return 1;
        }
    printf("tjit %s, %s: %d elements right\n", tj_version(), tj_device_name(dev), LEN);
    tj_device_close(dev);
    return 0;
}
EOF
# pkg-config on the unpacked tjit.pc, its paths moved under the root
pc() { PKG_CONFIG_PATH=$root/$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root pkg-config "$@"; }
by_pkg_config() {
    echo "flags: $(pc --cflags --libs tjit)" &&
        cc -std=gnu11 -o "$tmp/scale" "$tmp/scale.c" $(pc --cflags --libs tjit) &&
        TJIT_DEVICE=cpu LD_LIBRARY_PATH=$root/$lib "$tmp/scale" >"$tmp/scale.out" &&
        cat "$tmp/scale.out" && grep -q '^tjit .*, cpu .*: 1000 elements right$' "$tmp/scale.out" &&
        LD_LIBRARY_PATH=$root/$lib ldd "$tmp/scale" | grep "libtjit.so.0 => $root/$lib/libtjit.so.0"
}
check "a kernel program built through the unpacked tjit.pc runs on the CPU" by_pkg_config

man_and_cmake() {
    MANPATH=$root/usr/share/man man -P cat tj_buffer_free >"$tmp/man.txt" 2>&1 &&
        grep -q 'tj_buffer_free' "$tmp/man.txt" && grep -q '^SYNOPSIS' "$tmp/man.txt" ||
        { cat "$tmp/man.txt"; return 1; }
    "$root/usr/bin/tjit-opt" --help | grep -q '^usage: tjit-opt' || { echo "tjit-opt does not start"; return 1; }
    MANPATH=$root/usr/share/man man -P cat tjit-opt 2>&1 | grep -q 'run tjit.s compiler passes' ||
        { echo "man tjit-opt finds no page"; return 1; }
    command -v cmake >/dev/null 2>&1 || { echo "no cmake: find_package not tried"; return 0; }
    mkdir -p "$tmp/cmake" && cat >"$tmp/cmake/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(scale C)
find_package(tjit 0.1 REQUIRED)
add_executable(scale ../scale.c)
target_link_libraries(scale PRIVATE tjit::tjit)
EOF
    cmake -S "$tmp/cmake" -B "$tmp/cmake/build" -DCMAKE_PREFIX_PATH="$root/usr" &&
        cmake --build "$tmp/cmake/build" &&
        TJIT_DEVICE=cpu LD_LIBRARY_PATH=$root/$lib "$tmp/cmake/build/scale"
}
check "man tj_buffer_free, tjit-opt and find_package(tjit) work from the unpacked packages" man_and_cmake

[ "$failed" -eq 0 ]
