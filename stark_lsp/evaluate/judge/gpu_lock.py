"""One evaluation at a time on a GPU, across every STARK process on the machine.

Two evaluations on one GPU at once disturb each other's timings: a second
worker of the same pool, a bench and an editor's search, or two editor
windows. Each worker therefore holds an exclusive ``flock`` on a file named
after its GPU (the device's UUID) for the whole evaluation: load, trials,
timing. The lock is released when the evaluation ends or the process dies (the
kernel drops ``flock`` locks with the file descriptor), so a killed worker
never leaves it held.

The worker says when it holds the lock (``started``), and the pool measures
the evaluation's time limit from then: waiting for another process's
evaluation is not this candidate's run time.

Files live in ``$STARK_EVAL_LOCK_DIR`` (default ``/tmp``; a worker's own TMPDIR
is private, so it cannot be used). ``$STARK_EVAL_LOCK_NAME`` forces a lock on a
CPU worker too (tests).
"""

from __future__ import annotations

import fcntl
import os
import re
import sys
import time
from pathlib import Path
from typing import Any


def lock_dir() -> Path:
    return Path(os.environ.get("STARK_EVAL_LOCK_DIR") or "/tmp")


def lock_path(key: str) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", key).strip("_") or "gpu"
    return lock_dir() / f"stark-gpu-{safe}.lock"


def gpu_key(torch: Any, device: Any) -> str:
    """The GPU's UUID (stable across processes and CUDA_VISIBLE_DEVICES), else its PCI bus id."""
    try:
        props = torch.cuda.get_device_properties(device)
        uuid = getattr(props, "uuid", None)
        if uuid:
            return str(uuid)
        bus = getattr(props, "pci_bus_id", None)
        if bus is not None:
            return f"pci{bus}"
    except Exception:  # noqa: BLE001 - never stop a worker over its lock's name
        pass
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
    index = getattr(device, "index", None) or 0
    return f"cuda{visible[index].strip() if index < len(visible) and visible[index].strip() else index}"


class GpuLock:
    """``with GpuLock(key): ...`` holds the machine-wide lock of one GPU; ``waited_s`` says how
    long it took to get it."""

    def __init__(self, key: str):
        self.path = lock_path(key)
        self.waited_s = 0.0
        self._fd: int | None = None

    def __enter__(self) -> "GpuLock":
        fd = self._open()
        if fd is None:
            return self  # no lock file can be made here: run unlocked rather than fail the evaluation
        t0 = time.monotonic()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        self.waited_s = time.monotonic() - t0
        self._fd = fd
        return self

    def _open(self) -> int | None:
        """The lock file, shared by every user of the machine (flock works on a read-only
        descriptor, so another user's file will do); None when it cannot be opened at all."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                os.fchmod(fd, 0o666)  # past the umask, so other users can open it too
            except OSError:
                pass
            return fd
        except OSError:
            pass
        try:
            return os.open(self.path, os.O_RDONLY)
        except OSError as e:
            sys.stderr.write(f"stark: no GPU lock ({self.path}: {e}); evaluating without it\n")
            return None

    def __exit__(self, *exc: Any) -> None:
        if self._fd is not None:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
                self._fd = None
