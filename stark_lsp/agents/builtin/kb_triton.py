"""Triton code for a recognized KernelBench operation (see ``kb_forward``).

``render(op)`` returns the text that replaces ``class ModelNew(Model): pass``:
``import``s, one or two ``@triton.jit`` kernels and a ``ModelNew`` that
subclasses ``Model`` (so ``__init__``'s parameters, e.g. a LayerNorm's weight,
are the reference's own) and overrides ``forward`` to launch them. Block sizes
are plain assignments and ``num_warps`` / ``num_stages`` launch keywords, the
forms the built-in Plan agent tunes afterwards. Arithmetic is in fp32 and the
result is stored in the input's dtype; fp32 matrix products use IEEE fp32
(torch's default: no TF32).
"""

from __future__ import annotations

from stark_lsp.agents.builtin.kb_attention import attention_code
from stark_lsp.agents.builtin.kb_cross_entropy import cross_entropy_code
from stark_lsp.agents.builtin.kb_forward import Op
from stark_lsp.agents.builtin.kb_matmul import matmul_code

HEADER = "import math\n\nimport torch\nimport triton\nimport triton.language as tl\n"

def render(op: Op) -> str:
    if op.kind == "matmul":
        return HEADER + "\n\n" + matmul_code(op, _doc(op), _signature(op)).strip("\n") + "\n"
    if op.kind in ("attention", "cross_entropy"):
        code = attention_code if op.kind == "attention" else cross_entropy_code
        return HEADER + "\n\n" + code(dict(op.options), op.args, _doc(op), _signature(op)).strip("\n") + "\n"
    body = {"reduce": _reduce, "softmax": _softmax, "layernorm": _layernorm}[op.kind](op)
    return HEADER + "\n\n" + body.strip("\n") + "\n"


def _signature(op: Op) -> str:
    """ModelNew.forward takes what Model.forward takes."""
    return ", ".join(op.params or op.args)


def _doc(op: Op) -> str:
    return f'    """{op.describe()} in Triton (written by the built-in team from Model.forward)."""\n'


_REDUCE = {  # initial value, combine two tiles, reduce a tile, scale by 1/R
    "sum": ("0.0", "acc + v", "tl.sum", False),
    "mean": ("0.0", "acc + v", "tl.sum", True),
    "amax": ('float("-inf")', "tl.maximum(acc, v)", "tl.max", False),
    "amin": ('float("inf")', "tl.minimum(acc, v)", "tl.min", False),
}


def _reduce(op: Op) -> str:
    init, combine, reduce, scale = _REDUCE[op.name]
    finish = "out = out / R" if scale else "out = out"
    x = op.args[0]
    return f'''
@triton.jit
def _stark_{op.name}_strided_kernel(x_ptr, y_ptr, R, inner, BLOCK_R: tl.constexpr, BLOCK_INNER: tl.constexpr):
    # x viewed as [outer, R, inner]: one program per (outer index, block of inner columns)
    o = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_INNER + tl.arange(0, BLOCK_INNER)
    cmask = cols < inner
    base = x_ptr + o * R * inner
    acc = tl.full((BLOCK_R, BLOCK_INNER), {init}, tl.float32)
    for r0 in range(0, R, BLOCK_R):
        rows = r0 + tl.arange(0, BLOCK_R)
        m = (rows[:, None] < R) & cmask[None, :]
        v = tl.load(base + rows[:, None].to(tl.int64) * inner + cols[None, :], mask=m, other={init}).to(tl.float32)
        acc = {combine}
    out = {reduce}(acc, axis=0)
    {finish}
    tl.store(y_ptr + o * inner + cols, out.to(y_ptr.dtype.element_ty), mask=cmask)


@triton.jit
def _stark_{op.name}_rows_kernel(x_ptr, y_ptr, R, ROW_BLOCK_SIZE: tl.constexpr):
    # inner == 1: one program per contiguous row of R elements
    row = tl.program_id(0).to(tl.int64)
    acc = tl.full((ROW_BLOCK_SIZE,), {init}, tl.float32)
    for r0 in range(0, R, ROW_BLOCK_SIZE):
        cols = r0 + tl.arange(0, ROW_BLOCK_SIZE)
        v = tl.load(x_ptr + row * R + cols, mask=cols < R, other={init}).to(tl.float32)
        acc = {combine}
    out = {reduce}(acc, axis=0)
    {finish}
    tl.store(y_ptr + row, out.to(y_ptr.dtype.element_ty))


class ModelNew(Model):
{_doc(op)}
    def forward(self, {_signature(op)}):
        x = {x}.contiguous()
        dim = {op.dim}
        if not isinstance(dim, int):
            raise TypeError(f"this kernel reduces over one dimension, not {{dim!r}}")
        d = dim % x.ndim
        outer, R, inner = math.prod(x.shape[:d]), x.shape[d], math.prod(x.shape[d + 1:])
        shape = list(x.shape)
        if {op.keepdim}:
            shape[d] = 1
        else:
            del shape[d]
        y = torch.empty(shape, device=x.device, dtype=x.dtype)
        if inner == 1:
            ROW_BLOCK_SIZE = 1024
            _stark_{op.name}_rows_kernel[(outer,)](x, y, R, ROW_BLOCK_SIZE=ROW_BLOCK_SIZE, num_warps=4)
        else:
            BLOCK_R = 8
            BLOCK_INNER = 128
            grid = (outer, triton.cdiv(inner, BLOCK_INNER))
            _stark_{op.name}_strided_kernel[grid](x, y, R, inner, BLOCK_R=BLOCK_R, BLOCK_INNER=BLOCK_INNER, num_warps=4)
        return y
'''


def _softmax(op: Op) -> str:
    x = op.args[0]
    log = op.name == "log_softmax"
    return f'''
@triton.jit
def _stark_softmax_stats(xr, start, end, span, BLOCK_SIZE: tl.constexpr):
    # max and sum of exp(x - max) of xr[start:end], online: one pass, a running max per lane
    m = tl.full((BLOCK_SIZE,), float("-inf"), tl.float32)
    s = tl.zeros((BLOCK_SIZE,), tl.float32)
    for c0 in range(0, span, BLOCK_SIZE):
        cols = start + c0 + tl.arange(0, BLOCK_SIZE)
        v = tl.load(xr + cols, mask=cols < end, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, v)
        empty = m_new == float("-inf")
        s = tl.where(empty, 0.0, s * tl.exp(m - m_new) + tl.exp(v - m_new))
        m = m_new
    mx = tl.max(m, axis=0)
    return mx, tl.sum(tl.where(m == float("-inf"), 0.0, s * tl.exp(m - mx)), axis=0)


@triton.jit
def _stark_softmax_write(xr, yr, start, end, span, mx, total, BLOCK_SIZE: tl.constexpr, LOG: tl.constexpr):
    # xr[start:end] normalized by the row's max and sum, into yr
    for c0 in range(0, span, BLOCK_SIZE):
        cols = start + c0 + tl.arange(0, BLOCK_SIZE)
        v = tl.load(xr + cols, mask=cols < end, other=float("-inf")).to(tl.float32)
        if LOG:
            out = (v - mx) - tl.log(total)
        else:
            out = tl.exp(v - mx) / total
        tl.store(yr + cols, out.to(yr.dtype.element_ty), mask=cols < end)


@triton.jit
def _stark_softmax_kernel(x_ptr, y_ptr, N, BLOCK_SIZE: tl.constexpr, LOG: tl.constexpr):
    # one program per row: its max and sum, then the normalized write
    row = tl.program_id(0).to(tl.int64)
    mx, total = _stark_softmax_stats(x_ptr + row * N, 0, N, N, BLOCK_SIZE)
    _stark_softmax_write(x_ptr + row * N, y_ptr + row * N, 0, N, N, mx, total, BLOCK_SIZE, LOG)


@triton.jit
def _stark_softmax_stats_kernel(x_ptr, stats_ptr, N, chunks, CHUNK_SIZE: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    # few long rows, split: one program per (row, chunk of the row): the chunk's max and sum
    row = tl.program_id(0).to(tl.int64)
    chunk = tl.program_id(1)
    start = chunk.to(tl.int64) * CHUNK_SIZE
    mx, total = _stark_softmax_stats(x_ptr + row * N, start, tl.minimum(start + CHUNK_SIZE, N), CHUNK_SIZE,
                                     BLOCK_SIZE)
    p = stats_ptr + (row * chunks + chunk) * 2
    tl.store(p, mx)
    tl.store(p + 1, total)


@triton.jit
def _stark_softmax_write_kernel(x_ptr, y_ptr, stats_ptr, N, chunks, CHUNK_SIZE: tl.constexpr,
                                BLOCK_SIZE: tl.constexpr, PARTS: tl.constexpr, LOG: tl.constexpr):
    # one program per (row, chunk): the row's max and sum from its chunks', then this chunk normalized
    row = tl.program_id(0).to(tl.int64)
    chunk = tl.program_id(1)
    idx = tl.arange(0, PARTS)
    sr = stats_ptr + row * chunks * 2
    cm = tl.load(sr + idx * 2, mask=idx < chunks, other=float("-inf"))
    cs = tl.load(sr + idx * 2 + 1, mask=idx < chunks, other=0.0)
    mx = tl.max(cm, axis=0)
    total = tl.sum(tl.where(cm == float("-inf"), 0.0, cs * tl.exp(cm - mx)), axis=0)
    start = chunk.to(tl.int64) * CHUNK_SIZE
    _stark_softmax_write(x_ptr + row * N, y_ptr + row * N, start, tl.minimum(start + CHUNK_SIZE, N), CHUNK_SIZE,
                         mx, total, BLOCK_SIZE, LOG)


class ModelNew(Model):
{_doc(op)}
    def forward(self, {_signature(op)}):
        dim = {op.dim}
        d = dim % {x}.ndim
        last = d == {x}.ndim - 1
        x = ({x} if last else {x}.transpose(d, -1)).contiguous()
        N = x.shape[-1]
        rows = x.numel() // max(N, 1)
        y = torch.empty_like(x)
        BLOCK_SIZE = 1024
        # few long rows (fewer than the GPU has SMs): each row split into chunks, one program each, so that every
        # SM has work; its max and sum combined from the chunks' (online softmax), then each chunk written
        sms = torch.cuda.get_device_properties(x.device).multi_processor_count if x.is_cuda else 4
        chunks = min(triton.cdiv(N, BLOCK_SIZE), triton.cdiv(4 * sms, max(rows, 1)), 1024)
        if chunks <= 1:
            _stark_softmax_kernel[(rows,)](x, y, N, BLOCK_SIZE=BLOCK_SIZE, LOG={log}, num_warps=4)
        else:
            CHUNK_SIZE = triton.cdiv(triton.cdiv(N, chunks), BLOCK_SIZE) * BLOCK_SIZE
            chunks = triton.cdiv(N, CHUNK_SIZE)
            stats = torch.empty((rows, chunks, 2), device=x.device, dtype=torch.float32)
            _stark_softmax_stats_kernel[(rows, chunks)](x, stats, N, chunks, CHUNK_SIZE=CHUNK_SIZE,
                                                        BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
            _stark_softmax_write_kernel[(rows, chunks)](x, y, stats, N, chunks, CHUNK_SIZE=CHUNK_SIZE,
                                                        BLOCK_SIZE=BLOCK_SIZE, PARTS=triton.next_power_of_2(chunks),
                                                        LOG={log}, num_warps=4)
        return y if last else y.transpose(d, -1)
'''


def _layernorm(op: Op) -> str:
    x = op.args[0]
    ln = f"self.{op.module}"
    return f'''
@triton.jit
def _stark_ln_stats_kernel(x_ptr, part_ptr, C, nchunks, CHUNK_SIZE: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    # one program per (row, chunk of the row): count, mean and sum of squared deviations
    row = tl.program_id(0).to(tl.int64)
    chunk = tl.program_id(1)
    start = chunk.to(tl.int64) * CHUNK_SIZE
    end = tl.minimum(start + CHUNK_SIZE, C)
    xr = x_ptr + row * C
    acc = tl.zeros((BLOCK_SIZE,), tl.float32)
    for c0 in range(0, CHUNK_SIZE, BLOCK_SIZE):
        cols = start + c0 + tl.arange(0, BLOCK_SIZE)
        acc += tl.load(xr + cols, mask=cols < end, other=0.0).to(tl.float32)
    count = (end - start).to(tl.float32)
    mean = tl.sum(acc, axis=0) / count
    acc2 = tl.zeros((BLOCK_SIZE,), tl.float32)
    for c0 in range(0, CHUNK_SIZE, BLOCK_SIZE):
        cols = start + c0 + tl.arange(0, BLOCK_SIZE)
        v = tl.load(xr + cols, mask=cols < end, other=0.0).to(tl.float32)
        dv = tl.where(cols < end, v - mean, 0.0)
        acc2 += dv * dv
    p = part_ptr + (row * nchunks + chunk) * 3
    tl.store(p, count)
    tl.store(p + 1, mean)
    tl.store(p + 2, tl.sum(acc2, axis=0))


@triton.jit
def _stark_ln_combine_kernel(part_ptr, row_ptr, C, nchunks, eps, PARTS: tl.constexpr):
    # one program per row: its mean and 1/std from the chunk statistics (Chan et al.)
    row = tl.program_id(0).to(tl.int64)
    pr = part_ptr + row * nchunks * 3
    wsum = tl.zeros((PARTS,), tl.float32)
    for p0 in range(0, nchunks, PARTS):
        idx = p0 + tl.arange(0, PARTS)
        pm = idx < nchunks
        wsum += tl.load(pr + idx * 3, mask=pm, other=0.0) * tl.load(pr + idx * 3 + 1, mask=pm, other=0.0)
    mean = tl.sum(wsum, axis=0) / C
    m2 = tl.zeros((PARTS,), tl.float32)
    for p0 in range(0, nchunks, PARTS):
        idx = p0 + tl.arange(0, PARTS)
        pm = idx < nchunks
        n_i = tl.load(pr + idx * 3, mask=pm, other=0.0)
        dm = tl.load(pr + idx * 3 + 1, mask=pm, other=0.0) - mean
        m2 += tl.load(pr + idx * 3 + 2, mask=pm, other=0.0) + n_i * dm * dm
    tl.store(row_ptr + row * 2, mean)
    tl.store(row_ptr + row * 2 + 1, 1.0 / tl.sqrt(tl.sum(m2, axis=0) / C + eps))


@triton.jit
def _stark_ln_apply_kernel(x_ptr, y_ptr, w_ptr, b_ptr, row_ptr, C, CHUNK_SIZE: tl.constexpr,
                           BLOCK_SIZE: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr):
    # one program per (row, chunk): normalize the chunk with the row's mean and 1/std
    row = tl.program_id(0).to(tl.int64)
    chunk = tl.program_id(1)
    mean = tl.load(row_ptr + row * 2)
    rstd = tl.load(row_ptr + row * 2 + 1)
    start = chunk.to(tl.int64) * CHUNK_SIZE
    end = tl.minimum(start + CHUNK_SIZE, C)
    for c0 in range(0, CHUNK_SIZE, BLOCK_SIZE):
        cols = start + c0 + tl.arange(0, BLOCK_SIZE)
        mask = cols < end
        y = (tl.load(x_ptr + row * C + cols, mask=mask, other=0.0).to(tl.float32) - mean) * rstd
        if HAS_W:
            y = y * tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        if HAS_B:
            y = y + tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * C + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(Model):
{_doc(op)}
    def forward(self, {_signature(op)}):
        ln = {ln}
        x = {x}.contiguous()
        C = math.prod(ln.normalized_shape)
        rows = x.numel() // C
        y = torch.empty_like(x)
        CHUNK_SIZE = 4096
        BLOCK_SIZE = 1024
        nchunks = triton.cdiv(C, CHUNK_SIZE)
        parts = torch.empty((rows, nchunks, 3), device=x.device, dtype=torch.float32)
        row_stats = torch.empty((rows, 2), device=x.device, dtype=torch.float32)
        w = ln.weight if ln.weight is not None else x
        b = ln.bias if ln.bias is not None else x
        grid = (rows, nchunks)
        _stark_ln_stats_kernel[grid](x, parts, C, nchunks, CHUNK_SIZE=CHUNK_SIZE, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
        _stark_ln_combine_kernel[(rows,)](parts, row_stats, C, nchunks, ln.eps, PARTS=256)
        _stark_ln_apply_kernel[grid](x, y, w.contiguous(), b.contiguous(), row_stats, C, CHUNK_SIZE=CHUNK_SIZE,
                                     BLOCK_SIZE=BLOCK_SIZE, HAS_W=ln.weight is not None,
                                     HAS_B=ln.bias is not None, num_warps=4)
        return y
'''
