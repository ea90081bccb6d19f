"""Whether a failure's message says the GPU's memory ran out, and what to do then.

Out of memory is the machine's state, not a broken task nor a wrong candidate: beside other
judges it is tried again with the GPU to itself (``judge/process.py``), and a reference that does
not fit even then is said to be too large for this GPU, not to be fixed."""

from __future__ import annotations

import re

_OOM = re.compile(r"out of memory|OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED|CUDNN_STATUS_ALLOC_FAILED|"
                  r"cudaErrorMemoryAllocation|out of GPU memory")


def ran_out_of_memory(text: str) -> bool:
    """Whether a failure's message says the GPU's memory ran out."""
    return bool(_OOM.search(text))


def task_error_fix(message: str) -> str:
    """What a task error asks of the user: a task too large for this GPU's memory is not broken."""
    if ran_out_of_memory(message):
        return ("the task does not fit this GPU's memory: smaller inputs in get_inputs(), or a GPU with more "
                "memory; nothing else should be running on it")
    return "fix the task, then run again"
