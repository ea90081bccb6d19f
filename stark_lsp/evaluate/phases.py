"""What an evaluation in flight is doing, for the progress lines: building, queued, timing the
baselines, starting, checking, timing.

The judge says which of its phases just ended (``{"phase": NAME}`` lines on its channel, written by
``judge/process.py`` from ``EvalState.mark``); the pool adds "queued" (no judge free, or the judge
waiting at the GPU's gate) and the evaluator "building" (nvcc). Whoever runs an evaluation listens
through a context variable set in its own thread (``listening``), so ``Evaluator.evaluate`` keeps
its signature and test doubles need nothing. A figure never comes from here: these are words for a
person watching, and a listener that fails is ignored.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterator

BUILDING = "building"
QUEUED = "queued"
BASELINES = "timing the baselines"
STARTING = "starting"
CHECKING = "checking"
TIMING = "timing"
ORDER = (BUILDING, QUEUED, BASELINES, STARTING, CHECKING, TIMING)  # as an evaluation goes

# the judge's phase that ended -> what it does next (EvalState.mark's names)
_NEXT = {"the task's check": STARTING, "sandbox": BASELINES, "reference timing": STARTING,
         "reference outputs": STARTING, "process start": STARTING, "calibration": STARTING,
         "reference in turn": STARTING, "load": STARTING,
         "first call": CHECKING, "trials": TIMING, "launch check": TIMING, "timing": CHECKING}

_LISTENER: ContextVar[Callable[[str], None] | None] = ContextVar("stark_evaluation_phase", default=None)


def after(judge_phase: object) -> str | None:
    """What the judge does once ``judge_phase`` has ended, or None for a name it does not use."""
    return _NEXT.get(judge_phase) if isinstance(judge_phase, str) else None


@contextmanager
def listening(listener: Callable[[str], None]) -> Iterator[None]:
    """Within the block, in this thread, ``report`` calls ``listener``."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


def report(phase: str | None) -> None:
    listener = _LISTENER.get()
    if listener is None or phase is None:
        return
    try:
        listener(phase)
    except Exception:  # noqa: BLE001 - a progress display never fails an evaluation
        pass
