#!/bin/sh
# SPDX-License-Identifier: MIT
# bounds-test.sh — runs a test with the bounds-checked mode on.
#
# make check runs the op tests and the samples once more with
# TJIT_CHECK_BOUNDS=1 (every load, store and atomic checked against its
# buffer): tests/bounds/NAME.bounds runs tests/NAME, samples.bounds runs
# tests/samples.sh, and gpu-NAME.bounds the GPU twin of tests/NAME through
# tests/gpu-test.sh (one "# SKIP" without a GPU). A correct test must pass
# checked exactly as it does unchecked; a forgotten mask in a test kernel
# fails it with TJ_ERR_BOUNDS.

case $1 in
    */bounds/*.bounds) ;;
    *) echo "Bail out! bounds-test.sh: expected tests/bounds/NAME.bounds, got '$1'"; exit 1 ;;
esac
tests_dir=${1%/bounds/*}
name=${1##*/}
name=${name%.bounds}
TJIT_CHECK_BOUNDS=1
export TJIT_CHECK_BOUNDS

case $name in
    samples) exec "$(dirname "$0")/samples.sh" ;;
    gpu-*) exec "$(dirname "$0")/gpu-test.sh" "$tests_dir/gpu/${name#gpu-}.gpu" ;;
    *) exec "$tests_dir/$name" ;;
esac
