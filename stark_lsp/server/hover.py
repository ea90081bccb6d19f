"""textDocument/hover on a kernel: its search tree as a markdown table.

``hover_markdown`` is pure (a cached ``TreeView`` in, markdown out); the
handler in ``server.py`` only finds the kernel under the cursor.
"""

from __future__ import annotations

from stark_lsp.server.trees import NodeView, TreeView, fmt_x

KIND_LABELS = {"root": "your kernel", "plan_code": "plan + code", "debug": "debug"}
MAX_ROWS = 25


def _cell(text: str, limit: int = 80) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _ms(v: float | None) -> str:
    return f"{v:.4g} ms" if v is not None else "–"


_x = fmt_x


def _status(n: NodeView) -> str:
    s = n.status.replace("_", " ")
    if n.duplicate_of is not None:
        s += f" (= #{n.duplicate_of})"
    return s


def _row(first: str, n: NodeView, tree: TreeView) -> str:
    summary = n.summary or (n.error if n.status != "ok" else "")
    return (
        f"| {first} | {KIND_LABELS.get(n.kind, n.kind)} | {_cell(summary)} | {_cell(_status(n), 40)} "
        f"| {_ms(n.runtime_ms)} | {_x(n.speedup)} | {_x(tree.gain(n))} |"
    )


def hover_markdown(kernel: str, tree: TreeView | None, running: str | None = None, problem: str | None = None) -> str:
    """Markdown for a hover on ``kernel``. ``running``: a progress line when a
    search is going on; ``problem``: why the file is not a task yet."""
    lines = [f"**{kernel}**, STARK-LSP"]
    if problem:
        lines += ["", f"⚠ {problem}"]
    if running:
        lines += ["", f"Optimizing: {running}"]
    if tree is None or not tree.nodes:
        if not problem and not running:
            lines += ["", "Not optimized yet: use the code action *Optimize kernel*."]
        return "\n".join(lines)
    best = tree.best
    root = tree.root
    head = f"{tree.finished} attempts, {tree.correct} correct"
    if best is not None and best.parent is not None:
        gain = tree.gain(best)
        head += f"; best #{best.id}: **{_x(gain) + ' faster than yours' if gain else _x(best.speedup)}** ({_ms(best.runtime_ms)})"
    elif root is not None and root.correct:
        head += "; no candidate beats your kernel yet"
    lines += ["", head, "", "| # | agent | plan | status | runtime | speedup | vs yours |", "|---|---|---|---|---|---|---|"]
    if root is not None:
        lines.append(_row("baseline", root, tree))
    rows = [n for n in tree.nodes if n.parent is not None]
    hidden = max(0, len(rows) - MAX_ROWS)
    if hidden:  # keep the best ones and the latest ones
        keep = {n.id for n in tree.ranked_candidates()[:10]} | {n.id for n in rows[-(MAX_ROWS - 10):]}
        rows = [n for n in rows if n.id in keep]
    for n in rows:
        mark = " ★" if best is not None and n.id == best.id else ""
        lines.append(_row(f"{n.attempt or '·'} (#{n.id}){mark}", n, tree))
    if hidden:
        lines.append(f"\n{hidden} more in the tree view (`stark/tree`).")
    profiled = [(label, n) for label, n in (("your kernel", root), (f"best #{best.id}" if best else "", best))
                if n is not None and n.profile]
    if profiled:
        lines.append("")
        seen_ids = set()
        for label, n in profiled:
            if n.id not in seen_ids:
                seen_ids.add(n.id)
                lines.append(f"- {label}: {_cell(n.profile, 200)}")
    ref = next((n.reference_ms for n in [best, root] if n is not None and n.reference_ms is not None), None)
    note = "speedup: against the harness reference"
    if ref is not None:
        note += f" ({_ms(ref)})"
    if any(n.on_gpu is False for n in tree.nodes):
        note += "; timed on the CPU under the Triton interpreter, not GPU figures"
    lines += ["", f"_{note}; vs yours: against your kernel (the baseline)._"]
    return "\n".join(lines)
