"""The signed sum at the heart of a digest: ``sum(sign_i * x_i)`` in float64, with secret signs.

Each element's sign is a hash of its index and a key drawn from the call's
seed (``key``): bit 31 of MurmurHash3's 32-bit finaliser of
``index * 0x9E3779B1 + key``, computed where the element is read. Nothing of
an output's size is drawn, written or read again: on a GPU one Triton kernel
reads the output once, grid-stride, and adds its programs' float64 sums into
one number (``_triton_sum``; the kernel is ``device_chain_kernels.sum_kernel``,
which the zygote compiles for every candidate process), about one pass over
memory; anywhere else (a GPU without Triton) the same hash in torch gives the same signs
(``_torch_sum``), and on the CPU the same hash in NumPy's wrapping uint32 arithmetic (``_numpy_sum``: a
few times cheaper, so a candidate cannot undercut the protocol's calibrated cost by much). Both sides of the wire get the same signs for a seed
whichever path they take, and the sums agree to float64 rounding.

The signs only need to be unknown until the call's request arrives (see
``digest.py``): the key is new for every call and output, and the hash mixes
every bit of the index, so a product ``S W`` prepared ahead is of no use.
"""

from __future__ import annotations

from typing import Any

import torch

M32 = 0xFFFF_FFFF
GOLDEN = 0x9E37_79B1
C1, C2 = 0x85EB_CA6B, 0xC2B2_AE35
CHUNK = 1 << 26  # elements per key: a chunk's indices fit in 32 bits whatever the output's size


def fmix32(h: int) -> int:
    """MurmurHash3's 32-bit finaliser, on a Python int."""
    h &= M32
    h ^= h >> 16
    h = (h * C1) & M32
    h ^= h >> 13
    h = (h * C2) & M32
    h ^= h >> 16
    return h


def key(seed: int, output: int, chunk: int) -> int:
    """The hash key of one chunk of one output of a call with ``seed``."""
    s = int(seed) & 0xFFFF_FFFF_FFFF_FFFF
    k = fmix32(fmix32(s & M32) ^ fmix32((s >> 32) + GOLDEN) ^ fmix32(output * C1 + 1) ^ fmix32(chunk * C2 + 7))
    return k if k > 1 else k + 2  # Triton makes an argument of 1 a constant; none is 0 or 1


def _mul32(h: torch.Tensor, c: int) -> torch.Tensor:
    """``(h * c) mod 2**32`` for int64 ``h`` below 2**32, without overflowing int64."""
    lo = h * (c & 0xFFFF)
    hi = ((h * (c >> 16)) & 0xFFFF) << 16
    return (lo + hi) & M32


def signs_negative(n: int, k: int, device: torch.device) -> torch.Tensor:
    """Whether each of the first ``n`` elements of a chunk with key ``k`` is negated (torch: bool)."""
    h = (_mul32(torch.arange(n, dtype=torch.int64, device=device), GOLDEN) + k) & M32
    h = h ^ (h >> 16)
    h = _mul32(h, C1)
    h = h ^ (h >> 13)
    h = _mul32(h, C2)
    h = h ^ (h >> 16)
    return (h >> 31).bool()


def _torch_sum(x: torch.Tensor, k: int) -> torch.Tensor:
    x64 = x.to(torch.float64)
    return torch.where(signs_negative(x.numel(), k, x.device), -x64, x64).sum()


try:
    import numpy as _np
except ImportError:  # torch's path: the same signs, several times the cost on the CPU
    _np = None
_BASES: dict[int, Any] = {}  # ``index * GOLDEN mod 2**32`` by chunk length (the CPU's path): lengths repeat
_NUMPY_DTYPES = (torch.float16, torch.float32, torch.float64)


def _numpy_sum(x: torch.Tensor, k: int) -> float:
    """``_torch_sum`` on the CPU: the same signs through NumPy's uint32 arithmetic, which wraps modulo 2**32 as
    the hash does (torch's path is a dozen passes over int64 and a dozen operators' overhead). The digest is
    part of the protocol whose calibrated cost is half subtracted from every figure: with torch's path (0.2 ms
    a call for 8192 floats on a 2-core machine), a candidate that computed its own process's digests this way
    (the same numbers) read 3.2-4.2x eager for eager's own work (session 29's review,
    tests/data/attacks/fast_protocol.py). With the protocol as cheap, little is left to reimplement."""
    n = x.numel()
    u32 = _np.uint32
    base = _BASES.get(n)
    if base is None:
        base = _np.arange(n, dtype=u32)
        base *= u32(GOLDEN)
        if n <= 1 << 22:  # at most 16 MB each, 8 lengths
            if len(_BASES) >= 8:
                _BASES.pop(next(iter(_BASES)))
            _BASES[n] = base
    h = base + u32(k & M32)
    h ^= h >> u32(16)
    h *= u32(C1)
    h ^= h >> u32(13)
    h *= u32(C2)
    h ^= h >> u32(16)
    x = x.detach()
    v = x.numpy().astype(_np.float64) if x.dtype in _NUMPY_DTYPES else x.to(torch.float64).numpy()
    return float(_np.where(h >> u32(31), -v, v).sum())


BLOCK = 4096
SUM_BLOCK, SUM_PROGRAMS = 1024, 528  # the sum's step and its grid at most (grid-stride: few same-address adds)
_TRITON: dict[torch.dtype, str] = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16",
                                   torch.float64: "fp64"}
_launch: Any = None  # device_chain_kernels.launch, found on first use (False: Triton is not usable here)


def _triton_sum(x: torch.Tensor, k: int, acc: torch.Tensor) -> bool:
    """Add the chunk's signed sum into ``acc`` (a float64 scalar on the GPU); False where Triton cannot.
    The kernel is ``device_chain_kernels.sum_kernel``: a candidate process runs the zygote's binary of it."""
    global _launch
    if _launch is None:
        try:
            from stark_lsp.evaluate.wire.device_chain_kernels import launch
        except Exception:  # noqa: BLE001 - no Triton: the torch path gives the same signs
            launch = False
        _launch = launch
    dtype = _TRITON.get(x.dtype)
    if _launch is False or dtype is None:
        return False
    n = x.numel()
    try:
        _launch("sum", dtype, max(1, min(triton_cdiv(n, SUM_BLOCK), SUM_PROGRAMS)), x, acc, n, k, block=SUM_BLOCK)
    except Exception:  # noqa: BLE001 - a Triton that cannot build here: the torch path, same signs
        _launch = False
        return False
    return True


def triton_cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def signed_sum(flat: torch.Tensor, seed: int, output: int) -> torch.Tensor:
    """``sum(sign_i * flat_i)`` in float64 as a 0-d tensor on ``flat``'s device (no synchronization).
    ``flat``: one-dimensional, contiguous, a floating dtype."""
    if flat.device.type == "cpu" and _np is not None:  # the same signs, a few times cheaper (``_numpy_sum``)
        total = 0.0
        for c, start in enumerate(range(0, flat.numel(), CHUNK)):
            total += _numpy_sum(flat[start:start + CHUNK], key(seed, output, c))
        return torch.tensor(total, dtype=torch.float64)
    acc = torch.zeros((), dtype=torch.float64, device=flat.device)
    for c, start in enumerate(range(0, flat.numel(), CHUNK)):
        x = flat[start:start + CHUNK]
        k = key(seed, output, c)
        if flat.is_cuda and _triton_sum(x, k, acc):
            continue
        acc += _torch_sum(x, k)
    return acc
