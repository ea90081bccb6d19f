"""``reflexion``: a linear chain. Every attempt refines the newest evaluated
node (debugging it if it failed); attempts refused by an agent are skipped."""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..node import Node
from .common import PolicyTree, Selection, newest, select_node


@dataclass
class ReflexionPolicy:
    name: str = "reflexion"

    def select(self, nodes: list[Node], rng: random.Random) -> Selection | None:
        view = PolicyTree(nodes)
        if view.root is None or not view.root.evaluated:
            return None
        last = newest(n for n in view.nodes.values() if n.evaluated and not view.exhausted(n))
        return select_node(last, "reflexion: the last attempt") if last is not None else None
