"""Tunable constants of a CUDA source.

Found: ``#define NAME <int>``, ``constexpr int NAME = <int>;`` and
``const int NAME = <int>;`` whose NAME looks like a tuning knob (BLOCK, THREADS,
TILE, UNROLL, ITEMS, VEC, ...: never problem sizes like N); literal block
sizes in ``k<<<grid, 128>>>``; literal ``dim3 block(16, 16)`` used as a block;
``#pragma unroll N``; ``__launch_bounds__(N)``; and nvcc flags on a
``// stark-nvcc-flags: ...`` line (``--use_fast_math``, ``-maxrregcount=N``,
``-O3``), which are offered even when the line is missing.

Constraints: a named constant used in a block size gets only values for which
every block size that uses it stays in 32..1024 threads, a multiple of 32, and
under any literal ``__launch_bounds__``; literal block sizes whose number also
appears in the grid computation or a ``__shared__`` size are left alone (the
grid would not follow), as are those repeated elsewhere in the file.
"""

from __future__ import annotations

import re

from stark_lsp import nvcc_flags
from stark_lsp.agents.builtin.cexpr import eval_int, names_in
from stark_lsp.agents.builtin.tunable import Site, Tunable, powers_of_two
from stark_lsp.markers.syntax import split_lines

_DEFINE = re.compile(r"^\s*#\s*define\s+(?P<name>[A-Za-z_]\w*)\s+\(?\s*(?P<val>\d+)[uU]?\s*\)?\s*(?://.*|/\*.*)?$")
_CONST = re.compile(
    r"\b(?:static\s+)?(?:constexpr|const)\s+(?:static\s+)?(?:unsigned\s+|signed\s+)?"
    r"(?:int|unsigned|long|size_t|int32_t|uint32_t|int64_t)\s+(?P<name>[A-Za-z_]\w*)\s*=\s*(?P<val>\d+)[uUlL]*\s*;"
)
_LAUNCH = re.compile(r"(?P<kernel>[A-Za-z_]\w*)\s*(?:<[^<>]*>)?\s*<<<(?P<args>.*?)>>>")
_DIM3 = re.compile(r"\bdim3\s+(?P<var>[A-Za-z_]\w*)\s*(?:\(|\{|=\s*dim3\s*\()")
_UNROLL = re.compile(r"^\s*#\s*pragma\s+unroll\s*\(?\s*(?P<val>\d+)\s*\)?\s*$")
_BOUNDS = re.compile(r"__launch_bounds__\s*\(\s*(?P<val>[^,()]+?)\s*(?:,|\))")
_FLAGS = nvcc_flags.FLAGS_LINE  # read as the builder reads it (``stark_lsp/nvcc_flags.py``)
_SHARED = re.compile(r"__shared__")

KNOB_WORDS = {
    "BLOCK", "THREADS", "THREAD", "TILE", "WARPS", "UNROLL", "ITEMS", "VEC", "CHUNK",
    "TPB", "NTHREADS", "BDIM", "BX", "BY", "BZ", "BM", "BN", "BK", "TM", "TN", "WPT", "TS",
}
MAXRREG = (None, 32, 64, 128, 255)


def is_knob_name(name: str) -> bool:
    up = name.upper()
    if "GRID" in up or "BLOCKS" in up.split("_"):
        return False
    return any(w in KNOB_WORDS for w in up.split("_")) or up.startswith(("BLOCK", "THREAD", "TILE"))


def _body(line: str) -> str:
    return line.rstrip("\n").rstrip("\r")


def _split_args(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


class _Dim3:
    """A ``dim3 var(args);`` declaration, with balanced parentheses in args."""

    def __init__(self, var: str, args: str, start: int):
        self._g = {"var": var, "args": args}
        self._start = start

    def group(self, name: str) -> str:
        return self._g[name]

    def start(self, name: str) -> int:
        return self._start

    def end(self, name: str) -> int:
        return self._start + len(self._g["args"])


def _find_dim3(text: str) -> list[_Dim3]:
    out = []
    for m in _DIM3.finditer(text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"(": 1, "{": 1, ")": -1, "}": -1}.get(text[i], 0)
            i += 1
        if depth == 0:
            out.append(_Dim3(m.group("var"), text[m.end():i - 1], m.end()))
    return out


def parse_flags(text: str) -> list[str]:
    try:
        return nvcc_flags.split_flags(text)
    except ValueError:  # an unclosed quote: the builder refuses the source; nothing here to tune
        return text.split()


def find_cuda_tunables(source: str, fragment: bool = False) -> list[Tunable]:
    """``fragment``: the source is a marker's span, not a whole file: literal
    ``dim3`` are taken without seeing their launch, and nothing is coupled."""
    lines = [_body(l) for l in split_lines(source)]
    found: list[Tunable] = []
    consts: dict[str, int] = {}
    named: list[tuple[str, str, Site, int]] = []  # kind, name, site, value

    for no, text in enumerate(lines, start=1):
        m = _DEFINE.match(text)
        if m:
            consts.setdefault(m.group("name"), int(m.group("val")))
            if is_knob_name(m.group("name")):
                named.append(("define", m.group("name"), Site(no, m.start("val"), m.end("val")), int(m.group("val"))))
            continue
        for m in _CONST.finditer(text):
            consts.setdefault(m.group("name"), int(m.group("val")))
            if is_knob_name(m.group("name")):
                named.append(("const", m.group("name"), Site(no, m.start("val"), m.end("val")), int(m.group("val"))))

    dim3s: dict[str, tuple[int, _Dim3]] = {}
    for no, text in enumerate(lines, start=1):
        for d in _find_dim3(text):
            dim3s[d.group("var")] = (no, d)

    # block-size expressions: lists of per-dimension expressions
    blocks: list[list[str]] = []
    launches: list[tuple[int, re.Match, list[str]]] = []
    block_vars: set[str] = set()
    for no, text in enumerate(lines, start=1):
        for m in _LAUNCH.finditer(text):
            args = _split_args(m.group("args"))
            if len(args) < 2:
                continue
            launches.append((no, m, args))
            b = args[1]
            inline = re.fullmatch(r"dim3\s*\((.*)\)", b)
            if b in dim3s:
                block_vars.add(b)
                blocks.append(_split_args(dim3s[b][1].group("args")))
            elif inline:
                blocks.append(_split_args(inline.group(1)))
            else:
                blocks.append([b])
    bounds: list[tuple[int, re.Match]] = []
    for no, text in enumerate(lines, start=1):
        for m in _BOUNDS.finditer(text):
            bounds.append((no, m))
    if fragment:
        block_vars |= {v for v, (_, m) in dim3s.items() if all(d.isdigit() for d in _split_args(m.group("args")))}
    literal_bounds = [int(m.group("val")) for _, m in bounds if m.group("val").isdigit()]
    cap = min(literal_bounds + [1024])

    def threads(dims: list[str], env: dict[str, int]) -> int | None:
        total = 1
        for d in dims:
            v = eval_int(d, env)
            if v is None:
                return None
            total *= v
        return total

    def ok_threads(t: int) -> bool:
        return 32 <= t <= cap and t % 32 == 0

    known_threads = [t for t in (threads(b, consts) for b in blocks) if t]

    # named constants
    for kind, name, site, value in named:
        using = [b for b in blocks if any(name in names_in(d) for d in b)]
        in_bounds = any(name in names_in(m.group("val")) for _, m in bounds)
        pairs: list[tuple[int, int]] = []
        if using or in_bounds:
            cands = []
            for v in sorted(set(powers_of_two(1, 1024)) | {value}):
                env = dict(consts, **{name: v})
                totals = [threads(b, env) for b in using]
                known = [t for t in totals if t is not None]
                if known:
                    pairs.append((v, max(known)))
                if all(t is None or ok_threads(t) for t in totals) and (using or 32 <= v <= 1024):
                    cands.append(v)
            role = "threads"
        else:
            cands = powers_of_two(1, 64)
            role = "factor"
        found.append(Tunable(name, kind, site, value, tuple(c for c in cands if c != value), role, totals=tuple(pairs)))

    # literal launch block sizes
    for no, m, args in launches:
        b = args[1]
        if not b.isdigit():
            continue
        val = int(b)
        start = m.start("args") + m.group("args").index(b, len(args[0]))
        if not fragment and _coupled(lines, no, val, args[0], dim3s):
            continue
        cands = tuple(v for v in powers_of_two(32, cap) if v != val)
        found.append(Tunable(f"{m.group('kernel')}<<<block>>>", "launch_block", Site(no, start, start + len(b)), val, cands, "threads"))

    # literal dim3 blocks
    for var in sorted(block_vars):
        no, m = dim3s[var]
        dims = _split_args(m.group("args"))
        if not dims or not all(d.isdigit() for d in dims):
            continue
        val = tuple(int(d) for d in dims)
        grids = [a[0] for _, _, a in launches if a[1] == var]
        if not fragment and any(_coupled(lines, no, v, g, dim3s, anywhere=False) for v in val if v >= 4 for g in grids):
            continue
        rest = 1
        for d in val[2:]:
            rest *= d
        cands = []
        for x in powers_of_two(1, 1024):
            for y in (powers_of_two(1, 1024) if len(val) > 1 else [1]):
                t = x * y * rest
                if ok_threads(t):
                    cands.append((x, y) + val[2:] if len(val) > 1 else (x,))
        site = Site(no, m.start("args"), m.end("args"))
        found.append(Tunable(f"dim3 {var}", "dim3", site, val, tuple(c for c in cands if c != val), "threads"))

    # pragma unroll
    for no, text in enumerate(lines, start=1):
        m = _UNROLL.match(text)
        if m:
            val = int(m.group("val"))
            found.append(Tunable("#pragma unroll", "unroll", Site(no, m.start("val"), m.end("val")), val,
                                 tuple(v for v in (1, 2, 4, 8, 16, 32) if v != val), "factor"))

    # literal launch bounds
    floor = max(known_threads + [32])
    for no, m in bounds:
        if m.group("val").isdigit():
            val = int(m.group("val"))
            cands = tuple(v for v in powers_of_two(max(floor, 32), 1024) if v != val)
            found.append(Tunable("__launch_bounds__", "launch_bounds", Site(no, m.start("val"), m.end("val")), val, cands, "threads"))

    found.extend(_flag_tunables(lines))
    return found


def _coupled(lines: list[str], site_line: int, val: int, grid: str, dim3s: dict, anywhere: bool = True) -> bool:
    """Does the literal ``val`` (or val-1) also size the grid or shared memory?"""
    pat = re.compile(rf"(?<![\w.])(?:{val}|{val - 1})(?![\w.])")
    texts = [grid]
    if grid in dim3s:
        texts.append(dim3s[grid][1].group("args"))
    texts += [t for t in lines if _SHARED.search(t)]
    if anywhere:
        texts += [t for i, t in enumerate(lines, start=1) if i != site_line and not _FLAGS.match(t)]
    return any(pat.search(t) for t in texts)


def _flag_tunables(lines: list[str]) -> list[Tunable]:
    found = nvcc_flags.flag_lines(lines)
    # every flags line counts, as the builder reads them; a change is written on the first
    flags = [f for _, m in found for f in parse_flags(m.group("flags"))]
    site = Site(found[0][0], found[0][1].start("flags"), found[0][1].end("flags")) if found else None
    out = []
    fast = "--use_fast_math" in flags or "-use_fast_math" in flags
    out.append(Tunable("nvcc --use_fast_math", "nvcc_flag", site, fast, (not fast,), "flag"))
    reg = None
    for f in flags:
        mm = re.fullmatch(r"-?-maxrregcount[= ]?(\d+)", f)
        if mm:
            reg = int(mm.group(1))
    out.append(Tunable("nvcc -maxrregcount", "nvcc_flag", site, reg, tuple(v for v in MAXRREG if v != reg), "flag"))
    o3 = "-O3" in flags
    out.append(Tunable("nvcc -O3", "nvcc_flag", site, o3, (not o3,), "flag"))
    return out


def render_flags(old: str, name: str, value) -> str:
    """The flags text with one flag set (True/False, or a number / None)."""
    flags = parse_flags(old)
    if name == "nvcc --use_fast_math":
        flags = [f for f in flags if f not in ("--use_fast_math", "-use_fast_math")]
        if value:
            flags.append("--use_fast_math")
    elif name == "nvcc -maxrregcount":
        flags = [f for f in flags if not re.fullmatch(r"-?-maxrregcount[= ]?\d+", f)]
        if value:
            flags.append(f"-maxrregcount={value}")
    elif name == "nvcc -O3":
        flags = [f for f in flags if f != "-O3"]
        if value:
            flags.append("-O3")
    else:
        raise ValueError(f"unknown nvcc flag tunable {name!r}")
    return " " + " ".join(flags) if flags else ""
