"""A task moved or renamed outside the editor (``mv k.py kernels/sa.py``) keeps its search tree.

A tree is keyed by the task's resolved paths (``TaskSpec.task_id``). The editor re-keys a tree when its
files are renamed (``server/file_events.py``); from the shell, ``stark show``/``export`` of the moved file
said 'no search tree ... run stark optimize first', and ``stark optimize`` began a new tree, spending the
budget again, while the old one sat in the store under a path that no longer exists.

Here a command that finds no tree for its task looks for the one tree it can only be: of the same kind,
whose task file is gone, whose root is this file's code and whose harness (where one was recorded) is
this harness. That tree, and the trees archived under it, are given to the task (``TreeStore.move_tree``),
and the command says so on stderr. Two or more such trees: nothing is guessed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


def moved_from(store: Any, task: Any) -> str | None:
    """The id of the one current tree in ``store`` whose task file is gone and which is this task's
    (same kind, this file's code at its root, the same harness); None when none is, or several are."""
    from stark_lsp.search.tree_store import harness_digest

    try:
        current = task.root_source()
    except (OSError, UnicodeDecodeError):
        return None
    digest = harness_digest(task)
    found = []
    for tid, spec in store.tasks():
        if "~" in tid or tid == task.task_id() or spec.kind != task.kind or Path(spec.path).exists():
            continue
        root = store.root(tid)
        stored = store.harness_digest(tid)
        if root is not None and root.source == current and (stored is None or stored == digest):
            found.append(tid)
    return found[0] if len(found) == 1 else None


def carry(path: Path, task: Any, command: str, given: str) -> bool:
    """Give the task the tree of its moved files, in the store at ``path`` (opened for writing only when
    there is one); True when it was carried over. Said on stderr as ``stark COMMAND: ...``, naming the
    task as the user gave it (``given``)."""
    from stark_lsp.search import SearchBusy, StoreError, TreeStore
    from stark_lsp.search.lock import tree_lock

    try:
        with TreeStore.open(path, readonly=True) as store:
            if store.has_tree(task.task_id()):
                return False
            old = moved_from(store, task)
            if old is None:
                return False
            was = store.task(old)
        with TreeStore.open(path) as store, tree_lock(path, old):
            if store.has_tree(task.task_id()) or moved_from(store, task) != old:
                return False
            store.move_tree(old, task)  # its archived trees follow: stark show --archived lists them
    except (StoreError, SearchBusy, OSError):
        return False
    print(f"stark {command}: the search tree of {was.path} (no longer there; the same kernel and harness) "
          f"is carried over to {given}: the task was moved or renamed", file=sys.stderr)
    return True
