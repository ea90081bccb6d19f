"""Refusing bad input before anything runs: one line naming the problem and the fix.

A command raises :class:`Refusal`; ``cli.py`` prints ``stark COMMAND: MESSAGE``
and exits ``exit_codes.USAGE`` (no traceback). The checks here are cheap and
import neither torch nor the evaluator's workers.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

GPU_NEEDED = "needs an NVIDIA GPU: nvcc compiled your kernel, but nothing can be run or timed here"
SMALL_HINT = ("on the CPU, full-size shapes run slowly under the Triton interpreter and eager PyTorch: "
              "set STARK_SMALL=1 (harnesses that support it pick small shapes) or raise --timeout")


class Refusal(Exception):
    """Bad input, or a request this machine cannot serve: nothing was run (exit USAGE)."""


def load_task_or_refuse(path: str, harness: str | None = None) -> Any:
    """``tasks.spec.load_task``, with every reason it refuses as a :class:`Refusal`."""
    from stark_lsp.tasks.spec import HarnessNotFound, TaskError, load_task as load

    require_plain_file(path, "task")
    if harness:
        require_plain_file(harness, "harness")
    try:
        return load(path, harness)
    except HarnessNotFound as e:
        raise Refusal(e.command_line_text(path)) from None
    except TaskError as e:
        raise Refusal(str(e)) from None


def read_candidate(path: str) -> str:
    return read_source_or_refuse(path, "candidate", pipe_ok=True)  # stark eval TASK <(make_candidate)


def read_source_or_refuse(path: str, what: str, pipe_ok: bool = False) -> str:
    """``tasks.spec.read_source``: a missing file, a folder or a binary file is a :class:`Refusal`; so is a pipe
    unless ``pipe_ok`` (a candidate may come from a process substitution, read once)."""
    from stark_lsp.tasks.spec import TaskError, read_source

    require_plain_file(path, what, pipe_ok=pipe_ok)
    try:
        return read_source(path, what)
    except TaskError as e:
        raise Refusal(str(e)) from None


def require_plain_file(path: str | Path, what: str, pipe_ok: bool = False) -> None:
    """Refuse what no read would answer: a pipe or a device (its read blocks, or never ends) and a symlink loop.
    A missing file or a folder is left to ``tasks.spec.read_source``, which says so. ``pipe_ok``: a pipe is
    read (its writer is the user's)."""
    p = Path(path)
    fix = "give the harness file" if what == "harness" else "give the kernel's source file"
    try:
        p.resolve()
    except (RuntimeError, OSError) as e:  # Python 3.11: RuntimeError("Symlink loop from ...")
        raise Refusal(f"{what} {path}: cannot follow the link ({e}): {fix}") from None
    if p.exists() and not p.is_dir() and not p.is_file() and not (pipe_ok and p.is_fifo()):
        raise Refusal(f"{what} {path} is not a regular file (a pipe, socket or device): {fix}")


def output_file(path: str, option: str = "-o", example: str = "best.py") -> Path:
    """A file we may write: its folder exists and it is not a folder itself (``example``: a file name to suggest)."""
    p = Path(path)
    if p.is_dir():
        raise Refusal(f"{option} {path} is a directory: give a file name, e.g. {Path(path) / example}")
    parent = p.parent
    if not parent.is_dir():
        raise Refusal(f"{option} {path}: the folder {parent} does not exist: create it first (mkdir -p {parent})")
    if not os.access(parent, os.W_OK) or not can_create_in(parent):
        raise Refusal(f"{option} {path}: the folder {parent} is not writable: give {option} a file in a folder "
                      f"you can write")
    return p


def can_create_in(folder: Path) -> bool:
    """A file can be made in ``folder`` (one is made and removed): ``os.access`` says yes to root where the
    file system says no (``/proc``: the file was refused only once the search had run)."""
    import tempfile

    try:
        fd, name = tempfile.mkstemp(dir=folder, prefix=".stark-probe-")
    except OSError:
        return False
    os.close(fd)
    try:
        os.unlink(name)
    except OSError:
        pass
    return True


def writable_folder(folder: Path) -> bool:
    """``folder``, or the nearest of its ancestors that exists (it would be made there), is a folder we may write
    (``os.access``: a read-only file system says no to root too)."""
    folder = Path(folder).absolute()
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder.is_dir() and os.access(folder, os.W_OK)


def require_writable_cache(cache_dir: str | None) -> None:
    """The evaluator's cache (``--cache-dir``, else ``$STARK_CACHE_DIR``, else ``~/.cache/stark-lsp``), where every
    build and candidate is written: a file there, or a folder we may not write, is refused before anything runs."""
    from stark_lsp.evaluate.evaluator import default_cache_dir

    folder = Path(cache_dir) if cache_dir else default_cache_dir()
    what = "--cache-dir" if cache_dir else ("$STARK_CACHE_DIR" if os.environ.get("STARK_CACHE_DIR")
                                            else "the cache folder")
    require_writable_folder(folder, what, "--cache-dir DIR", " (builds and candidates are cached there)")


def require_writable_folder(folder: Path, what: str, fix: str, why_needed: str = "") -> None:
    """A folder a command will write into (made if missing): a file there, a folder we may not write, or one
    that cannot be made is refused in one line naming ``fix`` (the flag that gives another)."""
    if folder.exists() and not folder.is_dir():
        raise Refusal(f"{what} {folder} is a file, not a folder: give {fix}, a folder you can write")
    why = "" if writable_folder(folder) else "not writable"
    why = why or cannot_make(folder)
    if why:
        raise Refusal(f"{what} {folder} is {why}{why_needed}: give {fix}, a folder you can write")


def cannot_make(folder: Path) -> str:
    """Why ``folder`` cannot be made, or "" when it exists or can be (what was made to find out is removed
    again): a writable ancestor is not enough where the file system refuses (``/proc/x``: exit 70 was a
    FileNotFoundError of the evaluator's mkdir)."""
    folder = Path(folder).absolute()
    made: list[Path] = []
    p = folder
    while not p.exists() and p != p.parent:
        made.append(p)
        p = p.parent
    if not made:
        return ""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return f"not a folder that can be made ({e.strerror or e})"
    for m in made:  # deepest first
        try:
            m.rmdir()
        except OSError:
            break
    return ""


def write_file(path: Path, text: str, option: str = "-o") -> None:
    try:
        path.write_text(text)
    except OSError as e:
        raise Refusal(f"{option} {path}: cannot write it: {e.strerror or e}") from None


def missing_python_modules(task: Any | None = None) -> list[str]:
    """The modules the evaluator needs that this interpreter lacks (torch; triton for Triton tasks)."""
    needed = ["torch"]
    if task is not None and getattr(task, "kind", "") == "triton":
        needed.append("triton")
    return [m for m in needed if importlib.util.find_spec(m) is None]


def require_evaluator_modules(task: Any | None = None) -> None:
    missing = missing_python_modules(task)
    if missing:
        names = " and ".join(missing)
        raise Refusal(f"{names} {'is' if len(missing) == 1 else 'are'} not installed, and the evaluator needs "
                      f"{'it' if len(missing) == 1 else 'them'}: install with '{sys.executable} -m pip install "
                      f"{' '.join(missing)}' (or run scripts/setup.sh)")


def gpu_here() -> bool:
    from stark_lsp.evaluate.evaluator import gpu_present

    return gpu_present()


def require_gpu_for_device(device: str) -> None:
    """``--device cuda`` on a machine without an NVIDIA GPU."""
    if device == "cuda" and not gpu_here():
        raise Refusal("--device cuda: this machine has no NVIDIA GPU: use --device cpu (or auto), "
                      "or run on a GPU machine")


def needs_gpu(task: Any) -> bool:
    """Whether nothing of the task can run without a GPU: CUDA sources, and a
    KernelBench file whose own ModelNew builds CUDA with load_inline."""
    from stark_lsp.tasks.gpu_need import gpu_need

    return gpu_need(task) is not None


def runs_on_cpu(device: str) -> bool:
    return device == "cpu" or (device == "auto" and not gpu_here())
