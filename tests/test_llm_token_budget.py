"""``--token-budget N``: the search starts no attempt once the LLM team's tokens (prompt + completion,
``search/usage.py``, from the servers' ``usage``) reach N; attempts in flight finish; the end is one
line, and the result is kept and reported as at the end of the attempt budget (the same exit code).
A budget that is not a positive whole number is refused (exit 2); the built-in team's is ignored with
a notice."""

from __future__ import annotations

import re

import pytest

from conftest_replay import replay  # noqa: F401  (the fixture)
from fakes import FakeEvaluator, FakeTeam, make_fake_task
from test_bench_cli import fake_task
from test_llm_search import KEY, responder
from stark_lsp import cli
from stark_lsp.commands import optimize_cmd
from stark_lsp.search import Search, SearchConfig, TreeStore, usage

pytestmark = pytest.mark.timeout(120)
STOPPED = re.compile(r"stopped: the token budget \((\d+) tokens\) is spent: (\d+) tokens in (\d+) attempts?")


def test_the_search_starts_no_attempt_once_the_tokens_reach_the_budget(tmp_path):
    task = make_fake_task(tmp_path)
    store = TreeStore.open(tmp_path / "tree.sqlite")
    said: list[str] = []
    Search(task, store, FakeEvaluator(), FakeTeam(), SearchConfig(budget=30, concurrency=1, token_budget=500),
           on_progress=lambda p: said.append(p.message) if p.done else None).run()
    nodes = store.nodes(task.task_id())
    attempts = [n for n in nodes if n.parent_id is not None]
    spent = usage.tokens(usage.total(nodes))
    assert spent >= 500 and 1 < len(attempts) < 30  # it stopped at the tokens, long before the attempts
    before_last = usage.tokens(usage.total(nodes[:-1])) or 0
    assert before_last < 500  # the last attempt began under the budget
    (line,) = said
    m = STOPPED.fullmatch(line)
    assert m and (int(m[1]), int(m[2]), int(m[3])) == (500, spent, len(attempts))


def test_no_budget_and_a_tree_without_tokens_never_stop():
    assert usage.budget_spent([], None) == "" and usage.budget_spent([], 10) == ""


def _optimize(tmp_path, monkeypatch, replay, *extra: str) -> tuple[int, str, str]:
    (tmp_path / ".git").mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STARK_API_KEY", KEY)
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda args, warm_for=None: FakeEvaluator())
    replay.responder = responder()
    task = make_fake_task(tmp_path)
    return task, cli.main(["optimize", str(task.path), "--llm", "openai", "--model", "m", "--base-url",
                           replay.base_url, "--concurrency", "1", "--fresh", *extra])


def test_the_cli_stops_at_the_token_budget_as_at_the_attempt_budget(tmp_path, monkeypatch, replay, capsys):
    # each answer counts 100 prompt + 50 completion tokens: an attempt (plan and code) is 300
    task, by_tokens = _optimize(tmp_path / "tokens", monkeypatch, replay, "--token-budget", "200")
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    m = [STOPPED.search(line) for line in err.splitlines() if STOPPED.search(line)]
    assert m and (m[-1][1], m[-1][2], m[-1][3]) == ("200", "300", "1")
    kids = [n for n in TreeStore.open(tmp_path / "tokens" / ".stark" / "tree.sqlite").nodes(task.task_id())
            if n.parent_id is not None]
    assert len(kids) == 1
    _, by_attempts = _optimize(tmp_path / "attempts", monkeypatch, replay, "--budget", "1")
    out_attempts, _ = capsys.readouterr()
    assert by_tokens == by_attempts  # the same exit code (README, "Exit codes")
    assert [line.split()[0] for line in out.splitlines()[-3:]] == \
           [line.split()[0] for line in out_attempts.splitlines()[-3:]]  # and the same report


@pytest.mark.parametrize("value", ["0", "-3", "1.5", "lots"])
def test_a_token_budget_that_is_not_a_positive_whole_number_is_refused(tmp_path, capsys, value):
    task = make_fake_task(tmp_path)
    with pytest.raises(SystemExit) as e:
        cli.main(["optimize", str(task.path), "--llm", "openai", "--model", "m", "--token-budget", value])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if "error:" in line] == \
           [next(line for line in err.splitlines() if "--token-budget" in line and "error:" in line)]
    assert "Traceback" not in err


def test_the_built_in_team_ignores_a_token_budget_with_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda args, warm_for=None: FakeEvaluator())
    task = make_fake_task(tmp_path)
    cli.main(["optimize", str(task.path), "--budget", "1", "--token-budget", "100"])
    err = capsys.readouterr().err
    said = [line for line in err.splitlines() if "--token-budget" in line]
    assert said == ["stark optimize: --token-budget 100 is ignored: the built-in team uses no tokens"]
    assert not STOPPED.search(err)


def test_bench_stops_each_run_at_its_token_budget(monkeypatch, tmp_path, capsys):
    import json

    from stark_lsp.commands import bench_cmd

    monkeypatch.setattr(bench_cmd, "evaluator_from_args", lambda args, warm_for=None: FakeEvaluator())
    monkeypatch.setattr(bench_cmd, "team_from_args", lambda args: FakeTeam())  # 120 tokens an agent call
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    fake_task(tasks, "a")
    out = tmp_path / "out"
    assert cli.main(["bench", str(tasks), "--policies", "stark", "--budget", "30", "--concurrency", "1",
                     "--llm", "openai", "--model", "m", "--token-budget", "500", "--out", str(out)]) == 0
    doc = json.loads((out / "bench.json").read_text())
    assert doc["config"]["token_budget"] == 500
    (run,) = doc["runs"]
    assert 1 < run["attempts"] < 30
    assert "budget 30, token budget 500 a run" in capsys.readouterr().err


def test_bench_ignores_the_built_in_teams_token_budget_with_one_line(tmp_path, capsys):
    fake_task(tmp_path, "a")
    assert cli.main(["bench", str(tmp_path), "--dry-run", "--token-budget", "7", "--out", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if "--token-budget" in line] == \
           ["stark bench: --token-budget 7 is ignored: the built-in team uses no tokens"]


def test_a_budget_spent_with_attempts_in_flight_is_said_at_once_on_its_own_line(tmp_path):
    """The budget is spent while an attempt is still being evaluated: the search says so at once, as a
    lasting notice (a terminal prints it above the live line, which would overwrite it), not only
    when the last attempt in flight ends; the end says it again."""
    import threading

    task = make_fake_task(tmp_path)
    store = TreeStore.open(tmp_path / "tree.sqlite")
    ev = FakeEvaluator(hang_after=1)  # the root is evaluated; every attempt's evaluation waits for release
    safety = threading.Timer(60, ev.release.set)  # a search that never says it still ends (and fails below)
    safety.start()
    said: list = []

    def progress(p):
        said.append(p)
        if p.lasting and STOPPED.match(p.message or ""):
            ev.release.set()

    try:
        Search(task, store, ev, FakeTeam(), SearchConfig(budget=30, concurrency=2, token_budget=1),
               on_progress=progress).run()
    finally:
        safety.cancel()
    notices = [p for p in said if p.lasting and STOPPED.match(p.message or "")]
    assert len(notices) == 1 and not notices[0].done, [p.message for p in said]
    assert re.search(r"; the (1 attempt in flight finishes|2 attempts in flight finish) first$", notices[0].message)
    assert said.index(notices[0]) < len(said) - 1 and STOPPED.fullmatch(said[-1].message)
