"""Kill a search with SIGKILL mid-attempt, then resume it: nothing lost,
nothing done twice."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fakes import FakeEvaluator, FakeTeam, make_fake_task
from stark_lsp.search import Search, SearchConfig, TreeStore
from stark_lsp.search.node import ABANDONED, ROOT, RUNNING

pytestmark = [pytest.mark.timeout(120), pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")]

FAKES = Path(__file__).with_name("fakes.py")


def start(store_path, task, budget, concurrency, hang_after):
    return subprocess.Popen(
        [sys.executable, str(FAKES), str(store_path), str(task.path), str(budget), str(concurrency), str(hang_after)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )


def wait_for(proc, store_path, task_id, ready):
    """Poll the store (read-only, while the search writes) until ready(nodes)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stdout.read().decode()
        if store_path.exists():
            try:
                reader = TreeStore.open(store_path, readonly=True)
                nodes = reader.nodes(task_id)
                reader.close()
            except Exception:
                nodes = []  # the schema may not be there yet
            if ready(nodes):
                return nodes
        time.sleep(0.05)
    proc.kill()
    pytest.fail("the search never reached the expected state")


def kill(proc):
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()


def test_sigkill_mid_attempt_then_resume(tmp_path):
    task = make_fake_task(tmp_path)
    tid = task.task_id()
    store_path = tmp_path / ".stark" / "tree.sqlite"
    # the root and three attempts are evaluated, then every evaluation hangs
    proc = start(store_path, task, budget=8, concurrency=2, hang_after=4)

    def stuck(nodes):
        finished = [n for n in nodes if n.kind != ROOT and n.completed]
        evaluating = [n for n in nodes if n.status == RUNNING and n.source]
        return len(finished) >= 3 and len(evaluating) == 2

    wait_for(proc, store_path, tid, stuck)
    kill(proc)

    store = TreeStore.open(store_path)
    assert store.integrity_ok()
    before = {n.id: n for n in store.nodes(tid)}
    finished_before = {i: (n.status, n.updated, n.attempt) for i, n in before.items() if n.completed}
    running_before = [i for i, n in before.items() if n.in_flight]
    assert len(running_before) == 2

    ev = FakeEvaluator()
    Search(task, store, ev, FakeTeam(fail_rate=0.3), SearchConfig(budget=8, concurrency=2, retime_top=0)).run()

    after = {n.id: n for n in store.nodes(tid)}
    # finished work is kept as it was
    assert {i: (after[i].status, after[i].updated, after[i].attempt) for i in finished_before} == finished_before
    # in-flight work is abandoned, not lost and not half-written
    assert all(after[i].status == ABANDONED for i in running_before)
    assert not any(n.in_flight for n in after.values())
    # attempt numbers 1..n exactly once among live attempts; the budget's 8 spent (duplicates are free)
    live = [n for n in after.values() if n.kind != ROOT and n.status != ABANDONED]
    assert sorted(n.attempt for n in live) == list(range(1, len(live) + 1))
    assert sum(1 for n in live if n.spends_budget) == 8
    assert all(n.completed for n in live)
    # only new candidates were evaluated: the root and finished nodes were not redone
    new = [n for i, n in after.items() if i not in before]
    assert ev.calls == sum(1 for n in new if n.evaluated and n.duplicate_of is None)
    assert len([n for n in after.values() if n.kind == ROOT]) == 1
    store.close()


def test_sigkill_while_evaluating_the_root_then_resume(tmp_path):
    task = make_fake_task(tmp_path)
    tid = task.task_id()
    store_path = tmp_path / ".stark" / "tree.sqlite"
    proc = start(store_path, task, budget=3, concurrency=1, hang_after=0)
    wait_for(proc, store_path, tid, lambda nodes: len(nodes) == 1 and nodes[0].status == RUNNING)
    kill(proc)

    store = TreeStore.open(store_path)
    ev = FakeEvaluator()
    Search(task, store, ev, FakeTeam(), SearchConfig(budget=3, concurrency=1, retime_top=0)).run()
    nodes = store.nodes(tid)
    assert nodes[0].kind == ROOT and nodes[0].status == "ok"
    assert sorted(n.attempt for n in nodes if n.kind != ROOT) == [1, 2, 3]
    store.close()
