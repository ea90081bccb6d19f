"""The packages of stark_lsp import one another one way only (issue 26): no cycle between them.

Reads the imports (absolute and relative ones, at any depth of a module, lazy ones included, and
``importlib.import_module`` of a name written out) from the source;
a cycle fails with the import lines that make it."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "stark_lsp"


GROUND = "(ground floor)"  # the modules directly under stark_lsp/ but the entry points
ENTRY = {"cli.py", "__main__.py"}


def imported(path: Path) -> list[tuple[list[str], int]]:
    """Every stark_lsp module ``path`` imports (absolute or relative, at any depth; ``from stark_lsp import
    search`` and ``from .. import search`` name the package itself): its dotted parts."""
    here = ["stark_lsp", *path.relative_to(PKG).with_suffix("").parts]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module.split(".") if node.module else []
            else:  # from .x / ..x import: resolved
                up = here[:-node.level] if path.name != "__init__.py" else here[:len(here) - node.level]
                base = up + (node.module.split(".") if node.module else [])
            out.append((base, node.lineno))
            if base == ["stark_lsp"]:  # from stark_lsp import search: each name may be a package or module
                out += [([*base, a.name], node.lineno) for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(a.name.split("."), node.lineno) for a in node.names]
        elif _import_module_call(node):  # importlib.import_module("stark_lsp.agents.team"): a lazy import too
            out.append((node.args[0].value.split("."), node.lineno))
    return [(bits, line) for bits, line in out if bits[0] == "stark_lsp" and len(bits) > 1]


def _import_module_call(node: ast.AST) -> bool:
    """``importlib.import_module("stark_lsp....")`` (or ``import_module(...)``) with the module's name written out."""
    if not isinstance(node, ast.Call) or not node.args:
        return False
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    arg = node.args[0]
    return name == "import_module" and isinstance(arg, ast.Constant) and isinstance(arg.value, str)


def package_graph() -> tuple[dict[str, set[str]], dict[tuple[str, str], list[str]]]:
    """Edges between the packages (and the ground floor), with where each comes from."""
    edges: dict[str, set[str]] = defaultdict(set)
    where: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in PKG.rglob("*.py"):
        parts = path.relative_to(PKG).parts
        if len(parts) < 2 and parts[0] in ENTRY:
            continue  # the entry points stand on everything
        pkg = parts[0] if len(parts) > 1 else GROUND
        for bits, line in imported(path):
            target = bits[1] if (PKG / bits[1]).is_dir() else GROUND
            if target != pkg:
                edges[pkg].add(target)
                where[(pkg, target)].append(f"{path.relative_to(PKG.parent)}:{line}")
    return edges, where


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_between_packages():
    edges, where = package_graph()
    found = cycles(edges)
    detail = []
    for comp in found:
        for a in comp:
            for b in comp:
                if b in edges.get(a, ()):
                    detail.append(f"{a} -> {b}: {', '.join(where[(a, b)][:3])}")
    assert not found, "package cycles:\n" + "\n".join(detail)


def test_the_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_ground_floor_imports_no_package():
    """speedups.py, redaction.py, source_digest.py, ...: everything may import them, they import no package."""
    edges, where = package_graph()
    up = sorted(edges.get(GROUND, ()))
    assert not up, "the ground floor imports " + "; ".join(f"{t}: {', '.join(where[(GROUND, t)][:3])}" for t in up)


def test_relative_imports_are_followed():
    """``from .excerpts import`` in search/windows.py is search.excerpts; ``from ..node`` in a policy is search.node."""
    assert ["stark_lsp", "search", "excerpts"] in [b for b, _ in imported(PKG / "search" / "windows.py")]
    assert ["stark_lsp", "search", "node"] in [b for b, _ in imported(PKG / "search" / "policies" / "greedy.py")]


def test_a_package_imported_by_name_from_the_top_counts(tmp_path):
    import shutil

    copy = tmp_path / "stark_lsp"
    (copy / "a").mkdir(parents=True)
    (copy / "b").mkdir()
    (copy / "a" / "x.py").write_text("from stark_lsp import b\n")
    (copy / "b" / "y.py").write_text("from .. import a\n")
    global PKG
    kept = PKG
    try:
        PKG = copy
        assert imported(copy / "a" / "x.py")[-1][0] == ["stark_lsp", "b"]
        assert imported(copy / "b" / "y.py")[-1][0] == ["stark_lsp", "a"]
        assert ["a", "b"] in [sorted(c) for c in cycles(package_graph()[0])]
    finally:
        PKG = kept
    shutil.rmtree(copy)


def test_an_import_module_call_with_the_name_written_out_counts(tmp_path):
    """``importlib.import_module("stark_lsp.agents.team")`` (server/backend.py's lazy import) is an edge too,
    and so are relative imports from a sub-package (``from ... import b``, ``from ...b import y``)."""
    import shutil

    copy = tmp_path / "stark_lsp"
    for rel, text in {"a/x.py": "import importlib\nimportlib.import_module('stark_lsp.b.z')\n",
                      "b/z.py": "from stark_lsp.c import w\n",
                      "c/sub/w.py": "from ... import a\n",
                      "d/sub/v.py": "from ...a.x import f\n", "a/y.py": "from stark_lsp.d.sub import v\n"}.items():
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        (copy / rel).write_text(text)
    global PKG
    kept = PKG
    try:
        PKG = copy
        assert imported(copy / "a" / "x.py")[-1][0] == ["stark_lsp", "b", "z"]
        assert [sorted(c) for c in cycles(package_graph()[0])] == [["a", "b", "c", "d"]]
    finally:
        PKG = kept
    shutil.rmtree(copy)
