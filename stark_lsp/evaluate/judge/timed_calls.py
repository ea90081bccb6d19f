"""Calibrating a process, then timing its calls in batches on the judge's clock.

``calibrate`` runs, before any candidate code exists in the process, batches
of calls that do nothing (on outputs shaped like the reference's) at several
sizes, and fits what a batch costs the protocol itself (``timing.fit_overhead``).
``time_calls`` then warms the candidate up, tells a very slow one early (cut
after a few calls), sizes the batches, and samples them until the figure's
noise is below the target or the budget is spent (``timing.enough``). Every
batch of a candidate is checked (``batches.Pending``): its chosen outputs are
read back at once, and the rest of its checks wait until the timing is over
(or the snapshots fill their memory budget), to run with the GPU's gate held
shared; a batch's timing counts only once its calls were shown to be right.
The reference and torch.compile are timed the same way, in their own
processes, unchecked (trusted code).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Callable

import torch

from stark_lsp.evaluate.judge import timing as TM
from stark_lsp.evaluate.judge import trace
from stark_lsp.evaluate.judge.batches import TRANSFER_FLOOR, Pending, Seeds, run_batch
from stark_lsp.evaluate.judge.conversation import Conversation
from stark_lsp.evaluate.options import EvalOptions

_perf = time.perf_counter
KEEP_BYTES = {True: 2 << 30, False: 512 << 20}  # what the calls of one batch may keep alive, inputs and outputs
# calls of each timed batch compared element by element (chosen after it ran; every call's digest is checked):
# over the least 5 batches, 20 calls in full. A hostile review's candidate that rounded a quarter of its calls to
# fp16 (inside the digest's bound) escaped 2 of 6 times with 2 a batch
FETCH_PER_BATCH = 4
# what the timing reads back in full: FETCH_PER_BATCH calls a batch until FETCH_CALLS calls or FETCH_BYTES were read
# (at least MIN_FETCHED calls, whatever they weigh), then one call of every batch (every call's digest is checked
# whatever). Never none: a candidate that counts the read-backs knows only that one of each batch's calls, which it
# cannot tell, will be compared in full. A read-back costs about 10 ms on the H200 with the GPU held alone, and on
# level 2 a call's outputs can weigh a gigabyte (0.3 s a batch; docs/benchmarks.md, sessions 9 and 10)
FETCH_CALLS = 16
FETCH_BYTES = {True: 4 << 30, False: 256 << 20}
MIN_FETCHED = 8
# the snapshots of read-back outputs a judge keeps until their checks run (``batches.Pending``)
PENDING_BYTES = {True: 2 << 30, False: 256 << 20}


class ReadBacks:
    """A candidate's read-backs between its timed batches (``Pending``'s requests), read and let go of: the
    reference timed in turn with a candidate in the candidate's own process (the CPU: ``Judge._reference_in_turn``)
    meets between its batches what the candidate's batches then meet, so the two figures differ by their code
    alone. On the CPU what ran just before a batch moved its figure by about a tenth (the KernelBench GELU sample's
    reference, 0.35 ms a call: a batch right after an empty batch read 1.0-1.13x faster than one right after a
    read-back), so the reference's empty batches (``time_calls``'s ``empty_after``) come right after its timed
    ones, before these. Nothing is checked (the reference is trusted code, and may change its inputs in place)."""

    def __init__(self, conv: Conversation):
        self.conv = conv
        self.fetched_bytes = 0
        self.fetched_calls = 0
        self.calls_waiting = 0

    def add(self, ran: Any, fetch: list[int], label: str) -> None:
        for i in fetch:
            reply = self.conv.ask({"op": "fetch", "index": i}, 30.0 + self.conv.link.capacity / TRANSFER_FLOOR,
                                  f"reading {label}, call {i + 1}")  # as ``Checker.fetch``
            outs = self.conv.read_outputs(reply.get("outputs"))
            self.fetched_bytes += sum(o.numel() * o.element_size() for o in outs if isinstance(o, torch.Tensor))
            self.fetched_calls += 1
            del outs

    def due(self) -> bool:
        return False

    def flush(self) -> None:
        pass


@dataclass
class Timed:
    figure: TM.Figure
    slow: bool = False
    protocol_ms: float | None = None  # the protocol's cost per call, from the empty batches beside the timed ones
    fixed_ms: float | None = None  # the round trip a batch was charged (a baseline's: the cap on a candidate's)
    chain: str = "host"  # how its batches chained their calls (``Conversation.chain``)
    raced: bool = False  # stopped once clearly slower than the figure to beat (``timing.outpaced``)


def protocol_per_call(batches: list[TM.Batch], ov: TM.Overhead) -> float | None:
    """What one call that does nothing cost in the empty batches beside the timed ones (the least, a
    host clock's noise only adds): in a baseline's process (trusted code) the cap on what a candidate's
    process may be credited with."""
    per = [(b.paired_ms - ov.fixed_ms) / b.calls for b in batches if b.paired_ms is not None and b.calls >= 1]
    return max(0.0, min(per)) if per else None


def baseline_overhead(runs: list[TM.Batch], ov: TM.Overhead, calibrated: TM.Overhead) -> TM.Overhead:
    """What a baseline's (trusted) timed batches have subtracted, by the candidates' rule: its calibrated
    cost per call, capped by the least its own empty batches beside the timed ones cost (the cap a
    candidate's process is held to), of which ``timing.PROTOCOL_CREDIT``. A calibration taken at the
    process's start can be dearer than the protocol was at its timing (the H100's trace, session 26: up
    to twice); a baseline credited with it, where candidates are held to the cap, read up to 2 % fast."""
    cap = protocol_per_call(runs, ov)
    if cap is None:
        return ov
    per = min(calibrated.per_call_ms, cap)
    return replace(ov, per_call_ms=TM.PROTOCOL_CREDIT * per, left_ms=(1.0 - TM.PROTOCOL_CREDIT) * per)


def calibrate(conv: Conversation, ref_out: list[Any], seeds: Seeds, is_gpu: bool, limit_s: float,
              max_calls: int | None = None) -> TM.Overhead:
    """The protocol's own cost in this process: batches of calls that do nothing, one after another
    as the timed batches will follow one another (their checks wait until the timing is over). A
    pause a timed batch meets that the calibration did not (a mid-way check, a read-back) can only
    make that batch dearer: the figure errs high, never low. ``max_calls``: what one batch may keep
    alive (``memory_calls``); the larger batch then has that many calls, at least two (a line needs
    two sizes), not ``CALIBRATION_SIZES``' (eight sets of a task's inputs of gigabytes each do not
    fit the GPU)."""
    shapes = output_shapes(ref_out)
    sizes, repeats = calibration_sizes(is_gpu, max_calls), TM.CALIBRATION_REPEATS[is_gpu]
    samples: list[TM.Batch] = []
    for r in range(repeats + 1):
        for k in sizes:
            ran = run_batch(conv, seeds, k, limit_s * k + 5.0, "calibration", op="calib", extra={"outputs": shapes})
            if r:  # the first round warms the allocator and the kernels up
                samples.append(ran.sample())
    return TM.fit_overhead(samples)


def calibration_sizes(is_gpu: bool, max_calls: int | None) -> tuple[int, ...]:
    """The calibration's batch sizes within what one batch may keep alive (at least 1 and 2)."""
    sizes = TM.CALIBRATION_SIZES[is_gpu]
    if max_calls is None:
        return sizes
    return tuple(sorted({min(k, max(2, max_calls)) for k in sizes}))


def output_shapes(ref_out: list[Any]) -> list[dict[str, Any]]:
    """What the calls that do nothing return: outputs shaped like the reference's."""
    return [{"shape": list(o.shape), "dtype": str(o.dtype).replace("torch.", "")}
            for o in ref_out if isinstance(o, torch.Tensor)]


def memory_calls(in_bytes: int, out_bytes: int, is_gpu: bool) -> int:
    """How many calls' inputs and outputs one batch may keep alive."""
    return max(1, KEEP_BYTES[is_gpu] // max(1, in_bytes + out_bytes))


def fetch_count(calls: int, wanted: int, pending: Pending | ReadBacks, is_gpu: bool) -> int:
    """How many of a timed batch's calls to read back in full (which ones is drawn after it ran):
    ``wanted`` until ``FETCH_CALLS`` calls or ``FETCH_BYTES`` were read (at least ``MIN_FETCHED``
    calls whatever they weigh), then one. Every call's digest is checked whatever this says."""
    if wanted <= 0:
        return 0
    if pending.fetched_calls < MIN_FETCHED or (pending.fetched_calls < FETCH_CALLS
                                               and pending.fetched_bytes < FETCH_BYTES[is_gpu]):
        return min(calls, wanted)
    return 1


def time_calls(conv: Conversation, seeds: Seeds, ov: TM.Overhead, opts: EvalOptions, *, is_gpu: bool,
               ref_ms: float | None, keep_calls: int, checks: Pending | ReadBacks | None,
               shapes: list[dict[str, Any]],
               protocol_cap_ms: float | None = None, fixed_cap_ms: float | None = None,
               role: str = "candidate", empty_after: bool = False,
               shared: Callable[[], AbstractContextManager[Any]] = nullcontext) -> Timed:
    """Warm up, then timed batches until the figure is known; every candidate batch checked (``checks``:
    what it reads back is read at once, the rest waits for the caller's ``checks.flush()``, or for
    ``shared``, the GPU's gate held shared, when the snapshots fill their budget); beside each
    of a baseline's timed batches, a batch of as many calls that do nothing (``timing.Batch.overhead_ms``),
    first and second in turn, so neither always meets the process after a pause. ``protocol_cap_ms``:
    what the protocol
    cost a call in the reference's own process (trusted); a candidate's process is never credited with
    more per call, whatever its calibration (taken while the GPU's clocks were still low, it can be
    dearer than the truth) or its empty batches (which candidate code runs beside) say. Of that, only
    ``timing.PROTOCOL_CREDIT`` is subtracted, in every process alike. ``fixed_cap_ms``: the round trip
    the reference's process was charged; a candidate's is never charged more (a calibration's fit of
    its round trip varied between 0.5 and 1.1 ms between processes on the H200, which a call of one
    batch carries whole). Only a baseline's (trusted) timed batches get an empty twin beside them:
    the least of those is the cap, while a candidate's figure subtracts the calibration's share alone,
    which its empty batches never undercut on the H200 (their time was never used, and cost as much
    as the timed batches). ``role`` names the process in the trace (``STARK_EVAL_TRACE``).
    ``empty_after``: trusted code read back as a candidate is (the reference timed in turn with a candidate,
    ``ReadBacks``): an empty batch beside every timed one all the same (not beside the warm-up, which is a
    candidate's), always right after it, before its read-backs, so the next timed batch meets what a
    candidate's meets; the least of them caps the protocol's cost per call, as a baseline's do, but the figure
    is by the candidate's rule (no batch's own empty twin lowers what it subtracts): the two subtract alike."""
    calibrated = ov
    per_call = ov.per_call_ms if protocol_cap_ms is None else min(ov.per_call_ms, protocol_cap_ms)
    fixed = ov.fixed_ms if fixed_cap_ms is None else min(ov.fixed_ms, fixed_cap_ms)
    pair = checks is None or empty_after
    ov = replace(ov, fixed_ms=fixed, per_call_ms=TM.PROTOCOL_CREDIT * per_call,
                 left_ms=(1.0 - TM.PROTOCOL_CREDIT) * per_call)
    turn = [0]

    def batch(k: int, phase: str, fetch: int, paired: bool = pair) -> TM.Batch:
        limit = TM.batch_limit_s(k, ref_ms, ov, is_gpu, opts.load_timeout_s)
        empty = None
        turn[0] += 1
        if paired and turn[0] % 2 and not empty_after:
            empty = run_batch(conv, seeds, k, limit, "calibration", op="calib", extra={"outputs": shapes}).wall_ms
        ran = run_batch(conv, seeds, k, limit, phase)
        if paired and empty is None:
            empty = run_batch(conv, seeds, k, limit, "calibration", op="calib", extra={"outputs": shapes}).wall_ms
        if checks is not None:
            checks.add(ran, seeds.choose(k, fetch_count(k, fetch, checks, is_gpu)), phase)
            if checks.due():
                with shared():
                    checks.flush()
        return TM.Batch(len(ran.calls), ran.wall_ms, paired_ms=empty, prepare_ms=ran.prepare_ms)

    warm_pair = pair and not empty_after  # ``empty_after``: the warm-up as a candidate's, with no empty twin
    first = batch(1, "warm-up", 0, warm_pair)
    one = first.judged_ms(ov)
    if ref_ms is not None and TM.is_slow(one, ref_ms):
        # one call is one sample: the first after the trials can meet an idle GPU's low clocks
        # (seen on the H200 cutting a fast candidate short); slow only if a second says so too
        one = min(one, batch(1, "warm-up", 0, warm_pair).judged_ms(ov))
    if ref_ms is not None and TM.is_slow(one, ref_ms):
        runs = [batch(1, "timed call", 1) for _ in range(TM.SLOW_CALLS)]
        if pair:
            ov = baseline_overhead(runs, ov, calibrated)
        _trace(role, calibrated, ov, protocol_cap_ms, runs, 0.0, conv.chain, slow=True)
        return Timed(TM.figure(runs, ov, is_gpu), slow=True, protocol_ms=protocol_per_call(runs, ov), chain=conv.chain,
                     fixed_ms=ov.fixed_ms)
    k_warm = max(1, min(TM.MAX_BATCH, keep_calls, int(opts.warmup_ms / max(one + ov.per_call_ms, 1e-3))))
    batch(k_warm, "warm-up", 0, warm_pair)
    k = TM.plan_batch(one, ov, is_gpu, keep_calls)
    runs: list[TM.Batch] = []
    t0 = _perf()
    fetch = FETCH_PER_BATCH if checks is not None else 0  # the timed batches' (``fetch_count``)
    min_calls = opts.reps if is_gpu else max(1, opts.cpu_reps)
    budget = opts.time_budget_s if is_gpu else math.inf
    raced = False
    while True:
        runs.append(batch(k, "timed call" if k == 1 else "timed batch", fetch))
        if checks is not None and TM.outpaced(TM.figure(runs, ov, is_gpu), opts.race_ms):
            raced = True
            break
        if not is_gpu:
            if len(runs) >= max(1, opts.cpu_reps):
                break
            continue
        # the budget covers the checks too: those done mid-way, and those still waiting (the reference's time for
        # each of their calls), so a candidate far faster than the reference leaves no unbounded work behind
        waiting_s = checks.calls_waiting * (ref_ms or 0.0) / 1000.0 if checks is not None else 0.0
        judged_by = baseline_overhead(runs, ov, calibrated) if pair else ov  # the figure's own, for a baseline
        if TM.enough(runs, judged_by, noise_target=opts.noise_target, min_calls=min_calls,
                     spent_s=_perf() - t0 + waiting_s, budget_s=budget, is_gpu=is_gpu):
            break
    if pair:
        ov = baseline_overhead(runs, ov, calibrated)
    _trace(role, calibrated, ov, protocol_cap_ms, runs, _perf() - t0, conv.chain)
    # with ``empty_after`` the figure by the candidate's rule: no batch's own empty twin lowers what it subtracts
    # (a baseline's does), so the reference and the candidate it is timed in turn with subtract exactly alike
    counted = [replace(b, paired_ms=None) for b in runs] if empty_after else runs
    return Timed(TM.figure(counted, ov, is_gpu), protocol_ms=protocol_per_call(runs, ov), chain=conv.chain,
                 fixed_ms=ov.fixed_ms, raced=raced)


def _trace(role: str, calibrated: TM.Overhead, ov: TM.Overhead, cap_ms: float | None, runs: list[TM.Batch],
           spent_s: float, chain: str, slow: bool = False) -> None:
    """With ``STARK_EVAL_TRACE=FILE``: one JSON line per timed process (its calibration, what was
    subtracted, every timed batch and its empty twin, the seconds spent), for studying the clock.
    The judge's own data only: the process sent none of it."""
    if not trace.enabled():
        return
    trace.write({"role": role, "chain": chain, "slow": slow, "spent_s": round(spent_s, 4), "cap_ms": cap_ms,
                 "calibrated": vars(calibrated), "subtracted": vars(ov),
                 "batches": [[b.calls, round(b.wall_ms, 5), None if b.paired_ms is None else round(b.paired_ms, 5),
                              None if b.prepare_ms is None else round(b.prepare_ms, 5)] for b in runs]})
