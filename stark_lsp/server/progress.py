"""$/progress for a running search: window/workDoneProgress create, begin,
report, end; cancellable by the client (VS Code's Cancel, any client's
``window/workDoneProgress/cancel``), which stops the search.

A search reports phases before its first attempt: starting the evaluation
worker, then building and checking the user's kernel against the reference
and timing both; then "attempt k/N" with the best so far (labelled through
``labels.py``).

``progress_text`` and ``final_text`` are pure. ``WorkDone`` wraps pygls's
progress API; every method must be called on the event loop (the search
thread goes through ``loop.call_soon_threadsafe``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from lsprotocol import types

from stark_lsp.search.pace import time_left_text
from stark_lsp.search.progress import doing_text
from stark_lsp.server.labels import best_text
from stark_lsp.search.tree_view import TreeView

log = logging.getLogger(__name__)

PHASE_WORKER = "starting the evaluation worker"
PHASE_ROOT = "your kernel: building it, checking it against the reference, timing both"
PHASE_CHECK = "your kernel: compiling it with nvcc (no GPU here to run it)"


def progress_text(p: Any, tree: TreeView | None, phase: str | None = None, stopping: bool = False) -> tuple[str, int]:
    """(message, percentage) for a ``stark_lsp.search.engine.Progress`` (or None
    before the first one), the tree as the server has it, and the current phase."""
    if stopping:
        running = getattr(p, "running", 0) if p is not None else 0
        wait = f": waiting for {running} attempt{'s' if running != 1 else ''} in flight" if running else ""
        return f"stopping{wait}", _pct(p)
    if p is None or (phase and not getattr(p, "attempt", 0) and not getattr(p, "running", 0)):
        return phase or PHASE_WORKER, 0
    msg = f"attempt {p.attempt}/{p.budget} · {best_text(tree) if tree is not None else 'no correct candidate yet'}"
    msg += f" · {p.correct} correct, {p.failures} failed"
    if p.running:  # and what they are doing: "2 running (1 checking, 1 queued)"
        msg += f", {p.running} running{doing_text(p) if getattr(p, 'doing', ()) else ''}"
    left = time_left_text(getattr(p, "time_left_s", None))
    if left:  # "about 3m10s left", at this run's pace (search/pace.py), as the CLI's live line says it
        msg += f" · {left}"
    if getattr(p, "message", ""):  # what an attempt waits for ("waiting for the plan agent (41 s, 310 tokens)")
        msg += f" · {p.message}"
    return msg, _pct(p)


def _pct(p: Any) -> int:
    if p is None or not getattr(p, "budget", 0):
        return 0
    return int(100 * min(p.attempt, p.budget) / p.budget)


def final_text(p: Any | None, tree: TreeView | None, reason: str) -> str:
    if p is None:
        return reason
    best = best_text(tree) if tree is not None else "no correct candidate"
    return f"{reason}: {p.attempt} attempts, {best}"


class WorkDone:
    """One work-done progress; ``on_cancel`` runs when the user cancels it
    (None: the progress offers no Cancel)."""

    def __init__(self, server: Any, token: str, title: str, on_cancel: Callable[[], None] | None,
                 min_interval_s: float = 0.2):
        self.server = server
        self.min_interval_s = min_interval_s
        self._last = 0.0
        self._pending: tuple[str, int | None] | None = None
        self._timer: Any = None
        self.token = token
        self.title = title
        self.on_cancel = on_cancel
        self.created = False
        self.ended = False

    async def begin(self, message: str = PHASE_WORKER) -> None:
        caps = self.server.client_capabilities
        window = getattr(caps, "window", None)
        if not (window and window.work_done_progress):
            return  # the client shows no progress: messages and diagnostics only
        try:
            await self.server.work_done_progress.create_async(self.token)
        except Exception as e:  # the client refused: carry on without a bar
            log.info("work done progress refused: %s", e)
            return
        self.created = True
        self.server.work_done_progress.begin(
            self.token,
            types.WorkDoneProgressBegin(title=self.title, cancellable=self.on_cancel is not None, message=message,
                                        percentage=0),
        )
        fut = self.server.work_done_progress.tokens.get(self.token)
        if fut is not None and self.on_cancel is not None:  # pygls cancels it on window/workDoneProgress/cancel
            fut.add_done_callback(lambda f: f.cancelled() and self._cancelled())

    def _cancelled(self) -> None:
        if not self.ended and self.on_cancel is not None:
            self.on_cancel()

    def report(self, message: str, percentage: int | None = None) -> None:
        """Report, at most every ``min_interval_s``: a burst of updates sends
        its last one when the interval is over."""
        if not self.created or self.ended:
            return
        self._pending = (message, percentage)
        if self._timer is not None:
            return
        loop = asyncio.get_running_loop()
        wait = self._last + self.min_interval_s - loop.time()
        if wait <= 0:
            self._send()
        else:
            self._timer = loop.call_later(wait, self._send)

    def _send(self) -> None:
        self._timer = None
        if self._pending is None or self.ended:
            return
        message, percentage = self._pending
        self._pending = None
        self._last = asyncio.get_running_loop().time()
        self.server.work_done_progress.report(
            self.token, types.WorkDoneProgressReport(message=message, percentage=percentage,
                                                     cancellable=self.on_cancel is not None)
        )

    def end(self, message: str) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._pending is not None:
            self._send()  # the last state before the end
        if self.created and not self.ended:
            self.ended = True
            self.server.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
            self.server.work_done_progress.tokens.pop(self.token, None)
        self.ended = True
