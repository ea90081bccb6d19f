"""One node of a search tree: a candidate kernel, how it was made, how it did.

Plain data. The tree store writes and reads it; policies and context windows
read it; nothing here touches SQLite or threads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stark_lsp.agents.base import Exchange, Usage
from stark_lsp.evaluate.result import EvalResult, Status
from stark_lsp.speedups import shown_ms, speedup_text, vs_eager, vs_yours
from stark_lsp.tasks.spec import without_kernelbench_stub

# kinds
ROOT = "root"
PLAN_CODE = "plan_code"
DEBUG = "debug"
KINDS = (ROOT, PLAN_CODE, DEBUG)

# statuses beyond the evaluator's
PENDING = "pending"  # created, no agent called yet
RUNNING = "running"  # agents or the evaluator at work
ABANDONED = "abandoned"  # cut short (cancel, kill): ignored, redone on resume
AGENT_ERROR = "agent_error"  # an agent or the marker rules refused: no candidate

EVAL_STATUSES = tuple(s.value for s in Status)
FAILED_EVAL_STATUSES = tuple(s.value for s in Status if s.failed)
IN_FLIGHT = (PENDING, RUNNING)
STATUSES = (PENDING, RUNNING, ABANDONED, AGENT_ERROR) + EVAL_STATUSES


@dataclass
class Node:
    id: int
    task_id: str
    parent_id: int | None
    kind: str
    status: str
    attempt: int = 0  # 1.. for attempts; 0 for the root
    plan: str = ""  # the marked source the Plan agent returned
    summary: str = ""  # one line: what the plan (or the fix) does
    source: str = ""  # the full candidate source
    result: EvalResult | None = None
    speedup: float | None = None
    runtime_ms: float | None = None
    error: str = ""  # why it failed, in one message
    duplicate_of: int | None = None  # same source as that node: its result reused
    exchanges: list[Exchange] = field(default_factory=list)
    seed: int = 0  # the per-attempt seed given to the agents
    created: float = 0.0
    updated: float = 0.0
    profile: dict | None = None  # a stark_lsp.profile ProfileReport as a dict (ncu figures), when profiled
    retimed: dict | None = None  # a search.retime.Retimed as a dict: the leaders re-timed after the search
    nothing_new: bool = False  # an agent_error: the agent had nothing new to try from the parent (NothingNew)

    # -- derived -----------------------------------------------------------
    @property
    def evaluated(self) -> bool:
        """It has an evaluator verdict (its own or a duplicate's)."""
        return self.status in EVAL_STATUSES

    @property
    def failed(self) -> bool:
        """An evaluated candidate that failed (goes to the Debug agent)."""
        return self.status in FAILED_EVAL_STATUSES

    @property
    def correct(self) -> bool:
        return self.status == Status.OK.value

    @property
    def in_flight(self) -> bool:
        return self.status in IN_FLIGHT

    @property
    def completed(self) -> bool:
        """A finished attempt: evaluated, or refused by an agent."""
        return self.evaluated or self.status == AGENT_ERROR

    @property
    def spends_budget(self) -> bool:
        """A finished attempt that bought new work: a candidate evaluated for the first time.
        An agent's "nothing new to try" and a source already evaluated (a duplicate) are free."""
        if not self.completed or self.duplicate_of is not None:
            return False
        return not had_nothing_new(self)

    @property
    def unsuccessful(self) -> bool:
        """Counts as a failed child for pruning: failed or agent_error."""
        return self.failed or self.status == AGENT_ERROR

    @property
    def agent_failed(self) -> bool:
        """An agent failed before anything of the kernel was written: an ``agent_error`` with
        neither a plan nor a source (the endpoint failed, or no answer could be used). Its
        message is about the LLM server and the CLI, not the kernel, so no agent is shown it."""
        return self.status == AGENT_ERROR and not self.plan and not self.source

    @property
    def is_reference_itself(self) -> bool:
        """A KernelBench root that is the reference wrapped as ``ModelNew``: timed
        against itself, so its speedup over eager is 1 by construction, not a result."""
        return self.parent_id is None and without_kernelbench_stub(self.source) is not None

    @property
    def cpu_timed(self) -> bool:
        """Its timings come from the CPU (Triton interpreter, eager CPU): no GPU figure."""
        rt = self.result.runtime if self.result else None
        return rt is not None and not rt.is_gpu

    @property
    def degenerate(self) -> bool:
        """The task's outputs do not depend on its inputs (``EvalResult.degenerate``): no figure on it means anything."""
        return bool(self.result and self.result.degenerate)

    @property
    def usage(self) -> Usage:
        total = Usage()
        for e in self.exchanges:
            total = total + e.usage
        return total

    def eager_text(self) -> str:
        """Its speedup over eager PyTorch, labelled: ``2.35× eager``, with the CPU note
        when CPU-timed; the KernelBench reference itself says so instead of timing noise."""
        if self.is_reference_itself and self.correct:
            return "1.00× eager (the reference itself)"
        return speedup_text(self.eager, "eager", cpu=self.cpu_timed, degenerate=self.degenerate)

    @property
    def retimed_speedup(self) -> float | None:
        """The re-timing's median against eager (``search/retime.py``); None where it was not re-timed."""
        return retimed_figure(self.retimed, "speedup")

    @property
    def retimed_vs_root(self) -> float | None:
        """The re-timing's median against the root, timed in the same rounds; None where there is none."""
        return retimed_figure(self.retimed, "vs_root")

    @property
    def retimed_ms(self) -> float | None:
        """The re-timing's median runtime (``speedups.shown_ms``); None where it was not re-timed."""
        return retimed_figure(self.retimed, "runtime_ms")

    @property
    def eager(self) -> float | None:
        """Its "× eager": re-timed first (``speedups.vs_eager``)."""
        return vs_eager(self.speedup, self.retimed_speedup)

    def outcome(self) -> str:
        """Status, speedup and runtime in a few words: the runtime that goes with the "× eager" beside it
        (the re-timed median where the search re-timed the node, ``speedups.shown_ms``)."""
        parts = [self.status]
        if self.speedup is not None:
            parts.append(self.eager_text())
        ms = shown_ms(self.runtime_ms, self.retimed)
        if ms is not None:
            parts.append(f"{ms:.4g} ms")
        if self.duplicate_of is not None:
            parts.append(f"duplicate of #{self.duplicate_of}")
        return ", ".join(parts)


def had_nothing_new(node: Any) -> bool:
    """An agent had nothing new to try from the node's parent (``NothingNew``): an ``agent_error``
    flagged ``nothing_new``, no candidate made, no budget spent. The one test behind every "nothing
    new" (budget, policies, the engine's stop, the tree view, the editor); the flag itself is set by
    the engine, or read from an old row's error text by the store's loader only."""
    return node.status == AGENT_ERROR and bool(getattr(node, "nothing_new", False))


def retimed_figure(retimed: Any, key: str) -> float | None:
    """One figure of a node's re-timing (``Retimed.to_dict()``): a positive number, else None."""
    v = retimed.get(key) if isinstance(retimed, dict) else None
    return float(v) if isinstance(v, (int, float)) and v > 0 else None


def speedup_vs_yours(node: Any, root: Any | None) -> float | None:
    """How many times faster than the user's kernel (the root) ``node`` is (``speedups.vs_yours``): the
    one adapter behind every "× your kernel", for a ``Node`` or a ``NodeView`` (``node_view.py``), which
    name the figures alike (``retimed_vs_root``, ``is_reference_itself``)."""
    if root is None:
        return None
    # the figures each row shows (re-timed first: ``eager``, ``retimed_ms``), so that a node's "× your kernel"
    # is its "× eager" over the root's as printed, the root re-timed in the same rounds where it was
    return vs_yours(node.eager, node.retimed_ms or node.runtime_ms, node.retimed_vs_root,
                    root.retimed_ms or root.runtime_ms, itself=node.id == root.id,
                    root_correct=root.correct, root_is_reference=root.is_reference_itself,
                    root_speedup=root.eager, paired=node.cpu_timed and root.cpu_timed,
                    root_retimed=root.retimed_speedup is not None)


def outcome_fields(result: EvalResult) -> tuple[str, float | None, float | None, str]:
    """(status, speedup, runtime_ms, error) of an evaluation, for the columns."""
    speed = result.speedup if result.status is Status.OK else None
    runtime = result.runtime.candidate.median_ms if result.runtime else None
    error = "" if not result.status.failed else (result.message or result.status.value)
    return result.status.value, speed, runtime, error
