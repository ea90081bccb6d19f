"""A failure the package defines is told by its type, never by its class name's text (issue 26: a class
renamed or a subclass would slip past such a test; ``isinstance`` follows both)."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "stark_lsp"


def own_exceptions() -> set[str]:
    """The names of the classes stark_lsp defines that derive from an exception (by a base named *Error,
    *Exception, *Unavailable, *Failed, ... or from another of them)."""
    bases: dict[str, list[str]] = {}
    for path in PKG.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases[node.name] = [b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else ""
                                    for b in node.bases]
    roots = {"Exception", "BaseException", "RuntimeError", "ValueError", "OSError", "KeyError", "TypeError"}
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, bs in bases.items():
            if name not in found and any(b in roots or b in found for b in bs):
                found.add(name)
                changed = True
    return found


def name_tests(path: Path, names: set[str]) -> list[str]:
    """``type(e).__name__ == "X"`` / ``in ("X", ...)``, ``e.__class__.__name__ == "X"``, where X is one of ``names``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        if not any(isinstance(s, ast.Attribute) and s.attr == "__name__" for s in sides):
            continue
        texts = {c.value for s in sides for c in ast.walk(s) if isinstance(c, ast.Constant) and isinstance(c.value, str)}
        if texts & names:
            out.append(f"{path.relative_to(PKG.parent)}:{node.lineno}: {sorted(texts & names)}")
    return out


def test_own_failures_are_caught_by_type_not_by_name():
    names = own_exceptions()
    assert {"EvaluatorUnavailable", "WorkerStartError", "TaskBroken", "BackendUnavailable"} <= names
    found = [hit for path in sorted(PKG.rglob("*.py")) for hit in name_tests(path, names)]
    assert not found, found


def test_the_finder_sees_a_name_test(tmp_path):
    f = tmp_path / "x.py"
    f.write_text('try:\n    pass\nexcept Exception as e:\n    if type(e).__name__ == "WorkerStartError":\n        pass\n'
                 'ok = type(e).__name__ in ("OutOfMemoryError",)\n')
    global PKG
    kept, PKG = PKG, tmp_path
    try:
        (hit,) = name_tests(f, {"WorkerStartError"})
        assert hit.endswith("x.py:4: ['WorkerStartError']"), hit
    finally:
        PKG = kept
