#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# gpu-pack.sh — builds tjit for the GPU machine and stages it in carry/.
#
# The GPU machine (Ubuntu 24.04, glibc 2.39) has the NVIDIA driver but no
# LLVM, and it gets only the repository's working tree plus the folders a
# run names in `carry` (64 MiB in all). So this script, run here (no GPU
# needed), builds a configuration with LLVM and libxxhash linked statically
# into libtjit.so (configure --enable-static-llvm --enable-static-xxhash:
# the GPU machine may lack both; linked --as-needed so that
# LLVM's optional system libraries drop out), builds the tests, samples and
# benchmarks, checks that nothing needs libLLVM, and packs the real programs
# (out of libtool's .libs/) and the stripped libtjit.so.0 into
# carry/tjit-gpu.tar.xz with the lists of tests to run. Shared libraries that
# libtjit needs beyond glibc and the C++ runtime travel too, under
# fallback-lib/, for scripts/gpu-run.sh to use only where the machine lacks
# them. This machine's glibc must not be newer than the GPU machine's; the
# script prints the newest symbol versions the programs need.
#
# The static link needs LLVM's compression libraries as archives: on Debian,
# apt-get install libzstd-dev zlib1g-dev (only this script needs them).
#
# Then, in one device run:  bash scripts/gpu-run.sh   with carry=["carry"].
#
#     usage: scripts/gpu-pack.sh        (TJIT_GPU_BUILD: the build folder,
#                                        default /tmp/tjit-gpu-build;
#                                        TJIT_BUILD_FROM: the commit BUILD-INFO
#                                        names, for a copy of the tree outside git)
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=${TJIT_GPU_BUILD:-/tmp/tjit-gpu-build}
jobs=$(nproc 2>/dev/null || echo 2)
carry=$src/carry
max_bytes=$((60 * 1024 * 1024)) # under the 64 MiB limit, with room for the tree

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'gpu-pack: %s\n' "$*" >&2; exit 1; }

[ -x "$src/configure" ] || die "no $src/configure: run autoreconf -fi in $src first"
mkdir -p "$build"
cd "$build"
# A build folder configured for another source tree would build that
# tree's sources (a package of the wrong commit): configure it anew.
if ! [ -f config.status ] || ! ./config.status --config | grep -q -- --enable-static-llvm ||
    ! ./config.status --config | grep -q -- --enable-static-xxhash ||
    [ "$(sed -n 's/^srcdir = //p' Makefile 2>/dev/null)" != "$src" ]; then
    say "configuring $build (--enable-static-llvm --enable-static-xxhash)"
    "$src/configure" --enable-static-llvm --enable-static-xxhash LDFLAGS="-Wl,--as-needed" >configure.out 2>&1 ||
        { tail -n 30 configure.out >&2; die "configure failed (see $build/config.log)"; }
fi

say "building the library, samples and benchmarks"
# Relinked every time: a link flag that changed in configure is no
# dependency of the library in make's eyes.
rm -f libtjit.la libtjit_core.la
make -j"$jobs" >make.out 2>&1 ||
    { grep -E -B3 -A6 'error:|\*\*\*' make.out | head -n 80 >&2; die "make failed (see $build/make.out)"; }
say "building the test programs"
make -j"$jobs" check TESTS= >make-check.out 2>&1 ||
    { grep -E -B3 -A6 'error:|\*\*\*' make-check.out | head -n 80 >&2; die "building the tests failed"; }

lib=$build/.libs/libtjit.so.0
[ -f "$lib" ] || die "no $lib"
if ldd "$lib" | grep -qi 'libLLVM'; then
    ldd "$lib" >&2
    die "libtjit.so.0 still needs libLLVM: the static link did not happen"
fi
if ldd "$lib" | grep -qi 'libxxhash'; then
    ldd "$lib" >&2
    die "libtjit.so.0 still needs libxxhash: the static link did not happen"
fi

# What make check runs and which programs exist, read from the Makefile.
lists=$(make -s --no-print-directory -f Makefile -f - tjit-print-lists <<'EOF'
tjit-print-lists:
	@echo TESTS $(TESTS)
	@echo PROGRAMS $(check_PROGRAMS) $(noinst_PROGRAMS)
EOF
)
tests=$(printf '%s\n' "$lists" | sed -n 's/^TESTS //p')
programs=$(printf '%s\n' "$lists" | sed -n 's/^PROGRAMS //p')

# Tests of the passes alone link the convenience library, so each holds a
# copy of LLVM (50 MB): they stay here, where make check runs them, unless
# a GPU twin (tests/gpu/NAME.gpu) needs them there.
twins=" $(echo $tests) "
for p in $programs; do
    name=$(basename "$p")
    case $twins in *" tests/gpu/$name.gpu "*) continue ;; esac
    if grep -q "^tests_${name}_LDADD = libtjit_core.la" "$src/Makefile.am"; then
        programs=$(printf '%s\n' $programs | grep -vx "$p")
        tests=$(printf '%s\n' $tests | grep -vx "$p")
    fi
done

stage=$(mktemp -d "${TMPDIR:-/tmp}/tjit-gpu-stage-XXXXXX")
trap 'rm -rf "$stage"' EXIT
root=$stage/tjit
mkdir -p "$root/lib" "$root/fallback-lib"

say "staging into $stage"
cp -L "$lib" "$root/lib/libtjit.so.0"
strip --strip-unneeded "$root/lib/libtjit.so.0"
for p in $programs; do
    real=$(dirname "$p")/.libs/$(basename "$p")
    [ -x "$real" ] || real=$p
    [ -x "$real" ] || die "no program $p"
    mkdir -p "$root/$(dirname "$p")"
    cp "$real" "$root/$p"
    strip --strip-unneeded "$root/$p"
done
printf '%s\n' $tests >"$root/tests.list"

# Libraries beyond glibc and the compiler's runtime, in case the GPU
# machine lacks one (gpu-run.sh adds them only then).
ldd "$lib" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' |
    while read -r soname path; do
        case $soname in
            libc.so.* | libm.so.* | libdl.so.* | librt.so.* | libpthread.so.* | ld-linux* | \
                libgcc_s.so.* | libstdc++.so.*) ;;
            *) cp -L "$path" "$root/fallback-lib/$soname" ;;
        esac
    done

{
    echo "built $(date -u '+%Y-%m-%d %H:%M UTC') from ${TJIT_BUILD_FROM:-$(git -C "$src" describe --always --dirty 2>/dev/null || echo '?')}"
    echo "libtjit.so.0 needs: $(objdump -p "$root/lib/libtjit.so.0" | awk '/NEEDED/ { printf "%s ", $2 }')"
    echo "newest symbol versions: $(objdump -T "$root/lib/libtjit.so.0" "$root"/tests/* 2>/dev/null |
        grep -oE '(GLIBC|GLIBCXX)_[0-9.]+' | sort -Vu | awk -F_ '{ v[$1] = $0 } END { for (k in v) printf "%s ", v[k] }')"
} >"$root/BUILD-INFO"
cat "$root/BUILD-INFO" >&2

# A smoke test here, on the CPU, of the staged library itself.
LD_LIBRARY_PATH=$root/lib TJIT_DEVICE=cpu "$root/samples/vector_add" 1000 >/dev/null ||
    die "the staged samples/vector_add does not run here"

mkdir -p "$carry"
rm -f "$carry/tjit-gpu.tar.xz"
# Files smallest first, so that the test programs that link LLVM statically
# (about 53 MB each) sit side by side, and one xz stream whose dictionary
# spans such a program: each copy of LLVM after the first costs almost
# nothing (71 MiB -> 23 MiB with five of them).
(cd "$stage" && find tjit -type f -printf '%s %p\n' | sort -n | cut -d' ' -f2-) >"$stage.list"
tar -C "$stage" -cf - --no-recursion -T "$stage.list" |
    xz -T1 --lzma2=preset=6,dict=128MiB >"$carry/tjit-gpu.tar.xz"
rm -f "$stage.list"
size=$(stat -c %s "$carry/tjit-gpu.tar.xz")
say "carry/tjit-gpu.tar.xz: $((size / 1024)) KiB (unpacked: $(du -sk "$root" | cut -f1) KiB)"
[ "$size" -le "$max_bytes" ] || die "the package is over $((max_bytes / 1024 / 1024)) MiB"
git -C "$src" check-ignore -q carry/tjit-gpu.tar.xz 2>/dev/null ||
    say "warning: git does not ignore carry/; it would travel (and be committed) as part of the tree"
say "done; on the GPU machine: bash scripts/gpu-run.sh   (run with carry=[\"carry\"])"
