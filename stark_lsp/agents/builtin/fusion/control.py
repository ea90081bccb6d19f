"""Host-side conditions of a forward (``if self.use_bias:``, ``if self.training``, ``x if self.flag else y``).

The reader never runs the model, so it cannot know which way such a condition
goes. It reads ``forward`` once per outcome instead: when it meets a
condition it has not decided yet it raises ``Fork`` with the condition's
text; ``reader.read_forward`` then reads again with the condition assumed
true, and again assumed false, and the generated forward tests the condition
on the host before anything else (``assemble.assemble_read``). So a
condition may only use what the forward holds at its start: the model's
attributes, globals of the task file, the inputs (``x is None``) and their
shapes; anything computed by the forward is inlined when it is plain Python
(``b = x.shape[0]``), else refused. A condition on a tensor's values
(``if x.sum() > 0``) is data-dependent control flow: refused.
"""

from __future__ import annotations

import ast
from typing import Callable

from stark_lsp.agents.builtin.kb_ast import NotRecognized

MAX_VARIANTS = 8  # ways through one forward (each is a straight-line program of its own)


class Fork(Exception):
    """The reader met an undecided host condition ``key``: read forward again once per outcome."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def literal_truth(text: str) -> bool | None:
    """The truth of a Python literal (``True``, ``0``, ``None``, ``'a'``), None when it is not one."""
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return bool(value)


def condition_key(text: str) -> tuple[str, bool]:
    """The condition without its leading ``not``s, written one way (the key of an assumption), and
    whether it is taken as is (True) or negated."""
    node = ast.parse(text.strip(), mode="eval").body
    positive = True
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        node, positive = node.operand, not positive
    return ast.unparse(node), positive


def host_condition(text: str, resolve: Callable[[str], str | None]) -> str:
    """``text`` with every name ``resolve`` knows replaced by the Python it stands for (``resolve``
    returns None for a name kept as is, and raises NotRecognized for one that cannot be
    evaluated before forward runs)."""

    class Inline(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.expr:
            replacement = resolve(node.id)
            if replacement is None:
                return node
            return ast.parse(f"({replacement})", mode="eval").body

    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise NotRecognized(f"cannot read the condition {text!r}") from e
    return ast.unparse(Inline().visit(tree))


def assigned_names(stmts: list[ast.stmt]) -> set[str]:
    """Every plain name these statements (and the blocks inside them) assign."""
    out: set[str] = set()
    for stmt in stmts:
        for node in ast.walk(stmt):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)):
                targets = [node.target]
            elif isinstance(node, ast.NamedExpr):
                targets = [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        out.add(n.id)
    return out
