"""What a task asks for, read from its files: the facts of the agents' task card.

For a CUDA or Triton task the harness says it all: ``reference`` (or a
KernelBench-style ``class Model``), ``get_inputs``, ``TOLERANCE``, and how the
candidate is called (``run(lib, ...)`` / ``run(module, ...)``, or ``ENTRY``).
For a KernelBench task the file itself: ``class Model``, ``get_inputs`` and
``get_init_inputs``. Each piece is the source text as written, with the
module-level names it uses (``_shape()``, ``batch_size = ...``), so a reader
sees how the inputs are made even before the evaluator reports their shapes.

Read with ``ast``, never imported or run. Pure: no torch. A file that does not
parse gives empty pieces and a ``problems`` entry, never an exception.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from stark_lsp.tasks.spec import TaskSpec

MAX_DEPENDENCY_DEPTH = 4


@dataclass(frozen=True)
class TaskFacts:
    kind: str  # kernelbench | cuda | triton
    reference_file: str  # the file name holding the reference
    reference_name: str  # "reference" or "Model"; "" when there is none
    reference: str  # its source text
    reference_params: tuple[str, ...]  # reference(x, y) or Model.forward(self, x, y) -> ("x", "y")
    inputs: str  # get_inputs with the module-level helpers and constants it uses
    init_inputs: str = ""  # KernelBench (or a Model harness): get_init_inputs, with what it uses
    tolerance: dict | None = None  # a TOLERANCE literal in the harness
    entry: str | None = None  # Triton: ENTRY
    run: str = ""  # the harness's run(...) source, when it has one
    problems: tuple[str, ...] = field(default_factory=tuple)


def describe_task(task: TaskSpec) -> TaskFacts:
    """The task card's facts; unreadable files give empty pieces and a problem."""
    path = task.path if task.kind == "kernelbench" else (task.harness or task.path)
    try:
        text = Path(path).read_text()
    except OSError as e:
        return TaskFacts(task.kind, Path(path).name, "", "", (), "", problems=(f"cannot read {Path(path).name}: {e}",))
    return describe_text(task.kind, Path(path).name, text)


def describe_text(kind: str, file_name: str, text: str) -> TaskFacts:
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        return TaskFacts(kind, file_name, "", "", (), "", problems=(f"{file_name} does not parse: line {e.lineno}: {e.msg}",))
    mod = _Module(text, tree)
    problems: list[str] = []
    ref_name, ref, params = "", "", ()
    model = mod.defs.get("Model")
    if kind != "kernelbench" and isinstance(mod.defs.get("reference"), (ast.FunctionDef, ast.AsyncFunctionDef)):
        fn = mod.defs["reference"]
        ref_name, ref, params = "reference", mod.segment(fn), _params(fn, skip_self=False)
    elif isinstance(model, ast.ClassDef):
        forward = next((b for b in model.body if isinstance(b, ast.FunctionDef) and b.name == "forward"), None)
        ref_name, ref = "Model", mod.segment(model)
        params = _params(forward, skip_self=True) if forward is not None else ()
    else:
        problems.append(f"{file_name} has no reference (def reference or class Model)")
    inputs = mod.with_dependencies("get_inputs")
    if not inputs:
        problems.append(f"{file_name} has no get_inputs()")
    init_inputs = mod.with_dependencies("get_init_inputs") if ref_name == "Model" else ""
    run = mod.segment(mod.defs["run"]) if isinstance(mod.defs.get("run"), ast.FunctionDef) else ""
    return TaskFacts(
        kind=kind, reference_file=file_name, reference_name=ref_name, reference=ref, reference_params=params,
        inputs=inputs, init_inputs=init_inputs, tolerance=_dict_or_none(mod.literal("TOLERANCE")),
        entry=_str_or_none(mod.literal("ENTRY")), run=run, problems=tuple(problems),
    )


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef, skip_self: bool) -> tuple[str, ...]:
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args]
    if skip_self and names and names[0] in ("self", "cls"):
        names = names[1:]
    if a.vararg:
        names.append("*" + a.vararg.arg)
    return tuple(names)


def _str_or_none(v: object) -> str | None:
    return v if isinstance(v, str) and v else None


def _dict_or_none(v: object) -> dict | None:
    return v if isinstance(v, dict) else None


class _Module:
    """Module-level definitions by name, and their source text."""

    def __init__(self, text: str, tree: ast.Module):
        self.text = text
        self.tree = tree
        self.defs: dict[str, ast.stmt] = {}
        self.order: dict[int, int] = {}  # id(stmt) -> position
        for i, stmt in enumerate(tree.body):
            self.order[id(stmt)] = i
            for name in _defined_names(stmt):
                self.defs[name] = stmt

    def segment(self, node: ast.AST) -> str:
        """The statement's source with its decorators."""
        lines = self.text.splitlines()
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        end = getattr(node, "end_lineno", None) or node.lineno
        return "\n".join(lines[start - 1:end])

    def literal(self, name: str) -> object:
        stmt = self.defs.get(name)
        value = getattr(stmt, "value", None)
        if value is None:
            return None
        try:
            return ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None

    def with_dependencies(self, name: str) -> str:
        """``name``'s definition and the module-level definitions it uses
        (transitively, imports left out), in file order."""
        first = self.defs.get(name)
        if first is None:
            return ""
        keep: dict[int, ast.stmt] = {id(first): first}
        frontier = [first]
        for _ in range(MAX_DEPENDENCY_DEPTH):
            found: list[ast.stmt] = []
            for stmt in frontier:
                for used in _used_names(stmt):
                    dep = self.defs.get(used)
                    if dep is not None and id(dep) not in keep and not isinstance(dep, (ast.Import, ast.ImportFrom)):
                        keep[id(dep)] = dep
                        found.append(dep)
            if not found:
                break
            frontier = found
        ordered = sorted(keep.values(), key=lambda s: self.order[id(s)])
        out = ""
        for prev, stmt in zip([None] + ordered, ordered):
            if prev is not None:  # neighbouring assignments stay together, as written
                simple = not isinstance(stmt, _BLOCKS) and not isinstance(prev, _BLOCKS)
                out += "\n" if simple and self.order[id(stmt)] == self.order[id(prev)] + 1 else "\n\n"
            out += self.segment(stmt)
        return out


_BLOCKS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _defined_names(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [stmt.name]
    if isinstance(stmt, ast.Assign):
        return [n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return [stmt.target.id]
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in stmt.names]
    return []


def _used_names(stmt: ast.stmt) -> set[str]:
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
