"""Where the kernels are in a source file: names and line ranges.

Two languages:

* CUDA (``.cu``/``.cuh``): ``__global__`` function *definitions*, found by
  scanning for top-level ``name(...) {`` with comments, string and character
  literals and preprocessor lines blanked out, so braces inside them never
  count. ``extern "C"`` host functions (the launchers a harness calls) are
  found by the same scan (:func:`find_cuda_functions`).
* Triton (``.py``): functions decorated with ``@triton.jit`` (also
  ``@triton.autotune``/``@triton.heuristics`` stacks ending in one), whose body
  is found by indentation.
* KernelBench (``.py`` with ``class Model`` and ``get_inputs``, as
  ``spec.is_kernelbench_reference``): the task is the model, so the one "kernel" is
  ``class Model`` (language "kernelbench"), whatever Triton the file holds.

Everything here is pure and tolerant: a half-typed document yields the kernels
that can be recognised and never raises. Lines are 0-based (LSP style);
columns count code points.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from stark_lsp.tasks.spec import is_kernelbench_reference

_IDENT = re.compile(r"[A-Za-z_]\w*")
_IDENT_BEFORE = re.compile(r"([A-Za-z_]\w*)\s*$")
# parenthesised attributes that may sit between __global__ and the name
_CUDA_ATTRIBUTES = {"__launch_bounds__", "__attribute__", "__declspec", "__align__", "alignas", "decltype"}
_TRANSPARENT_BLOCK = re.compile(r'(?:\bextern\s+"\s*"|\bnamespace(?:\s+[A-Za-z_][\w:]*)?)\s*$')
_CUDA_CONTROL = {"if", "for", "while", "switch", "return", "sizeof", "catch"}


@dataclass(frozen=True)
class Kernel:
    name: str
    language: str  # "cuda" | "triton" | "kernelbench"
    start_line: int  # first line (decorators / qualifiers included), 0-based
    end_line: int  # last line of the body, inclusive, 0-based
    name_line: int  # where the name is written
    name_col: int
    params: tuple[str, ...] = ()  # parameter declarations as written, one per parameter

    def contains_line(self, line: int) -> bool:
        return self.start_line <= line <= self.end_line


@dataclass(frozen=True)
class CudaFunction:
    """A function definition at file (or extern "C" / namespace) level."""

    name: str
    qualifiers: str  # the text before the name: return type, __global__, extern ...
    params: tuple[str, ...]
    start_line: int
    end_line: int
    name_line: int
    name_col: int
    is_extern_c: bool

    @property
    def is_kernel(self) -> bool:
        return re.search(r"\b__global__\b", self.qualifiers) is not None

    @property
    def is_device(self) -> bool:
        return re.search(r"\b__device__\b", self.qualifiers) is not None


def find_kernels(text: str, language: str) -> list[Kernel]:
    """The kernels of a document; ``language`` is "cuda" or "triton"/"python"."""
    if language == "cuda":
        return [
            Kernel(f.name, "cuda", f.start_line, f.end_line, f.name_line, f.name_col, f.params)
            for f in find_cuda_functions(text)
            if f.is_kernel
        ]
    return find_kernelbench_model(text) or find_triton_kernels(text)


_KB_MODEL = re.compile(r"^class\s+(Model)\s*\(", re.M)


def find_kernelbench_model(text: str) -> list[Kernel]:
    """``[class Model]`` of a KernelBench reference file (``spec.is_kernelbench_reference``), else ``[]``."""
    masked = mask_python(text)
    m = _KB_MODEL.search(masked)
    if m is None or not is_kernelbench_reference(masked):
        return []
    lines = masked.split("\n")
    start = masked.count("\n", 0, m.start())
    end = start
    for b in range(start + 1, len(lines)):
        if not lines[b].strip():
            continue
        if _indent(lines[b]) == 0:
            break
        end = b
    return [Kernel("Model", "kernelbench", start, end, start, m.start(1) - m.start())]


def kernel_named(kernels: list[Kernel], name: str) -> Kernel | None:
    return next((k for k in kernels if k.name == name), None)


def kernels_in_range(kernels: list[Kernel], first_line: int, last_line: int) -> list[Kernel]:
    """Kernels whose lines overlap ``first_line..last_line`` (inclusive)."""
    return [k for k in kernels if k.start_line <= last_line and first_line <= k.end_line]


def language_of(path_or_language_id: str) -> str | None:
    """'cuda', 'triton' or None, from an LSP language id or a file name."""
    s = path_or_language_id.lower()
    if s in ("cuda", "cuda-cpp", "cuda-c++", "cu") or s.endswith((".cu", ".cuh")):
        return "cuda"
    if s == "python" or s.endswith(".py"):
        return "triton"
    return None


def kernel_source(text: str, kernel: Kernel) -> str:
    return "".join(text.splitlines(keepends=True)[kernel.start_line : kernel.end_line + 1])


# -- CUDA ------------------------------------------------------------------------


def mask_cuda(text: str) -> str:
    """``text`` with comments, literals' contents and preprocessor lines turned
    into spaces (newlines and quote characters kept), so offsets still match."""
    out = list(text)
    n = len(text)
    i = 0
    at_line_start = True  # only whitespace since the last newline
    while i < n:
        c = text[i]
        if c == "\n":
            at_line_start = True
            i += 1
            continue
        if at_line_start and c == "#":  # preprocessor directive, with continuations
            j = i
            while j < n and text[j] != "\n":
                if text[j] == "\\" and j + 1 < n and text[j + 1] == "\n":
                    j += 2
                    continue
                j += 1
            _blank(out, i, j)
            i = j
            continue
        if not c.isspace():
            at_line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            _blank(out, i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            _blank(out, i, j)
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^()\\\s]{0,16})\(', text[i:])
            if not m:
                i += 1
                continue
            close = ")" + m.group(1) + '"'
            j = text.find(close, i + m.end())
            j = n if j < 0 else j + len(close)
            _blank(out, i + 2, max(i + 2, j - 1))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            _blank(out, i + 1, min(j, n))
            i = j + 1
        else:
            i += 1
    return "".join(out)


def _blank(out: list[str], start: int, end: int) -> None:
    for k in range(start, min(end, len(out))):
        if out[k] != "\n":
            out[k] = " "


def _match(masked: str, i: int, open_: str, close: str) -> int:
    """Index of the bracket closing the one at ``i``, or -1 if unbalanced."""
    depth = 0
    for j in range(i, len(masked)):
        ch = masked[j]
        if ch == open_:
            depth += 1
        elif ch == close:
            depth -= 1
            if depth == 0:
                return j
    return -1


def split_params(params: str) -> tuple[str, ...]:
    """Split a parameter list on the commas that are not inside <> () []."""
    out, depth, cur = [], 0, []
    for ch in params:
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    cleaned = tuple(" ".join(p.split()) for p in out)
    if cleaned == ("",) or cleaned == ("void",):
        return ()
    return cleaned


class _Lines:
    def __init__(self, text: str):
        self.starts = [0]
        for m in re.finditer("\n", text):
            self.starts.append(m.end())

    def pos(self, offset: int) -> tuple[int, int]:
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo, offset - self.starts[lo]


def find_cuda_functions(text: str) -> list[CudaFunction]:
    """Function definitions at file level, inside ``extern "C" {}`` and namespaces."""
    masked = mask_cuda(text)
    lines = _Lines(text)
    found: list[CudaFunction] = []
    n = len(masked)
    head_start = 0
    extern_depth: list[bool] = []  # open transparent blocks: True for extern "C"
    i = 0
    while i < n:
        c = masked[i]
        if c == ";":
            head_start = i + 1
        elif c == "}":
            if extern_depth:
                extern_depth.pop()
            head_start = i + 1
        elif c == "{":
            head = masked[head_start:i]
            if _TRANSPARENT_BLOCK.search(head):
                extern_depth.append("extern" in head)
                head_start = i + 1
            else:  # a struct, an initializer ...: skip it whole
                j = _match(masked, i, "{", "}")
                if j < 0:
                    break
                head_start = i = j + 1
                # "struct S {...} s;" keeps going to the ';'
                continue
        elif c == "(":
            m = _IDENT_BEFORE.search(masked, head_start, i)
            close = _match(masked, i, "(", ")")
            if close < 0:
                break
            if m is None or m.group(1) in _CUDA_ATTRIBUTES or m.group(1) in _CUDA_CONTROL:
                i = close + 1
                continue
            k = close + 1
            # skip trailing qualifiers: const, noexcept, override, -> type
            trail = re.match(r"\s*(?:(?:const|noexcept|override|final|volatile)\b\s*)*", masked[k:])
            k += trail.end() if trail else 0
            if k < n and masked[k] == "{":
                end = _match(masked, k, "{", "}")
                if end < 0:
                    end = n - 1  # unfinished body: up to the end of the text
                start = head_start + (len(masked[head_start:]) - len(masked[head_start:].lstrip()))
                name_line, name_col = lines.pos(m.start(1))
                qualifiers = " ".join(masked[head_start : m.start(1)].split())
                found.append(
                    CudaFunction(
                        name=m.group(1),
                        qualifiers=qualifiers,
                        params=split_params(text[i + 1 : close]),
                        start_line=lines.pos(start)[0],
                        end_line=lines.pos(end)[0],
                        name_line=name_line,
                        name_col=name_col,
                        is_extern_c=any(extern_depth) or bool(re.search(r'\bextern\s+"', qualifiers)),
                    )
                )
                head_start = i = end + 1
                continue
            i = close + 1
            continue
        i += 1
    return found


# -- Triton ----------------------------------------------------------------------

_TRITON_DECORATOR = re.compile(r"^(\s*)@\s*triton\s*\.\s*(jit|autotune|heuristics)\b")
_DECORATOR = re.compile(r"^(\s*)@")
_DEF = re.compile(r"^(\s*)(?:async\s+)?def\s+([A-Za-z_]\w*)\s*\(")


def mask_python(text: str) -> str:
    """``text`` with comments and string literals turned into spaces."""
    out = list(text)
    n = len(text)
    i = 0
    while i < n:
        c = text[i]
        if c == "#":
            j = text.find("\n", i)
            j = n if j < 0 else j
            _blank(out, i, j)
            i = j
        elif c in "\"'":
            q = text[i : i + 3] if text[i : i + 3] in ('"""', "'''") else c
            j = i + len(q)
            while j < n and not text.startswith(q, j):
                if len(q) == 1 and text[j] == "\n":
                    break
                j += 2 if text[j] == "\\" else 1
            _blank(out, i, min(j + len(q), n))  # quotes too: a closing """ at column 0 is not code
            i = j + len(q)
        else:
            i += 1
    return "".join(out)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def find_triton_kernels(text: str) -> list[Kernel]:
    masked_lines = mask_python(text).split("\n")
    kernels: list[Kernel] = []
    i = 0
    n = len(masked_lines)
    while i < n:
        m = _TRITON_DECORATOR.match(masked_lines[i])
        if not m:
            i += 1
            continue
        start = i
        indent = len(m.group(1))
        # walk through the decorator stack (decorator arguments may span lines)
        j, depth, def_line = i, 0, None
        while j < n:
            line = masked_lines[j]
            if depth == 0:
                d = _DEF.match(line)
                if d and len(d.group(1)) == indent:
                    def_line = j
                    break
                if line.strip() and not _DECORATOR.match(line):
                    break
            depth += sum(line.count(ch) for ch in "([{") - sum(line.count(ch) for ch in ")]}")
            depth = max(depth, 0)
            j += 1
        if def_line is None:
            i = j if j > i else i + 1
            continue
        d = _DEF.match(masked_lines[def_line])
        name = d.group(2)
        # the header may span lines: up to the ':' closing the parameter list
        k, depth, header_end = def_line, 0, def_line
        params_text = []
        raw_lines = text.split("\n")
        while k < n:
            line = masked_lines[k]
            depth += sum(line.count(ch) for ch in "([{") - sum(line.count(ch) for ch in ")]}")
            params_text.append(raw_lines[k])
            header_end = k
            if depth <= 0 and line.rstrip().endswith(":"):
                break
            k += 1
        end = header_end
        for b in range(header_end + 1, n):
            line = masked_lines[b]
            if not line.strip():
                continue
            if _indent(line) <= indent:
                break
            end = b
        header = "\n".join(params_text)
        open_ = header.find("(", d.end(2))
        close = _match(mask_python(header), open_, "(", ")") if open_ >= 0 else -1
        params = split_params(header[open_ + 1 : close]) if close > open_ >= 0 else ()
        kernels.append(Kernel(name, "triton", start, end, def_line, d.start(2), params))
        i = end + 1
    return kernels
