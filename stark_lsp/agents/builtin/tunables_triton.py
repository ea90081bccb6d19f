"""Tunable constants of a Triton source.

Found: ``num_warps=N`` (1, 2, 4, 8, 16) and ``num_stages=N`` (1..6) wherever
they are written (launch keywords, ``triton.Config``, defaults); block-like
constants (``BLOCK*``, ``*_SIZE*``, ``TILE*``, ``*_BLOCK*``) written as an
assignment ``BLOCK_SIZE = 64``, a launch keyword ``BLOCK_SIZE=64``, a
``triton.Config`` entry ``'BLOCK_SIZE': 64`` or a default
``BLOCK: tl.constexpr = 64``; they take powers of two (``tl.arange`` needs
them). A launch keyword whose number also appears elsewhere on its line or in
its function (typically a grid written with the same literal) is left alone:
the grid would not follow. A line whose comment says ``stark: fixed`` is never
tuned (a persistent reduction's whole-row block, say). Switches: a
module-level ``CUDNN_BENCHMARK = False`` (cuDNN's heuristic choice of a
convolution's algorithm, or, on, the fastest of those it times on the first
call), written by the team beside the line that applies it; a module-level
``CUDA_GRAPH = False`` (every ModelNew the team writes: its forward replayed
from a CUDA graph when on, ``cuda_graph_text.py``); a module-level
``CHANNELS_LAST = False`` (the fused ModelNew of a model with a library
convolution: its weights channels-last when on, ``fusion/runtime.py``).
"""

from __future__ import annotations

import re

from stark_lsp.agents.builtin.tunable import Site, Tunable, powers_of_two
from stark_lsp.markers.syntax import split_lines

_WARPS = re.compile(r"\bnum_warps\s*=\s*(?P<val>\d+)\b")
_STAGES = re.compile(r"\bnum_stages\s*=\s*(?P<val>\d+)\b")
_BLOCKISH = r"[A-Z][A-Z0-9_]*"
_ASSIGN = re.compile(rf"^\s*(?P<name>{_BLOCKISH})\s*(?::\s*[\w.]+\s*)?=\s*(?P<val>\d+)\s*(?:#.*)?$")
_KWARG = re.compile(rf"(?<![\w.'\"])(?P<name>{_BLOCKISH})\s*=\s*(?P<val>\d+)(?![\w.])")
_DICT = re.compile(rf"['\"](?P<name>{_BLOCKISH})['\"]\s*:\s*(?P<val>\d+)(?![\w.])")
_CONSTEXPR = re.compile(rf"\b(?P<name>{_BLOCKISH})\s*:\s*tl\.constexpr\s*=\s*(?P<val>\d+)(?![\w.])")
_DEF = re.compile(r"^(?P<indent>\s*)def\s")
_FIXED = re.compile(r"#.*\bstark:\s*fixed\b")  # a line its author marked as not a knob
SWITCHES = ("CUDNN_BENCHMARK", "CUDA_GRAPH", "CHANNELS_LAST")  # module-level on/off settings the team writes (``switch_lines``)
_SWITCH = re.compile(rf"^(?P<name>{'|'.join(SWITCHES)})\s*=\s*(?P<val>True|False)\s*(?:#.*)?$")

WARPS = (1, 2, 4, 8, 16)
STAGES = (1, 2, 3, 4, 5, 6)


def is_block_name(name: str) -> bool:
    up = name.upper()
    if up.startswith("NUM_") or "GRID" in up:
        return False
    return up.startswith(("BLOCK", "TILE")) or "_SIZE" in up or "_BLOCK" in up or up.endswith("SIZE")


def _body(line: str) -> str:
    return line.rstrip("\n").rstrip("\r")


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _function_lines(lines: list[str], no: int) -> list[int]:
    """1-based line numbers of the innermost def around line ``no`` (or all)."""
    own = _indent(lines[no - 1])
    for i in range(no - 2, -1, -1):
        m = _DEF.match(lines[i])
        if m and len(m.group("indent")) < own:
            ind = len(m.group("indent"))
            end = len(lines)
            for j in range(i + 1, len(lines)):
                if lines[j].strip() and _indent(lines[j]) <= ind:
                    end = j
                    break
            return list(range(i + 1, end + 1))
    return list(range(1, len(lines) + 1))


def _block_candidates(name: str, value: int) -> tuple[int, ...]:
    if "GROUP" in name.upper():
        return tuple(v for v in powers_of_two(1, 64) if v != value)
    lo = 16 if value >= 16 else 1
    return tuple(v for v in powers_of_two(lo, 8192) if v != value)


def find_triton_tunables(source: str, fragment: bool = False) -> list[Tunable]:
    lines = [_body(l) for l in split_lines(source)]
    found: list[Tunable] = []
    for no, text in enumerate(lines, start=1):
        code = text.split("#", 1)[0] if not text.lstrip().startswith("#") else ""
        if not code.strip() or _FIXED.search(text[len(code):]):
            continue
        for m in _WARPS.finditer(code):
            v = int(m.group("val"))
            found.append(Tunable("num_warps", "num_warps", Site(no, m.start("val"), m.end("val")), v,
                                 tuple(w for w in WARPS if w != v), "warps"))
        for m in _STAGES.finditer(code):
            v = int(m.group("val"))
            found.append(Tunable("num_stages", "num_stages", Site(no, m.start("val"), m.end("val")), v,
                                 tuple(s for s in STAGES if s != v), "stages"))
        sw = _SWITCH.match(text)
        if sw:
            v = sw.group("val") == "True"
            found.append(Tunable(sw.group("name"), "switch", Site(no, sw.start("val"), sw.end("val")), v, (not v,),
                                 "switch"))
            continue
        taken: set[int] = set()

        def add(m: re.Match, how: str) -> None:
            name, v = m.group("name"), int(m.group("val"))
            if not is_block_name(name) or m.start("val") in taken:
                return
            taken.add(m.start("val"))
            found.append(Tunable(name, "block_const", Site(no, m.start("val"), m.end("val")), v,
                                 _block_candidates(name, v), "block", how))

        m = _ASSIGN.match(code)
        if m:
            add(m, "assignment")
            continue
        for m in _CONSTEXPR.finditer(code):
            add(m, "default")
        for m in _DICT.finditer(code):
            add(m, "config")
        for m in _KWARG.finditer(code):
            if m.start("val") in taken or not is_block_name(m.group("name")):
                continue
            if not fragment and _kwarg_coupled(lines, no, m):
                continue
            add(m, "launch keyword")
    return found


def _kwarg_coupled(lines: list[str], no: int, m: re.Match) -> bool:
    val = int(m.group("val"))
    pat = re.compile(rf"(?<![\w.])(?:{val}|{val - 1})(?![\w.])")
    text = lines[no - 1].split("#", 1)[0]
    if pat.search(text[: m.start()]) or pat.search(text[m.end():]):
        return True
    for i in _function_lines(lines, no):
        if i != no and pat.search(lines[i - 1].split("#", 1)[0]):
            return True
    return False


def switch_lines(name: str) -> list[str]:
    """A switch as the team writes it into a candidate: off, for the search to turn on."""
    if name == "CUDNN_BENCHMARK":
        return ["# cuDNN's convolution algorithm: its heuristic's choice (False), or the fastest of those it times",
                "# on the first call (True). The search tries both.",
                "CUDNN_BENCHMARK = False",
                "torch.backends.cudnn.benchmark = CUDNN_BENCHMARK"]
    if name == "CHANNELS_LAST":
        return ["# the convolutions' weights in channels-last order (True), once, on the first call: cuDNN then runs",
                "# them channels-last (NHWC, its tensor cores' layout), and the elementwise kernels after them read and",
                "# write along the channels; PyTorch's own order (False). The values are the same. The search tries both.",
                "CHANNELS_LAST = False"]
    if name == "CUDA_GRAPH":
        return ["# the whole forward captured once in a CUDA graph and replayed (True): one launch a call instead",
                "# of one a kernel, for models whose kernels are shorter than their launches. The search tries both.",
                "CUDA_GRAPH = False"]
    raise ValueError(f"no switch {name!r}")
