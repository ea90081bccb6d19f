"""$/progress for a running search: window/workDoneProgress create, begin,
report (attempt n/N, best speedup so far), end; cancellable by the client.

``progress_text`` is pure. ``WorkDone`` wraps pygls's progress API; every
method must be called on the event loop (the search thread goes through
``loop.call_soon_threadsafe``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from lsprotocol import types

log = logging.getLogger(__name__)


def progress_text(p: Any) -> tuple[str, int]:
    """(message, percentage) for a ``stark_lsp.search.engine.Progress``."""
    best = f"best {p.best_speedup:.2f}× (#{p.best_node_id})" if p.best_speedup is not None else "no correct candidate yet"
    msg = f"attempt {p.attempt}/{p.budget}, {best}, {p.correct} correct, {p.failures} failed"
    if p.running:
        msg += f", {p.running} running"
    pct = int(100 * min(p.attempt, p.budget) / p.budget) if p.budget else 0
    return msg, pct


def final_text(p: Any | None, reason: str) -> str:
    if p is None:
        return reason
    best = f"best {p.best_speedup:.2f}×" if p.best_speedup is not None else "no correct candidate"
    return f"{reason}: {p.attempt} attempts, {best}"


class WorkDone:
    """One work-done progress; ``on_cancel`` runs when the user cancels it."""

    def __init__(self, server: Any, token: str, title: str, on_cancel: Callable[[], None], min_interval_s: float = 0.25):
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

    async def begin(self) -> None:
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
            types.WorkDoneProgressBegin(title=self.title, cancellable=True, message="starting", percentage=0),
        )
        fut = self.server.work_done_progress.tokens.get(self.token)
        if fut is not None:  # pygls cancels this future on window/workDoneProgress/cancel
            fut.add_done_callback(lambda f: f.cancelled() and self._cancelled())

    def _cancelled(self) -> None:
        if not self.ended:
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
            self.token, types.WorkDoneProgressReport(message=message, percentage=percentage, cancellable=True)
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
