"""Bench metrics, pure functions of ``RunRecord``s (docs/BENCH.md).

Over a group of runs (one per task and repeat):

* ``success_rate``: the fraction of runs whose search made a correct kernel;
* ``fast_p``: the fraction of runs that made a correct kernel with speedup over
  eager greater than ``p`` (KernelBench's fast_p, each repeat counted as a task);
* ``geomean``: the geometric mean of the best speedups, over the runs that have one.
* ``attempted_rate``: the fraction of runs where the team made a candidate at all;
  ``geomean_attempted``: over those runs, the geometric mean of the best speedup,
  a run without a correct kernel counting as 1.0 (the user keeps eager PyTorch);
  ``fast_1_vs_compiled``: the fraction of runs with a correct kernel faster than
  ``torch.compile`` of the reference.

Every speedup is a ratio of two times measured in the same run and process.
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Iterable

from .record import RunRecord

FAST_P = (0.0, 1.0, 2.0)


def geomean(values: Iterable[float | None]) -> float | None:
    """Geometric mean of the positive values; None when there are none."""
    xs = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not xs:
        return None
    return math.exp(sum(math.log(v) for v in xs) / len(xs))


def median(values: Iterable[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return statistics.median(xs) if xs else None


def success_rate(records: list[RunRecord]) -> float | None:
    return sum(r.success for r in records) / len(records) if records else None


def fast_p(records: list[RunRecord], p: float) -> float | None:
    if not records:
        return None
    return sum(1 for r in records if r.success and r.best_speedup is not None and r.best_speedup > p) / len(records)


def fast_vs_compiled(records: list[RunRecord], p: float = 1.0) -> float | None:
    if not records:
        return None
    return sum(1 for r in records if r.success and r.best_speedup_vs_compiled is not None
               and r.best_speedup_vs_compiled > p) / len(records)


def fast_key(p: float) -> str:
    return f"fast_{p:g}"


def summarize_runs(records: list[RunRecord]) -> dict[str, Any]:
    """The aggregate figures of a group of runs."""
    wall = sum(r.wall_s for r in records)
    evaluated = sum(r.evaluated for r in records)
    out: dict[str, Any] = {
        "runs": len(records),
        "errors": sum(1 for r in records if r.outcome != "done"),
        "success_rate": success_rate(records),
        **{fast_key(p): fast_p(records, p) for p in FAST_P},
        "geomean_speedup": geomean(r.best_speedup for r in records if r.success),
        "attempted_rate": sum(r.attempted for r in records) / len(records) if records else None,
        "geomean_attempted": geomean((r.best_speedup if r.success else 1.0) for r in records if r.attempted),
        "fast_1_vs_compiled": fast_vs_compiled(records),
        "attempted_vs_compiled_at_least_1": (
            sum(1 for r in records if r.attempted and r.success and (r.best_speedup_vs_compiled or 0) >= 1.0)
            / max(1, sum(r.attempted for r in records))) if records else None,
        "geomean_speedup_vs_compiled": geomean(r.best_speedup_vs_compiled for r in records if r.success),
        "with_speedup": sum(1 for r in records if r.success and r.best_speedup is not None),
        "with_compiled": sum(1 for r in records if r.success and r.best_speedup_vs_compiled is not None),
        "median_best_attempt": median(r.best_attempt for r in records if r.success),
        # the runs that started from torch.compile's code: that start against compile, and the search on top of it
        "seeded": sum(1 for r in records if r.seed_node is not None),
        "geomean_seed_vs_compiled": geomean(r.seed_speedup_vs_compiled for r in records if r.seed_node is not None),
        "geomean_gain_over_seed": geomean(r.gain_over_seed for r in records if r.seed_node is not None),
        "candidates_per_min": 60.0 * evaluated / wall if wall > 0 else None,
        "wall_s": wall,
        "prompt_tokens": sum(r.prompt_tokens for r in records),
        "completion_tokens": sum(r.completion_tokens for r in records),
        "cost_usd": sum(r.cost_usd for r in records),
        "llm_seconds": sum(r.llm_seconds for r in records),  # the LLM's wall time (0: the built-in team)
    }
    return out


def task_summary(records: list[RunRecord]) -> dict[str, Any]:
    """One task under one policy, over its repeats."""
    ok = [r for r in records if r.success]
    best = max(ok, key=lambda r: r.best_speedup or 0.0) if ok else None
    gaps = [r.floor_gap for r in ok if r.floor_gap is not None]
    floor = next((r.floor for r in records if r.floor), None)
    return {
        "runs": len(records),
        "successes": len(ok),
        "median_speedup": median(r.best_speedup for r in ok),
        "best_speedup": best.best_speedup if best else None,
        "median_speedup_vs_compiled": median(r.best_speedup_vs_compiled for r in ok),
        "root_speedup": median(r.root_speedup for r in records),
        "median_best_attempt": median(r.best_attempt for r in ok),
        "best_ms": best.best_ms if best else None,
        "reference_ms": median(r.reference_ms for r in records),
        "compiled_ms": median(r.compiled_ms for r in records),
        "floor": floor,
        "floor_gap": min(gaps) if gaps else None,
        "wall_s": sum(r.wall_s for r in records),
        "errors": [r.error for r in records if r.error],
    }


def group(records: list[RunRecord], key: str) -> dict[str, list[RunRecord]]:
    out: dict[str, list[RunRecord]] = {}
    for r in records:
        out.setdefault(getattr(r, key), []).append(r)
    return out


def by_policy(records: list[RunRecord], policies: list[str]) -> dict[str, dict[str, Any]]:
    groups = group(records, "policy")
    return {p: summarize_runs(groups.get(p, [])) for p in policies}


def by_task(records: list[RunRecord], tasks: list[str], policies: list[str]) -> dict[str, dict[str, dict[str, Any]]]:
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for t in tasks:
        mine = [r for r in records if r.task == t]
        if mine:
            out[t] = {p: task_summary([r for r in mine if r.policy == p]) for p in policies
                      if any(r.policy == p for r in mine)}
    return out


def curve(records: list[RunRecord], budget: int) -> list[float | None]:
    """Per attempt k, the geometric mean over runs of the best speedup so far
    (runs with no correct node yet at k left out)."""
    return [geomean(r.curve[k] if k < len(r.curve) else (r.curve[-1] if r.curve else None) for r in records)
            for k in range(budget + 1)]


def ceilings(records: list[RunRecord]) -> dict[str, Any] | None:
    """The copy bandwidth and peak rate the floors were computed with (as measured in this run)."""
    floors = [r.floor for r in records if r.floor]
    if not floors:
        return None
    bws = [f.get("bandwidth_gbs") for f in floors if f.get("bandwidth_gbs")]
    peaks: dict[str, list[float]] = {}
    for f in floors:
        if f.get("peak_tflops"):
            peaks.setdefault(str(f.get("dtype", "?")), []).append(f["peak_tflops"])
    return {
        "bandwidth_gbs": median(bws),
        "peak_tflops": {k: median(v) for k, v in peaks.items()},
    }
