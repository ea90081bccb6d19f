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
  GPU for a CUDA kernel, a harness that fails) on every kernel's name; where a
  search stopped because the task itself is broken, also an error on the
  harness's line the judge named (``task_error_place``, published by the server).
* At most ``MAX_DIAGNOSTICS``; past that, the last one says how many more.

``build_diagnostics`` is pure: document text, kernels, cached tree in; LSP
diagnostics out.
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass

from lsprotocol import types

from stark_lsp.server.labels import baseline_name, eager_text, gain_text
from stark_lsp.server.text_edits import split_lines, utf16_len
from stark_lsp.search.node_view import NodeView
from stark_lsp.search.tree_view import TreeView
from stark_lsp.tasks.kernels import Kernel
from stark_lsp.tasks.spec import KERNELBENCH_STUB, without_kernelbench_stub

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
CODE_HELPER = "helper"  # a Triton module another kernel's file imports: not a task of its own
CODE_TASK_BROKEN = "task-broken"  # on the harness line where the task's own code failed
CODE_NOT_ON_DISK = "not-on-disk"  # the file was removed outside the editor: no diagnostic, a disabled action says it
MAX_DIAGNOSTICS = 50

_SEVERITY = {
    CODE_MISSING_HARNESS: types.DiagnosticSeverity.Error,
    CODE_UNFILLED_HARNESS: types.DiagnosticSeverity.Error,
    CODE_NOT_A_TASK: types.DiagnosticSeverity.Warning,
    CODE_HELPER: types.DiagnosticSeverity.Hint,
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
    users: tuple = ()  # a helper module's (CODE_HELPER) users, ``helper_modules.HelperUser``s: "Optimize" searches them

    @property
    def kind(self) -> str:
        return self.code or (CODE_MISSING_HARNESS if self.missing_harness else CODE_NOT_A_TASK)

    @property
    def blocks_search(self) -> bool:
        """No search can start until the file (or its harness) changes."""
        return self.kind in (CODE_MISSING_HARNESS, CODE_UNFILLED_HARNESS, CODE_NOT_A_TASK, CODE_HELPER,
                             CODE_NOT_ON_DISK)

    @property
    def shown_on_kernels(self) -> bool:
        """Published on the kernels' names; a file gone from the disk keeps no diagnostic (its tab
        says it is deleted; "Optimize" says why it cannot run)."""
        return self.kind != CODE_NOT_ON_DISK


_PLACE = re.compile(r"\(([^(),\n]+), line (\d+)[:)]")


def task_error_place(message: str) -> tuple[str, int] | None:
    """Where a broken task's message says the task's own code failed (the judge names it
    ``(foo.harness.py, line 12: ...)``): (file name, 1-based line), the last place named; None if none."""
    found = _PLACE.findall(message)
    if not found:
        return None
    name, line = found[-1]
    return name.strip(), int(line)


def broken_task_diagnostic(line1: int, message: str) -> types.Diagnostic:
    """The error on the task's own line (a harness's ``reference`` that raised, or that the task's
    inputs cannot call): the search stopped there, and nothing is judged until it is fixed."""
    return types.Diagnostic(
        range=types.Range(start=types.Position(line=max(line1 - 1, 0), character=0),
                          end=types.Position(line=max(line1 - 1, 0), character=10_000)),
        message=f"{message}: fix it here, save, and optimize again", severity=types.DiagnosticSeverity.Error,
        source=SOURCE, code=CODE_TASK_BROKEN)


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


def _common_prefix(a: str, b: str) -> int:
    """Length of the common prefix, by halving (each step one C comparison)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str) -> int:
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid: len(a) - lo] == b[len(b) - mid: len(b) - lo]:
            lo = mid
        else:
            hi = mid - 1
    return lo


@functools.lru_cache(maxsize=64)
def changed_lines(old: str, new: str) -> tuple[tuple[int, int], ...]:
    """The 0-based line ranges [start, end) of ``old`` that differ in ``new``
    (memoized: diagnostics are rebuilt on every tree change). The common head
    and tail are found by comparing halves of the texts, so two versions of a
    big file that differ in a few lines cost a few comparisons, not a diff."""
    if old == new:
        return ()
    pre = _common_prefix(old, new)
    pre = old.rfind("\n", 0, pre) + 1  # back to the start of the first line that differs
    common_tail = old[len(old) - _common_suffix(old[pre:], new[pre:]):]
    nl = common_tail.find("\n")
    tail = len(common_tail) - (nl + 1) if nl >= 0 else 0  # whole lines only
    head = old.count("\n", 0, pre)
    a_mid = old[pre: len(old) - tail].split("\n")
    b_mid = new[pre: len(new) - tail].split("\n")
    if len(a_mid) * len(b_mid) > 4_000_000:  # far-apart changes in a huge file: one range
        return ((head, head + max(1, len(a_mid))),)
    out = []
    for tag, i1, i2, _j1, _j2 in difflib.SequenceMatcher(None, a_mid, b_mid, autojunk=False).get_opcodes():
        if tag != "equal":
            out.append((head + i1, head + max(i2, i1 + 1)))
    return tuple(out)


def changed_kernels(old: str, new: str, kernels: list[Kernel]) -> list[Kernel]:
    """The kernels (as found in ``old``) whose lines differ in ``new``."""
    ranges = changed_lines(old, new)
    return [k for k in kernels if any(a <= k.end_line and k.start_line < b for a, b in ranges)]


def _norm(text: str) -> str:
    return text.replace("\r\n", "\n").rstrip()


def same_text(document: str, source: str) -> bool:
    """Whether ``document`` is ``source`` (a KernelBench root: without its ModelNew stub),
    trailing blank lines aside."""
    if document == source:
        return True
    if abs(len(document) - len(source)) > len(KERNELBENCH_STUB) + 64:  # cheap "no" for big files
        return False
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
    counts = tree.counts
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
    if not root.failed or not same_text(text, root.source):
        return []
    why = f"your kernel fails the evaluation ({root.status.replace('_', ' ')}), so no search was started"
    out = []
    for p in root.problems:
        if p.line is None or (p.file and "harness" in p.file.rsplit("/", 1)[-1]) or p.line - 1 >= len(lines):
            continue
        if in_other_file(p):
            continue  # published on that file (other_file_failures)
        out.append(types.Diagnostic(range=line_range(lines, p.line - 1), message=f"{why}: {p.message}",
                                    severity=types.DiagnosticSeverity.Warning, source=SOURCE, code=CODE_ROOT_FAILS))
    if not out:
        detail = root.error or (root.problems[0].message if root.problems else "")
        out = _on_names(lines, kernels, f"{why}: {detail}" if detail else why, CODE_ROOT_FAILS,
                        types.DiagnosticSeverity.Warning)
    return out


OTHER_FILE_SUFFIXES = (".cuh", ".h", ".hh", ".hpp", ".hxx", ".inl", ".ipp", ".tcc", ".cu", ".cpp", ".cc", ".cxx", ".c")


def in_other_file(p: object) -> bool:
    """A compiler message located in a project file other than the kernel (a header, another unit):
    the builder reports those with their absolute path; the kernel's own messages name ``kernel.cu``."""
    f = getattr(p, "file", None) or ""
    return f.startswith("/") and f.endswith(OTHER_FILE_SUFFIXES) and getattr(p, "line", None) is not None


def other_file_failures(text: str, root: NodeView | None, kernel_name: str) -> dict[str, list[types.Diagnostic]]:
    """The user's kernel failed to build because of errors in a header (or another unit): those
    errors by file path, each on its line, while the document is the evaluated text."""
    if root is None or not root.failed or not same_text(text, root.source):
        return {}
    out: dict[str, list[types.Diagnostic]] = {}
    for p in root.problems:
        if not in_other_file(p):
            continue
        line0 = max(0, int(p.line or 1) - 1)
        sev = types.DiagnosticSeverity.Warning if p.severity == "warning" else types.DiagnosticSeverity.Error
        out.setdefault(str(p.file), []).append(types.Diagnostic(
            range=types.Range(start=types.Position(line=line0, character=0), end=types.Position(line=line0, character=10_000)),
            message=f"{kernel_name} does not build ({root.status.replace('_', ' ')}): {p.message}",
            severity=sev, source=SOURCE, code=CODE_ROOT_FAILS))
    return {f: cap(d) for f, d in out.items()}


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
    if problem is not None and problem.shown_on_kernels:
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
        # the kernels the best candidate changed, placed as in the document when it is the root's text
        base = text if root is None or same_text(text, root.source) else root.source
        targets = (changed_kernels(base, best.source, kernels) if root is not None else []) or kernels[:1]
        out += _on_names(lines, targets, best_message(tree), CODE_BEST, types.DiagnosticSeverity.Information, node=best.id)
    if root is not None and checked_root is None:
        out += root_failure(text, lines, kernels, root)
    return cap(out)
