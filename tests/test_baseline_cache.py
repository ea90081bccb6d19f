"""The baselines' figures on disk (evaluate/judge/baseline_cache.py): a second session with the same task,
machine and settings takes eager's figure from the cache and says so; any change of the task's files or of
the inputs' shapes times it afresh; a damaged file is timed afresh and replaced. On the CPU through
STARK_EVAL_BASELINE_CACHE_CPU=1 (on a GPU it is on by default)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from stark_lsp.evaluate.evaluator import Evaluator
from stark_lsp.evaluate.judge import baseline_cache as BC
from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.evaluate.result import Status
from stark_lsp.tasks.spec import load_task

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "evaluator"
FAST = EvalOptions(trials=2, cpu_reps=1, reps=20, time_budget_s=0.5, run_timeout_s=60)


def session(cache: Path, task_file: Path):
    """One evaluator (a fresh judge process: nothing kept in memory), one evaluation."""
    with Evaluator(workers=1, cache_dir=cache, device="cpu") as ev:
        r = ev.evaluate(load_task(task_file), (DATA / "good_torch.py").read_text(), FAST)
    assert r.status is Status.OK, r.summary()
    return r


@pytest.fixture
def task(tmp_path, monkeypatch):
    monkeypatch.setenv("STARK_EVAL_BASELINE_CACHE_CPU", "1")
    monkeypatch.delenv("STARK_EVAL_BASELINE_CACHE", raising=False)
    d = tmp_path / "task"
    d.mkdir()
    shutil.copy(DATA / "add_task.py", d / "add_task.py")
    return d / "add_task.py"


def test_a_second_session_takes_eager_from_the_cache_and_says_when_it_was_timed(tmp_path, task):
    cache = tmp_path / "cache"
    first = session(cache, task)
    assert "baseline cache" not in first.runtime.note
    files = list((cache / "baselines").glob("*.json"))
    assert len(files) == 1 and (cache / "baselines").stat().st_mode & 0o077 == 0
    second = session(cache, task)
    assert "baseline cache" in second.runtime.note and "eager timed 20" in second.runtime.note
    assert second.runtime.reference.median_ms == first.runtime.reference.median_ms


def test_a_changed_task_file_is_timed_afresh(tmp_path, task):
    cache = tmp_path / "cache"
    session(cache, task)
    task.write_text(task.read_text() + "\n# edited\n")
    again = session(cache, task)
    assert "baseline cache" not in again.runtime.note
    assert len(list((cache / "baselines").glob("*.json"))) == 2


def test_a_damaged_or_foreign_file_is_timed_afresh_and_replaced(tmp_path, task):
    cache = tmp_path / "cache"
    session(cache, task)
    (f,) = (cache / "baselines").glob("*.json")
    doc = json.loads(f.read_text())
    doc["reference"]["median_ms"] = -1.0  # not a figure
    f.write_text(json.dumps(doc))
    again = session(cache, task)
    assert "baseline cache" not in again.runtime.note
    assert json.loads(f.read_text())["reference"]["median_ms"] > 0  # replaced by the new figure
    f.write_text("[" * 100000)  # nested past any parser's depth
    assert "baseline cache" not in session(cache, task).runtime.note


def test_off_when_the_variable_is_empty(tmp_path, task, monkeypatch):
    monkeypatch.setenv("STARK_EVAL_BASELINE_CACHE", "")
    cache = tmp_path / "cache"
    session(cache, task)
    assert not (cache / "baselines").exists()
    assert BC.directory() is None


def test_the_key_changes_with_every_part():
    base = {"files": "a", "inputs": [[4]], "machine": {"gpu": "H200"}}
    assert BC.key(base) == BC.key(dict(base))
    for k, v in (("files", "b"), ("inputs", [[8]]), ("machine", {"gpu": "H100"})):
        assert BC.key({**base, k: v}) != BC.key(base)


def test_a_file_others_can_write_or_an_old_one_is_not_taken(tmp_path, task):
    import os
    import time

    cache = tmp_path / "cache"
    session(cache, task)
    (f,) = (cache / "baselines").glob("*.json")
    f.chmod(0o666)  # anyone could have written these figures
    assert "baseline cache" not in session(cache, task).runtime.note
    f.chmod(0o600)
    old = time.time() - BC.MAX_AGE_S - 60
    os.utime(f, (old, old))
    assert "baseline cache" not in session(cache, task).runtime.note


def test_what_inductor_wrote_is_kept_with_the_figures_and_checked_when_read(tmp_path, monkeypatch):
    from stark_lsp.evaluate.judge import timing as TM
    from stark_lsp.evaluate.judge.timed_calls import Timed

    monkeypatch.setenv("STARK_EVAL_BASELINE_CACHE", str(tmp_path / "b"))
    fig = TM.Figure(median_ms=1.0, bound_ms=0.01, noise=0.01, batches=5, calls=100, samples_ms=(1.0,) * 5)
    t = Timed(fig, slow=False, protocol_ms=0.1, fixed_ms=0.01, chain="host")
    code = {"code": "def call(args):\n    return (args[0],)\n", "inputs": ["input 0"],
            "configs": {"triton_poi_0": {"kwargs": {"XBLOCK": 1024}, "num_warps": 4, "num_stages": 1}},
            "torch": "2.11", "triton": "3.6"}
    BC.store("k1", t, t, "", {"x": 1}, code)
    got = BC.load("k1")
    assert got is not None and got[4] == code
    BC.store("k2", t, t, "", {"x": 1}, {**code, "configs": {"k": {"kwargs": {"XBLOCK": "big"}}}})
    assert BC.load("k2") is None  # a malformed entry is timed afresh, never read in part
    BC.store("k3", t, None, "", {"x": 1})
    assert BC.load("k3")[4] is None
