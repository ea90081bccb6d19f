"""The GPU's gate: what is timed has the GPU alone; everything else shares it, across every STARK process.

Two evaluations on one GPU disturb each other's *timings*, not their builds,
their loads or their checks. So each judge (``judge.py``) passes its phases
through a machine-wide gate, one per GPU (named after the device's UUID):

* **exclusive** for what is timed: the calibration of a process's protocol
  and its timed batches (the baselines', the candidates', the re-timing);
  also ncu's replays (``profile/run_once.py``);
* **shared** for the other phases that run work on the GPU: the reference's
  outputs and the task check, every step in which candidate code runs (its
  load, its first call, the trials, the launch check), the baselines' loads
  and first calls, clearing the process away;
* **none** while the CPU does the work: a process's start and its loading
  of the task's harness (trusted code), each Triton compile of a candidate's
  first call (the process says when one starts and ends: ``judge.py``
  ``_compile_step``), a ``load_inline`` candidate's CUDA build (said the same way:
  ``candidate/extension_builds.py``; the rest of its load holds the gate shared), the
  ``torch.compile`` baseline's compile (its process says it too, all of its
  first call but the graphs and kernels Inductor runs on the GPU:
  ``candidate/compile_stretch.py``; docs/EVALUATOR.md: what that leaves).
  A judge goes from the calibration straight to the candidate's load, and
  from the process's start into the calibration, without a hold in between
  that it does not need: every take of the gate can mean a wait behind a timer.

The gate is two ``flock`` files: the lock itself (shared or exclusive) and a
turnstile that an exclusive holder keeps while it waits and runs. A new
shared holder passes the turnstile first, so a waiting timer is never starved
by a stream of builds and checks, and waits at most for the shared phases
already running. ``flock`` locks go with the file descriptor, so a killed
process never leaves the gate held. A phase that had to wait says so
(``on_wait``: the pool does not count that time against the evaluation's
limit) and ``waited_s`` sums it.

Files live in ``$STARK_EVAL_LOCK_DIR`` (default ``/tmp``; a worker's own TMPDIR
is private, so it cannot be used). ``$STARK_EVAL_LOCK_NAME`` forces a gate on
a CPU worker too (tests).
"""

from __future__ import annotations

import fcntl
import os
import re
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from stark_lsp.evaluate.judge import trace

SHARED, EXCLUSIVE = "shared", "exclusive"


def lock_dir() -> Path:
    return Path(os.environ.get("STARK_EVAL_LOCK_DIR") or "/tmp")


def lock_path(key: str, part: str = "lock") -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", key).strip("_") or "gpu"
    return lock_dir() / f"stark-gpu-{safe}.{part}"


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


def _open(path: Path) -> int | None:
    """A gate file, shared by every user of the machine (flock works on a read-only descriptor,
    so another user's file will do); None when it cannot be opened at all."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            os.fchmod(fd, 0o666)  # past the umask, so other users can open it too
        except OSError:
            pass
        return fd
    except OSError:
        pass
    try:
        return os.open(path, os.O_RDONLY)
    except OSError as e:
        sys.stderr.write(f"stark: no GPU lock ({path}: {e}); evaluating without it\n")
        return None


class GpuGate:
    """One process's way through the gate of one GPU. ``with gate.hold(SHARED): ...`` (or
    EXCLUSIVE, or None for no hold) switches to that mode for the block and back after it;
    ``close()`` lets go of everything. ``key`` "" makes a gate that never waits (the CPU)."""

    def __init__(self, key: str, on_wait: Callable[[str, float | None], None] | None = None):
        self.key = key
        self.on_wait = on_wait  # (mode, None) before a wait, (mode, seconds) after it
        self.mode: str | None = None
        self.alone = False  # every mode held exclusive: an evaluation that must have the GPU to itself
        self.waited_s = 0.0
        self._held_since = 0.0  # when the exclusive hold began (``STARK_EVAL_TRACE``)
        self._label = ""  # what the mode held is for (the trace's names)
        self._lock: int | None = None
        self._turn: int | None = None
        if key:
            self._lock = _open(lock_path(key))
            self._turn = _open(lock_path(key, "turn")) if self._lock is not None else None

    @property
    def active(self) -> bool:
        return self._lock is not None

    @contextmanager
    def hold(self, mode: str | None, label: str = "") -> Iterator["GpuGate"]:
        before, before_label = self.mode, self._label
        self.switch(mode, label)
        try:
            yield self
        finally:
            self.switch(before, before_label)

    def switch(self, mode: str | None, label: str = "") -> None:
        """Hold the gate in ``mode`` from now on. The mode held is let go of first (a shared holder
        that waited for the exclusive hold while keeping its share would deadlock with another).
        ``label`` names the hold, and a wait for it, in the trace."""
        if self.alone and self._lock is not None:
            mode = EXCLUSIVE
        if mode == self.mode or self._lock is None:
            self.mode, self._label = mode, label
            return
        after = self._label
        self._let_go()
        self._label = label
        if mode is None:
            trace.write({"take": None, "for": label, "after": after})
            return
        t0 = time.monotonic()
        if not self._take(mode, blocking=False):
            if self.on_wait is not None:
                self.on_wait(mode, None)
            self._take(mode, blocking=True)
            waited = time.monotonic() - t0
            self.waited_s += waited
            trace.write({"wait": mode, "for": label, "after": after, "waited_s": round(waited, 4)})
            if self.on_wait is not None:
                self.on_wait(mode, waited)
        self.mode = mode
        if mode == EXCLUSIVE:
            self._held_since = time.monotonic()
        trace.write({"take": mode, "for": label, "after": after})  # every transition, waited for or not

    def _take(self, mode: str, blocking: bool) -> bool:
        nb = 0 if blocking else fcntl.LOCK_NB
        assert self._lock is not None
        try:
            if self._turn is not None:
                fcntl.flock(self._turn, fcntl.LOCK_EX | nb)
            try:
                fcntl.flock(self._lock, (fcntl.LOCK_EX if mode == EXCLUSIVE else fcntl.LOCK_SH) | nb)
            except BaseException:
                if self._turn is not None:
                    fcntl.flock(self._turn, fcntl.LOCK_UN)
                raise
        except BlockingIOError:
            return False
        if mode == SHARED and self._turn is not None:
            fcntl.flock(self._turn, fcntl.LOCK_UN)  # through the turnstile: the next one may pass
        return True

    def _let_go(self) -> None:
        if self.mode == EXCLUSIVE and self._lock is not None:
            trace.write({"gate": self._label or "exclusive", "held_s": round(time.monotonic() - self._held_since, 4)})
        if self.mode is not None and self._lock is not None:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            if self.mode == EXCLUSIVE and self._turn is not None:
                fcntl.flock(self._turn, fcntl.LOCK_UN)
        self.mode = None

    def close(self) -> None:
        self._let_go()
        for fd in (self._lock, self._turn):
            if fd is not None:
                os.close(fd)
        self._lock = self._turn = None


class GpuLock:
    """``with GpuLock(key): ...`` has the GPU alone (the gate held exclusive) for the block;
    ``waited_s`` says how long it took to get it."""

    def __init__(self, key: str):
        self.path = lock_path(key)
        self.key = key
        self.waited_s = 0.0
        self._gate: GpuGate | None = None

    def __enter__(self) -> "GpuLock":
        self._gate = GpuGate(self.key)
        self._gate.switch(EXCLUSIVE)
        self.waited_s = self._gate.waited_s
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._gate is not None:
            self._gate.close()
            self._gate = None
