"""Rules of thumb: how good a value of a tunable is likely to be on a GPU.

Scores are log-scale distances from a target (higher is better), so the Plan
agent prefers moves toward typical good settings: 256 threads per block with a
wide x dimension, Triton blocks of ~1024 elements (64-128 for matmul tiles)
with num_warps matched to the block, 3 pipeline stages, unroll 4, fast math.
"""

from __future__ import annotations

import math

from stark_lsp.agents.builtin.tunable import Tunable, Value


def _dist(v: float, target: float) -> float:
    return abs(math.log2(max(v, 1)) - math.log2(target))


def block_target(name: str) -> int:
    up = name.upper()
    if "GROUP" in up:
        return 8
    if up.endswith("_K"):
        return 32
    if up.endswith(("_M", "_N")):
        return 64
    return 1024


def warps_target(largest_block: int | None) -> int:
    if not largest_block:
        return 4
    return max(1, min(16, largest_block // 256))


def prior(t: Tunable, v: Value, largest_block: int | None = None) -> float:
    if t.kind == "nvcc_flag":
        if t.name.endswith("use_fast_math"):
            return 0.3 if v else 0.0
        if t.name.endswith("maxrregcount"):
            return 0.0 if v is None else -0.5
        return 0.05 if v else 0.0
    if t.kind == "switch":  # a small move, as --use_fast_math: on an H100 (level 2, session 24) turning cuDNN's
        return 0.3 if v else 0.0  # autotuning on gave its parent 0.985x (median of 77; 11 of them 1.05x or more,
        # 19 0.95x or less; 8 more changed the numerics past the tolerance), when first it took 12 % of the budget
    if t.kind == "dim3" and isinstance(v, tuple):
        total = math.prod(v)
        return -_dist(total, 256) - (1.0 if v[0] < 32 else 0.0)
    if t.kind == "launch_bounds":
        return 0.0
    if t.role == "threads":
        threads = t.threads(v)
        if threads is None:
            return -_dist(int(v), 256) * 0.5 if isinstance(v, int) else 0.0
        small_x = 0.5 if "X" in t.name.upper().split("_")[-1:] and isinstance(v, int) and v < 32 else 0.0
        return -_dist(threads, 256) - small_x
    if t.kind == "num_warps":
        return -_dist(int(v), warps_target(largest_block))
    if t.kind == "num_stages":
        return -0.3 * abs(int(v) - 3)
    if t.kind == "block_const":
        return -0.7 * _dist(int(v), block_target(t.name))
    if t.role == "factor" or t.kind == "unroll":
        return -0.5 * _dist(int(v), 4)
    return 0.0
