"""Static checks of a task's files for ``stark bench --dry-run``: no torch, no import.

They catch what would otherwise waste a whole run: a harness that does not
parse or lacks ``get_inputs`` / ``reference`` / ``run`` / ``ENTRY``, an
``ENTRY`` the kernel file does not define, or a ``lib.NAME(...)`` call in a
CUDA harness with no ``extern "C"`` launcher of that name.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from stark_lsp.tasks.spec import TaskSpec

_EXTERN_C = re.compile(r'extern\s+"C"\s+(?:__host__\s+)?[\w\s\*]*?\b(\w+)\s*\(')
_EXTERN_C_BLOCK = re.compile(r'extern\s+"C"\s*\{')
_LIB_CALL = re.compile(r"\blib\.(\w+)\s*\(")


def top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def string_constant(tree: ast.Module, name: str) -> str | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                return node.value.value
    return None


def extern_c_launchers(cu_source: str) -> set[str] | None:
    """Names of ``extern "C"`` functions, or None when an ``extern "C" { }`` block hides them."""
    if _EXTERN_C_BLOCK.search(cu_source):
        return None
    return set(_EXTERN_C.findall(cu_source))


def _parse(path: Path, problems: list[str]) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(), filename=str(path))
    except SyntaxError as e:
        problems.append(f"{path.name}:{e.lineno}: syntax error: {e.msg}")
    except OSError as e:
        problems.append(f"{path.name}: cannot read: {e}")
    except UnicodeDecodeError as e:  # a harness saved in another encoding, or a binary file
        problems.append(f"{path.name}: not UTF-8 text (byte {e.start}: {e.object[e.start:e.start + 1]!r}): "
                        f"save it as UTF-8")
    except ValueError as e:  # a null byte ('source code string cannot contain null bytes')
        problems.append(f"{path.name}: not Python source: {e}")
    return None


def check_task(task: TaskSpec, kernel_source: str | None = None, kernel_name: str | None = None) -> list[str]:
    """What is wrong with the task's files, as messages; empty when nothing is.

    ``kernel_source`` / ``kernel_name``: check a candidate's launchers against the
    harness instead of the task's own kernel file (``stark eval TASK CANDIDATE``)."""
    problems: list[str] = []
    if task.kind == "kernelbench":
        tree = _parse(task.path, problems)
        if tree is not None:
            names = top_level_names(tree)
            for need in ("Model", "get_inputs"):
                if need not in names:
                    problems.append(f"{task.path.name}: defines no {need}")
        return problems
    assert task.harness is not None
    h = _parse(task.harness, problems)
    if h is None:
        return problems
    names = top_level_names(h)
    if "get_inputs" not in names:
        problems.append(f"{task.harness.name}: defines no get_inputs()")
    if "reference" not in names and "Model" not in names:
        problems.append(f"{task.harness.name}: defines no reference(*inputs)")
    if task.kind == "cuda":
        if "run" not in names:
            problems.append(f"{task.harness.name}: defines no run(lib, *inputs)")
        kname = kernel_name or task.path.name
        try:
            launchers = extern_c_launchers(task.path.read_text() if kernel_source is None else kernel_source)
        except OSError as e:
            return problems + [f"{kname}: cannot read: {e}"]
        if launchers is not None and not launchers:
            problems.append(f'{kname}: no extern "C" launcher')
        elif launchers is not None:
            harness = task.harness.read_text()
            for called in sorted(set(_LIB_CALL.findall(harness))):
                if called not in launchers:
                    problems.append(f'{task.harness.name}: calls lib.{called}, but {kname} has no extern "C" {called}')
            from stark_lsp.evaluate.launcher_check import problems as call_problems

            source = task.path.read_text() if kernel_source is None else kernel_source
            problems.extend(f"{kname}: {p.replace('the harness', task.harness.name, 1)}"
                            for p in call_problems(source, harness))
    else:  # triton
        entry = string_constant(h, "ENTRY")
        if entry is None and "run" not in names:
            problems.append(f"{task.harness.name}: defines neither ENTRY = '<function>' nor run(kernel, *inputs)")
        elif entry is not None:
            k = h if task.harness == task.path else _parse(task.path, problems)
            if k is not None and entry not in top_level_names(k):
                problems.append(f"{task.path.name}: defines no entry function {entry!r} (ENTRY in {task.harness.name})")
    return problems
