#!/bin/bash
# gpu_compare.sh — tjit against Triton on one GPU, in one run.
#
# Runs bench/gpu_bench (tjit's kernels) and bench/triton_bench.py (the same
# kernels in Triton, PyTorch's operators and the device copy bandwidth) one
# after the other on the same GPU, keeps both JSON outputs, and prints the
# side-by-side table: per kernel tjit GB/s, Triton GB/s, tjit/Triton, and
# each as a fraction of the copy bandwidth measured in the same run; then the
# cold compile times and the host cost of one launch. Both programs document
# what they measure in their opening comments; the definitions match.
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
# An uninstalled libtool program is a shell script that runs .libs/NAME.
real_bin="$(dirname "$bench_bin")/.libs/$(basename "$bench_bin")"
if head -c 2 "$bench_bin" | grep -q '#!' && [ -x "$real_bin" ]; then
    bench_bin=$real_bin
fi
# libtjit.so beside the staged program (its ../lib) or anywhere under carry/;
# the staged fallback libraries only where the machine lacks one.
staged_root=$(dirname "$(dirname "$bench_bin")")
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

"$bench_bin" "$@" >"$out_dir/tjit.jsonl"
tjit_status=$?
PYTHONUNBUFFERED=1 python3 bench/triton_bench.py "$@" >"$out_dir/triton.jsonl"
triton_status=$?

python3 - "$out_dir/tjit.jsonl" "$out_dir/triton.jsonl" <<'EOF' | tee "$out_dir/table.txt"
import json
import sys

records = []
for path in sys.argv[1:]:
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError:
                    pass


def find(impl, what, kernel=None, **match):
    for r in records:
        if r.get("impl") == impl and r.get("what") == what and r.get("kernel") == kernel and \
                all(r.get(k) == v for k, v in match.items()):
            return r
    return None


def gbps(r):
    if r is None:
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
copy = find("torch", "bandwidth", "copy")
copy_gbps = gbps(copy) if copy and "error" not in copy else None
print(f"device copy bandwidth (torch, 2^28 fp32, read + write): "
      f"{copy_gbps:.0f} GB/s" if copy_gbps else "device copy bandwidth: not measured")
print()
head = (f"{'kernel':<16}{'tjit GB/s':>11}{'Triton GB/s':>13}{'tjit/Triton':>13}"
        f"{'tjit/copy':>11}{'Triton/copy':>13}{'torch GB/s':>12}")
print(head)
print("-" * len(head))
kernels = ["vector_add", "strided_add_s1", "strided_add_s2", "strided_add_s4",
           "strided_add_s8", "transpose", "transpose_ptrs", "softmax", "box_filter"]
for k in kernels:
    t, tr, to = (find("tjit", "bandwidth", k), find("triton", "bandwidth", k),
                 find("torch", "bandwidth", k))
    tg = gbps(t) if t and "error" not in t else None
    trg = gbps(tr) if tr and "error" not in tr else None
    print(f"{k:<16}{cell(t)}{cell(tr, 13)}{ratio(tg, trg, width=13)}"
          f"{ratio(tg, copy_gbps)}{ratio(trg, copy_gbps, width=13)}{cell(to, 12)}")
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
