"""Trusted Triton kernels the zygote compiles once, before any candidate exists.

A fresh process's first Triton compile pays for everything Triton and LLVM
set up once per process (the MLIR dialects and pass pipelines, LLVM's
targets, ptxas's version, libdevice): about a second, against tens of
milliseconds for the next kernel. The zygote compiles these kernels for the
GPU's architecture without touching CUDA (``triton.compile`` with an explicit
target), so every candidate process it forks starts with that work done and
compiles only its own kernels. Nothing compiled here is handed to a
candidate: only the process's warm state is, and it holds no candidate data.

Kept small and plain on purpose: an elementwise kernel, a row reduction and
a tiled matrix product cover the lowering paths candidates use most.
"""

from __future__ import annotations

import sys
import time

import triton
import triton.language as tl

from stark_lsp.evaluate.sandbox.triton_cache import scratch_cache


@triton.jit
def _scale_add(x_ptr, y_ptr, out_ptr, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(a * x + y, 0.0), mask=mask)


@triton.jit
def _row_softmax(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def _matmul(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
            BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * sam + (k + rk)[None, :] * sak,
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * sbk + rn[None, :] * sbn,
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def _jobs() -> list[tuple[object, dict[str, str], dict[str, int]]]:
    i32 = "i32"
    return [
        (_scale_add, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "a": "fp32", "n": i32,
                      "BLOCK": "constexpr"}, {"BLOCK": 1024}),
        (_row_softmax, {"x_ptr": "*fp32", "out_ptr": "*fp32", "stride": i32, "n_cols": i32, "BLOCK": "constexpr"},
         {"BLOCK": 1024}),
        (_matmul, {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": i32, "N": i32, "K": i32,
                   "sam": i32, "sak": i32, "sbk": i32, "sbn": i32, "scm": i32, "scn": i32,
                   "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}, {"BM": 128, "BN": 128, "BK": 64}),
    ]


def warm_compile(arch: int, warp_size: int = 32) -> tuple[int, float]:
    """Compile the warm-up kernels for ``sm_<arch>`` without CUDA; (how many compiled, seconds)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    target = GPUTarget("cuda", arch, warp_size)
    t0, done = time.perf_counter(), 0
    with scratch_cache("stark-warm-triton-"):  # only the process's warm state is kept
        for fn, signature, constexprs in _jobs():
            try:
                triton.compile(ASTSource(fn, signature, constexprs), target=target)
                done += 1
            except Exception as e:  # noqa: BLE001 - a kernel this Triton cannot build only costs warmth
                sys.stderr.write(f"zygote: warm-up kernel {fn.__name__} not compiled ({type(e).__name__}: "
                                 f"{str(e).splitlines()[0] if str(e) else ''})\n")
    return done, time.perf_counter() - t0
