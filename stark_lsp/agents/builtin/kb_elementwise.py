"""An elementwise ``forward`` expression, compiled to Triton statements.

``compile_elementwise(expr, params, attrs)`` reads an expression built from
forward's tensor inputs, numbers, scalar attributes set in ``__init__``
(``self.alpha``), ``+ - * /``, ``**`` by 2, 3 or 0.5, and known functions
(``torch.relu``, ``F.leaky_relu(x, 0.2)``, ``torch.clamp(x, min=-1)``, ``x.exp()``,
``nn`` activation modules built in ``__init__``, ...), and returns the Triton
statements that compute it per element in fp32, one temporary per step (no
subexpression is computed twice). Anything else raises ``NotRecognized`` with
the reason. Tensor inputs must share one shape at run time (no broadcasting):
the generated ``forward`` checks that.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from stark_lsp.agents.builtin.kb_ast import NotRecognized, library_function, module_class, self_attribute


SELU_ALPHA, SELU_SCALE = 1.6732632423543772, 1.0507009873554805

# name: (positional parameter names after the input, their defaults); None = required
FUNCTIONS: dict[str, tuple[tuple[str, float | None], ...]] = {
    "relu": (), "relu6": (), "sigmoid": (), "tanh": (), "exp": (), "log": (), "sqrt": (), "rsqrt": (),
    "abs": (), "neg": (), "sin": (), "cos": (), "silu": (), "softsign": (), "hardsigmoid": (), "selu": (),
    "square": (),
    "gelu": (),  # approximate= handled apart
    "leaky_relu": (("negative_slope", 0.01),),
    "elu": (("alpha", 1.0),),
    "softplus": (("beta", 1.0), ("threshold", 20.0)),
    "hardtanh": (("min_val", -1.0), ("max_val", 1.0)),
    "clamp": (("min", None), ("max", None)),
}
ALIASES = {"clip": "clamp", "negative": "neg"}
MODULES = {"ReLU": "relu", "ReLU6": "relu6", "Sigmoid": "sigmoid", "Tanh": "tanh", "SiLU": "silu", "GELU": "gelu",
           "LeakyReLU": "leaky_relu", "ELU": "elu", "SELU": "selu", "Softplus": "softplus", "Softsign": "softsign",
           "Hardsigmoid": "hardsigmoid", "Hardtanh": "hardtanh"}
_IGNORED_KEYWORDS = {"inplace"}


@dataclass
class Elementwise:
    inputs: list[str] = field(default_factory=list)  # forward parameters, in first-use order
    scalars: list[str] = field(default_factory=list)  # Python expressions, e.g. "self.alpha"
    body: list[str] = field(default_factory=list)  # Triton statements
    result: str = ""
    calls: list[str] = field(default_factory=list)  # function names used, for the description
    _n: int = 0

    def temp(self, expr: str) -> str:
        self._n += 1
        name = f"v{self._n}"
        self.body.append(f"{name} = {expr}")
        return name

    arithmetic: bool = False  # + - * / ** or a unary minus somewhere

    def name(self) -> str:
        """The function's name for one function of one input, else a short description."""
        if len(self.calls) == 1 and not self.arithmetic and len(self.inputs) == 1:
            return self.calls[0]
        used = ", ".join(dict.fromkeys(self.calls))
        return f"expression ({used})" if used else "arithmetic"


def compile_elementwise(expr: ast.expr, params: list[str], attrs: dict[str, ast.expr]) -> Elementwise:
    out = Elementwise()
    out.result = _compile(expr, params, attrs, out)
    if not out.inputs:
        raise NotRecognized("the expression uses none of forward's inputs")
    return out


def _num(v: float) -> str:
    return repr(float(v))


def _scalar(node: ast.expr, attrs: dict[str, ast.expr], out: Elementwise, what: str) -> str:
    """A number or a scalar attribute, as a Triton operand."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return _num(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _scalar(node.operand, attrs, out, what)
        return _num(-float(inner)) if _is_number(inner) else f"(-{inner})"
    expr = self_attribute(node, attrs)
    if expr:
        if expr not in out.scalars:
            out.scalars.append(expr)
        return f"s{out.scalars.index(expr)}"
    raise NotRecognized(f"{what} is not a number or a scalar attribute set in __init__")


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _compile(node: ast.expr, params: list[str], attrs: dict[str, ast.expr], out: Elementwise) -> str:
    if isinstance(node, ast.Name):
        if node.id not in params:
            raise NotRecognized(f"{node.id} is not one of forward's inputs")
        if node.id not in out.inputs:
            out.inputs.append(node.id)
        return f"x{out.inputs.index(node.id)}"
    if isinstance(node, (ast.Constant, ast.Attribute)):
        return _scalar(node, attrs, out, "a value in the expression")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        out.arithmetic = True
        return out.temp(f"-{_compile(node.operand, params, attrs, out)}")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd):
        return _compile(node.operand, params, attrs, out)
    if isinstance(node, ast.BinOp):
        return _binop(node, params, attrs, out)
    if isinstance(node, ast.Call):
        return _call(node, params, attrs, out)
    raise NotRecognized(f"{type(node).__name__} in the expression is not elementwise arithmetic the built-in team knows")


def _binop(node: ast.BinOp, params: list[str], attrs: dict[str, ast.expr], out: Elementwise) -> str:
    out.arithmetic = True
    if isinstance(node.op, ast.Pow):
        base = _compile(node.left, params, attrs, out)
        exp = node.right.value if isinstance(node.right, ast.Constant) else None
        if exp == 2:
            return out.temp(f"{base} * {base}")
        if exp == 3:
            return out.temp(f"{base} * {base} * {base}")
        if exp == 0.5:
            return out.temp(f"tl.sqrt({base})")
        raise NotRecognized("a power other than 2, 3 or 0.5")
    ops = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
    sym = ops.get(type(node.op))
    if sym is None:
        raise NotRecognized(f"the operator {type(node.op).__name__} is not elementwise arithmetic the built-in team knows")
    return out.temp(f"{_compile(node.left, params, attrs, out)} {sym} {_compile(node.right, params, attrs, out)}")


def _function_name(func: ast.expr, params: list[str], attrs: dict[str, ast.expr]) -> tuple[str, ast.expr | None, ast.Call | None]:
    """(function name, the tensor it is a method of or None, the nn module's constructor call or None)."""
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        cls = module_class(attrs, func.attr)
        if cls not in MODULES:
            raise NotRecognized(f"self.{func.attr} is a {cls or 'module'} the built-in team does not lower")
        built = attrs[func.attr]
        assert isinstance(built, ast.Call)
        return MODULES[cls], None, built
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in params:
        return ALIASES.get(func.attr, func.attr), func.value, None
    lib = library_function(func)
    if lib:
        return ALIASES.get(lib, lib), None, None
    raise NotRecognized("a call the built-in team does not lower")


def _call(node: ast.Call, params: list[str], attrs: dict[str, ast.expr], out: Elementwise) -> str:
    name, method_of, module = _function_name(node.func, params, attrs)
    if name not in FUNCTIONS:
        raise NotRecognized(f"{name} is not an elementwise function the built-in team knows")
    args = ([method_of] if method_of is not None else []) + list(node.args)
    if module is not None:  # settings come from the module's constructor; the call takes the input
        if len(node.args) != 1 or node.keywords:
            raise NotRecognized(f"the {name} module is called with other than one input")
        settings_call: ast.Call = module
        setting_args, setting_kws = list(settings_call.args), settings_call.keywords
    else:
        if not args:
            raise NotRecognized(f"{name} without an input")
        setting_args, setting_kws = args[1:], node.keywords
    x = _compile(args[0], params, attrs, out)
    out.calls.append(name)
    if name == "gelu":
        approx = next((k.value for k in setting_kws if k.arg == "approximate"), setting_args[0] if setting_args else None)
        mode = approx.value if isinstance(approx, ast.Constant) else None if approx is None else "?"
        if mode in (None, "none"):
            return out.temp(f"0.5 * {x} * (1.0 + tl.math.erf({x} * 0.7071067811865476))")
        if mode == "tanh":
            inner = out.temp(f"1.5957691216057308 * ({x} + 0.044715 * {x} * {x} * {x})")
            return out.temp(f"{x} * tl.sigmoid({inner})")
        raise NotRecognized("gelu with an approximation that is not 'none' or 'tanh'")
    values = _settings(name, setting_args, setting_kws, attrs, out)
    return _emit(name, x, values, out)


def _settings(name: str, args: list[ast.expr], kws: list[ast.keyword], attrs: dict[str, ast.expr],
              out: Elementwise) -> dict[str, str | None]:
    spec = FUNCTIONS[name]
    names = [n for n, _ in spec]
    values: dict[str, str | None] = {n: (None if d is None else _num(d)) for n, d in spec}
    if len(args) > len(spec):
        raise NotRecognized(f"{name} with more arguments than the built-in team knows")
    for (n, _), a in zip(spec, args):
        values[n] = _none_or_scalar(a, attrs, out, f"{name}'s {n}")
    for k in kws:
        if k.arg in _IGNORED_KEYWORDS:
            continue
        if k.arg not in names:
            raise NotRecognized(f"{name} with the argument {k.arg}=, which the built-in team does not know")
        values[k.arg] = _none_or_scalar(k.value, attrs, out, f"{name}'s {k.arg}")
    return values


def _none_or_scalar(node: ast.expr, attrs: dict[str, ast.expr], out: Elementwise, what: str) -> str | None:
    if isinstance(node, ast.Constant) and node.value is None:
        return None
    return _scalar(node, attrs, out, what)


def _emit(name: str, x: str, v: dict[str, str | None], out: Elementwise) -> str:
    t = out.temp
    simple = {
        "relu": f"tl.maximum({x}, 0.0)",
        "relu6": f"tl.minimum(tl.maximum({x}, 0.0), 6.0)",
        "sigmoid": f"tl.sigmoid({x})",
        "tanh": f"2.0 * tl.sigmoid(2.0 * {x}) - 1.0",
        "exp": f"tl.exp({x})",
        "log": f"tl.log({x})",
        "sqrt": f"tl.sqrt({x})",
        "rsqrt": f"tl.rsqrt({x})",
        "abs": f"tl.abs({x})",
        "neg": f"-{x}",
        "sin": f"tl.sin({x})",
        "cos": f"tl.cos({x})",
        "square": f"{x} * {x}",
        "silu": f"{x} * tl.sigmoid({x})",
        "softsign": f"{x} / (1.0 + tl.abs({x}))",
        "hardsigmoid": f"tl.minimum(tl.maximum({x} + 3.0, 0.0), 6.0) / 6.0",
        "selu": f"{SELU_SCALE!r} * tl.where({x} > 0.0, {x}, {SELU_ALPHA!r} * (tl.exp({x}) - 1.0))",
    }
    if name in simple:
        return t(simple[name])
    if name == "leaky_relu":
        return t(f"tl.where({x} > 0.0, {x}, {x} * {v['negative_slope']})")
    if name == "elu":
        return t(f"tl.where({x} > 0.0, {x}, {v['alpha']} * (tl.exp({x}) - 1.0))")
    if name == "softplus":
        bx = t(f"{x} * {v['beta']}")
        return t(f"tl.where({bx} > {v['threshold']}, {x}, tl.log(1.0 + tl.exp({bx})) / {v['beta']})")
    if name in ("hardtanh", "clamp"):
        lo, hi = (v["min_val"], v["max_val"]) if name == "hardtanh" else (v["min"], v["max"])
        if lo is None and hi is None:
            raise NotRecognized("clamp without min or max")
        y = x
        if lo is not None:
            y = t(f"tl.maximum({y}, {lo})")
        if hi is not None:
            y = t(f"tl.minimum({y}, {hi})")
        return y
    raise NotRecognized(f"{name} is not an elementwise function the built-in team knows")
