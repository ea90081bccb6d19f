"""Is a harness filled in? A generated harness (``tasks/harness_template.py``)
leaves ``reference()`` (and, without a launcher, ``get_inputs()`` and
``run()``) raising ``NotImplementedError``: a search against it would judge
every candidate against an exception, so the server says "fill in
reference()" on the kernels and on the harness's own line instead.

Read statically (``ast``): the harness is the user's code and is never
imported here. Pure.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

FUNCTIONS = ("reference", "get_inputs", "run")


@dataclass(frozen=True)
class Unfilled:
    function: str
    line: int  # 0-based line of the ``raise NotImplementedError``
    column: int


def _raises_not_implemented(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.Raise) or stmt.exc is None:
        return False
    exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def unfilled_functions(text: str) -> list[Unfilled]:
    """The top-level harness functions whose body is only ``raise NotImplementedError``
    (after an optional docstring), in file order. A file that does not parse: []."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    out = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or node.name not in FUNCTIONS:
            continue
        body = list(node.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]
        if len(body) == 1 and _raises_not_implemented(body[0]):
            out.append(Unfilled(node.name, body[0].lineno - 1, body[0].col_offset))
    return out


def unfilled_message(harness_name: str, unfilled: list[Unfilled]) -> str:
    names = ", ".join(f"{u.function}()" for u in unfilled)
    return (f"fill in {names} in {harness_name}: {'it still raises' if len(unfilled) == 1 else 'they still raise'} "
            f"NotImplementedError, so there is nothing to check candidates against; no search starts until "
            f"it is written and saved")
