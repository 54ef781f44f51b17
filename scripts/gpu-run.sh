#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# gpu-run.sh — on the GPU machine: tjit's whole test suite, its samples and
# its GPU benchmark, from the build that scripts/gpu-pack.sh staged.
#
# Run from the repository's root (the device tool's working copy) with the
# carry folder beside it, in one call:  bash scripts/gpu-run.sh [CARRY-DIR]
# (default carry). It unpacks CARRY-DIR/tjit-gpu.tar.xz under $TMPDIR,
# puts the staged libtjit.so.0 on LD_LIBRARY_PATH (and the fallback
# libraries only where the machine lacks one), then:
#
#  1. tests: every program of make check's TESTS as make check runs it — the
#     test programs on the CPU, tests/gpu/NAME.gpu as tests/NAME on the GPU
#     through tests/gpu-test.sh, tests/samples.sh on the GPU and again on the
#     CPU — in parallel, each under a time limit. (Other test scripts check
#     the sources with compilers, which is make check's business here.) A test's points are read
#     from its TAP output: ok, not ok, skipped, and whether the count matched
#     its plan and the program exited 0.
#  2. samples: each sample once more at its default (large) size on the GPU;
#     then compute-sanitizer (memcheck, racecheck, synccheck) on the matmul
#     samples at 512^3, on attention, grouped_matmul, test_tma and test_cluster_pairs (TJIT_SKIP_SANITIZER=1
#     leaves it out); then the SASS of their wgmma kernels: ptxas and
#     cuobjdump, HGMMA counted (TJIT_SKIP_SASS=1 leaves it out).
#  3. Nsight Compute on the transpose sample: its shared-memory bank
#     conflicts (scripts/gpu-ncu.sh transpose).
#  4. the benchmark: bench/gpu_compare.sh, where it exists, under a limit
#     (TJIT_SKIP_BENCH=1 leaves it out, with 5-7; TJIT_SKIP_COMPARE=1,
#     with 5 alone).
#  5. Nsight Compute on softmax and the box filter, tjit against Triton
#     (scripts/gpu-ncu.sh kernels; left out with the benchmark).
#  6. the matmul benchmark: bench/gpu_matmul.sh (tjit against cuBLAS and
#     Triton, also on mma.sync), under TJIT_MATMUL_LIMIT (left out with the
#     benchmark, or alone with TJIT_SKIP_MATMUL=1). Its JSON lines are
#     appended to bench/tjit.jsonl and bench/triton.jsonl, its table to
#     bench/table.txt and the summary: the device tool brings back 8 files.
#  6b. the attention benchmark: bench/gpu_attention.sh (tjit against Triton
#     and torch's SDPA) under TJIT_ATTENTION_LIMIT (200; left out with the
#     benchmark, or alone with TJIT_SKIP_ATTENTION=1), appended likewise.
#  6c. the LLM shapes (bf16) and fp8: bench/gpu_llm.sh (tjit against
#     cuBLAS and torch._scaled_mm) under TJIT_LLM_LIMIT (150; left out with
#     the benchmark, or alone with TJIT_SKIP_LLM=1), appended likewise.
#  6d. layer norm (forward, backward dx) and dropout: bench/gpu_norm.sh (tjit
#     against Triton and torch) under TJIT_NORM_LIMIT (120; left out with the
#     benchmark, or alone with TJIT_SKIP_NORM=1), appended likewise.
#  7. Nsight Compute on the matmul's configurations, tjit's and Triton's
#     (scripts/gpu-ncu.sh matmul), and on attention's (scripts/gpu-ncu.sh
#     attention); left out with the benchmark, not with TJIT_SKIP_MATMUL.
#     TJIT_SKIP_TESTS=1 leaves out 1 and 2 (the sanitizers, 2b, still run:
#     TJIT_SKIP_SANITIZER=1 leaves them out).
#  TJIT_SKIP_NCU=1 leaves out 3, 5 and 7 (TJIT_NCU_PARTS="matmul" keeps only
#  the parts it names); a failure of ncu (no permission for the counters,
#  say) is reported and changes nothing else.
#
# Limits in seconds: TJIT_TEST_LIMIT per test program (300),
# TJIT_SAMPLE_LIMIT per sample (60), TJIT_BENCH_LIMIT for the benchmark
# (240), TJIT_NCU_LIMIT per ncu run (60; 2 runs in 3, 2 in 5),
# TJIT_MATMUL_ONLY=DTYPE runs the matmul benchmark's problems of that dtype alone;
# TJIT_MATMUL_LIMIT for the matmul benchmark (210; its three parts get a
# third each);
# TJIT_TEST_JOBS test programs at a time (8). Other variables reach the
# programs, e.g. TJ_DIFF_PROGRAMS for the differential test. Expected on an
# H200: tests and samples under a minute, each ncu part under a minute, the
# benchmark under two minutes, the matmul benchmark under three: about 8
# minutes in all. With every limit hit the benchmarks and the ncu runs
# would take 9.5 minutes: mind the device call's own limit (600 s), and
# leave a part out (TJIT_SKIP_NCU=1, TJIT_SKIP_MATMUL=1) rather than raise one.
#
# Output: a summary on stdout (totals per device, then every failing point
# with its diagnostics) and in $OUT: summary.txt, tests-cpu.log and
# tests-gpu.log (every test's full output), samples.log, ncu.txt (all that
# ncu printed) and bench/ (what gpu_compare.sh writes: 3 files) — the
# device tool's 8 files. Without $OUT the files go to a temporary folder,
# named at the end. The exit status is 0 when every test passed.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 2
carry=${1:-carry}
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/tjit-gpu-run-XXXXXX")}
TEST_LIMIT=${TJIT_TEST_LIMIT:-300}     # seconds per test program
SAMPLE_LIMIT=${TJIT_SAMPLE_LIMIT:-60}  # seconds per sample
BENCH_LIMIT=${TJIT_BENCH_LIMIT:-240}   # seconds for the benchmark
JOBS=${TJIT_TEST_JOBS:-8}
start=$(date +%s)
elapsed() { echo "$(($(date +%s) - start))s"; }

mkdir -p "$out"
summary=$out/summary.txt
: >"$summary"
say() { printf '%s\n' "$*" | tee -a "$summary"; }

# --- unpack -----------------------------------------------------------------
package=$carry/tjit-gpu.tar.xz
[ -f "$package" ] || { say "gpu-run: no $package (run scripts/gpu-pack.sh here first)"; exit 2; }
stage=${TMPDIR:-/tmp}/tjit-gpu-run-stage
rm -rf "$stage" && mkdir -p "$stage" || exit 2
if command -v xz >/dev/null 2>&1; then
    tar -C "$stage" -xJf "$package"
else
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$package" "$stage"
fi || { say "gpu-run: cannot unpack $package"; exit 2; }
root=$(cd "$stage/tjit" && pwd)

export LD_LIBRARY_PATH=$root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if ldd "$root/lib/libtjit.so.0" | grep -q 'not found'; then
    export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$root/fallback-lib
fi

say "== tjit on the GPU machine ($(hostname), $(date -u '+%Y-%m-%d %H:%M UTC'))"
say "$(sed 's/^/build: /' "$root/BUILD-INFO")"
say "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 1)"
say "has_gpu: $("$root/tests/has_gpu" 2>&1)"
"$root/tests/has_gpu" >/dev/null 2>&1
has_gpu_status=$?
missing=$(ldd "$root/lib/libtjit.so.0" | grep 'not found')
[ -z "$missing" ] || say "libtjit.so.0 still lacks: $missing"

status=0
logs=$(mktemp -d "${TMPDIR:-/tmp}/tjit-test-logs-XXXXXX") # every part's scratch, removed at the end
failures=$logs/failures
: >"$failures"
if [ -n "${TJIT_SKIP_TESTS:-}" ]; then
    say "== tests and samples skipped (TJIT_SKIP_TESTS)"
else
# --- 1. tests ---------------------------------------------------------------
# run_test DEVICE ENTRY LOGFILE: runs one entry of the TESTS list.
run_test() {
    local device=$1 entry=$2 log=$3 name status
    name=${entry#tests/}
    {
        case $entry in
            *.gpu) # the block-pointer tests' real (TMA, wgmma) variants through ptxas too
                case $name in
                    gpu/test_tma.gpu | gpu/test_tensor_desc.gpu | gpu/test_block_ptr.gpu | gpu/test_cluster_pairs.gpu | \
                    gpu/test_stream_k.gpu | gpu/test_shared_operand.gpu)
                        TJIT_PTXAS=$(command -v ptxas || true) timeout "$TEST_LIMIT" sh tests/gpu-test.sh \
                            "$root/$entry" ;;
                    *) timeout "$TEST_LIMIT" sh tests/gpu-test.sh "$root/$entry" ;;
                esac ;;
            *.bounds) # as tests/bounds-test.sh: the same run, TJIT_CHECK_BOUNDS=1
                local checked=${entry##*/}
                checked=${checked%.bounds}
                case $checked in
                    samples) TJIT_CHECK_BOUNDS=1 TJIT_DEVICE=$device SAMPLES_DIR=$root/samples \
                                 timeout "$TEST_LIMIT" sh tests/samples.sh ;;
                    gpu-*) TJIT_CHECK_BOUNDS=1 timeout "$TEST_LIMIT" sh tests/gpu-test.sh \
                               "$root/tests/gpu/${checked#gpu-}.gpu" ;;
                    *) TJIT_CHECK_BOUNDS=1 timeout "$TEST_LIMIT" "$root/tests/$checked" ;;
                esac ;;
            tests/samples.sh)
                if [ "$device" = gpu ] && [ "$has_gpu_status" -eq 77 ]; then
                    echo "1..0 # SKIP no GPU"
                else
                    TJIT_DEVICE=$device SAMPLES_DIR=$root/samples timeout "$TEST_LIMIT" sh tests/samples.sh
                fi ;;
            *)
                timeout "$TEST_LIMIT" "$root/$entry" ;;
        esac
        status=$?
        [ "$status" -eq 124 ] && echo "Bail out! timed out after ${TEST_LIMIT}s"
        echo "# exit status $status"
    } >"$log" 2>&1 </dev/null
}
export -f run_test
export root TEST_LIMIT has_gpu_status

# tap_counts LOG: "ok notok skip planned exit bailed" of one test's output.
tap_counts() {
    awk '
        /^1\.\.[0-9]+/ { planned = substr($1, 4) + 0 }
        /^ok / { if ($0 ~ /# [Ss][Kk][Ii][Pp]/) skip++; else ok++ }
        /^not ok / { if ($0 ~ /# [Tt][Oo][Dd][Oo]/) ok++; else notok++ }
        /^Bail out!/ { bailed = 1 }
        /^# exit status / { status = $4 }
        END { printf "%d %d %d %d %d %d\n", ok, notok, skip, planned, status, bailed }' "$1"
}

jobs_list=$logs/jobs
: >"$jobs_list"
while read -r entry; do
    [ -n "$entry" ] || continue
    case $entry in
        *.gpu | */gpu-*.bounds | */samples.bounds) echo "gpu $entry" ;;
        tests/samples.sh) echo "gpu $entry"; echo "cpu $entry" ;;
        *.sh) ;; # other scripts check the sources (headers, compilers): make check's business
        *) echo "cpu $entry" ;;
    esac
done <"$root/tests.list" >"$jobs_list"

say ""
say "== tests ($(wc -l <"$jobs_list") runs, $JOBS at a time; $(elapsed))"
# shellcheck disable=SC2016  # expanded by the inner shell
xargs -P "$JOBS" -L 1 bash -c 'run_test "$0" "$1" "'"$logs"'/$0-$(echo "$1" | tr / _).log"' <"$jobs_list"

status=0
for device in cpu gpu; do
    total_ok=0 total_bad=0 total_skip=0
    : >"$out/tests-$device.log"
    while read -r dev entry; do
        [ "$dev" = "$device" ] || continue
        log=$logs/$dev-$(echo "$entry" | tr / _).log
        read -r ok notok skip planned exit_status bailed < <(tap_counts "$log")
        verdict=PASS
        if [ "$notok" -gt 0 ] || [ "$bailed" -eq 1 ] || [ "$exit_status" -ne 0 ] ||
            { [ "$planned" -gt 0 ] && [ $((ok + notok + skip)) -ne "$planned" ]; }; then
            verdict=FAIL
            status=1
        elif [ "$ok" -eq 0 ] && [ "$skip" -eq 0 ]; then
            skip=1 # "1..0 # SKIP": the whole program was skipped
            verdict=SKIP
        fi
        # A program that died early is one failed point besides those it printed.
        extra=0
        if [ "$verdict" = FAIL ] && [ "$notok" -eq 0 ]; then extra=1; fi
        total_ok=$((total_ok + ok))
        total_bad=$((total_bad + notok + extra))
        total_skip=$((total_skip + skip))
        printf '%-4s %-34s %s  ok %d, not ok %d, skip %d, plan %d, exit %d%s\n' "$device" "$entry" \
            "$verdict" "$ok" "$notok" "$skip" "$planned" "$exit_status" \
            "$([ "$bailed" -eq 1 ] && echo ', bailed out')" | tee -a "$summary"
        { echo "======== $device $entry: $verdict"; cat "$log"; echo; } >>"$out/tests-$device.log"
        if [ "$verdict" = FAIL ]; then
            {
                echo "---- $device $entry"
                # Each failing point with its diagnostics, those printed
                # before it (mismatches) and after it (launch errors).
                awk '/^not ok / { for (i = 0; i < nb; i++) print before[i]; nb = 0
                                  print; show = 1; n = 0; next }
                     /^(ok |1\.\.)/ { show = 0; nb = 0; next }
                     /^Bail out!/ { print; next }
                     show { if (n++ < 12) print; next }
                     /^#/ { if (nb < 12) before[nb++] = $0 }' "$log" | head -n 150
                [ "$notok" -eq 0 ] && tail -n 15 "$log"
            } >>"$failures"
        fi
    done <"$jobs_list"
    say "$device total: $total_ok passed, $total_bad failed, $total_skip skipped"
done
say "tests done ($(elapsed))"

# --- 2. samples at their default sizes on the GPU ------------------------------
: >"$out/samples.log"
say ""
say "== samples at default sizes on the GPU"
for sample in "$root"/samples/*; do
    [ -x "$sample" ] || continue
    name=$(basename "$sample")
    {
        echo "======== $name"
        TJIT_DEVICE=gpu timeout "$SAMPLE_LIMIT" "$sample"
        echo "# exit status $?"
    } >>"$out/samples.log" 2>&1 </dev/null
    say "$(printf '%-12s %s' "$name" "$(tail -n 1 "$out/samples.log")")"
done
say "samples done ($(elapsed))"
fi

# The samples whose kernels run wgmma on Hopper, at small sizes: what 2b
# runs under compute-sanitizer and 2c reads the SASS of.
wgmma_samples=("samples/matmul 512 512 512" "samples/matmul_block_ptr 512 512 512" "samples/attention 1 2 300"
    "samples/attention_bwd 1 2 256" "samples/grouped_matmul 3 257 300 129")

# --- 2b. compute-sanitizer on the matmul and attention samples and test_tma ------
# memcheck, racecheck and synccheck on matmul and matmul_block_ptr at 512^3
# (the wgmma path on sm_90a: rings, fences, barriers), on attention at
# 1 x 2 x 300 (its sixteen kernels, ragged tails, a producer warpgroup
# across two loops), on attention_bwd (five dots a step, each B from its
# ring; in its tutorial form one ring read by two dots), on test_tma
# (producers with 8 and 16 consumer warps, persistent kernels, phases that
# wrap), on test_cluster_pairs (block pairs: multicast copies, releases in
# the peer) and on test_shared_operand (one slot read by two wgmmas, the
# last releasing it); each run's output goes to
# samples.log, its ERROR SUMMARY line to the summary.
# TJIT_SKIP_SANITIZER=1 leaves it out; TJIT_SANITIZER_LIMIT per run (120 s).
say ""
if [ -n "${TJIT_SKIP_SANITIZER:-}" ]; then
    say "== compute-sanitizer skipped (TJIT_SKIP_SANITIZER)"
elif ! command -v compute-sanitizer >/dev/null 2>&1; then
    say "== compute-sanitizer skipped: not installed"
elif [ "$has_gpu_status" -ne 0 ]; then
    say "== compute-sanitizer skipped: no usable GPU (has_gpu exit $has_gpu_status)"
else
    say "== compute-sanitizer on the matmul samples (512^3), attention (1 x 2 x 300), attention_bwd, grouped_matmul, test_tma, test_cluster_pairs and test_shared_operand ($(elapsed))"
    for run in "${wgmma_samples[@]}" "tests/test_tma" "tests/test_cluster_pairs" "tests/test_shared_operand"; do
        sample=${run%% *}
        sample=${sample#*/}
        for tool in memcheck racecheck synccheck; do
            {
                echo "======== compute-sanitizer --tool $tool $run"
                # shellcheck disable=SC2086  # run is a program and its sizes
                TJIT_DEVICE=gpu TJIT_TEST_DEVICE=gpu timeout "${TJIT_SANITIZER_LIMIT:-120}" \
                    compute-sanitizer --tool "$tool" --error-exitcode 3 "$root/"$run
                echo "# exit status $?"
            } >>"$out/samples.log" 2>&1 </dev/null
            say "$(printf '%-16s %-9s %s; %s' "$sample" "$tool" \
                "$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/samples.log" | tail -n 1)" \
                "$(tail -n 1 "$out/samples.log")")"
        done
    done
    say "compute-sanitizer done ($(elapsed))"
fi

# --- 2c. SASS: every wgmma kernel runs HGMMA -------------------------------------
# The matmul samples (512^3), attention (1 x 2 x 300), attention_bwd,
# grouped_matmul and the matmul benchmark's smoke test (f16, bf16 and TF32 at 512^3 and
# 1024^3) compile afresh on the GPU (TJIT_CACHE=0) with TJIT_DUMP=ptx;
# each kernel's PTX that issues wgmma.mma_async is assembled by ptxas for
# sm_90a and disassembled by cuobjdump, and its HGMMA instructions are
# counted into the summary: a kernel with wgmma and no HGMMA is a failure
# (issue 11: "SASS shows HGMMA"). TJIT_SKIP_SASS=1 leaves it out; so does a machine without
# ptxas or cuobjdump, or without a usable GPU.
say ""
if [ -n "${TJIT_SKIP_SASS:-}" ]; then
    say "== SASS check skipped (TJIT_SKIP_SASS)"
elif ! command -v ptxas >/dev/null 2>&1 || ! command -v cuobjdump >/dev/null 2>&1; then
    say "== SASS check skipped: no ptxas or cuobjdump"
elif [ "$has_gpu_status" -ne 0 ]; then
    say "== SASS check skipped: no usable GPU (has_gpu exit $has_gpu_status)"
else
    say "== SASS of the wgmma kernels of matmul, matmul_block_ptr (512^3), attention (1 x 2 x 300), attention_bwd, grouped_matmul and gpu_matmul --quick (f16, bf16, tf32) ($(elapsed))"
    sass=$logs/sass
    mkdir -p "$sass"
    for run in "${wgmma_samples[@]}" "bench/gpu_matmul --quick --runs 1 --warmup 1"; do
        # shellcheck disable=SC2086  # run is a program and its arguments
        TJIT_DEVICE=gpu TJIT_CACHE=0 TJIT_DUMP=ptx timeout "$SAMPLE_LIMIT" "$root/"$run \
            2>"$sass/dump" >/dev/null </dev/null
        run_status=$?
        prog=${run%% *}
        if ! grep -q '^// ---- tjit: PTX of kernel ' "$sass/dump"; then
            status=1
            { echo "---- SASS: $run dumped no kernel (exit status $run_status):"; grep -v '^\s*$' "$sass/dump" | tail -n 3; } |
                tee -a "$summary" >>"$failures"
        fi
        # one file per kernel compiled: the dump's header line, then its PTX
        awk -v dir="$sass" -v sample="${prog##*/}" '
            /^\/\/ ---- tjit: PTX of kernel / { n++; f = sprintf("%s/%s-%02d.ptx", dir, sample, n)
                                               split($0, q, "\047"); print q[2] > (f ".name"); next }
            n { print > f }' "$sass/dump"
    done
    for ptx in "$sass"/*.ptx; do
        [ -e "$ptx" ] || continue
        wgmma=$(grep -c 'wgmma.mma_async' "$ptx")
        [ "$wgmma" -gt 0 ] || continue
        name="$(basename "$ptx" .ptx) $(cat "$ptx.name")"
        if ptxas -arch=sm_90a "$ptx" -o "$ptx.cubin" 2>"$ptx.err"; then
            hgmma=$(cuobjdump -sass "$ptx.cubin" | grep -c 'HGMMA')
            say "$(printf '%-36s %3d wgmma in its PTX, %3d HGMMA in its SASS' "$name" "$wgmma" "$hgmma")"
            [ "$hgmma" -gt 0 ] || { status=1; echo "---- SASS: $name has wgmma and no HGMMA" >>"$failures"; }
        else
            status=1
            { echo "---- SASS: ptxas failed on $name"; head -n 5 "$ptx.err"; } | tee -a "$summary" >>"$failures"
        fi
    done
    say "SASS check done ($(elapsed))"
fi

# --- 3. Nsight Compute: the transpose sample's bank conflicts --------------------
# ncu_part PART: scripts/gpu-ncu.sh PART, its summary into ours (it reports
# its own failures and always returns).
ncu_part() {
    say ""
    if [ -n "${TJIT_SKIP_NCU:-}" ]; then
        say "== ncu $1 skipped (TJIT_SKIP_NCU)"
    elif [ -n "${TJIT_NCU_PARTS:-}" ] && ! [[ " $TJIT_NCU_PARTS " == *" $1 "* ]]; then
        say "== ncu $1 skipped (not in TJIT_NCU_PARTS)"
    elif [ "$has_gpu_status" -ne 0 ]; then
        say "== ncu $1 skipped: no usable GPU (has_gpu exit $has_gpu_status)"
    else
        say "== ncu $1 (scripts/gpu-ncu.sh; all its output in ncu.txt; $(elapsed))"
        bash scripts/gpu-ncu.sh "$1" "$root" "$out/ncu.txt" 2>&1 | tee -a "$summary"
    fi
}
ncu_part transpose

# --- 4. the benchmark -----------------------------------------------------------
say ""
if [ -n "${TJIT_SKIP_BENCH:-}" ] || [ -n "${TJIT_SKIP_COMPARE:-}" ]; then
    say "== benchmark skipped (TJIT_SKIP_BENCH or TJIT_SKIP_COMPARE)"
elif [ -f bench/gpu_compare.sh ] && [ -x "$root/bench/gpu_bench" ]; then
    say "== bench/gpu_compare.sh (limit ${BENCH_LIMIT}s; $(elapsed))"
    GPU_COMPARE_OUT=$out/bench timeout "$BENCH_LIMIT" bash bench/gpu_compare.sh "$root/bench/gpu_bench" \
        >"$logs/bench.out" 2>&1
    say "gpu_compare exit status $?"
    # The table (also in bench/table.txt), else the end of what it printed.
    if grep -q '^devices:' "$logs/bench.out"; then
        sed -n '/^devices:/,$p' "$logs/bench.out" | tee -a "$summary"
    else
        tail -n 40 "$logs/bench.out" | tee -a "$summary"
    fi
    # --- 5. Nsight Compute: softmax and the box filter, tjit against Triton
    ncu_part kernels
else
    say "== no bench/gpu_compare.sh or gpu_bench: benchmark skipped"
fi

# --- 6. the matmul benchmark ----------------------------------------------------
MATMUL_LIMIT=${TJIT_MATMUL_LIMIT:-210}
say ""
if [ -n "${TJIT_SKIP_BENCH:-}" ] || [ -n "${TJIT_SKIP_MATMUL:-}" ]; then
    say "== matmul benchmark skipped (TJIT_SKIP_BENCH or TJIT_SKIP_MATMUL)"
elif [ -f bench/gpu_matmul.sh ] && [ -x "$root/bench/gpu_matmul" ]; then
    say "== bench/gpu_matmul.sh (limit ${MATMUL_LIMIT}s; $(elapsed))"
    mkdir -p "$out/bench"
    GPU_MATMUL_OUT=$logs/matmul TJIT_MATMUL_PART_LIMIT=$((MATMUL_LIMIT / 3)) \
        timeout $((MATMUL_LIMIT + 10)) bash bench/gpu_matmul.sh "$root/bench/gpu_matmul" \
        ${TJIT_MATMUL_ONLY:+-- --only "$TJIT_MATMUL_ONLY"} >"$logs/matmul.out" 2>&1
    say "gpu_matmul exit status $?"
    cat "$logs"/matmul/tjit.jsonl >>"$out/bench/tjit.jsonl" 2>/dev/null
    cat "$logs"/matmul/triton.jsonl "$logs"/matmul/triton_mma_v2.jsonl \
        >>"$out/bench/triton.jsonl" 2>/dev/null
    if grep -q '^devices:' "$logs/matmul.out"; then
        sed -n '/^devices:/,$p' "$logs/matmul.out" | tee -a "$out/bench/table.txt" | tee -a "$summary"
    else
        tail -n 40 "$logs/matmul.out" | tee -a "$summary"
    fi
else
    say "== no bench/gpu_matmul.sh or gpu_matmul: matmul benchmark skipped"
fi
# --- 6b. the attention benchmark -------------------------------------------------
ATTENTION_LIMIT=${TJIT_ATTENTION_LIMIT:-200}
say ""
if [ -n "${TJIT_SKIP_BENCH:-}" ] || [ -n "${TJIT_SKIP_ATTENTION:-}" ]; then
    say "== attention benchmark skipped (TJIT_SKIP_BENCH or TJIT_SKIP_ATTENTION)"
elif [ -f bench/gpu_attention.sh ] && [ -x "$root/bench/gpu_attention" ]; then
    say "== bench/gpu_attention.sh (limit ${ATTENTION_LIMIT}s; $(elapsed))"
    mkdir -p "$out/bench"
    GPU_ATTENTION_OUT=$logs/attention TJIT_ATTENTION_PART_LIMIT=$((ATTENTION_LIMIT / 2)) \
        timeout $((ATTENTION_LIMIT + 10)) bash bench/gpu_attention.sh "$root/bench/gpu_attention" \
        >"$logs/attention.out" 2>&1
    say "gpu_attention exit status $?"
    cat "$logs"/attention/tjit.jsonl >>"$out/bench/tjit.jsonl" 2>/dev/null
    cat "$logs"/attention/triton.jsonl >>"$out/bench/triton.jsonl" 2>/dev/null
    if grep -q '^devices:' "$logs/attention.out"; then
        sed -n '/^devices:/,$p' "$logs/attention.out" | tee -a "$out/bench/table.txt" | tee -a "$summary"
    else
        tail -n 40 "$logs/attention.out" | tee -a "$summary"
    fi
else
    say "== no bench/gpu_attention.sh or gpu_attention: attention benchmark skipped"
fi
# --- 6c, 6d. benchmarks of two parts, tjit's and its reference's -------------------
# paired_bench NAME LIMIT REFERENCE WHAT: bench/gpu_NAME.sh (its program, then
# the reference's script, each under half of LIMIT seconds) unless
# TJIT_SKIP_BENCH or TJIT_SKIP_<NAME> is set; its JSON lines (the reference's
# in REFERENCE.jsonl) and table are appended to the run's.
paired_bench() {
    local name=$1 limit=$2 reference=$3 what=$4 upper skip_var
    upper=$(echo "$name" | tr '[:lower:]' '[:upper:]')
    skip_var=TJIT_SKIP_$upper
    say ""
    if [ -n "${TJIT_SKIP_BENCH:-}" ] || [ -n "${!skip_var:-}" ]; then
        say "== $what benchmark skipped (TJIT_SKIP_BENCH or $skip_var)"
    elif [ -f "bench/gpu_$name.sh" ] && [ -x "$root/bench/gpu_$name" ]; then
        say "== bench/gpu_$name.sh (limit ${limit}s; $(elapsed))"
        mkdir -p "$out/bench"
        env "GPU_${upper}_OUT=$logs/$name" "TJIT_${upper}_PART_LIMIT=$((limit / 2))" \
            timeout $((limit + 10)) bash "bench/gpu_$name.sh" "$root/bench/gpu_$name" >"$logs/$name.out" 2>&1
        say "gpu_$name exit status $?"
        cat "$logs/$name/tjit.jsonl" >>"$out/bench/tjit.jsonl" 2>/dev/null
        cat "$logs/$name/$reference.jsonl" >>"$out/bench/triton.jsonl" 2>/dev/null
        tee -a "$out/bench/table.txt" <"$logs/$name.out" | tee -a "$summary"
    else
        say "== no bench/gpu_$name.sh or gpu_$name: $what benchmark skipped"
    fi
}
# 6c. the LLM shapes and fp8 against cuBLAS; 6d. layer norm and dropout
# (tutorials 05 and 04) against Triton and torch
paired_bench llm "${TJIT_LLM_LIMIT:-150}" torch "LLM-shape"
paired_bench norm "${TJIT_NORM_LIMIT:-120}" triton norm
# --- 7. Nsight Compute: the matmul's and attention's configurations (also
# without steps 6 and 6b)
[ -z "${TJIT_SKIP_BENCH:-}" ] && [ -x "$root/bench/gpu_matmul" ] && ncu_part matmul
[ -z "${TJIT_SKIP_BENCH:-}" ] && [ -x "$root/bench/gpu_attention" ] && ncu_part attention

say ""
if [ -s "$failures" ]; then
    say "== failures"
    tee -a "$summary" <"$failures"
fi
say "== gpu-run finished in $(elapsed), status $status; logs in $out"
rm -rf "$logs"
exit "$status"
