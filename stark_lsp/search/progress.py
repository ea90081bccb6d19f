"""Progress on a terminal: one live line on a TTY, plain lines otherwise."""

from __future__ import annotations

import shutil
import sys
from typing import TextIO

from stark_lsp.speedups import speedup_text

from .engine import Progress


def best_text(p: Progress) -> str:
    """The best so far, against the user's kernel first (the question asked), then eager."""
    if p.best_speedup is None:
        return "-"
    if p.best_is_reference:
        return f"your kernel, the reference itself (1.00× eager) (#{p.best_node_id})"
    eager = speedup_text(p.best_speedup, "eager", cpu=p.cpu)
    if p.best_is_root:
        return f"your kernel, {eager} (#{p.best_node_id})"
    if p.best_vs_root is not None:
        return f"{speedup_text(p.best_vs_root, 'yours')}, {eager} (#{p.best_node_id})"
    return f"{eager} (#{p.best_node_id})"


def format_progress(p: Progress) -> str:
    line = (f"attempt {p.attempt}/{p.budget}  best {best_text(p)}  correct {p.correct}  "
            f"failed {p.failures}  running {p.running}" + (f"  free {p.free}" if p.free else ""))
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
