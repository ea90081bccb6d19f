"""Timing primitives and the summary of timed repetitions.

The candidate process times each call with CUDA events around the call, after
flushing the L2 cache (a buffer twice its size is written), on the host clock
on the CPU. Those figures are claims: the judge keeps them only when its own
clock agrees (``timing_check.py``). The timer functions are bound when this
module is imported, before any candidate code.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import torch

from stark_lsp.evaluate.result import Timing

_perf = time.perf_counter
_Event = torch.cuda.Event
_record = torch.cuda.Event.record
_elapsed = torch.cuda.Event.elapsed_time


def new_events() -> tuple[Any, Any]:
    return _Event(enable_timing=True), _Event(enable_timing=True)


def record(event: Any) -> None:
    _record(event)


def elapsed(start: Any, end: Any) -> float:
    return float(_elapsed(start, end))


def summarize(samples_ms: list[float], wall_ms: list[float] | None = None) -> Timing:
    s = sorted(samples_ms)
    n = len(s)
    q1, q3 = s[int(0.25 * (n - 1))], s[int(0.75 * (n - 1))]
    return Timing(
        median_ms=statistics.median(s),
        mean_ms=statistics.fmean(s),
        min_ms=s[0],
        max_ms=s[-1],
        iqr_ms=q3 - q1,
        std_ms=statistics.pstdev(s) if n > 1 else 0.0,
        reps=n,
        wall_median_ms=statistics.median(wall_ms) if wall_ms else None,
    )


class L2Flusher:
    """Writes a buffer twice the size of L2 so no input stays cached."""

    def __init__(self, device: torch.device):
        props = torch.cuda.get_device_properties(device)
        size = max(2 * int(getattr(props, "L2_cache_size", 0) or 0), 64 << 20)
        self.buf = torch.empty(size, dtype=torch.int8, device=device)

    def __call__(self) -> None:
        self.buf.zero_()
