"""One search tree as the product reads it: the root, the best node, each node's outcome and
"× your kernel", and the counts, each defined here once and computed once per view.

Every surface reads this view rather than working these out itself:

* the server (hover, diagnostics, code actions, progress, notifications and
  ``stark/tree``), over immutable ``NodeView`` copies (``node_view``), which
  ``server/tree_cache.py`` keeps by id and builds its ``TreeView`` from as node
  updates arrive (``tree_view(task_id, nodes)`` is the same view made at once);
* ``stark show`` (``render.py``), ``stark optimize``'s verdict, the search's
  progress line, the bench's records and ``TreeStore.best``, over the store's
  ``Node``s as they are (``TreeView.of(nodes)``).

A ``Node`` and a ``NodeView`` name their figures alike (``node_view.py``), so
the view reads either.

Two speedups per node, never mixed up:

* ``speedup``: against the harness reference (eager PyTorch), measured by the
  evaluator in the same run as the node (``eager``: the re-timed median first);
* ``gain`` (:meth:`TreeView.gain`): against the user's own kernel, the tree's
  root, through the one adapter ``node.speedup_vs_yours`` to the one ratio
  ``speedups.vs_yours``. When the root is a KernelBench reference itself (the
  user's ``Model`` wrapped as ``ModelNew``), the user's kernel *is* eager, so
  the gain is the node's speedup over eager, and the root is the baseline,
  never a "1.00×" result of its own.

The best is :func:`best_node`, the one rule; while the search runs, it chooses
by :func:`best_correct` (single evaluations only, the rule ``best_node`` falls
back to) and races against ``TreeView.best_so_far`` (that rule, duplicates left
out: what the agents' task card shows). "Nothing new" is data (the node's flag,
``node.had_nothing_new``): an outcome of its own, never a failure, and free of
the budget. The policies' ``policies.common.PolicyTree`` (nodes by parent, for
choosing what to expand) takes its root from this view. Pure: no SQLite, no threads.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Generic, Iterable, TypeVar

from stark_lsp.agents.base import Usage

from . import usage as usage_sum
from .node import ABANDONED, had_nothing_new, speedup_vs_yours
from .node_view import NodeView, node_view

# what a node turned out to be, for colours and counts (the tree view's legend)
ROOT, RUNNING, FASTER, SLOWER, FAILED, NOTHING_NEW_OUTCOME, CUT = (
    "root", "running", "faster", "slower", "failed", "nothing_new", "abandoned")

N = TypeVar("N")  # a search.node.Node, or a NodeView


def _scored(n: Any) -> bool:
    """Correct, with a figure against eager (every correct evaluation has one)."""
    return n.correct and n.speedup is not None


def best_correct(nodes: Iterable[N]) -> N | None:
    """Highest speedup among correct nodes, the earliest on a tie: the single evaluations the search
    compares as it goes (the policies' choices, the race, the task card), and :func:`best_node`'s rule
    where nothing was re-timed."""
    ok = [n for n in nodes if _scored(n)]
    return min(ok, key=lambda n: (-n.speedup, n.id)) if ok else None


def best_node(nodes: Iterable[N]) -> N | None:
    """The best of a tree's nodes, the one rule behind every "best" the product shows: the correct node
    with the highest speedup (the earliest on a tie). When the search re-timed its leaders
    (``retimed_speedup``), the one with the highest re-timed median, unless the root timed in the same
    rounds was faster (its own medians of those rounds higher, or ``retimed_vs_root`` below 1): then the
    root. Pure."""
    nodes = list(nodes)
    scored = [n for n in nodes if _scored(n)]
    retimed = [n for n in scored if n.retimed_speedup is not None]
    if retimed:
        top = min(retimed, key=lambda n: (-n.retimed_speedup, n.id))
        root = next((n for n in nodes if n.parent_id is None), None)
        if top.retimed_vs_root is not None and top.retimed_vs_root < 1.0 and root is not None and root.correct:
            return root  # timed in the same rounds, the user's kernel was faster
        return top
    return best_correct(scored)


@dataclass(frozen=True)
class TreeView(Generic[N]):
    """Immutable: every derived figure is computed once per view (a tree of
    thousands of nodes is read by every hover and code action)."""

    task_id: str
    nodes: tuple[N, ...]  # by id

    @classmethod
    def of(cls, nodes: Iterable[N], task_id: str = "") -> "TreeView[N]":
        """A view over the nodes as they are (the store's ``Node``s), by id."""
        return cls(task_id, tuple(sorted(nodes, key=lambda n: n.id)))

    @cached_property
    def by_id(self) -> dict[int, N]:
        return {n.id: n for n in self.nodes}

    @cached_property
    def root(self) -> N | None:
        return next((n for n in self.nodes if n.parent_id is None), None)

    @property
    def baseline_is_reference(self) -> bool:
        root = self.root
        return root is not None and root.is_reference_itself

    @cached_property
    def attempts(self) -> list[N]:
        return [n for n in self.nodes if n.parent_id is not None and n.status != ABANDONED]

    @cached_property
    def best(self) -> N | None:
        """The tree's best node (root included), by the one rule: :func:`best_node`."""
        return best_node(self.nodes)

    @cached_property
    def best_so_far(self) -> N | None:
        """The best as the search compares while it runs: :func:`best_correct` over the nodes (root
        included), duplicates left out; never the re-timed figures (those are :attr:`best`'s)."""
        return best_correct(n for n in self.nodes if n.duplicate_of is None)

    @property
    def best_candidate(self) -> N | None:
        """The best node when it is not the user's own kernel."""
        b = self.best
        return b if b is not None and b.parent_id is not None else None

    @cached_property
    def finished(self) -> int:
        return sum(1 for n in self.attempts if not n.in_flight)

    @cached_property
    def spent(self) -> int:
        """Finished attempts that spent budget (the CLI's "attempt N/budget"): not an agent's "nothing new",
        not a duplicate source."""
        return sum(1 for n in self.attempts if not n.in_flight and n.duplicate_of is None and not had_nothing_new(n))

    @property
    def counts(self) -> str:
        """"14 attempts, 9 correct" (+ "2 free": nothing new, or duplicates): the CLI's counts."""
        free = self.finished - self.spent
        return f"{self.spent} attempts, {self.correct} correct" + (f", {free} free (nothing new, or duplicates)"
                                                                  if free else "")

    @cached_property
    def running(self) -> int:
        return sum(1 for n in self.attempts if n.in_flight)

    @cached_property
    def correct(self) -> int:
        return sum(1 for n in self.attempts if n.correct)

    @cached_property
    def failed(self) -> int:
        return sum(1 for n in self.attempts if outcome(self, n) == FAILED)

    @cached_property
    def cpu(self) -> bool:
        return any(n.cpu_timed for n in self.nodes)

    @cached_property
    def usage(self) -> Usage:
        """Every node's agent usage, summed (``search/usage.py``, as ``stark show`` sums it)."""
        return usage_sum.total(self.nodes)

    def gain(self, node: N) -> float | None:
        """How many times faster than the user's own kernel (the root): ``node.speedup_vs_yours``."""
        if not node.correct:
            return None
        return speedup_vs_yours(node, self.root)

    def get(self, node_id: int) -> N | None:
        return self.by_id.get(node_id)

    @cached_property
    def _ranked(self) -> tuple[N, ...]:
        c = [n for n in self.attempts if _scored(n) and n.duplicate_of is None]
        return tuple(sorted(c, key=lambda n: (-n.speedup, n.id)))

    def ranked_candidates(self) -> list[N]:
        """Correct attempts, fastest first (duplicates left out)."""
        return list(self._ranked)


def outcome(tree: TreeView, n: Any) -> str:
    """root | running | faster | slower | failed | nothing_new | abandoned."""
    if n.parent_id is None:
        return ROOT
    if n.in_flight:
        return RUNNING
    if n.status == ABANDONED:
        return CUT
    if had_nothing_new(n):
        return NOTHING_NEW_OUTCOME
    if not _scored(n):
        return FAILED
    gain = tree.gain(n)
    if gain is None:
        root = tree.root
        faster = root is not None and root.speedup is not None and n.speedup > root.speedup
    else:
        faster = gain > 1.0
    return FASTER if faster else SLOWER


def tree_view(task_id: str, nodes: Iterable[Any]) -> TreeView[NodeView]:
    """A view over immutable ``NodeView`` copies of ``nodes``, in id order, made at once: the view the
    server's ``TreeCache`` builds up node by node."""
    return TreeView(task_id, tuple(node_view(n) for n in sorted(nodes, key=lambda n: n.id)))
