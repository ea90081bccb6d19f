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
shows the reason. Where a quick fix makes the file a task (create or fill in
its harness), "Optimize" is offered disabled beside it, saying which file to
write. On a helper module (``helper_modules.py``) "Optimize" offers the
search of each task file that uses it ("Optimize kernel k (via ops/k.py,
which uses this helper)", ``stark.optimizeHelperUser``), or to stop it while
it runs.

``build_code_actions`` is pure: it gets everything it needs in an
``ActionContext``, which ``action_context`` gathers from the host (the
document, its tree, its running search, the client's capabilities); the
handler in ``server.py`` only waits for the document's task.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types

from stark_lsp.markers.syntax import MarkerError, parse_markers
from pygls.uris import from_fs_path

from stark_lsp.server.commands import (APPLY_BEST, APPLY_CANDIDATE, CONTINUE, CREATE_HARNESS, IMPLEMENT_MARKER,
                                       OPTIMIZE, OPTIMIZE_HELPER_USER, RENAME_HARNESS, SHOW_HARNESS, STOP, WHY_NOT)
from stark_lsp.server.diagnostics import (CODE_HELPER, CODE_MISSING_HARNESS, CODE_UNFILLED_HARNESS, SOURCE,
                                          TaskProblem, same_text)
from stark_lsp.server.documents import DocState, line_before_edits
from stark_lsp.server.host import Host
from stark_lsp.server.labels import gain_text
from stark_lsp.search.node_view import NodeView
from stark_lsp.search.tree_view import FASTER, TreeView, outcome
from stark_lsp.tasks.gpu_need import gpu_need
from stark_lsp.tasks.kernels import Kernel, kernels_in_range
from stark_lsp.tasks.spec import default_harness_path

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


@dataclass(frozen=True)
class HelperUserTarget:
    """A task file that uses the helper module the actions are asked for: what "Optimize" there searches."""

    uri: str  # its open document's uri, else its path's
    shown: str  # how the helper's hint names it
    kernel: str  # its kernel that calls the helper
    running: str | None = None  # the kernel of its search, while one runs


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
    helper_users: list[HelperUserTarget] = field(default_factory=list)  # a helper module's users


def marker_spans(text: str) -> tuple[list[MarkerSpan], str | None]:
    """The document's markers (0-based lines), or ([], why) if they are broken."""
    try:
        return [MarkerSpan(m.id, m.instruction, m.begin_line - 1, m.end_line - 1) for m in parse_markers(text)], None
    except MarkerError as e:
        return [], str(e)


def disabled_actions_shown(capabilities: Any) -> bool:
    """Whether the client shows a code action's ``disabled.reason`` (``codeAction.disabledSupport``;
    VS Code announces it, Neovim 0.7 does not)."""
    text_document = getattr(capabilities, "text_document", None)
    code_action = getattr(text_document, "code_action", None) if text_document is not None else None
    return bool(getattr(code_action, "disabled_support", False))


def action_context(host: Host, state: DocState, r: types.Range, diagnostics: list[types.Diagnostic]) -> ActionContext:
    """What the actions at ``r`` (the client's lines now) depend on, read from the host."""
    kernels = kernels_in_range(state.kernels, line_before_edits(r.start.line, state.edits),
                               line_before_edits(r.end.line, state.edits))
    text = host.document_text(state.uri)
    markers, _ = marker_spans(text) if kernels and "@stark" in text else ([], None)
    markers = [m for m in markers if m.first_line <= r.end.line and r.start.line <= m.last_line]
    job = host.jobs.for_document(state)
    problem = state.shown_problem
    harness = Path(problem.harness_path).name if problem and problem.harness_path else (
        default_harness_path(state.path).name if state.path else "the harness")
    tree = host.cache.get(state.task_id)
    continue_by = None
    stored = host.cache.harness_digests.get(state.task_id)
    if job is None and tree is not None and tree.root is not None and tree.finished >= host.settings.budget \
            and same_text(text, tree.root.source) and (stored is None or stored == state.harness_digest):
        continue_by = host.settings.budget
    orphan = host.moves.orphan_of(state.path)
    cannot_run = ""
    if job is None and kernels and state.task is not None and gpu_need(state.task) \
            and not host.backend.gpu_available(host.settings):
        # offered disabled with why, not offered and refused again at each try
        cannot_run = ("needs an NVIDIA GPU: nothing can be run or timed here (nvcc still compiles it: "
                      "stark eval --compile-only)")
    return ActionContext(state.uri, text, kernels, markers, tree, problem, job.kernel if job else None,
                         list(diagnostics), harness, orphan.name if orphan else None, continue_by, cannot_run,
                         disabled_actions_shown(host.client_capabilities),
                         helper_targets(host, problem) if kernels else [])


def helper_targets(host: Host, problem: TaskProblem | None) -> list[HelperUserTarget]:
    """A helper module's users (``TaskProblem.users``) as its actions name them: by the open document's uri
    where the editor has the file open, with the search that runs on it, if one does."""
    if problem is None or problem.kind != CODE_HELPER:
        return []
    out = []
    for u in problem.users:
        path = Path(u.path)
        state = next((s for s in host.docs.values() if s.path == path), None)
        uri = state.uri if state is not None else from_fs_path(u.path)
        job = host.jobs.find(uri, state.task_id if state is not None else None, path)
        out.append(HelperUserTarget(uri, u.shown, u.kernel, job.kernel if job is not None else None))
    return out


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
    """The quick fixes that make the file a task, and beside them "Optimize" disabled with which file to
    write (a client that cannot show a disabled action has the fix, which says as much)."""
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
        first = (f"rename {c.orphan_harness} to {c.harness_name} (the harness of the old name), or create "
                 f"{c.harness_name}" if c.orphan_harness else f"create {c.harness_name}")
        why = (f"{first} first: the harness says what {k.name} must compute (reference) and on which inputs "
               f"(get_inputs); “Create {c.harness_name}” writes one beside it to fill in")
        return fixes + ([_disabled(c, k.name, f"Optimize kernel {k.name}", why)] if c.disabled_support else [])
    if p.kind == CODE_UNFILLED_HARNESS:
        fill = _action(f"Fill in {c.harness_name}", types.CodeActionKind.QuickFix, SHOW_HARNESS, [c.uri],
                       diagnostics=_ours(c.diagnostics, CODE_UNFILLED_HARNESS), is_preferred=True)
        return [fill] + ([_disabled(c, k.name, f"Optimize kernel {k.name}", p.message)] if c.disabled_support else [])
    return []


def _helper_actions(c: ActionContext) -> list[types.CodeAction]:
    """On a helper module: the search of each task file that uses it, or its Stop while it runs."""
    out = []
    for u in c.helper_users:
        if u.running is not None:
            out.append(_action(f"Stop optimizing {u.running} (in {u.shown}, which uses this helper)", KIND_OPTIMIZE,
                               STOP, [u.uri, u.running]))
        else:
            out.append(_action(f"Optimize kernel {u.kernel} (via {u.shown}, which uses this helper)", KIND_OPTIMIZE,
                               OPTIMIZE_HELPER_USER, [c.uri, u.uri, u.kernel]))
    return out


MARKER_WHILE_SEARCHING = "a search is running on this kernel: stop it first (a marker's attempt writes the same tree)"


def _disabled(c: ActionContext, name: str, title: str, reason: str) -> types.CodeAction:
    """An action that cannot be taken now, with why (LSP's ``disabled.reason``): never a silent missing one.
    A client without ``disabledSupport`` would show it as if it could run (or not at all): it gets an
    action that says why in its title, and whose command shows the reason."""
    first = next((ln.strip() for ln in reason.splitlines() if ln.strip()), reason)[:300]
    if c.disabled_support:
        return types.CodeAction(title=title, kind=KIND_OPTIMIZE, disabled=types.CodeActionDisabled(reason=first))
    short = first if len(first) <= TITLE_REASON_CHARS else first[: TITLE_REASON_CHARS - 1].rstrip() + "…"
    return _action(f"{CANNOT}{short}", KIND_OPTIMIZE, WHY_NOT, [c.uri, name, first])


def _applied(c: ActionContext, node: NodeView) -> bool:
    return same_text(c.text, node.source)


def build_code_actions(c: ActionContext) -> list[types.CodeAction]:
    """Actions for the kernels and markers that overlap the requested range."""
    actions: list[types.CodeAction] = []
    blocked = c.problem is not None and c.problem.blocks_search
    # a helper module: its users' searches, offered once whichever of its functions is under the cursor
    helper = _helper_actions(c) if c.kernels and c.running_kernel is None else []
    actions += helper
    for k in [] if helper else c.kernels:
        if c.running_kernel is not None:  # a search runs (even if the file was since saved broken): it can stop
            actions.append(_action(f"Stop optimizing {c.running_kernel}", KIND_OPTIMIZE, STOP, [c.uri, k.name]))
        elif blocked:
            fixes = _problem_fixes(c, k)
            actions += fixes or [_disabled(c, k.name, f"Optimize kernel {k.name}", c.problem.message)]
        elif c.cannot_run:
            actions.append(_disabled(c, k.name, f"Optimize kernel {k.name}", c.cannot_run))
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
            if outcome(tree, n) != FASTER:
                break  # not faster than the user's own kernel (ranked fastest first: nor is any after it)
            if not _applied(c, n):
                actions.append(_action(f"Apply candidate #{n.id}: {gain_text(tree, n)}", KIND_OPTIMIZE,
                                       APPLY_CANDIDATE, [c.uri, first, n.id]))
    for m in c.markers:
        title = f"Implement with the Code agent (marker {m.id})"
        if c.running_kernel is not None:  # its attempt would write the tree the running search writes
            actions.append(_disabled(c, c.running_kernel, title, MARKER_WHILE_SEARCHING))
            continue
        actions.append(_action(title, KIND_OPTIMIZE, IMPLEMENT_MARKER, [c.uri, m.id]))
    return actions
