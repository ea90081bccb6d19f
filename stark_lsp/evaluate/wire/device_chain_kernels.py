"""The device chain's Triton kernels (``device_chain.py`` says what they are for).

``perturb_kernel``: multiplies a chunk of an input in place by ``1 +- 1/16``
per element, the sign bit 31 of ``fmix(fmix(index * 0x9E3779B1 + a) ^ b)``
(MurmurHash3's finaliser), where the 64-bit key ``(a, b)`` is hashed from a
seed and, word by word, from the previous call's digest row in device memory
(``m`` values; none when ``first``) by a one-way step (``_step``).

``digest_kernel``: adds a chunk's signed sum of finite elements (the signs of
``signed_sum.py``) and its NaN, +inf and -inf counts into four float64 slots:
grid-stride, one add per program and slot (same-address atomics serialize:
one per block made the digest of 16M floats cost 0.11 ms on the H200).

``sum_kernel``: ``signed_sum.py``'s sum (every element, NaN and infinities
included) into one float64 slot, for the host chain's digests: grid-stride,
as the digest is.

``check_kernel``: the judge's side of a check, in one pass: the signed sum of
every element (``sum_kernel``'s) and, over the finite elements, the sum of
magnitudes and of squared tolerances (``digest.bound``'s parts). Only the
judge runs it (through the JIT): it replaced ten passes of torch in float64,
which made the checks of a timing cost more than the timing.

``hash_kernel``: the states of ``output_hash.py``'s "lanes" scheme, a
commitment to an output's bytes that a read-back must match exactly: each
lane absorbs its words through ``_step``, then a program's lanes are
combined in a fixed tree (``tl.split`` pairs), two 32-bit words a program.

Every candidate process is fresh, so through ``@triton.jit`` each one would
compile every kernel again (hundreds of milliseconds each, per input dtype, on
the H200). ``precompile`` compiles them in the zygote instead, for every
float dtype, against the GPU's architecture and without touching CUDA; the
forked processes inherit the compiled kernels (``COMPILED``) and only load
them. Their signatures assume nothing of alignment or values, so one binary
serves every tensor. ``launch`` takes the compiled kernel where there is one
and the JIT otherwise (the judge's own process, the CPU's interpreter).
"""

from __future__ import annotations

import sys
import time
from typing import Any

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
def _signed(x, offs, k):
    # each element with its sign: negated where bit 31 of fmix(index * 0x9E3779B1 + key) is set (signed_sum.py)
    h = _fm(offs.to(tl.uint32) * 0x9E3779B1 + k.to(tl.uint32))
    return tl.where((h >> 31) != 0, -x, x)


@triton.jit
def _step(a, b, w):
    # one word of the previous digest into the 64-bit key (a, b): Davies-Meyer over a 4-round Feistel
    # keyed by the word, so a key cannot be worked back to the state before it (each step would need
    # 2**64 tries), and a digest cannot be forged to land its successor's key on a chosen one
    x = a ^ _fm(b + w)
    y = b ^ _fm(x ^ w)
    x = x ^ _fm(y + (w ^ 0x9E3779B1))
    y = y ^ _fm(x + w)
    return x ^ a, y ^ b


@triton.jit
def perturb_kernel(x_ptr, n, dig_ptr, row_off, seed, m, first, WIDE: tl.constexpr, BLOCK: tl.constexpr):
    a = _fm(seed.to(tl.uint32))
    b = _fm(seed.to(tl.uint32) ^ 0x85EBCA6B)
    if first == 0:
        for j in range(m):
            bits = tl.load(dig_ptr + row_off + j).to(tl.uint64, bitcast=True)
            a, b = _step(a, b, (bits & 0xFFFFFFFF).to(tl.uint32))
            a, b = _step(a, b, (bits >> 32).to(tl.uint32))
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    s = _fm(_fm(offs.to(tl.uint32) * 0x9E3779B1 + a) ^ b) >> 31
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    if WIDE:
        y = x.to(tl.float64) * tl.where(s != 0, 0.9375, 1.0625).to(tl.float64)
    else:
        y = x.to(tl.float32) * tl.where(s != 0, 0.9375, 1.0625).to(tl.float32)
    tl.store(x_ptr + offs, y.to(x_ptr.dtype.element_ty), mask=mask)


@triton.jit
def digest_kernel(x_ptr, n, k, out_ptr, BLOCK: tl.constexpr):
    # grid-stride: each program sums its blocks in registers and adds once, so a big output costs a few
    # hundred atomic adds on the four slots instead of four per block (same-address atomics serialize)
    acc = tl.zeros([BLOCK], dtype=tl.float64)
    c_nan = tl.zeros([BLOCK], dtype=tl.int32)
    c_pinf = tl.zeros([BLOCK], dtype=tl.int32)
    c_ninf = tl.zeros([BLOCK], dtype=tl.int32)
    for b in range(tl.program_id(0), tl.cdiv(n, BLOCK), tl.num_programs(0)):
        offs = b * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float64)
        nan = x != x
        pinf = x == float("inf")
        ninf = x == float("-inf")
        finite = mask & ~nan & ~pinf & ~ninf
        acc += _signed(tl.where(finite, x, 0.0), offs, k)
        c_nan += (mask & nan).to(tl.int32)
        c_pinf += (mask & pinf).to(tl.int32)
        c_ninf += (mask & ninf).to(tl.int32)
    tl.atomic_add(out_ptr, tl.sum(acc, axis=0))
    s_nan = tl.sum(c_nan, axis=0)
    s_pinf = tl.sum(c_pinf, axis=0)
    s_ninf = tl.sum(c_ninf, axis=0)
    if s_nan > 0:
        tl.atomic_add(out_ptr + 1, s_nan.to(tl.float64))
    if s_pinf > 0:
        tl.atomic_add(out_ptr + 2, s_pinf.to(tl.float64))
    if s_ninf > 0:
        tl.atomic_add(out_ptr + 3, s_ninf.to(tl.float64))


@triton.jit
def sum_kernel(x_ptr, out_ptr, n, k, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float64)
    for b in range(tl.program_id(0), tl.cdiv(n, BLOCK), tl.num_programs(0)):  # grid-stride: one add a program
        offs = b * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float64)
        acc += _signed(x, offs, k)
    tl.atomic_add(out_ptr, tl.sum(acc, axis=0))


@triton.jit
def check_kernel(x_ptr, n, k, tol_ptr, out_ptr, BLOCK: tl.constexpr):
    atol = tl.load(tol_ptr)
    rtol = tl.load(tol_ptr + 1)
    acc = tl.zeros([BLOCK], dtype=tl.float64)
    mag = tl.zeros([BLOCK], dtype=tl.float64)
    var = tl.zeros([BLOCK], dtype=tl.float64)
    for b in range(tl.program_id(0), tl.cdiv(n, BLOCK), tl.num_programs(0)):  # grid-stride: one add a program
        offs = b * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float64)
        acc += _signed(x, offs, k)
        a = tl.abs(x)
        finite = mask & (a < float("inf"))  # NaN compares false too
        a = tl.where(finite, a, 0.0)
        mag += a
        t = tl.where(finite, a * rtol + atol, 0.0)
        var += t * t
    tl.atomic_add(out_ptr, tl.sum(acc, axis=0))
    tl.atomic_add(out_ptr + 1, tl.sum(mag, axis=0))
    tl.atomic_add(out_ptr + 2, tl.sum(var, axis=0))


def check_sums(x: Any, n: int, k: int, tol: Any, out: Any) -> None:
    """``check_kernel`` over one chunk ``x`` (contiguous, fp32/fp16/bf16), added into ``out[0:3]``;
    ``tol``: [atol, rtol] as a float64 tensor on the device (a Python float would be float32)."""
    check_kernel[(digest_grid(n),)](x, n, k, tol, out, BLOCK=DIGEST_BLOCK)


@triton.jit
def hash_kernel(w_ptr, n, out_ptr, BLOCK: tl.constexpr, LEVELS: tl.constexpr):
    # output_hash.py's "lanes" scheme: lane l of program p absorbs word l of blocks p, p + P, ... through the
    # one-way step, then the program's lanes are combined pairwise in a fixed tree; two words out per program
    pid = tl.program_id(0)
    lane = tl.arange(0, BLOCK).to(tl.uint32)
    a = _fm(lane * 0x9E3779B1 + 0x243F6A88)
    b = _fm(lane ^ 0x85EBCA6B)
    a, b = _step(a, b, pid.to(tl.uint32))
    for blk in range(pid, tl.cdiv(n, BLOCK), tl.num_programs(0)):
        offs = blk * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        w = tl.load(w_ptr + offs, mask=m, other=0).to(tl.uint32, bitcast=True)
        a2, b2 = _step(a, b, w)
        a = tl.where(m, a2, a)
        b = tl.where(m, b2, b)
    for lv in tl.static_range(LEVELS):
        a = tl.reshape(a, (BLOCK >> (lv + 1), 2))
        b = tl.reshape(b, (BLOCK >> (lv + 1), 2))
        al, ar = tl.split(a)
        bl, br = tl.split(b)
        a, b = _step(al, bl, ar)
        a, b = _step(a, b, br)
    one = tl.arange(0, 1)
    tl.store(out_ptr + 2 * pid + one, a.to(tl.int32, bitcast=True))
    tl.store(out_ptr + 2 * pid + 1 + one, b.to(tl.int32, bitcast=True))


DIGEST_BLOCK = 1024  # elements per step of a digest program (its registers hold a float64 per element)
DIGEST_PROGRAMS = 528  # the digest's grid at most: 4 per SM of an H200, a few waves elsewhere


def digest_grid(n: int) -> int:
    return max(1, min((n + DIGEST_BLOCK - 1) // DIGEST_BLOCK, DIGEST_PROGRAMS))


KERNELS = {"perturb": perturb_kernel, "digest": digest_kernel, "sum": sum_kernel, "hash": hash_kernel}
DTYPES = ("fp32", "fp16", "bf16", "fp64")  # Triton's names for device_chain.FLOATS
HASH_BLOCK, HASH_LEVELS = 1024, 10  # output_hash.BLOCK and LEVELS (a test checks they agree)
SUM_BLOCK = 1024  # signed_sum.SUM_BLOCK (a test checks they agree)


def dtypes_of(name: str) -> tuple[str, ...]:
    return ("i32",) if name == "hash" else DTYPES  # the hash reads any output as 32-bit words
COMPILED: dict[tuple[str, str], Any] = {}  # (kernel, dtype) -> a compiled kernel, filled in the zygote
_broken: list[str] = []  # a compiled kernel this Triton could not launch: the JIT from then on


def signature(name: str, dtype: str) -> dict[str, str]:
    """The most general signature of ``name`` on ``dtype`` tensors (no alignment, no value assumed)."""
    if name == "perturb":
        return {"x_ptr": f"*{dtype}", "n": "i32", "dig_ptr": "*fp64", "row_off": "i32", "seed": "i64", "m": "i32",
                "first": "i32", "WIDE": "constexpr", "BLOCK": "constexpr"}
    if name == "hash":
        return {"w_ptr": "*i32", "n": "i32", "out_ptr": "*i32", "BLOCK": "constexpr", "LEVELS": "constexpr"}
    if name == "sum":
        return {"x_ptr": f"*{dtype}", "out_ptr": "*fp64", "n": "i32", "k": "i64", "BLOCK": "constexpr"}
    return {"x_ptr": f"*{dtype}", "n": "i32", "k": "i64", "out_ptr": "*fp64", "BLOCK": "constexpr"}


def constexprs(name: str, dtype: str, block: int) -> dict[str, Any]:
    if name == "hash":
        return {"BLOCK": HASH_BLOCK, "LEVELS": HASH_LEVELS}
    return {"WIDE": dtype == "fp64", "BLOCK": block} if name == "perturb" else {"BLOCK": block}


def block_of(name: str, block: int) -> int:
    return {"digest": DIGEST_BLOCK, "hash": HASH_BLOCK, "sum": SUM_BLOCK}.get(name, block)


def precompile(arch: int, block: int, warp_size: int = 32) -> tuple[list[tuple[str, ...]], float]:
    """In the zygote (no CUDA): compile both kernels for every dtype into ``COMPILED``; the launcher
    signatures they need (for the zygote's stubs) and the seconds it took."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from stark_lsp.evaluate.sandbox.triton_cache import scratch_cache

    target = GPUTarget("cuda", arch, warp_size)
    t0, sigs = time.perf_counter(), []
    with scratch_cache("stark-chain-triton-", kept=True):  # the binaries live in memory (and the judge's cache)
        for name, fn in KERNELS.items():
            for dtype in dtypes_of(name):
                sig = signature(name, dtype)
                try:
                    COMPILED[(name, dtype)] = triton.compile(ASTSource(fn, sig, constexprs(name, dtype,
                                                                                             block_of(name, block))),
                                                             target=target)
                    sigs.append(tuple(sig.values()))
                except Exception as e:  # noqa: BLE001 - the JIT builds it in each process instead
                    sys.stderr.write(f"zygote: device chain kernel {name}/{dtype} not compiled "
                                     f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})\n")
    return sigs, time.perf_counter() - t0


def launch(name: str, dtype: str, grid: int, *args: Any, block: int) -> str:
    """Run kernel ``name`` over ``grid`` programs: the zygote's compiled binary where there is one, the
    JIT otherwise. ``args`` are the kernel's runtime arguments in order; which path ran."""
    block = block_of(name, block)
    ck = None if _broken else COMPILED.get((name, dtype))
    if ck is not None:
        try:
            ck[(grid, 1, 1)](*args, *constexprs(name, dtype, block).values())
            return "compiled"
        except (TypeError, AttributeError, ValueError) as e:  # raised before the launch: an API this Triton lacks
            _broken.append(f"{type(e).__name__}: {e}")
            sys.stderr.write(f"device chain: compiled kernel not launched ({_broken[0][:200]}); using the JIT\n")
    kw = constexprs(name, dtype, block)
    KERNELS[name][(grid,)](*args, **kw)
    return "jit"
