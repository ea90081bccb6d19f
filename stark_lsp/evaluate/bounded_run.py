"""A build's command (nvcc, ninja and what they run, in the sandbox) with its output bounded.

The caller (the CLI, the language server) reads what a build prints. A candidate's source decides much of that
(a warning in a file that includes itself, a kernel's resources line per instantiation), and its build may run
for minutes: read whole, a build printing 340 MB took the caller's memory to 1 GiB before any parsing (session
31's sandbox review, a stand-in build on the CPU). Here the output (stdout and stderr together, in the order
printed) is drained to its end, but only its head and its tail are kept, with a line saying how much was left
out between them: the errors come first, ``ptxas -v``'s resources and the last errors last.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from collections import deque

HEAD_BYTES = 4 << 20  # an honest build's whole log, resources lines included, fits in this
TAIL_BYTES = 1 << 20


def run_bounded(argv: list[str], *, cwd: str | os.PathLike, env: dict[str, str], timeout_s: float,
                head: int = HEAD_BYTES, tail: int = TAIL_BYTES) -> tuple[int | None, str]:
    """Run ``argv`` in its own session; (its exit code, or None when ``timeout_s`` passed and it was killed with
    its session; its output, at most ``head`` + ``tail`` bytes of it and a line for the rest)."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    first = bytearray()
    last: deque[bytes] = deque()
    last_size = dropped = 0
    deadline = time.monotonic() + timeout_s
    timed_out = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
            data = os.read(fd, 1 << 16)
            if not data:
                break
            if len(first) < head:
                take = head - len(first)
                first += data[:take]
                data = data[take:]
            if data:
                last.append(data)
                last_size += len(data)
                while last_size - len(last[0]) >= tail:  # the oldest chunk is not needed to keep ``tail`` bytes
                    dropped += len(last[0])
                    last_size -= len(last.popleft())
        if not timed_out:  # its output closed: it ends now, or is killed at the deadline like one still printing
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
    finally:
        if timed_out or proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
        proc.stdout.close()
    tail_bytes = b"".join(last)
    if last_size > tail:
        dropped += last_size - tail
        tail_bytes = tail_bytes[-tail:]
    middle = f"\n... ({dropped} bytes of the build's output left out) ...\n".encode() if dropped else b""
    text = (bytes(first) + middle + tail_bytes).decode("utf-8", "replace")
    return (None if timed_out else proc.returncode), text
