#!/bin/sh
# SPDX-License-Identifier: MIT
# test_license.sh — tjit can be shipped: the MIT LICENSE is there and every
# source file (C, headers, shell, Python, build files, and those of the
# Debian packaging whose formats take comments) names its license in an
# SPDX line near its top (TAP, one point per check).
srcdir=${srcdir:-.}
echo "1..2"
if grep -q '^MIT License' "$srcdir/LICENSE" 2>/dev/null; then
    echo "ok 1 - LICENSE holds the MIT license"
else
    echo "not ok 1 - LICENSE missing or not the MIT license"
fi
missing=$({ find "$srcdir/include" "$srcdir/src" "$srcdir/tests" "$srcdir/samples" \
               "$srcdir/bench" "$srcdir/scripts" "$srcdir/.ci" "$srcdir/tools" \
               "$srcdir/Makefile.am" "$srcdir/configure.ac" \
               -type f \( -name '*.c' -o -name '*.h' -o -name '*.sh' -o -name '*.py' -o -name '*.tir' \
                          -o -name run -o -name Makefile.am -o -name configure.ac \) \
               2>/dev/null
           ls -d "$srcdir/debian/rules" "$srcdir/debian/control" "$srcdir/debian/not-installed" \
                 "$srcdir"/debian/*.install "$srcdir"/debian/*.symbols 2>/dev/null; } |
          while IFS= read -r f; do
              head -n 3 "$f" | grep -q 'SPDX-License-Identifier: MIT' || echo "$f"
          done)
if [ -z "$missing" ]; then
    echo "ok 2 - every source file has an SPDX line"
else
    echo "not ok 2 - files without an SPDX-License-Identifier line:"
    echo "$missing" | sed 's/^/# /'
fi
