"""The built-in Code agent: carries out ``set X to V (was W)`` markers.

For each marker it finds the tunable named X inside the marker's span (a
fragment: only the span is read) and writes V there; an empty span with an
nvcc flag instruction becomes a new ``// stark-nvcc-flags:`` line. A
``rewrite ModelNew in Triton`` marker (KernelBench roots, ``kb_lowering``)
becomes the Triton kernels of the model's operation. Any other instruction,
e.g. one a person typed, raises AgentError.
"""

from __future__ import annotations

from stark_lsp.agents.base import AgentContext, AgentError, CodeResult
from stark_lsp.agents.builtin.instructions import parse_instruction
from stark_lsp.agents.builtin.kb_lowering import implement_lowering, is_lowering
from stark_lsp.agents.builtin.tunables import find_tunables, flags_line, set_value
from stark_lsp.markers.syntax import Marker, MarkerError, parse_markers


class BuiltinCoder:
    def code(self, ctx: AgentContext, marked_source: str) -> CodeResult:
        try:
            markers = parse_markers(marked_source)
        except MarkerError as e:
            raise AgentError(f"the marked source breaks the marker rules: {e}") from e
        if not markers:
            raise AgentError("the marked source has no markers to implement")
        return CodeResult(replacements={
            m.id: implement_lowering(marked_source, m.instruction, ctx.compiled_code) if is_lowering(m.instruction)
            else self.implement(m, ctx.task.language)
            for m in markers})

    def implement(self, m: Marker, language: str) -> str:
        ins = parse_instruction(m.instruction)
        if ins is None:
            raise AgentError(
                f"the built-in team cannot implement: {m.instruction!r} (marker '{m.id}', line {m.begin_line}); "
                f"it only knows 'set <tunable> to <value>'. Use an LLM team for this marker."
            )
        found = [t for t in find_tunables(m.span, language, fragment=True) if t.name == ins.name]
        if language == "cuda" and ins.name.startswith("nvcc ") and not any(t.site for t in found):
            if m.span.strip():
                raise AgentError(f"marker '{m.id}' (line {m.begin_line}): no stark-nvcc-flags line in its span to change")
            return flags_line(ins.name, ins.value) + "\n"
        if not found:
            raise AgentError(
                f"the built-in team cannot implement {m.instruction!r} (marker '{m.id}', line {m.begin_line}): "
                f"no tunable named {ins.name!r} in the marked lines"
            )
        if ins.has_old:
            same = [t for t in found if t.value == ins.old]
            found = same or found
        t = found[0]
        if type(t.value) is not type(ins.value) and not (t.value is None or ins.value is None):
            raise AgentError(f"marker '{m.id}': {ins.name} cannot take the value {ins.value!r}")
        if t.kind == "dim3" and isinstance(t.value, tuple) and isinstance(ins.value, tuple) and len(t.value) != len(ins.value):
            raise AgentError(f"marker '{m.id}': {ins.name} has {len(t.value)} dimensions, not {len(ins.value)}")
        return set_value(m.span, t, ins.value)
