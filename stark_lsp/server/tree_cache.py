"""The server's memory of the search trees, so handlers never touch SQLite.

Two ways in, both cheap for the event loop:

* ``put_nodes``: a search run by this server reports each node as it changes
  (``Search(on_node=...)``, batched by ``Inbox``); the nodes are merged in memory.
* ``replace``: a worker thread read a whole tree from the store (at open, or
  because the store file changed: a search from a terminal).

Each returns whether the view changed, so callers republish only then. Node
views are kept per node, so an update costs one ``node_view`` and a tuple.
Loop-only (no locks): call it on the event loop.
"""

from __future__ import annotations

from typing import Any

from stark_lsp.server.tree_json import tree_json
from stark_lsp.search.node_view import NodeView, node_view
from stark_lsp.search.tree_view import TreeView


class TreeCache:
    def __init__(self) -> None:
        self._nodes: dict[str, dict[int, NodeView]] = {}
        self._views: dict[str, TreeView] = {}
        self.harness_digests: dict[str, str | None] = {}  # the harness each tree began with (as last read)
        self._json: dict[str, tuple[TreeView, dict[str, Any]]] = {}

    def get(self, task_id: str | None) -> TreeView | None:
        return self._views.get(task_id) if task_id else None

    def json(self, task_id: str | None) -> dict[str, Any]:
        """``tree_json`` of the current view, built once per view (a burst of
        ``stark/tree`` requests for an unchanged tree costs one build)."""
        view = self.get(task_id)
        if view is None:
            return tree_json(None)
        cached = self._json.get(task_id)
        if cached is None or cached[0] is not view:
            cached = self._json[task_id] = (view, tree_json(view))
        return cached[1]

    def _rebuild(self, task_id: str) -> None:
        nodes = self._nodes[task_id]
        self._views[task_id] = TreeView(task_id, tuple(nodes[k] for k in sorted(nodes)))

    def put_nodes(self, task_id: str, nodes: list[Any]) -> bool:
        """Merge a batch of node updates (one rebuild for the batch)."""
        known = self._nodes.setdefault(task_id, {})
        changed = False
        for node in nodes:
            view = node_view(node)
            if known.get(view.id) != view:
                known[view.id] = view
                changed = True
        if changed or task_id not in self._views:
            self._rebuild(task_id)
        return changed

    def replace(self, task_id: str, nodes: list[Any]) -> bool:
        views = {v.id: v for v in map(node_view, nodes)}
        if self._nodes.get(task_id) == views and task_id in self._views:
            return False
        self._nodes[task_id] = views
        self._rebuild(task_id)
        return True

    def forget(self, task_id: str) -> None:
        self._nodes.pop(task_id, None)
        self._views.pop(task_id, None)
        self._json.pop(task_id, None)
        self.harness_digests.pop(task_id, None)
