"""Ctrl-C for long commands: the first stops cleanly, the second aborts."""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any


def on_interrupt(cancel: threading.Event, command: str, aborted: str = "aborted") -> Any:
    """Install the handler; returns the previous one (None off the main thread).

    First Ctrl-C: set ``cancel`` so the attempts in flight finish and nothing
    new starts. Second: exit at once, as if killed (stores stay consistent;
    the next run abandons what was in flight).
    """
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum: int, frame: Any) -> None:
        if cancel.is_set():
            print(f"\nstark {command}: {aborted}", file=sys.stderr)
            os._exit(130)
        cancel.set()
        print(f"\nstark {command}: stopping after the attempts in flight (Ctrl-C again to abort)", file=sys.stderr)

    return signal.signal(signal.SIGINT, handler)
