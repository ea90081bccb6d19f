"""Trees that follow their task: a changed harness starts a fresh tree (the old
one archived), a renamed task takes its tree along (``TreeStore.move_tree``),
and with ``require_correct_root`` a failing user kernel starts no search."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes import FakeEvaluator, FakeTeam, fake_source
from stark_lsp.search import Search, SearchConfig, TreeStore
from stark_lsp.search.tree_store import StoreError, harness_digest
from stark_lsp.tasks.spec import TaskSpec


def task_with_harness(directory: Path, name: str = "k") -> TaskSpec:
    kernel = directory / f"{name}.py"
    kernel.write_text(fake_source(1.0))
    harness = directory / f"{name}.harness.py"
    harness.write_text("def reference(x):\n    return x\n")
    return TaskSpec("triton", kernel, harness)


def search(task, store, budget=2):
    return Search(task, store, FakeEvaluator(), FakeTeam(), SearchConfig(budget=budget, concurrency=1)).run()


def test_a_changed_harness_starts_a_fresh_tree(tmp_path):
    task = task_with_harness(tmp_path)
    store = TreeStore.open(tmp_path / ".stark" / "tree.sqlite")
    search(task, store)
    tid = task.task_id()
    assert store.harness_digest(tid) == harness_digest(task) is not None
    search(task, store, budget=3)  # same harness: the tree is resumed
    assert [t for t, _ in store.tasks()] == [tid]
    assert len(store.nodes(tid)) == 4

    task.harness.write_text("def reference(x):\n    return x * 1\n")
    search(task, store)
    ids = [t for t, _ in store.tasks()]
    assert sorted(ids) == sorted([tid, f"{tid}~1"])
    assert len(store.nodes(tid)) == 3 and len(store.nodes(f"{tid}~1")) == 4  # fresh; the old one kept whole
    assert store.harness_digest(tid) == harness_digest(task)


def test_a_tree_moves_to_a_renamed_task(tmp_path):
    task = task_with_harness(tmp_path)
    store = TreeStore.open(tmp_path / ".stark" / "tree.sqlite")
    search(task, store)
    nodes = [n.id for n in store.nodes(task.task_id())]
    task.path.rename(tmp_path / "moved.py")
    task.harness.rename(tmp_path / "moved.harness.py")
    moved = TaskSpec("triton", tmp_path / "moved.py", tmp_path / "moved.harness.py")
    assert store.move_tree(task.task_id(), moved) == moved.task_id()
    assert [n.id for n in store.nodes(moved.task_id())] == nodes and store.nodes(task.task_id()) == []
    assert store.task(moved.task_id()).path == moved.path
    search(moved, store, budget=3)  # resumed under the new name: one more attempt, no archive
    assert len(store.nodes(moved.task_id())) == 4 and len(store.tasks()) == 1
    other = task_with_harness(tmp_path, "other")
    search(other, store)
    with pytest.raises(StoreError, match="already has a search tree"):
        store.move_tree(moved.task_id(), other)


def test_a_failing_user_kernel_starts_no_search_when_required(tmp_path):
    task = task_with_harness(tmp_path)
    task.path.write_text(fake_source(1.0, "compile_error"))
    store = TreeStore.open(tmp_path / ".stark" / "tree.sqlite")
    progress = []
    Search(task, store, FakeEvaluator(), FakeTeam(), SearchConfig(budget=3, require_correct_root=True),
           on_progress=progress.append).run()
    (root,) = store.nodes(task.task_id())
    assert root.status == "compile_error"
    assert progress[-1].done and "no search" in progress[-1].message
