"""What an evaluation in flight is doing (evaluate/phases.py): the judge's phase lines through a real
worker, the search's progress while an evaluation runs, and the lines that show it."""

from __future__ import annotations

import io
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from stark_lsp.evaluate import phases
from stark_lsp.evaluate.evaluator import Evaluator
from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.search.engine import Progress
from stark_lsp.search.progress import ProgressPrinter, format_progress
from stark_lsp.tasks.spec import load_task

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "evaluator"
FAST = EvalOptions(trials=2, cpu_reps=1, reps=20, time_budget_s=0.5, run_timeout_s=60)


def test_the_judges_phase_names_map_to_what_it_does_next_and_nothing_else_does():
    assert phases.after("first call") == phases.CHECKING and phases.after("trials") == phases.TIMING
    assert phases.after("sandbox") == phases.BASELINES and phases.after("timing") == phases.CHECKING
    assert phases.after("resources") is None and phases.after(["trials"]) is None and phases.after(None) is None


def test_a_listener_hears_only_its_own_threads_evaluations_and_may_fail():
    heard: list[str] = []
    other: list[str] = []

    def elsewhere():
        phases.report(phases.TIMING)  # no listener in this thread
        with phases.listening(other.append):
            phases.report(phases.QUEUED)

    with phases.listening(heard.append):
        phases.report(phases.BUILDING)
        t = threading.Thread(target=elsewhere)
        t.start()
        t.join()
        phases.report(None)
    phases.report(phases.CHECKING)  # after the block: nobody
    assert heard == [phases.BUILDING] and other == [phases.QUEUED]

    def broken(_: str) -> None:
        raise RuntimeError("a display that fails")

    with phases.listening(broken):
        phases.report(phases.CHECKING)  # ignored: never fails the evaluation


@pytest.mark.timeout(300)
def test_a_real_evaluation_says_it_is_queued_then_starting_checking_and_timing(tmp_path):
    heard: list[str] = []
    with Evaluator(workers=1, cache_dir=tmp_path / "cache") as ev, phases.listening(heard.append):
        r = ev.evaluate(load_task(DATA / "add_task.py"), (DATA / "good_torch.py").read_text(), FAST)
    assert r.status.value == "ok", r.summary()
    said = [p for i, p in enumerate(heard) if i == 0 or heard[i - 1] != p]  # each change once
    assert said[0] == phases.QUEUED and set(said) <= set(phases.ORDER), heard
    for earlier, later in ((phases.STARTING, phases.CHECKING), (phases.CHECKING, phases.TIMING)):
        assert said.index(earlier) < said.index(later), said


def _progress(**kw) -> Progress:
    base = dict(task_id="t", attempt=1, budget=4, best_speedup=None, best_node_id=None, failures=0, correct=1,
                running=2, done=False)
    return Progress(**{**base, **kw})


def test_the_live_line_says_what_the_evaluations_do_and_plain_lines_do_not_repeat_for_it():
    p = _progress(doing=((phases.CHECKING, 1), (phases.TIMING, 1)))
    assert "running 2 (1 checking, 1 timing)" in format_progress(p)
    assert "(1 checking" not in format_progress(p, doing=False)
    tty = io.StringIO()
    ProgressPrinter(tty, tty=True)(p)
    assert "(1 checking, 1 timing)" in tty.getvalue()
    plain = io.StringIO()
    printer = ProgressPrinter(plain, tty=False)
    printer(_progress(message="attempt 2: plan #1"))
    printer(p)  # only what the evaluations do changed: no new line
    printer(replace(p, doing=((phases.TIMING, 2),)))
    printer(replace(p, correct=2))  # a count changed: a line
    lines = plain.getvalue().splitlines()
    assert len(lines) == 2 and "attempt 2: plan #1" in lines[0] and "correct 2" in lines[1], lines


class _Saying:
    """An evaluator (the tests' fake) that says it is checking, then timing, as a judge does."""

    def __init__(self):
        from fakes import FakeEvaluator

        self.inner = FakeEvaluator()

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def evaluate(self, task, source, options=None):
        phases.report(phases.CHECKING)
        phases.report(phases.TIMING)
        return self.inner.evaluate(task, source, options)


def test_the_searchs_progress_carries_what_each_evaluation_in_flight_does(tmp_path):
    from fakes import FakeTeam, make_fake_task

    from stark_lsp.search import Search, SearchConfig, TreeStore

    task = make_fake_task(tmp_path)
    store = TreeStore.open(tmp_path / ".stark" / "tree.sqlite")
    seen: list[Progress] = []
    try:
        Search(task, store, _Saying(), FakeTeam(), SearchConfig(budget=2, concurrency=1, retime_top=0),
               on_progress=seen.append).run()
    finally:
        store.close()
    doing = [p.doing for p in seen if p.doing]
    assert ((phases.CHECKING, 1),) in doing and ((phases.TIMING, 1),) in doing
    assert seen[-1].doing == () and seen[-1].running == 0  # nothing in flight at the end
