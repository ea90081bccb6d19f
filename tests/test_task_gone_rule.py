"""The task-gone rule (issue 26): one definition in the search (``search/engine.py``: ``cut_short``,
``void_after_task_gone``), applied by the search when it watches the task's files itself (the CLI) and by the
server once a search whose files the editor saw go has stopped (``server/optimize_jobs.py``), which restates
none of it."""

from __future__ import annotations

import re
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from fakes import FakeEvaluator, FakeTeam, fake_source, make_fake_task
from stark_lsp.search import Search, SearchConfig, TaskBroken, TreeStore
from stark_lsp.search.engine import cut_short, gone_file, void_after_task_gone
from stark_lsp.search.node import ABANDONED, AGENT_ERROR, PLAN_CODE, ROOT

pytestmark = pytest.mark.timeout(60)
PKG = Path(__file__).resolve().parents[1] / "stark_lsp"


@pytest.fixture
def env(tmp_path):
    task = make_fake_task(tmp_path)
    store = TreeStore.open(tmp_path / ".stark" / "tree.sqlite")
    yield task, store
    store.close()


def tree_across_a_move(task, store) -> float:
    """A tree whose root passed, one candidate failed and one passed before the move, and after it a
    candidate failed, one passed, one was an agent error and one was already abandoned. Returns the
    time the files went."""
    tid = task.task_id()
    store.create_tree(task)
    root = store.add_node(tid, None, ROOT, "ok", source=fake_source(1.0))
    before = [store.add_node(tid, root.id, PLAN_CODE, s, source=fake_source(1.0 + i, s), summary="before")
              for i, s in enumerate(("compile_error", "ok"))]
    for n in before:
        store.update_node(n.id, status=n.status)
    time.sleep(0.01)
    since = time.time()
    time.sleep(0.01)
    for i, s in enumerate(("runtime_error", "ok", AGENT_ERROR, ABANDONED)):
        n = store.add_node(tid, root.id, PLAN_CODE, "running", source=fake_source(3.0 + i), summary="after")
        store.update_node(n.id, status=s, error="its own")
    return since


def test_after_the_fact_only_the_failures_since_the_files_went_are_cut_short(env):
    task, store = env
    since = tree_across_a_move(task, store)
    cut = void_after_task_gone(store, task.task_id(), since, "k.py was deleted")
    nodes = {n.id: n for n in store.nodes(task.task_id())}
    assert [(nodes[i].summary, nodes[i].status, nodes[i].error) for i in cut] == \
        [("after", ABANDONED, "cut short: k.py was deleted")]
    kept = sorted((n.summary, n.status) for n in nodes.values() if n.id not in cut)
    assert kept == [("", "ok"), ("after", ABANDONED), ("after", AGENT_ERROR), ("after", "ok"),
                    ("before", "compile_error"), ("before", "ok")]


def test_the_search_cuts_the_attempt_in_hand_short_in_the_same_words(env):
    """The search watching its own files (the CLI) writes what ``cut_short`` says, and stops."""
    task, store = env

    class Deleting(FakeEvaluator):
        def evaluate(self, task, source, options=None):
            r = super().evaluate(task, source, options)
            if self.calls == 2:
                task.path.unlink()
                return fake_failure()
            return r

    with pytest.raises(TaskBroken):
        Search(task, store, Deleting(), FakeTeam(), SearchConfig(budget=4, concurrency=1, retime_top=0)).run()
    (gone,) = [n for n in store.nodes(task.task_id()) if n.status == ABANDONED]
    assert (gone.status, gone.error) == tuple(cut_short(f"{task.path.name} is gone").values())
    assert gone_file(task) == Path(task.path)


def fake_failure():
    from stark_lsp.evaluate.result import EvalResult, Status

    return EvalResult(Status.COMPILE_ERROR, "k.py: no such file")


def test_a_root_that_failed_after_the_move_is_judged_again_when_the_search_goes_on(env):
    """As the search cuts the user's kernel short too when it sees the files go: after the fact, its failure
    is void as well, so the search that goes on (a rename carried it) judges it again instead of stopping on
    a verdict the move made."""
    task, store = env
    since = time.time()

    class MovedDuringTheRoot(FakeEvaluator):
        def evaluate(self, task, source, options=None):
            super().evaluate(task, source, options)
            return fake_failure()

    config = SearchConfig(budget=2, concurrency=1, retime_top=0, require_correct_root=True, stop_when_files_go=False)
    Search(task, store, MovedDuringTheRoot(), FakeTeam(), config).run()
    assert store.root(task.task_id()).status == "compile_error"
    assert void_after_task_gone(store, task.task_id(), since, "k.py was renamed") == [store.root(task.task_id()).id]
    Search(task, store, FakeEvaluator(), FakeTeam(), config).run()
    assert store.root(task.task_id()).status == "ok"
    assert [n for n in store.nodes(task.task_id()) if n.parent_id is not None]  # and the search went on


def test_the_server_applies_the_searchs_rule_with_the_words_it_said(env):
    from stark_lsp.server.optimize_jobs import _void_after_move
    from stark_lsp.server.optimize_state import Job, OptimizeJobs

    task, store = env
    since = tree_across_a_move(task, store)
    job = Job(task, "file:///k.py", "entry_kernel", 5)
    OptimizeJobs().stop(job, "k.py was deleted: its search stopped; the tree is kept in .stark/", files_moved_since=since)
    _void_after_move(SimpleNamespace(open_store=lambda path: store), Path("unused"), job)
    cut = [n for n in store.nodes(task.task_id()) if n.error.startswith("cut short")]
    assert [(n.summary, n.status, n.error) for n in cut] == \
        [("after", ABANDONED, "cut short: k.py was deleted: its search stopped; the tree is kept in .stark/")]


def test_a_broken_store_leaves_the_tree_and_the_end_of_the_search_alone(env, caplog):
    from stark_lsp.server.optimize_jobs import _void_after_move
    from stark_lsp.server.optimize_state import Job

    task, _ = env
    job = Job(task, "file:///k.py", "entry_kernel", 5)
    job.files_moved_at, job.stop_reason = time.time(), "k.py was deleted"

    def broken(path):
        raise OSError("disk gone")

    _void_after_move(SimpleNamespace(open_store=broken), Path("unused"), job)  # no raise
    assert "disk gone" in caplog.text


def test_the_server_restates_no_part_of_the_rule():
    """Which verdicts a move voids and what they become is the search's: no server module names the
    failed statuses, the abandoned status or the "cut short" words itself."""
    restated = []
    for path in sorted((PKG / "server").glob("*.py")):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if re.search(r"\bFAILED_EVAL_STATUSES\b|\bABANDONED\b|[\"']cut short:", code):
                restated.append(f"{path.relative_to(PKG.parent)}:{i}: {line.strip()}")
    assert not restated, restated
