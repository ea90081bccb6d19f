"""The judge's timing arithmetic: every figure from the judge's own clock. Pure: no torch, no GPU.

A timed request is a *batch*: k calls in a row, each on inputs chained to the
output before it (``wire/chain.py``), so the calls run one after the other and
none can start early. The judge's clock runs from sending the request to
reading its reply: ``wall = fixed + k * (per_call + call)``. ``fixed`` (the
round trip) and ``per_call`` (drawing the inputs, the digest, its
synchronization, the loop) were measured in the same process before any
candidate code existed in it, with batches of calls that do nothing, at
several k (``fit_overhead``, the calibration). Beside a baseline's timed
batches (trusted code) the judge asks for batches of as many calls that do
nothing: the least per-call cost of those caps what a candidate's process is
credited with (``timed_calls``). Each batch then gives the judge's figure
for one call, ``judged = (wall - overhead) / k``, and the spread of those
figures over the batches is the judge's noise.

The figure is the judge's and nobody else's: the median of those per-batch
figures. The process sends no time at all (a time it sent could only be its
word). The spread of the per-batch figures is the figure's noise; its bound
(``BOUND_SIGMAS`` standard errors of the median, a relative allowance for
what the calibration cannot see, a share of the protocol's own cost per call,
which may drift between the calibration and the timed batches, and an
absolute floor) says how far the figure may be from the call's true time. A
figure whose bound is over ``UNCONFIRMED`` of it is flagged "confirmed only
to +-X". What a candidate can do to the figure: make its calls slower (its
loss), or slow the protocol's empty calls beside its timed ones, which lowers
the figure by at most what the calibration before it loaded allows (the
subtracted overhead never exceeds it).

``plan_batch`` sizes batches so that the round trip is small against the
batch, and ``enough`` stops sampling once the figure's noise is below the
target (as NVIDIA's nvbench does), within a least and a greatest number of
batches and the time budget.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from stark_lsp.evaluate.result import Timing

SLOW_FACTOR = 10.0  # a candidate slower than this many times the reference is cut short
SLOW_CALLS = 3
CPU_FLOOR_S = 10.0  # the least time one call gets on the CPU (Triton's interpreter)
GPU_FLOOR_S = 2.0  # the least time one call gets on a GPU
BOUND_SIGMAS = 4.0  # standard errors of the median in a figure's bound
BOUND_RELATIVE = 0.01  # what the calibration cannot see (caches, clocks): 1 % of the call
BOUND_FLOOR_MS = {True: 0.0005, False: 0.05}  # the clock's resolution, the least bound and the least figure
# what the protocol's own cost per call may drift between the calibration and the timed batches (allocation,
# caches, a core's clock): a share of that cost. On a shared CPU the judge resolves little below it
PROTOCOL_DRIFT = {True: 0.02, False: 0.75}
BATCH_TARGET_MS = {True: 10.0, False: 50.0}  # how long one batch should take on the judge's clock
MAX_BATCH = 256
MIN_BATCHES = 5
# the least calls (``EvalOptions.reps``) are not needed once the timed batches have run this long: a call of
# a millisecond or more, whose batches hold one or two calls, is known long before its hundredth call
MIN_TIME_S = 0.3
MAX_CALLS = 20000
# before the candidate loads: a cap on the protocol's cost (the empty batch beside each timed one is the measure)
CALIBRATION_SIZES = {True: (1, 8), False: (1, 4)}
CALIBRATION_REPEATS = {True: 3, False: 3}
# the share of the protocol's calibrated cost per call that is subtracted from a batch, for every process alike
# (reference, torch.compile, candidate): any overestimate of that cost would be a forger's gain (on the H200 the
# host's part of it varied by half between processes, and a candidate can make its own empty calls dearer), so
# half is left in every figure: a figure errs high by about half the protocol's cost, never low
PROTOCOL_CREDIT = 0.5
# the device chain draws a batch's inputs in a request of its own, off the clock (``prepare``): what that request
# takes beyond this share of its calibrated cost, plus PREPARE_SLACK_MS, is added to the batch's time, so work
# done while the inputs are drawn (answers precomputed for inputs the candidate means to steer the chain to) is
# on the judge's clock (a hostile review computed every call of a batch but the first there)
PREPARE_SLACK = 1.25
PREPARE_SLACK_MS = 0.5
UNCONFIRMED = 0.25  # a bound wider than this share of the figure: the judge's clock cannot confirm the figure


@dataclass(frozen=True)
class Overhead:
    """What a batch of k calls that do nothing costs on the judge's clock: ``fixed + k * per_call``."""

    fixed_ms: float
    per_call_ms: float
    noise_ms: float  # the robust spread of one batch's wall around the fit
    left_ms: float = 0.0  # the protocol's cost per call left in every figure (not subtracted: PROTOCOL_CREDIT)
    prepare_fixed_ms: float | None = None  # what drawing a batch's inputs cost (device chain), fitted the same way
    prepare_per_call_ms: float = 0.0

    def of(self, calls: int) -> float:
        return self.fixed_ms + calls * self.per_call_ms

    def prepare_allowed_ms(self, calls: int) -> float | None:
        """How long drawing ``calls`` calls' inputs may take before the excess counts (None: not known)."""
        if self.prepare_fixed_ms is None:
            return None
        return PREPARE_SLACK * (self.prepare_fixed_ms + calls * self.prepare_per_call_ms) + PREPARE_SLACK_MS


@dataclass(frozen=True)
class Batch:
    """One timed request as the judge saw it."""

    calls: int
    wall_ms: float  # the judge's clock around the request
    paired_ms: float | None = None  # the judge's clock around a batch of as many calls that do nothing, beside it
    prepare_ms: float | None = None  # the judge's clock around drawing its inputs (device chain), off the batch's

    def overhead_ms(self, ov: Overhead) -> float:
        """What the protocol cost this batch: its paired batch of calls that do nothing (measured beside
        it, under the same clocks and caches), but never more than the calibration before the candidate
        loaded said (a process that slowed its own empty calls would only lower the judge's figure)."""
        before = ov.of(self.calls)
        return before if self.paired_ms is None else min(before, self.paired_ms)

    def untimed_ms(self, ov: Overhead) -> float:
        """What drawing the inputs took beyond what it may: work done off the batch's clock."""
        allowed = ov.prepare_allowed_ms(self.calls)
        if allowed is None or self.prepare_ms is None:
            return 0.0
        return max(0.0, self.prepare_ms - allowed)

    def judged_ms(self, ov: Overhead) -> float:
        """One call's time by the judge's clock (never below zero), with any work done while its
        inputs were drawn."""
        return max(0.0, (self.wall_ms - self.overhead_ms(ov) + self.untimed_ms(ov)) / self.calls)


@dataclass(frozen=True)
class Figure:
    """The runtime of one call, by the judge's clock, with its noise."""

    median_ms: float  # the median of the per-batch figures
    bound_ms: float  # how far the figure may be from the call's true time (its noise and what the calibration misses)
    noise: float  # the relative standard error of the median
    batches: int
    calls: int
    samples_ms: tuple[float, ...]  # the per-batch figures behind the median

    @property
    def judged_ms(self) -> float:
        return self.median_ms

    @property
    def unconfirmed(self) -> bool:
        """The judge's own noise is wide against the figure: the true time may be off by the bound."""
        return self.median_ms > 0 and self.bound_ms > UNCONFIRMED * self.median_ms


def _mad_sigma(xs: list[float]) -> float:
    if len(xs) < 2:
        return 0.0
    med = statistics.median(xs)
    return 1.4826 * statistics.median(abs(x - med) for x in xs)


def median_se(xs: list[float]) -> float:
    """The standard error of the median of ``xs`` (robust: from the median absolute deviation)."""
    if len(xs) < 2:
        return math.inf
    return 1.2533 * _mad_sigma(xs) / math.sqrt(len(xs))


def _fit_line(points: list[tuple[int, float]]) -> tuple[float, float]:
    """``fixed`` and ``per_call`` through the least value of each size (least squares), never negative."""
    by_k: dict[int, list[float]] = {}
    for k, w in points:
        by_k.setdefault(k, []).append(w)
    ks = sorted(by_k)
    meds = [min(by_k[k]) for k in ks]
    if len(ks) == 1:
        return 0.0, meds[0] / ks[0]
    mk, mw = statistics.fmean(ks), statistics.fmean(meds)
    sxx = sum((k - mk) ** 2 for k in ks)
    per = max(0.0, sum((k - mk) * (w - mw) for k, w in zip(ks, meds)) / sxx)
    return max(0.0, mw - per * mk), per


def fit_overhead(samples: list[Batch]) -> Overhead:
    """``fixed`` and ``per_call`` from calibration batches of several sizes: a straight line through
    the least wall of each size (least squares), never negative. The least, because the noise of a
    host clock only adds (a preempted process, a sleeping thread): the protocol costs at most
    that, so a call is never credited with more overhead than the protocol showed. Drawing the
    inputs (the device chain's ``prepare``) is fitted the same way, where every sample has it."""
    fixed, per = _fit_line([(b.calls, b.wall_ms) for b in samples])
    resid = [w - (fixed + per * b) for b, w in ((b.calls, b.wall_ms) for b in samples)]
    prep_fixed, prep_per = None, 0.0
    if samples and all(b.prepare_ms is not None for b in samples):
        prep_fixed, prep_per = _fit_line([(b.calls, float(b.prepare_ms or 0.0)) for b in samples])
    return Overhead(fixed_ms=fixed, per_call_ms=per, noise_ms=_mad_sigma(resid) if len(resid) > 1 else 0.0,
                    prepare_fixed_ms=prep_fixed, prepare_per_call_ms=prep_per)


def figure(batches: list[Batch], ov: Overhead, is_gpu: bool) -> Figure:
    """The runtime of one call: the median of the judge's per-batch figures, and its bound. A call the
    clock cannot tell from nothing gets the clock's resolution (``BOUND_FLOOR_MS``), flagged
    unconfirmed by its bound, never zero."""
    judged = [b.judged_ms(ov) for b in batches]
    if not judged:
        return Figure(median_ms=0.0, bound_ms=math.inf, noise=math.inf, batches=0, calls=0, samples_ms=())
    # never below the clock's resolution: a call cheaper than the protocol's noise is "at most that"
    j = max(statistics.median(judged), BOUND_FLOOR_MS[is_gpu])
    calls = sum(b.calls for b in batches)
    se = median_se(judged) if len(judged) > 1 else ov.noise_ms / max(1, batches[0].calls)
    bound = max(BOUND_SIGMAS * se, BOUND_RELATIVE * j, PROTOCOL_DRIFT[is_gpu] * ov.per_call_ms,
                BOUND_FLOOR_MS[is_gpu]) + ov.left_ms  # the true time may lie below by what was left in
    return Figure(median_ms=j, bound_ms=bound, noise=(se / j) if j > 0 and math.isfinite(se) else math.inf,
                  batches=len(batches), calls=calls, samples_ms=tuple(judged))


def plan_batch(call_ms: float, ov: Overhead, is_gpu: bool, memory_calls: int) -> int:
    """Calls per batch: enough that the batch lasts about ``BATCH_TARGET_MS`` (the round trip then
    weighs little), within the memory the kept outputs may use and ``MAX_BATCH``."""
    per = max(call_ms + ov.per_call_ms, 1e-4)
    k = int(BATCH_TARGET_MS[is_gpu] / per)
    return max(1, min(k, MAX_BATCH, max(1, memory_calls)))


def enough(batches: list[Batch], ov: Overhead, *, noise_target: float, min_calls: int, spent_s: float,
           budget_s: float, is_gpu: bool = True, max_batches: int | None = None) -> bool:
    """Whether to stop timing: the figure is known to ``noise_target`` (the relative standard error
    of its median) over at least ``MIN_BATCHES`` batches and ``min_calls``
    calls (or ``MIN_TIME_S`` of timed batches), or more batches would narrow its bound by little
    (``settled``); or the time budget is spent (after at least 3
    batches); or ``MAX_CALLS`` calls, or
    ``max_batches`` batches, were made."""
    n = len(batches)
    calls = sum(b.calls for b in batches)
    if max_batches is not None and n >= max_batches:
        return True
    if calls >= MAX_CALLS:
        return True
    if n >= 3 and spent_s >= budget_s:
        return True
    if n < MIN_BATCHES or (calls < min_calls and spent_s < MIN_TIME_S):
        return False
    fig = figure(batches, ov, is_gpu)
    return fig.noise <= noise_target or settled(fig, ov, is_gpu)


SETTLED_SHARE = 0.5  # the sampling noise in a bound, against what no amount of sampling narrows, to stop at


def settled(fig: Figure, ov: Overhead, is_gpu: bool) -> bool:
    """Whether more batches could narrow the figure's bound by little: its sampling part
    (``BOUND_SIGMAS`` standard errors) is at most ``SETTLED_SHARE`` of the part that more time
    cannot shrink (the protocol's share left in, its drift, the relative allowance, the clock's
    floor). A short call's bound is that part's; sampling it to a 2 % noise target cost up to the
    whole time budget for a bound no narrower (docs/benchmarks.md, session 9)."""
    if not fig.batches or not math.isfinite(fig.noise):
        return False
    fixed = max(BOUND_RELATIVE * fig.median_ms, PROTOCOL_DRIFT[is_gpu] * ov.per_call_ms,
                BOUND_FLOOR_MS[is_gpu]) + ov.left_ms
    return BOUND_SIGMAS * fig.noise * fig.median_ms <= SETTLED_SHARE * fixed


RACE_BATCHES = 3  # the least batches before a candidate may be told to be clearly slower than the figure to beat
RACE_MARGIN = 1.10  # clearly slower: its figure, less its whole bound, over this many times the figure to beat


def outpaced(fig: Figure, race_ms: float | None) -> bool:
    """Whether timing can stop because the figure is clearly slower than ``race_ms`` (the search's
    best so far): even at the low edge of its bound it is over ``RACE_MARGIN`` times that. The
    figure stays the judge's honest median; it is only known less precisely, and only for a
    candidate that cannot be the best (racing, as in successive halving)."""
    if race_ms is None or race_ms <= 0 or fig.batches < RACE_BATCHES or not math.isfinite(fig.bound_ms):
        return False
    return fig.median_ms - fig.bound_ms > RACE_MARGIN * race_ms


def is_slow(candidate_call_ms: float, reference_call_ms: float) -> bool:
    """Slower than SLOW_FACTOR x the reference (by more than launch noise)."""
    return candidate_call_ms > SLOW_FACTOR * reference_call_ms and candidate_call_ms - reference_call_ms > 1.0


LIMIT_FACTOR = 20.0  # a batch may take this many times what the reference's calls would


def batch_limit_s(calls: int, reference_call_ms: float | None, ov: Overhead | None, is_gpu: bool,
                  fallback_s: float) -> float:
    """How long a batch of ``calls`` calls may take: 20 x what the reference's calls and the
    protocol would take, and at least 2 s on a GPU (10 s on the CPU, where Triton's interpreter
    runs a kernel hundreds of times slower than eager PyTorch); before the reference is timed
    (the baselines' own batches: trusted code), ``fallback_s``."""
    floor = GPU_FLOOR_S if is_gpu else CPU_FLOOR_S
    if reference_call_ms is None:
        return max(floor, fallback_s)
    protocol = ov.of(calls) if ov is not None else 0.0
    return max(floor, LIMIT_FACTOR * (calls * reference_call_ms + protocol) / 1000.0)


def as_timing(fig: Figure, chain: str = "") -> Timing:
    """The stored form of a figure (``result.Timing``)."""
    s = sorted(fig.samples_ms) or [fig.median_ms]
    n = len(s)
    q1, q3 = s[int(0.25 * (n - 1))], s[int(0.75 * (n - 1))]
    return Timing(median_ms=fig.median_ms, mean_ms=statistics.fmean(s), min_ms=s[0], max_ms=s[-1], iqr_ms=q3 - q1,
                  std_ms=statistics.pstdev(s) if n > 1 else 0.0, reps=fig.calls, judged_ms=fig.median_ms,
                  bound_ms=fig.bound_ms if math.isfinite(fig.bound_ms) else None,
                  noise=fig.noise if math.isfinite(fig.noise) else None, batches=fig.batches, source="judge",
                  chain=chain)
