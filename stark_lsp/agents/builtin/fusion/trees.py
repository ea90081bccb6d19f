"""The elementwise part of one kernel: Triton statements over its operands.

A kernel computes a *tree*: the elementwise values and size-1 views between
its root and the values it reads (``Leaf`` values and whatever earlier
kernels or PyTorch calls wrote). Each read is an *operand*: a Python
expression that gives the value as a view of the kernel's space (its chain
of broadcasts and views, written with the runtime's ``_stark_ex`` and
``_stark_vw``), loaded as ``x<i>``. A value read through two different
chains is two operands; a value reached twice through the same chain is
computed once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from . import ops as ops_mod
from .graph import Leaf, Pointwise, Value, View


@dataclass
class Operand:
    value: Value
    chain: tuple[Value, ...]  # the consumers from the operand up to the root (nearest first)
    python: str  # the view of the kernel's space, as Python in forward


@dataclass
class Tree:
    lines: list[str] = field(default_factory=list)
    result: str = ""
    operands: list[Operand] = field(default_factory=list)
    boolean: bool = False  # the root is a comparison: stored as bool


class TreeWriter:
    """``virtual(v)``: v is computed inside the kernel (elementwise, not written by another kernel);
    ``python(v)``: the Python expression holding v when it is read (a leaf's text, a variable);
    ``shape(v)``: the Python variable with v's shape; ``final(expr)``: wraps an operand's view
    into the kernel's iteration space (a broadcast to the root's shape, or a reshape)."""

    def __init__(self, virtual: Callable[[Value], bool], python: Callable[[Value], str],
                 shape: Callable[[Value], str], final: Callable[[str], str]):
        self.virtual = virtual
        self.python = python
        self.shape = shape
        self.final = final

    def write(self, root: Value, prefix: str = "v") -> Tree:
        tree = Tree()
        memo: dict[tuple, str] = {}
        counter = [0]

        def temp(expr: str) -> str:
            counter[0] += 1
            name = f"{prefix}{counter[0]}"
            tree.lines.append(f"{name} = {expr}")
            return name

        def operand(v: Value, chain: tuple[Value, ...]) -> str:
            if isinstance(v, Leaf) and v.const is not None:
                c = v.const
                if math.isnan(c):
                    return "float('nan')"
                if math.isinf(c):
                    return "float('inf')" if c > 0 else "float('-inf')"
                return repr(float(c))
            key = _chain_key(v, chain)
            for i, o in enumerate(tree.operands):
                if _chain_key(o.value, o.chain) == key:
                    return f"x{i}"
            tree.operands.append(Operand(v, chain, self.final(self._view(v, chain))))
            return f"x{len(tree.operands) - 1}"

        def value(v: Value, chain: tuple[Value, ...]) -> str:
            key = (id(v), tuple(id(c) for c in _significant(chain)))
            if key in memo:
                return memo[key]
            if not self.virtual(v):
                out = operand(v, chain)
            elif isinstance(v, View):
                out = value(v.x, (v,) + chain)
            elif isinstance(v, Pointwise):
                args = [value(a, (v,) + chain) for a in v.args]
                out = ops_mod.emit(v.op, args, temp)
            else:
                raise TypeError(f"{type(v).__name__} inside a kernel's tree")
            memo[key] = out
            return out

        tree.result = value(root, ())
        tree.boolean = isinstance(root, Pointwise) and root.op in ops_mod.BOOL_OPS
        return tree

    def _view(self, v: Value, chain: tuple[Value, ...]) -> str:
        """The operand as Python: broadcast at each consumer, viewed at each size-1 view."""
        text = self.python(v)
        steps = _significant(chain)
        for c in steps:
            if isinstance(c, View):
                text = f"_stark_vw({text}, {c.method!r}, {c.args})" if c.args else \
                    f"_stark_vw({text}, {c.method!r})"
            else:
                text = f"_stark_ex({text}, {self.shape(c)})"
        return text


def _significant(chain: tuple[Value, ...]) -> tuple[Value, ...]:
    """The steps that matter for indexing: every view, and the last broadcast before each view
    (the broadcast to the root is added by the kernel)."""
    out: list[Value] = []
    for i, c in enumerate(chain):
        if isinstance(c, View):
            out.append(c)
        elif i + 1 < len(chain) and isinstance(chain[i + 1], View):
            out.append(c)
    return tuple(out)


def _chain_key(v: Value, chain: tuple[Value, ...]) -> tuple:
    return (id(v),) + tuple(id(c) for c in _significant(chain))
