"""Which kernels a candidate's source defines, by name: one answer for the judge and the profiler.

The judge's launch rule (``evaluate/judge/launch_rule.py``: which kernels must
have run, which only the profiler can see) and the profiler's ncu filter
(``profile/ncu.py``: which launches to measure) both ask this, so they never
disagree on what a candidate defines.

Any text: a ``.cu`` file, a Triton module, or Python holding CUDA in strings
(``load_inline``). Nothing is masked, so a ``__global__`` inside a string
counts (where ``tasks/kernels.py``, which finds the kernels of a document the
user edits with their line ranges, masks strings and comments).

* CUDA: after each ``__global__``, the first identifier followed by ``(``
  that is not an attribute (``__launch_bounds__(256)``, ``__cluster_dims__(2,
  1, 1)``, ``__attribute__((...))``), whatever the order of the qualifiers
  and the lines they take; ``extern "C"`` and ``template <...>`` come before
  it. A pointer (``__global__ void (*p)(int)``) is no kernel.
* Triton: a function decorated ``@triton.jit``, with or without arguments (on
  one line or several), under other decorators (``@triton.autotune(...)``
  above it; any between it and ``def``), comments and blank lines between.

Pure text: no torch, no imports of the package.
"""

from __future__ import annotations

import re

# parenthesised attributes that may sit between __global__ and the kernel's name
CUDA_ATTRIBUTES = frozenset({"__launch_bounds__", "__cluster_dims__", "__maxnreg__", "__attribute__", "__declspec",
                             "__align__", "alignas", "__grid_constant__", "decltype"})
_GLOBAL = re.compile(r"\b__global__\b")
_TOKEN = re.compile(r"\s*(\w+|\(|[^\w\s(])")
_IDENT = re.compile(r"[A-Za-z_]\w*")

_JIT = re.compile(r"@[ \t]*triton[ \t]*\.[ \t]*jit\b")
_DECORATOR = re.compile(r"@[ \t]*[A-Za-z_]\w*(?:[ \t]*\.[ \t]*[A-Za-z_]\w*)*")
_DEF = re.compile(r"(?:async[ \t]+)?def[ \t]+([A-Za-z_]\w*)")
_GAP = re.compile(r"(?:\s|#[^\n]*)*")  # blank lines, indentation and comments
_OPEN = re.compile(r"[ \t]*\(")
_STRING = {q: re.compile(q + r"(?:[^" + q + r"\\\n]|\\.)*" + q) for q in "\"'"}
MAX_DECORATORS = 32


def _cuda_kernel_name(source: str, at: int) -> tuple[str | None, int]:
    """The name of the ``__global__`` function whose qualifiers start at ``at``: the first
    identifier followed by ``(`` that is not an attribute (``__launch_bounds__(256)``), and how far
    the text was read."""
    i, prev = at, None
    for _ in range(64):
        m = _TOKEN.match(source, i)
        if not m:
            return None, i
        tok, i = m.group(1), m.end()
        if tok == "(":
            if prev is None or prev in CUDA_ATTRIBUTES:  # skip the attribute's balanced arguments
                depth = 1
                while depth and i < len(source):
                    depth += {"(": 1, ")": -1}.get(source[i], 0)
                    i += 1
                prev = None
                continue
            return (prev if prev != "void" else None), i  # ``__global__ void (*p)(int)``: a pointer, no kernel
        if tok in (";", "{", "}", "="):
            return None, i
        prev = tok if _IDENT.fullmatch(tok) else None
    return None, i


def _names(pattern: re.Pattern, read, source: str) -> list[str]:
    """The names ``read(source, end of a match)`` gives for each match of ``pattern``, once each. A match
    inside text an earlier one read (an attribute's or a decorator's arguments) is no definition of its
    own, and is not read again: the source is read once, however many unclosed ones it holds."""
    names, seen_to = [], 0
    for m in pattern.finditer(source):
        if m.start() < seen_to:
            continue
        name, seen_to = read(source, m.end())
        if name:
            names.append(name)
    return list(dict.fromkeys(names))


def cuda_kernel_names(source: str) -> list[str]:
    """The ``__global__`` functions ``source`` defines (also inside Python strings), in order, once each."""
    return _names(_GLOBAL, _cuda_kernel_name, source)


def _past_call(source: str, i: int) -> int | None:
    """Past the balanced ``(...)`` at ``i`` (a decorator's arguments, strings skipped), ``i`` without
    one; None when it never closes."""
    m = _OPEN.match(source, i)
    if m is None:
        return i
    depth, j = 1, m.end()
    while depth and j < len(source):
        c = source[j]
        if c in _STRING:
            s = _STRING[c].match(source, j)
            j = s.end() if s else j + 1
            continue
        depth += {"(": 1, ")": -1}.get(c, 0)
        j += 1
    return j if depth == 0 else None


def _triton_kernel_name(source: str, at: int) -> tuple[str | None, int]:
    """The function under the ``@triton.jit`` that ends at ``at``: past its arguments, any
    decorators below it, comments and blank lines, the ``def``'s name; and how far the text was read."""
    i: int | None = _past_call(source, at)
    for _ in range(MAX_DECORATORS):
        if i is None:
            return None, len(source)
        i = _GAP.match(source, i).end()
        m = _DEF.match(source, i)
        if m:
            return m.group(1), m.end()
        m = _DECORATOR.match(source, i)
        if m is None:
            return None, i
        i = _past_call(source, m.end())
    return None, i if i is not None else len(source)


def triton_kernel_names(source: str) -> list[str]:
    """The ``@triton.jit`` functions ``source`` defines (Triton's launch counter sees them), once each."""
    return _names(_JIT, _triton_kernel_name, source)


def defined_kernel_names(source: str) -> list[str]:
    """Every kernel ``source`` defines: its CUDA kernels, then its Triton ones, once each."""
    return list(dict.fromkeys(cuda_kernel_names(source) + triton_kernel_names(source)))
