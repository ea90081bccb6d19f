"""The built-in team's first move on a KernelBench task: write ``ModelNew`` in Triton.

A KernelBench root is the reference wrapped as ``class ModelNew(Model): pass``:
there is nothing to tune. The Plan agent marks the ``ModelNew`` block with
``rewrite ModelNew in Triton: <what>`` and the Code agent replaces it with:

* first of all, when the root's evaluation brought back what torch.compile (Inductor) wrote for
  the model, that code written out as plain Triton (``inductor_seed``): as fast as compile by
  construction, and tuned from there like any Triton source;
* the template of ``kb_triton`` when ``forward`` is one reduction, softmax,
  attention, cross-entropy,
  LayerNorm or matrix product of its inputs (``kb_forward``);
* otherwise the fused kernels of ``fusion``: library operations kept as
  PyTorch calls, everything after them (elementwise chains, reductions,
  softmax, norms, pools, scans, losses) in as few Triton kernels as the
  schedule allows.
* before those, for a forward that only runs the layers of a container the reader cannot see
  (an MLP built in a loop, ``fusion.mlp``): each Linear with its activation one GEMM launch, planned
  at run time (alone when the fused kernels refuse the model).

Each comes at one of a few starting points (block sizes and warps: the
defaults, then others, ``STARTS``; for a linear layer or matmul followed by
elementwise operations also a Triton matmul with that epilogue), so that the
root has several different children to offer. From then on the task is a
Triton source like any other, and the usual tunables apply. Each carries the
``CUDA_GRAPH`` switch, off (``cuda_graph_text``: the forward replayed from a
CUDA graph when the search turns it on).
"""

from __future__ import annotations

import random
import re
from typing import Any, Callable

from stark_lsp.agents.base import AgentContext, AgentError, NothingNew, PlanResult
from stark_lsp.agents.builtin.kb_ast import NotRecognized, Unsupported
from stark_lsp.agents.builtin.kb_attention import STARTS as ATTENTION_STARTS
from stark_lsp.agents.builtin.kb_cross_entropy import STARTS as CROSS_ENTROPY_STARTS
from stark_lsp.agents.builtin import fusion
from stark_lsp.agents.builtin.fusion.mlp import STARTS as MLP_STARTS
from stark_lsp.agents.builtin.fusion.mlp import is_mlp_instruction, read_mlp, render_mlp
from stark_lsp.agents.builtin.cuda_graph_text import with_cuda_graph
from stark_lsp.agents.builtin.kb_forward import Op, analyse, recognize
from stark_lsp.agents.builtin.kb_matmul import STARTS as MATMUL_STARTS
from stark_lsp.agents.builtin.inductor_seed import DESCRIPTION as SEED_DESCRIPTION
from stark_lsp.agents.builtin.inductor_seed import describe as describe_seed
from stark_lsp.agents.builtin.inductor_seed import write_seed
from stark_lsp.agents.builtin.kb_triton import render
from stark_lsp.agents.builtin.tunables import set_value
from stark_lsp.agents.builtin.tunables_triton import find_triton_tunables
from stark_lsp.markers.syntax import insert_marker, split_lines, strip_markers
from stark_lsp.source_digest import NOTHING_NEW, source_digest

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


# Starting points of the Triton code, per kind of operation: the renderer's defaults first, then
# other block sizes and warps. Each is one root child, so best-of-N from the root has N to draw.
STARTS: dict[str, list[dict[str, int]]] = {
    # fused kernels: defaults for every kernel of one kind (BLOCK: elementwise, scan and pool blocks;
    # BLOCK_R / BLOCK_K: a reduction's tile and column width); gemm=1: the Triton matmul with the epilogue
    "fused": [{}, {"BLOCK": 2048, "BLOCK_R": 2048, "num_warps": 8},
              {"BLOCK": 512, "BLOCK_R": 512, "BLOCK_K": 32, "num_warps": 2},
              {"BLOCK": 4096, "BLOCK_R": 4096, "BLOCK_K": 128, "num_warps": 8}],
    "reduce": [{}, {"BLOCK_R": 32, "BLOCK_INNER": 64}, {"BLOCK_R": 4, "BLOCK_INNER": 256, "num_warps": 8},
               {"ROW_BLOCK_SIZE": 4096, "num_warps": 8}],
    "softmax": [{}, {"BLOCK_SIZE": 4096, "num_warps": 8}, {"BLOCK_SIZE": 256, "num_warps": 2}],
    "layernorm": [{}, {"CHUNK_SIZE": 16384, "BLOCK_SIZE": 2048, "num_warps": 8},
                  {"CHUNK_SIZE": 1024, "BLOCK_SIZE": 256, "num_warps": 2}],
    "matmul": MATMUL_STARTS,  # the defaults, then the configurations of Triton's matmul tutorial
    "attention": ATTENTION_STARTS,  # BLOCK_M query rows, BLOCK_N keys a tile, warps and stages
    "cross_entropy": CROSS_ENTROPY_STARTS,  # BLOCK_C classes a block
}
_START = re.compile(r";\s*start with\s+(.+)$", re.I)


def instruction_for(op_description: str, start: dict[str, int]) -> str:
    text = f"{PREFIX}: {op_description}"
    if start:
        text += "; start with " + ", ".join(f"{k}={v}" for k, v in start.items())
    return text


def parse_start(instruction: str) -> dict[str, int]:
    m = _START.search(instruction)
    if not m:
        return {}
    out: dict[str, int] = {}
    for part in m.group(1).split(","):
        name, _, value = part.partition("=")
        if not value.strip().isdigit():
            raise AgentError(f"cannot read the starting point {part.strip()!r} in {instruction!r}")
        out[name.strip()] = int(value)
    return out


def _lowering(source: str) -> tuple[str, list[tuple[str, dict[str, int]]]]:
    """(what to write, its starting points: (description, start) each) for a KernelBench source. A forward
    that runs layers the reader cannot see (an MLP built in a loop, ``fusion.mlp``) has those starts first."""
    try:
        op = analyse(source)
        return "template", [(op.describe(), s) for s in STARTS[op.kind]]
    except NotRecognized as e:
        refused = e if isinstance(e, Unsupported) else None  # a template's own operation, in a variant it does not write
    mlp = read_mlp(source)
    mlp_starts = [(mlp.describe(), s) for s in MLP_STARTS] if mlp is not None else []
    try:
        fused = fusion.analyse(source)
    except NotRecognized as e:
        if mlp_starts:
            return "mlp", mlp_starts
        why = refused if refused is not None else e
        raise NothingNew(
            f"{NOTHING_NEW}: the built-in team cannot write this model in Triton: {why}. "
            f"Use an LLM team (--llm openai) for this task.") from why
    starts = list(STARTS["fused"])
    if fused.gemm_epilogue:
        starts.insert(2, {"gemm": 1})
    return "fused", mlp_starts + [(fused.describe(), s) for s in starts]


def _instructions(ctx: AgentContext) -> list[str]:
    """Every starting point for this model, first to try first: torch.compile's code written out
    (when the root's evaluation brought it back and it can be written out), then the built-in
    templates or fused kernels at their defaults, then their other starts in an order drawn from
    the seed. NotRecognized from both: NothingNew saying why."""
    seed: list[str] = []
    why_not_seed = ""
    if ctx.compiled_code is not None:
        try:
            write_seed(ctx.compiled_code, ctx.node_source)
            seed = [f"{PREFIX}: {describe_seed(ctx.compiled_code)}"]
        except NotRecognized as e:
            why_not_seed = f" (torch.compile's code could not be written out: {e})"
    try:
        _, starts = _lowering(ctx.node_source)
    except NothingNew as e:
        if seed:
            return seed
        raise NothingNew(f"{e}{why_not_seed}") from None
    order = [0] + random.Random(ctx.seed).sample(range(1, len(starts)), len(starts) - 1)
    return seed + [instruction_for(*starts[i]) for i in order]


def plan_lowering(ctx: AgentContext, implemented: Callable[[str], str | None]) -> PlanResult:
    """The first starting point (``_instructions``) whose source is not in ``ctx.seen``;
    ``implemented(marked)`` is what the Code agent makes of it."""
    span = modelnew_stub(ctx.node_source)
    assert span is not None
    instructions = _instructions(ctx)
    for instruction in instructions:
        marked = insert_marker(ctx.node_source, span[0], span[1], MARKER_ID, instruction, "python")
        if not ctx.seen:
            return PlanResult(marked_source=marked, summary=instruction)
        source = implemented(marked)
        if source is not None and source_digest(source) not in ctx.seen:
            return PlanResult(marked_source=marked, summary=instruction)
    raise NothingNew(f"{NOTHING_NEW}: every Triton starting point the built-in team knows for this model "
                     f"({len(instructions)}) is already in the tree")


def is_compiled_seed(instruction: str) -> bool:
    """The instruction starts from torch.compile's code (``inductor_seed``)."""
    return instruction.strip().startswith(f"{PREFIX}: {SEED_DESCRIPTION}")


def implement_lowering(marked_source: str, instruction: str = "", compiled: dict[str, Any] | None = None) -> str:
    """The replacement text of the ModelNew marker: the Triton code, at the starting point the
    instruction names (torch.compile's code written out, from ``compiled``, for that start)."""
    source = strip_markers(marked_source)
    if is_compiled_seed(instruction):
        if compiled is None:
            raise AgentError("this plan starts from torch.compile's code, which this search does not have "
                             "(the root was evaluated without the torch.compile baseline)")
        try:
            return write_seed(compiled, source)
        except NotRecognized as e:
            raise AgentError(f"cannot write torch.compile's code out: {e}") from e
    start = parse_start(instruction)
    if is_mlp_instruction(instruction, PREFIX):
        try:
            return with_cuda_graph(apply_start(render_mlp(source), start))
        except NotRecognized as e:
            raise AgentError(f"cannot {PREFIX}: {e}") from e
    op: Op | None = recognize(source)
    if op is not None:
        return with_cuda_graph(apply_start(render(op), start))
    try:
        return with_cuda_graph(fusion.render(source, start))
    except NotRecognized as e:
        raise AgentError(f"cannot {PREFIX}: {e}") from e


def apply_start(code: str, start: dict[str, int]) -> str:
    for name, value in start.items():
        sites = [t for t in find_triton_tunables(code) if t.name == name and t.site is not None]
        if not sites:
            raise AgentError(f"the Triton code for this model has no {name} to start at {value}")
        for t in sorted(sites, key=lambda t: (t.site.line, t.site.start), reverse=True):
            code = set_value(code, t, value)
    return code
