#!/bin/bash
# SPDX-License-Identifier: MIT
#
# ir-test.sh — the lit-style tests of tjit-opt (tests/ir/*.tir), as TAP.
#
# Each .tir file is hand-written IR with "// RUN: <command>" lines, run by
# bash with pipefail, where %s is the file, %t a temporary file of its own,
# tjit-opt the built tool and
# FileCheck LLVM's (configure's FILECHECK, from llvm-22-tools); "not CMD"
# succeeds where CMD fails without crashing (as lit's not). The CHECK lines
# of the file are FileCheck's, so a file is both the input and the expected
# output. A file passes when all its RUN lines succeed. Without FileCheck
# every file is skipped, not failed.
srcdir=${srcdir:-.}
opt=${TJIT_OPT:-./tools/tjit-opt}
shopt -s nullglob
files=("$srcdir"/tests/ir/*.tir)
echo "1..${#files[@]}"
i=0
for f in "${files[@]}"; do
    i=$((i + 1))
    name=${f#"$srcdir"/}
    if [ -z "$FILECHECK" ] || [ ! -x "$FILECHECK" ]; then
        echo "ok $i - $name # SKIP FileCheck not found (install llvm-22-tools, re-run configure)"
        continue
    fi
    runs=$(sed -n 's|^// RUN: *||p' "$f")
    if [ -z "$runs" ]; then
        echo "not ok $i - $name: no RUN line"
        continue
    fi
    ok=1
    tmp=$(mktemp -d)
    while IFS= read -r run; do
        cmd=${run//tjit-opt/$opt}
        cmd=${cmd//FileCheck/$FILECHECK}
        cmd=${cmd//%s/$f}
        cmd=${cmd//%t/$tmp/t}
        if ! out=$(bash -o pipefail -c 'not() { "$@"; rc=$?; [ $rc -ne 0 ] && [ $rc -lt 128 ]; }
                                        '"$cmd" 2>&1); then
            ok=0
            echo "# RUN: $run"
            printf '%s\n' "$out" | head -40 | sed 's/^/#   /'
        fi
    done <<< "$runs"
    rm -rf "$tmp"
    if [ $ok = 1 ]; then echo "ok $i - $name"; else echo "not ok $i - $name"; fi
done
