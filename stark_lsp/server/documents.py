"""What the server tracks per open document (didOpen / didChange / didSave).

Kernels (names and line ranges) are found again after changes. In a small
file that is done at once (under a millisecond or so); in a big one
(``INLINE_CHARS`` and more) it is debounced and runs in a worker thread,
and meanwhile the known kernels are moved by the edits' line deltas
(``shift_kernels``), so hovers and code actions stay right while the user
types. A file beyond ``MAX_CHARS`` is not analysed at all.

The task (``load_task`` on the saved file: harness, task id) is resolved on
open and save, in a worker thread, because it reads the disk. The task is
the *saved file*: ``stark.optimize`` searches from what is on disk, and
says so when the buffer has unsaved changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable

from stark_lsp.server.diagnostics import CODE_UNFILLED_HARNESS, TaskProblem
from stark_lsp.server.harness_check import Unfilled, unfilled_functions, unfilled_message
from stark_lsp.search.tree_store import harness_digest
from stark_lsp.server.trees import NodeView
from stark_lsp.tasks.kernels import Kernel, find_kernels, language_of
from stark_lsp.tasks.spec import HarnessNotFound, TaskError, TaskSpec, is_kernelbench_reference, is_triton_source, load_task

INLINE_CHARS = 100_000  # below this, kernels are found again at every change, on the event loop
MAX_CHARS = 8_000_000  # beyond this, the file is not analysed (a generated file, not a kernel someone tunes)


@dataclass
class DocState:
    uri: str
    path: Path | None
    language: str  # "cuda" | "triton"
    kernels: list[Kernel] = field(default_factory=list)
    task: TaskSpec | None = None
    problem: TaskProblem | None = None
    store_path: Path | None = None
    warned_missing: set[str] = field(default_factory=set)  # kernels already reported as deleted
    resolving: Any = None  # the asyncio.Task resolving the task, while it runs
    version: int = 0  # the document version the kernels were found in
    stale: bool = False  # edits arrived since: the kernels were shifted, an analysis is due
    analysis: Any = None  # the pending debounce timer or analysis task
    lines: tuple[int, list[str]] | None = None  # (version, lines) for diagnostics
    checked_root: NodeView | None = None  # the kernel as a check without a search saw it (CUDA, no GPU)
    run_error: TaskProblem | None = None  # why the last search stopped, when the task is to blame
    harness_unfilled: list[Unfilled] = field(default_factory=list)
    harness_digest: str | None = None  # the saved harness, as last resolved
    orphan_harness: Path | None = None  # a harness left under the old name by a rename of this file
    carry_from: str | None = None  # the task id this file had before a rename: its tree comes along
    too_big: bool = False

    @property
    def task_id(self) -> str | None:
        return self.task.task_id() if self.task else None

    @property
    def shown_problem(self) -> TaskProblem | None:
        return self.problem or self.run_error


@dataclass(frozen=True)
class Resolved:
    task: TaskSpec | None
    problem: TaskProblem | None
    unfilled: list[Unfilled] = field(default_factory=list)
    harness_digest: str | None = None


def document_language(uri: str, language_id: str | None, text: str) -> str | None:
    """'cuda', 'triton' (a Python file with @triton.jit kernels, or a KernelBench
    reference, whose "kernel" is its Model) or None."""
    lang = language_of(language_id or "") or language_of(uri)
    if lang == "triton" and not (is_triton_source(text) or is_kernelbench_reference(text)):
        return None
    return lang


def resolve_task(path: Path) -> Resolved:
    """``load_task`` on the saved file, and whether its harness is filled in. Blocking."""
    try:
        task = load_task(path)
    except HarnessNotFound as e:
        return Resolved(None, TaskProblem(str(e), missing_harness=True, harness_path=str(e.expected)))
    except TaskError as e:
        return Resolved(None, TaskProblem(str(e)))
    except (OSError, UnicodeDecodeError) as e:
        return Resolved(None, TaskProblem(f"cannot read {path.name}: {e}"))
    if task.harness is None or task.harness.resolve() == task.path.resolve():
        return Resolved(task, None)
    try:
        harness_text = task.harness.read_text()
    except (OSError, UnicodeDecodeError) as e:
        return Resolved(None, TaskProblem(f"cannot read the harness {task.harness.name}: {e}",
                                          harness_path=str(task.harness)))
    unfilled = unfilled_functions(harness_text)
    if unfilled:
        problem = TaskProblem(unfilled_message(task.harness.name, unfilled), harness_path=str(task.harness),
                              code=CODE_UNFILLED_HARNESS)
        return Resolved(None, problem, unfilled)
    return Resolved(task, None, harness_digest=harness_digest(task))


def update_kernels(state: DocState, text: str, version: int) -> list[str]:
    """Find the kernels again; returns the names that disappeared."""
    before = {k.name for k in state.kernels}
    state.too_big = len(text) > MAX_CHARS
    state.kernels = [] if state.too_big else find_kernels(text, state.language)
    state.version = version
    state.stale = False
    return sorted(before - {k.name for k in state.kernels})


def line_delta(start_line: int, end_line: int, new_text: str) -> int:
    return new_text.count("\n") - (end_line - start_line)


def shift_kernels(kernels: list[Kernel], changes: Iterable[Any]) -> list[Kernel]:
    """Kernels moved by incremental edits (``TextDocumentContentChangePartial``:
    ``range``, ``text``): a kernel below an edit moves by its line delta, one
    that contains it grows or shrinks. Good enough until the next analysis;
    a whole-document change leaves them as they are."""
    out = list(kernels)
    for ch in changes:
        rng = getattr(ch, "range", None)
        if rng is None:
            continue
        first, last = rng.start.line, rng.end.line
        delta = line_delta(first, last, ch.text)
        if delta == 0:
            continue
        moved = []
        for k in out:
            if k.start_line > last:
                k = replace(k, start_line=k.start_line + delta, end_line=k.end_line + delta,
                            name_line=k.name_line + delta)
            elif k.end_line >= first:
                k = replace(k, end_line=max(k.start_line, k.end_line + delta),
                            name_line=k.name_line + delta if k.name_line > last else k.name_line)
            moved.append(k)
        out = moved
    return out
