"""Timing that stops when it knows, against a real evaluator: a candidate clearly slower than the figure to
beat (``EvalOptions.race_ms``, the search's best) is timed only until that is clear, and a timing's checks
run once its batches are done. On the CPU in CI, unchanged on a GPU (scripts/gpu_tests.sh)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stark_lsp.evaluate.evaluator import Evaluator
from stark_lsp.evaluate.judge import timing as TM
from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.evaluate.result import Status
from stark_lsp.tasks.spec import load_task

ROOT = Path(__file__).resolve().parents[1]
# a reference of 200 small steps (milliseconds a call on a CPU or a GPU), the candidate the reference itself: a
# figure far above the clock's noise everywhere, and never cut short as slow (it is the reference's own time)
SLOW_TASK = ROOT / "tests" / "data" / "evaluator" / "slow_ref_task.py"
ITSELF = SLOW_TASK.read_text() + "\n\nclass ModelNew(Model):\n    pass\n"
OPTS = EvalOptions(trials=2, cpu_reps=6, reps=30, time_budget_s=1.0, load_timeout_s=30)

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def ev(tmp_path_factory):
    with Evaluator(workers=1, cache_dir=tmp_path_factory.mktemp("cache")) as e:
        yield e


def test_a_candidate_far_slower_than_the_best_is_timed_only_until_that_is_clear(ev):
    race = 1e-3
    r = ev.evaluate(load_task(SLOW_TASK), ITSELF, EvalOptions(**{**OPTS.to_dict(), "race_ms": race}))
    assert r.status is Status.OK, r.summary()
    t = r.runtime.candidate
    # at the third batch, or a little later where the machine's noise kept its bound wide at first
    assert TM.RACE_BATCHES <= t.batches < OPTS.cpu_reps, t
    assert "clearly slower than the search's best" in r.runtime.note
    assert t.median_ms - t.bound_ms > race * TM.RACE_MARGIN  # the judge's honest figure, clearly slower


def test_a_candidate_that_may_be_the_best_is_timed_in_full(ev):
    for race in (None, 1e6):
        r = ev.evaluate(load_task(SLOW_TASK), ITSELF, EvalOptions(**{**OPTS.to_dict(), "race_ms": race}))
        assert r.status is Status.OK, r.summary()
        t = r.runtime.candidate
        assert t.batches == OPTS.cpu_reps if not r.runtime.is_gpu else t.batches >= TM.MIN_BATCHES, t
        assert "clearly slower" not in r.runtime.note


def test_a_timings_checks_run_after_its_batches(ev):
    r = ev.evaluate(load_task(SLOW_TASK), ITSELF, OPTS)
    assert r.status is Status.OK, r.summary()
    names = list(r.phases)
    assert names.index("timing") < names.index("timing's checks"), names
