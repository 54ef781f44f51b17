#!/bin/sh
# SPDX-License-Identifier: MIT
# gpu-test.sh — runs one of the TAP test programs on the GPU.
#
# make check runs each op test twice: as itself on the CPU, and as
# tests/gpu/NAME.gpu through this script (the log compiler of the .gpu
# extension), which runs tests/NAME with TJIT_TEST_DEVICE=gpu. Where no GPU
# is usable (tests/has_gpu exits 77) the run is one TAP skip, "1..0 # SKIP",
# so the counts say what ran; a GPU that is there but does not open is a
# failure ("Bail out!"), never a skip.

case $1 in
    */gpu/*.gpu) ;;
    *) echo "Bail out! gpu-test.sh: expected tests/gpu/NAME.gpu, got '$1'"; exit 1 ;;
esac
tests_dir=${1%/gpu/*}
name=${1##*/}
name=${name%.gpu}

why=$("$tests_dir/has_gpu" 2>&1)
case $? in
    0)
        TJIT_TEST_DEVICE=gpu
        export TJIT_TEST_DEVICE
        echo "# on $why"
        exec "$tests_dir/$name"
        ;;
    77)
        echo "1..0 # SKIP no GPU ($why)"
        exit 0
        ;;
    *)
        echo "Bail out! the GPU is there but does not open: $why"
        exit 1
        ;;
esac
