"""The candidates' calibrations a judge keeps, per task, and reuses.

Every candidate's process calibrates the protocol's own cost (``timed_calls.calibrate``) before any candidate
code is loaded, holding the GPU's gate exclusive: the judge waits for every shared holder to drain first. With
several searches on one GPU that wait was a mean 1.19 s for a hold of 35 ms, and each evaluation waited twice
(its calibration, its timing: docs/benchmarks.md, session 29). Where the reference is timed once per task (the
GPU's rule, ``judge.reference_in_turn``), a judge calibrates the first ``FRESH`` processes of a task, then gives
each later one the least of those calibrations instead (``conservative``), and calibrates one afresh every
``REFRESH`` evaluations (the GPU's clocks and the machine's load drift).

What stays true: a calibration is still only ever taken before candidate code exists in its process, so no
candidate can make one dearer; the least of several subtracts no more than any one of them did (a figure errs
high, never low), and the caps from the reference's own process (``time_calls``' ``protocol_cap_ms`` and
``fixed_cap_ms``: a candidate's timed batches have no empty twin of their own) still bound what is subtracted per
call and per batch. What drawing a batch's inputs may take (the device chain's prepare allowance) has no such cap:
it is the kept calibration's alone, so processes that may differ there stay apart (``key``). Pure: no torch, no
GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Hashable

from stark_lsp.evaluate.judge.timing import Overhead

FRESH = 3  # a task's processes calibrated before one is reused
REFRESH = 16  # then one calibrated afresh every this many evaluations of that task
KEPT = 8  # the newest calibrations a task keeps


def conservative(taken: list[Overhead]) -> Overhead:
    """The least cost each part of ``taken`` says (subtracted from a figure: the figure errs high), with the
    widest noise (a bound never narrower than one of them gave)."""
    prepares = [o.prepare_fixed_ms for o in taken]
    return Overhead(fixed_ms=min(o.fixed_ms for o in taken), per_call_ms=min(o.per_call_ms for o in taken),
                    noise_ms=max(o.noise_ms for o in taken), left_ms=min(o.left_ms for o in taken),
                    prepare_fixed_ms=None if any(p is None for p in prepares) else min(prepares),
                    prepare_per_call_ms=min(o.prepare_per_call_ms for o in taken))


def key(task_id: str, mtime_ns: int, keep: int, chain: str, profiler: bool) -> tuple[Any, ...]:
    """What a calibration is kept by: the task (its id, its harness's mtime), the calls one batch may keep alive,
    the chain its batches use, and whether the process started the profiler. A process started with the
    profiler (a candidate whose source names CUDA kernels or a CUDA graph: its choice) is never given to a role
    that did not ask for one (``link.take``: timing must not depend on what a source named); neither is its
    calibration, nor a plain process's to a profiled one (the device chain's prepare allowance has no cap)."""
    return (task_id, mtime_ns, keep, chain, bool(profiler))


@dataclass
class _Task:
    taken: list[Overhead] = field(default_factory=list)
    since: int = 0  # evaluations since the last fresh calibration


@dataclass
class Calibrations:
    """A judge's calibrations by key (the task, the calls one batch may keep alive, the chain its batches use)."""

    fresh: int = FRESH
    refresh: int = REFRESH
    reused: int = 0  # evaluations that took a kept calibration (the judge's trace says it)
    _tasks: dict[Any, _Task] = field(default_factory=dict)

    def reuse(self, key: Hashable) -> Overhead | None:
        """The calibration an evaluation of ``key`` takes instead of its own, or None: calibrate."""
        t = self._tasks.get(key)
        if t is None or len(t.taken) < self.fresh or t.since + 1 >= self.refresh:
            return None
        t.since += 1
        self.reused += 1
        return conservative(t.taken)

    def add(self, key: Hashable, ov: Overhead) -> None:
        """A calibration just taken (before candidate code was loaded) for ``key``."""
        t = self._tasks.setdefault(key, _Task())
        t.taken = [*t.taken, ov][-KEPT:]
        t.since = 0
