"""Progress on a terminal: one live line on a TTY, plain lines otherwise."""

from __future__ import annotations

import shutil
import sys
from typing import TextIO

from .engine import Progress


def format_progress(p: Progress) -> str:
    best = f"{p.best_speedup:.2f}x (#{p.best_node_id})" if p.best_speedup is not None else "-"
    line = (f"attempt {p.attempt}/{p.budget}  best {best}  correct {p.correct}  "
            f"failed {p.failures}  running {p.running}")
    if p.message:
        line += f"  | {p.message}"
    return line


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
