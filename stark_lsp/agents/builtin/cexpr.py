"""Evaluate small integer expressions from C launch configurations.

``eval_int("BX * BY", {"BX": 8, "BY": 2}) == 16``. Only integer literals,
known names, ``+ - * / %``, shifts and parentheses; ``/`` is integer division.
Anything else (casts, calls, unknown names) gives None.
"""

from __future__ import annotations

import ast
import re

_SUFFIX = re.compile(r"\b(\d+)[uUlL]+\b")


def eval_int(expr: str, names: dict[str, int]) -> int | None:
    text = _SUFFIX.sub(r"\1", expr.strip())
    if not text:
        return None
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return None
    try:
        return _eval(tree.body, names)
    except (KeyError, ValueError, ZeroDivisionError, TypeError):
        return None


def _eval(node: ast.AST, names: dict[str, int]) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        return names[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval(node.operand, names)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left, names), _eval(node.right, names)
        op = node.op
        if isinstance(op, ast.Add):
            return a + b
        if isinstance(op, ast.Sub):
            return a - b
        if isinstance(op, ast.Mult):
            return a * b
        if isinstance(op, (ast.Div, ast.FloorDiv)):
            return int(a / b)  # C truncation
        if isinstance(op, ast.Mod):
            return a % b
        if isinstance(op, ast.LShift):
            return a << b
        if isinstance(op, ast.RShift):
            return a >> b
    raise ValueError("unsupported expression")


def names_in(expr: str) -> set[str]:
    return set(re.findall(r"\b[A-Za-z_]\w*\b", expr))
