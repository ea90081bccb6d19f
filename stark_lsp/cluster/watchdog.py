"""Kills an actor's evaluation workers when the actor itself dies.

Ray kills a worker's child processes when the worker exits or is killed, but
not when it crashes (segfault, OOM killer). The evaluation workers run in
their own sessions (so time limits can kill whole process groups), so they
would outlive a crashed actor, a hung candidate holding its GPU for ever. The
actor starts this small process beside it, in its own session, and keeps the
workers' process group ids in a file; when the actor is gone, the watchdog
kills those groups and exits.

    python -m stark_lsp.cluster.watchdog ACTOR_PID PGIDS_FILE
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[-1][:1] not in ("Z", "X")
    except OSError:
        return True


def read_pgids(path: Path) -> list[int]:
    try:
        return [int(x) for x in path.read_text().split() if x.isdigit()]
    except OSError:
        return []


def watch(actor_pid: int, pgids_file: Path, poll_s: float = 0.5) -> list[int]:
    """Blocks while the actor lives; then kills the listed groups and returns them."""
    while alive(actor_pid):
        time.sleep(poll_s)
    killed = []
    for pgid in read_pgids(pgids_file):
        if pgid in (0, 1, os.getpgrp()):
            continue
        try:
            os.killpg(pgid, signal.SIGKILL)
            killed.append(pgid)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        pgids_file.unlink()
    except OSError:
        pass
    return killed


def main(argv: list[str]) -> int:
    watch(int(argv[0]), Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
