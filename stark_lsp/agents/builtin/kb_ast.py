"""Reading a KernelBench model's source with ``ast``: the pieces both readers
(``kb_forward`` for single operations, ``fusion.reader`` for whole forwards) use.

Nothing here imports or runs the model.
"""

from __future__ import annotations

import ast

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
