"""What every policy needs: the tree's shape for choosing, and the selection.

Pure: the nodes come in as a list (in-flight ones included, so a node being
expanded already counts as a child), a ``random.Random`` comes in for the
choices, and a ``Selection`` goes out. ``PolicyTree`` is the tree's shape
for choosing (nodes by parent, abandoned ones left out; the context windows
read it too); the root, what a node turned out to be, the tree's best and
"× your kernel" are ``search/tree_view.py``'s ``TreeView``, and "nothing new"
is ``node.had_nothing_new``. ``best_correct`` (``tree_view.py``'s) is the
choosing rule: the single evaluations the search compares as it goes, not the
re-timed figures the tree view's best prefers once the search ends.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Iterable, Protocol

from ..node import ABANDONED, Node, had_nothing_new
from ..tree_view import TreeView, best_correct

__all__ = ["DEBUG", "PLAN", "Policy", "PolicyTree", "Selection", "best_correct", "leaderboard", "newest", "route",
           "select_node"]

PLAN = "plan"  # Plan agent, then Code agent
DEBUG = "debug"  # Debug agent


@dataclass(frozen=True)
class Selection:
    node_id: int
    action: str  # plan | debug
    reason: str  # why this node, in a few words (shown in logs and progress)
    fallback: bool = False  # the policy's own rule found nothing; a fallback chose


def route(node: Node) -> str:
    """A failed candidate goes to the Debug agent; any other to Plan + Code."""
    return DEBUG if node.failed else PLAN


class Policy(Protocol):
    name: str

    def select(self, nodes: list[Node], rng: random.Random) -> Selection | None: ...


class PolicyTree:
    """The tree's shape for choosing: nodes by id and by parent, abandoned nodes left out; the root is
    the tree view's (``TreeView.root`` over the same nodes)."""

    def __init__(self, nodes: Iterable[Node]):
        self.nodes = {n.id: n for n in nodes if n.status != ABANDONED}
        self.kids: dict[int, list[Node]] = {i: [] for i in self.nodes}
        self.root: Node | None = TreeView.of(self.nodes.values()).root
        for n in sorted(self.nodes.values(), key=lambda n: n.id):
            if n.parent_id in self.kids:  # the root's is None, never a key
                self.kids[n.parent_id].append(n)

    def children(self, node_id: int) -> list[Node]:
        return self.kids.get(node_id, [])

    def is_leaf(self, node_id: int) -> bool:
        return not self.kids.get(node_id)

    def candidates(self) -> list[Node]:
        """Nodes an agent can start from: evaluated, not a duplicate, by id."""
        return [n for n in sorted(self.nodes.values(), key=lambda n: n.id)
                if n.evaluated and n.duplicate_of is None]

    def full(self, node: Node, cap: int) -> bool:
        """``cap`` children or more, in-flight ones included (abandoned ones not)."""
        return len(self.children(node.id)) >= cap

    def pruned(self, node: Node, n_child: int) -> bool:
        """At least ``n_child`` finished children, every one of them failed: a
        dead end, left out of the fallbacks too."""
        kids = [k for k in self.children(node.id) if not k.in_flight]
        return len(kids) >= max(1, n_child) and all(k.unsuccessful for k in kids)

    def exhausted(self, node: Node) -> bool:
        """An agent said it has nothing new to try from this node (every move
        it knows gives a source the tree holds): choosing it again wastes an
        attempt. The tree only grows, so this stays true."""
        return any(had_nothing_new(k) for k in self.children(node.id))

    def fresh(self) -> list[Node]:
        """``candidates()`` without the exhausted nodes."""
        return [n for n in self.candidates() if not self.exhausted(n)]


def leaderboard(nodes: Iterable[Node], k: int) -> list[Node]:
    """The top ``k`` correct nodes by speedup (duplicates left out)."""
    ok = [n for n in nodes if n.correct and n.speedup is not None and n.duplicate_of is None]
    return sorted(ok, key=lambda n: (-n.speedup, n.id))[:k]


def newest(nodes: Iterable[Node]) -> Node | None:
    nodes = list(nodes)
    return max(nodes, key=lambda n: n.id) if nodes else None


def select_node(node: Node, reason: str, fallback: bool = False) -> Selection:
    return Selection(node.id, route(node), reason, fallback)

