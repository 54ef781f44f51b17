#!/bin/bash
# SPDX-License-Identifier: MIT
# gpu_compare.sh — tjit against Triton on one GPU, in one run.
#
# Runs bench/gpu_bench (tjit's kernels) and bench/triton_bench.py (the same
# kernels in Triton, PyTorch's operators and the device copy bandwidth) one
# after the other on the same GPU, TJIT_COMPARE_ROUNDS times (default 2)
# alternating, each kernel's figure being its best round; keeps both JSON
# outputs (every round), and prints the
# side-by-side table: per kernel (and per configuration tried) tjit GB/s,
# Triton GB/s, tjit/Triton, and each as a fraction of the copy bandwidth
# measured in the same run; the strided add's slowdown against s = 1 on each
# side and the ratio of the two shapes; each side's best configuration of
# softmax and the box filter; the issue's targets, each with its verdict
# (met, or missed by how much); then the cold compile times and the host cost
# of one launch. Both programs document what they measure in their opening
# comments; the definitions match.
#
# Meant for the GPU machine, run from the repository's root with tjit's build
# staged by scripts/gpu-pack.sh under carry/. The gpu_bench program is
#   the first argument, else $TJIT_GPU_BENCH, else the one in
#   carry/tjit-gpu.tar.xz (unpacked to /tmp), else the first found under carry/;
#   a libtool wrapper is replaced by the real program in .libs/.
# The folders that hold libtjit.so (the staged lib/ beside the program, else
# any under carry/) go first on LD_LIBRARY_PATH, and the staged fallback-lib/
# too where the program would otherwise miss a library.
# Outputs (tjit.jsonl, triton.jsonl, table.txt) go to $GPU_COMPARE_OUT, else
# $OUT where that is set (the device tool's folder), else a temporary folder.
#
#     usage: bench/gpu_compare.sh [path/to/gpu_bench] [-- options for both]
#     (e.g. bench/gpu_compare.sh -- --runs 200; --quick for a smoke test)
set -u
cd "$(dirname "$0")/.." || exit 2

bench_bin=${TJIT_GPU_BENCH:-}
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
    bench_bin=$1
    shift
fi
[ "${1:-}" = "--" ] && shift
if [ -z "$bench_bin" ] && [ -f carry/tjit-gpu.tar.xz ]; then
    # The package as scripts/gpu-pack.sh leaves it: unpack it here.
    unpacked=$(mktemp -d /tmp/tjit-gpu-XXXXXX) || exit 2
    trap 'rm -rf "$unpacked"' EXIT
    tar -C "$unpacked" -xJf carry/tjit-gpu.tar.xz || exit 2
    bench_bin=$unpacked/tjit/bench/gpu_bench
elif [ -z "$bench_bin" ] && [ -d carry ]; then
    bench_bin=$(find carry -name gpu_bench -type f -perm -u+x 2>/dev/null | sort | head -n 1)
fi
if [ -z "$bench_bin" ] || [ ! -f "$bench_bin" ]; then
    echo "gpu_compare: no gpu_bench program (give its path, set TJIT_GPU_BENCH or stage it under carry/)" >&2
    exit 2
fi
# libtjit.so beside the staged program (its ../lib; in a build folder, its
# ../.libs) or anywhere under carry/; the staged fallback libraries only
# where the machine lacks one.
staged_root=$(dirname "$(dirname "$bench_bin")")
# An uninstalled libtool program is a shell script that runs .libs/NAME.
real_bin="$(dirname "$bench_bin")/.libs/$(basename "$bench_bin")"
if head -c 2 "$bench_bin" | grep -q '#!' && [ -x "$real_bin" ]; then
    bench_bin=$real_bin
fi
lib_dirs=$(find "$staged_root" -name 'libtjit.so*' -printf '%h\n' 2>/dev/null | sort -u | paste -sd: -)
if [ -z "$lib_dirs" ] && [ -d carry ]; then
    lib_dirs=$(find carry -name 'libtjit.so*' -printf '%h\n' 2>/dev/null | sort -u | paste -sd: -)
fi
[ -n "$lib_dirs" ] && export LD_LIBRARY_PATH="$lib_dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ldd "$bench_bin" 2>/dev/null | grep -q 'not found' && [ -d "$staged_root/fallback-lib" ]; then
    export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$staged_root/fallback-lib"
fi

out_dir=${GPU_COMPARE_OUT:-${OUT:-}}
[ -n "$out_dir" ] || out_dir=$(mktemp -d /tmp/gpu-compare-XXXXXX)
mkdir -p "$out_dir" || exit 2

echo "gpu_compare: tjit: $bench_bin; outputs in $out_dir" >&2
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu \
    --format=csv,noheader >&2 2>/dev/null

# Both programs run TJIT_COMPARE_ROUNDS times (default 2), alternating, so
# that neither side always runs on the colder or the warmer GPU; each
# kernel's figure is its best round (each round a median of many launches).
rounds=${TJIT_COMPARE_ROUNDS:-2}
: >"$out_dir/tjit.jsonl"
: >"$out_dir/triton.jsonl"
tjit_status=0
triton_status=0
for ((round = 1; round <= rounds; round++)); do
    "$bench_bin" "$@" >>"$out_dir/tjit.jsonl" || tjit_status=$?
    PYTHONUNBUFFERED=1 python3 bench/triton_bench.py "$@" >>"$out_dir/triton.jsonl" ||
        triton_status=$?
done

python3 - "$out_dir/tjit.jsonl" "$out_dir/triton.jsonl" <<'EOF' | tee "$out_dir/table.txt"
import json
import sys

records = []
for path in sys.argv[1:]:
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    try:
                        records.append(json.loads(line))
                    except json.JSONDecodeError:
                        pass
    except OSError as err:
        print(f"(cannot read {path}: {err})")


def find(impl, what, kernel=None, **match):
    for r in records:
        if r.get("impl") == impl and r.get("what") == what and r.get("kernel") == kernel and \
                all(r.get(k) == v for k, v in match.items()):
            return r
    return None


def best_bandwidth(impl, kernel):
    """The best round's bandwidth record of a kernel; a round that failed or
    was wrong is the answer (so that it shows), else None."""
    rounds = [r for r in records if r.get("impl") == impl and r.get("what") == "bandwidth"
              and r.get("kernel") == kernel]
    bad = [r for r in rounds if "error" in r or r.get("correct") is False]
    if bad:
        return bad[0]
    return max(rounds, key=lambda r: r.get("gbps") or 0) if rounds else None


def gbps_of(impl, kernel):
    """GB/s of a bandwidth record that ran and was right, else None."""
    r = best_bandwidth(impl, kernel)
    if r is None or "error" in r or r.get("correct") is False:
        return None
    return r.get("gbps")


def cell(r, width=11):
    if r is None:
        return "-".rjust(width)
    if "error" in r:
        return "FAILED".rjust(width)
    text = f"{r['gbps']:.0f}"
    if r.get("correct") is False:
        text += " WRONG"
    return text.rjust(width)


def ratio(a, b, fmt="{:.3f}", width=11):
    if a is None or b is None or not b:
        return "-".rjust(width)
    return fmt.format(a / b).rjust(width)


devices = sorted({r["device"] for r in records if r.get("device")})
print("devices:", "; ".join(devices) or "-")
for r in records:
    if r.get("what") == "versions":
        print("versions:", {k: v for k, v in r.items() if k not in ("what", "device")})
copy_gbps = gbps_of("torch", "copy")
print(f"device copy bandwidth (torch, 2^28 fp32, read + write): {copy_gbps:.0f} GB/s"
      if copy_gbps else "device copy bandwidth: not measured")
print()

# Every kernel either side measured, in the order they ran.
kernels = []
for r in records:
    k = r.get("kernel")
    if r.get("what") == "bandwidth" and r.get("impl") in ("tjit", "triton") and k and \
            k not in kernels:
        kernels.append(k)

head = (f"{'kernel':<22}{'config':<34}{'tjit GB/s':>11}{'Triton GB/s':>13}{'tjit/Triton':>13}"
        f"{'tjit/copy':>11}{'Triton/copy':>13}{'torch GB/s':>12}")
print(head)
print("-" * len(head))
for k in kernels:
    t, tr, to = (best_bandwidth("tjit", k), best_bandwidth("triton", k),
                 best_bandwidth("torch", k))
    tg, trg = gbps_of("tjit", k), gbps_of("triton", k)
    config = (t or {}).get("config") or (tr or {}).get("config") or ""
    if t and tr and t.get("config") and tr.get("config") and t["config"] != tr["config"]:
        config += f" (Triton: {tr['config']})"
    print(f"{k:<22}{config:<34}{cell(t)}{cell(tr, 13)}{ratio(tg, trg, width=13)}"
          f"{ratio(tg, copy_gbps)}{ratio(trg, copy_gbps, width=13)}{cell(to, 12)}")

# The strided table: each side's slowdown against its own s = 1.
strides = [1, 2, 4, 8]
shape_ratios = {}
print()
print("strided add, out[i] = x[i*s] + y[i*s]: GB/s at s over GB/s at s = 1, per side")
print(f"{'s':>3}{'tjit GB/s':>11}{'tjit shape':>12}{'Triton GB/s':>13}{'Triton shape':>14}"
      f"{'shape tjit/Triton':>19}")
t1, tr1 = gbps_of("tjit", "strided_add_s1"), gbps_of("triton", "strided_add_s1")
for s in strides:
    tg, trg = gbps_of("tjit", f"strided_add_s{s}"), gbps_of("triton", f"strided_add_s{s}")
    t_shape = tg / t1 if tg and t1 else None
    tr_shape = trg / tr1 if trg and tr1 else None
    if t_shape and tr_shape:
        shape_ratios[s] = t_shape / tr_shape
    fmt = lambda v, w, f="{:.0f}": ("-" if v is None else f.format(v)).rjust(w)
    print(f"{s:>3}{fmt(tg, 11)}{fmt(t_shape, 12, '{:.3f}')}{fmt(trg, 13)}"
          f"{fmt(tr_shape, 14, '{:.3f}')}{fmt(shape_ratios.get(s), 19, '{:.3f}')}")

# Each side at its best among the configurations both tried.
families = {"softmax": lambda k: k == "softmax" or k.startswith("softmax_w"),
            "box_filter": lambda k: k.startswith("box_filter")}
best = {}
print()
print("best configuration of each side (same candidates on both sides)")
print(f"{'kernel':<12}{'tjit GB/s':>11}  {'tjit config':<26}{'Triton GB/s':>13}  "
      f"{'Triton config':<26}{'best/best':>10}")
for family, member in families.items():
    row = {}
    for impl in ("tjit", "triton"):
        cands = [(gbps_of(impl, k), k) for k in kernels if member(k) and gbps_of(impl, k)]
        row[impl] = max(cands) if cands else (None, None)
    best[family] = row
    (tg, tk), (trg, trk) = row["tjit"], row["triton"]
    conf = lambda impl, k: (find(impl, "bandwidth", k) or {}).get("config", k) if k else "-"
    print(f"{family:<12}{('-' if tg is None else f'{tg:.0f}'):>11}  {conf('tjit', tk):<26}"
          f"{('-' if trg is None else f'{trg:.0f}'):>13}  {conf('triton', trk):<26}"
          f"{ratio(tg, trg, width=10)}")

# The targets of the issue, each with its verdict.
def verdict_at_least(r, need):
    if r is None:
        return "NOT MEASURED"
    if r >= need:
        return "met"
    return f"MISSED by {(need - r) / need * 100:.1f}%"


def measured(kernel):
    tg, trg = gbps_of("tjit", kernel), gbps_of("triton", kernel)
    r = tg / trg if tg and trg else None
    text = "-" if r is None else f"{r:.3f} ({tg:.0f} / {trg:.0f} GB/s)"
    return r, text


print()
print("targets (tjit / Triton, same run)")
print(f"{'target':<46}{'measured':<34}{'need':<14}verdict")
rows = [("vector add fp32 2^28", "vector_add", 0.98),
        ("transpose fp32 8192^2 (tj_trans, 64x64)", "transpose", 1.0),
        ("row softmax fp32 8192x4096 (16 warps)", "softmax", 1.0),
        ("  precise exp and div on both sides", "softmax_precise", 1.0),
        ("3x3 box filter fp32 8192^2 (16x64, 4 warps)", "box_filter", 1.0)]
for label, kernel, need in rows:
    r, text = measured(kernel)
    print(f"{label:<46}{text:<34}{'>= ' + str(need):<14}{verdict_at_least(r, need)}")
    if kernel in best:
        (tg, tk), (trg, trk) = best[kernel]["tjit"], best[kernel]["triton"]
        r = tg / trg if tg and trg else None
        text = "-" if r is None else f"{r:.3f} ({tg:.0f} / {trg:.0f} GB/s)"
        print(f"{'  each side at its best configuration':<46}{text:<34}{'>= ' + str(need):<14}"
              f"{verdict_at_least(r, need)}")
missing = [s for s in strides[1:] if s not in shape_ratios]
worst = max((abs(v - 1), s) for s, v in shape_ratios.items() if s != 1) if \
    len(shape_ratios) > 1 else None
text = " / ".join(f"{shape_ratios[s]:.3f}" if s in shape_ratios else "-" for s in strides[1:])
if missing:
    shape_verdict = "NOT MEASURED"
elif worst[0] <= 0.10:
    shape_verdict = "met"
else:
    s = worst[1]
    way = "degrades less than Triton" if shape_ratios[s] > 1 else "degrades more than Triton"
    shape_verdict = f"MISSED at s={s}: {abs(shape_ratios[s] - 1) * 100:.1f}% off ({way})"
print(f"{'strided add shape, s = 2 / 4 / 8':<46}{text:<34}{'within 10%':<14}{shape_verdict}")

print()
print(f"{'cold compile (ms)':<28}{'tjit':>10}{'Triton':>10}{'tjit/Triton':>13}")
for k in ("primer", "vector_add", "softmax"):
    what = "first_compile" if k == "primer" else "cold_compile"
    t, tr = find("tjit", what, k), find("triton", what, k)
    tv = t.get("ms") if t and "error" not in t else None
    trv = tr.get("ms") if tr and "error" not in tr else None
    label = "first kernel in process" if k == "primer" else k
    fmt = lambda v: ("-" if v is None else f"{v:.1f}").rjust(10)
    print(f"{label:<28}{fmt(tv)}{fmt(trv)}{ratio(tv, trv, '{:.2f}', 13)}")
print()
print(f"{'launch cost (us per launch, host)':<40}{'us':>10}")
for impl, how in (("tjit", "typed name_launch()"), ("tjit", "tj_launch()"),
                  ("triton", "kernel[grid](...)")):
    r = find(impl, "launch_cost", None, how=how)
    v = "-" if r is None or "error" in r else f"{r['us']:.2f}"
    print(f"{impl + ' ' + how:<40}{v:>10}")
errors = [r for r in records if "error" in r]
if errors:
    print()
    for r in errors:
        print(f"FAILED {r.get('impl')} {r.get('what')} {r.get('kernel') or ''}: {r['error']}")
wrong = [r for r in records if r.get("correct") is False]
for r in wrong:
    print(f"WRONG RESULT {r.get('impl')} {r.get('kernel')}")
EOF

echo "gpu_compare: gpu_bench exit $tjit_status, triton_bench exit $triton_status" >&2
[ "$tjit_status" -eq 0 ] && [ "$triton_status" -eq 0 ]
