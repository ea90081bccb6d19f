"""textDocument/publishDiagnostics: what the search found, on the kernels.

* Information on each optimized kernel: the best verified candidate against
  the user's own kernel ("2.41× faster than your kernel: 0.38 ms vs 0.92 ms,
  14 attempts, 9 correct"), and its speedup over the harness reference.
* Warning where the user's own kernel (the root) fails: on the lines the
  compiler or the runtime named when the document is still what was
  evaluated, else on the kernel names.
* Error on every kernel of a file whose harness is missing (quick fix:
  ``stark.createHarness``), Warning when the file is not a usable task.

``build_diagnostics`` is pure: document text, kernels, cached tree in; LSP
diagnostics out.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from lsprotocol import types

from stark_lsp.server.text_edits import split_lines, utf16_len
from stark_lsp.server.trees import TreeView, fmt_x
from stark_lsp.tasks.kernels import Kernel, find_kernels

SOURCE = "stark"
CODE_MISSING_HARNESS = "missing-harness"
CODE_NOT_A_TASK = "not-a-task"
CODE_BEST = "best-speedup"
CODE_ROOT_FAILS = "kernel-fails"


@dataclass(frozen=True)
class TaskProblem:
    message: str
    missing_harness: bool = False
    harness_path: str | None = None  # where the harness is expected


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


def best_message(tree: TreeView) -> str | None:
    """"2.41× faster than your kernel: 0.38 ms vs 0.92 ms, 14 attempts, 9 correct"."""
    best = tree.best_candidate
    if best is None:
        return None
    root = tree.root
    gain = tree.gain(best)
    counts = f"{tree.finished} attempts, {tree.correct} correct"
    if gain is not None:
        msg = f"{gain:.2f}× faster than your kernel: {best.runtime_ms:.4g} ms vs {root.runtime_ms:.4g} ms, {counts}"
        msg += f" ({fmt_x(best.speedup)} the reference)"
    else:
        ref = f" vs {best.reference_ms:.4g} ms" if best.reference_ms is not None else ""
        msg = f"{fmt_x(best.speedup)} the reference: {best.runtime_ms:.4g} ms{ref}, {counts}"
    if best.on_gpu is False:
        msg += "; CPU interpreter timing, not a GPU figure"
    return msg + f". Apply it with “Apply best candidate” (#{best.id})."


def build_diagnostics(
    text: str,
    kernels: list[Kernel],
    language: str,
    tree: TreeView | None,
    problem: TaskProblem | None,
) -> list[types.Diagnostic]:
    lines = split_lines(text)
    out: list[types.Diagnostic] = []
    if problem is not None:
        for k in kernels:
            out.append(
                types.Diagnostic(
                    range=name_range(lines, k),
                    message=problem.message,
                    severity=types.DiagnosticSeverity.Error if problem.missing_harness else types.DiagnosticSeverity.Warning,
                    source=SOURCE,
                    code=CODE_MISSING_HARNESS if problem.missing_harness else CODE_NOT_A_TASK,
                    data={"kernel": k.name},
                )
            )
    if tree is None or not kernels:
        return out
    root = tree.root
    msg = best_message(tree)
    if msg is not None:
        best = tree.best_candidate
        names = changed_kernels(root.source, best.source, language) if root is not None else set()
        targets = [k for k in kernels if k.name in names] or kernels[:1]
        for k in targets:
            out.append(
                types.Diagnostic(
                    range=name_range(lines, k),
                    message=msg,
                    severity=types.DiagnosticSeverity.Information,
                    source=SOURCE,
                    code=CODE_BEST,
                    data={"kernel": k.name, "node": best.id},
                )
            )
    if root is not None and root.status not in ("ok", "not_run", "pending", "running", "abandoned"):
        why = f"your kernel fails the evaluation ({root.status.replace('_', ' ')})"
        placed = False
        if text == root.source:
            for p in root.problems:
                if p.line is None or (p.file and "harness" in p.file.rsplit("/", 1)[-1]):
                    continue
                out.append(
                    types.Diagnostic(
                        range=line_range(lines, p.line - 1),
                        message=f"{why}: {p.message}",
                        severity=types.DiagnosticSeverity.Warning,
                        source=SOURCE,
                        code=CODE_ROOT_FAILS,
                    )
                )
                placed = True
        if not placed:
            detail = root.error or (root.problems[0].message if root.problems else "")
            for k in kernels:
                out.append(
                    types.Diagnostic(
                        range=name_range(lines, k),
                        message=f"{why}: {detail}" if detail else why,
                        severity=types.DiagnosticSeverity.Warning,
                        source=SOURCE,
                        code=CODE_ROOT_FAILS,
                        data={"kernel": k.name},
                    )
                )
    return out
