"""Whether a CUDA kernel's launchers can be called as its harness calls them, without running anything.

Checked before anything is built or run (``bench/checks.py``: ``stark eval``,
``--compile-only`` included, ``stark bench`` and ``stark optimize``), so a
launcher the evaluation could never call is refused up front: a parameter of
a type Python cannot pass (``int2``, a reference), or a harness whose ``run``
calls ``lib.name(...)`` with another number of arguments than the launcher
takes. ``problems`` gives each with the message the evaluation would give,
from the source's ``extern "C"`` functions (``candidate/cuda_library.py``'s
parser: the rules the candidate process binds them by) and the harness's
syntax tree. Pure: no torch, no GPU, no candidate code run.
"""

from __future__ import annotations

import ast

from stark_lsp.evaluate.candidate.cuda_library import SignatureError, parse_launchers


def problems(source: str, harness_source: str | None) -> list[str]:
    """What would stop the harness from calling the source's launchers ([] when nothing does)."""
    try:
        launchers = parse_launchers(source)
    except SignatureError as e:
        return [f"a launcher cannot be called from Python: {e}"]
    if not harness_source:
        return []
    try:
        tree = ast.parse(harness_source)
    except SyntaxError:
        return []  # the harness's own syntax error is reported when it is loaded
    out: list[str] = []
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "run"):
        if not fn.args.args:
            continue
        lib = fn.args.args[0].arg
        for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
            f = call.func
            if not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == lib):
                continue
            where = f"the harness's line {call.lineno}"
            launcher = launchers.get(f.attr)
            if launcher is None:
                continue  # a launcher the source lacks: bench/checks.py says so
            if any(isinstance(a, ast.Starred) for a in call.args) or call.keywords:
                continue  # counted only when it runs
            n, want = len(call.args), len(launcher.params)
            stream_last = bool(launcher.params) and launcher.params[-1].stream  # may be left out: the current one
            if n != want and not (stream_last and n == want - 1):
                params = ", ".join(p.name for p in launcher.params)
                out.append(f"{where}: {f.attr} takes {want} arguments ({params}), got {n}")
    return out
