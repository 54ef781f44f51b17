#!/bin/bash
# SPDX-License-Identifier: MIT
# gpu_norm.sh — tjit's layer norm (forward, backward dx with its spin lock)
# and dropout, the samples' kernels of Triton's tutorials 05 and 04, against
# the same algorithms in Triton and against torch, on one GPU, in one run.
#
# Runs bench/gpu_norm (tjit; the program is the first argument, else
# bench/gpu_norm of this tree) and bench/triton_norm.py one after the other,
# each under TJIT_NORM_PART_LIMIT seconds (default 60), then prints per
# problem the GB/s of each side and tjit's ratios. Outputs (tjit.jsonl,
# triton.jsonl, table.txt) go to $GPU_NORM_OUT, else $OUT/norm, else a
# temporary folder. Options after "--" go to both parts.
#
#     usage: bench/gpu_norm.sh [path/to/gpu_norm] [-- --runs N --warmup N --quick]
set -u
cd "$(dirname "$0")/.." || exit 2
bin=bench/gpu_norm
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
    bin=$1
    shift
fi
[ "${1:-}" = "--" ] && shift
[ -x "$bin" ] || { echo "gpu_norm.sh: no program $bin" >&2; exit 2; }
limit=${TJIT_NORM_PART_LIMIT:-60}
out_dir=${GPU_NORM_OUT:-${OUT:+$OUT/norm}}
[ -n "$out_dir" ] || out_dir=$(mktemp -d /tmp/gpu-norm-XXXXXX)
mkdir -p "$out_dir" || exit 2

status=0
timeout "$limit" "$bin" "$@" >"$out_dir/tjit.jsonl" || status=$?
PYTHONUNBUFFERED=1 timeout "$limit" python3 bench/triton_norm.py "$@" >"$out_dir/triton.jsonl" || status=$?

python3 - "$out_dir/tjit.jsonl" "$out_dir/triton.jsonl" <<'PY' | tee "$out_dir/table.txt"
import json, sys
def read(path):
    rows = []
    for line in open(path):
        try:
            rows.append(json.loads(line))
        except ValueError:
            pass
    return rows
gbps, bad = {}, []
for r in read(sys.argv[1]) + read(sys.argv[2]):
    key = (r.get("op"), r.get("m"), r.get("n"))
    if "error" in r or not r.get("correct", False):
        bad.append("%s %s: %s" % (r.get("impl"), key, r.get("error", "WRONG")))
        continue
    gbps[(r["impl"],) + key] = r["gbps"]
print("%-18s %6s %9s %9s %9s %9s %9s %10s" % ("op", "M", "N", "tjit", "triton", "torch", "t/triton", "t/torch"))
for key in sorted({k[1:] for k in gbps}):
    t, tr, to = (gbps.get((impl,) + key, 0) for impl in ("tjit", "triton", "torch"))
    print("%-18s %6d %9d %9.1f %9.1f %9.1f %9.3f %10.3f" % (key + (t, tr, to, t / tr if t and tr else 0,
                                                                  t / to if t and to else 0)))
for line in bad:
    print("FAILED or WRONG:", line)
PY
echo "gpu_norm.sh: exit status $status"
exit $status
