"""The time a search has left (``search/pace.py``): estimated from this run's attempts, capped by
``--wall-time``, shown on the CLI's live line and in the editor's progress."""

from __future__ import annotations

from dataclasses import replace

from stark_lsp.search.engine import Progress
from stark_lsp.search.pace import duration, time_left, time_left_text
from stark_lsp.search.progress import format_progress
from stark_lsp.server.progress import progress_text


def test_time_left_at_the_pace_of_this_runs_attempts():
    assert time_left(0, 30, 10.0) is None and time_left(1, 29, 4.0) is None  # too few to tell
    assert time_left(4, 26, 20.0) == 130.0  # 5 s an attempt
    assert time_left(4, 26, 20.0, wall_left_s=40.0) == 40.0  # --wall-time ends it first
    assert time_left(4, 0, 20.0) == 0.0
    assert time_left(1, 5, 3.0, wall_left_s=-2.0) == 0.0  # past --wall-time: nothing more starts


def test_said_as_a_duration():
    assert duration(42.04) == "42.0s" and duration(190) == "3m10s" and duration(3900) == "1h05m"
    assert time_left_text(None) == "" and time_left_text(0.2) == "finishing"
    assert time_left_text(130.0) == "about 2m10s left"


def test_the_cli_and_the_editor_say_it():
    p = Progress(task_id="t", attempt=4, budget=30, best_speedup=None, best_node_id=None, failures=0, correct=4,
                 running=1, done=False, time_left_s=130.0)
    assert format_progress(p).endswith("about 2m10s left")
    assert "left" not in format_progress(p, doing=False)  # plain lines: only when a count or a message changed
    assert "· about 2m10s left" in progress_text(p, None)[0]
    assert "left" not in progress_text(replace(p, time_left_s=None), None)[0]


def test_a_running_search_reports_it_after_two_attempts(tmp_path):
    from fakes import FakeEvaluator, FakeTeam, make_fake_task

    from stark_lsp.search import Search, SearchConfig, TreeStore

    task = make_fake_task(tmp_path)
    seen = []
    store = TreeStore.open(tmp_path / ".stark" / "tree.sqlite")
    s = Search(task, store, FakeEvaluator(), FakeTeam(fail_rate=0.0),
               SearchConfig(budget=6, concurrency=1, retime_top=0), on_progress=seen.append)
    s.run()
    store.close()
    running = [p for p in seen if not p.done]
    assert all(p.time_left_s is None for p in running if p.attempt < 2)
    told = [p for p in running if p.time_left_s is not None]
    assert told and all(p.time_left_s >= 0 for p in told)
    assert all(p.time_left_s is None for p in seen if p.done)
