"""The build settings of a CUDA task, merged in one documented order.

Later steps add to or override earlier ones (docs/HARNESS.md, "Projects"):

1. the defaults: ``-O3 -std=c++17``;
2. the kernel's own folder, first on the include path (a candidate is compiled
   elsewhere, so ``#include "common.cuh"`` beside the kernel must be found);
3. the project's ``compile_commands.json`` entry for the kernel
   (``compile_db.py``): include directories, macros, the language standard,
   allowed flags;
4. the harness's ``BUILD`` dict: ``include_dirs`` (searched before those of
   step 3), ``defines`` (a macro defined again replaces the earlier value),
   ``flags`` (appended), ``sources`` (other translation units linked with the
   kernel), ``compile_commands`` (another file, or ``False`` to ignore it);
5. the caller's flags (``--nvcc-flag``, ``EvalOptions.nvcc_flags``);
6. the candidate's own ``// stark-nvcc-flags:`` line (checked by ``cuda_build``).

Pure: reads the harness as text (``ast``; it is never imported here) and the
compile database.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stark_lsp.project_build import compile_db

DEFAULT_FLAGS = ("-O3", "-std=c++17")
SOURCE_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c")


class BuildSettingsError(ValueError):
    """A harness ``BUILD`` or compile database that cannot be used; the message says what to fix."""


@dataclass
class BuildSettings:
    """Everything about a build except the candidate's source."""

    kernel_dir: str = ""
    include_dirs: list[str] = field(default_factory=list)  # absolute; kernel_dir first
    system_include_dirs: list[str] = field(default_factory=list)
    defines: list[str] = field(default_factory=list)  # NAME, NAME=VALUE, -UNAME
    flags: list[str] = field(default_factory=lambda: list(DEFAULT_FLAGS))
    sources: list[str] = field(default_factory=list)  # other translation units, absolute
    roots: list[str] = field(default_factory=list)  # folders the build may read (shown read-only in the sandbox)
    compile_commands: str | None = None  # the file used, if any
    notes: list[str] = field(default_factory=list)  # what was ignored, for the build report

    def nvcc_args(self) -> list[str]:
        """The flags, macros and include directories as nvcc arguments, in order."""
        out = list(self.flags)
        for d in self.defines:
            out.append(d if d.startswith("-U") else "-D" + d)
        out += ["-I" + d for d in self.include_dirs]
        for d in self.system_include_dirs:
            out += ["-isystem", d]
        return out

def single_file(kernel: Path | None) -> BuildSettings:
    """The settings of a kernel without a harness or project: defaults and its folder."""
    if kernel is None:
        return BuildSettings()
    d = str(Path(kernel).resolve().parent)
    return BuildSettings(kernel_dir=d, include_dirs=[d], roots=[d])


def resolve(kernel: Path, harness: Path | None = None) -> BuildSettings:
    """The merged settings of ``kernel`` (steps 1-4 of the module docstring)."""
    kernel = Path(kernel).resolve()
    s = single_file(kernel)
    build = read_harness_build(harness) if harness is not None else {}
    base = Path(harness).resolve().parent if harness is not None else kernel.parent

    db_path: Path | None
    named = build.get("compile_commands")
    if named is False:
        db_path = None
    elif isinstance(named, str):
        db_path = (base / named).resolve()
        if not db_path.is_file():
            raise BuildSettingsError(f"BUILD['compile_commands'] names {named}, which does not exist")
    else:
        db_path = compile_db.find(kernel.parent)
    if db_path is not None:
        try:
            entries = compile_db.load(db_path)
        except compile_db.CompileDbError as e:
            raise BuildSettingsError(str(e)) from None
        entry = compile_db.entry_for(entries, kernel)
        s.compile_commands = str(db_path)
        if entry is not None:
            f = compile_db.entry_flags(entry)
            s.include_dirs += [d for d in f.include_dirs if d not in s.include_dirs]
            s.system_include_dirs += f.system_include_dirs
            s.defines += f.defines
            if f.std:
                s.flags = [x for x in s.flags if not x.startswith("-std=")] + [f"-std={f.std}"]
            s.flags += [x for x in f.flags if x not in s.flags]
            if f.ignored:
                s.notes.append(f"from {db_path.name}: ignored {' '.join(f.ignored[:12])}"
                               + (" ..." if len(f.ignored) > 12 else ""))
        root = db_path.parent.parent if db_path.parent.name == "build" else db_path.parent
        s.roots.append(str(root))

    inc = [_path(base, p, "include_dirs") for p in _strings(build, "include_dirs")]
    s.include_dirs = [s.include_dirs[0], *inc, *[d for d in s.include_dirs[1:] if d not in inc]]
    for d in _defines(build.get("defines")):
        name = d.split("=", 1)[0].removeprefix("-U")
        s.defines = [x for x in s.defines if x.split("=", 1)[0].removeprefix("-U") != name] + [d]
    s.flags += _strings(build, "flags")
    for p in _strings(build, "sources"):
        src = _path(base, p, "sources")
        if not Path(src).is_file():
            raise BuildSettingsError(f"BUILD['sources'] names {p}, which does not exist")
        if not src.endswith(SOURCE_SUFFIXES):
            raise BuildSettingsError(f"BUILD['sources']: {p} is not a .cu/.cpp/.c source")
        if src == str(kernel):
            continue  # the kernel is the candidate's unit
        s.sources.append(src)
    if harness is not None:
        s.roots.append(str(Path(harness).resolve().parent))
    repo = repository_root(kernel.parent)
    if repo is not None:  # ``#include "../common/util.cuh"`` reaches anywhere in the repository
        s.roots.append(str(repo))
    s.roots += [*s.include_dirs, *s.system_include_dirs, *(str(Path(p).parent) for p in s.sources)]
    s.roots = _outermost([r for r in s.roots if os.path.isdir(r)])
    return s


def repository_root(start: Path) -> Path | None:
    """The nearest folder upward from ``start`` that holds ``.git`` (None outside a repository)."""
    d = Path(start).resolve()
    while True:
        if (d / ".git").exists():
            return d
        if d.parent == d:
            return None
        d = d.parent


def read_harness_build(harness: Path) -> dict[str, Any]:
    """The harness's ``BUILD = {...}`` literal ({} when it has none)."""
    try:
        tree = ast.parse(Path(harness).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return {}  # a broken harness is reported when it is loaded, as before
    for node in reversed(tree.body):  # the last assignment is the one Python keeps
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else (
            node.target if isinstance(node, ast.AnnAssign) else None)
        if isinstance(target, ast.Name) and target.id == "BUILD" and node.value is not None:
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                raise BuildSettingsError(f"{Path(harness).name}: BUILD must be a literal dict "
                                         f"(strings and lists only; it is read without running the harness)") from None
            if not isinstance(value, dict):
                raise BuildSettingsError(f"{Path(harness).name}: BUILD must be a dict")
            unknown = set(value) - {"include_dirs", "defines", "flags", "sources", "compile_commands"}
            if unknown:
                raise BuildSettingsError(f"{Path(harness).name}: BUILD has unknown keys {sorted(unknown)} "
                                         f"(known: include_dirs, defines, flags, sources, compile_commands)")
            return value
    return {}


def _strings(build: dict[str, Any], key: str) -> list[str]:
    v = build.get(key, [])
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise BuildSettingsError(f"BUILD[{key!r}] must be a list of strings")
    return list(v)


def _defines(v: Any) -> list[str]:
    if v is None:
        return []
    if isinstance(v, dict):
        return [str(k) if val is None else f"{k}={val}" for k, val in v.items()]
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return list(v)
    raise BuildSettingsError("BUILD['defines'] must be a dict {NAME: value} or a list of 'NAME=value'")


def _path(base: Path, p: str, key: str) -> str:
    return str((base / os.path.expanduser(p)).resolve())


def _outermost(paths: list[str]) -> list[str]:
    out: list[str] = []
    for p in sorted({os.path.realpath(p) for p in paths}, key=len):
        if not any(p == q or p.startswith(q.rstrip("/") + "/") for q in out):
            out.append(p)
    return sorted(out)
