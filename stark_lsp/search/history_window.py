"""The window's history (``context_window.Window.history``): what was tried near the selected node,
as the built-in team reads it (``agents/builtin/history.py``).

* Plan:  the node, the root, the node's children, the top-r leaderboard.
* Code:  the node, the root, the node's children, its cousins (children of
  the node's parent's other children).
* Debug: the node, the root, its siblings.

Each entry shows code (in full for the node and the root, else a unified diff
against its own parent), an outcome line, trimmed diagnostics and a profile
line (resources, the runtime against the hardware floor, Nsight Compute
figures). The history is fitted to a token budget here (tokens ~ chars / 4,
counted on each entry's ``full`` text, after the task's line): the node and
the root always stay; the others are kept best first (correct, by speedup),
then most recent first, while they fit. Pure: no store, no threads.
"""

from __future__ import annotations

from typing import Callable, Iterable

from stark_lsp.context_window import WindowEntry
from stark_lsp.tasks.spec import TaskSpec

from .excerpts import diagnostics_text, diff, estimate_tokens, trim
from .node import Node
from .policies.common import PolicyTree, leaderboard

AGENTS = ("plan", "code", "debug")
WINDOWS = {
    "plan": ("child", "leader"),
    "code": ("child", "cousin"),
    "debug": ("sibling",),
}
DIAG_LINES = 20
DIAG_CHARS = 2000

Profiler = Callable[[Node], str]


def outcome_summary(node: Node) -> str:
    """``#3 plan_code: ok, 2.50x, 0.6 ms: what it did`` (the root: "the original kernel")."""
    what = node.summary or ("the original kernel" if node.parent_id is None else "")
    head = f"#{node.id} {node.kind}: {node.outcome()}"
    return f"{head}: {what}" if what else head


def window(agent: str, nodes: Iterable[Node], node_id: int, leaderboard_size: int = 5) -> list[tuple[str, Node]]:
    """The (role, node) pairs an agent may see beyond the node and the root,
    each node once (its first role), in-flight and abandoned nodes left out."""
    if agent not in WINDOWS:
        raise ValueError(f"unknown agent {agent!r}: one of {', '.join(AGENTS)}")
    view = PolicyTree(nodes)
    node = view.nodes[node_id]
    groups: dict[str, list[Node]] = {
        "child": view.children(node.id),
        "leader": leaderboard(view.nodes.values(), leaderboard_size),
        "sibling": [],
        "cousin": [],
    }
    if node.parent_id is not None:
        others = [s for s in view.children(node.parent_id) if s.id != node.id]
        groups["sibling"] = others
        groups["cousin"] = [c for s in others for c in view.children(s.id)]
    skip = {node.id, view.root.id if view.root else None}
    out: list[tuple[str, Node]] = []
    for role in WINDOWS[agent]:
        for n in groups[role]:
            if n.id in skip or n.in_flight:
                continue
            skip.add(n.id)
            out.append((role, n))
    return out


def _priority(n: Node) -> tuple:
    return (not n.correct, -(n.speedup or 0.0), -n.id)


def history_entry(role: str, node: Node, nodes: dict[int, Node], full: bool, profiler: Profiler,
                  max_code_chars: int, language: str, order: int = 0) -> WindowEntry:
    """``node`` in ``role``: its source in full (``full``), else as a diff against its own parent."""
    text = node.source or node.plan
    if not full:
        parent = nodes.get(node.parent_id) if node.parent_id is not None else None
        if parent is not None and parent.source and text:
            text = trim(diff(parent.source, text, parent.id, node.id), max_code_chars)
        else:
            text = trim(text, max_code_chars)
    summary = outcome_summary(node)
    diagnostics = trim(diagnostics_text(node), DIAG_CHARS, DIAG_LINES)
    profile = profiler(node)
    short = f"### [{role}] {summary}"
    lines = [short]
    if profile:
        lines.append(f"Profile: {profile}")
    if diagnostics:
        lines.append("Diagnostics:\n" + diagnostics)
    if text:
        fence = language if role in ("node", "root") else "diff"
        lines.append(f"```{fence}\n{text.rstrip()}\n```")
    return WindowEntry(role, node.id, summary, text, diagnostics, profile, order=order, priority=order,
                       full="\n".join(lines) + "\n", short=short)


def history(agent: str, task: TaskSpec, nodes: list[Node], node: Node, root: Node, *, leaderboard_size: int,
            token_budget: int, hardware: str, profiler: Profiler, max_code_chars: int) -> tuple[WindowEntry, ...]:
    """The node and the root in full, then the others best first while their ``full`` text fits
    ``token_budget`` (after the task's line, and the node's and the root's)."""
    by_id = {n.id: n for n in nodes}
    header = f"Task: {task.name} ({task.kind}, {task.language})" + (f" on {hardware}" if hardware else "") + "\n"
    out = [history_entry("node", node, by_id, True, profiler, max_code_chars, task.language)]
    if root.id != node.id:
        out.append(history_entry("root", root, by_id, True, profiler, max_code_chars, task.language, order=1))
    used = estimate_tokens(header) + sum(estimate_tokens(e.full) for e in out)
    for role, n in sorted(window(agent, nodes, node.id, leaderboard_size), key=lambda rn: _priority(rn[1])):
        entry = history_entry(role, n, by_id, False, profiler, max_code_chars, task.language, order=len(out))
        cost = estimate_tokens(entry.full)
        if used + cost <= token_budget:
            out.append(entry)
            used += cost
    return tuple(out)
