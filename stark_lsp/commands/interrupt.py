"""Ctrl-C for long commands: the first stops cleanly, the second aborts."""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any


def on_interrupt(cancel: threading.Event, command: str, aborted: str = "aborted",
                 again: str = "when you run the same command again") -> Any:
    """Install the handler; returns the previous one (None off the main thread).

    First Ctrl-C: set ``cancel``: nothing new starts, and the evaluations in flight
    are stopped (their attempts are stored as stopped, not failed, and redone on
    resume). Second: exit at once, as if killed (stores stay consistent;
    the next run abandons what was in flight).
    """
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: Any) -> None:
        if cancel.is_set():
            print(f"\nstark {command}: {aborted}", file=sys.stderr)
            os._exit(130)
        cancel.set()
        print(f"\nstark {command}: stopping: the attempts in flight are cut and will be redone {again} "
              f"(Ctrl-C again to abort)", file=sys.stderr)

    return signal.signal(signal.SIGINT, handler)
