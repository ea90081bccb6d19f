"""Which tasks cannot run at all without an NVIDIA GPU: the one rule the server (its refusal and its
disabled "Optimize"), the CLI (its refusals) and the evaluator (its "not run") share; each surface
says it in its own words. Pure text: no torch."""

from __future__ import annotations

import ast
import re
from typing import Any

CUDA, LOAD_INLINE = "cuda", "load_inline"
_BUILDS_CUDA = re.compile(r"\b(load_inline|cpp_extension)\b")  # named at all: then the syntax tree decides


def builds_cuda_inline(source: str) -> bool:
    """The Python source builds CUDA itself: its code uses ``torch.utils.cpp_extension.load_inline`` or ``load``
    beyond importing it (calls it, or passes it on), by any name an import gave it. A comment or a string that
    names it does not count, nor an import never used (before session 31's review a Python candidate whose
    docstring said "no load_inline" was not run on the CPU, and got 300 s more for its load on a GPU; an unused
    import did so until session 32). The module ``cpp_extension`` itself used as a value (another name bound to
    it, ``getattr`` on it, ``importlib.import_module`` of it) counts too: where the code goes then is not read,
    and an honest build reached that way lost its build time (session 32's review). A source Python cannot
    parse is read as tokens, and one it cannot tokenize whole, as before."""
    if _BUILDS_CUDA.search(source) is None:
        return False
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return _BUILDS_CUDA.search(_code_only(source)) is not None
    return _uses_a_build(tree)


_BUILD_FUNCTIONS = ("load_inline", "load")
_IMPORTERS = ("import_module", "__import__")


def _uses_a_build(tree: ast.AST) -> bool:
    names = {"load_inline"}  # a bare ``load_inline`` (a star import): its own name
    modules = {"cpp_extension"}  # what ``cpp_extension``, or the module holding it, is called here
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[-1] == "cpp_extension":
            names |= {a.asname or a.name for a in node.names if a.name in _BUILD_FUNCTIONS}
            if any(a.name == "*" for a in node.names):
                names |= set(_BUILD_FUNCTIONS)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules |= {a.asname for a in node.names if a.name.split(".")[-1] == "cpp_extension" and a.asname}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in names:
            return True
        if _runs_text_naming_a_build(node):
            return True
        if isinstance(node, ast.Attribute) and node.attr == "load_inline":
            return True
        if _is_the_module(node, modules):
            up = parents.get(node)
            if not (isinstance(up, ast.Attribute) and up.value is node):
                return True  # the module itself as a value: bound to another name, passed on, getattr'd
            if up.attr in _BUILD_FUNCTIONS:
                return True
    return False


def _runs_text_naming_a_build(node: ast.AST) -> bool:
    """``exec``, ``eval`` or ``compile`` of text that names the API: the code it runs is not read here."""
    if not (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in _RUNNERS):
        return False
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) and _BUILDS_CUDA.search(n.value)
               for arg in node.args for n in ast.walk(arg))


_RUNNERS = ("exec", "eval", "compile")


def _is_the_module(node: ast.AST, modules: set[str]) -> bool:
    """``node`` is ``cpp_extension`` as code reaches it: a name an import gave it, ``<...>.cpp_extension``, or
    ``importlib.import_module("torch.utils.cpp_extension")`` (``__import__`` alike)."""
    if isinstance(node, ast.Name):
        return isinstance(node.ctx, ast.Load) and node.id in modules
    if isinstance(node, ast.Attribute):
        return isinstance(node.ctx, ast.Load) and node.attr == "cpp_extension"
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        fn = node.func
        called = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", None)
        arg = node.args[0].value
        return called in _IMPORTERS and isinstance(arg, str) and arg.split(".")[-1] == "cpp_extension"
    return False


def _code_only(source: str) -> str:
    """The source's tokens without its comments and string literals (f-strings' pieces included)."""
    import io
    import tokenize

    skip = {tokenize.COMMENT, tokenize.STRING}
    skip |= {getattr(tokenize, n) for n in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END") if hasattr(tokenize, n)}
    lines = [list(line) for line in io.StringIO(source).readlines()]  # the lines tokenize reads
    try:
        for t in tokenize.generate_tokens(io.StringIO(source).readline):
            if t.type not in skip:
                continue
            (r0, c0), (r1, c1) = t.start, t.end
            for r in range(r0 - 1, r1):  # blanked where it stands: the code around it keeps its shape
                line = lines[r]
                for c in range(c0 if r == r0 - 1 else 0, c1 if r == r1 - 1 else len(line)):
                    if line[c] != "\n":
                        line[c] = " "
    except (tokenize.TokenError, SyntaxError, ValueError, IndexError):
        return source
    return "".join("".join(line) for line in lines)


def gpu_need(task: Any) -> str | None:
    """Why nothing of the task can run without a GPU: ``"cuda"`` (a CUDA source), ``"load_inline"`` (a
    KernelBench file whose own ModelNew builds CUDA), or None. A file that cannot be read: None (reading
    it fails elsewhere, with its own message)."""
    if task.kind == "cuda":
        return CUDA
    if task.kind == "kernelbench":
        try:
            text = task.root_source()
        except OSError:
            return None
        if builds_cuda_inline(text):
            return LOAD_INLINE
    return None
