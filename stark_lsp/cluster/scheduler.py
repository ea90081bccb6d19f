"""A queue of candidates over a fixed number of actors; no Ray in here.

At most one evaluation is in flight per actor (two on one GPU would time each
other). Callers ``acquire`` an idle actor (waiting in line when all are busy),
and give it back with ``release``, or with ``replace`` when it was lost: a
lost actor is stopped and a new one started in the background, so the line
keeps moving on the others meanwhile. When no actor is alive and the last
start failed, waiting callers get ``ActorsUnavailable`` instead of waiting for
ever; the next ``acquire`` tries to start one again.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

log = logging.getLogger(__name__)


class ActorsUnavailable(RuntimeError):
    """No actor is alive and none could be started."""


@dataclass(eq=False)
class Member:
    index: int  # 1, 2, ... in order of starting (replacements get new numbers)
    handle: Any
    info: dict[str, Any] = field(default_factory=dict)
    busy: bool = False
    jobs: int = 0


class ActorSet:
    def __init__(self, size: int, start: Callable[[int], Member], stop: Callable[[Member], None],
                 retry_after_s: float = 30.0):
        self.size = max(1, size)
        self._start = start
        self._stop = stop
        self._retry_after_s = retry_after_s
        self._cond = threading.Condition()
        self._idle: list[Member] = []
        self._live: set[Member] = set()
        self._starting = 0
        self._error: BaseException | None = None
        self._closed = False
        self._numbers = itertools.count(1)
        self.replaced = 0  # actors lost and replaced, for reports and tests
        for _ in range(self.size):
            self._spawn()

    # ------------------------------------------------------------------
    def acquire(self) -> Member:
        with self._cond:
            if self._error is not None and not self._live and not self._starting and not self._closed:
                self._spawn_locked()  # the last start failed: try again for this caller
            while True:
                if self._closed:
                    raise ActorsUnavailable("the evaluator is closed")
                if self._idle:
                    m = self._idle.pop(0)
                    m.busy = True
                    return m
                if not self._live and not self._starting:
                    raise ActorsUnavailable(f"no evaluation actor could start: {self._error}")
                self._cond.wait(1.0)

    def release(self, member: Member) -> None:
        with self._cond:
            member.busy = False
            member.jobs += 1
            if member in self._live and not self._closed:
                self._idle.append(member)
                self._cond.notify()

    def replace(self, member: Member, reason: str = "") -> None:
        """Stop a lost (or stuck) actor and start another in its place."""
        with self._cond:
            if member not in self._live:
                return
            self._live.discard(member)
            member.busy = False
            if member in self._idle:
                self._idle.remove(member)
            self.replaced += 1
            if not self._closed:
                self._spawn_locked()
        log.warning("evaluation actor %d lost (%s): replacing it", member.index, reason or "no reason given")
        self._stop_quietly(member)

    def members(self) -> list[Member]:
        with self._cond:
            return sorted(self._live, key=lambda m: m.index)

    def wait_ready(self, count: int | None = None, timeout: float | None = None) -> list[Member]:
        """Blocks until ``count`` (default: all) actors are alive, or no start is left in progress."""
        want = self.size if count is None else count
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while len(self._live) < want and (self._starting or not self._live) and not self._closed:
                if not self._starting and self._error is not None:
                    break
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    break
                self._cond.wait(1.0 if left is None else min(1.0, left))
            return sorted(self._live, key=lambda m: m.index)

    def error(self) -> BaseException | None:
        return self._error

    def close(self) -> None:
        with self._cond:
            self._closed = True
            members, self._idle = list(self._live), []
            self._live.clear()
            self._cond.notify_all()
        for m in members:
            self._stop_quietly(m)

    # ------------------------------------------------------------------
    def _spawn(self) -> None:
        with self._cond:
            self._spawn_locked()

    def _spawn_locked(self, delay: float = 0.0) -> None:
        self._starting += 1
        n = next(self._numbers)
        threading.Thread(target=self._run_start, args=(n, delay), daemon=True, name=f"stark-actor-start-{n}").start()

    def _run_start(self, n: int, delay: float) -> None:
        if delay:
            time.sleep(delay)
        try:
            member = self._start(n)
        except BaseException as e:  # noqa: BLE001 - kept for the callers waiting for an actor
            log.warning("evaluation actor %d did not start: %s", n, e)
            with self._cond:
                self._starting -= 1
                self._error = e
                if self._live and not self._closed:  # the others carry on; try again later
                    self._spawn_locked(delay=self._retry_after_s)
                self._cond.notify_all()
            return
        with self._cond:
            self._starting -= 1
            if self._closed:
                stop_it = True
            else:
                stop_it = False
                self._error = None
                self._live.add(member)
                self._idle.append(member)
            self._cond.notify_all()
        if stop_it:
            self._stop_quietly(member)

    def _stop_quietly(self, member: Member) -> None:
        try:
            self._stop(member)
        except Exception as e:  # stopping a dead actor may fail: it is gone either way
            log.debug("stopping actor %d: %s", member.index, e)
