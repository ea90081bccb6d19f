"""A short fingerprint of a timed call's output, so the judge can check timed calls.

Every timed call runs on inputs drawn fresh for that call. The candidate
process answers each one with a *digest* of the output: the sum of its
elements multiplied by random signs (+1/-1, drawn from a seed the judge sends
with the call), plus the counts of NaN, +inf and -inf. The judge computes the
same digest of the reference's output for a few of those calls, chosen in
secret, and compares.

An honest output differs from the reference by at most ``atol + rtol*|r|``
per element, and those errors do not depend on the signs, so the two sums
differ by a few standard deviations ``sqrt(sum(tol^2))`` at most
(Hoeffding). A cached, stale or skipped result differs by the size of the
values themselves, far beyond that bound, at any tensor size. Needs torch;
used in the judge and in the candidate process alike.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from stark_lsp.evaluate.channel import finite_number

CHUNK = 1 << 24
SIGMAS = 8.0  # a false alarm on an honest output has probability < 2*exp(-32)


def _flat(t: torch.Tensor) -> torch.Tensor:
    t = t.detach()
    if t.is_complex():
        t = torch.view_as_real(t)
    return t.reshape(-1)


def _signs(g: torch.Generator, n: int, device: torch.device) -> torch.Tensor:
    s = torch.empty(n, dtype=torch.float64, device=device)
    return s.bernoulli_(0.5, generator=g).mul_(2).sub_(1)


def digest(values: list[Any], seed: int) -> list[list[float]]:
    """Per output: ``[signed sum of the finite elements, #NaN, #+inf, #-inf]`` (a scalar: itself).

    One device synchronization for all outputs (every figure is gathered
    into one tensor first): its cost is small and steady, which the judge's
    cross-check of the call's time relies on."""
    out: list[list[float] | None] = []
    parts: list[torch.Tensor] = []
    for k, v in enumerate(values):
        if not isinstance(v, torch.Tensor):
            x = float(v) if isinstance(v, (int, float)) else float("nan")
            out.append([0.0 if not math.isfinite(x) else x, float(math.isnan(x)), float(x == math.inf), float(x == -math.inf)])
            continue
        flat = _flat(v)
        g = torch.Generator(device=flat.device)
        g.manual_seed((seed * 1_000_003 + k) & 0x7FFF_FFFF_FFFF_FFFF)
        acc = torch.zeros(4, dtype=torch.float64, device=flat.device)
        for start in range(0, flat.numel(), CHUNK):
            x = flat[start:start + CHUNK].to(torch.float64)
            s = _signs(g, x.numel(), x.device)
            acc += torch.stack([torch.dot(torch.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0), s),
                                torch.isnan(x).sum(), torch.isposinf(x).sum(), torch.isneginf(x).sum()]).to(torch.float64)
        parts.append(acc)
        out.append(None)
    gathered = iter(torch.stack([p.to(parts[0].device) for p in parts]).tolist() if parts else [])
    return [o if o is not None else next(gathered) for o in out]


def bound(values: list[Any], atol: float, rtol: float) -> list[float]:
    """Per output: how far an honest candidate's signed sum may be from the reference's."""
    out: list[float] = []
    for v in values:
        if not isinstance(v, torch.Tensor):
            out.append(1e-6 * max(1.0, abs(float(v))) if isinstance(v, (int, float)) and math.isfinite(float(v)) else 0.0)
            continue
        flat = _flat(v)
        exact = not (flat.dtype.is_floating_point or v.is_complex())
        var, mag = 0.0, 0.0
        for start in range(0, flat.numel(), CHUNK):
            x = flat[start:start + CHUNK].to(torch.float64)
            a = torch.where(torch.isfinite(x), x.abs(), torch.zeros_like(x))
            mag += float(a.sum())
            if not exact:
                var += float(((atol + rtol * a) ** 2).sum())
        # plus float64 rounding of the sums themselves
        out.append(SIGMAS * math.sqrt(var) + 1e-12 * mag + 1e-9)
    return out


def agrees(cand: Any, ref: list[list[float]], bounds: list[float]) -> str:
    """'' when a candidate's digest matches the reference's, else what differs."""
    if not isinstance(cand, list) or len(cand) != len(ref):
        return f"{len(ref)} output digests expected"
    for i, (c, r, b) in enumerate(zip(cand, ref, bounds)):
        if (not isinstance(c, list) or len(c) != 4
                or not all(finite_number(x) for x in c)):
            return f"output {i}: malformed digest"
        if c[1:] != r[1:]:
            return f"output {i}: NaN/inf counts {c[1:]} instead of {r[1:]}"
        if abs(c[0] - r[0]) > b:
            return f"output {i}: off by {abs(c[0] - r[0]):.3g} (an honest output is within {b:.3g})"
    return ""
