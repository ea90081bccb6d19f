"""The open documents' task files, watched for going away (or coming back) outside the editor.

A kernel or its harness removed from a terminal sends no ``didDeleteFiles``,
and a search's own watch (``file_events.watch_job``) only runs while it
searches. So, once a second, the server looks at whether each open
document's kernel and harness are on disk; where that changed and no search
runs for it, the document is resolved again (``StarkServer.resolve``) and
republished: a tab whose harness went away says so, and keeps no figure of
the task it no longer has. A ``stat`` of two files per open document: no
watcher, and it works the same for every client (Neovim 0.7 sends no file
events at all).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def on_disk(path: Path | None, harness: Path | None) -> tuple[bool, bool]:
    """(the kernel is on disk, its harness is)."""
    return (path is not None and Path(path).exists(), harness is not None and Path(harness).exists())


class OpenFilesWatch:
    def __init__(self, host: Any, poll_s: float = 1.0):
        self.host = host
        self.poll_s = poll_s
        self._seen: dict[str, tuple[bool, bool]] = {}  # uri -> on_disk at the last look
        self._harness: dict[str, Path] = {}  # uri -> its harness when last known (a task gone keeps none)
        self._task: asyncio.Task | None = None

    def start(self, state: Any = None) -> None:
        """Watch from now on; ``state``: a document just resolved, whose files are as they are now."""
        if state is not None and state.path is not None:
            self._note(state.uri, state)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="watch the open task files")

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.poll_s)
            try:
                await self.look()
            except Exception:  # noqa: BLE001 - a watch that fails once looks again a second later
                log.exception("watching the open task files")

    def _note(self, uri: str, state: Any) -> tuple[bool, bool]:
        if state.task is not None and state.task.harness is not None:
            self._harness[uri] = Path(state.task.harness)
        now = self._seen[uri] = on_disk(state.path, self._harness.get(uri))
        return now

    async def look(self) -> list[str]:
        """Resolve again every open document whose files changed on disk; the uris it resolved."""
        changed = []
        for uri, state in list(self.host.docs.items()):
            if state.path is None:
                continue
            before = self._seen.get(uri)
            now = self._note(uri, state)
            if before is None or before == now:
                continue
            if self.host.jobs.running(state.task_id) is not None:
                continue  # the search's own watch stops it, then the tab is resolved
            await self.host.resolve(state)
            changed.append(uri)
        for uri in set(self._seen) - set(self.host.docs):
            del self._seen[uri]
            self._harness.pop(uri, None)
        return changed
