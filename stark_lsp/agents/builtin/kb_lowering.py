"""The built-in team's first move on a KernelBench task: write ``ModelNew`` in Triton.

A KernelBench root is the reference wrapped as ``class ModelNew(Model): pass``:
there is nothing to tune. When ``Model.forward`` is one operation the team
knows (``kb_forward``), the Plan agent marks the ``ModelNew`` block with
``rewrite ModelNew in Triton: <operation>`` and the Code agent replaces it with
the kernels of ``kb_triton``. From then on the task is a Triton source like
any other, and the usual tunables (block sizes, ``num_warps``) apply.
"""

from __future__ import annotations

import re

from stark_lsp.agents.base import AgentContext, AgentError, PlanResult
from stark_lsp.agents.builtin.kb_forward import analyse, NotRecognized, recognize
from stark_lsp.agents.builtin.kb_triton import render
from stark_lsp.markers.syntax import insert_marker, split_lines, strip_markers
from stark_lsp.search.digest import NOTHING_NEW

PREFIX = "rewrite ModelNew in Triton"
MARKER_ID = "model_new"
_INSTRUCTION = re.compile(rf"^\s*{PREFIX}\b", re.I)
_CLASS = re.compile(r"^class\s+ModelNew\s*\(\s*Model\s*\)\s*:\s*(?:#.*)?$")


def is_lowering(instruction: str) -> bool:
    return bool(_INSTRUCTION.match(instruction))


def modelnew_stub(source: str) -> tuple[int, int] | None:
    """1-based first and last line of a ``class ModelNew(Model):`` whose body
    is only ``pass`` / a docstring (the KernelBench root), or None."""
    lines = [l.rstrip("\r\n") for l in split_lines(source)]
    for i, line in enumerate(lines):
        if not _CLASS.match(line):
            continue
        last = i
        for j in range(i + 1, len(lines)):
            text = lines[j]
            if not text.strip():
                continue
            if not text[:1].isspace():
                break
            body = text.strip()
            if body not in ("pass", "...") and body[:1] not in ("'", '"'):
                return None  # a real body: not the root any more
            last = j
        return (i + 1, last + 1) if last > i else None
    return None


def wants_lowering(ctx: AgentContext) -> bool:
    return ctx.task.kind == "kernelbench" and modelnew_stub(ctx.node_source) is not None


def plan_lowering(ctx: AgentContext) -> PlanResult:
    span = modelnew_stub(ctx.node_source)
    assert span is not None
    try:
        op = analyse(ctx.node_source)
    except NotRecognized as e:
        raise AgentError(
            f"{NOTHING_NEW}: the built-in team writes Triton only for single-operation models "
            f"(elementwise activations, sum/mean/amax/amin over a dim, softmax, LayerNorm, 2-D matmul); "
            f"here: {e}. Use an LLM team (--llm openai) for this task.") from e
    instruction = f"{PREFIX}: {op.describe()}"
    marked = insert_marker(ctx.node_source, span[0], span[1], MARKER_ID, instruction, "python")
    return PlanResult(marked_source=marked, summary=instruction)


def implement_lowering(marked_source: str) -> str:
    """The replacement text of the ModelNew marker."""
    op = recognize(strip_markers(marked_source))
    if op is None:
        raise AgentError(f"cannot {PREFIX}: Model.forward is not an operation the built-in team lowers")
    return render(op)
