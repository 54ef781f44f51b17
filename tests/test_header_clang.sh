#!/bin/sh
# SPDX-License-Identifier: MIT
# test_header_clang.sh — tjit.h in a user's translation unit under clang's
# warnings as well as gcc's: test_header.c (several TJ_KERNELs, one only
# launched through tj_launch) must compile with -Wall -Wextra -Werror as
# C11 and C17. Clang warns about things gcc lets pass (an unused static
# inline function in the main file, for one). Skipped where clang is absent.
CLANG=${CLANG:-clang}
src=${srcdir:-.}
if ! command -v "$CLANG" >/dev/null 2>&1; then
    echo "1..0 # SKIP no $CLANG"
    exit 0
fi
echo "1..2"
n=0
status=0
for std in c11 c17; do
    n=$((n + 1))
    if out=$("$CLANG" -std=$std -Wall -Wextra -Werror -fsyntax-only \
             -I"$src/include" "$src/tests/test_header.c" 2>&1); then
        echo "ok $n - $CLANG -std=$std -Wall -Wextra -Werror accepts a file of TJ_KERNELs"
    else
        echo "not ok $n - $CLANG -std=$std -Wall -Wextra -Werror accepts a file of TJ_KERNELs"
        echo "$out" | head -20 | sed 's/^/# /'
        status=1
    fi
done
exit $status
