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

Cost, since it is on every timed call's clock: the judge sends one seed for
a whole timing phase, so each process draws a sign vector once per output
size and keeps it (``_SignCache``); a call's digest is then one product and
one float64 sum over the output (the elements are read as they are, signs
flip them exactly), gathered with one device synchronization. Only an output
whose sum is not finite (it holds a NaN or an infinity) pays for the counts.
The signs being known ahead does not help a cheat: a digest that matches
the reference's needs the reference's output (see docs/EVALUATOR.md).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

import torch

from stark_lsp.evaluate.channel import finite_number

CHUNK = 1 << 24  # elements per step where the signs are not kept
KEEP_ELEMENTS = 1 << 26  # sign elements a process keeps, all sizes together (256 MB in float32) ...
KEEP_MAX = 1 << 28  # ... on a GPU, a 1/256th of its memory in float32 signs, up to this many (1 GB)
SIGMAS = 8.0  # a false alarm on an honest output has probability < 2*exp(-32)


def _flat(t: torch.Tensor) -> torch.Tensor:
    t = t.detach()
    if t.is_complex():
        t = torch.view_as_real(t)
    return t.reshape(-1)


def _sign_dtype(dtype: torch.dtype) -> torch.dtype:
    """The narrowest float that holds every value of ``dtype`` exactly (times +-1)."""
    return torch.float64 if dtype in (torch.float64, torch.int32, torch.int64) else torch.float32


def _generator(seed: int, k: int, device: torch.device) -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed((seed * 1_000_003 + k) & 0x7FFF_FFFF_FFFF_FFFF)
    return g


def _draw_signs(g: torch.Generator, n: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    s = torch.empty(n, dtype=dtype, device=device)
    return s.bernoulli_(0.5, generator=g).mul_(2).sub_(1)


class _SignCache:
    """Sign vectors by (device, seed, output index, size, dtype), least recently used first out."""

    def __init__(self, keep: int | None = None):
        self.keep = keep  # None: by the device (``keep_for``)
        self.items: OrderedDict[tuple[Any, ...], torch.Tensor] = OrderedDict()
        self.size = 0

    def get(self, seed: int, k: int, n: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        key = (str(device), seed, k, n, dtype)
        s = self.items.get(key)
        if s is not None:
            self.items.move_to_end(key)
            return s
        s = _draw_signs(_generator(seed, k, device), n, dtype, device)
        if self.keep is None:
            self.keep = keep_for(device)
        self.items[key] = s
        self.size += n
        while self.size > self.keep and len(self.items) > 1:
            self.size -= self.items.popitem(last=False)[1].numel()
        return s


def keep_for(device: torch.device) -> int:
    """How many sign elements a process keeps: more on a GPU with memory to spare (a 16384 x 8192
    output is 2^27 elements: kept on an H200, drawn afresh for every call on a 24 GB card)."""
    if device.type != "cuda":
        return KEEP_ELEMENTS
    total = torch.cuda.get_device_properties(device).total_memory
    return max(KEEP_ELEMENTS, min(KEEP_MAX, total // 1024))


def keeps(n: int, device: torch.device) -> bool:
    return n <= (_SIGNS.keep if _SIGNS.keep is not None else keep_for(device))


_SIGNS = _SignCache()


def _signed_sum(flat: torch.Tensor, seed: int, k: int) -> torch.Tensor:
    """sum(sign_i * x_i) in float64, as a 0-d tensor (no synchronization)."""
    dtype, n = _sign_dtype(flat.dtype), flat.numel()
    if keeps(n, flat.device):
        return (flat * _SIGNS.get(seed, k, n, dtype, flat.device)).sum(dtype=torch.float64)
    g = _generator(seed, k, flat.device)  # too big to keep: drawn chunk by chunk, in order
    acc = torch.zeros((), dtype=torch.float64, device=flat.device)
    for start in range(0, n, CHUNK):
        x = flat[start:start + CHUNK]
        acc += (x * _draw_signs(g, x.numel(), dtype, x.device)).sum(dtype=torch.float64)
    return acc


def _special(flat: torch.Tensor, seed: int, k: int) -> list[float]:
    """The digest of an output that holds NaN or infinities: the signed sum of its finite
    elements and the three counts (the rare path: it reads the output a few more times)."""
    finite = torch.isfinite(flat)
    total = _signed_sum(torch.where(finite, flat, torch.zeros((), dtype=flat.dtype, device=flat.device)), seed, k)
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
        if flat.dtype == torch.bool:
            flat = flat.view(torch.uint8)
        parts.append((len(out), flat, _signed_sum(flat, seed, k)))
        out.append(None)
    if parts:
        sums = torch.stack([s.to(parts[0][2].device) for _, _, s in parts]).tolist()
        for (i, flat, _), total in zip(parts, sums):
            out[i] = [total, 0.0, 0.0, 0.0] if math.isfinite(total) else _special(flat, seed, i)
    return [o for o in out if o is not None]


def bound(values: list[Any], atol: float, rtol: float) -> list[float]:
    """Per output: how far an honest candidate's signed sum may be from the reference's."""
    out: list[float | None] = []
    parts: list[tuple[int, torch.Tensor, bool]] = []
    for v in values:
        if not isinstance(v, torch.Tensor):
            out.append(1e-6 * max(1.0, abs(float(v))) if isinstance(v, (int, float)) and math.isfinite(float(v)) else 0.0)
            continue
        flat = _flat(v)
        if flat.dtype == torch.bool:
            flat = flat.view(torch.uint8)
        exact = not flat.dtype.is_floating_point
        a = flat.abs().to(_sign_dtype(flat.dtype))
        a = torch.where(torch.isfinite(a), a, torch.zeros((), dtype=a.dtype, device=a.device))
        mag = a.sum(dtype=torch.float64)
        var = torch.zeros((), dtype=torch.float64, device=a.device) if exact else \
            (a.mul(rtol).add_(atol).square_()).sum(dtype=torch.float64)
        parts.append((len(out), torch.stack([mag, var]), exact))
        out.append(None)
    if parts:
        gathered = torch.stack([p.to(parts[0][1].device) for _, p, _ in parts]).tolist()
        for (i, _, _), (mag, var) in zip(parts, gathered):
            # plus float64 rounding of the sums themselves
            out[i] = SIGMAS * math.sqrt(var) + 1e-12 * mag + 1e-9
    return [o for o in out if o is not None]


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
