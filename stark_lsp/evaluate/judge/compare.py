"""Compare candidate outputs with reference outputs (worker side, needs torch).

Tolerances follow KernelBench: fp32 1e-4, fp16/bf16 1e-2, fp64 1e-7 (absolute
and relative; a complex dtype its parts' float's), integers and booleans exact; the harness or the caller may
override them. Shapes and dtypes must match exactly. NaN, +inf and -inf must
sit exactly where the reference has them (both ways); elsewhere the values
must agree within the tolerance. Runs in the judge, never beside candidate code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from stark_lsp.evaluate.harness import as_outputs
from stark_lsp.output_names import output_name

DEFAULT_TOLERANCE = {
    "float64": 1e-7,
    "float32": 1e-4,
    "float16": 1e-2,
    "bfloat16": 1e-2,
    # a complex output is compared as its real and imaginary parts: their float's tolerance (before session 31's
    # review none, so an honest complex kernel whose rounding differed from the reference's was incorrect)
    "complex32": 1e-2,
    "complex64": 1e-4,
    "complex128": 1e-7,
}


@dataclass
class Comparison:
    passed: bool
    max_abs_error: float | None
    max_rel_error: float | None
    failed_output: int | None
    message: str
    atol: float | None
    rtol: float | None
    special: bool = False  # failed on where NaN and infinities are, not on a value's distance
    outside: int = 0  # elements outside the tolerance, in the output that failed
    size: int = 0  # that output's elements


def tolerance_for(dtype: Any, atol: float | None, rtol: float | None) -> tuple[float, float]:
    name = str(dtype).replace("torch.", "")
    default = DEFAULT_TOLERANCE.get(name, 0.0)
    return (default if atol is None else atol, default if rtol is None else rtol)


def compare_outputs(ref: Any, cand: Any, atol: float | None = None, rtol: float | None = None) -> Comparison:
    import torch

    refs, cands = as_outputs(ref), as_outputs(cand)
    if len(refs) != len(cands):
        return Comparison(False, None, None, None, f"the reference returns {len(refs)} outputs, the candidate {len(cands)}", atol, rtol)
    worst_abs = worst_rel = 0.0
    used = (atol, rtol)
    for i, (r, c) in enumerate(zip(refs, cands)):
        if not isinstance(r, torch.Tensor):
            if isinstance(c, torch.Tensor):
                c = c.item() if c.numel() == 1 else c
            err = abs(r - c) if _real(r) and _real(c) and math.isfinite(r) and math.isfinite(c) else None
            if not same_scalar(r, c, atol, rtol):  # a number's error, as an element's (``as_rounding``'s yardstick)
                return Comparison(False, err, None, i, f"{output_name(i)}: expected {r!r}, got {c!r}", atol, rtol,
                                  outside=1, size=1)
            worst_abs = max(worst_abs, err or 0.0)
            continue
        if not isinstance(c, torch.Tensor):
            return Comparison(False, None, None, i, f"{output_name(i)}: expected a tensor, got {type(c).__name__}", atol, rtol)
        if tuple(r.shape) != tuple(c.shape):
            return Comparison(False, None, None, i, f"{output_name(i)}: shape {tuple(c.shape)}, expected {tuple(r.shape)}", atol, rtol)
        if r.dtype != c.dtype:
            return Comparison(False, None, None, i, f"{output_name(i)}: dtype {_dt(c.dtype)}, expected {_dt(r.dtype)}", atol, rtol)
        if c.device != r.device:
            c = c.to(r.device)
        a, rt = tolerance_for(r.dtype, atol, rtol)
        used = (a, rt)
        if not (r.dtype.is_floating_point or r.dtype.is_complex):
            if not torch.equal(r, c.to(r.dtype)):
                n = int((r != c.to(r.dtype)).sum())
                return Comparison(False, None, None, i, f"{output_name(i)}: {n} of {r.numel()} elements differ (exact match required)", a, rt)
            continue
        if r.dtype.is_complex:
            r, c = torch.view_as_real(r), torch.view_as_real(c)
        got = _compare_floats(r.reshape(-1), c.reshape(-1), a, rt)
        if isinstance(got, str):
            return Comparison(False, None, None, i, f"{output_name(i)}: {got}", a, rt, special=True)
        max_abs, max_rel, n = got
        worst_abs, worst_rel = max(worst_abs, max_abs), max(worst_rel, max_rel)
        if n:
            return Comparison(
                False, max_abs, max_rel, i,
                f"{output_name(i)}: {n} of {r.numel()} elements outside atol={a:g}, rtol={rt:g} (max abs error {max_abs:.3g})",
                a, rt, outside=n, size=r.numel(),
            )
    return Comparison(True, worst_abs, worst_rel, None, "", used[0], used[1])


CHUNK = 1 << 24  # elements compared at once in float64: a few hundred MB, however big the output


def _compare_floats(r: Any, c: Any, a: float, rt: float) -> tuple[float, float, int] | str:
    """Two flat float tensors, in float64, a chunk at a time (judges share the GPU's memory, and an
    output can be gigabytes): why their NaN/inf positions differ, or (max abs error, max relative
    error, elements outside the tolerance). On a GPU one Triton pass a chunk (``compare_kernel.py``)."""
    import torch

    counts = {"NaN": [0, 0], "+inf": [0, 0], "-inf": [0, 0]}  # [extra in the candidate, missing]
    max_abs = max_rel = 0.0
    bad_n = 0
    tol = torch.tensor([a, rt], dtype=torch.float64, device=r.device) if r.is_cuda else None
    for start in range(0, r.numel(), CHUNK):  # one synchronization a chunk: every figure read at once
        got = _chunk_figures(r[start:start + CHUNK], c[start:start + CHUNK], a, rt, tol).tolist()
        for k, name in enumerate(counts):
            counts[name][0] += int(got[2 * k])
            counts[name][1] += int(got[2 * k + 1])
        max_abs, max_rel = max(max_abs, got[6]), max(max_rel, got[7])
        bad_n += int(got[8])
    for name, (extra, missing) in counts.items():
        if extra or missing:
            what = f"{extra} {name} where the reference has a number" if extra else f"{missing} {name} of the reference missing"
            return what + (" (unwritten or poisoned memory?)" if name == "NaN" and extra else "")
    return max_abs, max_rel, bad_n


_kernel: Any = None  # compare_kernel.compare_chunk, found on first use (False: Triton cannot run here)


def _chunk_figures(r: Any, c: Any, a: float, rt: float, tol: Any, any_device: bool = False) -> Any:
    """One chunk's nine figures (``compare_kernel.COLUMNS``) as a float64 tensor, not yet read: by the
    Triton kernel on a GPU (``any_device``: anywhere, for tests under Triton's interpreter), else by torch."""
    global _kernel
    import torch

    if (r.is_cuda or any_device) and r.dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        if _kernel is None:
            try:
                from stark_lsp.evaluate.judge.compare_kernel import compare_chunk
            except Exception:  # noqa: BLE001 - no Triton: the torch path
                compare_chunk = False
            _kernel = compare_chunk
        if _kernel is not False:
            try:
                return _kernel(r.contiguous(), c.contiguous(), tol)
            except Exception:  # noqa: BLE001 - a Triton that cannot build here: the torch path from now on
                _kernel = False
    r64, c64 = r.double(), c.double()
    parts = []
    for test in (torch.isnan, torch.isposinf, torch.isneginf):
        rm, cm = test(r64), test(c64)
        parts += [(cm & ~rm).sum(), (rm & ~cm).sum()]
    finite = torch.isfinite(r64)
    diff = torch.where(finite, (r64 - c64).abs(), torch.zeros_like(r64))
    rel = diff / r64.abs().clamp_min(1e-12)
    bad = (diff > (a + rt * torch.where(finite, r64.abs(), torch.zeros_like(r64)))) & finite
    parts += [diff.max(), torch.where(finite, rel, torch.zeros_like(rel)).max(), bad.sum()]
    return torch.stack([p.to(torch.float64) for p in parts])


def scalar_tolerance(value: Any, atol: float | None, rtol: float | None) -> tuple[float, float]:
    """A number output's (atol, rtol): float32's for a float (the judge cannot tell which arithmetic made it, and a
    float32 sum's ``.item()`` is the common case), none for an integer (``same_scalar`` keeps its 1e-6 of it)."""
    return tolerance_for("float32" if isinstance(value, float) else None, atol, rtol)


def same_scalar(r: Any, c: Any, atol: float | None = None, rtol: float | None = None) -> bool:
    """Two numbers output: a float within float32's tolerance (or the task's), an integer within 1e-6 of itself.
    Before session 31's review every float was held to 1e-6 of itself, and an honest ``torch.dot(a, b).item()``
    against a reference's ``(a * b).sum().item()`` (float32 rounding of 1e-5) was incorrect."""
    import math

    if isinstance(r, bool) or isinstance(c, bool) or not isinstance(r, (int, float)) or not isinstance(c, (int, float)):
        return type(r) is type(c) and r == c
    if math.isnan(r) or math.isnan(c):
        return math.isnan(r) and math.isnan(c)
    if math.isinf(r) or math.isinf(c):
        return r == c
    if r == c or abs(r - c) <= 1e-6 * max(1.0, abs(r)):
        return True
    a, rt = scalar_tolerance(r if isinstance(r, float) else c, atol, rtol)
    return abs(r - c) <= a + rt * abs(r)


def _real(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _dt(dtype: Any) -> str:
    return str(dtype).replace("torch.", "")


ROUNDING_FACTOR = 4.0  # a timed call's largest error within this many times the trials' largest
ROUNDING_SHARE = 0.01  # and at most this share of its elements outside the tolerance
# an output of one element (a number, a loss's 0-dim tensor): the trials show its rounding only once each (3-5
# samples), not over thousands of elements, and an honest float32 sum of 2**20 products strayed 3x the largest of
# 3 trials (session 31's review); lowered precision strays hundreds of times (bfloat16: 300x)
ONE_ELEMENT_ROUNDING_FACTOR = 16.0


def rounding_factor(size: int) -> float:
    return ONE_ELEMENT_ROUNDING_FACTOR if size == 1 else ROUNDING_FACTOR


def as_rounding(cmp: Comparison, trials_max_abs: float) -> bool:
    """Whether a timed call's failed comparison looks like the rounding the trials already showed, not
    like work done differently while timed: a few elements just outside the tolerance (a sum's element
    near zero after cancelling terms of thousands), with errors of the size the trials had where they
    passed. Lowered precision, cached or skipped work give errors far above an honest candidate's rounding
    (float16 in a float32 task: a thousand times its trials' on any element) or on many elements. Never a
    pass: such a call is ``incorrect``, only not called a cheat; trials with no error at all leave nothing
    to compare with (any difference while timed is then a cheat)."""
    if cmp.passed or cmp.special or cmp.max_abs_error is None or trials_max_abs <= 0.0 or cmp.size <= 0:
        return False
    return (cmp.max_abs_error <= rounding_factor(cmp.size) * trials_max_abs
            and cmp.outside <= max(1.0, ROUNDING_SHARE * cmp.size))
