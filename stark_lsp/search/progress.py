"""Progress on a terminal: one live line on a TTY, plain lines otherwise."""

from __future__ import annotations

import shutil
import sys
from dataclasses import replace
from typing import TextIO

from stark_lsp.speedups import speedup_text

from .engine import Progress
from .pace import time_left_text


def best_text(p: Progress) -> str:
    """The best so far, against the user's kernel first (the question asked), then eager."""
    if p.best_speedup is None:
        return "-"
    if p.best_is_reference:
        return f"your kernel, the reference itself (1.00× eager) (#{p.best_node_id})"
    eager = speedup_text(p.best_speedup, "eager", cpu=p.cpu)
    if p.best_is_root:
        return f"your kernel, {eager} (#{p.best_node_id})"
    if p.best_vs_yours is not None:
        return f"{speedup_text(p.best_vs_yours, 'yours')}, {eager} (#{p.best_node_id})"
    return f"{eager} (#{p.best_node_id})"


def doing_text(p: Progress) -> str:
    """`` (1 checking, 2 queued)``: what the evaluations in flight are doing; "" when none says."""
    return f" ({', '.join(f'{n} {what}' for what, n in p.doing)})" if p.doing else ""


def format_progress(p: Progress, doing: bool = True) -> str:
    left = time_left_text(p.time_left_s) if doing else ""  # plain lines: a line each time the estimate moved
    line = (f"attempt {p.attempt}/{p.budget}  best {best_text(p)}  correct {p.correct}  "
            f"failed {p.failures}  running {p.running}" + (doing_text(p) if doing else "")
            + (f"  free {p.free}" if p.free else "") + (f"  {left}" if left else ""))
    if p.message:
        line += f"  | {p.message}"
    return line


class ProgressPrinter:
    """Callable for ``Search(on_progress=...)``. On a TTY it rewrites one line, and a lasting message
    (``Progress.lasting``: a notice, not a passing state) is printed on its own line above it, where
    the next update cannot overwrite it; otherwise it prints each update."""

    def __init__(self, stream: TextIO | None = None, tty: bool | None = None):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self._last = ""
        self._quiet = ""  # the last line printed, without its message

    def __call__(self, p: Progress) -> None:
        # plain lines leave out what the evaluations in flight are doing: a line each time one moves on
        # would bury the attempts; the live line shows it
        line = format_progress(p, doing=self.tty)
        if line == self._last or (not self.tty and not p.message and line == self._quiet):
            return  # a plain line only when a count or a message changed
        self._last = line
        self._quiet = format_progress(replace(p, message=""), doing=False)
        if not self.tty:
            self.stream.write(line + "\n")
        else:
            width = shutil.get_terminal_size((100, 20)).columns - 1
            if p.lasting and p.message:  # kept whole above the live line, which goes on without it
                self.stream.write("\r\x1b[2K" + p.message + "\n")
                line = format_progress(replace(p, message=""))
            self.stream.write("\r\x1b[2K" + line[:width] + ("\n" if p.done else ""))
        self.stream.flush()
