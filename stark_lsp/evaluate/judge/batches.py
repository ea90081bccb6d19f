"""Batches of calls: asked for, then checked, every call of every batch.

One request (``run``) makes k calls in a row on chained inputs (``wire/chain.py``).
The same request serves the trials, the warm-up and the timing: nothing in it
says which calls will be looked at. After a batch has been answered, the judge
draws every call's inputs itself, runs the reference on them, and checks:

* **every call**: the dtypes and shapes of its outputs, exactly, and its
  digest against the reference's digest of the same inputs (``wire/digest.py``:
  a skipped, cached or stale result is far outside the bound an honest
  output's rounding keeps to);
* **calls chosen at random after the batch ran** (all of them in the trials):
  their outputs, fetched from the process, element by element against the
  reference (``compare.py``), and the fetched outputs' digest against the one
  the process committed to while it was being timed, so an output cannot be
  repaired after the fact; and whether the call changed its inputs in place.

A wrong trial is ``incorrect``. A wrong timed or warm-up call is a cheat
(``wrong_while_timed``): the candidate was right where it expected to be
looked at and wrong elsewhere (or has a race), whatever its trials said;
except where a call read back strays as rounding does (its bytes those it
committed to; each output passing, or a few elements just outside the
tolerance with errors within 4x that output's largest in the trials,
``compare.as_rounding``): that is ``incorrect`` on those inputs, raised once the
timing's other checks passed, not an accusation.

The trials are checked as they come. A timed batch's chosen outputs are read
back at once (a snapshot in the judge's memory, which the process can no longer
touch), and the rest of its checks, the reference on every call's inputs and the
comparisons, wait in ``Pending`` until the timing is over (or the snapshots
reach their memory budget): they then run while the GPU's gate is held shared,
beside other judges' work, and the timed batches follow one another with no
judge's work between them. A figure is only given once every one of its
batches passed.
"""

from __future__ import annotations

import gc
import random
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from stark_lsp.evaluate.harness import Reference, clone_inputs
from stark_lsp.evaluate.judge import replies as R
from stark_lsp.evaluate.judge.compare import (Comparison, as_rounding, compare_outputs, rounding_factor, scalar_tolerance,
                                              tolerance_for)
from stark_lsp.evaluate.judge.conversation import Conversation, Verdict
from stark_lsp.evaluate.judge.timing import Batch
from stark_lsp.evaluate.result import Status, Trial
from stark_lsp.evaluate.wire import device_chain as DC
from stark_lsp.evaluate.wire import digest as D
from stark_lsp.evaluate.wire import output_hash as OH
from stark_lsp.evaluate.wire.chain import chained_seeds
from stark_lsp.output_names import output_name

_SEED_TOP = 2**31
PREPARE_S = 30.0  # drawing a batch's inputs, off the clock: what it may take beyond the batch's own limit


@dataclass
class RanBatch:
    seeds: list[int]  # the judge's secret seed of each call
    signs: list[int]  # the digest signs' seed of each call (secret until the batch's request)
    nonce: int
    calls: list[R.CallReply]
    wall_ms: float  # the judge's clock around the request
    chain: str = "host"
    prepare_ms: float | None = None  # the judge's clock around drawing its inputs (the device chain's ``prepare``)
    rows: torch.Tensor | None = field(default=None, repr=False)  # the digests on the device (``inputs``)
    rows_for: str = field(default="", repr=False)  # the device ``rows`` was made for, as the judge names it

    @property
    def input_seeds(self) -> list[int]:
        """The seed each call's inputs were drawn from (on the device chain, before their perturbation)."""
        if self.chain == "device":
            return list(self.seeds)
        return chained_seeds(self.seeds, self.nonce, [c.digest for c in self.calls])

    def inputs(self, ref: Reference, i: int, device: torch.device) -> list[Any]:
        """Call i's inputs exactly as the call saw them."""
        xs = ref.inputs(self.input_seeds[i])
        if self.chain == "device":
            xs = [x.contiguous() if isinstance(x, torch.Tensor) else x for x in xs]
            if i == 0:
                DC.perturb_inputs(xs, None, -1, self.nonce)
                return xs
            if self.rows is None or self.rows_for != str(device):  # (a tensor's device is cuda:0, the judge's cuda)
                # every call's committed digest row, copied to the device once (a copy from the host's
                # pageable memory waits for the stream: one a call made the checks wait call after call)
                flat = [DC.flat_row(c.digest) for c in self.calls]
                if len({len(r) for r in flat}) > 1:  # digests of unequal lengths (a wrong form, said later)
                    DC.perturb_inputs(xs, torch.tensor([flat[i - 1]], dtype=torch.float64, device=device), 0,
                                      self.nonce)
                    return xs
                self.rows = torch.tensor(flat, dtype=torch.float64, device=device)
                self.rows_for = str(device)
            DC.perturb_inputs(xs, self.rows, i - 1, self.nonce)
        return xs

    def sample(self) -> Batch:
        return Batch(len(self.calls), self.wall_ms, prepare_ms=self.prepare_ms)


class Seeds:
    """The judge's random draws for an evaluation: secret and new every time, or from ``fixed``
    (``--seed``, for debugging: call i of a stream gets ``fixed + base + i``)."""

    def __init__(self, fixed: int | None):
        self.fixed = fixed
        self._rng = random.SystemRandom()
        self._next: dict[int, int] = {}

    def draw(self, n: int, base: int) -> list[int]:
        if self.fixed is None:
            return [self._rng.randrange(1, _SEED_TOP) for _ in range(n)]
        start = self._next.get(base, 0)
        self._next[base] = start + n
        return [(self.fixed + base + start + i) % _SEED_TOP or 1 for i in range(n)]

    def secret(self) -> int:
        return self._rng.randrange(1, _SEED_TOP)

    def choose(self, population: int, k: int) -> list[int]:
        return sorted(self._rng.sample(range(population), min(k, population)))


def run_batch(conv: Conversation, seeds: Seeds, k: int, limit_s: float, phase: str, *, op: str = "run",
              extra: dict[str, Any] | None = None, launched_limit: float | None = None,
              progress_limit: float | None = None, on_compile: Callable[[str], float] | None = None) -> RanBatch:
    """Ask for k calls in a row; the reply's form checked (``replies.batch``). ``on_compile``: the first
    call's Triton compiles are said, and the GPU's gate moved around them (``link.Link.request``)."""
    call_seeds = seeds.draw(k, 5000)
    signs = [seeds.secret() for _ in range(k)]  # new digest signs for every call, secret until now
    nonce = seeds.secret()
    msg = {"op": op, "calls": [[s, p] for s, p in zip(call_seeds, signs)], "nonce": nonce,
           "hash": OH.scheme_for(conv.device), **(extra or {})}
    if on_compile is not None:
        msg["compile_gate"] = True
    prepare_ms = None
    if conv.chain == "device":  # the inputs drawn first, off the batch's clock (timed too: ``Batch.untimed_ms``)
        conv.ask({"op": "prepare", "seeds": call_seeds}, PREPARE_S + limit_s, f"{phase}: drawing its inputs",
                 lambda r: R.prepared(r, k))
        prepare_ms = conv.link.wall_ms()
        msg.update(chain="device", outputs_n=conv.outputs_n, calls=[[0, p] for p in signs])
    gc_was = gc.isenabled()
    gc.disable()  # no collector pause in the judge while its clock runs
    try:
        calls = conv.ask(msg, limit_s, phase, lambda r: R.batch(r, k), launched_limit=launched_limit,
                         progress_limit=progress_limit, on_compile=on_compile)
    finally:
        if gc_was:
            gc.enable()
    return RanBatch(call_seeds, signs, nonce, calls, conv.link.wall_ms(), chain=conv.chain, prepare_ms=prepare_ms)


class Checker:
    """Checks batches of one candidate against the reference (see the module's docstring)."""

    def __init__(self, conv: Conversation, ref: Reference, param_seed: int, atol: float | None, rtol: float | None,
                 may_change: tuple[int, ...] = ()):
        self.conv = conv
        self.may_change = may_change  # inputs the reference itself changes in place (``task_sanity``): no cheat
        self.ref = ref
        self.param_seed = param_seed
        self.atol, self.rtol = atol, rtol
        self.fetched = 0  # calls compared element by element so far
        self.checked = 0  # calls whose digest was checked
        self.trials_max_abs: dict[int, float] = {}  # each output's largest error in the trials that passed
        self.rounding: Verdict | None = None  # a timed call that strayed as rounding does (``compare.as_rounding``)

    def reference(self, inputs: list[Any], sync: bool = True) -> list[Any]:
        """The reference on a call's inputs, drawn again for this alone (``RanBatch.inputs``): not copied
        first where the task draws new tensors every time (``Reference.fresh_inputs``)."""
        fn = self.ref.reference_fn(self.param_seed)
        with torch.no_grad():
            out = fn(*(inputs if self.ref.fresh_inputs else clone_inputs(inputs)))
        if sync and self.conv.device.type == "cuda":
            torch.cuda.synchronize(self.conv.device)
        from stark_lsp.evaluate.harness import as_outputs

        return [o.detach() if isinstance(o, torch.Tensor) else o for o in as_outputs(out)]

    def _wrong(self, trial: bool, where: str, why: str, seed: int, trials: list[Trial] | None = None) -> Verdict:
        st = self.conv.state
        if trial:
            if trials is not None:
                trials.append(Trial(seed, False, None, None, None, why))
            return Verdict(st.result(Status.INCORRECT, f"{where} (seed {seed}): {why}", output=self.conv.output()))
        return st.cheat("wrong_while_timed", f"a timed call's output was wrong (results cached, work skipped or "
                                             f"precision lowered while timed, or a race): {where}, {why}",
                        self.conv.output())

    def fetch(self, i: int, where: str) -> list[Any]:
        """Call i of the last batch's outputs, read back into the judge's memory (a snapshot the process
        cannot touch afterwards); a call that changed its inputs in place is a cheat, but for an input the
        reference itself changes in place (``may_change``: the process is told to look past those)."""
        limit = 30.0 + self.conv.link.capacity / TRANSFER_FLOOR  # the shared buffer holds one call's outputs
        reply = self.conv.ask({"op": "fetch", "index": i, "may_change": list(self.may_change)}, limit,
                              f"reading {where}")
        changed = R.inputs_changed(reply)
        if changed is not None and changed not in self.may_change:
            raise self.conv.state.cheat("inputs_modified", f"the candidate modified input {changed} in place",
                                        self.conv.output())
        return self.conv.read_outputs(reply.get("outputs"))

    def check(self, ran: RanBatch, fetch: list[int], *, trial: bool, label: str,
              trials: list[Trial] | None = None, number_from: int = 1,
              fetched: dict[int, list[Any]] | None = None) -> None:
        """Every call's outputs' form and digest; the ``fetch`` calls element by element (read back
        now, or already, in ``fetched``). Calls are named from ``number_from`` (trials in several batches:
        the first call, then batches of the rest).

        The reference runs on every call's inputs one call after another with no synchronization
        between them; every call's digest and bound are read at the end, at once (``digest.Deferred``):
        on the H200 two synchronizations a call made the checks of a timing cost more than the timing."""
        deferred = D.Deferred()
        wheres = []
        sizes: list[list[int]] = []  # each call's outputs' element counts (a number: one)
        for i, (call, seed, sign) in enumerate(zip(ran.calls, ran.input_seeds, ran.signs)):
            where = f"{label} {i + number_from}" if trial else f"{label}, call {i + 1}"
            ref_out = self.reference(ran.inputs(self.ref, i, self.conv.device), sync=False)
            why = meta_mismatch(call.meta, ref_out)
            if why:
                raise self._wrong(trial, where, why, seed, trials)
            if i in fetch:  # element by element first: its message is the precise one
                outs = fetched[i] if fetched is not None and i in fetched else self.fetch(i, where)
                self._compare_fetched(call, seed, sign, ref_out, outs, trial, where, trials)
            deferred.add(ref_out, sign, [tolerance_for(o.dtype, self.atol, self.rtol) if isinstance(o, torch.Tensor)
                                         else scalar_tolerance(o, self.atol, self.rtol) for o in ref_out])
            wheres.append(where)
            sizes.append([o.numel() if isinstance(o, torch.Tensor) else 1 for o in ref_out])
            del ref_out
        for i, ((digs, bounds), where) in enumerate(zip(deferred.resolve(), wheres)):
            call, seed, sign = ran.calls[i], ran.input_seeds[i], ran.signs[i]
            if any(d is None for d in digs):  # a sum that is not finite: the counts need the output again
                digs = D.digest(self.reference(ran.inputs(self.ref, i, self.conv.device)), sign)
            why = D.agrees(call.digest, digs, bounds)
            self.checked += 1
            if why and "NaN/inf counts" in why:  # fp16 overflow, log(0) on a seed no trial drew: a wrong answer
                raise Verdict(self.conv.state.result(Status.INCORRECT, f"on the inputs of {where} (seed {seed}): {why}",
                                                     output=self.conv.output()))
            if why and not trial and self._digest_as_rounding(call.digest, digs, bounds, sizes[i]):
                if self.rounding is None:  # said once every other check passed (``Pending.flush``), as a read-back's
                    self.rounding = Verdict(self.conv.state.result(
                        Status.INCORRECT, f"on the inputs of {where} (seed {seed}): {why}; rounding of the size the "
                                          f"trials showed, outside this task's tolerance on these inputs",
                        output=self.conv.output()))
                continue
            if why:
                raise self._wrong(trial, where, why, seed, trials)

    def _digest_as_rounding(self, cand: Any, ref: list[list[float]], bounds: list[float], sizes: list[int]) -> bool:
        """A timed call's digest off only in outputs of one element (a number, a loss's 0-dim tensor), each by at
        most ``compare.rounding_factor`` x that output's largest error in the trials that passed: a one-element output's
        digest is the element itself (its sign aside), so this is ``compare.as_rounding``'s rule for it, applied
        to a call not read back. Before session 31's review an honest float32 dot product returned as
        ``.item()`` was ``cheat: wrong_while_timed`` on a call whose value sat near zero, where the tolerance is
        smaller than the sum's rounding; its trials had shown errors of that size."""
        if not isinstance(cand, list) or len(cand) != len(ref) or len(sizes) != len(ref):
            return False
        for i, (c, r, b, n) in enumerate(zip(cand, ref, bounds, sizes)):
            if not isinstance(c, list) or len(c) != 4 or c[1:] != r[1:] or not isinstance(c[0], (int, float)):
                return False
            off = abs(c[0] - r[0])
            if off <= b:
                continue
            if n != 1 or not off <= rounding_factor(n) * self.trials_max_abs.get(i, 0.0):
                return False
        return True

    def _compare_fetched(self, call: R.CallReply, seed: int, sign: int, ref_out: list[Any], outs: list[Any],
                         trial: bool, where: str, trials: list[Trial] | None) -> None:
        st = self.conv.state
        why = unstored(ref_out, outs)
        if why:
            raise self._wrong(trial, where, why, seed, trials)
        cmp = compare_outputs(ref_out, outs, self.atol, self.rtol)
        if trials is not None:
            trials.append(Trial(seed, cmp.passed, cmp.max_abs_error, cmp.max_rel_error, cmp.failed_output,
                                cmp.message))
        if st.correctness is not None:
            st.correctness.atol, st.correctness.rtol = cmp.atol, cmp.rtol
        if trial and not cmp.passed:
            raise self._wrong(trial, where, cmp.message, seed)
        # the bytes read back must be the ones the call committed to while it ran, before anything is judged
        if not same_digest(call.digest, D.digest(outs, sign)):
            raise st.cheat("wrong_while_timed", f"{where}: the output read back is not the one the call committed to "
                                                f"while it ran (its digest differs): repaired after the fact",
                           self.conv.output())
        if OH.commit_one(outs, OH.scheme_for(self.conv.device)) != call.hashes:
            raise st.cheat("wrong_while_timed", f"{where}: the output read back is not the one the call returned "
                                                f"(its bytes do not hash to what the call committed to): "
                                                f"computed again, or repaired, after the fact", self.conv.output())
        if trial:
            self._note_trial_errors(ref_out, outs, cmp)
        elif not cmp.passed:
            if cmp.special:
                # NaN or infinities where the reference has none (fp16 overflow, log(0) on inputs no trial drew): a
                # wrong answer, as the digest's counts say it of a call not read back, never an accusation
                raise Verdict(st.result(Status.INCORRECT, f"on the inputs of {where} (seed {seed}): {cmp.message}",
                                        output=self.conv.output()))
            if not self._rounding_only(ref_out, outs, cmp):
                raise self._wrong(trial, where, cmp.message, seed)
            if self.rounding is None:  # a few elements just outside, the trials' size of error: said once every
                # other check of the timing passed (``Pending.flush``), so a cheat elsewhere is still called one
                self.rounding = Verdict(st.result(
                    Status.INCORRECT, f"on the inputs of {where} (seed {seed}): {cmp.message}; rounding of the size "
                                      f"the trials showed (their largest error there "
                                      f"{self.trials_max_abs.get(cmp.failed_output or 0, 0.0):.3g}), outside this "
                                      f"task's tolerance on these inputs", output=self.conv.output()))
        self.fetched += 1

    def _per_output(self, ref_out: list[Any], outs: list[Any], cmp: Comparison) -> list[Comparison]:
        if len(ref_out) == 1:
            return [cmp]
        return [compare_outputs([r], [o], self.atol, self.rtol) for r, o in zip(ref_out, outs)]

    def _note_trial_errors(self, ref_out: list[Any], outs: list[Any], cmp: Comparison) -> None:
        """Each output's largest error over the trials that passed (``compare.as_rounding``'s yardstick)."""
        for i, c in enumerate(self._per_output(ref_out, outs, cmp)):
            if c.max_abs_error is not None:
                self.trials_max_abs[i] = max(self.trials_max_abs.get(i, 0.0), c.max_abs_error)

    def _rounding_only(self, ref_out: list[Any], outs: list[Any], cmp: Comparison) -> bool:
        """Every output of a timed call passes or strays as that output's rounding did in the trials."""
        return all(c.passed or as_rounding(c, self.trials_max_abs.get(i, 0.0))
                   for i, c in enumerate(self._per_output(ref_out, outs, cmp)))


class Pending:
    """Timed batches whose checks wait (see the module's docstring): each batch's chosen outputs read
    back at once, the reference and the comparisons later, in ``flush``. ``budget_bytes``: what the
    snapshots may hold in the judge's memory before ``due`` says to flush."""

    def __init__(self, checker: Checker, budget_bytes: int):
        self.checker = checker
        self.budget_bytes = budget_bytes
        self.batches: list[tuple[RanBatch, list[int], dict[int, list[Any]], str]] = []
        self.held_bytes = 0
        self.fetched_bytes = 0  # read back over the whole timing (``timed_calls.fetch_count`` spends it)
        self.fetched_calls = 0
        self.flushes = 0

    @property
    def calls_waiting(self) -> int:
        """Calls whose checks wait: each one costs the judge a reference call at the flush."""
        return sum(len(ran.calls) for ran, _, _, _ in self.batches)

    def add(self, ran: RanBatch, fetch: list[int], label: str) -> None:
        # a call that says it returned no tensor is not read back: its form is wrong, which the check says
        fetch = [i for i in fetch if not any(m and m[0] == "other" for m in ran.calls[i].meta)]
        fetched = {i: self.checker.fetch(i, f"{label}, call {i + 1}") for i in fetch}
        size = sum(output_bytes(o) for o in fetched.values())
        self.held_bytes += size
        self.fetched_bytes += size
        self.fetched_calls += len(fetched)
        self.batches.append((ran, fetch, fetched, label))

    def due(self) -> bool:
        return self.held_bytes >= self.budget_bytes

    def flush(self) -> None:
        """Every waiting batch checked, in the order they ran: the first wrong call is the verdict."""
        batches, self.batches, self.held_bytes = self.batches, [], 0
        if batches:
            self.flushes += 1
        for ran, fetch, fetched, label in batches:
            self.checker.check(ran, fetch, trial=False, label=label, fetched=fetched)
            fetched.clear()
        if self.checker.rounding is not None:  # every batch checked, no cheat among them: a wrong answer
            raise self.checker.rounding


def same_digest(committed: list[list[float]], recomputed: list[list[float]]) -> bool:
    """The digest the process sent for a call and the judge's digest of the outputs it read back:
    the same up to float64 rounding of the sum (a summation order of another thread count)."""
    if len(committed) != len(recomputed):
        return False
    for c, r in zip(committed, recomputed):
        if c[1:] != r[1:]:
            return False
        if not abs(c[0] - r[0]) <= 1e-9 * max(1.0, abs(r[0])) + 1e-6:
            return False
    return True


def meta_mismatch(meta: list[tuple[Any, ...]], ref_out: list[Any]) -> str:
    """Why a call's outputs, as described, cannot be the reference's ('' when dtypes and shapes match)."""
    if len(meta) != len(ref_out):
        return f"{len(meta)} outputs, expected {len(ref_out)}"
    for i, (m, r) in enumerate(zip(meta, ref_out)):
        if isinstance(r, torch.Tensor):
            if m[0] in ("scalar", "other"):
                return f"{output_name(i)} is {'a number' if m[0] == 'scalar' else 'a ' + str(m[1])}, expected a tensor"
            want = str(r.dtype).replace("torch.", "")
            if m[0] != want:
                return f"{output_name(i)}: dtype {m[0]}, expected {want}"
            if tuple(m[1]) != tuple(r.shape):
                return f"{output_name(i)}: shape {tuple(m[1])}, expected {tuple(r.shape)}"
        elif m[0] == "other":
            return f"{output_name(i)} is a {m[1]}, not a tensor or a number"
        elif m[0] != "scalar":
            return f"{output_name(i)} is a tensor, expected a number"
    return ""


def unstored(ref_out: list[Any], outs: list[Any]) -> str:
    """Why an output that did not fit the shared buffer cannot be right ('' when all fit)."""
    for i, c in enumerate(outs):
        if isinstance(c, torch.Tensor) and c.is_meta:
            r = ref_out[i] if i < len(ref_out) else None
            if isinstance(r, torch.Tensor) and tuple(r.shape) != tuple(c.shape):
                return f"{output_name(i)}: shape {tuple(c.shape)}, expected {tuple(r.shape)}"
            if isinstance(r, torch.Tensor) and r.dtype != c.dtype:
                return f"{output_name(i)}: dtype {str(c.dtype)[6:]}, expected {str(r.dtype)[6:]}"
            return f"{output_name(i)}: {tuple(c.shape)} {str(c.dtype)[6:]} is more than the reference returns"
    return ""


def output_bytes(outs: list[Any]) -> int:
    return sum(o.numel() * o.element_size() for o in outs if isinstance(o, torch.Tensor))


TRANSFER_FLOOR = 0.5e9  # copying outputs to the judge: 0.5 GB/s is a floor, not an estimate


def transfer_s(outs: list[Any]) -> float:
    return output_bytes(outs) / TRANSFER_FLOOR
