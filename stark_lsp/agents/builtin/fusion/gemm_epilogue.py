"""A second candidate for ``linear layer -> elementwise operations -> output`` models: the linear
layer as a Triton matmul (tiles in groups as in Triton's matmul tutorial, IEEE fp32 for fp32
inputs) that adds the bias and applies the whole elementwise epilogue to its accumulator before
the one store, so the layer's output never goes to memory.

cuBLAS is hard to beat on the product itself (fp32 without TF32 in particular), so this is a
variant for the search to measure, next to the default (PyTorch's linear, then one fused kernel).
When the epilogue's operands broadcast the output to a larger shape, the forward takes the default
path instead (checked at run time).
"""

from __future__ import annotations

from stark_lsp.agents.builtin.kb_ast import NotRecognized

from .assemble import Assembler, render_program
from .graph import Graph, Leaf, Lib, Pointwise, Value
from .reader import read_model

ACC = "_STARK_ACC"


def find_gemm_epilogue(graph: Graph) -> tuple[Lib, Value] | None:
    """(the Linear call, the output) when the model is one Linear call followed by elementwise
    operations only, ending in its single output."""
    if len(graph.outputs) != 1 or graph.tuple_output or not isinstance(graph.outputs[0], Pointwise):
        return None
    live = graph.live()
    libs = [v for v in live if isinstance(v, Lib)]
    if len(libs) != 1:
        return None
    lib = libs[0]
    if lib.module_class != "Linear" or len(lib.args) != 1 or lib.code != lib.what + "({0})" \
            or not isinstance(lib.args[0], Leaf):
        return None
    if any(not isinstance(v, (Leaf, Pointwise)) for v in live if v is not lib):
        return None
    return lib, graph.outputs[0]


def _kernel(n: int, acc_index: int, tree_lines: list[str], result: str, boolean: bool,
            name: str = "_stark_gemm_epilogue", extra: str = "") -> str:
    """The kernel's text: ``n`` epilogue operands (``acc_index``: the accumulator's), the tree's lines and
    result; ``extra``: more parameters (``fusion.mlp``'s activation switch)."""
    loads = []
    for i in range(n):
        if i == acc_index:
            loads.append(f"x{i} = acc")
            continue
        loads += [f"if M{i} == 1:",
                  f"    x{i} = tl.load(a{i} + rm[:, None] * a{i}_s0 + rn[None, :] * a{i}_s1, mask=cmask, other=0)"
                  f".to(CDT)",
                  "else:", f"    x{i} = a{i}"]
    body = "".join(f"    {line}\n" for line in loads + tree_lines)
    ops = "".join(f"a{i}, a{i}_s0, a{i}_s1, " for i in range(n))
    modes = "".join(f"M{i}: tl.constexpr, " for i in range(n))
    store = "y != 0.0" if boolean else "y.to(y_ptr.dtype.element_ty)"
    return f'''
@triton.jit
def {name}(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K, s_xm, s_xk, s_wn, s_wk, {ops}{modes}{extra}
                         HAS_BIAS: tl.constexpr, CDT: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         BLOCK_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr, EVEN_K: tl.constexpr, IEEE: tl.constexpr):
    # y = epilogue(x @ w.T + b), one tile per program, tiles in groups of GROUP_SIZE_M tile rows.
    # Sizes and strides are specialized, so the loads are vectorized (see the matmul template).
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_SIZE_M * num_n
    first_m = (pid // in_group) * GROUP_SIZE_M
    size_m = tl.minimum(num_m - first_m, GROUP_SIZE_M)
    pid_m = first_m + (pid % in_group) % size_m
    pid_n = (pid % in_group) // size_m
    rm = tl.max_contiguous(tl.multiple_of(pid_m * BLOCK_M + tl.arange(0, BLOCK_M), BLOCK_M), BLOCK_M).to(tl.int64)
    rn = tl.max_contiguous(tl.multiple_of(pid_n * BLOCK_N + tl.arange(0, BLOCK_N), BLOCK_N), BLOCK_N).to(tl.int64)
    rk = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + rm[:, None] * s_xm + rk[None, :] * s_xk
    w_ptrs = w_ptr + rn[None, :] * s_wn + rk[:, None] * s_wk
    m_in = rm[:, None] < M
    n_in = rn[None, :] < N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        if EVEN_K:
            av = tl.load(x_ptrs, mask=m_in, other=0.0)
            bv = tl.load(w_ptrs, mask=n_in, other=0.0)
        else:
            k_in = (k0 + rk) < K
            av = tl.load(x_ptrs, mask=m_in & k_in[None, :], other=0.0)
            bv = tl.load(w_ptrs, mask=k_in[:, None] & n_in, other=0.0)
        if IEEE:
            acc += tl.dot(av, bv, input_precision="ieee")
        else:
            acc += tl.dot(av, bv)
        x_ptrs += tl.cast(s_xk, tl.int64) * BLOCK_K  # 64-bit: a stride over 2^25 times BLOCK_K wraps in 32
        w_ptrs += tl.cast(s_wk, tl.int64) * BLOCK_K
    cmask = (rm[:, None] < M) & (rn[None, :] < N)
    if HAS_BIAS:
        acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    acc = acc.to(CDT)
{body}    y = ({result}) + tl.zeros((BLOCK_M, BLOCK_N), CDT)
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], {store}, mask=cmask)
'''


def render_gemm_epilogue(source: str, defaults: dict[str, int] | None = None) -> str:
    graph, values = read_model(source)
    found = find_gemm_epilogue(graph)
    if found is None:
        raise NotRecognized("not a linear layer followed by elementwise operations only")
    lib, root = found
    # the default program: the fallback when the epilogue broadcasts to a larger shape
    default = Assembler(graph, list(values), defaults).build()
    asm = Assembler(graph, list(values), defaults)
    asm.names[id(lib)] = ACC
    s_root = asm.shape(root)
    tree = asm.tree(root, s_root)
    acc_index = next(i for i, o in enumerate(tree.operands) if o.value is lib)
    lin, x = lib.what, asm.python(lib.args[0])
    ops = [("0.0" if i == acc_index else o.python) for i, o in enumerate(tree.operands)]
    lines = [f"_stark_device = _stark_find_device(self, {', '.join(graph.params)})",
             f"X = {x}.reshape(-1, {x}.shape[-1])",
             f"{asm.shape(lib)} = tuple({x}.shape[:-1]) + ({lin}.out_features,)"]
    for v in sorted((v for v in graph.live() if v is not lib), key=asm.n):
        asm.lines = []
        asm.shape_line(v)
        lines += asm.lines
    block = asm.defaults
    lines += [f"if {s_root} == {asm.shape(lib)}:",
              f"    ops = [{', '.join(ops)}]",
              f"    M, N, K = X.shape[0], {lin}.out_features, X.shape[1]",
              f"    y = torch.empty({s_root}, device=_stark_device, dtype="
              + ("torch.bool" if tree.boolean else "_stark_dtype(X, *ops)") + ")",
              "    args, modes = _stark_rows_cols(ops, M, N)",
              f"    BLOCK_M = {block.get('BLOCK_M', 64)}",
              f"    BLOCK_N = {block.get('BLOCK_N', 64)}",
              f"    BLOCK_K = {block.get('GEMM_BLOCK_K', 32)}",
              "    GROUP_SIZE_M = 8",
              f"    W, b = {lin}.weight, {lin}.bias",
              "    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)",
              "    _stark_gemm_epilogue[grid](X, W, W if b is None else b, y, M, N, K, X.stride(0), X.stride(1),",
              "                               W.stride(0), W.stride(1), *args, **modes, HAS_BIAS=b is not None,",
              "                               CDT=_stark_compute(y.dtype), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,",
              "                               GROUP_SIZE_M=GROUP_SIZE_M, EVEN_K=K % BLOCK_K == 0, IEEE=X.dtype == torch.float32,",
              "                               num_warps=4,",
              "                               num_stages=3)",
              "    return y"]
    lines += default.forward
    default.forward = lines
    text = render_program(default, graph.params, "fused: the linear layer as a Triton matmul with its elementwise "
                          "epilogue (written by the built-in team)")
    kernel = _kernel(len(tree.operands), acc_index, tree.lines, tree.result, tree.boolean)
    return text.replace("\n\nclass ModelNew(Model):", kernel + "\n\nclass ModelNew(Model):", 1)
