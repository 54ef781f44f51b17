#!/bin/bash
# SPDX-License-Identifier: MIT
# gpu_matmul.sh — tjit's matmul against cuBLAS and Triton on one GPU, in one run.
#
# Runs, one after the other on the same GPU: bench/gpu_matmul (tjit),
# bench/triton_matmul.py (torch.matmul, i.e. cuBLAS, and Triton's tutorial
# matmul on its default wgmma path), and bench/triton_matmul.py again in a
# process of its own with DISABLE_MMA_V3=1 (Triton on mma.sync, the
# instructions tjit emits). Each Triton process gets a fresh, empty
# TRITON_CACHE_DIR, so that the second cannot reuse the first's kernels.
# Each part runs under TJIT_MATMUL_PART_LIMIT seconds (default 90); a part
# cut short still leaves its records. Then it prints the table: per problem
# (dtype, size, NN/NT) each side's best configuration in TFLOP/s, the ratios
# tjit/cuBLAS, tjit/Triton, tjit/Triton-mma.sync, and each as a fraction of
# the H200's dense peak (989 TFLOP/s f16/bf16, 494 tf32); then every
# configuration of tjit and both Triton runs, and any failure or wrong
# result.
#
# Run from anywhere; the program is the first argument, else
# $TJIT_GPU_MATMUL, else bench/gpu_matmul of this tree (a build folder's
# libtool wrapper; a staged program needs libtjit.so on LD_LIBRARY_PATH, as
# scripts/gpu-run.sh sets it). Options after "--" go to all three parts
# (--runs N, --warmup N, --quick). Outputs (tjit.jsonl, triton.jsonl,
# triton_mma_v2.jsonl, table.txt) go to $GPU_MATMUL_OUT, else $OUT/matmul
# where $OUT is set, else a temporary folder. scripts/gpu-run.sh runs it
# after the other benchmark.
#
#     usage: bench/gpu_matmul.sh [path/to/gpu_matmul] [-- options]
set -u
cd "$(dirname "$0")/.." || exit 2

bin=${TJIT_GPU_MATMUL:-bench/gpu_matmul}
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
    bin=$1
    shift
fi
[ "${1:-}" = "--" ] && shift
[ -x "$bin" ] || { echo "gpu_matmul.sh: no program $bin" >&2; exit 2; }
limit=${TJIT_MATMUL_PART_LIMIT:-90}
out_dir=${GPU_MATMUL_OUT:-${OUT:+$OUT/matmul}}
[ -n "$out_dir" ] || out_dir=$(mktemp -d /tmp/gpu-matmul-XXXXXX)
mkdir -p "$out_dir" || exit 2
echo "gpu_matmul.sh: tjit: $bin; outputs in $out_dir; ${limit}s per part" >&2

status=0
timeout "$limit" "$bin" "$@" >"$out_dir/tjit.jsonl" || status=$?
for variant in triton triton_mma_v2; do
    cache=$(mktemp -d /tmp/triton-matmul-cache-XXXXXX)
    if [ "$variant" = triton_mma_v2 ]; then
        DISABLE_MMA_V3=1 TRITON_CACHE_DIR=$cache PYTHONUNBUFFERED=1 \
            timeout "$limit" python3 bench/triton_matmul.py "$@" >"$out_dir/$variant.jsonl" || status=$?
    else
        TRITON_CACHE_DIR=$cache PYTHONUNBUFFERED=1 \
            timeout "$limit" python3 bench/triton_matmul.py "$@" >"$out_dir/$variant.jsonl" || status=$?
    fi
    rm -rf "$cache"
done

python3 - "$out_dir"/tjit.jsonl "$out_dir"/triton.jsonl "$out_dir"/triton_mma_v2.jsonl <<'EOF' |
import json
import sys

records = []
for path in sys.argv[1:]:
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("{"):
                    try:
                        records.append(json.loads(line))
                    except json.JSONDecodeError:
                        pass
    except OSError as err:
        print(f"(cannot read {path}: {err})")

PEAK = {"f16": 989.0, "bf16": 989.0, "tf32": 494.0}
IMPLS = ("tjit", "torch", "triton", "triton_mma_v2")
runs = [r for r in records if r.get("what") == "matmul" and "dtype" in r]
problems = []
for r in runs:
    key = (r["dtype"], r["size"], r["layout"])
    if key not in problems:
        problems.append(key)


def good(r):
    return "error" not in r and r.get("correct") is not False and r.get("tflops")


def best(impl, key):
    cands = [r for r in runs if r["impl"] == impl and (r["dtype"], r["size"], r["layout"]) == key]
    ok = [r for r in cands if good(r)]
    return max(ok, key=lambda r: r["tflops"]) if ok else None


devices = sorted({r["device"] for r in records if r.get("device")})
print("devices:", "; ".join(devices) or "-")
for r in records:
    if r.get("what") == "versions":
        print("versions:", {k: v for k, v in r.items() if k not in ("what", "device")})
print()
print("matmul TFLOP/s, each side's best configuration (median of CUDA-event times)")
head = (f"{'problem':<18}{'tjit':>8}{'cuBLAS':>8}{'Triton':>8}{'Tr mma2':>8}"
        f"{'t/cuBLAS':>10}{'t/Triton':>10}{'t/Tr mma2':>11}"
        f"{'tjit %pk':>10}{'cuBLAS %pk':>12}{'Triton %pk':>12}  tjit config")
print(head)
print("-" * len(head))
fmt = lambda v, w: ("-" if v is None else f"{v:.0f}").rjust(w)
ratio = lambda a, b, w: ("-" if a is None or b is None else f"{a / b:.3f}").rjust(w)
pct = lambda a, peak, w: ("-" if a is None else f"{100 * a / peak:.1f}%").rjust(w)
for key in problems:
    b = {impl: best(impl, key) for impl in IMPLS}
    t = {impl: (b[impl] or {}).get("tflops") for impl in IMPLS}
    peak = PEAK[key[0]]
    label = f"{key[0]} {key[1]}^3 {key[2]}"
    print(f"{label:<18}{fmt(t['tjit'], 8)}{fmt(t['torch'], 8)}{fmt(t['triton'], 8)}"
          f"{fmt(t['triton_mma_v2'], 8)}{ratio(t['tjit'], t['torch'], 10)}"
          f"{ratio(t['tjit'], t['triton'], 10)}{ratio(t['tjit'], t['triton_mma_v2'], 11)}"
          f"{pct(t['tjit'], peak, 10)}{pct(t['torch'], peak, 12)}{pct(t['triton'], peak, 12)}"
          f"  {(b['tjit'] or {}).get('config', '-')}")

print()
print("every configuration (TFLOP/s; FAILED: did not build or run; WRONG: failed its check)")
configs = []
for r in runs:
    if r["impl"] != "torch" and r.get("config") and r["config"] not in configs:
        configs.append(r["config"])
print(f"{'problem':<18}{'config':<32}{'tjit':>9}{'Triton':>9}{'Tr mma2':>9}")
for key in problems:
    for config in configs:
        row = {}
        for impl in ("tjit", "triton", "triton_mma_v2"):
            r = next((r for r in runs if r["impl"] == impl and r.get("config") == config and
                      (r["dtype"], r["size"], r["layout"]) == key), None)
            if r is None:
                row[impl] = "-"
            elif "error" in r:
                row[impl] = "FAILED"
            else:
                row[impl] = f"{r['tflops']:.0f}" + ("" if r.get("correct") is not False else " WRONG")
        if any(v != "-" for v in row.values()):
            label = f"{key[0]} {key[1]}^3 {key[2]}"
            print(f"{label:<18}{config:<32}{row['tjit']:>9}{row['triton']:>9}"
                  f"{row['triton_mma_v2']:>9}")
errors = [r for r in records if "error" in r]
if errors:
    print()
    for r in errors:
        print(f"FAILED {r.get('impl')} {r.get('dtype', '')} {r.get('size', '')} "
              f"{r.get('layout', '')} {r.get('config', '')}: {r['error']}")
for r in runs:
    if r.get("correct") is False:
        print(f"WRONG RESULT {r['impl']} {r['dtype']} {r['size']} {r['layout']} {r.get('config')}")
EOF
    tee "$out_dir/table.txt"
echo "gpu_matmul.sh: exit status $status (0: every part ran and was right)" >&2
exit "$status"
