"""The re-timing's "× your kernel" (search/retime.summarize): each round's candidate against that round's root,
each through its own eager figure, so that on the CPU (eager timed in turn with every evaluation) what the
machine's load did between the two evaluations cancels; on a GPU (one pinned eager timing) it is the root's
time over the candidate's. The figure is the candidate's median over the root's median of the same rounds
(what the table prints as their "× eager"); its range, the per-round ratios'."""

import statistics
from types import SimpleNamespace

import pytest

from stark_lsp.evaluate.result import Status
from stark_lsp.search.retime import summarize


def result(ms, eager_ms, gpu):
    return SimpleNamespace(status=Status.OK, runtime=SimpleNamespace(
        speedup=eager_ms / ms, candidate=SimpleNamespace(median_ms=ms), speedup_vs_compiled=None, is_gpu=gpu))


def test_on_the_cpu_a_round_whose_root_ran_under_load_does_not_move_the_candidate_against_it():
    # the candidate twice as fast as eager in its evaluation; the root, eager's own code, timed while the
    # machine was busy: everything in that evaluation (its eager too) took four times as long
    cand = [result(5.0, 10.0, gpu=False)]
    root = [result(40.0, 40.0, gpu=False)]
    r = summarize(cand, root)
    assert r.vs_root == pytest.approx(2.0)  # raw times would say 8.0
    assert r.speedup == pytest.approx(2.0)


def test_on_a_gpu_it_is_the_roots_time_over_the_candidates():
    cand = [result(1.0, 3.0, gpu=True), result(1.2, 3.0, gpu=True), result(1.1, 3.0, gpu=True)]
    root = [result(2.0, 3.0, gpu=True), result(2.2, 3.0, gpu=True), None]
    r = summarize(cand, root)
    # the candidate's median over the root's median of the same rounds (as the table prints the two "× eager",
    # so a reader's division agrees): with one pinned eager, the root's median time over the candidate's
    assert r.vs_root == pytest.approx(r.speedup / statistics.median([3.0 / 2.0, 3.0 / 2.2]))
    assert (r.vs_root_low, r.vs_root_high) == (pytest.approx(2.2 / 1.2), pytest.approx(2.0))  # per-round ratios
    assert r.vs_root_low <= r.vs_root <= r.vs_root_high
