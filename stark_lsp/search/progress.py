"""Progress on a terminal: one live line on a TTY, plain lines otherwise."""

from __future__ import annotations

import shutil
import sys
from typing import TextIO

from .engine import Progress


def format_progress(p: Progress) -> str:
    if p.best_speedup is None:
        best = "-"
    elif p.best_vs_root is not None:  # against the user's kernel first: that is the question asked
        best = f"{p.best_vs_root:.2f}x yours, {_eager(p.best_speedup)} eager (#{p.best_node_id})"
    else:
        best = f"{p.best_speedup:.2f}x (#{p.best_node_id})"
    line = (f"attempt {p.attempt}/{p.budget}  best {best}  correct {p.correct}  "
            f"failed {p.failures}  running {p.running}")
    if p.message:
        line += f"  | {p.message}"
    return line


def _eager(x: float) -> str:
    return f"{x:.2f}x" if x >= 0.01 else f"{x:.2g}x"


class ProgressPrinter:
    """Callable for ``Search(on_progress=...)``. On a TTY it rewrites one line
    (messages that matter stay above it); otherwise it prints each update."""

    def __init__(self, stream: TextIO | None = None, tty: bool | None = None):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self._last = ""

    def __call__(self, p: Progress) -> None:
        line = format_progress(p)
        if line == self._last:
            return
        self._last = line
        if not self.tty:
            self.stream.write(line + "\n")
        else:
            width = shutil.get_terminal_size((100, 20)).columns - 1
            self.stream.write("\r\x1b[2K" + line[:width] + ("\n" if p.done else ""))
        self.stream.flush()
