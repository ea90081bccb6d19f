"""The device chain's Triton kernels (``device_chain.py`` says what they are for).

``perturb_kernel``: multiplies a chunk of an input in place by ``1 +- 1/16``
per element, the sign bit 31 of MurmurHash3's finaliser of
``index * 0x9E3779B1 + h``, where ``h`` is hashed from a seed and, bit by
bit, from the previous call's digest row in device memory.

``digest_kernel``: adds a chunk's signed sum of finite elements (the signs of
``signed_sum.py``) and its NaN, +inf and -inf counts into four float64 slots.
"""

import triton
import triton.language as tl


@triton.jit
def _fm(h):
    h = h ^ (h >> 16)
    h = h * 0x85EBCA6B
    h = h ^ (h >> 13)
    h = h * 0xC2B2AE35
    return h ^ (h >> 16)


@triton.jit
def perturb_kernel(x_ptr, n, dig_ptr, row_off, seed, M: tl.constexpr, FIRST: tl.constexpr, WIDE: tl.constexpr,
                   BLOCK: tl.constexpr):
    h = _fm(seed.to(tl.uint32))
    if not FIRST:
        for j in tl.static_range(M):
            bits = tl.load(dig_ptr + row_off + j).to(tl.uint64, bitcast=True)
            h = _fm(h ^ (bits & 0xFFFFFFFF).to(tl.uint32))
            h = _fm(h ^ (bits >> 32).to(tl.uint32))
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    s = _fm(offs.to(tl.uint32) * 0x9E3779B1 + h) >> 31
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    if WIDE:
        y = x.to(tl.float64) * tl.where(s != 0, 0.9375, 1.0625).to(tl.float64)
    else:
        y = x.to(tl.float32) * tl.where(s != 0, 0.9375, 1.0625).to(tl.float32)
    tl.store(x_ptr + offs, y.to(x_ptr.dtype.element_ty), mask=mask)


@triton.jit
def digest_kernel(x_ptr, n, k, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float64)
    nan = x != x
    pinf = x == float("inf")
    ninf = x == float("-inf")
    finite = mask & ~nan & ~pinf & ~ninf
    h = _fm(offs.to(tl.uint32) * 0x9E3779B1 + k.to(tl.uint32))
    v = tl.where(finite, x, 0.0)
    v = tl.where((h >> 31) != 0, -v, v)
    tl.atomic_add(out_ptr, tl.sum(v, axis=0))
    tl.atomic_add(out_ptr + 1, tl.sum((mask & nan).to(tl.float64), axis=0))
    tl.atomic_add(out_ptr + 2, tl.sum((mask & pinf).to(tl.float64), axis=0))
    tl.atomic_add(out_ptr + 3, tl.sum((mask & ninf).to(tl.float64), axis=0))
