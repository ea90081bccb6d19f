"""Compare candidate outputs with reference outputs (worker side, needs torch).

Tolerances follow KernelBench: fp32 1e-4, fp16/bf16 1e-2, fp64 1e-7 (absolute
and relative), integers and booleans exact; the harness or the caller may
override them. NaN passes only where the reference has NaN too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_TOLERANCE = {
    "float64": 1e-7,
    "float32": 1e-4,
    "float16": 1e-2,
    "bfloat16": 1e-2,
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


def as_outputs(value: Any) -> list[Any]:
    """A model may return a tensor, a tuple/list of tensors, or numbers."""
    if isinstance(value, (tuple, list)):
        return list(value)
    return [value]


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
            if r != c and not (isinstance(r, float) and isinstance(c, float) and abs(r - c) <= 1e-6 * max(1.0, abs(r))):
                return Comparison(False, None, None, i, f"output {i}: expected {r!r}, got {c!r}", atol, rtol)
            continue
        if not isinstance(c, torch.Tensor):
            return Comparison(False, None, None, i, f"output {i}: expected a tensor, got {type(c).__name__}", atol, rtol)
        if tuple(r.shape) != tuple(c.shape):
            return Comparison(False, None, None, i, f"output {i}: shape {tuple(c.shape)}, expected {tuple(r.shape)}", atol, rtol)
        if c.device != r.device:
            c = c.to(r.device)
        a, rt = tolerance_for(r.dtype, atol, rtol)
        used = (a, rt)
        if not (r.dtype.is_floating_point or r.dtype.is_complex):
            if not torch.equal(r, c.to(r.dtype)):
                n = int((r != c.to(r.dtype)).sum())
                return Comparison(False, None, None, i, f"output {i}: {n} of {r.numel()} elements differ (exact match required)", a, rt)
            continue
        r64, c64 = r.double(), c.double()
        r_nan, c_nan = torch.isnan(r64), torch.isnan(c64)
        if bool((c_nan & ~r_nan).any()):
            n = int((c_nan & ~r_nan).sum())
            return Comparison(False, None, None, i, f"output {i}: {n} NaN where the reference has numbers (unwritten or poisoned memory?)", a, rt)
        finite = ~r_nan
        diff = (r64 - c64).abs()
        diff = torch.where(finite, diff, torch.zeros_like(diff))
        diff = torch.where(torch.isinf(r64) & (r64 == c64), torch.zeros_like(diff), diff)
        max_abs = float(diff.max()) if diff.numel() else 0.0
        rel = diff / r64.abs().clamp_min(1e-12)
        max_rel = float(torch.where(finite, rel, torch.zeros_like(rel)).max()) if rel.numel() else 0.0
        worst_abs, worst_rel = max(worst_abs, max_abs), max(worst_rel, max_rel)
        bad = diff > (a + rt * r64.abs())
        bad = bad & finite
        if bool(bad.any()):
            n = int(bad.sum())
            return Comparison(
                False, max_abs, max_rel, i,
                f"output {i}: {n} of {r.numel()} elements outside atol={a:g}, rtol={rt:g} (max abs error {max_abs:.3g})",
                a, rt,
            )
    return Comparison(True, worst_abs, worst_rel, None, "", used[0], used[1])


def same_tensors(before: list[Any], after: list[Any]) -> int | None:
    """Index of the first input that changed, bit for bit, or None."""
    import torch

    for i, (b, a) in enumerate(zip(before, after)):
        if isinstance(b, torch.Tensor) and isinstance(a, torch.Tensor):
            if b.shape != a.shape or b.dtype != a.dtype:
                return i
            if b.dtype.is_floating_point:
                eq = (b == a) | (torch.isnan(b) & torch.isnan(a))
                if not bool(eq.all()):
                    return i
            elif not torch.equal(b, a):
                return i
    return None
