"""textDocument/codeAction: what the user can do with the kernel under the cursor.

Every action carries a command (stable names, also called by the VS Code
extension) and no edit: edits are computed when the user picks the action,
against the document as it is then (see ``apply_candidate.py``), so listing
actions stays cheap while a search runs.

``build_code_actions`` is pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lsprotocol import types

from stark_lsp.server.diagnostics import CODE_MISSING_HARNESS, SOURCE, TaskProblem
from stark_lsp.server.trees import NodeView, TreeView, fmt_x
from stark_lsp.tasks.kernels import Kernel

OPTIMIZE = "stark.optimize"
STOP = "stark.stop"
APPLY_BEST = "stark.applyBest"
APPLY_CANDIDATE = "stark.applyCandidate"
IMPLEMENT_MARKER = "stark.implementMarker"
CREATE_HARNESS = "stark.createHarness"
SET_API_KEY = "stark.setApiKey"
ALL_COMMANDS = (OPTIMIZE, STOP, APPLY_BEST, APPLY_CANDIDATE, IMPLEMENT_MARKER, CREATE_HARNESS, SET_API_KEY)

KIND_OPTIMIZE = types.CodeActionKind.RefactorRewrite
MORE_CANDIDATES = 3  # "Apply candidate #k" actions beside the best


@dataclass(frozen=True)
class MarkerSpan:
    id: str
    instruction: str
    first_line: int  # 0-based line of the begin comment
    last_line: int  # 0-based line of the end comment


def _ratio(tree: TreeView, node: NodeView) -> str:
    """Faster than the user's kernel when it was measured, else against the reference."""
    gain = tree.gain(node)
    return f"{gain:.2f}×" if gain is not None else f"{fmt_x(node.speedup)} the reference"


def _action(title: str, kind: str, command: str, args: list[Any], **kw: Any) -> types.CodeAction:
    return types.CodeAction(
        title=title,
        kind=kind,
        command=types.Command(title=title, command=command, arguments=args),
        **kw,
    )


def build_code_actions(
    uri: str,
    kernels: list[Kernel],
    markers: list[MarkerSpan],
    tree: TreeView | None,
    problem: TaskProblem | None,
    running_kernel: str | None,
    context_diagnostics: list[types.Diagnostic] = (),
    harness_name: str = "the harness",
) -> list[types.CodeAction]:
    """Actions for the kernels and markers that overlap the requested range.

    ``running_kernel``: the kernel whose search runs for this file, if any (one
    search per file: the search optimizes the whole file)."""
    actions: list[types.CodeAction] = []
    for k in kernels:
        if problem is not None:
            if problem.missing_harness:
                diags = [
                    d for d in context_diagnostics
                    if d.source == SOURCE and d.code == CODE_MISSING_HARNESS
                ]
                actions.append(
                    _action(
                        f"Create {harness_name} for {k.name}",
                        types.CodeActionKind.QuickFix,
                        CREATE_HARNESS,
                        [uri, k.name],
                        diagnostics=diags or None,
                        is_preferred=True,
                    )
                )
            continue
        if running_kernel is not None:
            actions.append(_action(f"Stop optimizing {running_kernel}", KIND_OPTIMIZE, STOP, [uri, k.name]))
        else:
            actions.append(_action(f"Optimize kernel {k.name}", KIND_OPTIMIZE, OPTIMIZE, [uri, k.name]))
    if kernels and tree is not None and problem is None:
        first = kernels[0].name
        best = tree.best_candidate
        if best is not None:
            actions.append(
                _action(
                    f"Apply best candidate ({_ratio(tree, best)})",
                    KIND_OPTIMIZE,
                    APPLY_BEST,
                    [uri, first],
                    is_preferred=True,
                )
            )
        others = [n for n in tree.ranked_candidates() if best is None or n.id != best.id]
        root = tree.root
        for n in others[:MORE_CANDIDATES]:
            if root is not None and root.speedup is not None and n.speedup <= root.speedup:
                break  # slower than the user's own kernel
            actions.append(
                _action(f"Apply candidate #{n.id} ({_ratio(tree, n)})", KIND_OPTIMIZE, APPLY_CANDIDATE, [uri, first, n.id])
            )
    for m in markers:
        actions.append(
            _action(
                f"Implement with the Code agent (marker {m.id})",
                KIND_OPTIMIZE,
                IMPLEMENT_MARKER,
                [uri, m.id],
            )
        )
    return actions
