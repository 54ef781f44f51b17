#!/bin/sh
# SPDX-License-Identifier: MIT
# test_too_many_params.sh — a kernel past TJ_MAX_PARAMS (64) parameters or
# constants must fail to compile with one short error that says so, not
# with pages of preprocessor output; one of exactly 64 must compile cleanly.
# Each kernel is written here, by the shell, and compiled -fsyntax-only by
# gcc and by clang (skipped where absent) as C11.
src=${srcdir:-.}
tmp=${TMPDIR:-/tmp}/tjit_too_many_$$
mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' EXIT

# list N WORD: "WORD(p0, i32), WORD(p1, i32), ..." with N entries.
list() {
    i=0 out=""
    while [ $i -lt "$1" ]; do
        [ $i -gt 0 ] && out="$out, "
        case $2 in
            C) out="${out}C$i" ;;
            *) out="$out$2(p$i, i32)" ;;
        esac
        i=$((i + 1))
    done
    echo "$out"
}
kernel() { # kernel FILE NPARAMS NCONSTS
    {
        echo '#include <tjit.h>'
        echo "TJ_KERNEL(wide, TJ_PARAMS($(list "$2" TJ_SCALAR)), TJ_CONSTS($(list "$3" C)))"
        echo '{'
        echo '    (void)p0;'
        echo "    (void)p$(($2 - 1));"
        echo '}'
    } > "$1"
}
kernel "$tmp/ok64.c" 64 64
kernel "$tmp/params65.c" 65 1
kernel "$tmp/consts65.c" 1 65

compilers="${CC:-gcc}"
command -v "${CLANG:-clang}" >/dev/null 2>&1 && compilers="$compilers ${CLANG:-clang}"
set -- $compilers
echo "1..$(($# * 3))"
n=0 status=0
check() { # check OK? DESCRIPTION
    n=$((n + 1))
    if [ "$1" = 1 ]; then
        echo "ok $n - $2"
    else
        echo "not ok $n - $2"
        sed -n '1,15s/^/# /p' "$tmp/out" | cut -c1-200
        status=1
    fi
}
for cc in $compilers; do
    "$cc" -std=c11 -Wall -Wextra -Werror -fsyntax-only -I"$src/include" "$tmp/ok64.c" \
        > "$tmp/out" 2>&1 && ok=1 || ok=0
    check $ok "$cc: a kernel of 64 parameters and 64 constants compiles without a warning"
    for what in params:parameters consts:constants; do
        file=${what%%:*}65.c
        word=${what#*:}
        ok=0
        if ! "$cc" -std=c11 -fsyntax-only -I"$src/include" "$tmp/$file" > "$tmp/out" 2>&1; then
            errors=$(grep -c 'error:' "$tmp/out")
            lines=$(wc -l < "$tmp/out")
            if [ "$errors" -eq 1 ] && [ "$lines" -le 12 ] &&
               grep 'error:' "$tmp/out" | grep -q "wide: too many $word (at most 64)"; then
                ok=1
            fi
        fi
        check $ok "$cc: 65 $word fail with one error, 'too many $word (at most 64)'"
    done
done
exit $status
