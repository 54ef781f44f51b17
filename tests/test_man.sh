#!/bin/sh
# SPDX-License-Identifier: MIT
# test_man.sh — every public function of tjit can be looked up with man. The
# functions are read from include/tjit.h itself and its parts (each TJ_API declaration;
# tj__ names are the macros' internals, not API), apart from the generator,
# so that a function the generator misses fails here. For each, man3/NAME.3
# (written at build time by scripts/gen-man.sh) must exist, render without
# a warning from groff (-ww: all of them; ".so" links resolved from the
# build folder, as man resolves them from its tree), name the function in
# its NAME section, and be listed by the overview tjit.3, which must also
# render cleanly and carry README.md's environment variables. The
# generator itself must refuse a header with a TJ_API function that has no
# comment, since its summary and page come from that comment. Without
# groff the rendering is skipped and the pages' text is checked instead.
set -u
srcdir=${srcdir:-.}
top=$(pwd) # the build folder, where make check runs this
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tjit-man-test-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $1"; sed 's/^/#   /' "$tmp/log" 2>/dev/null | head -n 20; }
check() { # check DESCRIPTION COMMAND...: a point, its output in $tmp/log
    what=$1
    shift
    if "$@" >"$tmp/log" 2>&1; then ok "$what"; else not_ok "$what"; fi
}
have_groff=no
command -v groff >/dev/null 2>&1 && have_groff=yes

# the text of a page as a reader sees it, groff's warnings in $tmp/warnings
render() {
    (cd "$top" && groff -k -man -Tutf8 -ww -P-cbou "man3/$1.3") 2>"$tmp/warnings"
}
renders_clean() { # renders_clean PAGE: output in $tmp/page.txt
    if [ "$have_groff" = yes ]; then
        render "$1" >"$tmp/page.txt" || return 1
        if [ -s "$tmp/warnings" ]; then cat "$tmp/warnings"; return 1; fi
    else
        cat "$top/man3/$1.3" >"$tmp/page.txt"
    fi
}
documented() { # documented FUNCTION
    f=$1
    [ -f "$top/man3/$f.3" ] || { echo "no man3/$f.3"; return 1; }
    renders_clean "$f" || return 1
    if [ "$have_groff" = yes ]; then
        sed -n '/^NAME/,/^SYNOPSIS/p' "$tmp/page.txt" | grep -qw "$f" || { echo "$f is not in its page's NAME section"; return 1; }
    else
        page=$(sed -n 's|^\.so man3/||p' "$top/man3/$f.3")
        grep -A1 '^\.SH NAME' "$top/man3/${page:-$f.3}" | grep -qw "$f" ||
            { echo "$f is not in its page's NAME section"; return 1; }
    fi
    grep -q "^\.BR $f ()\$" "$top/man3/tjit.3" || { echo "tjit.3 does not list $f"; return 1; }
}

# the header with its parts, as the generator reads it
sh "$srcdir/scripts/gen-man.sh" --expand "$srcdir/include/tjit.h" >"$tmp/expanded.h" || exit 1
header=$tmp/expanded.h
functions=$(sed -n 's/^TJ_API[^(]*[^A-Za-z0-9_]\([A-Za-z_][A-Za-z0-9_]*\)(.*/\1/p' "$header" |
    grep -v '^tj__')
count=$(echo "$functions" | wc -l)
echo "1..$((count + 4))"

check "the header declares public functions ($count)" test "$count" -gt 20

refuses_undocumented() {
    sed 's|^TJ_API int tj_version_number(void);|&\n\nTJ_API int tj_undocumented_api(int x);|' \
        "$header" >"$tmp/tjit.h"
    grep -q tj_undocumented_api "$tmp/tjit.h" || { echo "the header's tj_version_number moved"; return 1; }
    if sh "$srcdir/scripts/gen-man.sh" "$tmp/tjit.h" "$srcdir/README.md" 0 "$tmp/man3" 2>"$tmp/err"; then
        echo "gen-man.sh wrote pages for a function without a comment"
        return 1
    fi
    cat "$tmp/err"
    grep -q 'tj_undocumented_api has no comment' "$tmp/err" && ! [ -e "$tmp/man3/tjit.3" ]
}
check "gen-man.sh refuses a TJ_API function without a comment, writing no pages" refuses_undocumented

overview() {
    renders_clean tjit || return 1
    for var in $(sed -n '/^## Environment variables/,/^## /s/^| `\(TJIT_[A-Z_]*\).*/\1/p' \
        "$srcdir/README.md" | sort -u); do
        sed -n '/^\(\.SH \)*ENVIRONMENT$/,/SEE ALSO$/p' "$tmp/page.txt" | grep -q "$var" ||
            { echo "tjit.3's ENVIRONMENT lacks $var"; return 1; }
    done
    grep -q 'find_package(tjit' "$tmp/page.txt" || { echo "tjit.3 does not say how to link"; return 1; }
}
rendering=$([ "$have_groff" = yes ] && echo "renders without warnings" || echo "is not rendered (no groff)")
check "tjit.3, the overview, $rendering, with README's environment variables" overview

# tjit-opt(1), written by hand: every pass that `tjit-opt --help` lists has
# its entry, so a new pass cannot go unmentioned
tool_page() {
    page=$srcdir/tools/tjit-opt.1
    if [ "$have_groff" = yes ]; then
        groff -k -man -Tutf8 -ww "$page" 2>"$tmp/warnings" >/dev/null || return 1
        if [ -s "$tmp/warnings" ]; then cat "$tmp/warnings"; return 1; fi
    fi
    passes=$("$top/tools/tjit-opt" --help | sed -n '/^passes:/,$s/^  --\([a-z0-9-]*\) .*/\1/p')
    [ -n "$passes" ] || { echo "tjit-opt --help lists no passes"; return 1; }
    for p in $passes; do
        want=".B $(printf '%s' "--$p" | sed 's/-/\\-/g')" # .B \-\-make\-persistent
        grep -qxF "$want" "$page" || { echo "tools/tjit-opt.1 has no entry for --$p ($want)"; return 1; }
    done
}
check "tjit-opt.1 $rendering and has an entry for every pass tjit-opt --help lists" tool_page

for f in $functions; do
    check "$f: man3/$f.3 names it, tjit.3 lists it; it $rendering" documented "$f"
done
