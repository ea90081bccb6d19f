"""The evaluator's trace: with ``STARK_EVAL_TRACE=FILE`` the judges append one JSON line per event.

For studying where an evaluation's time and memory go (``benchmarks/device_trace.py`` sums a trace
up); never read back by the product. The rows hold the judge's own data only: the timed processes'
calibrations and batches (``timed_calls.py``), the GPU gate's exclusive holds and waits
(``gpu_lock.py``), the judge's GPU memory by phase (``conversation.py``) and its work between two
evaluations (``process.py``). No candidate sent any of it. Every row carries the judge's pid and
the wall clock (``pid``, ``t``), so the judges' phases can be laid beside each other's timed windows.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any


def enabled() -> bool:
    return bool(os.environ.get("STARK_EVAL_TRACE"))


def write(row: dict[str, Any]) -> None:
    """One line in the trace; nothing when there is none or it cannot be written."""
    path = os.environ.get("STARK_EVAL_TRACE")
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({**row, "pid": os.getpid(), "t": round(time.time(), 4)}) + "\n")
    except (OSError, TypeError, ValueError):
        pass
