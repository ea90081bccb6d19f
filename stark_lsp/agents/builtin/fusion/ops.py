"""Elementwise operations as Triton expressions, in fp32 (fp64 when the inputs are).

``emit(op, args, temp)`` returns the Triton expression of ``op`` applied to
``args`` (Triton operands: names or literals); ``temp(expr)`` binds an
intermediate to a new name so that no subexpression is computed twice.
Comparisons and logical operations give 0.0 / 1.0, so they mix with
arithmetic as torch's bools do; ``BOOL_OPS`` tells the writer to store a
bool. Every formula follows torch's definition of the function (GELU exact
and tanh, softplus with its threshold, SELU's constants, ...).
"""

from __future__ import annotations

from typing import Callable

SELU_ALPHA, SELU_SCALE = 1.6732632423543772, 1.0507009873554805

Temp = Callable[[str], str]


def _num(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _tanh(x: str) -> str:
    return f"(2.0 * tl.sigmoid(2.0 * {x}) - 1.0)"


def _softplus(x: str, beta: str, threshold: str, t: Temp) -> str:
    bx = t(f"{x} * {beta}")
    return t(f"tl.where({bx} > {threshold}, {x}, tl.log(1.0 + tl.exp({bx})) / {beta})")


def _pow(a: str, b: str, t: Temp) -> str:
    e = _num(b)
    if e is not None:
        small = {0.0: "1.0 + 0.0 * {a}", 1.0: "{a}", 2.0: "{a} * {a}", 3.0: "{a} * {a} * {a}",
                 0.5: "tl.sqrt({a})", -0.5: "tl.rsqrt({a})", -1.0: "1.0 / {a}", -2.0: "1.0 / ({a} * {a})"}
        if e in small:
            return t(small[e].format(a=a))
        if e == 4.0:
            sq = t(f"{a} * {a}")
            return t(f"{sq} * {sq}")
        if e.is_integer():
            mag = t(f"tl.exp({e!r} * tl.log(tl.abs({a})))")
            return t(f"tl.where({a} < 0.0, -{mag}, {mag})") if int(e) % 2 else mag
        return t(f"tl.exp({e!r} * tl.log({a}))")
    mag = t(f"tl.exp({b} * tl.log(tl.abs({a})))")
    whole = t(f"{b} == tl.floor({b})")
    odd = t(f"({b} - 2.0 * tl.floor({b} * 0.5)) == 1.0")
    neg = t(f"tl.where({whole}, tl.where({odd}, -{mag}, {mag}), float('nan'))")
    return t(f"tl.where({b} == 0.0, 1.0, tl.where({a} < 0.0, {neg}, {mag}))")


def _gelu(x: str, t: Temp) -> str:
    return t(f"0.5 * {x} * (1.0 + tl.math.erf({x} * 0.7071067811865476))")


def _gelu_tanh(x: str, t: Temp) -> str:
    inner = t(f"1.5957691216057308 * ({x} + 0.044715 * {x} * {x} * {x})")
    return t(f"{x} * tl.sigmoid({inner})")


_UNARY: dict[str, str] = {
    "relu": "tl.maximum({x}, 0.0)",
    "relu6": "tl.minimum(tl.maximum({x}, 0.0), 6.0)",
    "sigmoid": "tl.sigmoid({x})",
    "exp": "tl.exp({x})",
    "exp2": "tl.exp2({x})",
    "expm1": "tl.exp({x}) - 1.0",
    "log": "tl.log({x})",
    "log2": "tl.log2({x})",
    "log10": "tl.log({x}) * 0.4342944819032518",
    "log1p": "tl.log(1.0 + {x})",
    "sqrt": "tl.sqrt({x})",
    "rsqrt": "tl.rsqrt({x})",
    "abs": "tl.abs({x})",
    "neg": "-{x}",
    "sin": "tl.sin({x})",
    "cos": "tl.cos({x})",
    "erf": "tl.math.erf({x})",
    "floor": "tl.floor({x})",
    "ceil": "tl.ceil({x})",
    "square": "{x} * {x}",
    "reciprocal": "1.0 / {x}",
    "sign": "tl.where({x} > 0.0, 1.0, tl.where({x} < 0.0, -1.0, 0.0 * {x}))",
    "silu": "{x} * tl.sigmoid({x})",
    "softsign": "{x} / (1.0 + tl.abs({x}))",
    "hardsigmoid": "tl.minimum(tl.maximum({x} + 3.0, 0.0), 6.0) / 6.0",
    "hardswish": "{x} * tl.minimum(tl.maximum({x} + 3.0, 0.0), 6.0) / 6.0",
    "selu": f"{SELU_SCALE!r} * tl.where({{x}} > 0.0, {{x}}, {SELU_ALPHA!r} * (tl.exp({{x}}) - 1.0))",
    "logical_not": "tl.where({x} != 0.0, 0.0, 1.0)",
    "tanhshrink": "{x} - (2.0 * tl.sigmoid(2.0 * {x}) - 1.0)",
}

_BINARY: dict[str, str] = {
    "add": "{a} + {b}",
    "sub": "{a} - {b}",
    "mul": "{a} * {b}",
    "div": "{a} / {b}",
    "maximum": "tl.maximum({a}, {b})",
    "minimum": "tl.minimum({a}, {b})",
    "gt": "tl.where({a} > {b}, 1.0, 0.0)",
    "lt": "tl.where({a} < {b}, 1.0, 0.0)",
    "ge": "tl.where({a} >= {b}, 1.0, 0.0)",
    "le": "tl.where({a} <= {b}, 1.0, 0.0)",
    "eq": "tl.where({a} == {b}, 1.0, 0.0)",
    "ne": "tl.where({a} != {b}, 1.0, 0.0)",
    "logical_and": "tl.where(({a} != 0.0) & ({b} != 0.0), 1.0, 0.0)",
    "logical_or": "tl.where(({a} != 0.0) | ({b} != 0.0), 1.0, 0.0)",
    "xlogy": "tl.where({a} == 0.0, 0.0 * {b}, {a} * tl.log({b}))",
}

# op: number of operands (the input first, then the settings: numbers or scalar attributes)
ARITY: dict[str, int] = {**{k: 1 for k in _UNARY}, **{k: 2 for k in _BINARY},
                         "tanh": 1, "gelu": 1, "gelu_tanh": 1, "mish": 1, "logsigmoid": 1,
                         "leaky_relu": 2, "elu": 2, "celu": 2, "clamp_min": 2, "clamp_max": 2, "pow": 2,
                         "softplus": 3, "hardtanh": 3, "threshold": 3, "where": 3, "identity": 1}
BOOL_OPS = {"gt", "lt", "ge", "le", "eq", "ne", "logical_and", "logical_or", "logical_not"}


def emit(op: str, args: list[str], t: Temp) -> str:
    """The Triton expression of ``op(*args)``, bound to a temporary name."""
    if op not in ARITY:
        raise KeyError(op)
    if len(args) != ARITY[op]:
        raise ValueError(f"{op} takes {ARITY[op]} operands, not {len(args)}")
    if op in _UNARY:
        return t(_UNARY[op].format(x=args[0]))
    if op in _BINARY:
        return t(_BINARY[op].format(a=args[0], b=args[1]))
    x = args[0]
    if op == "identity":
        return x
    if op == "tanh":
        return t(_tanh(x))
    if op == "gelu":
        return _gelu(x, t)
    if op == "gelu_tanh":
        return _gelu_tanh(x, t)
    if op == "mish":
        sp = _softplus(x, "1.0", "20.0", t)
        return t(f"{x} * {_tanh(sp)}")
    if op == "logsigmoid":
        return t(f"tl.minimum({x}, 0.0) - tl.log(1.0 + tl.exp(-tl.abs({x})))")
    if op == "leaky_relu":
        return t(f"tl.where({x} > 0.0, {x}, {x} * {args[1]})")
    if op == "elu":
        return t(f"tl.where({x} > 0.0, {x}, {args[1]} * (tl.exp({x}) - 1.0))")
    if op == "celu":
        return t(f"tl.where({x} > 0.0, {x}, {args[1]} * (tl.exp({x} / {args[1]}) - 1.0))")
    if op == "clamp_min":
        return t(f"tl.maximum({x}, {args[1]})")
    if op == "clamp_max":
        return t(f"tl.minimum({x}, {args[1]})")
    if op == "pow":
        return _pow(x, args[1], t)
    if op == "softplus":
        return _softplus(x, args[1], args[2], t)
    if op == "hardtanh":
        return t(f"tl.minimum(tl.maximum({x}, {args[1]}), {args[2]})")
    if op == "threshold":
        return t(f"tl.where({x} > {args[1]}, {x}, {args[2]} + 0.0 * {x})")
    if op == "where":
        return t(f"tl.where({x} != 0.0, {args[1]}, {args[2]})")
    raise KeyError(op)
