#!/bin/bash
# SPDX-License-Identifier: MIT
# gpu_llm.sh — tjit's matmul on the LLM shapes (bf16) and in fp8 against
# cuBLAS (torch.matmul) and torch._scaled_mm, on one GPU, in one run.
#
# Runs bench/gpu_llm (tjit; the program is the first argument, else
# bench/gpu_llm of this tree) and bench/torch_llm.py one after the other,
# each under TJIT_LLM_PART_LIMIT seconds (default 150), then prints per
# problem tjit's best configuration, torch's figure and their ratio, and
# the geometric mean of the ratios over the LLM shapes, per M and in all.
# Outputs (tjit.jsonl, torch.jsonl, table.txt) go to $GPU_LLM_OUT, else
# $OUT/llm, else a temporary folder. Options after "--" go to both parts.
#
#     usage: bench/gpu_llm.sh [path/to/gpu_llm] [-- --runs N --warmup N --quick]
set -u
cd "$(dirname "$0")/.." || exit 2
bin=bench/gpu_llm
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
    bin=$1
    shift
fi
[ "${1:-}" = "--" ] && shift
[ -x "$bin" ] || { echo "gpu_llm.sh: no program $bin" >&2; exit 2; }
limit=${TJIT_LLM_PART_LIMIT:-150}
out_dir=${GPU_LLM_OUT:-${OUT:+$OUT/llm}}
[ -n "$out_dir" ] || out_dir=$(mktemp -d /tmp/gpu-llm-XXXXXX)
mkdir -p "$out_dir" || exit 2

status=0
timeout "$limit" "$bin" "$@" >"$out_dir/tjit.jsonl" || status=$?
PYTHONUNBUFFERED=1 timeout "$limit" python3 bench/torch_llm.py "$@" >"$out_dir/torch.jsonl" || status=$?

python3 - "$out_dir/tjit.jsonl" "$out_dir/torch.jsonl" <<'EOF' | tee "$out_dir/table.txt"
import json, math, sys
def read(path):
    rows = []
    for line in open(path):
        try:
            rows.append(json.loads(line))
        except ValueError:
            pass
    return rows
tjit, torch = read(sys.argv[1]), read(sys.argv[2])
best, configs, bad = {}, {}, []
for r in tjit:
    key = (r.get("dtype"), r.get("m"), r.get("n"), r.get("k"))
    if "error" in r or not r.get("correct", False):
        bad.append("%s %s: %s" % (key, r.get("config"), r.get("error", "WRONG")))
        continue
    if r["tflops"] > best.get(key, (0, ""))[0]:
        best[key] = (r["tflops"], r["config"])
ref = {(r["dtype"], r["m"], r["n"], r["k"]): r["tflops"] for r in torch if "tflops" in r}
print("%-6s %6s %6s %6s %9s %9s %7s  %s" % ("dtype", "M", "N", "K", "tjit", "torch", "ratio", "tjit config"))
ratios, by_m = [], {}
for key in sorted(set(best) | set(ref), key=lambda k: (k[0] != "bf16", k[1], k[2], k[3])):
    t, cfg = best.get(key, (0, "-"))
    r = ref.get(key, 0)
    ratio = t / r if t and r else 0
    print("%-6s %6d %6d %6d %9.1f %9.1f %7.3f  %s" % (key + (t, r, ratio, cfg)))
    if key[0] == "bf16" and ratio:
        ratios.append(ratio)
        by_m.setdefault(key[1], []).append(ratio)
geo = lambda v: math.exp(sum(map(math.log, v)) / len(v)) if v else 0
for m in sorted(by_m):
    print("bf16 LLM shapes, M = %5d: geometric mean of tjit/cuBLAS %.3f" % (m, geo(by_m[m])))
print("bf16 LLM shapes, all %d: geometric mean of tjit/cuBLAS %.3f" % (len(ratios), geo(ratios)))
for line in bad:
    print("FAILED or WRONG:", line)
EOF
echo "gpu_llm.sh: exit status $status"
exit $status
