"""Telling the editor that a tree or the running searches changed, in bursts.

A search's nodes arrive many a second; each task's documents are
republished (diagnostics) and sent ``stark/treeChanged`` at most every
``PUBLISH_DELAY_S``, and ``stark/searches`` (what runs, for the status bar)
at most once per turn of the event loop, however often asked.
"""

from __future__ import annotations

import asyncio
from typing import Any

from stark_lsp.server import commands as cmd
from stark_lsp.server.optimize_jobs import searches_payload

PUBLISH_DELAY_S = 0.1  # bursts of node updates become one publish


class TreeNotices:
    def __init__(self, host: Any) -> None:
        self.host = host  # its documents, jobs, publish() and protocol
        self._pending: dict[str, asyncio.TimerHandle] = {}  # task id -> its publish, due
        self._searches_pending = False

    def tree_changed(self, task_id: str | None, force: bool = False) -> None:
        """Republish diagnostics and send stark/treeChanged for every open
        document of this task, at most every PUBLISH_DELAY_S."""
        if task_id is None:
            return
        pending = self._pending.pop(task_id, None)
        if force:
            if pending is not None:
                pending.cancel()
            self._flush(task_id)
        elif pending is not None:
            self._pending[task_id] = pending
        else:
            loop = asyncio.get_running_loop()
            self._pending[task_id] = loop.call_later(PUBLISH_DELAY_S, self._flush, task_id)

    def _flush(self, task_id: str) -> None:
        host = self.host
        self._pending.pop(task_id, None)
        job = host.jobs.running(task_id)
        for state in list(host.docs.values()):
            if state.task_id != task_id:
                continue
            host.publish(state.uri)
            kernel = job.kernel if job is not None else (state.kernels[0].name if state.kernels else "")
            host.protocol.notify(cmd.TREE_CHANGED, {"uri": state.uri, "kernel": kernel, "task_id": task_id})
        if job is not None:
            self.searches_changed()

    def searches_changed(self) -> None:
        """Send stark/searches (what runs), once per loop turn however often asked."""
        if self._searches_pending:
            return
        self._searches_pending = True
        asyncio.get_running_loop().call_soon(self._send_searches)

    def _send_searches(self) -> None:
        self._searches_pending = False
        self.host.protocol.notify(cmd.SEARCHES, searches_payload(self.host))
