"""The zygote's trusted builds on disk, so a new zygote loads what the last one compiled.

Every zygote (one a judge, and a new one when a sandbox is spent) builds the
same things before any candidate exists: Triton's driver stub, the device
chain's kernels and their launcher stubs, about 4 s of an H200 machine's
start. The judge gives it two descriptors (``open_for``): the last archive
of those builds (``sandbox/build_archive.py``) from
``$STARK_EVAL_BUILD_CACHE`` (set by the evaluator to ``<cache>/builds``; the
sandbox never sees the folder), and a new file for what it builds. The
zygote closes both before it says it is ready, so no candidate ever holds
them; ``keep`` then puts the new archive in place of the old.

What is trusted, and why:

* an archive is written only from a zygote that was sandboxed and had run
  no candidate yet: what it built is the judge's own code, compiled by
  Triton and the system's compiler;
* one is read only if the folder and the file are the user's and writable
  by nobody else (``user_owned.owned``), and it is used by the zygote
  only through Triton's own cache keys: a file whose key does not match
  what is compiled now is never loaded;
* the file's name covers Triton's, torch's and Python's versions, the GPU's
  architecture and the bytes of the modules that say what is built, so a
  changed build starts a new file (the oldest are removed past ``KEEP``).

Setting ``STARK_EVAL_BUILD_CACHE`` to nothing turns it off.
"""

from __future__ import annotations

import hashlib
import os
import platform
import sys
import tempfile
from pathlib import Path

from stark_lsp.evaluate.judge.user_owned import owned
from stark_lsp.evaluate.sandbox import build_archive

KEEP = 4  # archives kept in the folder (other versions, other GPUs); the oldest go
_CODE = ("sandbox/zygote.py", "sandbox/triton_launchers.py", "sandbox/triton_cache.py", "wire/device_chain_kernels.py",
         "wire/signed_sum.py")


def directory() -> Path | None:
    d = os.environ.get("STARK_EVAL_BUILD_CACHE", "")
    return Path(d) if d else None


def name(arch: int) -> str:
    """The archive's file name for this Triton, torch, Python, GPU architecture and build code."""
    h = hashlib.sha256()
    try:
        import triton

        tv = triton.__version__
    except ImportError:
        tv = "none"
    import torch

    here = Path(__file__).resolve().parent.parent
    h.update(f"{tv}|{torch.__version__}|{sys.version}|{platform.machine()}|{arch}".encode())
    for rel in _CODE:
        try:
            h.update((here / rel).read_bytes())
        except OSError:
            h.update(rel.encode())
    return f"sm{arch}-{h.hexdigest()[:24]}.builds"


class Exchange:
    """The two descriptors a zygote gets (``seed_fd`` may be None: nothing cached yet), and the
    new file's path until ``keep`` or ``discard``."""

    def __init__(self, final: Path, seed_fd: int | None, built_fd: int, tmp: Path, seed_size: int):
        self.final, self.seed_fd, self.built_fd, self.tmp, self.seed_size = final, seed_fd, built_fd, tmp, seed_size

    def fds(self) -> tuple[int, ...]:
        return tuple(fd for fd in (self.seed_fd, self.built_fd) if fd is not None)

    def passed(self) -> None:
        """The zygote holds its own copies now: the judge's are closed."""
        for fd in self.fds():
            try:
                os.close(fd)
            except OSError:
                pass
        self.seed_fd = None

    def keep(self, sandboxed: bool) -> bool:
        """After the zygote said it is ready: the new archive replaces the old where it came from a
        sandbox, is well formed and holds something the old did not; whether it was kept."""
        try:
            data = self.tmp.read_bytes()
            files = build_archive.unpack(data) if data else {}
            unchanged = self.seed_size == len(data) and self.final.exists() and self.final.read_bytes() == data
            if not (sandboxed and files) or unchanged:
                self.discard()
                if files and self.final.exists():
                    os.utime(self.final)  # still in use: the last to be pruned
                return False
            os.replace(self.tmp, self.final)
        except (OSError, build_archive.BadArchive):
            self.discard()
            return False
        _prune(self.final.parent)
        return True

    def discard(self) -> None:
        try:
            self.tmp.unlink()
        except OSError:
            pass


def open_for(arch: int) -> Exchange | None:
    """The descriptors for a new zygote building for ``arch``; None where there is no cache (off, on
    the CPU, or a folder that cannot be made or is not the user's alone)."""
    d = directory()
    if d is None or arch <= 0:
        return None
    try:
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not owned(d):
            return None
        final = d / name(arch)
        seed_fd, seed_size = None, 0
        if final.exists() and owned(final):
            seed_fd = os.open(final, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            seed_size = os.fstat(seed_fd).st_size
        fd, tmp = tempfile.mkstemp(prefix=".new-", suffix=".builds", dir=d)
    except OSError:
        return None
    return Exchange(final, seed_fd, fd, Path(tmp), seed_size)


def _prune(d: Path) -> None:
    """The newest ``KEEP`` archives stay; new files a judge left half written (it was killed) go after an hour."""
    import time

    try:
        kept = sorted((p for p in d.glob("*.builds") if not p.name.startswith(".")),
                      key=lambda p: p.stat().st_mtime, reverse=True)
        stale = [p for p in d.glob(".new-*.builds") if time.time() - p.stat().st_mtime > 3600]
        for p in [*kept[KEEP:], *stale]:
            p.unlink()
    except OSError:
        pass
