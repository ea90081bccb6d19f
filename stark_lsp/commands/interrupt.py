"""Ctrl-C, SIGTERM and SIGHUP for long commands: the first stops cleanly, the second aborts.

All three take the same orderly path (``kill PID``, a closed terminal or a job scheduler's stop are
as Ctrl-C): the attempts in flight are stopped, stored as stopped and redone on resume; the command
says which signal stopped it and exits with its code (exit_codes: 130, 143, 129).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from typing import Any, Callable

from stark_lsp import exit_codes

# what each signal is called in the lines the command prints, and its exit code (128 + the signal's number)
SIGNALS = {
    signal.SIGINT: ("interrupted", "Ctrl-C", exit_codes.INTERRUPTED),
    signal.SIGTERM: ("terminated", "SIGTERM", exit_codes.TERMINATED),
}
if hasattr(signal, "SIGHUP"):
    SIGNALS[signal.SIGHUP] = ("hung up", "SIGHUP", exit_codes.HUNG_UP)


class Interrupts:
    """The signals that stop a command, while installed (``with``): ``signum`` is the first one received."""

    def __init__(self, cancel: threading.Event, command: str, aborted: str = "aborted",
                 again: str = "when you run the same command again") -> None:
        self.cancel, self.command, self.aborted, self.again = cancel, command, aborted, again
        self.signum: int | None = None
        # what a signal cuts now, where it is not the attempts in flight (the command sets it: the search's
        # re-timing), and what it said when the first signal came ('' for the attempts in flight)
        self.doing: Callable[[], str] = lambda: ""
        self.cut = ""
        self._previous: dict[int, Any] = {}

    @property
    def word(self) -> str:
        """"interrupted", "terminated" or "hung up": what the command's last lines say happened."""
        return SIGNALS.get(self.signum, SIGNALS[signal.SIGINT])[0]

    @property
    def code(self) -> int:
        return SIGNALS.get(self.signum, SIGNALS[signal.SIGINT])[2]

    def handler(self, signum: int, frame: Any) -> None:
        if self.cancel.is_set():
            print(f"\nstark {self.command}: {self.aborted}", file=sys.stderr)
            os._exit(SIGNALS.get(signum, SIGNALS[signal.SIGINT])[2])
        self.signum = signum
        self.cut = self.doing()
        self.cancel.set()
        name = SIGNALS.get(signum, SIGNALS[signal.SIGINT])[1]
        said = "" if signum == signal.SIGINT else f"{SIGNALS[signum][0]} ({name}): "
        again = "Ctrl-C" if signum == signal.SIGINT else name
        what = self.cut or f"the attempts in flight are cut and will be redone {self.again}"
        print(f"\nstark {self.command}: {said}stopping: {what} ({again} again to abort)", file=sys.stderr)

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is threading.main_thread():  # signals reach the main thread only
            for signum in SIGNALS:
                self._previous[signum] = signal.signal(signum, self.handler)
        return self

    def __exit__(self, *exc: Any) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
        self._previous.clear()
