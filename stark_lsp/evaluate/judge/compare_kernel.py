"""The element-by-element comparison of two outputs on a GPU, in one Triton pass (``compare.py``).

``compare._compare_floats`` says what a comparison is: NaN, +inf and -inf
where the reference has them (both ways), and elsewhere every element within
``atol + rtol * |reference|``, in float64. In torch that is about twenty-five
passes over float64 copies of a chunk; the judge compares every trial and a
few of every timing's calls element by element, and on the H200 those passes
made the checks of a timing of a large output cost more than the timing.
Here each program walks its share of the elements once (grid-stride) and
writes one row: the six NaN/inf counts (extra in the candidate, missing),
the largest absolute and relative error, and the count of elements outside
the tolerance; the rows are added up (the largest errors: the maxima) on the
device and read with one synchronization. The tolerances are read from a
float64 tensor and the kernel is built without fused multiply-adds, so the
bound is the torch path's to the last bit. Where the output holds NaN the
worst errors may differ from torch's (0 here, NaN there): only the counts
decide then, and a NaN against a number is always counted.

Runs in the judge only, through Triton's JIT; where Triton cannot (the CPU,
a Triton that cannot build here) the caller takes the torch path.
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl

BLOCK = 1024
PROGRAMS = 528  # the grid at most: 4 per SM of an H200, a few waves elsewhere
COLUMNS = 9  # extra NaN, missing NaN, extra +inf, missing +inf, extra -inf, missing -inf, max abs, max rel, outside


@triton.jit
def compare_kernel(r_ptr, c_ptr, n, tol_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    atol = tl.load(tol_ptr)
    rtol = tl.load(tol_ptr + 1)
    nan_x = tl.zeros([BLOCK], dtype=tl.float64)
    nan_m = tl.zeros([BLOCK], dtype=tl.float64)
    pinf_x = tl.zeros([BLOCK], dtype=tl.float64)
    pinf_m = tl.zeros([BLOCK], dtype=tl.float64)
    ninf_x = tl.zeros([BLOCK], dtype=tl.float64)
    ninf_m = tl.zeros([BLOCK], dtype=tl.float64)
    bad = tl.zeros([BLOCK], dtype=tl.float64)
    worst_abs = tl.zeros([BLOCK], dtype=tl.float64)
    worst_rel = tl.zeros([BLOCK], dtype=tl.float64)
    for b in range(pid, tl.cdiv(n, BLOCK), tl.num_programs(0)):
        offs = b * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        r = tl.load(r_ptr + offs, mask=mask, other=0.0).to(tl.float64)
        c = tl.load(c_ptr + offs, mask=mask, other=0.0).to(tl.float64)
        rn, cn = r != r, c != c
        rp, cp = r == float("inf"), c == float("inf")
        rm, cm = r == float("-inf"), c == float("-inf")
        nan_x += (cn & ~rn).to(tl.float64)
        nan_m += (rn & ~cn).to(tl.float64)
        pinf_x += (cp & ~rp).to(tl.float64)
        pinf_m += (rp & ~cp).to(tl.float64)
        ninf_x += (cm & ~rm).to(tl.float64)
        ninf_m += (rm & ~cm).to(tl.float64)
        finite = mask & ~rn & ~rp & ~rm
        ar = tl.abs(r)
        diff = tl.where(finite, tl.abs(r - c), 0.0)
        rel = diff / tl.maximum(ar, 1e-12)
        worst_abs = tl.maximum(worst_abs, diff)
        worst_rel = tl.maximum(worst_rel, tl.where(finite, rel, 0.0))
        bad += ((diff > atol + rtol * ar) & finite).to(tl.float64)
    row = out_ptr + pid * 9  # COLUMNS figures a program
    tl.store(row, tl.sum(nan_x, axis=0))
    tl.store(row + 1, tl.sum(nan_m, axis=0))
    tl.store(row + 2, tl.sum(pinf_x, axis=0))
    tl.store(row + 3, tl.sum(pinf_m, axis=0))
    tl.store(row + 4, tl.sum(ninf_x, axis=0))
    tl.store(row + 5, tl.sum(ninf_m, axis=0))
    tl.store(row + 6, tl.max(worst_abs, axis=0))
    tl.store(row + 7, tl.max(worst_rel, axis=0))
    tl.store(row + 8, tl.sum(bad, axis=0))


def compare_chunk(r: Any, c: Any, tol: Any) -> Any:
    """Two flat, contiguous chunks of one float dtype on the device, and ``tol`` ([atol, rtol], float64,
    on the device): a float64 tensor of ``COLUMNS`` figures (the counts added up, the errors' maxima),
    not yet read (no synchronization)."""
    import torch

    n = r.numel()
    grid = max(1, min(triton.cdiv(n, BLOCK), PROGRAMS))
    rows = torch.empty((grid, COLUMNS), dtype=torch.float64, device=r.device)
    compare_kernel[(grid,)](r, c, n, tol, rows, BLOCK=BLOCK, enable_fp_fusion=False)  # atol + rtol*|r|: no FMA
    return torch.cat([rows[:, :6].sum(0), rows[:, 6:8].amax(0), rows[:, 8:].sum(0)])
