"""One line per node for the agents: status, milliseconds and labelled speedups.

    #7 plan_code: ok, 0.37 ms, 6.84× your kernel, 7.10× eager
    #3 plan_code: ok, 41.2 ms, 0.98× your kernel, 0.00049× eager (CPU interpreter: for checking, not speed)
    #9 debug: compile_error: error: identifier "THREAD" is undefined

Every speedup goes through ``stark_lsp.speedups``: "× your kernel" is the
root's time over the node's (``speedups.vs_yours``), "× eager" the evaluator's
speedup over the reference in PyTorch; on the CPU the ms carry the eager time
timed in turn with them, which the "× eager" divides. Pure.
"""

from __future__ import annotations

from stark_lsp.speedups import CPU_NOTE, paired_eager_ms, shown_ms, speedup_text

from .node import Node, speedup_vs_yours

ERROR_CHARS = 200


def cpu_timing(node: Node | None) -> bool:
    r = node.result if node is not None else None
    return bool(r is not None and r.runtime is not None and not r.runtime.is_gpu)


def vs_yours(node: Node, root: Node | None) -> float | None:
    """``node.speedup_vs_yours``: the one ratio (re-timed where there is a re-timing)."""
    if root is None or not node.correct:
        return None
    return speedup_vs_yours(node, root)


def timing_words(node: Node, root: Node | None) -> str:
    """``0.37 ms, 6.84× your kernel, 7.10× eager``; '' without a timing."""
    if not node.correct or node.runtime_ms is None:
        return ""
    ms = shown_ms(node.runtime_ms, node.retimed)  # re-timed where its ratios are
    parts = [f"{ms:.4g} ms"]
    eager_ms = paired_eager_ms(ms, node.eager) if cpu_timing(node) and not node.is_reference_itself else None
    if eager_ms is not None:  # the CPU: eager timed in turn with it, the time its "× eager" divides
        parts[0] += f" (eager {eager_ms:.4g} ms, timed in turn with it)"
    yours = vs_yours(node, root)
    if yours is not None:
        parts.append(speedup_text(yours, "yours", degenerate=node.degenerate))
    if node.speedup is not None:
        parts.append(speedup_text(node.eager, "eager", degenerate=node.degenerate))
    text = ", ".join(parts)
    return f"{text} ({CPU_NOTE})" if cpu_timing(node) else text


def first_line(text: str, limit: int = ERROR_CHARS) -> str:
    line = next((l.strip() for l in (text or "").splitlines() if l.strip()), "")
    return line if len(line) <= limit else line[: limit - 3] + "..."


def node_line(node: Node, root: Node | None, with_summary: bool = True, with_error: bool = True) -> str:
    """The node in one line: id, kind, status, timing or error, and what it did."""
    head = f"#{node.id} {node.kind}: {node.status}"
    timing = timing_words(node, root if root is None or root.id != node.id else None)
    if timing:
        head += f", {timing}"
    elif with_error and node.status not in ("ok",) and node.error:
        head += f": {first_line(node.error)}"
    if node.duplicate_of is not None:
        head += f" (same source as #{node.duplicate_of})"
    if with_summary:
        what = node.summary or ("your kernel, as written" if node.parent_id is None else "")
        if what:
            head += f" | {first_line(what, 300)}"
    return head
