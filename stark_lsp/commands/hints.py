"""The ``stark`` commands the CLI prints for the user to run next, written so they can be pasted.

Every hint names a file as the user gave it (a path relative to the folder they ran in stays so), or, for a
path the command found itself, relative to that folder when it lies under it (else absolute): never its bare
name, which fails from another folder. Each word is shell-quoted where it needs it (spaces, ``$``, quotes).
A hint for a task carries the ``--harness`` and ``--store`` the user gave, without which the same command
would not find the task's harness or tree.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any

# the flags that say where a task's files are: a hint about the task carries the ones given
TASK_FLAGS = ("harness", "store")


def path_arg(path: str | Path) -> str:
    """A path as a command run from the current folder reaches it: a string is as the user gave it; a
    ``Path`` the command found is relative to the current folder when under it, else absolute."""
    if isinstance(path, str):
        return path
    p = Path(path)
    if not p.is_absolute():
        return str(p)
    try:
        return str(p.relative_to(Path.cwd()))
    except (ValueError, OSError):
        return str(p)


def stark(*words: Any, args: argparse.Namespace | None = None, flags: tuple[str, ...] = TASK_FLAGS) -> str:
    """``stark WORD...``, quoted for the shell; with ``args``, the ``flags`` it was given (``--store DIR``)."""
    argv = ["stark", *(path_arg(w) if isinstance(w, Path) else str(w) for w in words)]
    for flag in flags if args is not None else ():
        value = getattr(args, flag, None)
        if value:
            argv += [f"--{flag}", path_arg(value)]
    return shlex.join(argv)


def task_arg(args: argparse.Namespace) -> str:
    """The task as the user named it (``stark optimize sub/k.py``: ``sub/k.py``)."""
    return str(getattr(args, "task", "") or getattr(args, "kernel", ""))

