"""Fused cross-entropy in Triton for KernelBench models whose forward is the loss.

``read_cross_entropy(expr, params, attrs)`` recognizes ``F.cross_entropy(logits, target, ...)``
(``torch.nn.functional.`` too) and a ``nn.CrossEntropyLoss(...)`` module built in ``__init__`` and
called as ``self.<name>(logits, target)``, with class-index targets, ``ignore_index`` (default -100)
and ``reduction`` ``mean`` / ``sum`` / ``none`` (literals or attributes set in ``__init__``; the
module's own at run time). ``weight``, ``label_smoothing`` and the deprecated ``size_average`` /
``reduce`` are refused with the reason (``Unsupported``); probability targets (a floating target)
raise a one-line error at run time.

``cross_entropy_code`` writes two kernels: one program per row (the class dimension is dim 1,
moved last for more than 2 dims) takes an online logsumexp over the classes in BLOCK_C blocks,
then gathers the target's logit: loss = logsumexp - logit (0 for an ignored row); then one program
sums the losses (and counts the rows not ignored, for the mean) in BLOCK_R lanes, reduced as a
tree. Arithmetic in fp32, the result in the logits' dtype.
"""

from __future__ import annotations

import ast

from stark_lsp.agents.builtin.kb_ast import Unsupported, library_function, module_class, self_attribute

# starting points: the defaults (BLOCK_C 1024, 4 warps), then other blocks of classes
STARTS = [{}, {"BLOCK_C": 4096, "num_warps": 8}, {"BLOCK_C": 2048, "num_warps": 8},
          {"BLOCK_C": 256, "num_warps": 2}]
_POSITIONS = {"weight": 2, "size_average": 3, "ignore_index": 4, "reduce": 5, "reduction": 6, "label_smoothing": 7}


def read_cross_entropy(e: ast.expr, params: list[str], attrs: dict[str, ast.expr]
                       ) -> tuple[tuple[str, ...], dict[str, str]] | None:
    """((logits, target), options) when ``e`` is cross-entropy, None when it is not, Unsupported
    when it is, in a variant this template does not write. Options are Python expressions for
    ModelNew.forward: ``reduction``, ``ignore_index``, ``module`` (the loss module's attribute, or '')."""
    if not isinstance(e, ast.Call):
        return None
    func = e.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self" \
            and module_class(attrs, func.attr) == "CrossEntropyLoss":
        built = attrs[func.attr]
        assert isinstance(built, ast.Call)
        _refuse(built, 0, "nn.CrossEntropyLoss")  # its own arguments: weight first
        if len(e.args) != 2 or e.keywords:
            raise Unsupported(f"self.{func.attr} is called with other than (logits, target)")
        module = f"self.{func.attr}"
        return _inputs(e.args, params), {"reduction": f"{module}.reduction", "ignore_index": f"{module}.ignore_index",
                                         "module": module}
    if library_function(func) != "cross_entropy":
        return None
    if len(e.args) < 2:
        raise Unsupported("cross_entropy without logits and target given by position")
    _refuse(e, 2, "cross_entropy")
    return _inputs(e.args[:2], params), {"reduction": _option(e, "reduction", 2, "'mean'", attrs),
                                         "ignore_index": _option(e, "ignore_index", 2, "-100", attrs), "module": ""}


def _inputs(args: list[ast.expr], params: list[str]) -> tuple[str, ...]:
    out = []
    for a in args:
        if not (isinstance(a, ast.Name) and a.id in params):
            raise Unsupported(f"cross_entropy of something other than forward's own inputs ({ast.unparse(a)})")
        out.append(a.id)
    return tuple(out)


def _given(call: ast.Call, name: str, skip: int) -> ast.expr | None:
    for k in call.keywords:
        if k.arg == name:
            return k.value
    pos = _POSITIONS[name] - 2 + skip
    return call.args[pos] if len(call.args) > pos else None


def _refuse(call: ast.Call, skip: int, what: str) -> None:
    """Unsupported for weights, label smoothing, the deprecated arguments, or an unknown keyword.
    ``skip``: how many positional arguments come before ``weight`` (2 for the function's inputs)."""
    unknown = [k.arg for k in call.keywords if k.arg not in _POSITIONS]
    if unknown:
        raise Unsupported(f"{what} with {', '.join(map(str, unknown))}: not an argument the template knows")
    for name, allowed in (("weight", (None,)), ("size_average", (None,)), ("reduce", (None,)),
                          ("label_smoothing", (0, 0.0))):
        node = _given(call, name, skip)
        if node is None or isinstance(node, ast.Constant) and any(
                node.value is a if a is None else node.value == a and not isinstance(node.value, bool) for a in allowed):
            continue
        why = {"weight": "class weights", "label_smoothing": "label smoothing"}.get(name, f"the deprecated {name}")
        raise Unsupported(f"{what} with {why} ({ast.unparse(node)}): the fused cross-entropy template writes "
                          f"class-index targets, ignore_index and reduction only")


def _option(call: ast.Call, name: str, skip: int, default: str, attrs: dict[str, ast.expr]) -> str:
    node = _given(call, name, skip)
    if node is None:
        return default
    if isinstance(node, ast.Constant) or isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return ast.unparse(node)
    attr = self_attribute(node, attrs)
    if attr:
        return attr
    raise Unsupported(f"cross_entropy's {name} ({ast.unparse(node)}) is not a literal or an attribute set in __init__")


KERNELS = '''
@triton.jit
def _stark_cross_entropy_kernel(x_ptr, t_ptr, loss_ptr, C, s_xr, s_xc, ignore_index, BLOCK_C: tl.constexpr):
    # one program per row: an online logsumexp over the classes, then the target's logit
    row = tl.program_id(0).to(tl.int64)
    xr = x_ptr + row * s_xr
    m = tl.full((BLOCK_C,), float("-inf"), tl.float32)
    s = tl.zeros((BLOCK_C,), tl.float32)
    for c0 in range(0, C, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        v = tl.load(xr + cols.to(tl.int64) * s_xc, mask=cols < C, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, v)
        shift = tl.where(m_new == float("-inf"), 0.0, m_new)  # a lane with no class yet stays at 0, no nan
        s = s * tl.exp(m - shift) + tl.exp(v - shift)
        m = m_new
    mx = tl.max(m, axis=0)
    lse = mx + tl.log(tl.sum(tl.where(m == float("-inf"), 0.0, s * tl.exp(m - mx)), axis=0))
    t = tl.load(t_ptr + row)
    kept = t != ignore_index
    inside = kept & (t >= 0) & (t < C)  # a target out of range reads no memory (torch raises instead)
    xt = tl.load(xr + tl.where(inside, t, 0).to(tl.int64) * s_xc).to(tl.float32)
    tl.store(loss_ptr + row, tl.where(kept, lse - xt, 0.0).to(loss_ptr.dtype.element_ty))


@triton.jit
def _stark_cross_entropy_sum_kernel(loss_ptr, t_ptr, out_ptr, N, ignore_index, MEAN: tl.constexpr,
                                    BLOCK_R: tl.constexpr):
    # one program: the sum of the rows' losses (over the rows not ignored, for the mean)
    acc = tl.zeros((BLOCK_R,), tl.float32)
    kept = tl.zeros((BLOCK_R,), tl.float32)
    for r0 in range(0, N, BLOCK_R):
        r = r0 + tl.arange(0, BLOCK_R)
        rm = r < N
        acc += tl.load(loss_ptr + r, mask=rm, other=0.0)
        t = tl.load(t_ptr + r, mask=rm, other=ignore_index)
        kept += tl.where(rm & (t != ignore_index), 1.0, 0.0)
    total = tl.sum(acc, axis=0)
    if MEAN:
        total = total / tl.sum(kept, axis=0)
    tl.store(out_ptr, total.to(out_ptr.dtype.element_ty))
'''


def cross_entropy_code(options: dict[str, str], args: tuple[str, ...], doc: str, signature: str) -> str:
    logits, target = args
    module = options.get("module", "")
    check = (f'''
        if {module}.weight is not None or {module}.label_smoothing:
            raise ValueError("this kernel writes cross-entropy without class weights or label smoothing")'''
             if module else "")
    return KERNELS + f'''

class ModelNew(Model):
{doc}
    def forward(self, {signature}):
        x, t = {logits}, {target}{check}
        reduction = {options["reduction"]}
        ignore_index = int({options["ignore_index"]})
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"cross_entropy's reduction is 'mean', 'sum' or 'none', not {{reduction!r}}")
        if t.is_floating_point():
            raise ValueError("this kernel takes class-index targets, not class probabilities")
        if x.ndim == 0 or x.ndim == 1 and t.ndim != 0 or x.ndim > 1 and tuple(t.shape) != (x.shape[0], *x.shape[2:]):
            raise ValueError(f"cross_entropy of logits {{tuple(x.shape)}} and targets {{tuple(t.shape)}}: "
                             f"targets are the logits' shape without the class dim (dim 1)")
        C = x.shape[0] if x.ndim == 1 else x.shape[1]
        x2 = x.reshape(1, C) if x.ndim == 1 else x if x.ndim == 2 else x.movedim(1, -1).reshape(-1, C)
        t2 = t.reshape(-1).contiguous()
        N = t2.numel()
        loss = torch.empty((N,), device=x.device, dtype=x.dtype if reduction == "none" else torch.float32)
        BLOCK_C = 1024
        if N:
            _stark_cross_entropy_kernel[(N,)](x2, t2, loss, C, x2.stride(0), x2.stride(1), ignore_index,
                                              BLOCK_C=BLOCK_C, num_warps=4)
        if reduction == "none":
            return loss.reshape(t.shape)
        out = torch.empty((), device=x.device, dtype=x.dtype)
        BLOCK_R = 1024
        _stark_cross_entropy_sum_kernel[(1,)](loss, t2, out, N, ignore_index, MEAN=reduction == "mean",
                                              BLOCK_R=BLOCK_R, num_warps=4)
        return out
'''
