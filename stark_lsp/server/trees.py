"""What the server knows about one search tree, as plain immutable data.

Handlers never read SQLite: a ``TreeView`` is built from the store's nodes in
a worker thread (``TreeCache.refresh``) and hover, code actions, diagnostics
and ``stark/tree`` read the cached view.

Two speedups per node, never mixed up:

* ``speedup``: against the harness reference (eager PyTorch), measured by the
  evaluator in the same run as the node;
* ``gain`` (:meth:`TreeView.gain`): against the user's own kernel, the tree's
  root: the ratio of the two measured runtimes. When the root is a KernelBench
  reference itself (the user's ``Model`` wrapped as ``ModelNew``), the user's
  kernel *is* eager, so the gain is the node's speedup over eager, and the
  root is the baseline, never a "1.00×" result of its own.

``tree_view(nodes)`` is pure: it accepts ``stark_lsp.search.node.Node``
objects, or anything with the same attributes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Iterable

from stark_lsp.agents.base import Usage
from stark_lsp.search import usage as usage_sum
from stark_lsp.speedups import vs_eager, vs_yours
from stark_lsp.tasks.spec import without_kernelbench_stub

OK = "ok"
IN_FLIGHT = ("pending", "running")
ABANDONED = "abandoned"
AGENT_ERROR = "agent_error"

# what a node turned out to be, for colours and counts (the tree view's legend)
ROOT, RUNNING, FASTER, SLOWER, FAILED, NOTHING_NEW_OUTCOME, CUT = (
    "root", "running", "faster", "slower", "failed", "nothing_new", "abandoned")


@dataclass(frozen=True)
class Problem:
    """A compiler or runtime message, 1-based line as the evaluator reports it."""

    message: str
    line: int | None
    column: int | None
    severity: str
    file: str | None


@dataclass(frozen=True)
class NodeView:
    id: int
    parent: int | None
    kind: str  # root | plan_code | debug
    status: str
    attempt: int
    summary: str
    source: str
    plan: str  # the marked source the candidate was coded from ('' for root/debug)
    speedup: float | None  # against the harness reference (eager)
    runtime_ms: float | None
    reference_ms: float | None  # the reference's median in the same evaluation
    error: str
    duplicate_of: int | None
    on_gpu: bool | None
    problems: tuple[Problem, ...] = ()
    profile: str = ""  # one line of Nsight Compute figures, when the search profiled this node
    degenerate: str = ""  # why the task cannot tell a right answer from a constant ('' for a sound task)
    retimed_vs_root: float | None = None  # the re-timing's median against the root (search/retime.py)
    retimed_speedup: float | None = None  # the re-timing's median against eager
    usage: Usage = field(default_factory=Usage, hash=False)  # its agents' calls, tokens and cost (a copy)
    nothing_new: bool = False  # an agent had nothing new to try from the parent: no candidate was made

    @property
    def correct(self) -> bool:
        return self.status == OK and self.speedup is not None

    @property
    def eager(self) -> float | None:
        """Its "× eager", re-timed first (``speedups.vs_eager``): the CLI's figure too."""
        return vs_eager(self.speedup, self.retimed_speedup)

    @property
    def in_flight(self) -> bool:
        return self.status in IN_FLIGHT

    @cached_property
    def is_reference(self) -> bool:
        """A KernelBench root: the user's ``Model`` itself, wrapped as ``ModelNew``."""
        return self.parent is None and without_kernelbench_stub(self.source) is not None

    @property
    def cpu(self) -> bool:
        """Timed on the CPU (Triton interpreter, eager on the CPU): not a GPU figure."""
        return self.on_gpu is False


@dataclass(frozen=True)
class TreeView:
    """Immutable: every derived figure is computed once per view (a tree of
    thousands of nodes is read by every hover and code action)."""

    task_id: str
    nodes: tuple[NodeView, ...]

    @cached_property
    def by_id(self) -> dict[int, NodeView]:
        return {n.id: n for n in self.nodes}

    @cached_property
    def root(self) -> NodeView | None:
        return next((n for n in self.nodes if n.parent is None), None)

    @property
    def baseline_is_reference(self) -> bool:
        root = self.root
        return root is not None and root.is_reference

    @cached_property
    def attempts(self) -> list[NodeView]:
        return [n for n in self.nodes if n.parent is not None and n.status != ABANDONED]

    @cached_property
    def best(self) -> NodeView | None:
        """The correct node (root included) with the highest speedup, earliest on a tie; the rule of
        ``TreeStore.best``: where the search re-timed its leaders, the highest re-timed median, unless
        the root timed in the same rounds was faster."""
        retimed = [n for n in self.nodes if n.correct and n.retimed_speedup]
        if retimed:
            top = min(retimed, key=lambda n: (-(n.retimed_speedup or 0.0), n.id))
            root = self.root
            if top.retimed_vs_root is not None and top.retimed_vs_root < 1.0 and root is not None and root.correct:
                return root
            return top
        best = None
        for n in self.nodes:
            if n.correct and (best is None or n.speedup > best.speedup):
                best = n
        return best

    @property
    def best_candidate(self) -> NodeView | None:
        """The best node when it is not the user's own kernel."""
        b = self.best
        return b if b is not None and b.parent is not None else None

    @cached_property
    def finished(self) -> int:
        return sum(1 for n in self.attempts if not n.in_flight)

    @cached_property
    def spent(self) -> int:
        """Finished attempts that spent budget (the CLI's "attempt N/budget"): not an agent's "nothing new",
        not a duplicate source."""
        return sum(1 for n in self.attempts if not n.in_flight and n.duplicate_of is None and not n.nothing_new)

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
        return any(n.cpu for n in self.nodes)

    @cached_property
    def usage(self) -> Usage:
        """Every node's agent usage, summed (``search/usage.py``, as ``stark show`` sums it)."""
        return usage_sum.total(self.nodes)

    def gain(self, node: NodeView) -> float | None:
        """How many times faster than the user's own kernel (the root): ``speedups.vs_yours``."""
        root = self.root
        if root is None or not node.correct:
            return None
        return vs_yours(node.speedup, node.runtime_ms, node.retimed_vs_root, root.runtime_ms, itself=node.id == root.id,
                        root_correct=root.correct, root_is_reference=root.is_reference)

    def get(self, node_id: int) -> NodeView | None:
        return self.by_id.get(node_id)

    @cached_property
    def _ranked(self) -> tuple[NodeView, ...]:
        c = [n for n in self.attempts if n.correct and n.duplicate_of is None]
        return tuple(sorted(c, key=lambda n: (-n.speedup, n.id)))

    def ranked_candidates(self) -> list[NodeView]:
        """Correct attempts, fastest first (duplicates left out)."""
        return list(self._ranked)


def outcome(tree: TreeView, n: NodeView) -> str:
    """root | running | faster | slower | failed | nothing_new | abandoned."""
    if n.parent is None:
        return ROOT
    if n.in_flight:
        return RUNNING
    if n.status == ABANDONED:
        return CUT
    if n.nothing_new:
        return NOTHING_NEW_OUTCOME
    if not n.correct:
        return FAILED
    gain = tree.gain(n)
    if gain is None:
        root = tree.root
        faster = root is not None and root.speedup is not None and n.speedup > root.speedup
    else:
        faster = gain > 1.0
    return FASTER if faster else SLOWER


def _problems(result: Any) -> tuple[Problem, ...]:
    if result is None:
        return ()
    try:
        diags = result.all_diagnostics()
    except Exception:
        return ()
    return tuple(Problem(d.message, d.line, d.column, d.severity, d.file) for d in diags)


def node_view(n: Any) -> NodeView:
    result = getattr(n, "result", None)
    runtime = getattr(result, "runtime", None) if result is not None else None
    return NodeView(
        id=n.id,
        parent=n.parent_id,
        kind=n.kind,
        status=n.status,
        attempt=getattr(n, "attempt", 0) or 0,
        summary=getattr(n, "summary", "") or "",
        source=getattr(n, "source", "") or "",
        plan=getattr(n, "plan", "") or "",
        speedup=n.speedup,
        runtime_ms=n.runtime_ms,
        reference_ms=runtime.reference.median_ms if runtime is not None else None,
        error=getattr(n, "error", "") or (result.message if result is not None and n.status != OK else ""),
        duplicate_of=getattr(n, "duplicate_of", None),
        on_gpu=runtime.is_gpu if runtime is not None else None,
        problems=_problems(result),
        profile=_profile_line(getattr(n, "profile", None)),
        degenerate=str(getattr(result, "degenerate", "") or "") if result is not None else "",
        retimed_vs_root=_retimed(getattr(n, "retimed", None), "vs_root"),
        retimed_speedup=_retimed(getattr(n, "retimed", None), "speedup"),
        usage=_usage(getattr(n, "usage", None)),
        nothing_new=n.status == AGENT_ERROR and bool(getattr(n, "nothing_new", False)),
    )


def _usage(u: Any) -> Usage:
    """A copy (a view never shares a node's mutable ``Usage``); none for a node without one."""
    if u is None:
        return Usage()
    return Usage(u.prompt_tokens, u.completion_tokens, u.cost_usd, u.calls)


def _retimed(d: Any, key: str) -> float | None:
    v = d.get(key) if isinstance(d, dict) else None
    return float(v) if isinstance(v, (int, float)) and v > 0 else None


def _profile_line(d: Any) -> str:
    if not isinstance(d, dict):
        return ""
    from stark_lsp.profile.report import ProfileReport

    try:
        report = ProfileReport.from_dict(d)
    except (TypeError, ValueError):
        return ""
    return report.summary() if report is not None and report.ok else ""


def tree_view(task_id: str, nodes: Iterable[Any]) -> TreeView:
    return TreeView(task_id, tuple(node_view(n) for n in sorted(nodes, key=lambda n: n.id)))
