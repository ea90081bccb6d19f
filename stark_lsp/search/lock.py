"""One search per tree at a time: an advisory file lock beside the store.

The lock is an ``flock`` on ``<store dir>/<task id>.lock``; the kernel drops it
when the process dies (even by SIGKILL), so a killed search never blocks the
next one. Where ``fcntl`` does not exist the lock is a no-op.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


class SearchBusy(RuntimeError):
    """Another process is searching this tree right now."""


@contextmanager
def tree_lock(store_path: Path, task_id: str) -> Iterator[None]:
    if fcntl is None:
        yield
        return
    path = Path(store_path).parent / f"{task_id}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise SearchBusy(f"a search on this task is already running (pid {other})") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing releases the lock
