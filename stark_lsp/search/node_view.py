"""One node of a search tree as an immutable copy: what the editor holds of it.

The server never reads SQLite nor shares the search's mutable ``Node``s: a
``NodeView`` is copied from a node in a worker thread (``node_view``), and
hover, code actions, diagnostics and ``stark/tree`` read the copies through a
``TreeView`` (``tree_view.py``), the same view ``stark show``, the bench and the
search's progress read over the ``Node``s themselves.

A ``NodeView`` names its figures as a ``Node`` does (``parent_id``,
``correct``, ``eager``, ``retimed_speedup``, ``retimed_vs_root``,
``is_reference_itself``, ``cpu_timed``, ``usage``), so the one view, the one
best rule and the one "× your kernel" (``node.speedup_vs_yours``) read either.

``node_view(n)`` is pure: it accepts ``stark_lsp.search.node.Node`` objects,
or anything with the same attributes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from stark_lsp.agents.base import Usage
from stark_lsp.speedups import vs_eager
from stark_lsp.tasks.spec import without_kernelbench_stub

from .node import FAILED_EVAL_STATUSES, IN_FLIGHT, had_nothing_new, retimed_figure

OK = "ok"


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
    parent_id: int | None
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
    retimed_ms: float | None = None  # the re-timing's median runtime
    usage: Usage = field(default_factory=Usage, hash=False)  # its agents' calls, tokens and cost (a copy)
    nothing_new: bool = False  # an agent had nothing new to try from the parent: no candidate was made

    @property
    def correct(self) -> bool:
        return self.status == OK and self.speedup is not None

    @property
    def failed(self) -> bool:
        """An evaluated candidate that failed (``Node.failed``: the same statuses)."""
        return self.status in FAILED_EVAL_STATUSES

    @property
    def eager(self) -> float | None:
        """Its "× eager", re-timed first (``speedups.vs_eager``): the CLI's figure too."""
        return vs_eager(self.speedup, self.retimed_speedup)

    @property
    def in_flight(self) -> bool:
        return self.status in IN_FLIGHT

    @cached_property
    def is_reference_itself(self) -> bool:
        """A KernelBench root: the user's ``Model`` itself, wrapped as ``ModelNew``."""
        return self.parent_id is None and without_kernelbench_stub(self.source) is not None

    @property
    def cpu_timed(self) -> bool:
        """Timed on the CPU (Triton interpreter, eager on the CPU): not a GPU figure."""
        return self.on_gpu is False


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
        parent_id=n.parent_id,
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
        retimed_vs_root=retimed_figure(getattr(n, "retimed", None), "vs_root"),
        retimed_speedup=retimed_figure(getattr(n, "retimed", None), "speedup"),
        retimed_ms=retimed_figure(getattr(n, "retimed", None), "runtime_ms"),
        usage=_usage(getattr(n, "usage", None)),
        nothing_new=had_nothing_new(n),
    )


def _usage(u: Any) -> Usage:
    """A copy (a view never shares a node's mutable ``Usage``); none for a node without one."""
    if u is None:
        return Usage()
    return Usage(u.prompt_tokens, u.completion_tokens, u.cost_usd, u.calls, getattr(u, "seconds", 0.0))


def _profile_line(d: Any) -> str:
    if not isinstance(d, dict):
        return ""
    from stark_lsp.profile.report import ProfileReport

    try:
        report = ProfileReport.from_dict(d)
    except (TypeError, ValueError):
        return ""
    return report.summary() if report is not None and report.ok else ""
