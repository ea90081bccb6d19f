"""What the server tracks per open document (didOpen / didChange / didSave).

Kernels are found again on every change (pure, a few hundred microseconds for
a kernel file); the task (``load_task`` on the saved file: harness, task id)
is resolved on open and save, in a worker thread, because it reads the disk.

The task is the *saved file*: ``stark.optimize`` searches from what is on
disk, and says so when the buffer has unsaved changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stark_lsp.server.diagnostics import TaskProblem
from stark_lsp.tasks.kernels import Kernel, find_kernels, language_of
from stark_lsp.tasks.spec import HarnessNotFound, TaskError, TaskSpec, is_kernelbench_reference, is_triton_source, load_task


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

    @property
    def task_id(self) -> str | None:
        return self.task.task_id() if self.task else None


def document_language(uri: str, language_id: str | None, text: str) -> str | None:
    """'cuda', 'triton' (a Python file with @triton.jit kernels, or a KernelBench
    reference, whose "kernel" is its Model) or None."""
    lang = language_of(language_id or "") or language_of(uri)
    if lang == "triton" and not (is_triton_source(text) or is_kernelbench_reference(text)):
        return None
    return lang


def resolve_task(path: Path) -> tuple[TaskSpec | None, TaskProblem | None]:
    """``load_task`` on the saved file, as (task, None) or (None, problem). Blocking."""
    try:
        return load_task(path), None
    except HarnessNotFound as e:
        return None, TaskProblem(str(e), missing_harness=True, harness_path=str(e.expected))
    except TaskError as e:
        return None, TaskProblem(str(e))
    except OSError as e:
        return None, TaskProblem(f"cannot read {path.name}: {e}")


def update_kernels(state: DocState, text: str) -> list[str]:
    """Find the kernels again; returns the names that disappeared."""
    before = {k.name for k in state.kernels}
    state.kernels = find_kernels(text, state.language)
    return sorted(before - {k.name for k in state.kernels})
