"""The tree view's data: ``stark/tree`` (the whole tree, without sources) and
``stark/node`` (one node's source and its diff against its parent).

A tree of a big file holds a copy of that file per node, so sources travel
one node at a time, when the user clicks it. Every speedup comes labelled
(``labels.py``); the view draws ``outcome`` (root, running, faster, slower,
failed, nothing_new, abandoned) and never turns a "nothing new to try" into
a failed candidate or its empty source into a diff that deletes the file.

Pure (``node_detail`` runs difflib: call it off the event loop for big files).
"""

from __future__ import annotations

import difflib
from typing import Any

from stark_lsp.search import usage
from stark_lsp.server.labels import against, baseline_name, best_text, eager_text, gain_ratio, gain_text
from stark_lsp.search.node_view import NodeView
from stark_lsp.search.tree_view import TreeView, outcome

MAX_DIFF_LINES = 2000


SUMMARY_CHARS = 160


def node_json(tree: TreeView, n: NodeView) -> dict[str, Any]:
    """What the tree view draws for a node (its details come with ``stark/node``)."""
    summary = n.summary if len(n.summary) <= SUMMARY_CHARS else n.summary[: SUMMARY_CHARS - 1] + "…"
    return {
        "id": n.id,
        "parent": n.parent_id,
        "kind": n.kind,
        "status": n.status,
        "attempt": n.attempt,
        "outcome": outcome(tree, n),
        "speedup": n.speedup,  # against the harness reference (eager)
        "gain": tree.gain(n),  # against the user's kernel
        "label": gain_ratio(tree, n) if n.correct or n.parent_id is None else "",
        "runtime_ms": n.runtime_ms,
        "summary": summary,
        "duplicate_of": n.duplicate_of,
        "tokens": usage.tokens(n.usage),  # prompt + completion tokens of its agents; None: no agent call
        "tokens_text": usage.cell(n.usage),  # "12.3k tok, 41.0s" as stark show's tree gives it; "" without a call
        "seconds": n.usage.seconds if usage.time_text(n.usage) else None,  # the LLM's wall time; None: unmeasured
    }


def node_extra(tree: TreeView, n: NodeView) -> dict[str, Any]:
    return {
        "summary": n.summary,
        "gain_text": gain_text(tree, n) if n.correct or n.parent_id is None else "",
        "eager_text": eager_text(n) if n.correct else "",
        "reference_ms": n.reference_ms,
        "error": n.error,
        "profile": n.profile,
        "cpu": n.cpu_timed,
    }


def tree_json(tree: TreeView | None) -> dict[str, Any]:
    """The tree for ``stark/tree``: every node, light (the details come with ``stark/node``)."""
    if tree is None:
        return {"best": None, "usage": None, "usage_text": "", "nodes": []}
    best = tree.best
    root = tree.root
    return {
        "task_id": tree.task_id,
        "best": best.id if best else None,
        "baseline_ms": root.runtime_ms if root else None,
        "baseline": baseline_name(tree),
        "against": against(tree),
        "best_text": best_text(tree),
        "attempts": tree.spent,  # as the CLI's "attempt N/budget" and the hover count them
        "free": tree.finished - tree.spent,  # finished without spending budget: nothing new, or duplicates
        "correct": tree.correct,
        "failed": tree.failed,
        "cpu": tree.cpu,
        "usage": usage.as_json(tree.usage),  # the tree's agents' total; None for the built-in team
        "usage_text": usage.line(tree.usage),  # the same, as stark show's line; "" for the built-in team
        "nodes": [node_json(tree, n) for n in tree.nodes],
    }


def _diff(before: str, after: str, parent_id: int) -> str:
    lines = list(difflib.unified_diff(before.splitlines(), after.splitlines(), f"#{parent_id}", "this candidate",
                                      n=3, lineterm=""))[2:]  # the ---/+++ header says nothing here
    if not lines:
        return "(the same source as its parent)"
    if len(lines) > MAX_DIFF_LINES:
        lines = lines[:MAX_DIFF_LINES] + [f"… {len(lines) - MAX_DIFF_LINES} more diff lines"]
    return "\n".join(lines)


def why_not_apply(n: NodeView) -> str | None:
    """Why "Apply this candidate" is disabled for ``n`` (None: it can be applied)."""
    if n.parent_id is None:
        return "this is your kernel"
    if n.in_flight:
        return "still being evaluated"
    if n.nothing_new or not n.source:
        return "no candidate was made"
    if not n.correct:
        return "only verified candidates can be applied"
    return None


def node_detail(tree: TreeView, node_id: int) -> dict[str, Any] | None:
    n = tree.get(node_id)
    if n is None:
        return None
    parent = tree.get(n.parent_id) if n.parent_id is not None else None
    if n.parent_id is None:
        diff = "(the root: your kernel as it was when the search began)"
    elif n.nothing_new:
        diff = f"(no candidate: the agent had nothing new to try from #{n.parent_id})"
    elif not n.source:
        diff = f"(no candidate was made: {n.error or n.status})" if not n.in_flight else "(being made)"
    elif parent is None:
        diff = "(its parent is not in the tree)"
    else:
        diff = _diff(parent.source, n.source, parent.id)
    why = why_not_apply(n)
    return {
        "id": n.id,
        "source": n.source,
        "diff": diff,
        "can_apply": why is None,
        "why_not": why or "",
        **node_json(tree, n),
        **node_extra(tree, n),
    }
