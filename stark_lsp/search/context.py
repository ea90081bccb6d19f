"""The context of one agent call (``AgentContext``): the selected node, the cards, and the window.

The window (``context_window.Window``) is built here, once, for both teams:

* its history (``history_window.py``): the node and the root in full, then the nodes tried near
  it as diffs against their parents, fitted to the token budget: what the built-in team reads;
* its entries (``windows.py``): STARK's windows for the LLM prompts (Plan: leaderboard, your
  kernel, children, failures; Code: similar plans, children; Debug: fixed failures, siblings),
  fitted by the prompt to what the rest of it leaves.

Besides: the task card (``task_card.py``, with the project's files the kernel uses:
``project_files.py``), the hardware card (``hardware_card.py``), the node's and its parent's lines,
the profile line (resources, the runtime against the hardware floor, Nsight Compute figures), the
sources already in the tree (``seen``), the attempt's hint and the attempts in flight. Pure: no
store, no threads.
"""

from __future__ import annotations

from typing import Any, Iterable

from stark_lsp.agents.base import AgentContext
from stark_lsp.context_window import Window
from stark_lsp.evaluate.result import EvalResult
from stark_lsp.speedups import ratio_text
from stark_lsp.tasks.describe import TaskFacts
from stark_lsp.tasks.spec import TaskSpec

from stark_lsp.source_digest import source_digest
from .excerpts import diagnostics_text, diff, estimate_tokens, trim  # noqa: F401  (re-exported)
from .history_window import DIAG_CHARS, DIAG_LINES, Profiler, history, outcome_summary
from .node import ABANDONED, Node
from .policies.common import PolicyTree, leaderboard


def resource_profile(node: Node) -> str:
    """Registers, shared memory and spills per kernel, from the EvalResult.
    ``node_profile`` adds the floor and the ncu figures."""
    r: EvalResult | None = node.result
    if r is None or not r.resources:
        return ""
    parts = []
    for k in r.resources:
        bits = []
        if k.registers is not None:
            bits.append(f"{k.registers} regs")
        if k.shared_bytes is not None:
            bits.append(f"{k.shared_bytes} B smem")
        if k.spill_stores is not None or k.spill_loads is not None:
            bits.append(f"spills {k.spill_stores or 0} st / {k.spill_loads or 0} ld")
        if k.stack_bytes:
            bits.append(f"{k.stack_bytes} B stack")
        parts.append(f"{k.kernel}: {', '.join(bits) or 'no figures'}")
    return "; ".join(parts)


def floor_text(node: Node) -> str:
    """How far a correct node's runtime is above the hardware floor
    (``Runtime.floor``, GPU only): ``3.10× the memory floor (0.12 ms,
    memory-bound)``; '' without a floor."""
    r = node.result
    rt = r.runtime if r is not None and node.correct else None
    fl = getattr(rt, "floor", None) if rt is not None else None
    if fl is None:
        return ""
    get = fl.get if isinstance(fl, dict) else (lambda k, d=None: getattr(fl, k, d))
    try:
        floor_ms = max(float(get("memory_floor_ms") or 0.0), float(get("compute_floor_ms") or 0.0))
        ms = float(rt.candidate.median_ms)
    except (TypeError, ValueError, AttributeError):
        return ""
    if floor_ms <= 0 or ms <= 0:
        return ""
    bound = str(get("bound") or "memory")
    return f"{ratio_text(ms / floor_ms)} the {bound} floor ({floor_ms:.3g} ms, {bound}-bound)"


def ncu_text(node: Node) -> str:
    """The node's Nsight Compute figures (``Node.profile``); '' when it was
    not profiled or the profile was unavailable."""
    from stark_lsp.profile.report import ProfileReport

    try:
        report = ProfileReport.from_dict(node.profile)
    except (TypeError, ValueError, AttributeError):
        return ""
    return report.summary() if report is not None and report.ok else ""


def node_profile(node: Node) -> str:
    """The profile line the search shows agents: the evaluator's resource
    report, the runtime against the hardware floor, and the ncu figures, each
    where known: ``k: 32 regs, 0 B smem, spills 0 st / 0 ld | 3.10× the
    memory floor (0.12 ms, memory-bound) | ncu: dram 41% of peak, sm 12%,
    occupancy 48%, stalls: long_scoreboard 63%, barrier 12%``."""
    return " | ".join(p for p in (resource_profile(node), floor_text(node), ncu_text(node)) if p)


def seen_digests(nodes: Iterable[Node]) -> frozenset[str]:
    """``source_digest`` of every candidate source in the tree: evaluated,
    failed and in-flight nodes (abandoned ones were never judged)."""
    return frozenset(source_digest(n.source) for n in nodes if n.source and n.status != ABANDONED)


EXPLORATION_HINTS = (
    "memory traffic: coalesced and vectorized loads and stores, fewer passes over the data",
    "parallelism: the grid and block shape, work per thread or program, occupancy",
    "on-chip reuse: shared-memory or register tiling, keeping values in registers between passes",
    "reductions and synchronization: warp shuffles, fewer barriers and atomics, one-pass (online) algorithms",
    "fusion: more of the reference's steps in one kernel, no intermediate tensors",
    "instruction cost: cheaper math (fast intrinsics, fewer divisions and exponentials), unrolling",
    "launch and pipelining: warps per block or program, pipeline stages, asynchronous copies",
    "a different decomposition of the work: split along another axis, persistent programs, split-K",
)


def exploration_hint(attempt: int, seed: int = 0) -> str:
    """Attempts in flight at once (consecutive numbers) get different hints."""
    return EXPLORATION_HINTS[(attempt + seed) % len(EXPLORATION_HINTS)]


def in_flight_lines(nodes: Iterable[Node], exclude: int | None) -> tuple[str, ...]:
    """The attempts in flight besides ``exclude``: what each one is doing."""
    out = []
    for n in sorted(nodes, key=lambda n: n.id):
        if n.in_flight and n.parent_id is not None and n.id != exclude:
            what = n.summary or ("planning" if n.kind == "plan_code" else "debugging")
            out.append(f"#{n.id} ({n.kind} from #{n.parent_id}): {what}")
    return tuple(out)


def build_context(
    agent: str,
    task: TaskSpec,
    nodes: Iterable[Node],
    node_id: int,
    *,
    leaderboard_size: int = 5,
    token_budget: int = 12000,
    hardware: str = "",
    seed: int = 0,
    profiler: Profiler = node_profile,
    hardware_info: dict | None = None,
    facts: "TaskFacts | None" = None,
    attempt: int = 0,
    attempt_node_id: int | None = None,
    plan: tuple[str, str] | None = None,
    cancel: object = None,
    search_seed: int = 0,
) -> AgentContext:
    """The context of one agent call. ``plan`` is (marked source, summary)
    for the Code agent; ``attempt_node_id`` the node this attempt will fill
    (left out of the in-flight list); ``hardware_info`` the evaluator's
    ``hardware_info()`` with compiler versions (``hardware_card.hardware_facts``)."""
    from stark_lsp.tasks.describe import describe_task

    from .hardware_card import cuda_runs, hardware_card
    from .labels import node_line
    from .task_card import task_card
    from .windows import code_entries, debug_entries, plan_entries, plan_words

    nodes = list(nodes)
    by_id = {n.id: n for n in nodes}
    node = by_id[node_id]
    root = next((n for n in sorted(nodes, key=lambda n: n.id) if n.parent_id is None), node)
    budget_chars = token_budget * 4
    max_code = max(400, budget_chars // 4)
    tried = history(agent, task, nodes, node, root, leaderboard_size=leaderboard_size, token_budget=token_budget,
                    hardware=hardware, profiler=profiler, max_code_chars=max_code)

    view = PolicyTree(nodes)
    live_root = view.root or root
    facts = facts if facts is not None else describe_task(task)
    shown = plan[0] if agent == "code" and plan else node.source
    profiled = _profiled(node, view, leaderboard_size)
    parent = view.nodes.get(node.parent_id) if node.parent_id is not None else None
    if agent == "plan":
        entries = plan_entries(view, node, live_root, leaderboard_size, max_code, profiler)
    elif agent == "code":
        entries = code_entries(view, node, live_root, (plan[1] + " " + _instructions(plan[0])) if plan else plan_words(node),
                               max_code)
    else:
        entries = debug_entries(view, node, live_root, max_code)
    parent_diff = ""
    if agent == "debug" and parent is not None and parent.source and node.source:
        parent_diff = trim(diff(parent.source, node.source, parent.id, node.id), max_code)
    return AgentContext(
        task=task,
        node_id=node.id,
        node_source=node.source,
        node_summary=outcome_summary(node),
        node_diagnostics=trim(diagnostics_text(node), 4 * DIAG_CHARS, 4 * DIAG_LINES) if node.failed else "",
        window=Window(history=tried, entries=tuple(entries)),
        hardware=hardware,
        seed=seed,
        seen=seen_digests(nodes),
        task_card=_with_project_files(task_card(task, facts, nodes, shown, cuda=cuda_runs(hardware_info)), task,
                                      node.source, budget_chars),
        hardware_card=hardware_card(hardware_info, view.nodes.values(), profiled, ncu_text(profiled) if profiled else "",
                                    kind=task.kind),
        node_line=node_line(node, live_root, with_error=agent != "debug"),  # Debug: the error follows, once
        node_profile=profiler(node),
        parent_line=node_line(parent, live_root) if parent is not None else "",
        parent_diff=parent_diff,
        context_tokens=token_budget,
        attempt=attempt,
        hint=exploration_hint(attempt, search_seed) if agent == "plan" else "",
        in_flight=in_flight_lines(nodes, attempt_node_id) if agent == "plan" else (),
        plan_summary=plan[1] if plan else "",
        cancel=cancel,
        compiled_code=_compiled_code(live_root),
    )


def _with_project_files(card: str, task: TaskSpec, source: str, budget_chars: int) -> str:
    """The task card, then the headers / modules the kernel uses (read-only), within a quarter of the budget."""
    from .project_files import project_context

    extra = project_context(task, source, budget_chars // 4)
    return card.rstrip() + "\n\n" + extra if extra else card


def _profiled(node: Node, view: PolicyTree, k: int) -> Node | None:
    """The node whose Nsight Compute line the hardware card shows: the selected
    node when it was profiled, else the best profiled node of the leaderboard."""
    for n in [node] + leaderboard(view.nodes.values(), max(1, k)):
        if ncu_text(n):
            return n
    return None


def _instructions(marked: str) -> str:
    from stark_lsp.markers.syntax import MarkerError, parse_markers

    try:
        return " ".join(m.instruction for m in parse_markers(marked))
    except MarkerError:
        return ""


def _compiled_code(root: Node) -> dict[str, Any] | None:
    """What Inductor wrote for the task's model, as the root's evaluation brought it back (or None)."""
    code = getattr(root.result, "compiled_code", None) if root.result is not None else None
    return code if isinstance(code, dict) and isinstance(code.get("code"), str) else None
