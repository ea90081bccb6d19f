"""Reading a KernelBench model's source with ``ast``: the pieces both readers
(``kb_forward`` for single operations, ``fusion.reader`` for whole forwards) use.

Nothing here imports or runs the model.
"""

from __future__ import annotations

import ast
import copy

LIBRARY_ROOTS = {"torch", "F", "nn", "functional"}  # torch.relu, F.relu, torch.nn.functional.relu, ...


class NotRecognized(ValueError):
    """The model is not one the built-in team can write in Triton; the message says why."""


def model_methods(source: str) -> dict[str, ast.FunctionDef]:
    """The methods of ``class Model`` (``forward`` among them), else NotRecognized saying why."""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise NotRecognized(f"the file does not parse: {e}") from e
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    if model is None:
        raise NotRecognized("no class Model")
    methods = {n.name: n for n in model.body if isinstance(n, ast.FunctionDef)}
    if "forward" not in methods:
        raise NotRecognized("Model has no forward")
    return methods


def dotted(node: ast.expr) -> str:
    """``torch.nn.functional.relu`` for that attribute chain; '' for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def library_function(func: ast.expr) -> str:
    """'relu' for ``torch.relu`` / ``F.relu`` / ``torch.nn.functional.relu``; '' otherwise."""
    name = dotted(func)
    root, _, last = name.rpartition(".")
    return last if root and root.split(".")[0] in LIBRARY_ROOTS else ""


def self_attribute(node: ast.expr, attrs: dict[str, ast.expr]) -> str | None:
    """``"self.alpha"`` when ``node`` is an attribute set in ``__init__``, else None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self" \
            and node.attr in attrs:
        return f"self.{node.attr}"
    return None


def module_class(attrs: dict[str, ast.expr], name: str) -> str:
    """``"LayerNorm"`` when ``__init__`` has ``self.<name> = nn.LayerNorm(...)``; '' if not a constructor call."""
    built = attrs.get(name)
    return dotted(built.func).rpartition(".")[2] if isinstance(built, ast.Call) else ""


class Unsupported(NotRecognized):
    """An operation with a template of its own, in a variant the template does not cover (an
    attention mask, label smoothing, ...): its reason is the one to give when nothing else fits."""


def returned_expression(forward: ast.FunctionDef) -> ast.expr:
    """``forward``'s returned expression with its local assignments written in (``s = q @ k.mT``,
    ``return s.softmax(-1) @ v`` reads as ``(q @ k.mT).softmax(-1) @ v``); NotRecognized when the body
    has anything but ``name = ...`` assignments and one final ``return``."""
    body = [s for s in forward.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
        raise NotRecognized("forward does not end in a return of a value")
    env: dict[str, ast.expr] = {}
    for stmt in body[:-1]:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            target, value = stmt.target, stmt.value
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            target, value = stmt.targets[0], stmt.value
        else:
            raise NotRecognized("forward is not a straight line of single-name assignments")
        env[target.id] = _written_in(value, env)
    return _written_in(body[-1].value, env)


def _written_in(node: ast.expr, env: dict[str, ast.expr]) -> ast.expr:
    class _Sub(ast.NodeTransformer):
        def visit_Name(self, n: ast.Name) -> ast.expr:
            return copy.deepcopy(env[n.id]) if n.id in env and isinstance(n.ctx, ast.Load) else n

    return _Sub().visit(copy.deepcopy(node))
