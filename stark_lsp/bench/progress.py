"""Progress of a bench on a terminal: a live line on a TTY, plain lines otherwise.

Plain mode prints when a run starts (and when its task waits for GPU memory
first), when one of its attempts finishes, and when it ends, so a log file
shows everything without carriage returns.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from typing import TextIO

from stark_lsp.search.engine import Progress
from stark_lsp.search.progress import best_text, doing_text
from stark_lsp.speedups import speedup_text

from . import fmt
from .memory_admission import gib_text
from .plan import RunKey
from .record import RunRecord


def run_line(index: int, total: int, label: str, p: Progress | None, elapsed_s: float) -> str:
    """The live line: the best so far as ``stark optimize`` shows it (against your kernel, then eager)."""
    head = f"[{index + 1}/{total}] {label}"
    if p is None:
        return f"{head}  starting  | {fmt.duration(elapsed_s)}"
    running = f"  running {p.running}{doing_text(p)}" if p.running else ""
    return (f"{head}  attempt {p.attempt}/{p.budget}  best {best_text(p)}  correct {p.correct}  failed {p.failures}"
            f"{running}  | {fmt.duration(elapsed_s)}")


def memory_wait_line(index: int, total: int, label: str, need_gib: float, free_gib: float, budget_gib: float,
                     elapsed_s: float) -> str:
    """A task that waits for GPU memory (``memory_admission.py``): what it needs against what is free."""
    what = (f"needs ~{gib_text(need_gib)}, more than the GPU's {gib_text(budget_gib)}: runs alone once the others finish"
            if need_gib > budget_gib else f"needs ~{gib_text(need_gib)}, {gib_text(free_gib)} of {gib_text(budget_gib)} free")
    return f"[{index + 1}/{total}] {label}  waiting for GPU memory: {what}  | {fmt.duration(elapsed_s)}"


def finished_line(index: int, total: int, label: str, r: RunRecord) -> str:
    """The run's result, as its record (and so the final tables) has it: the team's best attempt against
    eager, named as the team's (the live line's "best" is the tree's, which may be the user's kernel), with
    the user's kernel beside it where that was faster."""
    cpu, degenerate = not r.is_gpu, bool(r.degenerate)
    what = (f"the team's best {speedup_text(r.best_speedup, 'eager', cpu=cpu, degenerate=degenerate)} at "
            f"attempt {r.best_attempt}"
            if r.success else "no correct kernel")
    if r.success and r.root_speedup is not None and (r.best_speedup or 0.0) < r.root_speedup:
        what += f" (your kernel {speedup_text(r.root_speedup, 'eager', cpu=cpu, degenerate=degenerate)})"
    tail = f"  ({r.outcome}: {r.error})" if r.error else ("" if r.outcome == "done" else f"  ({r.outcome})")
    return f"[{index + 1}/{total}] {label}  done: {what}, {r.attempts} attempts, {fmt.duration(r.wall_s)}{tail}"


def pace_line(finished: int, left: int, attempts: int, elapsed_s: float) -> str:
    """How the bench goes: attempts a minute over this session, and the time left at the rate runs
    finished so far (several at once included), once one has."""
    rate = f"{attempts / (elapsed_s / 60.0):.1f} attempts a minute" if elapsed_s > 0 else ""
    if not finished or left <= 0:
        return rate
    eta = fmt.duration(left * elapsed_s / finished)
    return f"{rate}, {left} run(s) left, about {eta} at this pace"


class BenchProgress:
    def __init__(self, names: list[str], stream: TextIO | None = None, tty: bool | None = None,
                 planned: int | None = None, kept: int = 0):
        self.names = names
        self.planned, self.kept = planned, kept  # runs in the bench; runs a resumed bench had already
        self._finished = 0  # runs finished in this session
        self._attempts = 0  # their attempts
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._last_attempt: dict[str, int] = {}  # per run label (several run at once with --gpus)
        self._index, self._total, self._label = 0, 1, ""

    def _elapsed(self) -> float:
        return time.monotonic() - self.started

    def _write(self, line: str, final: bool) -> None:
        if self.tty:
            width = shutil.get_terminal_size((100, 20)).columns - 1
            self.stream.write("\r\x1b[2K" + (line if final else line[:width]) + ("\n" if final else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def start(self, index: int, total: int, key: RunKey) -> None:
        with self._lock:
            self._index, self._total, self._label = index, total, key.label(self.names)
            self._last_attempt.pop(self._label, None)
            self._write(run_line(index, total, self._label, None, self._elapsed()), final=False)

    def memory_wait(self, index: int, total: int, key: RunKey, need_gib: float, free_gib: float,
                    budget_gib: float) -> None:
        with self._lock:
            label = key.label(self.names)
            self._write(memory_wait_line(index, total, label, need_gib, free_gib, budget_gib, self._elapsed()),
                        final=False)

    def __call__(self, index: int, total: int, key: RunKey, p: Progress) -> None:
        with self._lock:
            label = key.label(self.names)
            if not self.tty and p.attempt == self._last_attempt.get(label):
                return
            self._last_attempt[label] = p.attempt
            self._write(run_line(index, total, label, p, self._elapsed()), final=False)

    def finish(self, index: int, total: int, record: RunRecord) -> None:
        with self._lock:
            label = f"{record.task} / {record.policy} / r{record.repeat}"
            self._finished += 1
            self._attempts += record.attempts
            self._last_attempt.pop(label, None)
            line = finished_line(index, total, label, record)
            if self.planned is not None:
                left = self.planned - self.kept - self._finished
                running = sum(self._last_attempt.values())  # attempts of the runs still going
                line += f"  | {pace_line(self._finished, left, self._attempts + running, self._elapsed())}"
            self._write(line, final=True)
