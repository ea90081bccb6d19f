"""What a KernelBench ``Model.forward`` computes, when it is one operation with a template of its own.

``recognize(source)`` reads the file with ``ast`` (nothing is imported or run)
and returns an ``Op`` when ``forward`` is a single ``return`` of one of:

* a reduction over one dimension: ``torch.sum`` / ``mean`` / ``amax`` /
  ``amin`` with ``dim=`` a literal or an attribute set in ``__init__``;
* ``torch.softmax(x, dim=...)`` and ``log_softmax`` (also ``F.``, methods);
* ``torch.max(x, dim)[0]`` / ``.values`` (and ``min``): as ``amax`` / ``amin``;
* a LayerNorm module built in ``__init__`` (``self.ln(x)``; its own weight,
  bias and eps are used);
* a matrix product: ``torch.matmul(A, B)``, ``torch.mm``, ``torch.bmm``,
  ``A @ B``, of 2-D matrices or batches of them (3-D; a 2-D side is shared);
* attention (``kb_attention``): ``F.scaled_dot_product_attention`` or
  ``softmax(q @ k.transpose(-2, -1) * scale [causal mask], dim=-1) @ v``, and
  cross-entropy (``kb_cross_entropy``): ``F.cross_entropy`` or an
  ``nn.CrossEntropyLoss`` module; for these two, ``forward`` may assign locals
  before its return (they are written into the returned expression).

Anything else raises ``NotRecognized`` with the reason (``recognize`` gives
None); the built-in team then reads the model as a graph (``fusion``), which
covers elementwise expressions and multi-statement forwards.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace

from stark_lsp.agents.builtin.kb_ast import (NotRecognized, library_function, model_methods, module_class,
                                             returned_expression, self_attribute)
from stark_lsp.agents.builtin.kb_attention import read_attention
from stark_lsp.agents.builtin.kb_cross_entropy import read_cross_entropy

REDUCTIONS = {"sum", "mean", "amax", "amin"}
MATMUL = {"matmul", "mm", "bmm"}
SOFTMAX = {"softmax", "log_softmax"}
_PICK = {"max": "amax", "min": "amin"}  # torch.max(x, dim)[0] / .values


@dataclass(frozen=True)
class Op:
    kind: str  # reduce | softmax | layernorm | matmul | attention | cross_entropy
    name: str  # sum, softmax, layernorm, matmul, ...
    args: tuple[str, ...]  # the operation's operands: forward parameters (matmul: maybe transposed, "A.T")
    dim: str = ""  # a Python expression for the dimension (e.g. "1", "self.dim")
    keepdim: str = "False"
    module: str = ""  # layernorm: the attribute holding the nn.LayerNorm
    params: tuple[str, ...] = ()  # forward's parameters, in order (ModelNew.forward takes the same)
    options: tuple[tuple[str, str], ...] = ()  # attention / cross_entropy: (name, Python expression) pairs

    def describe(self) -> str:
        if self.kind in ("reduce", "softmax"):
            return f"{self.name} over dim {self.dim}"
        if self.kind == "layernorm":
            return f"layernorm (self.{self.module})"
        if self.kind == "attention":
            o = dict(self.options)
            causal = {"True": "causal", "False": "not causal"}.get(o["causal"], f"causal if {o['causal']}")
            scale = "1/sqrt(head size)" if o["scale"] == "None" else o["scale"]
            return f"flash attention ({causal}, scale {scale})"
        if self.kind == "cross_entropy":
            o = dict(self.options)
            return f"fused cross-entropy (reduction {o['reduction']}, ignore_index {o['ignore_index']})"
        return f"{self.name} (2-D or batched)"


def recognize(source: str) -> Op | None:
    try:
        return analyse(source)
    except NotRecognized:
        return None


def analyse(source: str) -> Op:
    methods = model_methods(source)
    forward = methods["forward"]
    params = [a.arg for a in forward.args.args[1:]]
    if forward.args.vararg or forward.args.kwarg or forward.args.kwonlyargs:
        raise NotRecognized("forward takes *args, **kwargs or keyword-only arguments")
    attrs = _init_attrs(methods.get("__init__"))
    library = _library_op(forward, params, attrs)
    if library is not None:
        return library
    body = [s for s in forward.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        raise NotRecognized("forward is not a single return statement")
    return replace(_expression(body[0].value, params, attrs), params=tuple(params))


def _library_op(forward: ast.FunctionDef, params: list[str], attrs: dict[str, ast.expr]) -> Op | None:
    """Attention or cross-entropy (locals written into the returned expression), else None;
    Unsupported (a NotRecognized) for a variant their templates do not write."""
    try:
        e = returned_expression(forward)
    except NotRecognized:
        return None
    for kind, read in (("attention", read_attention), ("cross_entropy", read_cross_entropy)):
        found = read(e, params, attrs)
        if found is not None:
            args, options = found
            return Op(kind, kind, args, params=tuple(params), options=tuple(options.items()))
    return None


def _init_attrs(init: ast.FunctionDef | None) -> dict[str, ast.expr]:
    """self.<name> = <value> assignments of __init__."""
    out: dict[str, ast.expr] = {}
    if init is None:
        return out
    for stmt in ast.walk(init):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            t = stmt.targets[0]
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                out[t.attr] = stmt.value
    return out


def _keyword(call: ast.Call, name: str, position: int | None = None) -> ast.expr | None:
    for k in call.keywords:
        if k.arg == name:
            return k.value
    if position is not None and len(call.args) > position:
        return call.args[position]
    return None


def _dim_expr(node: ast.expr | None, attrs: dict[str, ast.expr], what: str) -> str:
    if node is None:
        raise NotRecognized(f"{what} without dim=")
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return repr(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, int):
        return repr(-node.operand.value)
    attr = self_attribute(node, attrs)
    if attr:
        return attr
    raise NotRecognized(f"{what}: dim is not a literal or an attribute set in __init__")


def _bool_expr(node: ast.expr | None, attrs: dict[str, ast.expr]) -> str:
    if node is None:
        return "False"
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return repr(node.value)
    attr = self_attribute(node, attrs)
    if attr:
        return f"bool({attr})"
    raise NotRecognized("keepdim is not a literal or an attribute set in __init__")


def _is_param(node: ast.expr, params: list[str]) -> str:
    if isinstance(node, ast.Name) and node.id in params:
        return node.id
    raise NotRecognized("the operation is not applied to forward's own input")


def _matmul_operand(node: ast.expr, params: list[str]) -> str:
    """A forward parameter, or its transpose (``A.T``, ``A.mT``, ``A.t()``, ``A.transpose(-2, -1)``):
    the kernel reads the transposed view through its strides."""
    if isinstance(node, ast.Attribute) and node.attr in ("T", "mT"):
        return f"{_is_param(node.value, params)}.{node.attr}"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.keywords:
        x = node.func.value
        if node.func.attr == "t" and not node.args:
            return f"{_is_param(x, params)}.t()"
        if node.func.attr == "transpose" and len(node.args) == 2 and all(
                isinstance(a, (ast.Constant, ast.UnaryOp)) for a in node.args):
            return f"{_is_param(x, params)}.transpose({ast.unparse(node.args[0])}, {ast.unparse(node.args[1])})"
    return _is_param(node, params)


def _expression(e: ast.expr, params: list[str], attrs: dict[str, ast.expr]) -> Op:
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.MatMult):
        return Op("matmul", "matmul", (_matmul_operand(e.left, params), _matmul_operand(e.right, params)))
    picked = _picked_extreme(e)
    if picked is not None:  # torch.max(x, dim)[0], x.min(dim=1).values: the values of a max/min over a dim
        call, name = picked
        func = call.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in params:
            return _call(name, [func.value] + list(call.args), call, params, attrs, x_given=func.value.id)
        return _call(name, list(call.args), call, params, attrs)
    if isinstance(e, ast.Call):
        func = e.func
        # self.<module>(x): a LayerNorm built in __init__ (activation modules are elementwise, below)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            if module_class(attrs, func.attr) == "LayerNorm":
                if len(e.args) != 1 or e.keywords:
                    raise NotRecognized(f"self.{func.attr} is called with other than one input")
                return Op("layernorm", "layernorm", (_is_param(e.args[0], params),), module=func.attr)
        # x.sum(dim=1), x.softmax(dim=-1)
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in params:
            if func.attr in REDUCTIONS or func.attr in SOFTMAX:
                return _call(func.attr, [func.value] + list(e.args), e, params, attrs, x_given=func.value.id)
        else:
            lib = library_function(func)
            if lib in MATMUL or lib in REDUCTIONS or lib in SOFTMAX:
                return _call(lib, list(e.args), e, params, attrs)
    raise NotRecognized("forward is not a single reduction, softmax, LayerNorm or matrix product of its inputs")


def _picked_extreme(e: ast.expr) -> tuple[ast.Call, str] | None:
    """(the max/min call, 'amax'/'amin') for ``max(...)[0]`` or ``max(...).values``."""
    if isinstance(e, ast.Subscript) and isinstance(e.slice, ast.Constant) and e.slice.value == 0:
        inner = e.value
    elif isinstance(e, ast.Attribute) and e.attr == "values":
        inner = e.value
    else:
        return None
    if not isinstance(inner, ast.Call) or not isinstance(inner.func, ast.Attribute) or inner.func.attr not in _PICK:
        return None
    return inner, _PICK[inner.func.attr]


def _call(name: str, args: list[ast.expr], call: ast.Call, params: list[str], attrs: dict[str, ast.expr],
          x_given: str | None = None) -> Op:
    if not args:
        raise NotRecognized(f"{name} without an input")
    # x_given: a method call (x.sum(1)), whose call.args start after the tensor
    if name in MATMUL:
        if len(args) != 2 or call.keywords:
            raise NotRecognized(f"{name} with other than two inputs")
        return Op("matmul", name if name == "bmm" else "matmul",
                  (_matmul_operand(args[0], params), _matmul_operand(args[1], params)))
    x = _is_param(args[0], params)
    if name in REDUCTIONS:
        if set(k.arg for k in call.keywords) - {"dim", "keepdim"}:
            raise NotRecognized(f"{name} with arguments other than dim and keepdim")
        if x_given is None:
            dim = _keyword(call, "dim", 1)
            keep = _keyword(call, "keepdim", 2)
        else:
            dim = _keyword(call, "dim", 0)
            keep = _keyword(call, "keepdim", 1)
        return Op("reduce", name, (x,), dim=_dim_expr(dim, attrs, name), keepdim=_bool_expr(keep, attrs))
    if name in SOFTMAX:
        if set(k.arg for k in call.keywords) - {"dim"}:
            raise NotRecognized(f"{name} with arguments other than dim")
        dim = _keyword(call, "dim", 1) if x_given is None else _keyword(call, "dim", 0)
        return Op("softmax", name, (x,), dim=_dim_expr(dim, attrs, name))
    raise NotRecognized(f"forward calls {name}, which the built-in team does not lower")
