"""Every speedup the editor shows, in the one labelled form of ``stark_lsp/speedups.py``.

Hover, diagnostics, code action titles, progress, notifications and the tree
view (through ``stark/tree``) all take their numbers from here, so a figure
always says what it is against:

* ``2.35× your kernel``: against the tree's root (``TreeView.gain``);
* for a KernelBench file the root *is* the reference (eager PyTorch), so the
  same figure is ``2.35× eager``, and the root itself is "the baseline", never
  a speedup against itself;
* ``(CPU interpreter: for checking, not speed)`` (``speedups.CPU_NOTE``) whenever the timings came from the CPU.

Pure.
"""

from __future__ import annotations

from stark_lsp.search.node_view import NodeView
from stark_lsp.search.tree_view import TreeView
from stark_lsp.speedups import ratio_text, speedup_text

BASELINE = "baseline"


def against(tree: TreeView) -> str:
    """The speedups.py baseline key for "faster than the user's kernel"."""
    return "eager" if tree.baseline_is_reference else "yours"


def baseline_name(tree: TreeView) -> str:
    return "your Model (eager PyTorch, the reference)" if tree.baseline_is_reference else "your kernel"


def gain_text(tree: TreeView, node: NodeView, cpu_note: bool = True) -> str:
    """``2.35× your kernel (CPU interpreter: for checking, not speed)``; ``baseline`` for the root; ``-`` unknown."""
    if node.parent_id is None:
        return BASELINE
    return speedup_text(tree.gain(node), against(tree), cpu=cpu_note and node.cpu_timed, degenerate=bool(node.degenerate))


def gain_ratio(tree: TreeView, node: NodeView) -> str:
    """The bare ratio for a column headed "× yours" (or a tree node's label)."""
    if node.parent_id is None:
        return BASELINE
    return ratio_text(tree.gain(node))


def eager_text(node: NodeView, cpu_note: bool = True) -> str:
    """Against the harness reference: ``0.0049× eager (CPU interpreter: for checking, not speed)``."""
    if node.is_reference_itself:
        return "the reference itself (eager)"
    return speedup_text(node.eager, "eager", cpu=cpu_note and node.cpu_timed, degenerate=bool(node.degenerate))


def best_text(tree: TreeView, cpu_note: bool = True) -> str:
    """``best 2.35× your kernel (#14)`` or why there is none yet."""
    best = tree.best_candidate
    if best is not None:
        return f"best {gain_text(tree, best, cpu_note)} (#{best.id})"
    root = tree.root
    if root is not None and root.correct and tree.correct:
        return f"nothing beats {baseline_name(tree)} yet"
    return "no correct candidate yet"
