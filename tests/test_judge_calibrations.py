"""The candidates' calibrations a judge keeps per task and reuses where the reference is timed once (the GPU's
rule): one wait for the gate's exclusive hold an evaluation instead of two (``judge/calibrations.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stark_lsp.evaluate.judge.calibrations import FRESH, KEPT, Calibrations, conservative, key
from stark_lsp.evaluate.judge.timing import Overhead

ROOT = Path(__file__).resolve().parents[1]


def _ov(fixed, per, noise=0.01, prepare=None):
    return Overhead(fixed_ms=fixed, per_call_ms=per, noise_ms=noise, prepare_fixed_ms=prepare, prepare_per_call_ms=0.1)


def test_the_kept_calibration_subtracts_no_more_than_any_one_taken_and_is_no_narrower():
    taken = [_ov(0.30, 0.020, 0.01, 0.2), _ov(0.25, 0.030, 0.05, 0.3), _ov(0.40, 0.010, 0.02, 0.1)]
    c = conservative(taken)
    assert c.fixed_ms == 0.25 and c.per_call_ms == 0.010 and c.noise_ms == 0.05 and c.prepare_fixed_ms == 0.1
    for k in (1, 8, 100):  # what it subtracts from a batch of k calls: never more than one of them would
        assert c.of(k) <= min(o.of(k) for o in taken)
    assert conservative([*taken, _ov(0.3, 0.02)]).prepare_fixed_ms is None  # one without a measure: none allowed


def test_a_task_is_calibrated_fresh_first_then_reused_then_refreshed_and_tasks_stay_apart():
    cal = Calibrations(fresh=3, refresh=4)
    for i in range(3):
        assert cal.reuse("a") is None
        cal.add("a", _ov(0.3 - 0.01 * i, 0.02))
    assert cal.reuse("b") is None  # another task: its own
    got = [cal.reuse("a") for _ in range(4)]
    assert [g is not None for g in got] == [True, True, True, False]  # every 4th calibrates afresh
    assert got[0].fixed_ms == pytest.approx(0.28) and cal.reused == 3
    cal.add("a", _ov(0.1, 0.02))
    assert cal.reuse("a").fixed_ms == pytest.approx(0.1)
    for _ in range(KEPT + 2):
        cal.add("c", _ov(0.5, 0.02))
    assert len(cal._tasks["c"].taken) == KEPT


def test_a_profiled_processs_calibration_is_never_given_to_a_plain_one():
    # whether a process starts the profiler is the candidate's choice (a comment naming a CUDA graph will do), and
    # ``link.take`` never hands such a process to a role that did not ask for one: three candidates that name one
    # must not set what a fourth, plain, process subtracts (the device chain's prepare allowance has no cap)
    cal = Calibrations(fresh=3, refresh=16)
    profiled, plain = key("t", 1, 64, "device", True), key("t", 1, 64, "device", False)
    assert profiled != plain
    for _ in range(3):
        cal.add(profiled, _ov(0.9, 0.2, prepare=0.9))
    assert cal.reuse(profiled) is not None
    assert cal.reuse(plain) is None  # calibrated afresh, in its own process


@pytest.fixture
def once(monkeypatch, tmp_path):
    from stark_lsp.evaluate.sandbox.policy import probe

    if not probe().available:
        pytest.skip(f"no sandbox here: {probe().reason}")
    monkeypatch.setenv("STARK_EVAL_CPU_REFERENCE", "once")  # the GPU's rule: the reference timed once per task
    monkeypatch.setenv("STARK_EVAL_TRACE", str(tmp_path / "trace.jsonl"))
    return tmp_path / "trace.jsonl"


def test_a_judge_calibrates_a_tasks_first_processes_then_gives_later_ones_the_least_of_them(once, tmp_path):
    from stark_lsp.evaluate.evaluator import Evaluator
    from stark_lsp.evaluate.options import EvalOptions
    from stark_lsp.evaluate.result import Status
    from stark_lsp.tasks.spec import load_task

    opts = EvalOptions(trials=2, cpu_reps=5, reps=20, time_budget_s=0.5, load_timeout_s=30)
    task = load_task(ROOT / "tests/data/evaluator/add_task.py")
    source = (ROOT / "tests/data/evaluator/good_torch.py").read_text()
    n = FRESH + 2
    with Evaluator(workers=1, cache_dir=tmp_path / "cache", sandbox="auto", device="cpu") as e:
        results = [e.evaluate(task, source, opts) for _ in range(n)]
    assert all(r.status is Status.OK for r in results), [r.summary() for r in results]
    rows = [json.loads(x) for x in once.read_text().splitlines()]
    kept = [x for x in rows if x.get("calibration") == "kept"]
    cands = [x for x in rows if x.get("role") == "candidate"]
    assert len(cands) == n and len(kept) == n - FRESH, (len(cands), len(kept))
    least = conservative([Overhead(**c["calibrated"]) for c in cands[:FRESH]])
    for c in cands[FRESH:]:  # what the later processes were credited: the least of the first ones'
        assert Overhead(**c["calibrated"]).per_call_ms == pytest.approx(least.per_call_ms)
        assert Overhead(**c["calibrated"]).fixed_ms == pytest.approx(least.fixed_ms)
