"""Flash attention in Triton for KernelBench models whose forward is attention.

``read_attention(expr, params, attrs)`` recognizes the returned expression (locals written in,
``kb_ast.returned_expression``) as one of:

* ``F.scaled_dot_product_attention(q, k, v)`` with ``is_causal=`` (a literal or an attribute set
  in ``__init__``) and ``scale=`` (None: 1/sqrt(head size)); ``attn_mask``, a dropout other than 0
  and ``enable_gqa`` are refused with the reason (``Unsupported``);
* the explicit form ``softmax(q @ k.transpose(-2, -1) * scale, dim=-1) @ v`` (``matmul`` / ``bmm``
  too, ``/ c`` or ``* c`` for the scale, any number of them, no scale meaning 1), with or without a
  causal mask ``.masked_fill(<mask>, float("-inf"))`` where the mask is
  ``torch.triu(torch.ones(...), diagonal=1)`` (``.bool()``), ``torch.tril(torch.ones(...)) == 0``,
  ``~torch.tril(...)`` or ``.logical_not()``: the top-left aligned mask ``is_causal`` means.

``attention_code`` writes the kernel: one program per (BLOCK_M query rows, batch*head, a tile of
the value's head dimension), K/V tiles of BLOCK_N keys streamed with an online softmax (exp2, the
scale folded in), fp32 accumulation, the output stored in the inputs' dtype. A causal program stops
at its last row's key. Head sizes are padded to a power of two (at least 16, ``tl.dot``'s least)
and masked; heads wider than BLOCK_D are taken in BLOCK_D tiles (q @ k^T summed over tiles of the
head; each program writes BLOCK_D columns of the output, recomputing the scores: correct at any
size, but slower than a narrow head). fp32 products are IEEE fp32 (torch's default: no TF32).
"""

from __future__ import annotations

import ast

from stark_lsp.agents.builtin.kb_ast import Unsupported, dotted, library_function, self_attribute

SDPA = "scaled_dot_product_attention"
# starting points: the defaults (BLOCK_M 64, BLOCK_N 64, 4 warps, 2 stages), then other tiles; stages kept so that
# an fp32 head of 128 fits shared memory (q once, k and v tiles per stage: 64 KB + 2 x 64 KB at 128 x 64)
STARTS = [{}, {"BLOCK_M": 128, "BLOCK_N": 64, "num_warps": 8, "num_stages": 2},
          {"BLOCK_M": 128, "BLOCK_N": 32, "num_warps": 4, "num_stages": 2},
          {"BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 4, "num_stages": 3},
          {"BLOCK_M": 32, "BLOCK_N": 32, "num_warps": 2, "num_stages": 2}]


def read_attention(e: ast.expr, params: list[str], attrs: dict[str, ast.expr]
                   ) -> tuple[tuple[str, ...], dict[str, str]] | None:
    """((q, k, v), options) when ``e`` is attention; None when it is not; Unsupported when it is,
    in a variant this template does not write. Options are Python expressions for ModelNew.forward:
    ``causal``, ``scale`` ("None": the default), ``ndim`` ("0": any; else the rank k's transpose needs)."""
    if isinstance(e, ast.Call) and library_function(e.func) == SDPA:
        return _sdpa(e, params, attrs)
    return _explicit(e, params, attrs)


def _param(node: ast.expr, params: list[str], what: str) -> str:
    if isinstance(node, ast.Name) and node.id in params:
        return node.id
    raise Unsupported(f"{what} of something other than forward's own inputs ({ast.unparse(node)})")


def _keyword(call: ast.Call, name: str, position: int) -> ast.expr | None:
    for k in call.keywords:
        if k.arg == name:
            return k.value
    return call.args[position] if len(call.args) > position else None


def _is_const(node: ast.expr | None, *values: object) -> bool:
    if node is None:
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return any(v == -node.operand.value for v in values if not isinstance(v, (bool, type(None))))
    return isinstance(node, ast.Constant) and any(
        node.value is v if isinstance(v, (bool, type(None))) else node.value == v and not isinstance(node.value, bool)
        for v in values)


def _sdpa(call: ast.Call, params: list[str], attrs: dict[str, ast.expr]) -> tuple[tuple[str, ...], dict[str, str]]:
    known = {"query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa"}
    other = [k.arg for k in call.keywords if k.arg not in known]
    if other or len(call.args) > 6:
        raise Unsupported(f"{SDPA} with arguments this template does not know ({', '.join(map(str, other)) or 'a 7th'})")
    q, k, v = (_keyword(call, n, i) for i, n in enumerate(("query", "key", "value")))
    if q is None or k is None or v is None:
        raise Unsupported(f"{SDPA} without query, key and value")
    args = tuple(_param(x, params, SDPA) for x in (q, k, v))
    if not _is_const(_keyword(call, "attn_mask", 3), None):
        raise Unsupported(f"{SDPA} with an attn_mask: the flash-attention template writes only is_causal")
    if not _is_const(_keyword(call, "dropout_p", 4), 0, 0.0):
        raise Unsupported(f"{SDPA} with a dropout_p other than a literal 0 (dropout is random)")
    if not _is_const(_keyword(call, "enable_gqa", 99), False):
        raise Unsupported(f"{SDPA} with enable_gqa: the template needs as many key/value heads as query heads")
    causal_node = _keyword(call, "is_causal", 5)
    if causal_node is None or _is_const(causal_node, False):
        causal = "False"
    elif _is_const(causal_node, True):
        causal = "True"
    else:
        causal = self_attribute(causal_node, attrs) or ""
        if not causal:
            raise Unsupported(f"{SDPA}: is_causal is not a literal or an attribute set in __init__")
    scale_node = _keyword(call, "scale", 99)
    scale = "None" if _is_const(scale_node, None) else _scalar(scale_node, params, attrs)
    return args, {"causal": causal, "scale": scale, "ndim": "0"}


def _scalar(node: ast.expr, params: list[str], attrs: dict[str, ast.expr]) -> str:
    """A Python number expression ModelNew.forward can evaluate (literals, ``math.``, ``self.``
    attributes of __init__, the inputs' ``.shape`` / ``.size()`` / ``.ndim``); else Unsupported."""
    parents = {id(c): p for p in ast.walk(node) for c in ast.iter_child_nodes(p)}
    for n in ast.walk(node):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult):
            raise Unsupported(f"the attention's scale {ast.unparse(node)} is not a number")
        if isinstance(n, ast.Name):
            up = parents.get(id(n))
            if n.id in ("math", "float", "int"):
                continue
            if n.id == "self" and isinstance(up, ast.Attribute) and up.attr in attrs:
                continue
            if n.id in params and isinstance(up, ast.Attribute) and up.attr in ("shape", "size", "ndim"):
                continue
            raise Unsupported(f"the attention's scale {ast.unparse(node)} is not a number ModelNew can compute")
        if isinstance(n, ast.Call) and not (dotted(n.func).startswith("math.") or dotted(n.func) in ("float", "int")
                                            or (isinstance(n.func, ast.Attribute) and n.func.attr == "size")):
            raise Unsupported(f"the attention's scale {ast.unparse(node)} calls {ast.unparse(n.func)}")
    return ast.unparse(node)


def _matmul_parts(e: ast.expr) -> tuple[ast.expr, ast.expr] | None:
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.MatMult):
        return e.left, e.right
    if isinstance(e, ast.Call) and library_function(e.func) in ("matmul", "bmm") and len(e.args) == 2 \
            and not e.keywords:
        return e.args[0], e.args[1]
    return None


def _softmax_last(e: ast.expr) -> ast.expr | None:
    """S for ``softmax(S, dim=-1)`` (torch., F., the method); None otherwise."""
    if not isinstance(e, ast.Call):
        return None
    if isinstance(e.func, ast.Attribute) and e.func.attr == "softmax" and not library_function(e.func):
        x, rest = e.func.value, list(e.args)
    elif library_function(e.func) == "softmax" and e.args:
        x, rest = e.args[0], list(e.args[1:])
    else:
        return None
    dim = rest[0] if rest else next((k.value for k in e.keywords if k.arg == "dim"), None)
    if set(k.arg for k in e.keywords) - {"dim"} or len(rest) > 1 or not _is_const(dim, -1) or dim is None:
        raise Unsupported(f"attention's softmax is not over the last dim alone ({ast.unparse(e)})")
    return x


def _transposed_key(e: ast.expr) -> tuple[ast.expr, int] | None:
    """(k, the rank the transpose needs, 0 for any) for ``k.transpose(-2, -1)``, ``k.mT``, ``k.transpose(2, 3)``."""
    if isinstance(e, ast.Attribute) and e.attr == "mT":
        return e.value, 0
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "transpose" \
            and len(e.args) == 2 and not e.keywords:
        try:
            a, b = sorted(ast.literal_eval(x) for x in e.args)
        except (ValueError, TypeError):
            a, b = 0, 0
        if (a, b) == (-2, -1):
            return e.func.value, 0
        if a >= 0 and b == a + 1:
            return e.func.value, b + 1
    return None


_NEG_INF = {'float("-inf")', "float('-inf')", '-float("inf")', "-float('inf')", "-math.inf", "-torch.inf",
            "float('-Inf')", 'float("-Inf")'}


def _ones(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and dotted(node.func) == "torch.ones"


def _tri(node: ast.expr, which: str) -> tuple[bool, ast.Call] | None:
    """(True, call) for ``torch.<which>(torch.ones(...), diagonal=d)`` or ``torch.ones(...).<which>(d)``."""
    if not isinstance(node, ast.Call):
        return None
    if dotted(node.func) == f"torch.{which}" and node.args and _ones(node.args[0]):
        rest = node.args[1:]
    elif isinstance(node.func, ast.Attribute) and node.func.attr == which and _ones(node.func.value):
        rest = node.args
    else:
        return None
    diag = rest[0] if rest else next((k.value for k in node.keywords if k.arg == "diagonal"), ast.Constant(0))
    return (_is_const(diag, 1 if which == "triu" else 0) and diag is not None), node


def _strip_bool(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
            node.func.attr == "bool" and not node.args or
            node.func.attr == "to" and len(node.args) == 1 and dotted(node.args[0]) == "torch.bool"):
        node = node.func.value
    return node


def _causal_mask(mask: ast.expr) -> bool:
    m = _strip_bool(mask)
    triu = _tri(m, "triu")
    if triu is not None:
        return triu[0]
    inner = None
    if isinstance(m, ast.Compare) and len(m.ops) == 1 and isinstance(m.ops[0], ast.Eq) and _is_const(m.comparators[0], 0) \
            and m.comparators[0] is not None:
        inner = m.left
    elif isinstance(m, ast.UnaryOp) and isinstance(m.op, ast.Invert):
        inner = m.operand
    elif isinstance(m, ast.Call) and isinstance(m.func, ast.Attribute) and m.func.attr == "logical_not" and not m.args:
        inner = m.func.value
    elif isinstance(m, ast.Call) and dotted(m.func) == "torch.logical_not" and len(m.args) == 1:
        inner = m.args[0]
    tril = _tri(_strip_bool(inner), "tril") if inner is not None else None
    return bool(tril and tril[0])


def _masked(e: ast.expr) -> ast.expr | None:
    """S for ``S.masked_fill(<causal mask>, -inf)`` / ``torch.masked_fill(S, mask, -inf)``; None otherwise."""
    if not isinstance(e, ast.Call) or e.keywords:
        return None
    if isinstance(e.func, ast.Attribute) and e.func.attr in ("masked_fill", "masked_fill_") \
            and not library_function(e.func) and len(e.args) == 2:
        s, mask, value = e.func.value, e.args[0], e.args[1]
    elif library_function(e.func) == "masked_fill" and len(e.args) == 3:
        s, mask, value = e.args
    else:
        return None
    if ast.unparse(value) not in _NEG_INF or not _causal_mask(mask):
        raise Unsupported(f"attention with a mask other than the causal one ({ast.unparse(e)[:80]})")
    return s


def _explicit(e: ast.expr, params: list[str], attrs: dict[str, ast.expr]
              ) -> tuple[tuple[str, ...], dict[str, str]] | None:
    outer = _matmul_parts(e)
    if outer is None:
        return None
    try:
        s = _softmax_last(outer[0])
    except Unsupported:
        return None  # a softmax over another dim times a matrix: not attention
    if s is None:
        return None
    scales: list[str] = []
    causal = False
    while True:
        if isinstance(s, ast.BinOp) and isinstance(s.op, ast.Div) and _is_number(s.right, params, attrs):
            scales.append(f"1.0 / ({ast.unparse(s.right)})")
            s = s.left
            continue
        if isinstance(s, ast.BinOp) and isinstance(s.op, ast.Mult):
            if _is_number(s.right, params, attrs):
                factor, s = s.right, s.left
            elif _is_number(s.left, params, attrs):
                factor, s = s.left, s.right
            else:
                return None  # scores times a tensor: not this template's attention
            scales.append(f"({ast.unparse(factor)})")
            continue
        masked = _masked(s)
        if masked is not None:
            causal, s = True, masked
            continue
        break
    inner = _matmul_parts(s)
    if inner is None:
        return None  # softmax of something else times a matrix: left to the fused kernels
    key = _transposed_key(inner[1])
    if key is None:
        return None
    q = _param(inner[0], params, "attention")
    k, ndim = _param(key[0], params, "attention"), key[1]
    v = _param(outer[1], params, "attention")
    scale = " * ".join(scales) if scales else "1.0"
    return (q, k, v), {"causal": str(causal), "scale": scale, "ndim": str(ndim)}


def _is_number(node: ast.expr, params: list[str], attrs: dict[str, ast.expr]) -> bool:
    try:
        _scalar(node, params, attrs)
        return True
    except Unsupported:
        return False


KERNEL = '''
@triton.jit
def _stark_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, Lq, Lk, D, Dv, qk_scale, s_qb, s_ql, s_qd, s_kb, s_kl, s_kd,
                            s_vb, s_vl, s_vd, s_ob, s_ol, s_od, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                            BLOCK_DK: tl.constexpr, BLOCK_DV: tl.constexpr, ONE_DK: tl.constexpr,
                            CAUSAL: tl.constexpr, IEEE: tl.constexpr):
    # axis 0: BLOCK_M query rows; axis 1: batch * head; axis 2: BLOCK_DV columns of the output.
    # Scores are in log2 units (qk_scale = scale * log2(e)): exp2 of the online softmax.
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1).to(tl.int64)
    rows = start_m + tl.arange(0, BLOCK_M)
    rmask = rows < Lq
    dk = tl.arange(0, BLOCK_DK)
    dv = tl.program_id(2) * BLOCK_DV + tl.arange(0, BLOCK_DV)
    dvmask = dv < Dv
    q_rows = q_ptr + bh * s_qb + rows.to(tl.int64)[:, None] * s_ql
    k_base = k_ptr + bh * s_kb
    v_base = v_ptr + bh * s_vb
    if ONE_DK:  # the whole head in one tile: q is loaded once
        q = tl.load(q_rows + dk[None, :] * s_qd, mask=rmask[:, None] & (dk[None, :] < D), other=0.0)
    m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_DV), tl.float32)
    end = Lk
    if CAUSAL:  # keys after this block's last row are masked for every row of it
        end = tl.minimum(Lk, start_m + BLOCK_M)
    for n0 in range(0, end, BLOCK_N):
        cols = n0 + tl.arange(0, BLOCK_N)
        cmask = cols < Lk
        k_rows = k_base + cols.to(tl.int64)[:, None] * s_kl
        if ONE_DK:
            kt = tl.load(k_rows + dk[None, :] * s_kd, mask=cmask[:, None] & (dk[None, :] < D), other=0.0)
            if IEEE:
                s = tl.dot(q, tl.trans(kt), input_precision="ieee")
            else:
                s = tl.dot(q, tl.trans(kt))
        else:
            s = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
            for d0 in range(0, D, BLOCK_DK):
                dd = d0 + dk
                qd = tl.load(q_rows + dd[None, :] * s_qd, mask=rmask[:, None] & (dd[None, :] < D), other=0.0)
                kd = tl.load(k_rows + dd[None, :] * s_kd, mask=cmask[:, None] & (dd[None, :] < D), other=0.0)
                if IEEE:
                    s += tl.dot(qd, tl.trans(kd), input_precision="ieee")
                else:
                    s += tl.dot(qd, tl.trans(kd))
        keep = cmask[None, :]
        if CAUSAL:
            keep = keep & (cols[None, :] <= rows[:, None])
        s = tl.where(keep, s * qk_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))  # finite: every row keeps key 0 of the first tile
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        vt = tl.load(v_base + cols.to(tl.int64)[:, None] * s_vl + dv[None, :] * s_vd, mask=cmask[:, None] & dvmask[None, :],
                     other=0.0)
        if IEEE:
            acc = acc * alpha[:, None] + tl.dot(p, vt, input_precision="ieee")
        else:
            acc = acc * alpha[:, None] + tl.dot(p.to(vt.dtype), vt)
        m_i = m_new
    out = acc / l_i[:, None]
    o = o_ptr + bh * s_ob + rows.to(tl.int64)[:, None] * s_ol + dv[None, :] * s_od
    tl.store(o, out.to(o_ptr.dtype.element_ty), mask=rmask[:, None] & dvmask[None, :])
'''


def attention_code(options: dict[str, str], args: tuple[str, ...], doc: str, signature: str) -> str:
    q, k, v = args
    ndim = int(options.get("ndim", "0"))
    rank = (f'''
        if k.ndim != {ndim}:
            raise ValueError(f"this model transposes k's last two dims only when it is {ndim}-D, not {{k.ndim}}-D")'''
            if ndim else "")
    return "import os\n" + KERNEL + f'''

class ModelNew(Model):
{doc}
    def forward(self, {signature}):
        q, k, v = {q}, {k}, {v}{rank}
        if q.ndim < 2 or not (q.ndim == k.ndim == v.ndim) or not (q.shape[:-2] == k.shape[:-2] == v.shape[:-2]) \\
                or k.shape[-2] != v.shape[-2] or q.shape[-1] != k.shape[-1]:
            raise ValueError(f"this kernel takes q, k, v of the same batch dims, q and k of one head size and as many "
                             f"keys as values, not {{tuple(q.shape)}}, {{tuple(k.shape)}}, {{tuple(v.shape)}}")
        if not (q.dtype == k.dtype == v.dtype) or q.dtype not in (torch.float16, torch.bfloat16, torch.float32):
            raise TypeError(f"this kernel takes q, k, v of one dtype, float16, bfloat16 or float32, not "
                            f"{{q.dtype}}, {{k.dtype}}, {{v.dtype}}")
        causal = bool({options["causal"]})
        scale = {options["scale"]}
        Lq, D = q.shape[-2:]
        Lk, Dv = k.shape[-2], v.shape[-1]
        scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
        qf = q.reshape(-1, Lq, D)
        kf = k.reshape(-1, Lk, D)
        vf = v.reshape(-1, Lk, Dv)
        if q.dtype == torch.bfloat16 and os.environ.get("TRITON_INTERPRET") == "1":
            qf, kf, vf = qf.float(), kf.float(), vf.float()  # the CPU interpreter's tl.dot misreads bfloat16
        BH = qf.shape[0]
        o = torch.empty((BH, Lq, Dv), device=q.device, dtype=q.dtype)
        BLOCK_M = 64
        BLOCK_N = 64
        BLOCK_D = 128  # the widest tile of a head; a wider head is taken in tiles
        BLOCK_DK = max(16, min(triton.next_power_of_2(D), BLOCK_D))
        BLOCK_DV = max(16, min(triton.next_power_of_2(Dv), BLOCK_D))
        if BH * Lq * Dv:
            grid = (triton.cdiv(Lq, BLOCK_M), BH, triton.cdiv(Dv, BLOCK_DV))
            _stark_attention_kernel[grid](
                qf, kf, vf, o, Lq, Lk, D, Dv, scale * 1.4426950408889634, *qf.stride(), *kf.stride(), *vf.stride(),
                *o.stride(), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_DK=BLOCK_DK, BLOCK_DV=BLOCK_DV,
                ONE_DK=BLOCK_DK >= D, CAUSAL=causal, IEEE=qf.dtype == torch.float32,
                num_warps=4, num_stages=2)
        return o.reshape(*q.shape[:-1], Dv)
'''
