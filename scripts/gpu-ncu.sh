#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# gpu-ncu.sh — Nsight Compute's hardware counters for tjit's kernels, on the
# GPU machine; scripts/gpu-run.sh calls it, with the package it unpacked
# (LD_LIBRARY_PATH already holds its lib/).
#
# Two parts, each a few ncu runs on small problems, so that each takes
# seconds:
#
#   transpose  the transpose sample (samples/transpose 1024 1024), one launch
#              of each of its kernels (transpose_trans, transpose_pointers):
#              shared-memory bank conflicts of loads and stores, next to the
#              shared-memory instructions and the wavefronts they took. A
#              conflict is a wavefront beyond the minimum an instruction
#              needs (one per 128 bytes the warp moves), so zero conflicts
#              means every shared access ran at full speed. The
#              explainer's prediction for the same launches (transpose
#              --explain) goes beside it.
#   kernels    softmax and the box filter, tjit (bench/gpu_bench --quick)
#              against Triton (bench/triton_bench.py --quick), each
#              configuration the benchmark tries: registers per thread,
#              occupancy, instructions, global load instructions, requests
#              and sectors, DRAM bytes and duration — where the time goes
#              when one side is slower.
#   matmul     tjit's matmul, 4096^3 NN and NT in each configuration
#              (bench/gpu_matmul --profile DTYPE for each DTYPE of the list
#              TJIT_NCU_MATMUL_DTYPE, of f16, bf16 and tf32: f16 unless set), then Triton's on mma.sync in
#              the same (bench/triton_matmul.py --profile DTYPE), and cuBLAS's
#              (torch): registers, time, instructions, shared-memory bank
#              conflicts, tensor pipe utilization, top stall reasons.
#   attention  fused attention forward, N_CTX 4096, d 64, causal (the
#              problem where tjit trailed Triton): tjit's configurations
#              (bench/gpu_attention --profile) and Triton's tutorial kernel
#              in its own (bench/triton_attention.py --profile): registers,
#              blocks per SM the registers allow, occupancy, time,
#              instructions, tensor pipe, top stall reasons.
#
# ncu runs with --clock-control none (the clocks stay as the machine has
# them). A failure of ncu — none installed, no permission to read the
# counters (ERR_NVGPUCTRPERM), a profiler that cannot load, a time limit —
# is reported in a clear line and never fails the caller: the exit status is
# 0 unless the arguments are wrong.
#
# Output: a summary on stdout (one table per part, or why there is none);
# everything ncu and the programs printed, appended to OUTFILE.
#
#     usage: scripts/gpu-ncu.sh transpose|kernels|matmul|attention ROOT OUTFILE
#     (ROOT: the unpacked package; TJIT_NCU_LIMIT: seconds per ncu run, 60)
set -uo pipefail

cd "$(dirname "$0")/.." || exit 2
if [ $# -ne 3 ] || { [ "$1" != transpose ] && [ "$1" != kernels ] && [ "$1" != matmul ] &&
    [ "$1" != attention ]; }; then
    echo "usage: $0 transpose|kernels|matmul|attention ROOT OUTFILE" >&2
    exit 2
fi
part=$1 root=$2 outfile=$3
limit=${TJIT_NCU_LIMIT:-60}

ncu_bin=$(command -v ncu 2>/dev/null ||
    ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
if [ -z "$ncu_bin" ]; then
    echo "ncu: not found on this machine: no counters recorded" | tee -a "$outfile"
    exit 0
fi

# run_ncu TITLE METRICS REGEX COUNT COMMAND...: one ncu run over the first
# COUNT launches of the kernels whose names match REGEX; its output goes to
# OUTFILE, and its report (the CSV lines) to stdout. Failures are reported
# on stderr.
run_ncu() {
    local title=$1 metrics=$2 regex=$3 count=$4 log status
    shift 4
    log=$(mktemp "${TMPDIR:-/tmp}/tjit-ncu-XXXXXX") || return 1
    {
        echo "======== $title"
        echo "\$ $ncu_bin --clock-control none --csv --page details --kernel-name regex:'$regex' --launch-count $count --metrics $metrics $*"
    } >>"$outfile"
    timeout "$limit" "$ncu_bin" --clock-control none --csv --page details \
        --kernel-name "regex:$regex" --launch-count "$count" --metrics "$metrics" "$@" \
        >"$log" 2>&1 </dev/null
    status=$?
    cat "$log" >>"$outfile"
    echo "# exit status $status" >>"$outfile"
    if [ "$status" -eq 124 ]; then
        echo "ncu: $title: stopped after ${limit}s (TJIT_NCU_LIMIT)" >&2
    fi
    if grep -q 'ERR_NVGPUCTRPERM' "$log"; then
        echo "ncu: $title: no permission to read the GPU's performance counters (ERR_NVGPUCTRPERM): no counters recorded" >&2
    elif grep -q '^==ERROR==' "$log"; then
        echo "ncu: $title: ncu failed (exit status $status):" >&2
        grep '^==ERROR==' "$log" | head -n 5 >&2
    elif ! grep -q '^"' "$log"; then
        echo "ncu: $title: no report (exit status $status); ncu said:" >&2
        grep -E '^==(WARNING|PROF)==' "$log" | tail -n 5 >&2
    fi
    grep '^"' "$log"
    rm -f "$log"
}

# report TITLE KIND: the CSV lines on stdin as a table of KIND (bank or
# kernels); a report of another shape is shown as ncu wrote it.
report_py=$(cat <<'EOF'
import csv
import sys

title, kind = sys.argv[1], sys.argv[2]
rows = list(csv.reader(sys.stdin))
if not rows:
    sys.exit(0)
head = rows[0]
if not all(h in head for h in ("ID", "Kernel Name", "Metric Name", "Metric Value")):
    print(f"{title}: the report has another shape; as ncu wrote it:")
    for r in rows[:40]:
        print("  " + ",".join(r))
    sys.exit(0)
col = {h: i for i, h in enumerate(head)}


# ncu scales values to a fitting unit (Mbyte, usecond, Kinst...): back to
# the base unit (byte, nanosecond, one).
TIME = {"nsecond": 1, "usecond": 1e3, "msecond": 1e6, "second": 1e9}
PREFIX = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def number(text, unit):
    try:
        v = float(text.replace(",", ""))
    except ValueError:
        return None
    if unit in TIME:
        return v * TIME[unit]
    if len(unit) > 1 and unit[0] in PREFIX and unit[1].islower():
        return v * PREFIX[unit[0]]
    return v


launches = {}  # (report, ID) -> name, grid, block and each metric's value
report = 0  # several ncu runs may be joined: each report repeats the header
for r in rows[1:]:
    if r == head:
        report += 1
    if r == head or len(r) < len(head):
        continue
    entry = launches.setdefault((report, r[col["ID"]]), {
        "name": r[col["Kernel Name"]],
        "grid": r[col["Grid Size"]] if "Grid Size" in col else "?",
        "block": r[col["Block Size"]] if "Block Size" in col else "?"})
    unit = r[col["Metric Unit"]] if "Metric Unit" in col else ""
    entry[r[col["Metric Name"]]] = number(r[col["Metric Value"]], unit)


def fmt(v, spec="{:.0f}"):
    return "-" if v is None else spec.format(v)


if not launches:
    print(f"{title}: the report holds no kernel launch")
elif kind == "bank":
    print(f"{title}: shared-memory bank conflicts, first launch of each kernel")
    print(f"  {'kernel':<28}{'ld instrs':>11}{'ld wavefr.':>12}{'ld confl.':>11}"
          f"{'st instrs':>11}{'st wavefr.':>12}{'st confl.':>11}")
    total, counted = 0, 0
    for e in launches.values():
        v = {}
        for op in ("ld", "st"):
            v["i" + op] = e.get(f"smsp__sass_inst_executed_op_shared_{op}.sum")
            v["w" + op] = e.get(f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum")
            v["c" + op] = e.get(f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum")
        print(f"  {e['name'][:27]:<28}{fmt(v['ild']):>11}{fmt(v['wld']):>12}{fmt(v['cld']):>11}"
              f"{fmt(v['ist']):>11}{fmt(v['wst']):>12}{fmt(v['cst']):>11}")
        if v["cld"] is not None and v["cst"] is not None:
            total += v["cld"] + v["cst"]
            counted += 1
    if counted:
        verdict = "ZERO bank conflicts" if total == 0 else f"{total:.0f} bank conflicts"
        print(f"  verdict: {verdict} in {counted} kernel launch(es)")
elif kind == "matmul":
    # Launches 0, 2, 4, ... are one per configuration (each runs twice);
    # the runs' reports are joined by launch ID.
    by_id = {}
    for (rep, lid), e in launches.items():
        by_id.setdefault(int(lid), {}).update(e)
    print(f"{title}: one launch per configuration (gpu_matmul --profile order)")
    print(f"  {'#':>3}{'grid':>12}{'block':>12}{'regs':>6}{'CTA/SM':>7}{'occ.%':>7}{'us':>9}{'tensor%':>9}"
          f"{'Minstr':>8}{'ld confl.':>11}{'st confl.':>11}  top stalls (warp cycles per issue)")
    stall = "smsp__average_warps_issue_stalled_"
    for lid in sorted(by_id)[::2]:
        e = by_id[lid]
        ns = e.get("gpu__time_duration.sum")
        stalls = sorted(((v, k[len(stall):].replace("_per_issue_active.ratio", ""))
                         for k, v in e.items() if k.startswith(stall) and v is not None),
                        reverse=True)[:3]
        print(f"  {lid:>3}{e.get('grid', '?'):>12}{e.get('block', '?'):>12}"
              f"{fmt(e.get('launch__registers_per_thread')):>6}"
              f"{fmt(e.get('launch__occupancy_limit_registers')):>7}"
              f"{fmt(e.get('sm__warps_active.avg.pct_of_peak_sustained_active'), '{:.1f}'):>7}"
              f"{fmt(None if ns is None else ns / 1e3, '{:.1f}'):>9}"
              f"{fmt(e.get('sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active'), '{:.1f}'):>9}"
              f"{fmt(None if e.get('smsp__inst_executed.sum') is None else e['smsp__inst_executed.sum'] / 1e6, '{:.1f}'):>8}"
              f"{fmt(e.get('l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum')):>11}"
              f"{fmt(e.get('l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum')):>11}  "
              + ", ".join(f"{n} {v:.1f}" for v, n in stalls))
    print("  (CTA/SM: blocks per SM the registers allow; occ.%: achieved occupancy; tensor%:"
          " sm__pipe_tensor_op_hmma_cycles_active of peak; conflicts: shared loads"
          " (ldmatrix too) and stores; a missing column is a metric this ncu lacks)")
else:
    print(f"{title}: first launch of each kernel and launch shape")
    print(f"  {'kernel':<24}{'grid':>14}{'block':>12}{'regs':>6}{'CTA/SM':>8}{'occup.%':>9}"
          f"{'warp instrs':>13}{'ld instrs':>11}{'ld reqs':>10}{'ld sectors':>12}"
          f"{'DRAM MB':>9}{'us':>9}")
    shown = set()
    for e in launches.values():
        key = (e["name"], e["grid"], e["block"])
        if key in shown:
            continue
        shown.add(key)
        dram = [e.get("dram__bytes_read.sum"), e.get("dram__bytes_write.sum")]
        dram_mb = None if None in dram else sum(dram) / 1e6
        ns = e.get("gpu__time_duration.sum")
        print(f"  {e['name'][:23]:<24}{e['grid']:>14}{e['block']:>12}"
              f"{fmt(e.get('launch__registers_per_thread')):>6}"
              f"{fmt(e.get('launch__occupancy_limit_registers')):>8}"
              f"{fmt(e.get('sm__warps_active.avg.pct_of_peak_sustained_active'), '{:.1f}'):>9}"
              f"{fmt(e.get('smsp__inst_executed.sum')):>13}"
              f"{fmt(e.get('smsp__sass_inst_executed_op_global_ld.sum')):>11}"
              f"{fmt(e.get('l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum')):>10}"
              f"{fmt(e.get('l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum')):>12}"
              f"{fmt(dram_mb, '{:.1f}'):>9}{fmt(None if ns is None else ns / 1e3, '{:.1f}'):>9}")
    print("  (CTA/SM: blocks per SM the registers allow; occup.%: achieved occupancy;"
          " us: gpu__time_duration)")
EOF
)
report() {
    python3 -c "$report_py" "$1" "$2"
}

# cuBLAS's 4096^3 product through torch (argument: f16, bf16 or tf32), NN
# then NT, each launched twice; its kernels' names as cuBLAS 12 on Hopper
# gives them.
cublas_py=$(cat <<'EOF'
import sys
import torch
dtype = {"f16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32}[sys.argv[1]]
torch.backends.cuda.matmul.allow_tf32 = sys.argv[1] == "tf32"
a, b = (torch.randn(4096, 4096, device="cuda", dtype=dtype) for _ in range(2))
for rhs in (b, b.t()):
    for _ in range(2):
        a @ rhs
torch.cuda.synchronize()
EOF
)
cublas_regex='(nvjet|sm90|gemm|cutlass)'

{
    echo
    echo "######## scripts/gpu-ncu.sh $part ($(date -u '+%Y-%m-%d %H:%M UTC'))"
    echo "ncu: $ncu_bin ($("$ncu_bin" --version 2>&1 | tail -n 1))"
} >>"$outfile"
echo "ncu: $("$ncu_bin" --version 2>&1 | tail -n 1)"

case $part in
    transpose)
        metrics=l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
        metrics+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
        metrics+=,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum
        metrics+=,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum
        metrics+=,smsp__sass_inst_executed_op_shared_ld.sum
        metrics+=,smsp__sass_inst_executed_op_shared_st.sum
        # One ncu run per kernel, each limited to its first launch: the
        # sample launches each kernel a dozen times (check, then timing).
        for kernel in transpose_trans transpose_pointers; do
            TJIT_DEVICE=gpu run_ncu "samples/transpose 1024 1024: $kernel" "$metrics" \
                "$kernel" 1 "$root/samples/transpose" 1024 1024
        done | report "transpose sample, 1024 x 1024, 32 x 32 tiles" bank
        # What tjit predicted for the same launches (the explainer), to set
        # beside the counters: all of it in OUTFILE, its conflict lines here.
        {
            echo "======== samples/transpose --explain 1024 1024"
            TJIT_DEVICE=gpu timeout "$limit" "$root/samples/transpose" --explain 1024 1024 2>&1
            echo "# exit status $?"
        } >>"$outfile" </dev/null
        sed -n '/^======== samples\/transpose --explain/,$p' "$outfile" |
            grep -i 'conflict' | head -n 8 | sed 's/^/  explainer: /'
        ;;
    kernels)
        metrics=launch__registers_per_thread,launch__occupancy_limit_registers
        metrics+=,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
        metrics+=,smsp__sass_inst_executed_op_global_ld.sum
        metrics+=,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
        metrics+=,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
        metrics+=,dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum
        # tjit's kernels are named tjk_NAME, Triton's NAME.
        regex='^(tjk_)?(softmax_kernel|softmax_fast_kernel|box_filter_kernel)'
        # About 40 launches each side (a check, a warm-up and a timed run
        # per configuration, and the cold-compile runs of softmax).
        run_ncu "tjit: bench/gpu_bench --quick" "$metrics" "$regex" 100 \
            "$root/bench/gpu_bench" --quick --runs 1 --warmup 1 |
            report "tjit (softmax 256 x 4096, box filter 1024 x 1024)" kernels
        PYTHONUNBUFFERED=1 run_ncu "Triton: bench/triton_bench.py --quick" "$metrics" "$regex" 100 \
            python3 bench/triton_bench.py --quick --runs 1 --warmup 1 |
            report "Triton (softmax 256 x 4096, box filter 1024 x 1024)" kernels
        ;;
    matmul)
        # gpu_matmul --profile: 4096^3 NN then NT, each configuration
        # launched twice (check, run): eight configurations.
        # Three ncu runs, so that a metric this ncu lacks loses only its own
        # run: launch shape and shared-memory conflicts; the tensor pipe; the
        # stall reasons.
        for dtype in ${TJIT_NCU_MATMUL_DTYPE:-f16}; do
            case $dtype in
                f16 | bf16) nconfigs=8 ;;
                tf32) nconfigs=8 ;;
                *) echo "TJIT_NCU_MATMUL_DTYPE=$dtype: not f16, bf16 or tf32" >&2; exit 2 ;;
            esac
            count=$((nconfigs * 4))
            prog=("$root/bench/gpu_matmul" --profile "$dtype")
            metrics=launch__registers_per_thread,gpu__time_duration.sum,smsp__inst_executed.sum
            metrics+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
            metrics+=,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
            tensor=sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
            stalls=""
            for reason in long_scoreboard short_scoreboard barrier mio_throttle math_pipe_throttle \
                wait not_selected lg_throttle dispatch_stall no_instruction; do
                stalls+=${stalls:+,}smsp__average_warps_issue_stalled_${reason}_per_issue_active.ratio
            done
            {
                run_ncu "tjit matmul: shape, conflicts" "$metrics" '^tjk_matmul' "$count" "${prog[@]}"
                run_ncu "tjit matmul: tensor pipe" "$tensor" '^tjk_matmul' "$count" "${prog[@]}"
                run_ncu "tjit matmul: stalls" "$stalls" '^tjk_matmul' "$count" "${prog[@]}"
            } | report "tjit matmul $dtype 4096^3, $nconfigs configurations NN then $nconfigs NT (bench/gpu_matmul --profile $dtype)" matmul
            # The same configurations in Triton on mma.sync (its kernel as
            # bench/triton_matmul.py writes it), the reference of the bar.
            triton=(python3 bench/triton_matmul.py --profile "$dtype")
            export DISABLE_MMA_V3=1 PYTHONUNBUFFERED=1
            {
                run_ncu "Triton mma.sync matmul: shape, conflicts" "$metrics" '^matmul_kernel' "$count" "${triton[@]}"
                run_ncu "Triton mma.sync matmul: tensor pipe" "$tensor" '^matmul_kernel' "$count" "${triton[@]}"
                run_ncu "Triton mma.sync matmul: stalls" "$stalls" '^matmul_kernel' "$count" "${triton[@]}"
            } | report "Triton mma.sync matmul $dtype 4096^3, the same configurations (triton_matmul.py --profile $dtype)" matmul
            # cuBLAS (through torch), the bar of the benchmark: 4096^3 NN
            # then NT, each twice, whatever kernels it picks.
            cublas=(python3 -c "$cublas_py" "$dtype")
            {
                run_ncu "cuBLAS matmul: shape, conflicts" "$metrics" "$cublas_regex" 4 "${cublas[@]}"
                run_ncu "cuBLAS matmul: tensor pipe" "$tensor" "$cublas_regex" 4 "${cublas[@]}"
                run_ncu "cuBLAS matmul: stalls" "$stalls" "$cublas_regex" 4 "${cublas[@]}"
            } | report "cuBLAS matmul $dtype 4096^3 through torch: NN twice, NT twice" matmul
        done
        ;;
    attention)
        # tjit: 8 configurations, Triton: 4, each launched twice (check, run).
        metrics=launch__registers_per_thread,launch__occupancy_limit_registers
        metrics+=,sm__warps_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum
        metrics+=,smsp__inst_executed.sum
        tensor=sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
        stalls=""
        for reason in long_scoreboard short_scoreboard barrier mio_throttle math_pipe_throttle \
            wait not_selected dispatch_stall; do
            stalls+=${stalls:+,}smsp__average_warps_issue_stalled_${reason}_per_issue_active.ratio
        done
        prog=("$root/bench/gpu_attention" --profile)
        {
            run_ncu "tjit attention: shape" "$metrics" '^tjk_attention' 16 "${prog[@]}"
            run_ncu "tjit attention: tensor pipe" "$tensor" '^tjk_attention' 16 "${prog[@]}"
            run_ncu "tjit attention: stalls" "$stalls" '^tjk_attention' 16 "${prog[@]}"
        } | report "tjit attention 4 x 32 x 4096, d 64, causal: 8 configurations (gpu_attention --profile)" matmul
        triton=(python3 bench/triton_attention.py --profile)
        export PYTHONUNBUFFERED=1
        {
            run_ncu "Triton attention: shape" "$metrics" '^attention_kernel' 8 "${triton[@]}"
            run_ncu "Triton attention: tensor pipe" "$tensor" '^attention_kernel' 8 "${triton[@]}"
            run_ncu "Triton attention: stalls" "$stalls" '^attention_kernel' 8 "${triton[@]}"
        } | report "Triton attention, the same problem: 4 configurations (triton_attention.py --profile)" matmul
        ;;
esac
exit 0
