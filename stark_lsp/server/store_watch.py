"""Live updates from outside: watch ``<workspace>/.stark/`` with watchfiles.

A search started from a terminal (``stark optimize``) writes the same
``tree.sqlite``; every write touches the file or its WAL, the watcher fires,
and the server re-reads the trees of the open documents (in a worker thread)
and republishes hovers' data, diagnostics and ``stark/treeChanged``.

The directory may not exist yet (nothing was ever optimized here): the
watcher then checks for it every ``poll_s`` seconds and never creates it.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Awaitable, Callable

log = logging.getLogger(__name__)

WATCHED_SUFFIXES = (".sqlite", ".sqlite-wal", ".sqlite-shm")


def _is_store_file(path: str) -> bool:
    return path.endswith(WATCHED_SUFFIXES)


class StoreWatcher:
    def __init__(self, directory: Path, on_change: Callable[[], Awaitable[None]], poll_s: float = 1.0,
                 debounce_ms: int = 150):
        self.directory = Path(directory)
        self.on_change = on_change
        self.poll_s = poll_s
        self.debounce_ms = debounce_ms
        self._stop = asyncio.Event()
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"watch {self.directory}")

    def stop(self) -> None:
        self._stop.set()

    async def _run(self) -> None:
        from watchfiles import awatch

        while not self._stop.is_set():
            if not self.directory.is_dir():
                try:
                    await asyncio.wait_for(self._stop.wait(), timeout=self.poll_s)
                except asyncio.TimeoutError:
                    pass
                continue
            try:
                await self.on_change()  # it may have appeared with trees in it
                async for _changes in awatch(
                    self.directory,
                    watch_filter=lambda _change, path: _is_store_file(path),
                    stop_event=self._stop,
                    debounce=self.debounce_ms,
                    recursive=False,
                ):
                    await self.on_change()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # the directory vanished, inotify limits ...: retry later
                log.warning("watching %s: %s", self.directory, e)
                try:
                    await asyncio.wait_for(self._stop.wait(), timeout=self.poll_s)
                except asyncio.TimeoutError:
                    pass
