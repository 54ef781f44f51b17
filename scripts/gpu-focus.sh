#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# gpu-focus.sh — one short device call for one question, where
# scripts/gpu-run.sh (everything, about 8 minutes) would not fit the
# device time left: the matmul benchmark of some dtypes against cuBLAS and
# Triton, some test programs' GPU twins, compute-sanitizer on some tests,
# and the LLM shapes under each of some settings of one environment
# variable — in that order, each part skipped once too little of the
# budget is left for it.
#
# Run on the GPU machine from the repository's root, with the package of
# scripts/gpu-pack.sh in carry/ (the device call's carry=["carry"]):
#
#     BUDGET=540 DTYPES="bf16 f16" TWINS="test_stream_k test_tma" TWIN_ENV="TJIT_STREAM_K=1" \
#         SANITIZE="test_stream_k" LLM_VAR=TJIT_STREAM_K LLM_VALUES="0 1" bash scripts/gpu-focus.sh
#
# BUDGET: seconds the whole run may take (540: under the call's 600);
# DTYPES: bench/gpu_matmul --only DTYPE (every configuration, the stream-K
# and block-pair ones included), then bench/triton_matmul.py --only DTYPE
# (torch.matmul, i.e. cuBLAS, and Triton), RUNS timed runs after WARMUP
# (40 and 10), 150 s a part; TWINS: test programs run on the GPU
# (TJIT_TEST_DEVICE=gpu, ptxas checking their PTX) with TWIN_ENV's
# assignments, 100 s each; SANITIZE: test programs under compute-sanitizer
# memcheck, racecheck and synccheck, 100 s each; LLM_VAR and LLM_VALUES:
# bench/gpu_llm once per value, then bench/torch_llm.py. Empty leaves a
# part out. Output in $OUT (the device tool brings it back): log.txt, each
# part's JSON lines and logs, and table.txt: per matmul problem the best
# tjit configuration without and with stream-K, cuBLAS and Triton, and the
# ratios. The exit status is 0 when nothing failed.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 2
out=${OUT:-$(mktemp -d /tmp/gpu-focus-XXXXXX)}
mkdir -p "$out" || exit 2
start=$(date +%s)
budget=${BUDGET:-540}
left() { echo $((budget - ($(date +%s) - start))); }
say() { printf '[%ss] %s\n' "$(($(date +%s) - start))" "$*" | tee -a "$out/log.txt"; }
status=0
note() { # note WHAT EXIT-STATUS: logs a part's end; a failure fails the run
    [ "$2" -eq 0 ] || status=1
    say "$1: exit $2"
}

stage=${TMPDIR:-/tmp}/gpu-focus-stage
rm -rf "$stage" && mkdir -p "$stage" || exit 2
tar -C "$stage" -xJf carry/tjit-gpu.tar.xz || { say "cannot unpack carry/tjit-gpu.tar.xz"; exit 2; }
root=$stage/tjit
export LD_LIBRARY_PATH=$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ldd "$root/lib/libtjit.so.0" | grep -q 'not found' && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$root/fallback-lib
say "build: $(head -n 3 "$root/BUILD-INFO" | tr '\n' ' ')"
say "gpu: $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | head -n 1)"

runs=${RUNS:-40} warmup=${WARMUP:-10}
for dtype in ${DTYPES-bf16 f16}; do
    [ "$(left)" -gt 160 ] || { say "matmul $dtype: left out, too little time"; continue; }
    timeout 150 "$root/bench/gpu_matmul" --only "$dtype" --runs "$runs" --warmup "$warmup" \
        >"$out/tjit-$dtype.jsonl" 2>"$out/tjit-$dtype.err"
    note "matmul $dtype, tjit" $?
    cache=$(mktemp -d /tmp/triton-cache-XXXXXX)
    TRITON_CACHE_DIR=$cache PYTHONUNBUFFERED=1 timeout 120 python3 bench/triton_matmul.py --only "$dtype" \
        --runs "$runs" --warmup "$warmup" >"$out/triton-$dtype.jsonl" 2>"$out/triton-$dtype.err"
    note "matmul $dtype, cuBLAS and Triton" $?
    rm -rf "$cache"
done
if ls "$out"/tjit-*.jsonl >/dev/null 2>&1; then
    python3 - "$out" <<'EOF' | tee "$out/table.txt"
import glob, json, os, sys
rows = {}
for path in glob.glob(os.path.join(sys.argv[1], "*.jsonl")):
    for line in open(path):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("what") == "matmul" and "tflops" in r:
            rows.setdefault((r["dtype"], r["size"], r.get("layout", "NN")), []).append(r)
def best(rs, keep):
    kept = [r for r in rs if keep(r)]
    return max(kept, key=lambda r: r["tflops"]) if kept else None
for key in sorted(rows):
    rs = rows[key]
    cublas = best(rs, lambda r: r["impl"] == "torch")
    triton = best(rs, lambda r: r["impl"] == "triton")
    plain = best(rs, lambda r: r["impl"] == "tjit" and "stream-K" not in r.get("config", ""))
    split = best(rs, lambda r: r["impl"] == "tjit" and "stream-K" in r.get("config", ""))
    wrong = sum(1 for r in rs if r["impl"] == "tjit" and r.get("correct") is False)
    ref = cublas["tflops"] if cublas else float("nan")
    def cell(r):
        return "%.1f (%.3f of cuBLAS) [%s]" % (r["tflops"], r["tflops"] / ref, r["config"]) if r else "-"
    print("%s %d %s: cuBLAS %.1f, Triton %s; tjit %s; stream-K %s%s; wrong results %d" % (
        key[0], key[1], key[2], ref, "%.1f" % triton["tflops"] if triton else "-", cell(plain), cell(split),
        "; stream-K / tjit %.3f" % (split["tflops"] / plain["tflops"]) if split and plain else "", wrong))
EOF
fi

for name in ${TWINS-}; do
    [ "$(left)" -gt 110 ] || { say "twin $name: left out, too little time"; continue; }
    # shellcheck disable=SC2086  # TWIN_ENV is a list of assignments
    env ${TWIN_ENV-} TJIT_TEST_DEVICE=gpu TJIT_PTXAS="$(command -v ptxas || true)" timeout 100 \
        "$root/tests/$name" >"$out/twin-$name.log" 2>&1
    code=$?
    [ "$code" -eq 0 ] || status=1
    say "twin $name (${TWIN_ENV-}): exit $code, $(grep -c '^ok' "$out/twin-$name.log") ok," \
        "$(grep -c '^not ok' "$out/twin-$name.log") not ok, plan $(grep -m 1 '^1\.\.' "$out/twin-$name.log")"
done

for name in ${SANITIZE-}; do
    for tool in memcheck racecheck synccheck; do
        [ "$(left)" -gt 110 ] || { say "$tool $name: left out, too little time"; continue; }
        TJIT_TEST_DEVICE=gpu timeout 100 compute-sanitizer --tool "$tool" --error-exitcode 3 "$root/tests/$name" \
            >"$out/$tool-$name.log" 2>&1
        code=$?
        [ "$code" -eq 0 ] || status=1
        say "$tool $name: exit $code; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/$tool-$name.log" | tail -n 1)"
    done
done

if [ -n "${LLM_VAR-}" ]; then
    for value in ${LLM_VALUES-0 1}; do
        [ "$(left)" -gt 100 ] || { say "LLM shapes, $LLM_VAR=$value: left out, too little time"; continue; }
        env "$LLM_VAR=$value" timeout 150 "$root/bench/gpu_llm" >"$out/llm-tjit-$value.jsonl" \
            2>"$out/llm-tjit-$value.err"
        note "LLM shapes, tjit, $LLM_VAR=$value" $?
    done
    if [ "$(left)" -gt 40 ]; then
        PYTHONUNBUFFERED=1 timeout $(($(left) - 10)) python3 bench/torch_llm.py >"$out/llm-torch.jsonl" \
            2>"$out/llm-torch.err"
        note "LLM shapes, cuBLAS" $?
    fi
fi
say "done, exit status $status"
exit "$status"
