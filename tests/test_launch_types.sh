#!/bin/sh
# SPDX-License-Identifier: MIT
# test_launch_types.sh — a float passed to an integer parameter of a typed
# launch (name_launch of TJ_KERNEL) is a compile-time diagnostic, not a
# silent truncation: a launch with 2.5 for an i32 parameter, or a double
# variable for an i64 one, must draw a warning at the user's line from gcc
# and clang (tjit.h turns -Wfloat-conversion on as a warning, which -Werror
# leaves a warning, so that it cannot break the user's own code). The same file with integer arguments
# and a double for an f32 parameter must compile cleanly, and so must the
# double variable with TJIT_ALLOW_FLOAT_CONVERSION (C's rule, on request).
# A compiler that is absent is skipped.
src=${srcdir:-.}
tmp=${TMPDIR:-/tmp}/tjit_launch_types.$$
mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' EXIT

snippet() { # $1: the launch arguments after the buffer
    cat <<EOT
#include <tjit.h>
TJ_KERNEL(scale, TJ_PARAMS(TJ_PTR(x, f32), TJ_SCALAR(n, i32), TJ_SCALAR(m, i64), TJ_SCALAR(s, f32)),
          TJ_CONSTS())
{
    tj_store(x, tj_mul(tj_load(x), tj_add(tj_add(n, m), s)));
}
int launch(tj_device *dev, tj_buffer x, int count, double scale_by)
{
    tj_launch_cfg cfg = {.grid = {1}};
    (void)count; (void)scale_by;
    return scale_launch(dev, &cfg, x, $1) == TJ_OK;
}
EOT
}
snippet '2.5, count, 0.5f' >"$tmp/float_literal.c"
snippet 'count, scale_by, 0.5f' >"$tmp/double_variable.c"
snippet 'count, (int64_t)count * 2, scale_by' >"$tmp/good.c"

n=0
status=0
check() { # $1: compiler, $2: file, $3: expect ok|fail, $4: what, $5...: flags
    cc=$1 file=$2 expect=$3 what=$4
    shift 4
    n=$((n + 1))
    if ! command -v "$cc" >/dev/null 2>&1; then
        echo "ok $n # SKIP no $cc"
        return
    fi
    out=$("$cc" -std=c11 -Wall -Wextra -fsyntax-only -I"$src/include" "$@" "$tmp/$file" 2>&1)
    rc=$?
    if [ "$expect" = ok ] && [ $rc -eq 0 ]; then
        echo "ok $n - $cc: $what compiles"
    elif [ "$expect" = fail ] && [ $rc -ne 0 ] && echo "$out" | grep -q "$file:11:.*error:.*conversion"; then
        echo "ok $n - $cc: $what is an error at the launch line"
        echo "$out" | grep "conversion" | head -1 | sed 's/^/# /'
    elif [ "$expect" = warn ] && [ $rc -eq 0 ] && echo "$out" | grep -q "$file:11:.*warning:.*conversion"; then
        echo "ok $n - $cc: $what is a warning at the launch line"
        echo "$out" | grep "conversion" | head -1 | sed 's/^/# /'
    else
        echo "not ok $n - $cc: $what (expected $expect, exit status $rc)"
        echo "$out" | head -20 | sed 's/^/# /'
        status=1
    fi
}
echo "1..10"
gcc=${CC_GCC:-gcc}
check "$gcc" float_literal.c warn "2.5 for an i32 parameter"
check "$gcc" double_variable.c warn "a double variable for an i64 parameter, even under -Werror" -Werror
check "$gcc" good.c ok "a double for an f32 parameter, -Werror=float-conversion" -Werror=float-conversion
check "$gcc" good.c ok "integer arguments, -Werror" -Werror
check "$gcc" double_variable.c ok "a double for i64 with TJIT_ALLOW_FLOAT_CONVERSION, -Werror" -Werror \
    -DTJIT_ALLOW_FLOAT_CONVERSION
clang=${CLANG:-clang}
check "$clang" float_literal.c warn "2.5 for an i32 parameter"
check "$clang" double_variable.c warn "a double variable for an i64 parameter, even under -Werror" -Werror
check "$clang" good.c ok "integer arguments, -Werror" -Werror
check "$clang" double_variable.c ok "a double for i64 with TJIT_ALLOW_FLOAT_CONVERSION, -Werror" -Werror \
    -DTJIT_ALLOW_FLOAT_CONVERSION
check "$clang" good.c ok "a double for an f32 parameter, -Werror -Wconversion" -Werror -Wconversion
exit $status
