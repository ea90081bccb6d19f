"""Fused Triton for multi-statement KernelBench forwards (level 2 and the composite level-1 models).

``analyse(source)`` reads ``Model.forward`` (``reader``) into a graph of values
(``graph``), schedules it into kernels (``assemble``) and returns a ``Fused``
that says what it will write; ``render(source, defaults)`` returns the text
that replaces ``class ModelNew(Model): pass``: the runtime helpers
(``runtime``), the Triton kernels (``kernels``, ``trees``, ``ops``) and a
``ModelNew`` whose forward keeps library operations (convolutions, linear
layers, matmuls, anything the team does not write) as PyTorch calls and runs
everything else in as few kernels as the schedule allows.
``gemm_epilogue`` offers, for a linear layer or matmul followed by elementwise
operations, a Triton matmul that applies them before its store; ``mlp``, for a
forward that only runs the layers of a container the reader cannot see (an MLP
built in a loop), a ModelNew that plans those layers at run time, each Linear
with its activation one launch of that matmul.

A forward that branches on host values (``if self.use_bias:``) is read once
per outcome and the generated forward chooses on the host (``control``); loops
are unrolled or kept as host loops (``loops``). A model is refused
(``NotRecognized`` with the reason) when its forward branches or loops on
tensor values, updates in place, or when nothing in it would run in Triton.
"""

from __future__ import annotations

from dataclasses import dataclass

from stark_lsp.agents.builtin.kb_ast import NotRecognized  # noqa: F401  (re-exported: fusion.NotRecognized)

from .assemble import Program, assemble_read, render_program
from .graph import Variant
from .reader import read_forward


@dataclass
class Fused:
    program: Program
    params: list[str]
    gemm_epilogue: bool  # a Triton matmul with the epilogue is a possible variant

    def describe(self) -> str:
        return "fused: " + self.program.describe()


def analyse(source: str, defaults: dict[str, int] | None = None) -> Fused:
    read = read_forward(source)
    program = assemble_read(read, defaults)
    graph = read.graph if isinstance(read, Variant) else read.variants()[0].graph
    if not program.kernels:
        libs = ", ".join(dict.fromkeys(program.libs)) or "nothing"
        raise NotRecognized(f"forward is only library operations ({libs}): nothing to write in Triton")
    from .gemm_epilogue import find_gemm_epilogue

    gemm = isinstance(read, Variant) and find_gemm_epilogue(graph) is not None
    return Fused(program, graph.params, gemm)


def render(source: str, defaults: dict[str, int] | None = None) -> str:
    defaults = dict(defaults or {})
    if defaults.pop("gemm", 0):
        from .gemm_epilogue import render_gemm_epilogue

        return render_gemm_epilogue(source, defaults)
    fused = analyse(source, defaults)
    return render_program(fused.program, fused.params, fused.describe() + " (written by the built-in team)")
