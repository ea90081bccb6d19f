"""Timed batches whose checks wait (evaluate/judge/batches.Pending, timed_calls.fetch_count): the chosen
outputs read back at once, the rest checked later in the order the batches ran. Pure: a stand-in checker."""

from __future__ import annotations

import pytest
import torch

from stark_lsp.evaluate.judge import timed_calls as TC
from stark_lsp.evaluate.judge.batches import Pending, RanBatch
from stark_lsp.evaluate.judge.replies import CallReply
from stark_lsp.evaluate.judge.conversation import Verdict
from stark_lsp.evaluate.result import EvalResult, Status


class Checker:
    """Reads back a call as a tensor of ``nbytes``; a check fails on the batch named ``wrong``."""

    def __init__(self, nbytes: int = 1000, wrong: str | None = None):
        self.nbytes, self.wrong = nbytes, wrong
        self.read: list[str] = []
        self.checked: list[tuple[str, list[int], set[int]]] = []
        self.fetched = 0
        self.rounding = None  # a timed call that strayed as rounding does: said after every batch was checked

    def fetch(self, i: int, where: str) -> list[torch.Tensor]:
        self.read.append(where)
        return [torch.zeros(self.nbytes, dtype=torch.uint8)]

    def check(self, ran, fetch, *, trial, label, fetched):
        assert not trial
        self.checked.append((label, list(fetch), set(fetched)))
        if label == self.wrong:
            raise Verdict(EvalResult(Status.CHEAT, f"{label} was wrong"))


def ran(k: int = 4, meta: tuple = ("float32", (4,))) -> RanBatch:
    return RanBatch(seeds=list(range(k)), signs=[1] * k, nonce=1, wall_ms=1.0,
                    calls=[CallReply([[0.0, 0, 0, 0]], [meta]) for _ in range(k)])


def test_outputs_are_read_back_when_the_batch_ran_and_checked_only_at_the_flush():
    c = Checker()
    p = Pending(c, budget_bytes=10_000)
    p.add(ran(), [0, 2], "batch 1")
    p.add(ran(), [1], "batch 2")
    assert c.read == ["batch 1, call 1", "batch 1, call 3", "batch 2, call 2"]
    assert c.checked == [] and not p.due()
    p.flush()
    assert c.checked == [("batch 1", [0, 2], {0, 2}), ("batch 2", [1], {1})]  # in the order they ran
    assert p.held_bytes == 0 and p.flushes == 1 and p.fetched_calls == 3


def test_snapshots_past_their_budget_ask_for_a_flush():
    p = Pending(Checker(nbytes=600), budget_bytes=1000)
    p.add(ran(), [0], "batch 1")
    assert not p.due()
    p.add(ran(), [0], "batch 2")
    assert p.due()
    p.flush()
    assert not p.due() and p.fetched_bytes == 1200  # what was read back over the timing stays counted


def test_a_wrong_batch_is_the_verdict_and_later_ones_are_not_needed():
    c = Checker(wrong="batch 2")
    p = Pending(c, budget_bytes=10_000)
    for i in (1, 2, 3):
        p.add(ran(), [0], f"batch {i}")
    with pytest.raises(Verdict) as e:
        p.flush()
    assert e.value.result.status is Status.CHEAT and "batch 2" in e.value.result.message
    assert [x[0] for x in c.checked] == ["batch 1", "batch 2"]


def test_a_call_that_returned_no_tensor_is_not_read_back_its_check_says_so():
    c = Checker()
    p = Pending(c, budget_bytes=10_000)
    p.add(ran(meta=("other", "NoneType")), [0, 1], "batch 1")
    assert c.read == [] and p.calls_waiting == 4  # still checked: its form is wrong (a cheat while timed)


def test_a_timing_reads_back_a_few_calls_a_batch_then_one_of_each():
    p = Pending(Checker(nbytes=1), budget_bytes=1 << 40)
    assert TC.fetch_count(10, 4, p, is_gpu=False) == 4
    assert TC.fetch_count(2, 4, p, is_gpu=False) == 2
    assert TC.fetch_count(10, 0, p, is_gpu=False) == 0  # a warm-up reads nothing back
    p.fetched_bytes = TC.FETCH_BYTES[False]  # heavy outputs: 4 a batch until MIN_FETCHED calls, then one
    p.fetched_calls = TC.MIN_FETCHED - 1
    assert TC.fetch_count(10, 4, p, is_gpu=False) == 4
    p.fetched_calls = TC.MIN_FETCHED
    assert TC.fetch_count(10, 4, p, is_gpu=False) == 1
    p.fetched_bytes = 0  # light outputs: FETCH_CALLS calls, then one of every batch, never none
    p.fetched_calls = TC.FETCH_CALLS - 1
    assert TC.fetch_count(10, 4, p, is_gpu=False) == 4
    p.fetched_calls = TC.FETCH_CALLS
    assert {TC.fetch_count(10, 4, p, is_gpu=False) for _ in range(50)} == {1}


def test_nan_where_the_reference_has_a_number_in_a_timed_read_back_is_wrong_not_a_cheat():
    """fp16 overflow or log(0) on inputs no trial drew: the same verdict (incorrect) whether the call was read
    back or only its digest's counts were checked; the checks' order must not turn it into an accusation."""
    from types import SimpleNamespace

    from stark_lsp.evaluate.judge.batches import Checker as RealChecker

    state = SimpleNamespace(correctness=None, result=lambda status, msg, output="": EvalResult(status, msg),
                            cheat=lambda kind, msg, output="": Verdict(EvalResult(Status.CHEAT, msg)))
    c = RealChecker.__new__(RealChecker)
    c.conv = SimpleNamespace(state=state, output=lambda: "", device=torch.device("cpu"))
    c.atol = c.rtol = None
    c.fetched = 0
    c.trials_max_abs, c.rounding = {}, None
    from stark_lsp.evaluate.wire import digest as D
    from stark_lsp.evaluate.wire import output_hash as OH

    outs = [torch.tensor([float("nan"), 2.0])]  # what the call committed to while it ran (its digest, its bytes)
    call = CallReply(D.digest(outs, 1), [("float32", (2,))], OH.commit_one(outs, OH.scheme_for(torch.device("cpu"))))
    with pytest.raises(Verdict) as got:
        c._compare_fetched(call, 7, 1, [torch.tensor([1.0, 2.0])], outs, False, "timed batch, call 3", None)
    assert got.value.result.status is Status.INCORRECT and "NaN" in got.value.result.message
    # the same NaN in bytes the call never committed to: repaired after the fact, a cheat
    call = CallReply([[0.0, 0, 0, 0]], [("float32", (2,))], ["0" * 32])
    with pytest.raises(Verdict) as got:
        c._compare_fetched(call, 7, 1, [torch.tensor([1.0, 2.0])], outs, False, "timed batch, call 3", None)
    assert got.value.result.status is Status.CHEAT


def test_a_rounding_verdict_is_said_only_after_every_batch_was_checked():
    c = Checker()
    p = Pending(c, budget_bytes=10_000)
    for i in (1, 2):
        p.add(ran(), [0], f"batch {i}")
    c.rounding = Verdict(EvalResult(Status.INCORRECT, message="rounding of the size the trials showed"))
    with pytest.raises(Verdict) as e:
        p.flush()
    assert e.value.result.status is Status.INCORRECT
    assert [x[0] for x in c.checked] == ["batch 1", "batch 2"]  # a cheat in a later batch would have been found
