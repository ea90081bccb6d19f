"""Excerpts of nodes for the agents: token estimates, trimmed text, diffs, and
why a node failed. Pure."""

from __future__ import annotations

import difflib

from stark_lsp.context_budget import estimate_tokens  # noqa: F401  (re-exported)

from .node import Node


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
    diags = r.all_diagnostics()
    if r.message and r.status.failed and not any(d.message.strip() == r.message.strip() for d in diags):
        out.append(r.message)  # (a diagnostic that says the same thing also says where)
    for d in diags:
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
