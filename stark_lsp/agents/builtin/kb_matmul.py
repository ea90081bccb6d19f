"""Triton matrix products for KernelBench ``matmul`` / ``mm`` / ``bmm`` / ``@`` models.

Three kernels, chosen at run time by the generated forward:

* a tiled matmul in the manner of Triton's matmul tutorial: tiles visited in
  groups of ``GROUP_SIZE_M`` rows (L2 reuse), operands read through their strides
  (so ``A.T`` costs no copy), a batch axis (3-D operands; a 2-D side is
  shared), and **split-K**: when the tiles alone would leave most of the GPU
  idle (large K, small M and N), or K is long, each program takes a slice of
  K and a second kernel sums the slices in order;
* a **GEMV** for matrix-vector products (N == 1, or M == 1): each program
  takes a block of rows and a slice of K and accumulates in a
  [rows, BLOCK_K] tile, then reduces it as a tree, so no output depends on a
  long chain of fp32 additions; the slices are then summed in order;
* the in-order sum of the split slices.

Why the split matters for correctness, not only speed: one fp32 accumulator
per output over K = 2^20 positive terms (KernelBench's matrix-vector task,
``torch.rand`` inputs) drifts by about 1.5e-4 of the result as small terms are
rounded away, over the 1e-4 tolerance; cuBLAS splits K. So every accumulation
chain here is at most ``MAX_CHAIN`` terms long.

Starting points (``STARTS``): the defaults (a 128x128x64 tile, 8 warps), then the tiles that came
nearest cuBLAS on an H100 (docs/benchmarks.md, session 21: 128x256x64 for large fp16/bf16 products,
256x128x64 with a transposed B, 64x128x32 for fp32), then the configurations Triton's matmul tutorial
autotunes over, with BLOCK_K 32 where its fp16 tiles would not fit fp32 in shared memory.
"""

from __future__ import annotations

from stark_lsp.agents.builtin.kb_forward import Op

MAX_CHAIN = 16384  # fp32 terms one accumulator may sum in sequence

# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M, num_stages, num_warps) from Triton's matmul tutorial
TUTORIAL_CONFIGS = [(128, 256, 32, 8, 3, 8), (64, 256, 32, 8, 4, 4), (128, 128, 32, 8, 4, 4), (128, 64, 32, 8, 4, 4),
                    (64, 128, 32, 8, 4, 4), (128, 32, 32, 8, 4, 4), (64, 32, 32, 8, 5, 2), (32, 64, 32, 8, 5, 2)]
# measured nearest cuBLAS on an H100 (benchmarks/matmul_table.py), beyond the defaults
HOPPER_CONFIGS = [(128, 256, 64, 8, 3, 8), (256, 128, 64, 8, 3, 8), (64, 128, 32, 8, 4, 4), (128, 64, 64, 8, 4, 4)]
STARTS = [{}] + [{"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "GROUP_SIZE_M": g, "num_stages": s, "num_warps": w}
                 for m, n, k, g, s, w in HOPPER_CONFIGS + [c for c in TUTORIAL_CONFIGS if c not in HOPPER_CONFIGS]]

KERNELS = '''
@triton.jit
def _stark_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, s_ab, s_am, s_ak, s_bb, s_bk, s_bn, s_cs, s_cb, s_cm, s_cn,
                         k_split, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                         GROUP_SIZE_M: tl.constexpr, EVEN_K: tl.constexpr, IEEE: tl.constexpr):
    # axis 0: output tiles, in groups of GROUP_SIZE_M tile rows; axis 1: the batch; axis 2: a slice of K.
    # Sizes, strides and k_split are specialized: Triton then knows which are multiples of 16, so the
    # loads are vectorized and the masks are uniform across a vector (without it, a tile is loaded one
    # element at a time: 0.16-0.38x cuBLAS in fp16 on an H100).
    pid = tl.program_id(0)
    batch = tl.program_id(1).to(tl.int64)
    split = tl.program_id(2)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_SIZE_M * num_n
    first_m = (pid // in_group) * GROUP_SIZE_M
    size_m = tl.minimum(num_m - first_m, GROUP_SIZE_M)
    pid_m = first_m + (pid % in_group) % size_m
    pid_n = (pid % in_group) // size_m
    rm = tl.max_contiguous(tl.multiple_of(pid_m * BLOCK_M + tl.arange(0, BLOCK_M), BLOCK_M), BLOCK_M)
    rn = tl.max_contiguous(tl.multiple_of(pid_n * BLOCK_N + tl.arange(0, BLOCK_N), BLOCK_N), BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    k_lo = split * k_split
    k_hi = tl.minimum(K, k_lo + k_split)
    # k_split is a multiple of BLOCK_K, so only K itself bounds a slice's last block
    a_ptrs = a_ptr + batch * s_ab + rm.to(tl.int64)[:, None] * s_am + (k_lo + rk).to(tl.int64)[None, :] * s_ak
    b_ptrs = b_ptr + batch * s_bb + (k_lo + rk).to(tl.int64)[:, None] * s_bk + rn.to(tl.int64)[None, :] * s_bn
    m_in = rm[:, None] < M
    n_in = rn[None, :] < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(k_lo, k_hi, BLOCK_K):
        if EVEN_K:
            av = tl.load(a_ptrs, mask=m_in, other=0.0)
            bv = tl.load(b_ptrs, mask=n_in, other=0.0)
        else:
            k_in = (k0 + rk) < K
            av = tl.load(a_ptrs, mask=m_in & k_in[None, :], other=0.0)
            bv = tl.load(b_ptrs, mask=k_in[:, None] & n_in, other=0.0)
        if IEEE:
            acc += tl.dot(av, bv, input_precision="ieee")
        else:
            acc += tl.dot(av, bv)
        a_ptrs += tl.cast(s_ak, tl.int64) * BLOCK_K  # 64-bit: a stride over 2^25 times BLOCK_K wraps in 32
        b_ptrs += tl.cast(s_bk, tl.int64) * BLOCK_K
    c = c_ptr + split.to(tl.int64) * s_cs + batch * s_cb + rm.to(tl.int64)[:, None] * s_cm + rn.to(tl.int64)[None, :] * s_cn
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=m_in & n_in)


@triton.jit(do_not_specialize=["R", "K", "k_split"])
def _stark_gemv_kernel(x_ptr, v_ptr, y_ptr, R, K, s_xb, s_xr, s_xk, s_vb, s_vk, s_ys, s_yb, k_split,
                       BLOCK_R: tl.constexpr, BLOCK_K: tl.constexpr, ALIGN: tl.constexpr):
    # y[b, r] (over a slice of K) = sum_k x[b, r, k] * v[b, k]: a [BLOCK_R, BLOCK_K] tile of partial sums,
    # reduced as a tree at the end; axis 1: the batch; axis 2: the slice of K
    K = K // ALIGN * ALIGN  # unchanged (ALIGN divides both): K's mask is constant over ALIGN elements,
    k_split = k_split // ALIGN * ALIGN  # so x's rows are read ALIGN elements at once
    rows = (tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)).to(tl.int64)
    batch = tl.program_id(1).to(tl.int64)
    split = tl.program_id(2).to(tl.int64)
    rmask = rows < R
    k_lo = split * k_split
    k_hi = tl.minimum(K, k_lo + k_split)
    x_ptr += batch * s_xb
    v_ptr += batch * s_vb
    acc = tl.zeros((BLOCK_R, BLOCK_K), dtype=tl.float32)
    for k0 in range(k_lo, k_hi, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        km = ks < k_hi
        xv = tl.load(x_ptr + rows[:, None] * s_xr + ks[None, :] * s_xk, mask=rmask[:, None] & km[None, :], other=0.0)
        vv = tl.load(v_ptr + ks * s_vk, mask=km, other=0.0)
        acc += xv.to(tl.float32) * vv.to(tl.float32)[None, :]
    y = tl.sum(acc, axis=1)
    tl.store(y_ptr + split * s_ys + batch * s_yb + rows, y.to(y_ptr.dtype.element_ty), mask=rmask)


@triton.jit(do_not_specialize=["n", "nsplit"])
def _stark_split_sum_kernel(ws_ptr, out_ptr, n, nsplit, BLOCK: tl.constexpr):
    # out[i] = sum over the K slices of ws[s, i], in order
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in range(0, nsplit):
        acc += tl.load(ws_ptr + s * n + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, acc.to(out_ptr.dtype.element_ty), mask=mask)


def _stark_sms(device):
    if device.type != "cuda":
        return 4
    return torch.cuda.get_device_properties(device).multi_processor_count


def _stark_align(*sizes):
    """The largest power of two up to 16 that divides every size."""
    a = 16
    for s in sizes:
        while a > 1 and s % a:
            a //= 2
    return a


def _stark_k_split(K, programs, sms, block_k):
    """K per program: a multiple of block_k, short enough for MAX_CHAIN terms and to give ~2 programs
    per SM when the output alone gives fewer."""
    split = max(triton.cdiv(K, MAX_CHAIN), 1)
    if programs < 2 * sms:
        split = max(split, min(triton.cdiv(2 * sms, programs), max(1, K // (4 * block_k))))
    k_split = triton.cdiv(triton.cdiv(K, split), block_k) * block_k
    return k_split, triton.cdiv(K, k_split)
'''.replace("MAX_CHAIN", str(MAX_CHAIN))


def matmul_code(op: Op, doc: str, signature: str) -> str:
    a, b = op.args
    return KERNELS + f'''

class ModelNew(Model):
{doc}
    def forward(self, {signature}):
        A = {a}
        B = {b}
        if A.ndim not in (2, 3) or B.ndim not in (2, 3) or (A.ndim == 3 and B.ndim == 3 and A.shape[0] != B.shape[0]):
            raise ValueError(f"this kernel multiplies 2-D matrices or batches of them, not {{tuple(A.shape)}} @ {{tuple(B.shape)}}")
        M, K = A.shape[-2:]
        N = B.shape[-1]
        batch = A.shape[0] if A.ndim == 3 else B.shape[0] if B.ndim == 3 else 1
        C = torch.empty((batch, M, N) if 3 in (A.ndim, B.ndim) else (M, N), device=A.device, dtype=A.dtype)
        if A.dtype == torch.float32 and M > 1 and N > 1 and B.stride(-2) == 1 and B.stride(-1) != 1:
            B = B.contiguous()  # fp32 tiles of B read along K ran at half speed (H100); the copy costs ~2 %
        s_ab = A.stride(0) if A.ndim == 3 else 0
        s_bb = B.stride(0) if B.ndim == 3 else 0
        s_am, s_ak = A.stride()[-2:]
        s_bk, s_bn = B.stride()[-2:]
        sms = _stark_sms(A.device)
        if N == 1 or M == 1:  # matrix-vector: rows of one side against the other's only column / row
            if N == 1:
                R, s_xb, s_xr, s_xk, s_vb, s_vk, X, V = M, s_ab, s_am, s_ak, s_bb, s_bk, A, B
            else:
                R, s_xb, s_xr, s_xk, s_vb, s_vk, X, V = N, s_bb, s_bn, s_bk, s_ab, s_ak, B, A
            GEMV_BLOCK_R = 16
            GEMV_BLOCK_K = 256
            k_split, nsplit = _stark_k_split(K, batch * triton.cdiv(R, GEMV_BLOCK_R), sms, GEMV_BLOCK_K)
            ws = C if nsplit == 1 else torch.empty((nsplit, batch, R), device=A.device, dtype=torch.float32)
            _stark_gemv_kernel[(triton.cdiv(R, GEMV_BLOCK_R), batch, nsplit)](
                X, V, ws, R, K, s_xb, s_xr, s_xk, s_vb, s_vk, batch * R, R, k_split,
                BLOCK_R=GEMV_BLOCK_R, BLOCK_K=GEMV_BLOCK_K, ALIGN=_stark_align(K, k_split), num_warps=4)
        else:
            BLOCK_M = 128
            BLOCK_N = 128
            BLOCK_K = 64
            GROUP_SIZE_M = 8
            tiles = triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)
            k_split, nsplit = _stark_k_split(K, batch * tiles, sms, BLOCK_K)
            ws = C if nsplit == 1 else torch.empty((nsplit, batch, M, N), device=A.device, dtype=torch.float32)
            _stark_matmul_kernel[(tiles, batch, nsplit)](
                A, B, ws, M, N, K, s_ab, s_am, s_ak, s_bb, s_bk, s_bn, batch * M * N, M * N, N, 1, k_split,
                BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_SIZE_M=GROUP_SIZE_M, EVEN_K=K % BLOCK_K == 0,
                IEEE=A.dtype == torch.float32,
                num_warps=8, num_stages=3)
        if nsplit > 1:
            n = C.numel()
            _stark_split_sum_kernel[(triton.cdiv(n, 1024),)](ws, C, n, nsplit, BLOCK=1024, num_warps=4)
        return C
'''
