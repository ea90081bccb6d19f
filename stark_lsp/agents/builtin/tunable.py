"""A tunable constant found in a kernel source, and how to rewrite it.

A ``Tunable`` knows where its value is written (``Site``: a line and the
columns of the value text), its current value and the values it may take.
Values are ints, ``(x, y[, z])`` tuples for literal ``dim3`` blocks, or
booleans for on/off nvcc flags. ``format_value`` / ``parse_value`` turn them
into the words used in marker instructions (``256``, ``32x8``, ``on``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

Value = Union[int, bool, tuple[int, ...], None]


@dataclass(frozen=True)
class Site:
    line: int  # 1-based line in the source
    start: int  # column of the value text in the line (0-based, without line ending)
    end: int


@dataclass(frozen=True)
class Tunable:
    name: str  # as written in instructions, e.g. BLOCK_SIZE, num_warps, nvcc --use_fast_math
    kind: str  # define | const | launch_block | dim3 | unroll | launch_bounds | nvcc_flag | num_warps | num_stages | block_const
    site: Site | None  # None: not written yet (an nvcc flag without a flags line)
    value: Value
    candidates: tuple = ()
    role: str = ""  # threads | factor | block | warps | stages | flag
    note: str = ""
    totals: tuple = ()  # (value, threads per block) pairs, for named block constants

    def threads(self, value: Value) -> int | None:
        """Threads per block if this tunable had ``value`` (None: unknown)."""
        for v, t in self.totals:
            if v == value:
                return t
        if self.kind == "launch_block" and isinstance(value, int):
            return value
        if self.kind == "dim3" and isinstance(value, tuple):
            n = 1
            for x in value:
                n *= x
            return n
        return None

    @property
    def line(self) -> int | None:
        return self.site.line if self.site else None

    @property
    def key(self) -> tuple[str, int | None]:
        return (self.name, self.line)


def format_value(v: Value) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    if v is None:
        return "none"
    if isinstance(v, tuple):
        return "x".join(str(x) for x in v)
    return str(v)


def parse_value(text: str) -> Value:
    t = text.strip().lower()
    if t in ("on", "true", "yes"):
        return True
    if t in ("off", "false", "no"):
        return False
    if t == "none":
        return None
    if "x" in t:
        parts = t.split("x")
        if all(p.isdigit() for p in parts):
            return tuple(int(p) for p in parts)
    if t.isdigit():
        return int(t)
    raise ValueError(f"not a tunable value: {text!r}")


def powers_of_two(lo: int, hi: int) -> list[int]:
    out, v = [], 1
    while v <= hi:
        if v >= lo:
            out.append(v)
        v *= 2
    return out
