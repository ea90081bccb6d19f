"""The project files a kernel uses, as read-only context for the agents.

A kernel that includes ``"rownorm.cuh"`` or imports ``from .helpers import
chunk_sum`` cannot be optimized blind to them: the agents see those files, in
full while they fit, after the task card. They are read-only: candidates
change the kernel's own file only (markers go there), and the prompt says so.

* CUDA: the quoted ``#include``s of the kernel, resolved on the build's include
  path (``stark_lsp.project_build.settings``), and theirs in turn, while they are in
  the project's folders; then the other translation units the harness names.
* Python: the modules the kernel imports from its folder or its package
  (``import mycfg``, ``from .config import EPS``, ``from ..util import f``).

Pure apart from reading those files; ``budget_chars`` bounds the text.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
MAX_FILE_BYTES = 256 << 10


def project_context(task: object, source: str, budget_chars: int) -> str:
    """A '## Project files' block, or '' when the kernel uses none (or none fits)."""
    try:
        files = cuda_files(task, source) if getattr(task, "kind", "") == "cuda" else python_files(task, source)
    except Exception:  # noqa: BLE001 - context is a help, never a reason to fail an attempt
        return ""
    if not files or budget_chars <= 200:
        return ""
    kernel_dir = Path(getattr(task, "path")).resolve().parent
    head = ("## Project files the kernel uses (read-only: candidates change only the kernel's own file; "
            "they may rely on what these declare)\n")
    parts, used, left_out = [head], len(head), []
    lang = "cuda" if getattr(task, "kind", "") == "cuda" else "python"
    for f in files:
        try:
            text = f.read_text(encoding="utf-8", errors="replace") if f.stat().st_size <= MAX_FILE_BYTES else ""
        except OSError:
            continue
        name = os.path.relpath(f, kernel_dir)
        block = f"### {name}\n```{lang}\n{text.rstrip()}\n```\n"
        if not text or used + len(block) > budget_chars:
            left_out.append(name)
            continue
        parts.append(block)
        used += len(block)
    if left_out:
        parts.append(f"(Not shown, over the context budget: {', '.join(left_out)}.)\n")
    return "".join(parts) if len(parts) > 1 else ""


def cuda_files(task: object, source: str) -> list[Path]:
    from stark_lsp.project_build.settings import resolve

    settings = resolve(Path(getattr(task, "path")), getattr(task, "harness", None))
    roots = [r.rstrip("/") + "/" for r in settings.roots]
    seen: list[Path] = []

    def visit(text: str, here: Path | None, depth: int) -> None:
        for inc in _INCLUDE.findall(text):
            dirs = ([here] if here is not None else []) + [Path(d) for d in settings.include_dirs]
            for d in dirs:
                p = (d / inc).resolve()
                if p.is_file():
                    if p not in seen and any(str(p).startswith(r) for r in roots):
                        seen.append(p)
                        if depth < 4:
                            try:
                                visit(p.read_text(encoding="utf-8", errors="replace"), p.parent, depth + 1)
                            except OSError:
                                pass
                    break

    visit(source, None, 0)  # the candidate is compiled elsewhere: its quotes resolve on the include path
    return seen + [Path(s) for s in settings.sources if Path(s) not in seen]


def python_files(task: object, source: str) -> list[Path]:
    from stark_lsp.project_build.python_paths import module_place

    kernel = Path(getattr(task, "path")).resolve()
    place = module_place(kernel)
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    pkg_parts = place.package.split(".") if place.package else []
    found: list[Path] = []

    def add(base: Path, dotted: str) -> None:
        p = base.joinpath(*dotted.split(".")) if dotted else base
        for cand in (p.with_suffix(".py"), p / "__init__.py"):
            if cand.is_file() and cand.resolve() != kernel and cand.resolve() not in found:
                found.append(cand.resolve())
                return

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                add(Path(place.folder), a.name)
                if place.package:
                    add(Path(place.root), a.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                up = len(pkg_parts) - (node.level - 1)
                if up < 0 or not place.package:
                    continue
                base = Path(place.root).joinpath(*pkg_parts[:up])
            else:
                base = Path(place.folder)
            mod = node.module or ""
            add(base, mod)
            for a in node.names:  # ``from . import helpers``: the names may be modules
                add(base, f"{mod}.{a.name}" if mod else a.name)
            if not node.level and place.package:
                add(Path(place.root), mod)
    return [f for f in found if f.name != "__init__.py" or f.stat().st_size > 0]
