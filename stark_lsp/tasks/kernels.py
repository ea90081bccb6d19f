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

import bisect
import re
from dataclasses import dataclass

from stark_lsp.tasks.spec import is_kernelbench_reference

_IDENT = re.compile(r"[A-Za-z_]\w*")
_IDENT_CHAR = re.compile(r"\w")
_IDENT_START = re.compile(r"[A-Za-z_]")
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


# the next place where masking starts: a preprocessor line, a comment, a raw
# string or a quote; scanning jumps from one to the next, so a long file costs
# a few regex searches per comment or literal instead of a Python step per character
_CUDA_TOKEN = re.compile(r"""(?m)^[ \t\f\v]*(?P<pp>\#)|//|/\*|(?<![A-Za-z0-9_])R"|["']""")
_CUDA_DIRECTIVE = re.compile(r"(?:[^\n\\]|\\\n|\\)*")  # up to the end of the line, with continuations
_CUDA_RAW = re.compile(r'R"([^()\\\s]{0,16})\(')
_CUDA_QUOTED = {q: re.compile(rf"(?:[^{q}\\\n]|\\[\s\S])*") for q in "\"'"}
_NOT_NEWLINE = re.compile(r"[^\n]")


def _masked(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with the characters of ``spans`` (sorted, disjoint) but newlines made spaces."""
    parts, at = [], 0
    for a, b in spans:
        if b <= a:
            continue
        parts.append(text[at:a])
        parts.append(_NOT_NEWLINE.sub(" ", text[a:b]))
        at = b
    parts.append(text[at:])
    return "".join(parts)


def mask_cuda(text: str) -> str:
    """``text`` with comments, literals' contents and preprocessor lines turned
    into spaces (newlines and quote characters kept), so offsets still match."""
    spans: list[tuple[int, int]] = []
    n = len(text)
    i = 0
    quoted_newline = -2  # a quote cut short by this newline: the line after it does not start fresh
    while i < n:
        m = _CUDA_TOKEN.search(text, i)
        if m is None:
            break
        if m.group("pp") is not None:  # preprocessor directive, with continuations
            a = m.start("pp")
            if m.start() == quoted_newline + 1:
                i = a + 1
                continue
            j = _CUDA_DIRECTIVE.match(text, a + 1).end()
            spans.append((a, j))
            i = j
            continue
        a = m.start()
        tok = m.group()
        if tok == "//":
            j = text.find("\n", a)
            j = n if j < 0 else j
            spans.append((a, j))
            i = j
        elif tok == "/*":
            j = text.find("*/", a + 2)
            j = n if j < 0 else j + 2
            spans.append((a, j))
            i = j
        elif tok == 'R"':
            r = _CUDA_RAW.match(text, a)
            if not r:
                i = a + 1  # not a raw string: the quote is scanned next
                continue
            close = ")" + r.group(1) + '"'
            j = text.find(close, r.end())
            j = n if j < 0 else j + len(close)
            spans.append((a + 2, max(a + 2, j - 1)))
            i = j
        else:  # a quote: up to the same quote or the end of the line
            j = _CUDA_QUOTED[tok].match(text, a + 1).end()
            spans.append((a + 1, min(j, n)))
            if j < n and text[j] == "\n":
                quoted_newline = j
            i = j + 1
    return _masked(text, spans)


_BRACKETS = {
    "{": re.compile(r"[{}]"),
    "(": re.compile(r"[()]"),
    "[": re.compile(r"[\[\]]"),
}


def _match(masked: str, i: int, open_: str, close: str) -> int:
    """Index of the bracket closing the one at ``i``, or -1 if unbalanced."""
    depth = 0
    for m in _BRACKETS[open_].finditer(masked, i):
        if m.group() == open_:
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return m.start()
    return -1


def split_params(params: str) -> tuple[str, ...]:
    """Split a parameter list on the commas that are not inside <> () []."""
    if not _NESTING.search(params):  # the common case: plain declarations
        cleaned = tuple(" ".join(p.split()) for p in params.split(","))
        return () if cleaned in (("",), ("void",)) else cleaned
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
        line = bisect.bisect_right(self.starts, offset) - 1
        return line, offset - self.starts[line]


def _ident_before(text: str, lo: int, hi: int) -> tuple[int, str] | None:
    r"""(start, name) of the identifier that ends ``text[lo:hi]``, trailing
    whitespace allowed (what ``re.search(r"([A-Za-z_]\w*)\s*$")`` finds), or None.
    Scans backwards, so a long declaration head costs only its last word."""
    end = hi
    while end > lo and text[end - 1].isspace():
        end -= 1
    start = end
    while start > lo and _IDENT_CHAR.match(text, start - 1):
        start -= 1
    while start < end and not _IDENT_START.match(text, start):
        start += 1
    return (start, text[start:end]) if start < end else None


_CUDA_STRUCTURE = re.compile(r"[;{}(]")
_NESTING = re.compile(r"[<>()\[\]]")
_SPACE = re.compile(r"\s*")
_TRAILING_QUALIFIERS = re.compile(r"\s*(?:(?:const|noexcept|override|final|volatile)\b\s*)*")


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
        nxt = _CUDA_STRUCTURE.search(masked, i)
        if nxt is None:
            break
        i = nxt.start()
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
            m = _ident_before(masked, head_start, i)
            close = _match(masked, i, "(", ")")
            if close < 0:
                break
            if m is None or m[1] in _CUDA_ATTRIBUTES or m[1] in _CUDA_CONTROL:
                i = close + 1
                continue
            k = close + 1
            # skip trailing qualifiers: const, noexcept, override, -> type
            k = _TRAILING_QUALIFIERS.match(masked, k).end()
            if k < n and masked[k] == "{":
                end = _match(masked, k, "{", "}")
                if end < 0:
                    end = n - 1  # unfinished body: up to the end of the text
                start = _SPACE.match(masked, head_start).end()
                name_line, name_col = lines.pos(m[0])
                qualifiers = " ".join(masked[head_start : m[0]].split())
                found.append(
                    CudaFunction(
                        name=m[1],
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


_PY_TOKEN = re.compile(r"""#|'{3}|"{3}|["']""")
_PY_STRING_END = {  # from after the opening quote(s) to the closing ones (or the end of the line / text)
    '"""': re.compile(r'(?:[^"\\]|\\[\s\S]|"(?!""))*'),
    "'''": re.compile(r"(?:[^'\\]|\\[\s\S]|'(?!''))*"),
    '"': re.compile(r'(?:[^"\\\n]|\\[\s\S])*'),
    "'": re.compile(r"(?:[^'\\\n]|\\[\s\S])*"),
}


def mask_python(text: str) -> str:
    """``text`` with comments and string literals turned into spaces."""
    spans: list[tuple[int, int]] = []
    n = len(text)
    i = 0
    while i < n:
        m = _PY_TOKEN.search(text, i)
        if m is None:
            break
        a, q = m.start(), m.group()
        if q == "#":
            j = text.find("\n", a)
            j = n if j < 0 else j
            spans.append((a, j))
            i = j
            continue
        j = _PY_STRING_END[q].match(text, a + len(q)).end()
        spans.append((a, min(j + len(q), n)))  # quotes too: a closing """ at column 0 is not code
        i = j + len(q)
    return _masked(text, spans)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def find_triton_kernels(text: str) -> list[Kernel]:
    masked_lines = mask_python(text).split("\n")
    raw_lines = text.split("\n")
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
