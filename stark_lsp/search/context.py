"""Dynamic context windows: which nodes each agent sees, and how.

* Plan:  the node, the root, the node's children, the top-r leaderboard.
* Code:  the node, the root, the node's children, its cousins (children of
  the node's parent's other children).
* Debug: the node, the root, its siblings.

Each item shows code (in full for the node and the root, else a unified diff
against its parent), an outcome line, trimmed diagnostics and a profile line
(resources, the runtime against the hardware floor, Nsight Compute figures).
The window is trimmed to a token budget (tokens ~ chars / 4): the node and the
root always stay; the others are kept best first (correct, by speedup), then
most recent first, while they fit. Pure: no store, no threads.
"""

from __future__ import annotations

import difflib
from typing import Callable, Iterable

from stark_lsp.agents.base import AgentContext, ContextItem
from stark_lsp.evaluate.result import EvalResult
from stark_lsp.tasks.spec import TaskSpec

from .digest import source_digest
from .node import ABANDONED, Node
from .policies.common import TreeView, leaderboard

AGENTS = ("plan", "code", "debug")
WINDOWS = {
    "plan": ("child", "leader"),
    "code": ("child", "cousin"),
    "debug": ("sibling",),
}
DIAG_LINES = 20
DIAG_CHARS = 2000

Profiler = Callable[[Node], str]


def estimate_tokens(text: str) -> int:
    return (len(text) + 3) // 4


def trim(text: str, max_chars: int, max_lines: int | None = None) -> str:
    """Keep the head of ``text``; say how much was cut."""
    lines = text.splitlines()
    cut_lines = 0
    if max_lines is not None and len(lines) > max_lines:
        cut_lines = len(lines) - max_lines
        lines = lines[:max_lines]
    out = "\n".join(lines)
    if len(out) > max_chars:
        cut_lines += out[max_chars:].count("\n") + 1
        out = out[:max_chars].rsplit("\n", 1)[0] if "\n" in out[:max_chars] else out[:max_chars]
    if cut_lines:
        out += f"\n... ({cut_lines} more lines)"
    return out


def diff(parent_source: str, source: str, parent_id: int | None, node_id: int) -> str:
    return "".join(difflib.unified_diff(
        parent_source.splitlines(keepends=True), source.splitlines(keepends=True),
        fromfile=f"#{parent_id}", tofile=f"#{node_id}", n=2,
    ))


def diagnostics_text(node: Node) -> str:
    """Why a node failed, or what the evaluator flagged: compiler and runtime
    messages, failed trials, cheats (untrimmed)."""
    r = node.result
    if r is None:
        return node.error
    out: list[str] = []
    if r.message and r.status.failed:
        out.append(r.message)
    for d in r.all_diagnostics():
        where = f"line {d.line}" + (f":{d.column}" if d.column else "") + ": " if d.line else ""
        out.append(f"{where}{d.severity}: {d.message}")
    if r.compile is not None and not r.compile.ok and not r.compile.diagnostics and r.compile.log:
        out.append(r.compile.log)
    if r.correctness is not None:
        for t in r.correctness.trials:
            if not t.passed:
                err = f" max_abs_error={t.max_abs_error:.3g}" if t.max_abs_error is not None else ""
                out.append(f"trial seed {t.seed} failed{err}: {t.message}".rstrip(": "))
    for c in r.cheats:
        out.append(f"cheat {c.kind}: {c.message}")
    out.extend(f"flag: {f}" for f in r.flags)
    return "\n".join(out) if out else node.error


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
    (``Runtime.floor``, GPU only): ``3.1x above the memory floor (0.12 ms,
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
    return f"{ms / floor_ms:.1f}x above the {bound} floor ({floor_ms:.3g} ms, {bound}-bound)"


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
    where known: ``k: 32 regs, 0 B smem, spills 0 st / 0 ld | 3.1x above the
    memory floor (0.12 ms, memory-bound) | ncu: dram 41% of peak, sm 12%,
    occupancy 48%, stalls: long_scoreboard 63%, barrier 12%``."""
    return " | ".join(p for p in (resource_profile(node), floor_text(node), ncu_text(node)) if p)


def _summary(node: Node) -> str:
    what = node.summary or ("the original kernel" if node.parent_id is None else "")
    head = f"#{node.id} {node.kind}: {node.outcome()}"
    return f"{head}: {what}" if what else head


def window(agent: str, nodes: Iterable[Node], node_id: int, leaderboard_size: int = 5) -> list[tuple[str, Node]]:
    """The (role, node) pairs an agent may see beyond the node and the root,
    each node once (its first role), in-flight and abandoned nodes left out."""
    if agent not in WINDOWS:
        raise ValueError(f"unknown agent {agent!r}: one of {', '.join(AGENTS)}")
    view = TreeView(nodes)
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


def make_item(role: str, node: Node, nodes: dict[int, Node], full: bool, profiler: Profiler,
              max_code_chars: int) -> ContextItem:
    text = node.source or node.plan
    if not full:
        parent = nodes.get(node.parent_id) if node.parent_id is not None else None
        if parent is not None and parent.source and text:
            text = trim(diff(parent.source, text, parent.id, node.id), max_code_chars)
        else:
            text = trim(text, max_code_chars)
    return ContextItem(
        role=role,
        node_id=node.id,
        summary=_summary(node),
        code=text,
        diagnostics=trim(diagnostics_text(node), DIAG_CHARS, DIAG_LINES),
        profile=profiler(node),
    )


def render_item(item: ContextItem, language: str) -> str:
    full = item.role in ("node", "root")
    lines = [f"### [{item.role}] {item.summary}"]
    if item.profile:
        lines.append(f"Profile: {item.profile}")
    if item.diagnostics:
        lines.append("Diagnostics:\n" + item.diagnostics)
    if item.code:
        fence = language if full else "diff"
        lines.append(f"```{fence}\n{item.code.rstrip()}\n```")
    return "\n".join(lines) + "\n"


def seen_digests(nodes: Iterable[Node]) -> frozenset[str]:
    """``source_digest`` of every candidate source in the tree: evaluated,
    failed and in-flight nodes (abandoned ones were never judged)."""
    return frozenset(source_digest(n.source) for n in nodes if n.source and n.status != ABANDONED)


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
) -> AgentContext:
    nodes = list(nodes)
    by_id = {n.id: n for n in nodes}
    node = by_id[node_id]
    root = next((n for n in sorted(nodes, key=lambda n: n.id) if n.parent_id is None), node)
    budget_chars = token_budget * 4
    max_code = max(400, budget_chars // 4)

    header = f"Task: {task.name} ({task.kind}, {task.language})" + (f" on {hardware}" if hardware else "") + "\n"
    items = [make_item("node", node, by_id, True, profiler, max_code)]
    if root.id != node.id:
        items.append(make_item("root", root, by_id, True, profiler, max_code))
    used = estimate_tokens(header) + sum(estimate_tokens(render_item(i, task.language)) for i in items)

    extra = sorted(window(agent, nodes, node_id, leaderboard_size), key=lambda rn: _priority(rn[1]))
    for role, n in extra:
        item = make_item(role, n, by_id, False, profiler, max_code)
        cost = estimate_tokens(render_item(item, task.language))
        if used + cost <= token_budget:
            items.append(item)
            used += cost

    rendered = header + "\n".join(render_item(i, task.language) for i in items)
    return AgentContext(
        task=task,
        node_id=node.id,
        node_source=node.source,
        node_summary=_summary(node),
        node_diagnostics=trim(diagnostics_text(node), 4 * DIAG_CHARS, 4 * DIAG_LINES) if node.failed else "",
        items=items,
        rendered=rendered,
        hardware=hardware,
        seed=seed,
        seen=seen_digests(nodes),
    )
