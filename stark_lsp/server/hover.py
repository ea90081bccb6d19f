"""textDocument/hover on a kernel: the search in a few lines, the best first.

A hover must fit without scrolling: a heading, the running search's progress,
the baseline row and at most ``MAX_CANDIDATES`` candidates (the fastest
correct ones, then the latest others), then "n more: open the search tree".
Speedups are labelled through ``labels.py``.

``hover_markdown`` is pure (a cached ``TreeView`` in, markdown out);
``hover_for`` gathers what it shows from the host (the kernel under the
cursor, the running search, whether this machine can run CUDA); the handler
in ``server.py`` only waits for the document's task and wraps the markdown.
"""

from __future__ import annotations

from stark_lsp.server.documents import DocState, line_before_edits
from stark_lsp.server.host import Host
from stark_lsp.server.labels import baseline_name, eager_text, gain_ratio, gain_text
from stark_lsp.server.progress import progress_text
from stark_lsp.search.node_view import NodeView
from stark_lsp.search.tree_view import TreeView, outcome
from stark_lsp.speedups import CPU_NOTE

MAX_CANDIDATES = 5
MORE = "more: open the search tree"
NO_GPU_NOTE = "No NVIDIA GPU here: nvcc can compile this kernel, but nothing can be run or timed."


def _cell(text: str, limit: int = 60) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _ms(v: float | None) -> str:
    return f"{v:.4g} ms" if v is not None else "-"


def _status(n: NodeView) -> str:
    if n.nothing_new:
        return "nothing new to try"
    s = n.status.replace("_", " ")
    if n.duplicate_of is not None:
        s += f" (= #{n.duplicate_of})"
    return s


def shown_candidates(tree: TreeView, limit: int = MAX_CANDIDATES) -> list[NodeView]:
    """The fastest correct candidates, then the latest other finished attempts."""
    ranked = tree.ranked_candidates()[:limit]
    if len(ranked) < limit:
        seen = {n.id for n in ranked}
        others = [n for n in reversed(tree.attempts) if n.id not in seen and not n.in_flight]
        ranked += others[: limit - len(ranked)]
    return ranked


def hover_markdown(kernel: str, tree: TreeView | None, running: str | None = None, problem: str | None = None,
                   note: str | None = None) -> str:
    """Markdown for a hover on ``kernel``. ``running``: a progress line when a
    search is going on; ``problem``: why the file is not a task yet; ``note``:
    a fact about this machine (no GPU for a CUDA kernel)."""
    lines = [f"**{kernel}** · STARK"]
    if problem:
        lines += ["", f"⚠ {problem}"]
    if note:
        lines += ["", note]
    if running:
        lines += ["", f"Optimizing: {running}"]
    if tree is None or not tree.nodes:
        if not problem and not running and not note:
            lines += ["", "Not optimized yet: use the code action *Optimize kernel*."]
        return "\n".join(lines)
    root = tree.root
    best = tree.best_candidate
    head = tree.counts
    if best is not None:
        ms = f" ({_ms(best.runtime_ms)} vs {_ms(root.runtime_ms)})" if root is not None else ""
        head += f" · best #{best.id}: **{gain_text(tree, best, cpu_note=False)}**{ms}"
    elif root is not None and root.correct:
        head += f" · nothing beats {baseline_name(tree)} yet"
    elif root is not None and not root.in_flight:
        head += f" · {baseline_name(tree)} fails: {_cell(root.error or root.status, 100)}"
    column = "× eager" if tree.baseline_is_reference else "× yours"
    lines += ["", head, "", f"| # | plan | status | time | {column} |", "|---|---|---|---|---|"]
    if root is not None:
        lines.append(f"| baseline | {_cell(baseline_name(tree))} | {_cell(_status(root), 30)} | {_ms(root.runtime_ms)} | - |")
    rows = shown_candidates(tree)
    for n in rows:
        mark = " ★" if best is not None and n.id == best.id else ""
        summary = n.summary or (n.error if outcome(tree, n) != "faster" else "")
        lines.append(f"| #{n.id}{mark} | {_cell(summary)} | {_cell(_status(n), 30)} | {_ms(n.runtime_ms)} "
                     f"| {gain_ratio(tree, n) if n.correct else '-'} |")
    hidden = sum(1 for n in tree.attempts if not n.in_flight) - len(rows)
    if hidden > 0:
        lines.append(f"\n{hidden} {MORE}.")
    profiled = [(label, n) for label, n in (("your kernel", root), (f"best #{best.id}" if best else "", best))
                if n is not None and n.profile]
    if profiled:
        lines.append("")
        seen_ids = set()
        for label, n in profiled:
            if n.id not in seen_ids:
                seen_ids.add(n.id)
                lines.append(f"- {label}: {_cell(n.profile, 200)}")
    notes = [f"{column}: against {baseline_name(tree)}"]
    if best is not None and not tree.baseline_is_reference:
        notes.append(f"the best is {eager_text(best, cpu_note=False)}")
    if tree.cpu:
        notes.append(CPU_NOTE)
    lines += ["", f"_{'; '.join(notes)}._"]
    return "\n".join(lines)


def hover_for(host: Host, state: DocState, line: int) -> str | None:
    """The hover's markdown at ``line`` of the document (as the client sees it now), or None off a kernel."""
    kernel = state.kernel_at(line_before_edits(line, state.edits))
    if kernel is None:
        return None
    job = host.jobs.for_document(state)
    tree = host.cache.get(state.task_id)
    running = progress_text(job.progress, tree, job.phase, job.cancel.is_set())[0] if job else None
    problem = state.shown_problem
    note = NO_GPU_NOTE if state.language == "cuda" and not host.backend.gpu_available(host.settings) else None
    return hover_markdown(kernel.name, tree, running, problem.message if problem else None, note)
