"""Text and JSON views of a tree, for ``stark optimize``, ``show`` and the editor.

The root and every "× your kernel" come from the tree view
(``tree_view.py``: ``TreeView.gain``, over the nodes as they are; the JSON's
``speedup_vs_yours`` is the same adapter, ``node.speedup_vs_yours``); the best
is the caller's (``TreeStore.best``, the view's rule). Every figure is written
through ``stark_lsp/speedups.py``."""

from __future__ import annotations

from typing import Any

from stark_lsp.redaction import redact
from stark_lsp.safe_text import for_terminal
from stark_lsp.speedups import CPU_NOTE, paired_eager_ms, ratio_text, shown_ms, speedup_text

from . import usage
from .node import Node, retimed_figure, speedup_vs_yours
from .tree_view import TreeView


def _eager(n: Node) -> str:
    """The bare ratio over eager PyTorch (the reference), for the ``× eager`` column."""
    if n.is_reference_itself and n.correct:
        return ratio_text(1.0)  # by construction; the note says it is the reference
    return ratio_text(n.eager)


def _yours(n: Node, view: TreeView[Node]) -> str:
    """The bare ratio over the user's kernel (the root), for the ``× yours`` column (``TreeView.gain``)."""
    return ratio_text(view.gain(n))


def _runtime(n: Node) -> str:
    """The ms column: the re-timed median where the search re-timed the node, as its ``× yours`` and
    ``× eager`` are, else its one evaluation's time (``speedups.shown_ms``)."""
    ms = shown_ms(n.runtime_ms, n.retimed)
    return f"{ms:.4g}" if ms is not None else "-"


def _eager_ms(n: Node) -> str:
    """The CPU's ``eager ms`` column: the eager time of the row's own figure (timed in turn with it,
    ``speedups.paired_eager_ms``), so that ``× eager`` is this column over ``ms`` on every row."""
    if not n.correct or n.is_reference_itself:
        return "-"
    ms = paired_eager_ms(shown_ms(n.runtime_ms, n.retimed), n.eager)
    return f"{ms:.4g}" if ms is not None else "-"


def _note(n: Node, width: int | None) -> str:
    text = n.summary or ""
    if n.is_reference_itself:
        text = "the reference itself (Model as ModelNew): the baseline"
    if n.duplicate_of is not None:
        text = f"(duplicate of #{n.duplicate_of}) {text}"
    if n.error and n.status != "ok":
        text = f"{text} [{n.error}]" if text else n.error
    text = " ".join(for_terminal(redact(text)).split())  # no key, no escape sequence reaches a terminal
    if width is None or len(text) <= width:
        return text
    return text[: width - 3] + "..."


CPU_MS_NOTE = ("eager ms: eager timed in turn with the row, so × eager = eager ms / ms and × yours = the row's "
               "× eager / your kernel's (re-timed rows and yours: medians of the same rounds), never one "
               "row's ms over another's (each ran under its own load)")


def cpu_footer(nodes: list[Node], ms_columns: bool = False) -> str:
    """The line under a table or tree whose figures come from the CPU, else ``""``; ``ms_columns``: the
    table's, whose ms columns it says how to read (``CPU_MS_NOTE``)."""
    if any(n.cpu_timed for n in nodes):
        return f"× and ms figures ({CPU_NOTE})" + (f"; {CPU_MS_NOTE}" if ms_columns else "")
    return ""


def table(nodes: list[Node], best_id: int | None = None, width: int | None = 60) -> str:
    """One row per node: id, parent, kind, attempt, status, speedups, ms, the agents'
    tokens (only where some node has any: ``usage.py``), note.

    ``width``: the note column's width (None: never cut, e.g. for the last row's
    reason of an unsupported model, which a user needs whole)."""
    tok = any(usage.used(n.usage) for n in nodes)
    took = any(usage.time_text(n.usage) for n in nodes)  # the LLM's wall time, where it was measured
    cpu = any(n.cpu_timed for n in nodes)  # eager timed in turn with each row: its own eager ms beside its ms
    head = f"{'id':>5} {'parent':>6} {'kind':<9} {'att':>3} {'status':<13} {'× yours':>8} {'× eager':>8} {'ms':>9}"
    head += f" {'eager ms':>9}" if cpu else ""
    rows = [head + (f" {'tokens':>8}" if tok else "") + (f" {'llm time':>10}" if took else "") + "  note"]
    view = TreeView.of(nodes)
    for n in nodes:
        mark = "*" if n.id == best_id else " "
        parent = str(n.parent_id) if n.parent_id is not None else "-"
        note = _note(n, None if n.status != "ok" else width)  # a failure's reason is never cut
        tokens = f" {_eager_ms(n):>9}" if cpu else ""
        tokens += f" {usage.cell(n.usage, unit='', with_time=False) or '-':>8}" if tok else ""
        tokens += f" {usage.time_text(n.usage) or '-':>10}" if took else ""
        rows.append(
            f"{n.id:>4}{mark} {parent:>6} {n.kind:<9} {n.attempt or '-':>3} {n.status:<13} "
            f"{_yours(n, view):>8} {_eager(n):>8} {_runtime(n):>9}{tokens}  {note}".rstrip()
        )
    footer = cpu_footer(nodes, ms_columns=True)
    return "\n".join(rows + ([footer] if footer else []))


def tree(nodes: list[Node], best_id: int | None = None, width: int | None = 70) -> str:
    """The tree, indented by depth, children in creation order; a node's agents' tokens
    (``· 12.3k tok``) follow its speedups where it made agent calls."""
    kids: dict[int | None, list[Node]] = {}
    ids = {n.id for n in nodes}
    for n in sorted(nodes, key=lambda n: n.id):
        parent = n.parent_id if n.parent_id in ids else None
        kids.setdefault(parent, []).append(n)
    lines: list[str] = []
    view = TreeView.of(nodes)

    def walk(n: Node, depth: int) -> None:
        mark = " *best*" if n.id == best_id else ""
        if n.speedup is None:
            speed = "-"
        elif n.is_reference_itself:
            speed = "1.00× eager"
        elif n.parent_id is None:
            speed = f"{_eager(n)} eager"
        else:
            speed = f"{_yours(n, view)} yours, {_eager(n)} eager"
        note = _note(n, None if n.status != "ok" else width)
        tok = usage.cell(n.usage)
        speed += f" · {tok}" if tok else ""
        lines.append(f"{'  ' * depth}#{n.id} {n.kind} [{n.status}] {speed}{mark}  {note}".rstrip())
        for c in kids.get(n.id, []):
            walk(c, depth + 1)

    for r in kids.get(None, []):
        walk(r, 0)
    footer = cpu_footer(nodes)
    return "\n".join(lines + ([footer] if footer else []))


def best_line(nodes: list[Node], best: Node | None) -> str:
    """``#7: 2.35× your kernel, 1.21× eager`` (labelled, CPU note when CPU-timed), or why there is none."""
    if best is None:
        return "none correct"
    if best.parent_id is None:
        return f"#{best.id}: your kernel, nothing beat it ({best.eager_text()})"
    yours = TreeView.of(nodes).gain(best)
    eager = best.eager_text()
    return f"#{best.id}: {speedup_text(yours, 'yours', degenerate=best.degenerate)}, {eager}" if yours is not None \
        else f"#{best.id}: {eager}"


def node_dict(n: Node, with_source: bool = False, root: Node | None = None) -> dict[str, Any]:
    """A node as JSON, with the figures every other surface shows: ``speedup`` (= ``speedup_vs_eager``) over
    eager PyTorch and ``runtime_ms``, each the re-timing's where the node was re-timed (``search/retime.py``),
    else its evaluation's; ``single_speedup`` and ``single_runtime_ms``: its one evaluation in the search
    (the bench record's names), whatever the re-timing said; ``speedup_vs_yours`` over the root (needs
    ``root``); ``cpu_timing``: the figures are CPU timings, not GPU ones."""
    retimed_ms = retimed_figure(n.retimed, "runtime_ms")
    d: dict[str, Any] = {
        "id": n.id, "parent_id": n.parent_id, "kind": n.kind, "status": n.status,
        "attempt": n.attempt, "summary": n.summary, "speedup": n.eager,
        "speedup_vs_eager": n.eager,  # re-timed first, as every surface shows it
        "speedup_vs_yours": speedup_vs_yours(n, root) if root is not None else None,
        "single_speedup": n.speedup, "single_runtime_ms": n.runtime_ms,
        "cpu_timing": n.cpu_timed, "reference_itself": n.is_reference_itself,
        "runtime_ms": retimed_ms if retimed_ms is not None else n.runtime_ms,
        # eager's time that goes with speedup_vs_eager (runtime_ms × it): on the CPU, timed in turn with this node
        "eager_ms": paired_eager_ms(retimed_ms if retimed_ms is not None else n.runtime_ms, n.eager)
        if n.correct and not n.is_reference_itself else None,
        "error": n.error, "duplicate_of": n.duplicate_of,
        "seed": n.seed, "created": n.created, "updated": n.updated,
        "usage": vars(n.usage),
        "profile": n.profile,  # a ProfileReport dict (ncu), or None
        "retimed": n.retimed,  # the re-timing's figures (search/retime.py), which speedup_vs_yours prefers
        "degenerate": n.result.degenerate if n.result else "",
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
    agents = usage.detail(n.usage)
    if agents:
        lines.append(agents)
    return "\n".join(lines)


def transcript(n: Node) -> str:
    """The node's exchanges with the agents, in order (prompt, then answer)."""
    if not n.exchanges:
        return "(no exchanges with the agents recorded for this node)"
    out = []
    total = len(n.exchanges)
    for k, e in enumerate(n.exchanges, 1):
        u = e.usage
        took = usage.time_text(u)
        out.append(f"===== exchange {k}/{total}: {e.agent} agent ({u.prompt_tokens} prompt, "
                   f"{u.completion_tokens} completion tokens{', ' + took if took else ''}) =====")
        out.append("----- prompt -----")
        out.append(e.prompt.rstrip() if e.prompt else "(not recorded)")
        out.append("----- answer -----")
        out.append(e.response.rstrip() if e.response else "(empty)")
    return "\n".join(out) + "\n"
