"""Whether a task can tell a right answer from a wrong one: the reference run on several inputs.

Some tasks are *degenerate*: their reference's outputs do not depend on the
inputs beyond the tolerance (a softmax over a dimension of size 1 is all
ones; a mean of centred noise is zero within 1e-4), so a candidate that
returns a constant without reading its inputs passes every check. METR and
robust-kbench drop such tasks; here the judge finds them before the first
candidate runs and says so once: the result carries the reason
(``EvalResult.degenerate``), and every surface marks its speedups
(``speedups.py``). So is a task with an output of that kind beside others that
do depend on the inputs (a softmax over a dimension of size 1 returned beside a
sound output: before session 31's review nothing said so, and a candidate
returning ones for it skipped its work unmarked). An input that the outputs do not depend on is noted as a
flag for review: a candidate may ignore it. Where an output does depend on an
input, a candidate's must too: every call is compared with the reference on
its own fresh inputs (``batches.py``), so one that ignores it fails.

Runs in the judge, on the reference only (trusted code).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from stark_lsp.evaluate.judge.compare import same_scalar, tolerance_for
from stark_lsp.evaluate.wire import digest as D
from stark_lsp.output_names import output_name

SEEDS = 4  # inputs the reference is run on


@dataclass
class Sanity:
    degenerate: str = ""  # why any constant passes ('' for a sound task)
    flags: list[str] = field(default_factory=list)
    # inputs the reference itself changes in place (``nn.ReLU(inplace=True)`` first): a candidate that does
    # the same is no cheat (``batches.Checker.fetch``)
    changes_inputs: tuple[int, ...] = ()


FINGERPRINT_KEY = 0x5A17  # the signs of the inputs' fingerprints (any fixed key: both sides are the judge's)


def fingerprints(xs: list[Any]) -> dict[int, list[float]]:
    """Each tensor input's signed sum and NaN/inf counts (``wire/digest.py``), read where it lies: no copy of
    the set is kept."""
    tensors = [(i, x) for i, x in enumerate(xs) if isinstance(x, torch.Tensor)]
    rows = D.digest([x for _, x in tensors], FINGERPRINT_KEY) if tensors else []
    return {i: row for (i, _), row in zip(tensors, rows)}


def changed_inputs(before: dict[int, list[float]], after: dict[int, list[float]]) -> tuple[int, ...]:
    """The inputs whose fingerprints differ: their counts, or their sums beyond a summation's own rounding (an
    input changed in place moves a sum of random signs by far more)."""
    def moved(a: list[float], b: list[float]) -> bool:
        return a[1:] != b[1:] or abs(a[0] - b[0]) > 1e-9 * max(abs(a[0]), abs(b[0]), 1e-300)
    return tuple(i for i in sorted(before) if i in after and moved(before[i], after[i]))


def _close(a: Any, b: Any, atol: float | None, rtol: float | None) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if not (a.is_floating_point() or a.is_complex()):
            return bool(torch.equal(a, b))
        at, rt = tolerance_for(a.dtype, atol, rtol)
        wide = torch.float64 if a.dtype in (torch.float64, torch.complex128) else torch.float32  # no double copies
        if a.is_complex():
            wide = torch.complex128 if wide == torch.float64 else torch.complex64
        return bool(torch.allclose(a.to(wide), b.to(wide), atol=at, rtol=rt, equal_nan=True))
    return same_scalar(a, b, atol, rtol)  # numbers as the comparison takes them


def check(outputs_of: Callable[[list[Any]], list[Any]], inputs_of: Callable[[int], list[Any]], seeds: list[int],
          atol: float | None, rtol: float | None) -> Sanity:
    """``outputs_of(inputs)``: the reference's outputs (it may use its inputs up: each set is drawn for
    it alone); ``inputs_of(seed)``: the task's inputs. Holds one set of inputs (and, while mixing, one
    input of another) beside two sets of outputs: a task's can be gigabytes each, and judges share
    the GPU's memory."""
    drawn = inputs_of(seeds[0])
    floats = [i for i, x in enumerate(drawn) if isinstance(x, torch.Tensor) and (x.is_floating_point() or x.is_complex())]
    before = fingerprints(drawn)
    first = outputs_of(drawn)  # the reference may change its inputs in place: which it changed is noted
    result = Sanity(changes_inputs=changed_inputs(before, fingerprints(drawn)))
    del drawn
    varies = [False] * len(first)
    for seed in seeds[1:]:
        o = outputs_of(inputs_of(seed))
        varies = [v or not _close(a, b, atol, rtol) for v, a, b in zip(varies, o, first)]
        del o
    if first and not any(varies):  # outputs near zero too: within the tolerance of each other for every input
        result.degenerate = (f"the reference's output is the same for every input within the tolerance (on "
                             f"{len(seeds)} random inputs): any constant passes, so a speedup on it means nothing")
        return result
    fixed = [i for i, (v, o) in enumerate(zip(varies, first)) if not v and isinstance(o, torch.Tensor)]
    if fixed:  # one output constant beside others that vary: its work can be skipped as a whole task's could
        names = ", ".join(output_name(i) for i in fixed)
        one = len(fixed) == 1
        result.degenerate = (f"{names} {'is' if one else 'are'} the same for every input within the tolerance (on "
                             f"{len(seeds)} random inputs): any constant passes for {'it' if one else 'them'}, so a "
                             f"speedup may come from skipping {'its' if one else 'their'} work")
    # each input on its own: the first seed's inputs with that one drawn from the second seed
    for i in floats:
        other = inputs_of(seeds[1])[i]
        mixed = inputs_of(seeds[0])
        x = mixed[i]
        if not isinstance(other, torch.Tensor) or torch.equal(other, x):
            del mixed, x, other  # nothing kept while the next input is drawn
            continue
        mixed[i] = other
        del x, other
        out = outputs_of(mixed)
        del mixed
        if all(_close(a, b, atol, rtol) for a, b in zip(out, first)):
            result.flags.append(f"the reference's output does not depend on input {i} beyond the tolerance: "
                                f"a candidate may ignore it")
    return result
