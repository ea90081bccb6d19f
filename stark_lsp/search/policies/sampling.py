"""``sampling``: best-of-N. Every attempt starts from the root (a failed root
is debugged instead)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..node import Node
from .common import PolicyTree, Selection, select_node


@dataclass
class SamplingPolicy:
    name: str = "sampling"

    def select(self, nodes: list[Node], rng: random.Random) -> Selection | None:
        view = PolicyTree(nodes)
        if view.root is None or not view.root.evaluated:
            return None
        if view.exhausted(view.root):
            return None
        return select_node(view.root, "best-of-N: the root")
