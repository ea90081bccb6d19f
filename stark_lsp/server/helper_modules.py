"""Which task files use a module of ``@triton.jit`` helpers.

A Triton file with no harness of its own is a *helper module*, not a broken
task, when a task's kernel file imports it: ``pkg/common/helpers.py`` used by
``pkg/ops/rms.py`` (whose harness is ``pkg/ops/rms.harness.py``, or one named
by a ``stark-harness:`` comment) through ``from pkg.common.helpers import f``,
``import pkg.common.helpers``, ``from ..common import helpers`` or, beside it,
``from .helpers import f``.

The users are looked for under the helper's package root (the folder that
holds its top-level package: up from the helper while folders have an
``__init__.py``; its own folder outside a package), in at most ``limit``
Python files, skipping hidden folders, virtual environments,
``node_modules`` and ``__pycache__``. A user's harness is found as
``load_task`` finds it (``spec.find_harness``), and its imports are resolved
to files as the agents' project context resolves them
(``project_files.python_files``, with ``ast``): a module of the same name
elsewhere is not the helper.

``helper_user`` says, for each user, which of its kernels "Optimize" on the
helper offers to search: the one that calls a function the helper defines (the
first kernel of the file if none is found), named as the hint names the file.

Pure: reads the filesystem only; blocking.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

MAX_FILES = 2000  # Python files looked at, at most
MAX_FOLDERS = 5000  # folders walked, at most
MAX_FILE_BYTES = 1 << 20  # a bigger file is generated, not a kernel that imports a helper
_SKIP_DIRS = {"node_modules", "__pycache__", "site-packages", "venv"}  # and any folder with a pyvenv.cfg


@dataclass(frozen=True)
class HelperUser:
    """A task file that imports a helper module: what "Optimize" on the helper searches instead."""

    path: str  # the user's kernel file (resolved)
    shown: str  # how hints and titles name it (``shown_name``)
    kernel: str  # its kernel that calls the helper (the search is the file's: one search per file)


def helper_users(path: Path, limit: int = MAX_FILES) -> list[Path]:
    """The task files (Python kernel files with a harness) under ``path``'s package root that import
    ``path`` as a module: the ones in its folder first, then by path. [] when ``path`` is no Python file."""
    from stark_lsp.project_build.python_paths import module_place

    path = Path(path).resolve()
    if path.suffix != ".py" or path.name.endswith(".harness.py"):
        return []
    name = path.parent.name if path.name == "__init__.py" else path.stem  # what an import of it must spell
    root = Path(module_place(path).root)
    out = [p for p in _python_files(root, limit) if p != path and _uses(p, path, name)]
    return sorted(out, key=lambda p: (p.parent != path.parent, str(p)))


def shown_name(user: Path, helper: Path) -> str:
    """How a hint names a user: its file name beside the helper, else its path under the package root."""
    from stark_lsp.project_build.python_paths import module_place

    user, helper = Path(user).resolve(), Path(helper).resolve()
    if user.parent == helper.parent:
        return user.name
    try:
        return user.relative_to(module_place(helper).root).as_posix()
    except ValueError:
        return str(user)


def helper_user(user: Path, helper: Path) -> HelperUser | None:
    """``user`` (one of ``helper_users(helper)``) as "Optimize" on the helper offers it: its kernel that
    calls one of the helper's ``@triton.jit`` functions (by name, in its body), else its first kernel;
    None when it has no kernel (it cannot be searched)."""
    from stark_lsp.tasks.kernels import find_kernels

    user, helper = Path(user).resolve(), Path(helper).resolve()
    try:
        text = user.read_text(encoding="utf-8", errors="replace")
        helper_text = helper.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    kernels = [k for k in find_kernels(text, "triton") if k.language == "triton"]
    if not kernels:
        return None
    called = {k.name for k in find_kernels(helper_text, "triton")}
    lines = text.split("\n")

    def calls_helper(k) -> bool:
        body = "\n".join(lines[k.name_line + 1: k.end_line + 1])
        return any(re.search(rf"\b{re.escape(name)}\s*\(", body) for name in called)

    chosen = next((k for k in kernels if calls_helper(k)), kernels[0])
    return HelperUser(str(user), shown_name(user, helper), chosen.name)


def _python_files(root: Path, limit: int) -> list[Path]:
    """Up to ``limit`` ``.py`` files under ``root`` (harnesses excluded), in a stable order."""
    found: list[Path] = []
    for seen, (folder, dirs, files) in enumerate(os.walk(root)):
        if seen >= MAX_FOLDERS:  # a tree of data folders with few Python files: not walked to its end
            break
        dirs[:] = sorted(d for d in dirs if not _skipped(Path(folder) / d))
        for f in sorted(files):
            if f.endswith(".py") and not f.endswith(".harness.py"):
                found.append(Path(folder) / f)
                if len(found) >= limit:
                    return found
    return found


def _skipped(d: Path) -> bool:
    return d.name.startswith(".") or d.name in _SKIP_DIRS or (d / "pyvenv.cfg").exists()


def _uses(user: Path, helper: Path, name: str) -> bool:
    """Whether ``user`` is a task's kernel file that imports ``helper``."""
    from stark_lsp.search.project_files import python_files
    from stark_lsp.tasks.spec import TaskError, TaskSpec, find_harness, is_triton_source

    try:
        if user.stat().st_size > MAX_FILE_BYTES:
            return False
        text = user.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    if name not in text:  # no import can name it: not worth a parse
        return False
    try:
        harness = find_harness(user, text)
    except (TaskError, OSError):
        return False
    if harness is None or (Path(harness).resolve() == user and not is_triton_source(text)):
        return False  # no task: no harness, or a file with get_inputs that is no Triton kernel
    try:
        return helper in python_files(TaskSpec("triton", user, Path(harness)), text)
    except (OSError, ValueError):
        return False
