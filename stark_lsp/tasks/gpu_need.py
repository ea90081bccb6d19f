"""Which tasks cannot run at all without an NVIDIA GPU: the one rule the server (its refusal and its
disabled "Optimize"), the CLI (its refusals) and the evaluator (its "not run") share; each surface
says it in its own words. Pure text: no torch."""

from __future__ import annotations

import re
from typing import Any

CUDA, LOAD_INLINE = "cuda", "load_inline"
_BUILDS_CUDA = re.compile(r"\b(load_inline|cpp_extension\.load)\b")


def builds_cuda_inline(source: str) -> bool:
    """The Python source builds CUDA itself (``torch.utils.cpp_extension.load_inline`` or ``load``)."""
    return _BUILDS_CUDA.search(source) is not None


def gpu_need(task: Any) -> str | None:
    """Why nothing of the task can run without a GPU: ``"cuda"`` (a CUDA source), ``"load_inline"`` (a
    KernelBench file whose own ModelNew builds CUDA), or None. A file that cannot be read: None (reading
    it fails elsewhere, with its own message)."""
    if task.kind == "cuda":
        return CUDA
    if task.kind == "kernelbench":
        try:
            text = task.root_source()
        except OSError:
            return None
        if builds_cuda_inline(text):
            return LOAD_INLINE
    return None
