"""``greedy``: always the best correct node; while there is none, debug the
newest failure (the root first)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..node import Node
from .common import PolicyTree, Selection, best_correct, newest, select_node


@dataclass
class GreedyPolicy:
    name: str = "greedy"

    def select(self, nodes: list[Node], rng: random.Random) -> Selection | None:
        view = PolicyTree(nodes)
        if view.root is None or not view.root.evaluated:
            return None
        cands = view.fresh()  # exhausted nodes left out
        if not cands:
            return None
        best = best_correct(cands)
        if best is not None:
            return select_node(best, f"greedy: the best node, #{best.id}: {best.eager_text()}")
        return select_node(newest(cands), "greedy: nothing correct yet; the newest node")
