"""What the server knows about one search tree, as plain immutable data.

Handlers never read SQLite: a ``TreeView`` is built from the store's nodes in
a worker thread (``TreeCache.refresh``) and hover, code actions, diagnostics
and ``stark/tree`` read the cached view.

``tree_view(nodes)`` is pure: it accepts ``stark_lsp.search.node.Node``
objects, or anything with the same attributes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

OK = "ok"


def fmt_x(v: float | None) -> str:
    """A speed ratio for people: 2.41×, 0.031×, 2.9e-05× (CPU interpreter)."""
    if v is None:
        return "–"
    return f"{v:.2f}×" if v >= 0.1 else f"{v:.2g}×"


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
    speedup: float | None
    runtime_ms: float | None
    reference_ms: float | None  # the reference's median in the same evaluation
    error: str
    duplicate_of: int | None
    on_gpu: bool | None
    problems: tuple[Problem, ...] = ()
    profile: str = ""  # one line of Nsight Compute figures, when the search profiled this node

    @property
    def correct(self) -> bool:
        return self.status == OK and self.speedup is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "parent": self.parent,
            "kind": self.kind,
            "status": self.status,
            "attempt": self.attempt,
            "speedup": self.speedup,
            "runtime_ms": self.runtime_ms,
            "reference_ms": self.reference_ms,
            "summary": self.summary,
            "error": self.error,
            "duplicate_of": self.duplicate_of,
            "source": self.source,
            "profile": self.profile,
        }


@dataclass(frozen=True)
class TreeView:
    task_id: str
    nodes: tuple[NodeView, ...]

    @property
    def root(self) -> NodeView | None:
        return next((n for n in self.nodes if n.parent is None), None)

    @property
    def attempts(self) -> list[NodeView]:
        return [n for n in self.nodes if n.parent is not None and n.status != "abandoned"]

    @property
    def best(self) -> NodeView | None:
        """The correct node (root included) with the highest speedup, earliest on a tie."""
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

    @property
    def finished(self) -> int:
        return sum(1 for n in self.attempts if n.status not in ("pending", "running"))

    @property
    def correct(self) -> int:
        return sum(1 for n in self.attempts if n.correct)

    def gain(self, node: NodeView) -> float | None:
        """How much faster than the user's own kernel (the root): the ratio of
        the two speedups, each measured against the same reference."""
        root = self.root
        if root is None or not root.correct or not node.correct or not root.speedup:
            return None
        return node.speedup / root.speedup

    def get(self, node_id: int) -> NodeView | None:
        return next((n for n in self.nodes if n.id == node_id), None)

    def ranked_candidates(self) -> list[NodeView]:
        """Correct attempts, fastest first (duplicates left out)."""
        c = [n for n in self.attempts if n.correct and n.duplicate_of is None]
        return sorted(c, key=lambda n: (-n.speedup, n.id))

    def to_json(self) -> dict[str, Any]:
        best = self.best
        root = self.root
        return {
            "task_id": self.task_id,
            "best": best.id if best else None,
            "baseline_ms": root.runtime_ms if root else None,
            "nodes": [n.to_json() for n in self.nodes],
        }


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
    )


def _profile_line(d: Any) -> str:
    from stark_lsp.profile.report import ProfileReport

    try:
        report = ProfileReport.from_dict(d) if isinstance(d, dict) else None
    except (TypeError, ValueError):
        return ""
    return report.summary() if report is not None and report.ok else ""


def tree_view(task_id: str, nodes: Iterable[Any]) -> TreeView:
    return TreeView(task_id, tuple(node_view(n) for n in sorted(nodes, key=lambda n: n.id)))
