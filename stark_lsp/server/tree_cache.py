"""The server's memory of the search trees, so handlers never touch SQLite.

Two ways in, both cheap for the event loop:

* ``put_node``: a search run by this server reports each node as it changes
  (``Search(on_node=...)``); the node is merged in memory.
* ``replace``: a worker thread read a whole tree from the store (at open, or
  because the store file changed: a search from a terminal).

Each returns whether the view changed, so callers republish only then.
Loop-only (no locks): call it on the event loop.
"""

from __future__ import annotations

from typing import Any

from stark_lsp.server.trees import TreeView, tree_view


class TreeCache:
    def __init__(self) -> None:
        self._nodes: dict[str, dict[int, Any]] = {}
        self._views: dict[str, TreeView] = {}

    def get(self, task_id: str | None) -> TreeView | None:
        return self._views.get(task_id) if task_id else None

    def _rebuild(self, task_id: str) -> bool:
        old = self._views.get(task_id)
        new = tree_view(task_id, self._nodes[task_id].values())
        if old is not None and old.stamp == new.stamp:
            return False
        self._views[task_id] = new
        return True

    def put_node(self, task_id: str, node: Any) -> bool:
        self._nodes.setdefault(task_id, {})[node.id] = node
        return self._rebuild(task_id)

    def replace(self, task_id: str, nodes: list[Any]) -> bool:
        self._nodes[task_id] = {n.id: n for n in nodes}
        return self._rebuild(task_id)

    def forget(self, task_id: str) -> None:
        self._nodes.pop(task_id, None)
        self._views.pop(task_id, None)
