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

Cost, since it is on every timed call's clock: the signs are a hash of each
element's index and a key from the call's seed, computed where the element
is read (``signed_sum.py``): on a GPU one kernel reads each output once and
sums in float64, and every output's sum is gathered with one device
synchronization. Only an output whose sum is not finite (it holds a NaN or an
infinity) pays for the counts.

The signs are new for every call, and secret until the call's request
arrives. A sign vector known ahead would let a candidate forge the digest of
a linear task without doing its work (``sum(S * (x W^T)) = sum((S W) * x)``:
``S W`` once, then one cheap product per call); with new signs, ``S W`` is a
product as big as the task's own, on the judge's clock.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from stark_lsp.evaluate.wire.channel import finite_number
from stark_lsp.evaluate.wire.signed_sum import CHUNK, key, signed_sum
from stark_lsp.output_names import output_name

SIGMAS = 8.0  # a false alarm on an honest output has probability < 2*exp(-32)


def _flat(t: torch.Tensor) -> torch.Tensor:
    t = t.detach()
    if t.is_complex():
        t = torch.view_as_real(t)
    t = t.reshape(-1)
    if t.dtype == torch.bool:
        t = t.view(torch.uint8)
    if not t.dtype.is_floating_point:  # integers: in a float that holds them exactly (negation included)
        t = t.to(_exact_float(t.dtype))
    return t.contiguous()


def _exact_float(dtype: torch.dtype) -> torch.dtype:
    """The narrowest float that holds every value of ``dtype`` and its negation exactly."""
    wide = {torch.int32, torch.int64, getattr(torch, "uint32", torch.int32), getattr(torch, "uint64", torch.int64)}
    return torch.float64 if dtype in wide else torch.float32


def _special(flat: torch.Tensor, seed: int, k: int) -> list[float]:
    """The digest of an output that holds NaN or infinities: the signed sum of its finite
    elements (the same signs) and the three counts (the rare path: it reads the output again)."""
    finite = torch.isfinite(flat)
    total = signed_sum(torch.where(finite, flat, 0), seed, k)
    counts = torch.stack([torch.isnan(flat).sum(), torch.isposinf(flat).sum(), torch.isneginf(flat).sum()])
    return [float(total)] + [float(c) for c in counts.tolist()]


def digest(values: list[Any], seed: int) -> list[list[float]]:
    """Per output: ``[signed sum of the finite elements, #NaN, #+inf, #-inf]`` (a scalar: itself).

    One device synchronization for all outputs (every sum is gathered into one
    tensor first): its cost is small and steady, which the judge's cross-check
    of the call's time relies on. A second one only where a sum is not finite."""
    out: list[list[float] | None] = []
    parts: list[tuple[int, torch.Tensor, torch.Tensor]] = []
    for k, v in enumerate(values):
        if not isinstance(v, torch.Tensor):
            x = float(v) if isinstance(v, (int, float)) else float("nan")
            out.append([0.0 if not math.isfinite(x) else x, float(math.isnan(x)), float(x == math.inf), float(x == -math.inf)])
            continue
        flat = _flat(v)
        parts.append((k, flat, signed_sum(flat, seed, k)))
        out.append(None)
    if parts:
        sums = torch.stack([s.to(parts[0][2].device) for _, _, s in parts]).tolist()
        for (k, flat, _), total in zip(parts, sums):
            out[k] = [total, 0.0, 0.0, 0.0] if math.isfinite(total) else _special(flat, seed, k)
    return [o for o in out if o is not None]


def bound(values: list[Any], atol: float, rtol: float) -> list[float]:
    """Per output: how far an honest candidate's signed sum may be from the reference's."""
    out: list[float | None] = []
    parts: list[tuple[int, torch.Tensor]] = []
    for v in values:
        if not isinstance(v, torch.Tensor):  # a number: 1e-6 of it, or its tolerance (``compare.scalar_tolerance``)
            finite = isinstance(v, (int, float)) and math.isfinite(float(v))
            out.append(max(1e-6 * max(1.0, abs(float(v))), atol + rtol * abs(float(v))) if finite else 0.0)
            continue
        parts.append((len(out), torch.stack(_bound_parts(v, _flat(v), atol, rtol))))
        out.append(None)
    if parts:
        gathered = torch.stack([p.to(parts[0][1].device) for _, p in parts]).tolist()
        for (i, _), (mag, var, scale) in zip(parts, gathered):
            out[i] = _bound_of(mag, var, scale)
    return [o for o in out if o is not None]


class Deferred:
    """The digests and bounds of many calls' outputs (the judge's checks of a timing), launched on the
    device call after call and read with one synchronization (``resolve``), instead of two a call.
    An output whose sum is not finite comes back as None: its counts need the output again, which
    the caller computes once more (``digest``), the rare path."""

    def __init__(self) -> None:
        self._parts: list[torch.Tensor] = []  # per tensor output: [signed sum, magnitude, variance, scale]
        self._calls: list[list[tuple[str, Any]]] = []

    def add(self, values: list[Any], seed: int, tolerances: list[tuple[float, float]]) -> None:
        """One call's outputs, with the (atol, rtol) of each."""
        row: list[tuple[str, Any]] = []
        for k, (v, (atol, rtol)) in enumerate(zip(values, tolerances)):
            if not isinstance(v, torch.Tensor):
                row.append(("done", (digest([v], seed)[0], bound([v], atol, rtol)[0])))
                continue
            flat = _flat(v)
            inexact = v.dtype.is_floating_point or v.is_complex()  # an integer output's bound has no tolerance
            parts = check_parts(flat, seed, k, atol, rtol) if inexact else None
            if parts is None:
                s = signed_sum(flat, seed, k)
                parts = torch.stack([s.to(torch.float64), *_bound_parts(v, flat, atol, rtol)])
            self._parts.append(parts)
            row.append(("part", len(self._parts) - 1))
        self._calls.append(row)

    def resolve(self) -> list[tuple[list[list[float] | None], list[float]]]:
        """Per call added: (its digest, None where an output's sum is not finite; its bounds)."""
        host = torch.stack([p.to(self._parts[0].device) for p in self._parts]).tolist() if self._parts else []
        out = []
        for row in self._calls:
            digs: list[list[float] | None] = []
            bounds: list[float] = []
            for kind, v in row:
                if kind == "done":
                    digs.append(v[0])
                    bounds.append(v[1])
                    continue
                total, mag, var, scale = host[v]
                digs.append([total, 0.0, 0.0, 0.0] if math.isfinite(total) else None)
                bounds.append(_bound_of(mag, var, scale))
            out.append((digs, bounds))
        return out


_CHECKED = (torch.float32, torch.float16, torch.bfloat16)  # squared tolerances of these never overflow float64
_TOL_MAX = 1e100  # tolerances beyond this (or not finite) take the torch path, whose scaled squares cannot overflow
_check_sums: Any = None  # device_chain_kernels.check_sums, found on first use (False: Triton is not usable here)
_tols: dict[tuple[float, float, str], torch.Tensor] = {}  # [atol, rtol] in float64 on a device, made once a pair


def check_parts(flat: torch.Tensor, seed: int, k: int, atol: float, rtol: float,
                any_device: bool = False) -> torch.Tensor | None:
    """[signed sum, magnitude, variance, scale] of output ``k`` (as ``signed_sum`` and ``_bound_parts``
    give them for a floating-point or complex output, the scale 1) from one Triton pass over it, without
    a synchronization; None where that cannot run (the CPU, unless ``any_device``: Triton's interpreter, for tests; float64 outputs and
    tolerances that are not finite or beyond ``_TOL_MAX``, whose squares could overflow; no Triton):
    the caller takes the torch path. The torch path also adds ``atol**2`` for each element that is
    not finite; here they add nothing (an honest output's errors are at its finite elements)."""
    global _check_sums
    if flat.dtype not in _CHECKED or not (flat.is_cuda or any_device):
        return None
    if not (0.0 <= atol < _TOL_MAX and 0.0 <= rtol < _TOL_MAX):
        return None
    if _check_sums is None:
        try:
            from stark_lsp.evaluate.wire.device_chain_kernels import check_sums
        except Exception:  # noqa: BLE001 - no Triton: the torch path
            check_sums = False
        _check_sums = check_sums
    if _check_sums is False:
        return None
    out = torch.zeros(4, dtype=torch.float64, device=flat.device)
    out[3] = 1.0
    tol = _tols.get((atol, rtol, str(flat.device)))
    if tol is None:
        tol = _tols[(atol, rtol, str(flat.device))] = torch.tensor([atol, rtol], dtype=torch.float64,
                                                                    device=flat.device)
    try:
        for c, start in enumerate(range(0, flat.numel(), CHUNK)):
            x = flat[start:start + CHUNK]
            _check_sums(x, x.numel(), key(seed, k, c), tol, out)
    except Exception:  # noqa: BLE001 - a Triton that cannot build here: the torch path from now on
        _check_sums = False
        return None
    return out


def _bound_parts(v: torch.Tensor, flat: torch.Tensor, atol: float, rtol: float) -> list[torch.Tensor]:
    """[magnitude, variance, scale] of an honest output's rounding (0-d tensors, no synchronization)."""
    exact = not (v.dtype.is_floating_point or v.is_complex())
    a = flat.to(torch.float64).abs()  # float64 before abs: no INT_MIN
    a = torch.where(torch.isfinite(a), a, 0.0)
    mag = a.sum()
    one = torch.ones((), dtype=torch.float64, device=a.device)
    if exact:
        return [mag, torch.zeros_like(one), one]
    tol = a * rtol + atol  # the squares scaled by the largest tolerance: no overflow for values past 1e154
    scale = tol.max() if tol.numel() else one
    scale = torch.where(scale > 0, scale, 1.0)
    return [mag, (tol / scale).square().sum(), scale]


def _bound_of(mag: float, var: float, scale: float) -> float:
    return SIGMAS * math.sqrt(var) * scale + 1e-12 * mag + 1e-9  # plus float64 rounding of the sums themselves


def agrees(cand: Any, ref: list[list[float]], bounds: list[float]) -> str:
    """'' when a candidate's digest matches the reference's, else what differs."""
    if not isinstance(cand, list) or len(cand) != len(ref):
        return f"{len(ref)} output digests expected"
    for i, (c, r, b) in enumerate(zip(cand, ref, bounds)):
        if (not isinstance(c, list) or len(c) != 4
                or not all(finite_number(x) for x in c)):
            return f"{output_name(i)}: malformed digest"
        if c[1:] != r[1:]:
            return f"{output_name(i)}: NaN/inf counts {c[1:]} instead of {r[1:]}"
        if not abs(c[0] - r[0]) <= b:  # fails closed: a NaN or an infinity anywhere here is a mismatch
            return f"{output_name(i)}: off by {abs(c[0] - r[0]):.3g} (an honest output is within {b:.3g})"
    return ""
