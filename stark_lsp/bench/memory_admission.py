"""Memory admission: the tasks searched at once on one GPU (``stark bench --jobs``) share its memory.

Before a task's runs start on a GPU the bench estimates what its judge and candidate processes will hold
at their peak (``estimate_gib``), and the GPU's ``MemoryGate`` admits it only where that fits beside the
tasks running there. A task that does not fit waits, first come first served, and no later task starts
beside the tasks while it waits; a task larger than the whole budget runs alone (it is never refused for
its size: alone is the best this GPU can do for it). Once an evaluation of the task reported its inputs
and outputs (``EvalResult.io``) the estimate is made again from them and the task's share resized.

**The estimate**: ``max(FLOOR_GIB, CALL_FACTOR x one call's inputs and outputs)``, times the evaluator's
judges (``--workers``). The factor is the judge's memory plan (docs/EVALUATOR.md) plus the candidate's
process: while a candidate's trials are checked the judge holds one call's inputs, the reference's outputs,
the candidate's outputs and the first call's outputs it keeps, with what the reference makes on the way
(RMSNorm's square of its input); the candidate's process holds its own call's inputs and outputs. Measured
(docs/benchmarks.md, session 23, an 80 GB H100): ``36_RMSNorm_`` (7.0 GiB in, 7.0 out a call: 14 GiB)
peaked at 42.0 GiB in its judge's task check, 3 calls' worth; with its candidate's 14 that is 56 GiB, 4
calls. ``47_Sum_reduction`` (8.0 GiB a call): 32 GiB. Side by side the two (88 GiB by the estimate) ran out
of the H100's 79 GiB: 5 of their 8 evaluations were evaluated again alone; on this estimate they no longer
start beside each other there, and still do on an H200 (140 GiB). The floor is what a job holds whatever
its task: two CUDA contexts, the protocol's buffers and kernels, the caching allocator's slack (not
measured apart; chosen, not fitted).

What the estimate does not see: a reference's intermediates larger than its inputs and outputs, and a
library's workspace. A level-2 3-D transposed convolution of about 2 GiB a call peaked at 46 GiB in its
judge (session 14, an H200, before the judge's memory plan); such tasks stay under ``--jobs``' default (one
job per 12 GiB of the GPU, ``commands/bench_cmd.GIB_PER_JOB``: six level-2 searches peaked at 57 GiB together
on an 80 GB H100, session 24), and a judge that runs out evaluates again with the GPU to itself. The judge reports no memory peak in ``EvalResult``
(only the trace, ``STARK_EVAL_TRACE``), so the estimate is not refined from one.

Pure logic: no torch, no GPU; the bench's runner (``runner.py``) holds one gate per GPU.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from itertools import count
from typing import Callable

from .call_size import CallSize

GIB = float(1 << 30)
FLOOR_GIB = 4.0  # what a job holds whatever its task (chosen, not measured)
CALL_FACTOR = 4.0  # one call's inputs and outputs: 3 in the judge, 1 in the candidate's process (RMSNorm, above)
BUDGET_SHARE = 0.95  # of a GPU's total memory: the driver's own and fragmentation keep the rest
POLL_S = 0.5  # how often a waiting task looks at its stop condition (Ctrl-C, --stop-after)

StopFn = Callable[[], bool]
WaitFn = Callable[[float, float, float], None]  # need, free, budget (GiB): called when a task starts waiting


def estimate_gib(size: CallSize | None, workers: int = 1) -> float:
    """GiB of GPU memory a task's searches hold at their peak: ``max(FLOOR_GIB, CALL_FACTOR x call)`` per
    judge; the floor where the call's size is unknown."""
    call = 0.0 if size is None else size.total_bytes / GIB
    return max(FLOOR_GIB, CALL_FACTOR * call) * max(1, workers)


def budget_gib(total_gib: float) -> float:
    """The share of a GPU of ``total_gib`` the tasks' estimates may fill."""
    return BUDGET_SHARE * total_gib


def gib_text(gib: float) -> str:
    return f"{gib:.0f} GiB" if gib >= 10 else f"{gib:.1f} GiB"


@dataclass(eq=False)
class Ticket:
    """A task's request for GPU memory: waiting, then held (``admitted``) until released."""

    need_gib: float
    label: str = ""
    number: int = 0
    admitted: bool = False
    released: bool = False
    alone: bool = False  # admitted larger than the whole budget: nothing starts beside it
    waited: bool = field(default=False)  # it had to wait for memory


class MemoryGate:
    """One GPU's memory shared among the tasks on it. Thread-safe.

    ``request`` queues a ticket (first come, first served); ``wait`` blocks until it is at the head of
    the queue and fits beside the tickets held (or nothing is held: a ticket larger than the budget is
    admitted alone); ``release`` gives its share back (always: a run that failed too); ``resize`` changes
    a held ticket's share once the task's size is measured. ``admit`` is request and wait; ``hold`` a
    context manager that releases on the way out, on an exception too."""

    def __init__(self, budget_gib: float, poll_s: float = POLL_S):
        if budget_gib <= 0:
            raise ValueError(f"a GPU memory budget must be positive, not {budget_gib}")
        self.budget_gib = float(budget_gib)
        self.poll_s = poll_s
        self._cond = threading.Condition()
        self._waiting: list[Ticket] = []
        self._held: list[Ticket] = []
        self._numbers = count(1)
        self.admitted_order: list[str] = []  # labels in the order they were admitted (for tests and logs)

    # what it holds ----------------------------------------------------------------------------------
    @property
    def used_gib(self) -> float:
        with self._cond:
            return self._used()

    @property
    def free_gib(self) -> float:
        with self._cond:
            return max(0.0, self.budget_gib - self._used())

    def holders(self) -> list[str]:
        with self._cond:
            return [t.label for t in self._held]

    def waiting(self) -> int:
        with self._cond:
            return len(self._waiting)

    def _used(self) -> float:
        return sum(t.need_gib for t in self._held)

    def _fits(self, t: Ticket) -> bool:
        """At the head of the queue, and beside what is held (nothing held: whatever its size)."""
        if not self._waiting or self._waiting[0] is not t:
            return False
        if not self._held:
            return True
        if any(h.alone for h in self._held):
            return False
        return self._used() + t.need_gib <= self.budget_gib

    # requests ---------------------------------------------------------------------------------------
    def request(self, need_gib: float, label: str = "") -> Ticket:
        """Queue a request (it does not block); ``wait`` for it."""
        t = Ticket(max(0.0, float(need_gib)), label, next(self._numbers))
        with self._cond:
            self._waiting.append(t)
        return t

    def wait(self, t: Ticket, stop: StopFn | None = None, on_wait: WaitFn | None = None) -> bool:
        """Block until ``t`` is admitted (True), or ``stop()`` says to give up (False: withdrawn). ``on_wait``
        is called once, outside the gate's lock, if it has to wait."""
        told = False
        while True:
            with self._cond:
                if t.admitted:
                    return True
                if t.released:
                    return False
                if self._fits(t):
                    self._waiting.remove(t)
                    t.admitted, t.alone = True, t.need_gib > self.budget_gib
                    self._held.append(t)
                    self.admitted_order.append(t.label)
                    self._cond.notify_all()  # the next in the queue may fit too
                    return True
                if stop is not None and stop():
                    self._withdraw(t)
                    return False
                if told or on_wait is None:
                    t.waited = True
                    self._cond.wait(self.poll_s)
                    continue
                t.waited, told = True, True
                need, free = t.need_gib, max(0.0, self.budget_gib - self._used())
            on_wait(need, free, self.budget_gib)

    def admit(self, need_gib: float, label: str = "", stop: StopFn | None = None,
              on_wait: WaitFn | None = None) -> Ticket | None:
        t = self.request(need_gib, label)
        return t if self.wait(t, stop, on_wait) else None

    def release(self, t: Ticket | None) -> None:
        """Give ``t``'s share back (a waiting ticket is withdrawn); twice is once."""
        if t is None:
            return
        with self._cond:
            if t in self._held:
                self._held.remove(t)
            self._withdraw(t)

    def _withdraw(self, t: Ticket) -> None:
        if t in self._waiting:
            self._waiting.remove(t)
        t.released = True
        self._cond.notify_all()

    def resize(self, t: Ticket, need_gib: float) -> None:
        """A held (or waiting) ticket's new need, measured: a smaller one lets others in; a larger one keeps
        later tasks out (the tasks running beside it are not stopped)."""
        with self._cond:
            t.need_gib = max(0.0, float(need_gib))
            if t.admitted and not t.released:
                t.alone = t.need_gib > self.budget_gib
            self._cond.notify_all()

    def wait_for_turn(self, stop: StopFn | None = None) -> bool:
        """Block until no request waits here (True), or ``stop()`` (False): a job takes its next task only
        then, so no later task is taken to start beside one that waits, nor held back on this GPU while
        another GPU has room."""
        with self._cond:
            while self._waiting:
                if stop is not None and stop():
                    return False
                self._cond.wait(self.poll_s)
            return True

    def hold(self, need_gib: float, label: str = "", stop: StopFn | None = None,
             on_wait: WaitFn | None = None) -> _Held:
        return _Held(self, need_gib, label, stop, on_wait)


class _Held:
    """``with gate.hold(need) as ticket:``: ticket None when stopped while waiting; released on the way out."""

    def __init__(self, gate: MemoryGate, need_gib: float, label: str, stop: StopFn | None, on_wait: WaitFn | None):
        self.gate, self.args = gate, (need_gib, label, stop, on_wait)
        self.ticket: Ticket | None = None

    def __enter__(self) -> Ticket | None:
        self.ticket = self.gate.admit(*self.args)
        return self.ticket

    def __exit__(self, *exc: object) -> None:
        self.gate.release(self.ticket)
