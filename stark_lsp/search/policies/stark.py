"""``stark``: the adapted epsilon-greedy of the STARK paper.

* The root may have at most ``n_root`` children, any other node ``n_child``
  (in-flight ones count): a full node is not expanded again.
* A node with ``n_child`` finished children, all failed, is pruned: not
  expanded, and left out of the fallbacks while another node remains.
* With probability ``epsilon``: explore, uniformly among expandable leaves.
* Otherwise: exploit, the best expandable node by speedup.
* A node an agent found exhausted (``NOTHING_NEW``) is never chosen again.
* When no node is expandable: fall back to the best correct node (or the
  root), ignoring the limits, and say so.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..node import Node
from .common import PolicyTree, Selection, best_correct, newest, select_node


@dataclass
class StarkPolicy:
    epsilon: float = 0.35
    n_root: int = 5
    n_child: int = 3
    name: str = "stark"

    def expandable(self, view: PolicyTree, node: Node) -> bool:
        if not node.evaluated or node.duplicate_of is not None:
            return False
        cap = self.n_root if node is view.root else self.n_child
        if view.full(node, cap):
            return False
        return not view.pruned(node, self.n_child) and not view.exhausted(node)

    def select(self, nodes: list[Node], rng: random.Random) -> Selection | None:
        view = PolicyTree(nodes)
        if view.root is None or not view.root.evaluated:
            return None
        cands = [n for n in view.candidates() if self.expandable(view, n)]
        if not cands:
            return fallback(view, self.n_child)
        if rng.random() < self.epsilon:
            leaves = [n for n in cands if view.is_leaf(n.id)]
            if leaves:
                return select_node(rng.choice(leaves), "explore: a random expandable leaf")
        best = best_correct(cands)
        if best is not None:
            return select_node(best, f"exploit: the best expandable node, #{best.id}: {best.eager_text()}")
        untimed = [n for n in cands if not n.failed]
        if untimed:
            return select_node(newest(untimed), "exploit: no timed node yet; the newest untimed one")
        return select_node(newest(cands), "exploit: nothing correct yet; debug the newest failure")


def fallback(view: PolicyTree, n_child: int | None = None) -> Selection | None:
    """Every node is pruned or full: the best correct node (one that is not
    pruned, while there is one), else the root; exhausted nodes never (None
    when every node is exhausted)."""
    fresh = view.fresh()
    alive = [n for n in fresh if n_child is None or not view.pruned(n, n_child)]
    best = best_correct(alive) or best_correct(fresh)
    if best is not None:
        return select_node(best, "every node is pruned or full: falling back to the best node", True)
    if view.root is not None and view.root.evaluated and not view.exhausted(view.root):
        return select_node(view.root, "every node is pruned or full: falling back to the root", True)
    return None
