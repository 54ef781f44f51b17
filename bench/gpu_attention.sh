#!/bin/bash
# SPDX-License-Identifier: MIT
# gpu_attention.sh — tjit's fused attention against Triton and torch's SDPA
# on one GPU, in one run.
#
# Runs bench/gpu_attention (tjit), then bench/triton_attention.py (Triton,
# tutorial 06's algorithm, in a fresh TRITON_CACHE_DIR, and torch's
# scaled_dot_product_attention), each under TJIT_ATTENTION_PART_LIMIT
# seconds (default 120); then prints the table: per problem each side's
# best configuration in TFLOP/s, tjit/Triton and tjit/SDPA, and tjit's as a
# fraction of the H200's dense f16 peak (989 TFLOP/s); then every
# configuration and any failure or wrong result. Outputs (tjit.jsonl,
# triton.jsonl, table.txt) go to $GPU_ATTENTION_OUT, else $OUT/attention
# where $OUT is set, else a temporary folder. Options after "--" go to
# both parts (--runs N, --warmup N, --quick).
#
#     usage: bench/gpu_attention.sh [path/to/gpu_attention] [-- options]
set -u
cd "$(dirname "$0")/.." || exit 2

bin=${TJIT_GPU_ATTENTION:-bench/gpu_attention}
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
    bin=$1
    shift
fi
[ "${1:-}" = "--" ] && shift
[ -x "$bin" ] || { echo "gpu_attention.sh: no program $bin" >&2; exit 2; }
limit=${TJIT_ATTENTION_PART_LIMIT:-120}
out_dir=${GPU_ATTENTION_OUT:-${OUT:+$OUT/attention}}
[ -n "$out_dir" ] || out_dir=$(mktemp -d /tmp/gpu-attention-XXXXXX)
mkdir -p "$out_dir" || exit 2
echo "gpu_attention.sh: tjit: $bin; outputs in $out_dir; ${limit}s per part" >&2

status=0
timeout "$limit" "$bin" "$@" >"$out_dir/tjit.jsonl" || status=$?
cache=$(mktemp -d /tmp/triton-attention-cache-XXXXXX)
TRITON_CACHE_DIR=$cache PYTHONUNBUFFERED=1 \
    timeout "$limit" python3 bench/triton_attention.py "$@" >"$out_dir/triton.jsonl" || status=$?
rm -rf "$cache"

python3 - "$out_dir"/tjit.jsonl "$out_dir"/triton.jsonl <<'EOF' |
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

PEAK = 989.0
runs = [r for r in records if r.get("what") == "attention" and "n_ctx" in r]
key_of = lambda r: (r["n_ctx"], r["head_dim"], r["causal"])
problems = []
for r in runs:
    if key_of(r) not in problems:
        problems.append(key_of(r))


def best(impl, key):
    ok = [r for r in runs if r["impl"] == impl and key_of(r) == key and "error" not in r
          and r.get("correct") is not False and r.get("tflops")]
    return max(ok, key=lambda r: r["tflops"]) if ok else None


print("devices:", "; ".join(sorted({r["device"] for r in records if r.get("device")})) or "-")
for r in records:
    if r.get("what") == "versions":
        print("versions:", {k: v for k, v in r.items() if k not in ("what", "device")})
print()
print("attention forward f16, Z=4 H=32, TFLOP/s, each side's best configuration")
head = (f"{'problem':<22}{'tjit':>8}{'Triton':>8}{'SDPA':>8}{'t/Triton':>10}{'t/SDPA':>9}"
        f"{'tjit %pk':>10}{'Triton %pk':>12}  tjit config / Triton config")
print(head)
print("-" * len(head))
fmt = lambda v, w: ("-" if v is None else f"{v:.0f}").rjust(w)
ratio = lambda a, b, w: ("-" if a is None or b is None else f"{a / b:.3f}").rjust(w)
pct = lambda a, w: ("-" if a is None else f"{100 * a / PEAK:.1f}%").rjust(w)
for key in problems:
    b = {impl: best(impl, key) for impl in ("tjit", "triton", "torch")}
    t = {impl: (b[impl] or {}).get("tflops") for impl in b}
    label = f"N={key[0]} d={key[1]} {'causal' if key[2] else 'full'}"
    print(f"{label:<22}{fmt(t['tjit'], 8)}{fmt(t['triton'], 8)}{fmt(t['torch'], 8)}"
          f"{ratio(t['tjit'], t['triton'], 10)}{ratio(t['tjit'], t['torch'], 9)}"
          f"{pct(t['tjit'], 10)}{pct(t['triton'], 12)}"
          f"  {(b['tjit'] or {}).get('config', '-')} / {(b['triton'] or {}).get('config', '-')}")
print()
print("every configuration (TFLOP/s; FAILED: did not build or run; WRONG: failed its check)")
configs = []
for r in runs:
    if r["impl"] != "torch" and r.get("config") and r["config"] not in configs:
        configs.append(r["config"])
for key in problems:
    for config in configs:
        row = {}
        for impl in ("tjit", "triton"):
            r = next((r for r in runs if r["impl"] == impl and r.get("config") == config
                      and key_of(r) == key), None)
            row[impl] = ("-" if r is None else "FAILED" if "error" in r else
                         f"{r['tflops']:.0f}" + ("" if r.get("correct") is not False else " WRONG"))
        label = f"N={key[0]} d={key[1]} {'causal' if key[2] else 'full'}"
        print(f"{label:<22}{config:<26}{row['tjit']:>9}{row['triton']:>9}")
for r in records:
    if "error" in r:
        print(f"FAILED {r.get('impl')} {r.get('n_ctx', '')} {r.get('head_dim', '')} "
              f"{r.get('causal', '')} {r.get('config', '')}: {r['error']}")
    elif r.get("correct") is False:
        print(f"WRONG RESULT {r['impl']} {r['n_ctx']} {r['head_dim']} {r['causal']} {r.get('config')}")
EOF
    tee "$out_dir/table.txt"
echo "gpu_attention.sh: exit status $status (0: every part ran and was right)" >&2
exit "$status"
