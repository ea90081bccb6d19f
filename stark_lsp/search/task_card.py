"""The task card every agent reads: what to compute, on what, how it is judged,
and how far the search has come.

* the reference computation (the harness's ``reference`` or the KernelBench
  ``Model``; when the selected source already holds it verbatim, a pointer to
  those lines instead of a second copy);
* the inputs and outputs with shapes and dtypes as the evaluator saw them
  (``EvalResult.io``), or, before any evaluation reported them, the harness
  code that makes the inputs, marked "not yet measured";
* the tolerance and the calling convention;
* for KernelBench, the ways to write ModelNew: CUDA through ``load_inline``
  only where CUDA can run (not on the CPU, where the Triton interpreter
  runs the candidates);
* your kernel (the root) and the current best, in ms and as labelled speedups
  (both read from ``tree_view.py``'s ``TreeView``: its root, and ``best_so_far``,
  the best by single evaluations the search compares as it goes);
* the measured hardware floor and the gap to it.

Pure: text in, text out (``describe_task`` reads the task's files).
"""

from __future__ import annotations

from typing import Iterable

from stark_lsp.evaluate.result import EvalResult, Floor, TaskIO, ValueInfo
from stark_lsp.output_names import counted
from stark_lsp.speedups import ratio_text
from stark_lsp.tasks.describe import TaskFacts
from stark_lsp.tasks.spec import TaskSpec

from .labels import timing_words
from .node import Node
from .tree_view import TreeView

FENCE = "```"

KIND_WORDS = {
    "cuda": "CUDA: the candidate is a .cu file of __global__ kernels and extern \"C\" host launchers",
    "triton": "Triton: the candidate is a Python file of @triton.jit kernels and the entry function that launches them",
    "kernelbench": "KernelBench: the candidate is a Python file whose class ModelNew replaces Model "
                   "(PyTorch, Triton kernels, or inline CUDA through load_inline)",
}
KERNELBENCH_NO_CUDA = ("KernelBench: the candidate is a Python file whose class ModelNew replaces Model "
                       "(PyTorch or Triton kernels; no GPU here, so no CUDA)")


def kind_words(kind: str, cuda: bool = True) -> str:
    """What a candidate of ``kind`` is; ``cuda`` False where CUDA cannot run (no load_inline then)."""
    if kind == "kernelbench" and not cuda:
        return KERNELBENCH_NO_CUDA
    return KIND_WORDS.get(kind, kind)


def task_card(task: TaskSpec, facts: TaskFacts, nodes: Iterable[Node], shown_source: str = "",
              cuda: bool = True) -> str:
    """The card as prompt text. ``shown_source`` is the source the prompt shows
    in full (the selected node's): a reference it already holds is pointed to,
    not repeated. ``cuda`` False: the candidates run where CUDA cannot
    (``hardware_card.cuda_runs``)."""
    nodes = [n for n in nodes if n.status != "abandoned"]
    view = TreeView.of(nodes)
    root, best = view.root, view.best_so_far  # the search's best as it goes, never the re-timed figures
    parts = [f"## Task card\nTask: {task.name} ({kind_words(task.kind, cuda)})"]
    parts.append(_reference(facts, shown_source))
    parts.append(_io(facts, nodes, shown_source))
    parts.append(_tolerance(facts, nodes))
    parts.append(_convention(task, facts, shown_source))
    parts.append(_timings(root, best))
    parts.append(_floor(root, best))
    if facts.problems:
        parts.append("Could not read: " + "; ".join(facts.problems))
    return "\n".join(p for p in parts if p).rstrip() + "\n"


# -- pieces -----------------------------------------------------------------------
def _lines_of(piece: str, source: str) -> str | None:
    """'lines a-b' where ``piece`` sits verbatim in ``source``, else None."""
    if not piece or not source:
        return None
    at = source.find(piece)
    if at < 0:
        return None
    start = source.count("\n", 0, at) + 1
    return f"lines {start}-{start + piece.count(chr(10))}"


def _block(text: str) -> str:
    return f"{FENCE}python\n{text.rstrip()}\n{FENCE}"


def _reference(facts: TaskFacts, shown: str) -> str:
    if not facts.reference:
        return "Reference computation: unknown (see 'Could not read' below)."
    what = "class Model" if facts.reference_name == "Model" else "reference()"
    where = _lines_of(facts.reference, shown)
    if where:
        return (f"Reference computation: {what} at {where} of the source shown below "
                f"(from {facts.reference_file}); every candidate must compute exactly what it computes.")
    return (f"Reference computation ({what} in {facts.reference_file}); every candidate must compute "
            f"exactly what it computes:\n{_block(facts.reference)}")


def value_text(v: ValueInfo) -> str:
    if v.shape is not None or v.dtype is not None:
        shape = "[" + ", ".join(str(d) for d in (v.shape or [])) + "]"
        return f"{v.dtype or '?'} tensor {shape}" if v.shape is not None else f"{v.dtype} tensor"
    return f"{v.value!s}" if v.value is not None else "a value"


def measured_io(nodes: Iterable[Node]) -> TaskIO | None:
    """The inputs and outputs the evaluator reported (the root's first, else any node's)."""
    ordered = sorted(nodes, key=lambda n: (n.parent_id is not None, n.id))
    for n in ordered:
        r: EvalResult | None = n.result
        if r is not None and r.io is not None and (r.io.inputs or r.io.outputs):
            return r.io
    return None


def _io(facts: TaskFacts, nodes: list[Node], shown: str) -> str:
    io = measured_io(nodes)
    if io is not None:
        names = list(facts.reference_params)
        lines = ["Inputs and outputs, as the evaluator saw them:"]
        for i, v in enumerate(io.inputs):
            name = names[i] if i < len(names) and not names[i].startswith("*") else f"input {counted(i)}"
            lines.append(f"  in  {name}: {value_text(v)}")
        for i, v in enumerate(io.outputs):
            lines.append(f"  out {counted(i)}: {value_text(v)}")  # counted from 1, as every message names them
        return "\n".join(lines)
    head = "Inputs and outputs: not yet measured (no evaluation has reported them)"
    if not facts.inputs:
        return head + "."
    pieces = [p for p in facts.inputs.split("\n\n") if p.strip()]
    fn = next((p for p in pieces if "def get_inputs" in p), "")
    where = _lines_of(fn, shown) if fn and all(p in shown for p in pieces) else None
    if where:
        return f"{head}; get_inputs() at {where} of the source shown below makes the inputs."
    return f"{head}; the harness makes the inputs with:\n{_block(facts.inputs)}"


def _tolerance(facts: TaskFacts, nodes: list[Node]) -> str:
    for n in sorted(nodes, key=lambda n: (n.parent_id is not None, n.id)):
        c = n.result.correctness if n.result is not None else None
        if c is not None and (c.atol is not None or c.rtol is not None):
            trials = f" on each of {len(c.trials)} inputs" if c.trials else ""
            return (f"Tolerance: |candidate - reference| <= atol + rtol * |reference| with atol {c.atol:g}, "
                    f"rtol {c.rtol:g}{trials} (as the evaluator checked #{n.id}), fresh random inputs each trial.")
    if facts.tolerance:
        items = ", ".join(f"{k} {v}" for k, v in facts.tolerance.items())
        return f"Tolerance: {items} (TOLERANCE in {facts.reference_file}), checked on fresh random inputs."
    return "Tolerance: the evaluator's default for the output dtype, checked on fresh random inputs."


def _convention(task: TaskSpec, facts: TaskFacts, shown: str) -> str:
    if task.kind == "kernelbench":
        init = facts.init_inputs
        where = _lines_of(init, shown) if init else None
        text = ("Calling convention: the evaluator builds ModelNew(*get_init_inputs()) under the same seed as "
                "Model (so parameters created in __init__ match) and compares ModelNew()(*get_inputs()) with "
                "Model()(*get_inputs()). Keep ModelNew's constructor arguments and forward signature.")
        if init and not where:
            text += f"\n{_block(init)}"
        return text
    if facts.run:
        lead = ("the harness calls run(lib, *inputs); lib has every extern \"C\" function of the candidate "
                "(a tensor argument for a pointer parameter becomes a device pointer once its device, dtype and "
                "contiguity are checked; numbers become the declared C types; the launch error is read after each "
                "call). Keep the launcher names and parameters it uses"
                if task.kind == "cuda" else
                "the harness calls run(module, *inputs) with the candidate imported as module")
        where = _lines_of(facts.run, shown)
        body = f" (run at {where} of the source shown below)." if where else f":\n{_block(facts.run)}"
        return f"Calling convention: {lead}{body}"
    if task.kind == "triton":
        entry = facts.entry or "the entry function"
        return (f"Calling convention: the harness imports the candidate and calls {entry}(*inputs) "
                f"(ENTRY = {entry!r} in {facts.reference_file}); it must return the output(s) as new tensors. "
                f"Keep that function's name and parameters.")
    return "Calling convention: unknown (the harness has no run())."


def _timings(root: Node | None, best: Node | None) -> str:
    lines = ["Timings (median per call; eager = the reference in PyTorch):"]
    if root is None or not root.evaluated:
        lines.append("  your kernel: not evaluated yet")
        return "\n".join(lines)
    if root.correct and root.runtime_ms is not None:
        lines.append(f"  your kernel (#{root.id}, the root): {timing_words(root, None)}")
    else:
        lines.append(f"  your kernel (#{root.id}, the root): {root.status}" + (f": {root.error}" if root.error else ""))
    if best is not None and best.id != root.id:
        lines.append(f"  current best (#{best.id}): {timing_words(best, root)}")
    elif root.correct:
        lines.append("  current best: your kernel (nothing has beaten it yet)")
    else:
        lines.append("  current best: none (no correct candidate yet)")
    return "\n".join(lines)


def floor_of(*nodes: Node | None) -> Floor | None:
    for n in nodes:
        r = n.result if n is not None else None
        fl = r.runtime.floor if r is not None and r.runtime is not None else None
        if fl is not None and fl.floor_ms > 0:
            return fl
    return None


def _floor(root: Node | None, best: Node | None) -> str:
    fl = floor_of(best, root)
    if fl is None:
        cpu = root is not None and root.result is not None and root.result.runtime is not None and not root.result.runtime.is_gpu
        why = "CPU timings: no GPU floor" if cpu else "not measured"
        return f"Hardware floor: {why}."
    mem = f"memory floor {fl.memory_floor_ms:.4g} ms ({fl.bytes / 1e9:.3g} GB at {fl.bandwidth_gbs / 1000:.3g} TB/s measured)"
    if fl.flops and fl.peak_tflops:
        comp = f"compute floor {fl.compute_floor_ms:.4g} ms ({fl.flops / 1e12:.3g} TFLOP at {fl.peak_tflops:.3g} TFLOP/s {fl.dtype})"
    else:
        comp = "no counted matmul/conv FLOPs"
    text = f"Hardware floor: {fl.floor_ms:.4g} ms, {fl.bound}-bound ({mem}; {comp})."
    gaps = []
    for label, n in (("the best", best), ("your kernel", root)):
        if n is not None and n.correct and n.runtime_ms:
            gaps.append(f"{label} #{n.id} takes {ratio_text(fl.gap(n.runtime_ms))} the floor")
        if best is not None and root is not None and best.id == root.id:
            break
    return text + (" Gap: " + "; ".join(gaps) + "." if gaps else "")
