"""When the original kernel's failure is one no search can answer: the machine's or the task's, not the kernel's.

A search starts by judging the root (the user's kernel, or for KernelBench the reference itself as
``ModelNew``). Most root failures are the user's to fix or the Debug agent's to repair. Two are neither,
and a search that went on would spend its whole budget on refusals ("the root source is not in the
context") and record the run as 30 failed attempts:

* **the GPU's memory ran out** (the judge already tried once more with the GPU to itself; other judges'
  memory stays theirs): the machine's state. The search stops as an evaluator failure: the root is
  abandoned, so the next run judges it again (a bench's next batch redoes the run).
* **the reference itself, judged as a candidate, does not match the reference's outputs**: the task's code
  does not reproduce itself here. Its ``forward`` draws random numbers, or a library picks another
  algorithm when memory is short (cuDNN falls back to a convolution that needs less workspace while other
  searches fill the GPU). No candidate can be judged against such outputs: the task stops the search.

Seen on an H100 with 8 KernelBench searches at once (docs/benchmarks.md, session 27): a root out of memory
even alone, and ``16_ConvTranspose2d_Mish_Add_Hardtanh_Scaling``'s root 1.3 M of 537 M elements outside
1e-4, both then "30 failed attempts"; the same tasks passed in the next batch.
"""

from __future__ import annotations

from dataclasses import dataclass

from stark_lsp.evaluate.out_of_memory import ran_out_of_memory

MACHINE = "machine"  # the search stops as an evaluator failure (``EvaluatorFailed``): run it again later
TASK = "task"  # the search stops as a broken task (``TaskBroken``)


@dataclass(frozen=True)
class RootFailure:
    kind: str  # MACHINE or TASK
    message: str  # one line for the user: what happened, and what to do


def unjudgeable(status: str, message: str, reference_itself: bool) -> RootFailure | None:
    """Why the root's failure (its status and message) leaves nothing to search, or None where it does not.
    ``reference_itself``: the root is the KernelBench reference wrapped as ``ModelNew`` (``Node.is_reference_itself``)."""
    said = " ".join((message or "").split())[:300]
    if status != "ok" and ran_out_of_memory(said):
        return RootFailure(MACHINE, f"the original kernel could not be judged: the GPU's memory ran out ({said}); "
                                    "not the kernel's doing: run it again with fewer searches at once (--jobs) "
                                    "or nothing else on the GPU")
    if status == "incorrect" and reference_itself:
        return RootFailure(TASK, f"the task's own Model, judged as a candidate, does not match its reference "
                                 f"outputs ({said}): the reference does not reproduce itself here (random draws in "
                                 "forward(), or a library that picks another algorithm when GPU memory is short, "
                                 "e.g. with other searches at once); no candidate can be judged against it")
    return None
