"""The contract between the search and the agent team (built-in or LLM).

The search builds an ``AgentContext`` (the dynamic context window of one agent)
and calls one of the three agents. Agents are synchronous and may be called
from worker threads at the same time; they never touch the tree store or the
evaluator. A bad answer is reported by raising ``AgentError``: the search
records it as a failed attempt with the reason and carries on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from stark_lsp.context_window import Window
from stark_lsp.tasks.spec import TaskSpec


class AgentError(RuntimeError):
    """An agent could not produce a usable answer (empty, truncated, no code,
    broken marker rules, endpoint down after retries, ...)."""

    def __init__(self, message: str, *, usage: "Usage | None" = None, raw: str = "",
                 exchanges: "list[Exchange] | None" = None):
        super().__init__(message)
        self.usage = usage or Usage()
        self.raw = raw  # the raw response, kept for the tree store
        self.exchanges = list(exchanges or [])  # every turn so far, when the agent kept them (then raw is in them)


class NothingNew(AgentError):
    """The agent has nothing left to propose from this node that the tree does not already hold
    (its message starts with ``source_digest.NOTHING_NEW``): the attempt is free and the
    policies stop choosing the node (``Node.nothing_new``)."""


class AgentsUnavailable(AgentError):
    """The agents' endpoint cannot serve this search at all (connection refused,
    401/403, unknown model, nothing answered the first calls): the search stops
    at once instead of spending its budget on failures."""


class AgentCancelled(AgentError):
    """The search was stopped while an agent waited for its answer."""


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0
    # wall time of the requests behind these calls, retries included (the LLM client's clock); the
    # built-in team makes no call and keeps 0; so do trees stored before it was measured
    seconds: float = 0.0

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cost_usd + other.cost_usd,
            self.calls + other.calls,
            self.seconds + other.seconds,
        )


@dataclass
class Exchange:
    """One prompt and its response, as stored in the tree (never any key)."""

    agent: str  # plan | code | debug
    prompt: str
    response: str
    usage: Usage = field(default_factory=Usage)


@dataclass
class AgentContext:
    task: TaskSpec
    node_id: int
    node_source: str  # the source of the selected node
    node_summary: str
    node_diagnostics: str  # for Debug: why the node failed
    # what the agent sees of the tree: the built-in team reads its history, the LLM prompts its entries
    window: Window = field(default_factory=Window)
    hardware: str = ""  # e.g. "NVIDIA H200, 132 SMs" or "CPU (Triton interpreter)"
    seed: int = 0  # per-attempt seed: deterministic agents use it
    seen: frozenset[str] = frozenset()  # source_digest() of every candidate source in the tree (in flight too)
    # -- what the LLM agents read (stark_lsp.search.context; docs/AGENTS.md) ------------------
    task_card: str = ""  # reference, inputs/outputs, tolerance, calling convention, timings, floor
    hardware_card: str = ""  # GPU, SMs, L2, measured bandwidth and peak, compilers, ncu line
    node_line: str = ""  # the selected node: status, ms, labelled speedups, what it did
    node_profile: str = ""  # its resources, floor gap and ncu figures
    parent_line: str = ""  # the selected node's parent in one line ("" for the root)
    parent_diff: str = ""  # Debug: the parent version -> the failing source, as a diff
    context_tokens: int = 0  # the token budget of one prompt (estimated as characters / 4)
    attempt: int = 0  # the attempt number (1..budget)
    hint: str = ""  # Plan: this attempt's exploration hint (attempts in flight get different ones)
    in_flight: tuple[str, ...] = ()  # Plan: the other attempts in flight, one line each
    plan_summary: str = ""  # Code: what the plan does
    cancel: Any = None  # with is_set(): the search stopped; an agent waiting for an answer gives up at once
    # what torch.compile's Inductor wrote for this KernelBench model (the root's ``EvalResult.compiled_code``):
    # the built-in team's first starting point (``builtin/inductor_seed.py``); None when there is none
    compiled_code: dict[str, Any] | None = None
    on_wait: Any = None  # called with a line ("waiting for the plan agent (41 s, 310 tokens)") as an answer streams
    # called with a line the user must keep (a prompt over its budget): printed on its own line, not overwritten
    on_notice: Any = None


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
    # before a search evaluates anything: raises AgentsUnavailable for an endpoint that cannot serve the team,
    # returns notices worth a line (an LLM team's ``ChatClient.probe``; None: nothing to check)
    probe: Callable[[], list[str]] | None = None
    # requests the endpoint serves at once, as its probe read it (llama.cpp's slots; None: not said)
    slots: Callable[[], int | None] | None = None
