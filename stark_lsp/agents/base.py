"""The contract between the search and the agent team (built-in or LLM).

The search builds an ``AgentContext`` (the dynamic context window of one agent)
and calls one of the three agents. Agents are synchronous and may be called
from worker threads at the same time; they never touch the tree store or the
evaluator. A bad answer is reported by raising ``AgentError``: the search
records it as a failed attempt with the reason and carries on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from stark_lsp.tasks.spec import TaskSpec


class AgentError(RuntimeError):
    """An agent could not produce a usable answer (empty, truncated, no code,
    broken marker rules, endpoint down after retries, ...)."""

    def __init__(self, message: str, *, usage: "Usage | None" = None, raw: str = ""):
        super().__init__(message)
        self.usage = usage or Usage()
        self.raw = raw  # the raw response, kept for the tree store


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cost_usd + other.cost_usd,
            self.calls + other.calls,
        )


@dataclass
class Exchange:
    """One prompt and its response, as stored in the tree (never any key)."""

    agent: str  # plan | code | debug
    prompt: str
    response: str
    usage: Usage = field(default_factory=Usage)


@dataclass
class ContextItem:
    """One node of history shown to an agent."""

    role: str  # node | root | child | leader | cousin | sibling
    node_id: int
    summary: str  # plan summary, status, runtime, speedup
    code: str  # full source, or a unified diff against the parent
    diagnostics: str = ""  # compiler / runtime messages, trimmed
    profile: str = ""  # resource report and, where measured, ncu figures


@dataclass
class AgentContext:
    task: TaskSpec
    node_id: int
    node_source: str  # the source of the selected node
    node_summary: str
    node_diagnostics: str  # for Debug: why the node failed
    items: list[ContextItem]  # the window, already trimmed to the token budget
    rendered: str  # items rendered as prompt text
    hardware: str = ""  # e.g. "NVIDIA H200, 132 SMs" or "CPU (Triton interpreter)"
    seed: int = 0  # per-attempt seed: deterministic agents use it
    seen: frozenset[str] = frozenset()  # source_digest() of every candidate source in the tree (in flight too)


@dataclass
class PlanResult:
    marked_source: str  # the node's source with grounded markers inserted
    summary: str  # one line: what the plan does
    exchanges: list[Exchange] = field(default_factory=list)


@dataclass
class CodeResult:
    replacements: dict[str, str]  # marker id -> new text of that span
    exchanges: list[Exchange] = field(default_factory=list)


@dataclass
class DebugResult:
    source: str  # the repaired full source
    summary: str
    exchanges: list[Exchange] = field(default_factory=list)


class PlanAgent(Protocol):
    def plan(self, ctx: AgentContext) -> PlanResult: ...


class CodeAgent(Protocol):
    def code(self, ctx: AgentContext, marked_source: str) -> CodeResult: ...


class DebugAgent(Protocol):
    def debug(self, ctx: AgentContext) -> DebugResult: ...


@dataclass
class Team:
    name: str  # "builtin" or "openai:<model>"
    planner: PlanAgent
    coder: CodeAgent
    debugger: DebugAgent
