"""The judge's checks on a candidate's timings: pure arithmetic, no torch, no GPU.

For every timed call the judge holds two figures: ``e``, what the candidate
process says the call took (CUDA events, or its host clock on the CPU), and
``w``, the judge's own clock from sending the request to reading the answer
(the inputs were drawn and L2 flushed before, off that clock). ``w - e`` is
the protocol's overhead (the device sync, the digest, the round trip). The
same process measured it before the candidate was loaded, with calls that do
nothing on outputs shaped like the reference's (the calibration). Work the
candidate hides from ``e`` (on another stream, deferred into the digest, or a
patched timer) shows up as extra overhead. More than the noise allows is a
cheat.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

SLOW_FACTOR = 10.0  # a candidate slower than this many times the reference is cut short
SLOW_REPS = 3
CPU_FLOOR_S = 10.0  # the least time one call gets on the CPU (Triton's interpreter); 2 s on a GPU
CPU_MARGIN_MS = 25.0  # a stall on a busy 2-core machine was seen at 35 ms in one call


@dataclass(frozen=True)
class UntimedWork:
    hidden_ms: float  # median overhead above the reference's
    margin_ms: float  # what noise allows
    overhead_ms: float  # the candidate's median overhead
    reference_overhead_ms: float

    flag_ms: float = math.inf  # beyond this (and within the margin): flagged for review, not failed

    @property
    def cheat(self) -> bool:
        return self.hidden_ms > self.margin_ms

    @property
    def flag(self) -> bool:
        return not self.cheat and self.hidden_ms > self.flag_ms

    def message(self) -> str:
        return (f"{self.hidden_ms:.3f} ms per call ran outside the timed region (another stream, work deferred "
                f"past the call, or a patched timer): the judge's clock saw {self.overhead_ms:.3f} ms of overhead per "
                f"call, this process's calibration {self.reference_overhead_ms:.3f} ms (noise allows {self.margin_ms:.3f} ms)")


def _mad_sigma(xs: list[float]) -> float:
    if len(xs) < 2:
        return 0.0
    med = statistics.median(xs)
    return 1.4826 * statistics.median(abs(x - med) for x in xs)


def untimed_work(cand_e: list[float], cand_w: list[float], ref_e: list[float], ref_w: list[float],
                 is_gpu: bool) -> UntimedWork:
    over_c = [w - e for w, e in zip(cand_w, cand_e)]
    over_r = [w - e for w, e in zip(ref_w, ref_e)]
    if is_gpu:
        oc, orf = statistics.median(over_c), statistics.median(over_r)
    else:  # a shared CPU only ever adds delay (scheduling): the least overhead of each is the cleanest
        oc, orf = min(over_c), min(over_r)
    se = 1.25 * math.sqrt(_mad_sigma(over_c) ** 2 / max(1, len(over_c)) + _mad_sigma(over_r) ** 2 / max(1, len(over_r)))
    median_e = statistics.median(cand_e)
    if is_gpu:
        # On an H200 an honest candidate's overhead was seen up to 0.4 ms above its own
        # process's calibration (the host waking from long waits), so less than a
        # millisecond (or half the call by the judge's clock) is flagged for review, and
        # the judge then reports its own figure (``judged_samples``); more is a cheat. Work
        # on other streams cannot hide at all: the timed region ends with a device sync.
        judged = max(0.0, statistics.median(cand_w) - orf)  # the call's time by the judge's clock
        margin = max(1.0, 0.5 * judged, 6.0 * se)
        flag = max(0.1, 0.2 * median_e, 6.0 * se)
    else:  # host clocks on a shared CPU: generous (the least overheads already shed the scheduling noise;
        # with fewer than 3 calls one stall decides, so there is no verdict at all)
        margin = max(CPU_MARGIN_MS, 1.0 * median_e) if len(over_c) >= 3 else math.inf
        flag = margin
    return UntimedWork(hidden_ms=oc - orf, margin_ms=margin, overhead_ms=oc, reference_overhead_ms=orf, flag_ms=flag)


def judged_samples(cand_e: list[float], cand_w: list[float], overhead_ms: float) -> list[float]:
    """Each call's time as the judge's clock puts it (never below what the process reported):
    what is reported when the process's own figures disagree with that clock."""
    return [max(e, w - overhead_ms) for e, w in zip(cand_e, cand_w)]


def protocol_overhead_ms(cal_e: list[float], cal_w: list[float], is_gpu: bool) -> float:
    """What a request costs this process beyond the call itself (drawing the inputs, the
    syncs, the round trip; the flush and the digest too), by the judge's clock: the median
    of the calibration's ``w - e`` on a GPU, the least on a shared CPU."""
    over = [w - e for w, e in zip(cal_w, cal_e)]
    if not over:
        return 0.0
    return max(0.0, statistics.median(over) if is_gpu else min(over))


def call_estimate_ms(request_wall_ms: float, overhead_ms: float) -> float:
    """One call's time from the judge's clock around a request that made it: the request
    minus the process's protocol overhead (never below a microsecond). The overhead
    counts a flush and a digest that a warm-up request does not make, so this leans
    fast: a candidate is called slow only when it clearly is."""
    return max(1e-3, request_wall_ms - overhead_ms)


def is_slow(candidate_call_ms: float, reference_call_ms: float) -> bool:
    """Slower than SLOW_FACTOR x the reference (by more than launch noise)."""
    return candidate_call_ms > SLOW_FACTOR * reference_call_ms and candidate_call_ms - reference_call_ms > 1.0


def reps_for(per_call_ms: float, reps: int, budget_s: float) -> int:
    """``reps`` repetitions, fewer (at least 10) when they would overrun the budget."""
    fit = int(budget_s * 1000.0 / max(per_call_ms, 1e-3))
    return max(10, min(reps, fit))


def phase_limit_s(reference_call_ms: float, calls: int, floor_s: float = 2.0, factor: float = 20.0) -> float:
    """How long ``calls`` calls may take: max(2 s, 20 x the reference's time x calls)."""
    return max(floor_s, factor * reference_call_ms * max(1, calls) / 1000.0)
