"""The workspace's stores: which ``.stark/tree.sqlite`` keeps a file's trees, and a watcher on each in use.

A file under one of the editor's workspace folders uses that folder's
store; any other file, the one ``find_workspace`` finds above it (as the CLI
does). Each store directory a document uses is watched (``StoreWatcher``)
for searches run from elsewhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Awaitable, Callable

from stark_lsp.server.store_watch import StoreWatcher

STORE_DIR, STORE_FILE = ".stark", "tree.sqlite"


class Stores:
    def __init__(self) -> None:
        self.roots: list[Path] = []  # the workspace folders (initialize)
        self.watchers: dict[Path, StoreWatcher] = {}  # store directory -> its watcher

    def set_roots(self, roots: list[Any]) -> None:
        self.roots = [Path(r).resolve() for r in roots if r]

    def path_for(self, path: Path) -> Path:
        from stark_lsp.search.tree_store import find_workspace

        for root in self.roots:
            if path == root or root in path.parents:
                return root / STORE_DIR / STORE_FILE
        return find_workspace(path.parent) / STORE_DIR / STORE_FILE

    def watch(self, store_path: Path, on_change: Callable[[Path], Awaitable[None]]) -> None:
        """Watch the directory of ``store_path`` (once): ``on_change(directory)`` when it is written."""
        directory = store_path.parent
        if directory not in self.watchers:
            w = self.watchers[directory] = StoreWatcher(directory, lambda d=directory: on_change(d))
            w.start()

    def stop(self) -> None:
        for w in self.watchers.values():
            w.stop()
