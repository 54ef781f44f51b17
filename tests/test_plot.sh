#!/bin/sh
# SPDX-License-Identifier: MIT
# test_plot.sh — scripts/plot turns benchmark JSON lines into PNG charts
# and refuses what it cannot read (TAP).
#
# The lines are written here, shaped as bench/gpu_*.c and bench/triton_*.py
# write theirs; their numbers are made up and mean nothing. A good pair of
# files gives matmul.png and bandwidth.png, each a PNG by its magic bytes;
# a line that is no JSON, a matmul record without its size and files with
# nothing to chart each fail with a message naming the problem. Without
# python3 or gnuplot the whole test is one skip.
srcdir=${srcdir:-.}
plot="$srcdir/scripts/plot"
if ! command -v python3 >/dev/null 2>&1 || ! command -v gnuplot >/dev/null 2>&1; then
    echo "1..0 # SKIP python3 and gnuplot needed (Debian: gnuplot-nox)"
    exit 0
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/test_plot.XXXXXX") || { echo "Bail out! mktemp"; exit 1; }
trap 'rm -rf "$dir"' EXIT
echo "1..8"

cat >"$dir/tjit.jsonl" <<'LINES'
{"impl":"tjit","what":"matmul","dtype":"f16","size":1024,"layout":"NN","config":"128x128x32, 4 warps, 3 stages","runs":10,"ms":0.1,"tflops":20.0,"correct":true,"device":"GPU X"}
{"impl":"tjit","what":"matmul","dtype":"f16","size":1024,"layout":"NN","config":"64x64x32, 4 warps, 3 stages","runs":10,"ms":0.2,"tflops":10.0,"correct":true,"device":"GPU X"}
{"impl":"tjit","what":"matmul","dtype":"f16","size":2048,"layout":"NT","config":"128x128x32, 4 warps, 3 stages","runs":10,"ms":0.9,"tflops":19.0,"correct":true,"device":"GPU X"}
{"impl":"tjit","what":"matmul","dtype":"bf16","size":4096,"layout":"NN","error":"TJ_ERR_COMPILE: made up","device":"GPU X"}
{"impl":"tjit","what":"bandwidth","kernel":"vector_add","dtype":"f32","shape":[1048576],"bytes":12582912,"runs":100,"ms":0.02,"gbps":600.0,"correct":true,"device":"GPU X"}
{"impl":"tjit","what":"launch_cost","us":4.0,"device":"GPU X"}
LINES
cat >"$dir/triton.jsonl" <<'LINES'
{"impl": "triton", "what": "versions", "torch": "0", "device": "GPU X"}
{"impl": "torch", "versions": {"torch": "0", "cuda": "0"}}
{"impl": "torch", "what": "matmul", "dtype": "f16", "size": 1024, "layout": "NN", "config": "cuBLAS", "runs": 10, "ms": 0.1, "tflops": 21.0, "correct": true, "device": "GPU X"}
{"impl": "triton", "what": "matmul", "dtype": "f16", "size": 1024, "layout": "NN", "config": "128x128x32, 4 warps, 3 stages", "runs": 10, "ms": 0.1, "tflops": 19.5, "correct": true, "device": "GPU X"}
{"impl": "triton", "what": "bandwidth", "kernel": "vector_add", "dtype": "f32", "shape": [1048576], "bytes": 12582912, "runs": 100, "ms": 0.02, "gbps": 590.0, "device": "GPU X"}
LINES

is_png() { # a file that starts with PNG's 8-byte signature and holds more
    [ -s "$1" ] && [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] &&
        [ "$(wc -c <"$1")" -gt 8 ]
}

mkdir "$dir/out"
if python3 "$plot" -o "$dir/out" "$dir/tjit.jsonl" "$dir/triton.jsonl" >"$dir/log" 2>&1; then
    echo "ok 1 - a tjit file and a reference file are charted"
else
    echo "not ok 1 - scripts/plot failed on good input:"; sed 's/^/# /' "$dir/log"
fi
if is_png "$dir/out/matmul.png"; then echo "ok 2 - matmul.png is a PNG"; else echo "not ok 2 - no PNG matmul.png"; fi
if is_png "$dir/out/bandwidth.png"; then echo "ok 3 - bandwidth.png is a PNG"; else echo "not ok 3 - no PNG bandwidth.png"; fi
if [ ! -e "$dir/out/attention.png" ] && grep -q "left out 1 record(s) with an error" "$dir/log"; then
    echo "ok 4 - no chart of a family without records; the error record is counted"
else
    echo "not ok 4 - an attention chart from no records, or the error record not counted"; sed 's/^/# /' "$dir/log"
fi

# refuses: expect_failure N DESCRIPTION TEXT FILE... — exit status 1 and TEXT on stderr
expect_failure() {
    n=$1 what=$2 text=$3
    shift 3
    python3 "$plot" -o "$dir/out" "$@" >"$dir/log" 2>&1
    status=$?
    if [ "$status" -eq 1 ] && grep -qF "$text" "$dir/log"; then
        echo "ok $n - $what: $(head -n 1 "$dir/log")"
    else
        echo "not ok $n - $what: exit status $status, expected 1 and '$text':"; sed 's/^/# /' "$dir/log"
    fi
}
{ head -n 1 "$dir/tjit.jsonl"; echo '{"impl":"tjit","what":"matmul",'; } >"$dir/broken.jsonl"
expect_failure 5 "a line that is no JSON fails" "broken.jsonl:2: not a JSON line" "$dir/broken.jsonl"
echo '{"impl":"tjit","what":"matmul","dtype":"f16","layout":"NN","tflops":1.0}' >"$dir/nosize.jsonl"
expect_failure 6 "a matmul record without its size fails" "nosize.jsonl:1: a 'matmul' record whose 'size' is missing" \
    "$dir/nosize.jsonl"
echo '{"impl":"tjit","what":"bandwidth","kernel":"copy","shape":[8],"gbps":"fast"}' >"$dir/type.jsonl"
expect_failure 7 "a value of the wrong type fails" "whose 'gbps' is \"fast\", not a finite number" "$dir/type.jsonl"
head -n 2 "$dir/triton.jsonl" >"$dir/empty.jsonl"
expect_failure 8 "files with nothing to chart fail" "no record of" "$dir/empty.jsonl"
