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
  Read from Python's own parse of the source (``ast``), so no comment or string
  can hide a kernel or make one up; a source Python cannot parse (a ``.cu``
  file, a fragment) is read line by line instead.

Every match is read on its own: text that fools the reading of one (an
unclosed ``__launch_bounds__(`` in a comment) cannot hide the next. The
source is read in a time linear in its size: an attribute's arguments are
skipped through a table of matching parentheses made in one pass, at most 64
tokens are read after a ``__global__`` and 32 decorators above a ``def``.
Answers are kept for the last few sources (the judge asks several times).

Pure text: no torch, no imports of the package.
"""

from __future__ import annotations

import ast
import functools
import re

# parenthesised attributes that may sit between __global__ and the kernel's name
CUDA_ATTRIBUTES = frozenset({"__launch_bounds__", "__cluster_dims__", "__maxnreg__", "__attribute__", "__declspec",
                             "__align__", "alignas", "__grid_constant__", "decltype"})
_GLOBAL = re.compile(r"\b__global__\b")
_TOKEN = re.compile(r"[ \t\r\n\f\v]*(\w+|\(|[^\w\s(])")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_PAREN = re.compile(r"[()]")
MAX_TOKENS = 64
MAX_DECORATORS = 32
# a source Python cannot parse: ``@triton.jit`` to the end of its line, decorator lines, then ``def``
_JIT_LINES = re.compile(r"@[ \t]*triton[ \t]*\.[ \t]*jit\b[^\n]*\n(?:[ \t]*(?:@[^\n]*|#[^\n]*)?\n)"
                        r"{0,%d}[ \t]*(?:async[ \t]+)?def[ \t]+([A-Za-z_]\w*)" % MAX_DECORATORS)


def _closers(source: str) -> dict[int, int]:
    """Where each ``(`` of ``source`` closes: its index -> the index after its ``)`` (unclosed: absent)."""
    out, stack = {}, []
    for m in _PAREN.finditer(source):
        if m.group() == "(":
            stack.append(m.start())
        elif stack:
            out[stack.pop()] = m.end()
    return out


def _cuda_kernel_name(source: str, at: int, closers: dict[int, int]) -> str | None:
    """The name of the ``__global__`` function whose qualifiers start at ``at``: the first
    identifier followed by ``(`` that is not an attribute (``__launch_bounds__(256)``)."""
    i, prev = at, None
    for _ in range(MAX_TOKENS):
        m = _TOKEN.match(source, i)
        if not m:
            return None
        tok, i = m.group(1), m.end()
        if tok == "(":
            if prev is None or prev in CUDA_ATTRIBUTES:  # skip the attribute's balanced arguments
                if i - 1 not in closers:
                    return None  # never closed: no kernel here (the next __global__ is read on its own)
                i, prev = closers[i - 1], None
                continue
            return prev if prev != "void" else None  # ``__global__ void (*p)(int)``: a pointer, no kernel
        if tok in (";", "{", "}", "="):
            return None
        prev = tok if _IDENT.fullmatch(tok) else None
    return None


@functools.lru_cache(maxsize=8)
def _cuda_names(source: str) -> tuple[str, ...]:
    starts = [m.end() for m in _GLOBAL.finditer(source)]
    if not starts:
        return ()
    closers = _closers(source)
    return tuple(dict.fromkeys(n for at in starts if (n := _cuda_kernel_name(source, at, closers))))


def cuda_kernel_names(source: str) -> list[str]:
    """The ``__global__`` functions ``source`` defines (also inside Python strings), in order, once each."""
    return list(_cuda_names(source))


def _is_jit(node: ast.expr) -> bool:
    """``triton.jit`` or ``triton.jit(...)``."""
    if isinstance(node, ast.Call):
        node = node.func
    return (isinstance(node, ast.Attribute) and node.attr == "jit" and isinstance(node.value, ast.Name)
            and node.value.id == "triton")


@functools.lru_cache(maxsize=8)
def _triton_names(source: str) -> tuple[str, ...]:
    if "jit" not in source:
        return ()
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return tuple(dict.fromkeys(m.group(1) for m in _JIT_LINES.finditer(source)))
    defs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and any(_is_jit(d) for d in n.decorator_list)]
    return tuple(dict.fromkeys(n.name for n in sorted(defs, key=lambda n: (n.lineno, n.col_offset))))


def triton_kernel_names(source: str) -> list[str]:
    """The ``@triton.jit`` functions ``source`` defines (Triton's launch counter sees them), once each."""
    return list(_triton_names(source))


def defined_kernel_names(source: str) -> list[str]:
    """Every kernel ``source`` defines: its CUDA kernels, then its Triton ones, once each."""
    return list(dict.fromkeys(cuda_kernel_names(source) + triton_kernel_names(source)))
