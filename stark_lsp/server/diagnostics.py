"""textDocument/publishDiagnostics: what the search found, on the kernels.

* Information on each optimized kernel: the best verified candidate against
  the user's own kernel ("Best candidate #14: 2.41× your kernel (0.38 ms vs
  0.92 ms) ..."); once that candidate is in the document (after "Apply"), it
  says so instead of offering it again.
* Warning where the user's own kernel (the root) fails to build or verify: on
  the lines the compiler or the runtime named, while the document is still
  the text that was evaluated; an edit makes the error stale, so it goes
  (the next "Optimize kernel" checks the new text first).
* The file's problem (no harness, an unfilled ``reference()``, not a task, no
  GPU for a CUDA kernel, a harness that fails) on every kernel's name.
* At most ``MAX_DIAGNOSTICS``; past that, the last one says how many more.

``build_diagnostics`` is pure: document text, kernels, cached tree in; LSP
diagnostics out.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from lsprotocol import types

from stark_lsp.server.labels import baseline_name, eager_text, gain_text
from stark_lsp.server.text_edits import split_lines, utf16_len
from stark_lsp.server.trees import NodeView, TreeView
from stark_lsp.tasks.kernels import Kernel, find_kernels
from stark_lsp.tasks.spec import without_kernelbench_stub

SOURCE = "stark"
CODE_MISSING_HARNESS = "missing-harness"
CODE_UNFILLED_HARNESS = "unfilled-harness"
CODE_NOT_A_TASK = "not-a-task"
CODE_NEEDS_GPU = "needs-gpu"
CODE_RUN_FAILED = "search-failed"
CODE_BEST = "best-speedup"
CODE_APPLIED = "applied"
CODE_ROOT_FAILS = "kernel-fails"
CODE_MORE = "more"
MAX_DIAGNOSTICS = 50

_SEVERITY = {
    CODE_MISSING_HARNESS: types.DiagnosticSeverity.Error,
    CODE_UNFILLED_HARNESS: types.DiagnosticSeverity.Error,
    CODE_NOT_A_TASK: types.DiagnosticSeverity.Warning,
    CODE_NEEDS_GPU: types.DiagnosticSeverity.Information,
    CODE_RUN_FAILED: types.DiagnosticSeverity.Warning,
}


@dataclass(frozen=True)
class TaskProblem:
    """Why the file cannot be optimized as it is; shown on every kernel's name."""

    message: str
    missing_harness: bool = False
    harness_path: str | None = None  # where the harness is (or is expected)
    code: str = ""  # one of the CODE_* above; default: missing-harness or not-a-task

    @property
    def kind(self) -> str:
        return self.code or (CODE_MISSING_HARNESS if self.missing_harness else CODE_NOT_A_TASK)

    @property
    def blocks_search(self) -> bool:
        return self.kind != CODE_RUN_FAILED


def name_range(lines: list[str], k: Kernel) -> types.Range:
    line = lines[k.name_line] if k.name_line < len(lines) else ""
    start = utf16_len(line[: k.name_col])
    return types.Range(
        start=types.Position(line=k.name_line, character=start),
        end=types.Position(line=k.name_line, character=start + utf16_len(k.name)),
    )


def line_range(lines: list[str], line0: int) -> types.Range:
    line0 = min(max(line0, 0), max(len(lines) - 1, 0))
    text = lines[line0].rstrip("\r\n") if lines else ""
    indent = len(text) - len(text.lstrip())
    return types.Range(
        start=types.Position(line=line0, character=utf16_len(text[:indent])),
        end=types.Position(line=line0, character=utf16_len(text)),
    )


@functools.lru_cache(maxsize=64)
def changed_kernels(old: str, new: str, language: str) -> frozenset[str]:
    """Names of the kernels whose text differs between two sources (memoized:
    diagnostics are rebuilt on every keystroke and tree change)."""
    def texts(src: str) -> dict[str, str]:
        ls = split_lines(src)
        return {k.name: "".join(ls[k.start_line : k.end_line + 1]) for k in find_kernels(src, language)}

    a, b = texts(old), texts(new)
    return frozenset(name for name in a.keys() | b.keys() if a.get(name) != b.get(name))


def _norm(text: str) -> str:
    return text.replace("\r\n", "\n").rstrip()


def same_text(document: str, source: str) -> bool:
    """Whether ``document`` is ``source`` (a KernelBench root: without its ModelNew stub),
    trailing blank lines aside."""
    doc = _norm(document)
    if doc == _norm(source):
        return True
    bare = without_kernelbench_stub(source)
    return bare is not None and doc == _norm(bare)


def best_message(tree: TreeView) -> str | None:
    """"Best candidate #14: 2.41× your kernel (0.38 ms vs 0.92 ms); 14 attempts, 9 correct. ..."."""
    best = tree.best_candidate
    if best is None:
        return None
    root = tree.root
    counts = f"{tree.finished} attempts, {tree.correct} correct"
    ms = f" ({best.runtime_ms:.4g} ms vs {root.runtime_ms:.4g} ms)" if root and root.runtime_ms and best.runtime_ms else ""
    if tree.gain(best) is not None:
        msg = f"Best candidate #{best.id}: {gain_text(tree, best)}{ms}; {counts}"
        if not tree.baseline_is_reference:
            msg += f"; {eager_text(best, cpu_note=False)}"
    else:
        msg = f"Best candidate #{best.id}: {eager_text(best)} ({baseline_name(tree)} failed); {counts}"
    return msg + ". Apply it with “Apply best candidate”."


def applied_message(tree: TreeView, node: NodeView) -> str:
    gain = gain_text(tree, node)
    vs = gain.replace("your kernel", "your original kernel") if gain != "-" else eager_text(node)
    return (f"Candidate #{node.id} is in this file: {vs}. Save it; “Optimize kernel” then searches on from it "
            f"(the current tree is kept in .stark/).")


def _on_names(lines: list[str], kernels: list[Kernel], message: str, code: str,
              severity: types.DiagnosticSeverity, **data: object) -> list[types.Diagnostic]:
    return [
        types.Diagnostic(range=name_range(lines, k), message=message, severity=severity, source=SOURCE, code=code,
                         data={"kernel": k.name, **data})
        for k in kernels
    ]


def root_failure(text: str, lines: list[str], kernels: list[Kernel], root: NodeView) -> list[types.Diagnostic]:
    """The user's kernel failed: its errors on the compiler's lines while the
    document is the evaluated text, else nothing (the error is stale)."""
    if root.status in ("ok", "not_run", "pending", "running", "abandoned") or not same_text(text, root.source):
        return []
    why = f"your kernel fails the evaluation ({root.status.replace('_', ' ')}), so no search was started"
    out = []
    for p in root.problems:
        if p.line is None or (p.file and "harness" in p.file.rsplit("/", 1)[-1]) or p.line - 1 >= len(lines):
            continue
        out.append(types.Diagnostic(range=line_range(lines, p.line - 1), message=f"{why}: {p.message}",
                                    severity=types.DiagnosticSeverity.Warning, source=SOURCE, code=CODE_ROOT_FAILS))
    if not out:
        detail = root.error or (root.problems[0].message if root.problems else "")
        out = _on_names(lines, kernels, f"{why}: {detail}" if detail else why, CODE_ROOT_FAILS,
                        types.DiagnosticSeverity.Warning)
    return out


def cap(diags: list[types.Diagnostic], limit: int = MAX_DIAGNOSTICS) -> list[types.Diagnostic]:
    """At most ``limit`` diagnostics: the last one kept says how many more there are."""
    if len(diags) <= limit:
        return diags
    kept = diags[: limit - 1]
    last = diags[limit - 1]
    more = len(diags) - len(kept) - 1
    summary = types.Diagnostic(
        range=last.range, severity=last.severity, source=SOURCE, code=CODE_MORE,
        message=f"{last.message} (and {more} more STARK diagnostic{'s' if more != 1 else ''} in this file, "
                f"not shown: the first {limit} are)",
    )
    return kept + [summary]


def build_diagnostics(
    text: str,
    kernels: list[Kernel],
    language: str,
    tree: TreeView | None,
    problem: TaskProblem | None,
    checked_root: NodeView | None = None,
    lines: list[str] | None = None,
) -> list[types.Diagnostic]:
    """``checked_root``: the user's kernel as a check without a search saw it
    (a CUDA kernel compiled on a machine without a GPU)."""
    lines = split_lines(text) if lines is None else lines
    out: list[types.Diagnostic] = []
    if problem is not None:
        out += _on_names(lines, kernels, problem.message, problem.kind, _SEVERITY.get(problem.kind, types.DiagnosticSeverity.Warning))
    if checked_root is not None:
        out += root_failure(text, lines, kernels, checked_root)
    if tree is None or not kernels:
        return cap(out)
    root = tree.root
    best = tree.best_candidate
    if best is not None and same_text(text, best.source):
        out += _on_names(lines, kernels[:1], applied_message(tree, best), CODE_APPLIED,
                         types.DiagnosticSeverity.Information, node=best.id)
    elif best is not None:
        names = changed_kernels(root.source, best.source, language) if root is not None else set()
        targets = [k for k in kernels if k.name in names] or kernels[:1]
        out += _on_names(lines, targets, best_message(tree), CODE_BEST, types.DiagnosticSeverity.Information, node=best.id)
    if root is not None and checked_root is None:
        out += root_failure(text, lines, kernels, root)
    return cap(out)
