"""Time a callable the way KernelBench does, and a little more carefully.

GPU: CUDA events around each call, warm-up discarded, L2 flushed before every
repetition, the median over ``reps`` repetitions (100 by default; fewer, at
least 10, where they would overrun the time budget). Each repetition is also timed on the host clock
around the call plus a *device-wide* synchronize: work a candidate hides on
another stream shows up there and not in the events, which is how side-stream
cheats are caught.

CPU (Triton interpreter): the host clock, a few repetitions; labelled as such.

The timer functions are captured when this module is imported (in the worker,
before any candidate code), so a candidate that patches ``torch.cuda.Event`` or
``time.perf_counter`` does not change what is measured.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable

import torch

from stark_lsp.evaluate.result import Timing

_perf = time.perf_counter
_Event = torch.cuda.Event
_record = torch.cuda.Event.record
_elapsed = torch.cuda.Event.elapsed_time
_sync = torch.cuda.synchronize
_no_grad = torch.no_grad


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


def reps_for(per_call_ms: float, reps: int, budget_s: float) -> int:
    """``reps`` repetitions, fewer (at least 10) when they would overrun the budget."""
    fit = int(budget_s * 1000.0 / max(per_call_ms, 1e-3))
    return max(10, min(reps, fit))


def sync_overhead_ms(device: torch.device, reps: int = 50) -> float:
    """Host time of record + record + device sync with no work: subtracted from wall times."""
    s, e = _Event(enable_timing=True), _Event(enable_timing=True)
    walls = []
    for _ in range(reps):
        _sync(device)
        t0 = _perf()
        _record(s)
        _record(e)
        _sync(device)
        walls.append((_perf() - t0) * 1e3)
    return statistics.median(walls)


def time_gpu(
    fn: Callable[..., Any],
    args: list[Any],
    device: torch.device,
    *,
    flusher: L2Flusher | None,
    warmup_ms: float = 25.0,
    reps: int = 100,
    budget_s: float = 2.0,
) -> Timing:
    with _no_grad():
        # warm-up: at least 3 calls and warmup_ms of work
        _sync(device)
        t0, calls = _perf(), 0
        while calls < 3 or (_perf() - t0) * 1e3 < warmup_ms:
            fn(*args)
            calls += 1
            _sync(device)
            if calls >= 1000:
                break
        per_call = (_perf() - t0) * 1e3 / calls
        n = reps_for(per_call, reps, budget_s)
        starts = [_Event(enable_timing=True) for _ in range(n)]
        ends = [_Event(enable_timing=True) for _ in range(n)]
        walls: list[float] = []
        for i in range(n):
            if flusher is not None:
                flusher()
            _sync(device)
            w0 = _perf()
            _record(starts[i])
            out = fn(*args)
            _record(ends[i])
            _sync(device)
            walls.append((_perf() - w0) * 1e3)
            del out
        times = [_elapsed(starts[i], ends[i]) for i in range(n)]
    return summarize(times, walls)


def time_cpu(fn: Callable[..., Any], args: list[Any], *, reps: int = 5, warmup: int = 1) -> Timing:
    with _no_grad():
        for _ in range(warmup):
            fn(*args)
        times = []
        for _ in range(max(1, reps)):
            t0 = _perf()
            fn(*args)
            times.append((_perf() - t0) * 1e3)
    return summarize(times)


def hidden_work_ms(t: Timing, overhead_ms: float) -> float:
    """Host-observed time not covered by the events: > 0 means work outside the timed stream."""
    if t.wall_median_ms is None:
        return 0.0
    return t.wall_median_ms - overhead_ms - t.median_ms
