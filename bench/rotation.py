# SPDX-License-Identifier: MIT
"""
rotation.py -- rotated buffers for the reference benchmarks
(triton_matmul.py, triton_attention.py, torch_llm.py), the rule of
bench/gpu_timing.h that tjit's side follows: the timed calls take two to
eight sets of a problem's operands in turn, together at least 256 MiB, so
that none finds the operands of the call before it in L2 (50 MiB on an
H100, 60 on an H200).
"""
import itertools

ROTATE_BYTES, MIN_SETS, MAX_SETS = 256 << 20, 2, 8


def rotated_sets(set_bytes):
    """How many sets of set_bytes each the timed calls rotate through."""
    return max(MIN_SETS, min(MAX_SETS, -(-ROTATE_BYTES // set_bytes)))


def rotating(sets, call):
    """A function that calls call(*set) on the next of sets each time."""
    turn = itertools.cycle(sets)
    return lambda: call(*next(turn))
