"""torch.compile's written-out code without ``torch._inductor``: what its imports cost a candidate.

Inductor's module imports its runtime helpers (``torch._inductor.runtime.triton_helpers``, which
brings ``libdevice`` and Triton's ``math``) and its namespace of library calls
(``torch._inductor.select_algorithm.extern_kernels``). Importing ``torch._inductor`` takes over a
second in a fresh process (1.3 s here, and the load of every candidate written from
torch.compile's code took 3.4-5.4 s on the H200 with four searches sharing the machine:
docs/benchmarks.md), and every candidate is a fresh process. So the seed
(``inductor_seed.py``) is written without it where that changes nothing:

* ``libdevice`` and ``tl_math`` are imported from Triton itself (what Inductor's
  ``triton_compat`` re-exports, Triton 3 on);
* the few ``triton_helpers`` functions the kernels call are copied in from the installed
  torch's own ``triton_helpers.py`` (read as text, never imported), with the helpers they call,
  renamed ``triton_helpers_<name>``; only when that is the very torch whose compile wrote the code,
  and only plain ``@triton.jit`` functions that use nothing but Triton, each other and builtins;
* ``extern_kernels`` becomes a namespace of the torch functions Inductor registers under those
  names (``mm`` is ``torch.mm``, ``convolution`` is ``torch.convolution``...), for the names in
  ``EXTERN`` only.

Whatever falls outside keeps Inductor's own import line. Pure: text in, text out.
"""

from __future__ import annotations

import ast
import builtins
import copy
import importlib.util
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Inductor's extern_kernels names -> the torch function each is (torch/_inductor/kernel/*.py register them)
EXTERN = {"mm": "torch.mm", "addmm": "torch.addmm", "bmm": "torch.bmm", "baddbmm": "torch.baddbmm",
          "convolution": "torch.convolution"}
EXTERN_IMPORT = "from torch._inductor.select_algorithm import extern_kernels"
INDUCTOR_KERNEL_IMPORTS = ["from torch._inductor.runtime import triton_helpers",
                           "from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math"]
TRITON_KERNEL_IMPORTS = ["from triton.language.extra import libdevice", "from triton.language import math as tl_math"]
HELPER_PREFIX = "triton_helpers_"
_HELPER_REF = re.compile(r"\btriton_helpers\.(\w+)\b")
_EXTERN_REF = re.compile(r"\bextern_kernels\.(\w+)\b")
# the module-level names a copied helper may use: Triton's, as the seed imports them (``math`` is Triton's math)
_ALLOWED = {"tl", "triton", "libdevice", "math"}
_BUILTINS = set(dir(builtins))
MAX_HELPERS = 40


@dataclass
class Imports:
    """What the seed imports and defines in place of Inductor's imports."""

    kernel_imports: list[str]
    header: list[str]
    definitions: list[str] = field(default_factory=list)
    kernels: list[str] = field(default_factory=list)  # the kernels' bodies, helper calls renamed


def without_inductor(compiled: dict[str, Any], kernels: list[str], body: list[str], header: list[str]) -> Imports:
    """The imports, definitions and kernel bodies of a seed, with as little of ``torch._inductor``
    as the code allows (Inductor's own lines where anything is not covered)."""
    out = Imports(kernel_imports=list(INDUCTOR_KERNEL_IMPORTS), header=list(header), kernels=list(kernels))
    used_body = "\n".join(body)
    if EXTERN_IMPORT in out.header:
        names = sorted(set(_EXTERN_REF.findall(used_body)))
        if names and all(n in EXTERN for n in names):
            out.header.remove(EXTERN_IMPORT)
            out.definitions.append(_extern_namespace(names))
    if not _triton_3(compiled.get("triton")):
        return out
    wanted = sorted({n for k in kernels for n in _HELPER_REF.findall(k)})
    helpers = _helpers(wanted, compiled.get("torch")) if wanted else []
    if helpers is None:
        return out
    out.kernel_imports = list(TRITON_KERNEL_IMPORTS)
    out.definitions = helpers + out.definitions
    out.kernels = [_HELPER_REF.sub(lambda m: HELPER_PREFIX + m.group(1), k) for k in kernels]
    return out


def _extern_namespace(names: list[str]) -> str:
    lines = ["class extern_kernels:",
             '    """The library calls of Inductor\'s code, by its names: the torch functions they are."""', ""]
    lines += [f"    {n} = {EXTERN[n]}" for n in names]
    return "\n".join(lines)


def _triton_3(version: Any) -> bool:
    m = re.match(r"(\d+)\.", str(version or ""))
    return bool(m) and int(m.group(1)) >= 3


def _torch_dir() -> Path | None:
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    locations = list(getattr(spec, "submodule_search_locations", None) or [])
    return Path(locations[0]) if locations else None


def installed_torch_version() -> str | None:
    """The installed torch's version, read from its ``version.py`` (torch is not imported)."""
    d = _torch_dir()
    try:
        text = (d / "version.py").read_text() if d else ""
    except OSError:
        return None
    m = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
    return m.group(1) if m else None


def _helpers(wanted: list[str], torch_version: Any) -> list[str] | None:
    """The helper functions ``wanted`` and those they call, renamed, from the installed torch's
    ``triton_helpers.py``; None when that is not the torch that wrote the code, or a helper is
    not a plain ``@triton.jit`` function of Triton, builtins and other helpers alone."""
    d = _torch_dir()
    if d is None or not torch_version or installed_torch_version() != str(torch_version):
        return None
    try:
        tree = ast.parse((d / "_inductor" / "runtime" / "triton_helpers.py").read_text())
    except (OSError, SyntaxError, ValueError):
        return None
    jit = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef) and n.decorator_list
           and all(_is_triton_jit(x) for x in n.decorator_list)}
    need: list[str] = []
    todo = list(wanted)
    while todo:
        name = todo.pop()
        if name in need:
            continue
        if name not in jit or len(need) >= MAX_HELPERS:
            return None
        need.append(name)
        for ref in _globals(jit[name]):
            if ref in jit:
                todo.append(ref)
            elif ref not in _ALLOWED and ref not in _BUILTINS:
                return None
    renames = {n: HELPER_PREFIX + n for n in need} | {"math": "tl_math"}
    if any(_locals(jit[n]) & set(renames) for n in need):
        return None  # a name of its own that a rename would change: not copied
    return [ast.unparse(_Rename(renames).visit(copy.deepcopy(jit[n]))) for n in jit if n in need]


def _is_triton_jit(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    return (isinstance(target, ast.Attribute) and target.attr == "jit" and isinstance(target.value, ast.Name)
            and target.value.id == "triton")


def _locals(fn: ast.FunctionDef) -> set[str]:
    local = {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}
    local |= {x.arg for x in (fn.args.vararg, fn.args.kwarg) if x is not None}
    return local | {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}


def _globals(fn: ast.FunctionDef) -> set[str]:
    """The names ``fn`` reads that are not its own (arguments, assignments, loop targets)."""
    local = {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}
    local |= {x.arg for x in (fn.args.vararg, fn.args.kwarg) if x is not None}
    loaded = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.Name):
            (local if isinstance(n.ctx, (ast.Store, ast.Del)) else loaded).add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.Lambda, ast.ClassDef)) and n is not fn:
            loaded.add("<nested>")  # nothing of the kind is copied
    return loaded - local


class _Rename(ast.NodeTransformer):
    def __init__(self, renames: dict[str, str]):
        self.renames = renames

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.name = self.renames.get(node.name, node.name)
        self.generic_visit(node)
        return node

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id in self.renames and isinstance(node.ctx, ast.Load):
            node.id = self.renames[node.id]
        return node
