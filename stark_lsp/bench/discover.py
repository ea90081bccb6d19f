"""Turn the PATHs given to ``stark bench`` into tasks.

A file is loaded with ``load_task``. A directory is walked (sorted, recursive):
every ``.py``, ``.cu`` and ``.cuh`` that ``load_task`` accepts becomes a task,
so a checkout of KernelBench's ``level1/`` works as is. Harness files, the
``.best`` kernels ``stark optimize`` writes and ``__init__.py`` are skipped
without trying; anything else that is not a task is skipped with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from stark_lsp.tasks.spec import HarnessNotFound, TaskError, TaskSpec, load_task

SUFFIXES = (".py", ".cu", ".cuh")


@dataclass
class Skipped:
    path: str
    reason: str
    quiet: bool = False  # harnesses and the like: counted, not listed


@dataclass
class Discovery:
    tasks: list[TaskSpec] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


def quiet_skip(path: Path) -> str | None:
    """Why a file in a directory is not even tried, or None to try it."""
    name = path.name
    if name.endswith(".harness.py"):
        return "a harness"
    if ".best." in name:
        return "a kernel written by stark optimize"
    if name == "__init__.py" or name.startswith("."):
        return "not a task file"
    return None


def _walk(directory: Path) -> list[Path]:
    out = []
    for p in sorted(directory.rglob("*")):
        rel = p.relative_to(directory).parts
        if any(part.startswith(".") or part == "__pycache__" for part in rel):
            continue
        if p.is_file() and p.suffix in SUFFIXES:
            out.append(p)
    return out


def discover(paths: list[str | Path]) -> Discovery:
    """Tasks in the order given (directories sorted), each once."""
    found = Discovery()
    seen: set[str] = set()

    def add(p: Path, explicit: bool) -> None:
        why = None if explicit else quiet_skip(p)
        if why:
            found.skipped.append(Skipped(str(p), why, quiet=True))
            return
        try:
            task = load_task(p)
        except HarnessNotFound as e:
            found.skipped.append(Skipped(str(p), e.command_line_text(p, harness_flag=False)))
            return
        except TaskError as e:
            found.skipped.append(Skipped(str(p), str(e)))
            return
        except (OSError, UnicodeDecodeError) as e:
            found.skipped.append(Skipped(str(p), f"cannot read: {e}"))
            return
        if task.task_id() not in seen:
            seen.add(task.task_id())
            found.tasks.append(task)

    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            for f in _walk(p):
                add(f, explicit=False)
        elif p.exists():
            add(p, explicit=True)
        else:
            found.skipped.append(Skipped(str(p), "no such file or directory"))
    return found


def short_names(tasks: list[TaskSpec]) -> list[str]:
    """Display names: the file stem, with the parent folder added where stems repeat."""
    stems = [t.path.stem for t in tasks]
    names = []
    for t, s in zip(tasks, stems):
        names.append(f"{t.path.parent.name}/{s}" if stems.count(s) > 1 else s)
    # still ambiguous (same folder name too): number them
    out = []
    for i, n in enumerate(names):
        out.append(n if names.count(n) == 1 else f"{n}#{names[:i].count(n) + 1}")
    return out
