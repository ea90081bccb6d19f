"""What the server tracks per open document (didOpen / didChange / didSave).

Kernels (names and line ranges) are found again after changes. In a small
file that is done at once (under a millisecond or so); in a big one
(``INLINE_CHARS`` and more) it is debounced and runs in a worker thread.
Meanwhile each change only records its line delta (``LineEdit``), and a
hover or a code action maps its line back to where it was when the kernels
were found (``line_before_edits``), so they stay right while the user types,
at no cost per keystroke. A file beyond ``MAX_CHARS`` is not analysed at all.

The task (``load_task`` on the saved file: harness, task id) is resolved on
open and save, in a worker thread, because it reads the disk. The task is
the *saved file*: ``stark.optimize`` searches from what is on disk, and
says so when the buffer has unsaved changes. A saved Python file with a
syntax error is no task ("fix the syntax error on line 12 first"), nor is a
file that is not on disk (removed outside the editor: its diagnostics go,
and "Optimize" is offered disabled with why).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stark_lsp.server.diagnostics import CODE_HELPER, CODE_NOT_ON_DISK, CODE_UNFILLED_HARNESS, TaskProblem
from stark_lsp.server.harness_check import Unfilled, unfilled_functions, unfilled_message
from stark_lsp.search.tree_store import harness_digest
from stark_lsp.search.node_view import NodeView
from stark_lsp.server.helper_modules import helper_user, helper_users, shown_name
from stark_lsp.tasks.kernels import Kernel, find_kernels, language_of
from stark_lsp.tasks.spec import HarnessNotFound, TaskError, TaskSpec, is_kernelbench_reference, is_triton_source, load_task

INLINE_CHARS = 100_000  # below this, kernels are found again at every change, on the event loop
MAX_CHARS = 8_000_000  # beyond this, the file is not analysed (a generated file, not a kernel someone tunes)
MAX_HELPER_USERS = 3  # a helper module's users that "Optimize" on it offers to search, at most


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
    stale: bool = False  # edits arrived since the kernels were found: an analysis is due
    edits: list["LineEdit"] = field(default_factory=list)  # those edits' line deltas, in order
    analysis: Any = None  # the pending debounce timer or analysis task
    lines: tuple[int, list[str]] | None = None  # (version, lines) for diagnostics
    checked_root: NodeView | None = None  # the kernel as a check without a search saw it (CUDA, no GPU)
    run_error: TaskProblem | None = None  # why the last search stopped, when the task is to blame
    harness_unfilled: list[Unfilled] = field(default_factory=list)
    harness_digest: str | None = None  # the saved harness, as last resolved
    orphan_harness: Path | None = None  # a harness left under the old name by a rename of this file
    too_big: bool = False

    _starts_of: Any = None  # the kernels list _starts was made from
    _starts: list[int] = field(default_factory=list)
    _id_of: Any = None  # the task _id was computed for (TaskSpec.task_id() resolves paths: not on every call)
    _id: str | None = None

    @property
    def task_id(self) -> str | None:
        if self.task is None:
            return None
        if self._id_of is not self.task:
            self._id_of, self._id = self.task, self.task.task_id()
        return self._id

    @property
    def shown_problem(self) -> TaskProblem | None:
        return self.problem or self.run_error

    def kernel_at(self, line: int) -> Kernel | None:
        """The kernel containing ``line`` (of the analysed text): a bisection, files can hold thousands."""
        if self._starts_of is not self.kernels:
            self._starts_of, self._starts = self.kernels, [k.start_line for k in self.kernels]
        i = bisect.bisect_right(self._starts, line) - 1
        return self.kernels[i] if i >= 0 and self.kernels[i].contains_line(line) else None


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


def syntax_problem(path: Path) -> TaskProblem | None:
    """A saved Python file that does not parse is not a task yet: "fix the syntax error on line N first"
    (``load_task`` takes any file with ``@triton.jit`` for one). None when it parses or cannot be read
    (``load_task`` says why then). Blocking."""
    from stark_lsp.tasks.spec import syntax_error_at

    if path.suffix != ".py":
        return None  # a .cu file: nvcc says what is wrong when it is optimized (its errors on their lines)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    bad = syntax_error_at(text, path.name)
    if bad is None:
        return None
    line, msg = bad
    if line is None:
        return TaskProblem(f"fix {path.name} first: it is {msg}")
    return TaskProblem(f"fix the syntax error on line {line} first: {msg} ({path.name}, line {line}; a file "
                       f"with a syntax error is not read as a task)")


def resolve_task(path: Path) -> Resolved:
    """``load_task`` on the saved file, and whether its harness is filled in. Blocking."""
    if not path.exists():
        return Resolved(None, TaskProblem(f"{path.name} is not on disk (deleted or moved): save it to optimize it",
                                          code=CODE_NOT_ON_DISK))
    bad = syntax_problem(path)
    if bad is not None:
        return Resolved(None, bad)
    try:
        task = load_task(path)
    except HarnessNotFound as e:
        users = helper_users(path)
        if users:  # a module of @triton.jit helpers that a task's file in its package imports: a hint naming it,
            # and "Optimize" here offers the search of the kernels that call it
            found = tuple(u for u in (helper_user(p, path) for p in users[:MAX_HELPER_USERS]) if u is not None)
            return Resolved(None, TaskProblem(f"a helper module: {shown_name(users[0], path)} uses it; optimize the "
                                              f"kernel there (its search may change what it calls here)",
                                              code=CODE_HELPER, users=found))
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
    state.edits = []
    return sorted(before - {k.name for k in state.kernels})


@dataclass(frozen=True)
class LineEdit:
    """An edit replaced lines ``first``..``last`` (its range's lines, as they
    were) with ``last - first + 1 + delta`` lines."""

    first: int
    last: int
    delta: int


def line_edit(change: Any) -> LineEdit | None:
    """The line delta of an incremental change (``range``, ``text``); None for a whole-document one."""
    rng = getattr(change, "range", None)
    if rng is None:
        return None
    first, last = rng.start.line, rng.end.line
    return LineEdit(first, last, change.text.count("\n") - (last - first))


def line_before_edits(line: int, edits: list[LineEdit]) -> int:
    """Where ``line`` (of the text as it is now) was before ``edits``: a line
    below an edit moves back by its delta; one inside it lands on the edit's
    first line it covered."""
    for e in reversed(edits):
        if line > e.last + e.delta:
            line -= e.delta
        elif line > e.first:
            line = min(line, e.last)
    return line
