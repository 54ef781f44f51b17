#!/bin/sh
# SPDX-License-Identifier: MIT
# samples.sh — runs every sample at a small, ragged size (TAP).
#
# Each sample checks its own result against plain C and exits non-zero on a
# wrong answer or a tjit error, so one TAP point per sample is its exit
# status; its output is shown as TAP diagnostics either way, so the log says
# which device ran it and what went wrong. The sizes are deliberately not
# multiples of the block or tile sizes: the masks are part of what is tested.
# The second matmul_block_ptr has strides that are multiples of 16, so on
# Hopper its loads are TMA copies, ragged along M, N and K (zeros beyond the
# tensor come from the copy engine).
# The second layer_norm has rows longer than the forward's chunk, and more
# rows than groups: programs wait on each other's locks.
# The second multi_gpu uses at most three devices: GPUs where there are
# some, else three CPU devices (the split, the threads and the check).
# Run from the top build directory (as `make check` does); SAMPLES_DIR
# overrides where the sample programs are.

dir=${SAMPLES_DIR:-./samples}

set -- \
    "vector_add 100003" \
    "strided_add 20011" \
    "transpose 67 131" \
    "box_filter 45 141" \
    "softmax 37 300" \
    "dropout 100003" \
    "layer_norm 37 300" \
    "layer_norm 300 1500" \
    "matmul 130 67 45" \
    "matmul_block_ptr 77 130 65" \
    "matmul_block_ptr 1000 272 208" \
    "attention 2 1 77" \
    "attention_bwd 1 2 256" \
    "grouped_matmul 3 77 130 45" \
    "multi_gpu 100003 3" \
    "multi_gpu 100003 2 3"

echo "1..$#"
n=0
for run in "$@"; do
    n=$((n + 1))
    name=${run%% *}
    args=${run#* }
    # shellcheck disable=SC2086  # args is a list of sizes
    if out=$("$dir/$name" $args 2>&1); then
        echo "ok $n - $name $args"
    else
        echo "not ok $n - $name $args (exit status $?)"
    fi
    printf '%s\n' "$out" | sed 's/^/# /'
done
