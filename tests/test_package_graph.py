"""The packages of stark_lsp import one another one way only (issue 26): no cycle between them.

Reads the imports (absolute ones, at any depth of a module, lazy ones included) from the source;
a cycle fails with the import lines that make it."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "stark_lsp"


def package_graph() -> tuple[dict[str, set[str]], dict[tuple[str, str], list[str]]]:
    edges: dict[str, set[str]] = defaultdict(set)
    where: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in PKG.rglob("*.py"):
        parts = path.relative_to(PKG).parts
        if len(parts) < 2:
            continue  # top-level modules (cli.py, speedups.py, ...) are the ground floor or the entry point
        pkg = parts[0]
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for n in names:
                bits = n.split(".")
                if bits[0] == "stark_lsp" and len(bits) > 1 and bits[1] != pkg and (PKG / bits[1]).is_dir():
                    edges[pkg].add(bits[1])
                    where[(pkg, bits[1])].append(f"{path.relative_to(PKG.parent)}:{node.lineno}")
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
