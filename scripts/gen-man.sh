#!/bin/sh
# SPDX-License-Identifier: MIT
# gen-man.sh HEADER README VERSION OUTDIR — tjit's man pages (section 3),
# written from the comments of include/tjit.h, so that the header stays the
# one place the API is documented and the pages cannot drift from it.
#
# The header's sections (the "/* ---- */" banners) are read in order. A
# run of TJ_API prototypes with the comments, typedefs and #defines that
# come before it in its section makes one page, named after its first
# function (tj_device_open.3: the devices); each other function of the run
# gets a page that is only a ".so" link to it, so `man tj_device_close`
# finds the same text. A page's SYNOPSIS lists its prototypes; its
# DESCRIPTION is the header's text in order, comments as paragraphs and
# declarations as code. The section of the macros' internals (tj__ names)
# is not API and ends the reading.
#
# tjit.3 is the overview: the header's opening essay, how to build and link
# (pkg-config, CMake), the main types, every function with a one-line
# summary and its page, and the environment variables from README.md's
# table. A function's summary is its declaration's trailing comment, else
# the first sentence of the last comment before its run of prototypes (one
# above the typedefs it uses counts; one that served prototypes before a
# blank line does not): a TJ_API function with neither is an error, and no
# pages are written.
#
# The header's parts (its #include "tjit/NAME.h" lines but the macros'
# tjit_macros.h) are read where they are included, each from its first
# section banner to the line before its closing #endif; `gen-man.sh
# --expand HEADER` prints that text, which tests/test_man.sh reads too.
set -eu

# HEADER with its parts inlined.
expand() {
    awk -v dir="$(dirname "$1")" '
        /^#include "tjit\/[A-Za-z0-9_]*\.h"/ && $2 != "\"tjit/tjit_macros.h\"" {
            path = $2
            gsub(/"/, "", path)
            path = dir "/" path
            n = 0
            while ((getline line < path) > 0)
                lines[++n] = line
            close(path)
            if (n == 0) {
                print "gen-man.sh: cannot read " path > "/dev/stderr"
                exit 1
            }
            last = n
            while (last > 0 && lines[last] !~ /^#endif/)
                last--
            on = 0
            for (i = 1; i < last; i++) {
                if (lines[i] ~ /^\/\* ----/)
                    on = 1
                if (on)
                    print lines[i]
            }
            next
        }
        { print }' "$1"
}
if [ "${1:-}" = --expand ] && [ $# -eq 2 ]; then
    expand "$2"
    exit
fi
if [ $# -ne 4 ]; then
    echo "usage: $0 HEADER README VERSION OUTDIR   or   $0 --expand HEADER" >&2
    exit 2
fi
header=$1 readme=$2 version=$3 outdir=$4
mkdir -p "$outdir"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tjit-man-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
expand "$header" >"$tmp/header.h"
header=$tmp/header.h

awk -v version="$version" -v outdir="$tmp" -v readme="$readme" '
# Text for roff: backslashes escaped, a leading control character guarded,
# the em dash as groff names it.
function roff(s) {
    gsub(/\\/, "\\e", s)
    gsub(/—/, "\\(em", s)
    if (s ~ /^[.\047]/) s = "\\&" s
    return s
}
function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
# Markdown inline code as bold, links as their text.
function md(s,    out, n, parts, i, link) {
    s = roff(s)
    while (match(s, /\[[^]]*\]\([^)]*\)/)) {
        link = substr(s, RSTART, RLENGTH)
        sub(/\]\(.*/, "", link)
        s = substr(s, 1, RSTART - 1) substr(link, 2) substr(s, RSTART + RLENGTH)
    }
    n = split(s, parts, "`")
    out = parts[1]
    for (i = 2; i <= n; i++)
        out = out ((i % 2) ? "\\fR" : "\\fB") parts[i]
    return out ((n % 2) ? "" : "\\fR")
}
function first_sentence(s,    cut) {
    cut = length(s) + 1
    if (index(s, ". ") && index(s, ". ") < cut) cut = index(s, ". ")
    if (index(s, "; ") && index(s, "; ") < cut) cut = index(s, "; ")
    if (index(s, " — ") && index(s, " — ") < cut) cut = index(s, " — ")
    s = substr(s, 1, cut - 1)
    sub(/\.$/, "", s)
    return s
}
function open_code() { if (!in_code) { desc = desc ".PP\n.RS 4\n.nf\n"; in_code = 1 } }
function close_code() { if (in_code) { desc = desc ".fi\n.RE\n"; in_code = 0 } }
function code(s) { open_code(); desc = desc roff(s) "\n" }
# A comment ends: the first is the essay atop the header (DESCRIPTION in tjit.3),
# any other waits for what it is about.
function end_comment() {
    in_comment = 0
    comment_first = trim(comment_first)
    if (essay == "") essay = comment_roff
    else have_comment = 1
}
# The comment just read, into the page being made as paragraphs.
function emit_comment() {
    close_code()
    desc = desc ".PP\n" comment_roff
    block_summary = first_sentence(comment_first)
    summary_used = 0
    have_comment = 0
}
# The run of prototypes ends: its page, and the links of its other functions.
function flush_group(    page, i, f, names) {
    close_code()
    if (nfuncs > 0) {
        page = outdir "/" funcs[1] ".3"
        names = funcs[1]
        for (i = 2; i <= nfuncs; i++) names = names ", " funcs[i]
        printf ".\\\" Generated by scripts/gen-man.sh from include/tjit.h: edit the header.\n" > page
        printf ".TH %s 3 \"\" \"tjit %s\" \"tjit manual\"\n", toupper(funcs[1]), version > page
        printf ".nh\n.SH NAME\n%s \\- %s\n", names, roff(summary[funcs[1]]) > page
        printf ".SH SYNOPSIS\n.nf\n.B #include <tjit.h>\n.PP\n%s.fi\n", synopsis > page
        printf ".PP\nLink with \\fB$(pkg-config \\-\\-libs tjit)\\fR.\n" > page
        printf ".SH DESCRIPTION\n%s", desc > page
        printf ".SH SEE ALSO\n.BR tjit (3)\n" > page
        close(page)
        for (i = 1; i <= nfuncs; i++) page_of[funcs[i]] = funcs[1]
        for (i = 2; i <= nfuncs; i++) {
            f = outdir "/" funcs[i] ".3"
            printf ".so man3/%s.3\n", funcs[1] > f
            close(f)
        }
        pages[++npages] = funcs[1]
    }
    desc = ""; synopsis = ""; nfuncs = 0
}
function end_prototype(    text, name, note, n, lines, i, line) {
    text = proto
    sub(/^TJ_API[ \t]+/, "", text)
    match(text, /[A-Za-z_][A-Za-z_0-9]*\(/)
    name = substr(text, RSTART, RLENGTH - 1)
    in_proto = 0
    if (name ~ /^tj__/) return
    note = ""
    if (index(text, "/*")) {
        note = substr(text, index(text, "/*") + 2)
        sub(/\*\/.*/, "", note)
        note = trim(note)
    }
    summary[name] = (note != "") ? note : block_summary
    if (summary[name] == "") {
        printf "%s: %s has no comment (on its line, or above its prototypes)\n", FILENAME, name > "/dev/stderr"
        undocumented = 1
    }
    summary_used = 1
    funcs[++nfuncs] = name
    order[++nall] = name
    n = split(proto_lines, lines, "\n")
    for (i = 1; i < n; i++) {
        line = lines[i]
        sub(/^TJ_API[ \t]+/, "", line)
        code(line)
        synopsis = synopsis roff(line) "\n"
    }
}

done { next }
/SPDX-License-Identifier/ { next }
in_comment {
    text = $0
    closes = sub(/[ \t]*\*\/[ \t]*$/, "", text)
    sub(/^[ \t]*\*?[ \t]?/, "", text)
    text = trim(text)
    if (text != "") {
        comment_roff = comment_roff roff(text) "\n"
        if (!comment_para) comment_first = comment_first " " text
    } else if (!closes) {
        comment_roff = comment_roff ".PP\n"
        comment_para++
    }
    if (closes) end_comment()
    next
}
depth == 0 && /^\/\* -+ \*\/$/ {
    if (banner == 0) { flush_group(); banner = 1 } else banner = 0
    next
}
banner == 1 {
    section = $0
    sub(/^\/\*[ \t]*/, "", section); sub(/[ \t]*\*\/$/, "", section)
    if (section ~ /^Internals/) done = 1
    next
}
skip_cpp { if (/^#endif/) skip_cpp = 0; next }
/^#ifdef __cplusplus/ { skip_cpp = 1; next }
in_define { in_define = /\\$/; if (keep_define) code($0); next }
/^#/ {
    in_define = /\\$/
    keep_define = /^#define[ \t]+TJ_/ && !/^#define[ \t]+(TJ__|TJ_API)/
    if (keep_define) {
        if (nfuncs > 0) flush_group()
        if (have_comment) emit_comment()
        code($0)
    }
    next
}
depth == 0 && /^[ \t]*\/\*/ {
    in_comment = 1; comment_roff = ""; comment_first = ""; comment_para = 0
    text = $0
    sub(/^[ \t]*\/\*/, "", text)
    closes = sub(/[ \t]*\*\/[ \t]*$/, "", text)
    text = trim(text)
    if (text != "") { comment_roff = roff(text) "\n"; comment_first = text }
    if (closes) end_comment()
    next
}
/^[ \t]*$/ {
    if (in_proto) next
    if (have_comment) {
        # a comment on nothing documented: the overview notes it before the
        # first section; in a section it stays with the text around it
        if (section == "") { notes = notes ".PP\n" comment_roff; have_comment = 0 }
        else emit_comment()
    }
    close_code()
    # a comment that served prototypes before this blank line serves no more
    if (summary_used) block_summary = ""
    next
}
{
    if (in_proto) {
        proto = proto " " trim($0); proto_lines = proto_lines $0 "\n"
        if (index($0, ";")) end_prototype()
        next
    }
    if (depth == 0 && /^TJ_API /) {
        if (have_comment) emit_comment()
        in_proto = 1; proto = $0; proto_lines = $0 "\n"
        if (index($0, ";")) end_prototype()
        next
    }
    if (depth == 0 && nfuncs > 0) flush_group()
    if (have_comment) emit_comment()
    code($0)
    line = $0
    sub(/\/\*.*/, "", line)
    depth += gsub(/\{/, "{", line) - gsub(/\}/, "}", line)
}
END {
    flush_group()
    if (undocumented) exit 1
    page = outdir "/tjit.3"
    printf ".\\\" Generated by scripts/gen-man.sh from include/tjit.h and README.md.\n" > page
    printf ".TH TJIT 3 \"\" \"tjit %s\" \"tjit manual\"\n", version > page
    printf ".nh\n.SH NAME\ntjit \\- Triton-style tile kernels written inline in C, JIT-compiled for the CPU or an NVIDIA GPU\n" > page
    printf ".SH SYNOPSIS\n.nf\n.B #include <tjit.h>\n.PP\n" > page
    printf "cc \\-std=gnu11 prog.c $(pkg\\-config \\-\\-cflags \\-\\-libs tjit)\n" > page
    printf "cc \\-static prog.c $(pkg\\-config \\-\\-static \\-\\-cflags \\-\\-libs tjit)\n" > page
    printf ".PP\n# CMake\nfind_package(tjit 0.1 REQUIRED)\ntarget_link_libraries(prog PRIVATE tjit::tjit)\n.fi\n" > page
    printf ".SH DESCRIPTION\n%s", essay > page
    printf ".SS Types\n" > page
    printf ".TP\n.B tj_status\nwhat every call that can fail returns (\\fBTJ_OK\\fR, \\fBTJ_ERR_*\\fR); see \\fBtj_last_error\\fR(3).\n" > page
    printf ".TP\n.B tj_dtype\nan element type (\\fBTJ_F32\\fR, \\fBTJ_I32\\fR, ...); see \\fBtj_dtype_name\\fR(3).\n" > page
    printf ".TP\n.B tj_device\nan opaque handle of a device, the CPU or a GPU; see \\fBtj_device_open\\fR(3).\n" > page
    printf ".TP\n.B tj_buffer\na handle (not a pointer) of device memory; see \\fBtj_buffer_alloc\\fR(3).\n" > page
    printf ".TP\n.BR tj_kernel \", \" tj_arg \", \" tj_launch_cfg\n" > page
    printf "a kernel as \\fBTJ_KERNEL\\fR defines it, one argument of a launch, its grid and options; see \\fBtj_launch\\fR(3).\n" > page
    printf ".TP\n.B tj_val\na value of a tile program, in a kernel body (the kernel language is described in tjit.h and README.md).\n" > page
    printf ".SS Functions\n" > page
    for (i = 1; i <= nall; i++) {
        f = order[i]
        printf ".TP\n.BR %s ()\n%s; see\n.BR %s (3).\n", f, roff(summary[f]), page_of[f] > page
    }
    if (notes != "") printf ".SH NOTES\n%s", notes > page
    printf ".SH ENVIRONMENT\n" > page
    in_env = 0; nenv = 0
    while ((getline row < readme) > 0) {
        if (row ~ /^## /) in_env = (row == "## Environment variables")
        if (!in_env || row !~ /^\| `/) continue
        sub(/^\| /, "", row); sub(/ \|$/, "", row)
        split(row, cells, / \| /)
        printf ".TP\n%s\n%s\n", md(cells[1]), md(cells[2]) > page
        nenv++
    }
    if (nenv == 0) {
        printf "%s: no environment table found\n", readme > "/dev/stderr"
        exit 1
    }
    printf ".SH SEE ALSO\n" > page
    for (i = 1; i <= npages; i++)
        printf ".BR %s (3),\n", pages[i] > page
    printf ".BR pkg\\-config (1),\nREADME.md and DESIGN.md in tjit'\''s sources.\n" > page
    close(page)
}
' "$header"

# All pages or none: a failed run leaves the previous pages untouched.
rm -f "$outdir"/*.3
mv "$tmp"/*.3 "$outdir"/
