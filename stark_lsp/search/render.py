"""Text and JSON views of a tree, for ``stark optimize``, ``show`` and the editor."""

from __future__ import annotations

from typing import Any

from stark_lsp.agents.llm.secrets import redact
from stark_lsp.safe_text import for_terminal

from .node import Node


def _speed(n: Node) -> str:
    """Against eager PyTorch (the reference): two significant digits when tiny (CPU interpreter)."""
    if n.speedup is None:
        return "-"
    return f"{n.speedup:.2f}x" if n.speedup >= 0.01 else f"{n.speedup:.2g}x"


def _root_ms(nodes: list[Node]) -> float | None:
    return next((n.runtime_ms for n in nodes if n.parent_id is None), None)


def _yours(n: Node, root_ms: float | None) -> str:
    """Against the user's kernel (the root): what a kernel engineer asks first."""
    if n.runtime_ms is None or not root_ms or n.speedup is None:
        return "-"
    return f"{root_ms / n.runtime_ms:.2f}x"


def _runtime(n: Node) -> str:
    return f"{n.runtime_ms:.4g}" if n.runtime_ms is not None else "-"


def _note(n: Node, width: int) -> str:
    text = n.summary or ""
    if n.duplicate_of is not None:
        text = f"(duplicate of #{n.duplicate_of}) {text}"
    if n.error and n.status != "ok":
        text = f"{text} [{n.error}]" if text else n.error
    text = " ".join(for_terminal(redact(text)).split())  # no key, no escape sequence reaches a terminal
    return text if len(text) <= width else text[: width - 3] + "..."


def table(nodes: list[Node], best_id: int | None = None, width: int = 60) -> str:
    """One row per node: id, parent, kind, attempt, status, speedup, ms, note."""
    head = f"{'id':>5} {'parent':>6} {'kind':<9} {'att':>3} {'status':<13} {'x yours':>8} {'x eager':>8} {'ms':>9}  note"
    rows = [head]
    root_ms = _root_ms(nodes)
    for n in nodes:
        mark = "*" if n.id == best_id else " "
        parent = str(n.parent_id) if n.parent_id is not None else "-"
        rows.append(
            f"{n.id:>4}{mark} {parent:>6} {n.kind:<9} {n.attempt or '-':>3} {n.status:<13} "
            f"{_yours(n, root_ms):>8} {_speed(n):>8} {_runtime(n):>9}  {_note(n, width)}"
        )
    return "\n".join(rows)


def tree(nodes: list[Node], best_id: int | None = None, width: int = 70) -> str:
    """The tree, indented by depth, children in creation order."""
    kids: dict[int | None, list[Node]] = {}
    ids = {n.id for n in nodes}
    for n in sorted(nodes, key=lambda n: n.id):
        parent = n.parent_id if n.parent_id in ids else None
        kids.setdefault(parent, []).append(n)
    lines: list[str] = []
    root_ms = _root_ms(nodes)

    def walk(n: Node, depth: int) -> None:
        mark = " *best*" if n.id == best_id else ""
        speed = f"{_yours(n, root_ms)} yours, {_speed(n)} eager" if n.speedup is not None else "-"
        lines.append(f"{'  ' * depth}#{n.id} {n.kind} [{n.status}] {speed}{mark}  {_note(n, width)}".rstrip())
        for c in kids.get(n.id, []):
            walk(c, depth + 1)

    for r in kids.get(None, []):
        walk(r, 0)
    return "\n".join(lines)


def node_dict(n: Node, with_source: bool = False) -> dict[str, Any]:
    d: dict[str, Any] = {
        "id": n.id, "parent_id": n.parent_id, "kind": n.kind, "status": n.status,
        "attempt": n.attempt, "summary": n.summary, "speedup": n.speedup,
        "runtime_ms": n.runtime_ms, "error": n.error, "duplicate_of": n.duplicate_of,
        "seed": n.seed, "created": n.created, "updated": n.updated,
        "usage": vars(n.usage),
        "profile": n.profile,  # a ProfileReport dict (ncu), or None
    }
    if with_source:
        d["source"] = n.source
        d["plan"] = n.plan
        d["result"] = n.result.to_dict() if n.result else None
    return d


def node_detail(n: Node, root: Node | None = None) -> str:
    """One node in full, for ``stark show --node N``: its line, plan, error
    (untrimmed) and the evaluator's verdict."""
    from .labels import node_line

    lines = [node_line(n, root, with_summary=False),
             f"parent: #{n.parent_id}" if n.parent_id is not None else "parent: - (your kernel)",
             f"attempt: {n.attempt or '-'}, seed {n.seed}"]
    if n.summary:
        lines.append(f"summary: {n.summary}")
    if n.plan:
        from stark_lsp.markers.syntax import MarkerError, parse_markers

        try:
            for m in parse_markers(n.plan):
                lines.append(f"marker {m.id} (lines {m.begin_line}-{m.end_line} of the plan): {m.instruction}")
        except MarkerError as e:
            lines.append(f"plan: its markers do not parse: {e}")
    if n.error:
        lines.append("error:\n  " + n.error.replace("\n", "\n  "))
    if n.result is not None and n.status != "ok":
        from .excerpts import diagnostics_text

        diag = diagnostics_text(n)
        if diag and diag.strip() != n.error.strip():
            lines.append("diagnostics:\n  " + diag.replace("\n", "\n  "))
    u = n.usage
    if u.calls:
        cost = f", ${u.cost_usd:.4f}" if u.cost_usd else ""
        lines.append(f"agents: {u.calls} call(s), {u.prompt_tokens} prompt + {u.completion_tokens} completion tokens{cost}")
    return "\n".join(lines)


def transcript(n: Node) -> str:
    """The node's exchanges with the agents, in order (prompt, then answer)."""
    if not n.exchanges:
        return "(no exchanges with the agents recorded for this node)"
    out = []
    total = len(n.exchanges)
    for k, e in enumerate(n.exchanges, 1):
        u = e.usage
        out.append(f"===== exchange {k}/{total}: {e.agent} agent ({u.prompt_tokens} prompt, "
                   f"{u.completion_tokens} completion tokens) =====")
        out.append("----- prompt -----")
        out.append(e.prompt.rstrip() if e.prompt else "(not recorded)")
        out.append("----- answer -----")
        out.append(e.response.rstrip() if e.response else "(empty)")
    return "\n".join(out) + "\n"
