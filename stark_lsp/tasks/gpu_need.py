"""Which tasks cannot run at all without an NVIDIA GPU: the one rule the server (its refusal and its
disabled "Optimize"), the CLI (its refusals) and the evaluator (its "not run") share; each surface
says it in its own words. Pure text: no torch."""

from __future__ import annotations

import re
from typing import Any

CUDA, LOAD_INLINE = "cuda", "load_inline"
_BUILDS_CUDA = re.compile(r"\b(load_inline|cpp_extension\.load)\b")


def builds_cuda_inline(source: str) -> bool:
    """The Python source builds CUDA itself (``torch.utils.cpp_extension.load_inline`` or ``load``), named in its
    code: a comment or a string that names it does not count (before session 31's review a Python candidate whose
    docstring said "no load_inline" was not run on the CPU, and got 300 s more for its load on a GPU). A source
    Python cannot tokenize is read whole, as before."""
    return _BUILDS_CUDA.search(source) is not None and _BUILDS_CUDA.search(_code_only(source)) is not None


def _code_only(source: str) -> str:
    """The source's tokens without its comments and string literals (f-strings' pieces included)."""
    import io
    import tokenize

    skip = {tokenize.COMMENT, tokenize.STRING}
    skip |= {getattr(tokenize, n) for n in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END") if hasattr(tokenize, n)}
    lines = [list(line) for line in io.StringIO(source).readlines()]  # the lines tokenize reads
    try:
        for t in tokenize.generate_tokens(io.StringIO(source).readline):
            if t.type not in skip:
                continue
            (r0, c0), (r1, c1) = t.start, t.end
            for r in range(r0 - 1, r1):  # blanked where it stands: the code around it keeps its shape
                line = lines[r]
                for c in range(c0 if r == r0 - 1 else 0, c1 if r == r1 - 1 else len(line)):
                    if line[c] != "\n":
                        line[c] = " "
    except (tokenize.TokenError, SyntaxError, ValueError, IndexError):
        return source
    return "".join("".join(line) for line in lines)


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
