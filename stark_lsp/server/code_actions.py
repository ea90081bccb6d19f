"""textDocument/codeAction: what the user can do with the kernel under the cursor.

Every action carries a command (stable names, also called by the VS Code
extension) and no edit: edits are computed when the user picks the action,
against the document as it is then (see ``apply_candidate.py``), so listing
actions stays cheap while a search runs.

"Optimize" is never silently missing: where it cannot run (not a task yet, a
syntax error, no GPU, not on disk) it is offered *disabled* with why (LSP's
``disabled.reason``); a client that does not announce
``codeAction.disabledSupport`` (Neovim 0.7) gets instead an enabled
"STARK: cannot optimize here: <why>" whose command (``stark.whyNot``) only
shows the reason.

``build_code_actions`` is pure: it gets everything it needs in a
``CodeActionContext`` built by the server.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lsprotocol import types

from stark_lsp.server.commands import (APPLY_BEST, APPLY_CANDIDATE, CONTINUE, CREATE_HARNESS, IMPLEMENT_MARKER,
                                       OPTIMIZE, RENAME_HARNESS, SHOW_HARNESS, STOP, WHY_NOT)
from stark_lsp.server.diagnostics import (CODE_MISSING_HARNESS, CODE_UNFILLED_HARNESS, SOURCE, TaskProblem,
                                          same_text)
from stark_lsp.server.labels import gain_text
from stark_lsp.search.node_view import NodeView
from stark_lsp.search.tree_view import TreeView
from stark_lsp.tasks.kernels import Kernel

KIND_OPTIMIZE = types.CodeActionKind.RefactorRewrite
MORE_CANDIDATES = 3  # "Apply candidate #k" actions beside the best
CANNOT = "STARK: cannot optimize here: "  # the title of a disabled action, for a client that cannot show one
TITLE_REASON_CHARS = 120  # the reason in such a title; its command shows the whole of it


@dataclass(frozen=True)
class MarkerSpan:
    id: str
    instruction: str
    first_line: int  # 0-based line of the begin comment
    last_line: int  # 0-based line of the end comment


@dataclass
class ActionContext:
    """What the server knows about the document, for the actions at a range."""

    uri: str
    text: str
    kernels: list[Kernel]  # the kernels overlapping the range
    markers: list[MarkerSpan] = field(default_factory=list)
    tree: TreeView | None = None
    problem: TaskProblem | None = None
    running_kernel: str | None = None  # the kernel whose search runs for this file (one search per file)
    diagnostics: list[types.Diagnostic] = field(default_factory=list)  # the client's, at the range
    harness_name: str = "the harness"
    orphan_harness: str | None = None  # a harness left under the file's old name by a rename
    continue_by: int | None = None  # the budget is spent: offer "Continue search (+N)"
    cannot_run: str = ""  # why no search can run here at all (e.g. "needs an NVIDIA GPU"): a disabled action
    disabled_support: bool = True  # the client shows disabled actions (codeAction.disabledSupport)


def _action(title: str, kind: str, command: str, args: list[Any], **kw: Any) -> types.CodeAction:
    return types.CodeAction(
        title=title,
        kind=kind,
        command=types.Command(title=title, command=command, arguments=args),
        **kw,
    )


def _ours(diags: list[types.Diagnostic], code: str) -> list[types.Diagnostic] | None:
    return [d for d in diags if d.source == SOURCE and d.code == code] or None


def _problem_fixes(c: ActionContext, k: Kernel) -> list[types.CodeAction]:
    p = c.problem
    if p is None:
        return []
    if p.kind == CODE_MISSING_HARNESS:
        fixes = []
        if c.orphan_harness:
            fixes.append(_action(f"Rename {c.orphan_harness} to {c.harness_name} (the harness of the old name)",
                                 types.CodeActionKind.QuickFix, RENAME_HARNESS, [c.uri],
                                 diagnostics=_ours(c.diagnostics, CODE_MISSING_HARNESS), is_preferred=True))
        fixes.append(_action(f"Create {c.harness_name} for {k.name}", types.CodeActionKind.QuickFix, CREATE_HARNESS,
                             [c.uri, k.name], diagnostics=_ours(c.diagnostics, CODE_MISSING_HARNESS),
                             is_preferred=not c.orphan_harness))
        return fixes
    if p.kind == CODE_UNFILLED_HARNESS:
        return [_action(f"Fill in {c.harness_name}", types.CodeActionKind.QuickFix, SHOW_HARNESS, [c.uri],
                        diagnostics=_ours(c.diagnostics, CODE_UNFILLED_HARNESS), is_preferred=True)]
    return []


def _disabled(c: ActionContext, k: Kernel, title: str, reason: str) -> types.CodeAction:
    """An action that cannot be taken now, with why (LSP's ``disabled.reason``): never a silent missing one.
    A client without ``disabledSupport`` would show it as if it could run (or not at all): it gets an
    action that says why in its title, and whose command shows the reason."""
    first = next((ln.strip() for ln in reason.splitlines() if ln.strip()), reason)[:300]
    if c.disabled_support:
        return types.CodeAction(title=title, kind=KIND_OPTIMIZE, disabled=types.CodeActionDisabled(reason=first))
    short = first if len(first) <= TITLE_REASON_CHARS else first[: TITLE_REASON_CHARS - 1].rstrip() + "…"
    return _action(f"{CANNOT}{short}", KIND_OPTIMIZE, WHY_NOT, [c.uri, k.name, first])


def _applied(c: ActionContext, node: NodeView) -> bool:
    return same_text(c.text, node.source)


def build_code_actions(c: ActionContext) -> list[types.CodeAction]:
    """Actions for the kernels and markers that overlap the requested range."""
    actions: list[types.CodeAction] = []
    blocked = c.problem is not None and c.problem.blocks_search
    for k in c.kernels:
        if c.running_kernel is not None:  # a search runs (even if the file was since saved broken): it can stop
            actions.append(_action(f"Stop optimizing {c.running_kernel}", KIND_OPTIMIZE, STOP, [c.uri, k.name]))
        elif blocked:
            fixes = _problem_fixes(c, k)
            actions += fixes or [_disabled(c, k, f"Optimize kernel {k.name}", c.problem.message)]
        elif c.cannot_run:
            actions.append(_disabled(c, k, f"Optimize kernel {k.name}", c.cannot_run))
            # what can be done here: the same command compiles it (nvcc) and says what it found
            actions.append(_action(f"Check that {k.name} compiles (no GPU here to run it)", KIND_OPTIMIZE, OPTIMIZE,
                                   [c.uri, k.name]))
        elif c.continue_by:
            actions.append(_action(f"Continue search for {k.name} (+{c.continue_by} attempts)", KIND_OPTIMIZE,
                                   CONTINUE, [c.uri, k.name, c.continue_by]))
        else:
            actions.append(_action(f"Optimize kernel {k.name}", KIND_OPTIMIZE, OPTIMIZE, [c.uri, k.name]))
    tree = c.tree
    if c.kernels and tree is not None and not blocked:
        first = c.kernels[0].name
        best = tree.best_candidate
        if best is not None and not _applied(c, best):
            actions.append(_action(f"Apply best candidate: {gain_text(tree, best)}", KIND_OPTIMIZE, APPLY_BEST,
                                   [c.uri, first], is_preferred=True))
        others = [n for n in tree.ranked_candidates() if best is None or n.id != best.id]
        for n in others[:MORE_CANDIDATES]:
            gain = tree.gain(n)
            if gain is not None and gain <= 1.0:
                break  # not faster than the user's own kernel
            if not _applied(c, n):
                actions.append(_action(f"Apply candidate #{n.id}: {gain_text(tree, n)}", KIND_OPTIMIZE,
                                       APPLY_CANDIDATE, [c.uri, first, n.id]))
    for m in c.markers:
        actions.append(_action(f"Implement with the Code agent (marker {m.id})", KIND_OPTIMIZE, IMPLEMENT_MARKER,
                               [c.uri, m.id]))
    return actions
