"""The batch protocol on the GPU itself: no host synchronization, no host draw, between calls.

On the host chain (``chain.py``) every call waits for the previous call's
digest on the host, then draws its inputs there: a synchronization and a
few hundred microseconds of Python per call, which the judge's clock must
subtract and cannot resolve below (docs/benchmarks.md, "The judge's clock
alone"). The device chain keeps the same guarantees with the work on the
GPU:

* a batch's inputs are drawn by a separate request (``prepare``), before
  the judge's clock starts;
* call ``i``'s floating-point inputs are then multiplied, element by
  element, by ``1 + EPS`` or ``1 - EPS``, signs hashed from call ``i-1``'s
  digest as it lies in device memory (the batch's nonce for the first call):
  ``perturb_``. So no call's inputs exist before the previous output does:
  calls cannot overlap, be batched into one launch, or start early, and an
  output computed on the unperturbed inputs is off by about ``EPS``, far
  outside any tolerance;
* each output's digest (``digest.py``: the signed sum of its finite
  elements and its NaN/+inf/-inf counts, with the same signs) is added up on
  the device into that call's row of a float64 table: ``digest_into``;
* one synchronization at the end of the batch reads the table.

The judge draws the same inputs from the same seeds and applies the same
kernel with the digests the process committed to, so it checks every call
on exactly the inputs the call saw. Used on a GPU only, for tasks whose
outputs are floating-point tensors and which have a floating-point input.
"""

from __future__ import annotations

import struct
from typing import Any

import torch

from stark_lsp.evaluate.wire.signed_sum import BLOCK, C1, CHUNK, GOLDEN, M32, fmix32, key, triton_cdiv

EPS = 2.0**-4  # exact in every float format: 1 +- EPS is 1.0625 or 0.9375
FLOATS = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
_DT = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16", torch.float64: "fp64"}


def _kernels() -> Any:
    """The Triton kernels (``device_chain_kernels.py``), imported on first use: a CPU never needs them."""
    from stark_lsp.evaluate.wire import device_chain_kernels as K

    return K


def usable(inputs: list[Any], outputs: list[Any], device: torch.device, any_device: bool = False) -> bool:
    """Whether a task can take the device chain: on a GPU (``any_device``: also on the CPU, through
    Triton's interpreter, for tests), outputs all floating-point tensors, and at least one
    floating-point input to perturb."""
    if device.type != "cuda" and not any_device:
        return False
    outs_ok = bool(outputs) and all(isinstance(o, torch.Tensor) and o.dtype in FLOATS for o in outputs)
    return outs_ok and any(isinstance(x, torch.Tensor) and x.dtype in FLOATS for x in inputs)


def seed_of(nonce: int, which: int) -> int:
    """The perturbation's seed for input ``which`` of a call: mixed from the batch's nonce."""
    return fmix32((int(nonce) & M32) ^ fmix32(which * C1 + 3)) | 2  # never 0 or 1 (Triton constants)


def _step(a: int, b: int, w: int) -> tuple[int, int]:
    """One 32-bit word into the key ``(a, b)``, as ``device_chain_kernels._step`` does it."""
    x = a ^ fmix32((b + w) & M32)
    y = b ^ fmix32(x ^ w)
    x = x ^ fmix32((y + (w ^ GOLDEN)) & M32)
    y = y ^ fmix32((x + w) & M32)
    return x ^ a, y ^ b


def chain_hash(seed: int, previous: list[float] | None) -> tuple[int, int]:
    """The 64-bit key ``(a, b)`` the kernel derives: from ``seed`` and the previous call's digest row
    (its float64 values, word by word), as the kernel does it on the device. Each step is one-way
    (Davies-Meyer), so a candidate that forges a digest within its tolerance cannot choose the next
    call's key: it would have to try about 2**64 forgeries for each key it wants."""
    a, b = fmix32(seed), fmix32((seed & M32) ^ C1)
    for v in previous or []:
        bits = struct.unpack("<Q", struct.pack("<d", float(v)))[0]
        a, b = _step(a, b, bits & M32)
        a, b = _step(a, b, bits >> 32)
    return a, b


def sign_bits(key: tuple[int, int], n: int) -> list[int]:
    """Each element's sign bit under ``key`` (1: multiplied by ``1 - EPS``), as the kernel computes it."""
    a, b = key
    return [fmix32(fmix32((i * GOLDEN + a) & M32) ^ b) >> 31 for i in range(n)]


def perturb_(x: torch.Tensor, dig: torch.Tensor | None, row: int, nonce: int, which: int) -> None:
    """Multiply ``x`` (a contiguous floating-point tensor on the GPU) in place by ``1 +- EPS`` per
    element, signs from ``dig[row]`` (the previous call's digest row; ``row < 0``: the first call)."""
    if not isinstance(x, torch.Tensor) or x.dtype not in FLOATS or x.numel() == 0:
        return
    if not x.is_contiguous():
        raise ValueError("the device chain needs contiguous inputs")
    n = x.numel()
    first = dig is None or row < 0
    m = 1 if first else dig.shape[1]
    base = dig if not first else torch.zeros(1, dtype=torch.float64, device=x.device)
    flat = x.view(-1)
    for start in range(0, n, CHUNK):  # indices within a chunk fit in 32 bits
        part = flat[start:start + CHUNK]
        _kernels().launch("perturb", _DT[x.dtype], triton_cdiv(part.numel(), BLOCK), part, part.numel(), base,
                          0 if first else row * m, (seed_of(nonce, which) ^ ((start // CHUNK) << 2)) | 2, m,
                          int(first), block=BLOCK)


def perturb_inputs(inputs: list[Any], dig: torch.Tensor | None, row: int, nonce: int) -> None:
    for j, x in enumerate(inputs):
        perturb_(x, dig, row, nonce, j)


def digest_into(outputs: list[Any], dig: torch.Tensor, row: int, sign_seed: int) -> None:
    """Add each output's digest (the signed sum of its finite elements, its NaN, +inf and -inf
    counts) into ``dig[row, 4k:4k+4]``, on the device, without a synchronization. Outputs that are
    not tensors are left at zero (their description, checked on every call, says what they are)."""
    from stark_lsp.evaluate.wire.digest import _flat

    K = _kernels()
    for i, o in enumerate(outputs):
        if not isinstance(o, torch.Tensor) or 4 * i + 4 > dig.shape[1]:
            continue
        flat = _flat(o)
        if flat.dtype not in FLOATS:
            flat = flat.to(torch.float64)
        if not flat.is_cuda:
            flat = flat.to(dig.device)
        for c, start in enumerate(range(0, flat.numel(), CHUNK)):
            part = flat[start:start + CHUNK]
            K.launch("digest", _DT[flat.dtype], K.digest_grid(part.numel()), part, part.numel(),
                     key(sign_seed, i, c), dig[row, 4 * i:], block=BLOCK)


def rows(dig: torch.Tensor, outputs: int) -> list[list[list[float]]]:
    """The table as the reply carries it: per call, per output, ``[sum, nan, +inf, -inf]``."""
    return [[r[4 * i:4 * i + 4] for i in range(outputs)] for r in dig.tolist()]


def flat_row(digest: list[list[float]]) -> list[float]:
    return [float(v) for out in digest for v in out]

