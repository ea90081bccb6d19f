"""A task's harness, loaded: its reference, its inputs and its tolerances.

Both sides load it: the judge to compute reference outputs, the candidate
process to draw the inputs of the seeds the judge sends. The reference, the
inputs and the tolerances always come from the task (the KernelBench file or
the harness), never from the candidate: a candidate file that also defines
``reference`` or ``get_inputs`` does not change them.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import torch

from stark_lsp.project_build.python_paths import ModulePlace, module_place
from stark_lsp.tasks.spec import TaskSpec

_HOST_ALLOC = re.compile(r"DefaultCPUAllocator: (?:can't allocate memory|not enough memory)|Cannot allocate memory")
MEMORY_HINT = ("; the task's sizes do not fit this machine's memory: on the CPU, STARK_SMALL=1 picks small shapes "
               "where the task has them")


def memory_hint(e: BaseException) -> str:
    """``MEMORY_HINT`` for a failed host allocation (the judge's memory is capped on the CPU:
    ``sandbox/limits.limit_judge_memory``), else ``""``."""
    return MEMORY_HINT if isinstance(e, MemoryError) or _HOST_ALLOC.search(str(e)[:2000]) else ""


class HarnessError(RuntimeError):
    """The task itself is broken (not the candidate's fault)."""


def _clip(line: str | None, width: int = 80) -> str:
    """A source line for a one-line message, marked where it was cut (a cut line read as the whole one)."""
    text = (line or "").strip()
    return text if len(text) <= width else text[:width - 1] + "…"


def task_code_failure(what: str, e: BaseException, spec: TaskSpec, fn: Any = None, inputs: int | None = None) -> str:
    """``{what} raised TypeError: ... (foo.harness.py, line 12: return x[3])``: the deepest frame in the
    task's own files (the harness or the KernelBench file), so the message points at the user's code, never
    the judge's; one line. Every failure of the task's code says it so (the reference, ``get_inputs``,
    ``get_init_inputs``, loading the file); the editor puts its diagnostic on that line. ``fn``: a
    function that could not even be called with the task's inputs (the wrong number of parameters) has no
    such frame: its ``def`` line is named, with how many inputs ``get_inputs`` gives (``inputs``)."""
    import traceback

    files = {str(p) for p in (spec.path, spec.harness) if p is not None}
    where = ""
    for frame in traceback.extract_tb(e.__traceback__):
        if frame.filename in files:
            where = f" ({Path(frame.filename).name}, line {frame.lineno}: {_clip(frame.line)})"
    if not where and isinstance(e, SyntaxError) and e.filename in files and e.lineno:  # no frame of its own
        where = f" ({Path(e.filename).name}, line {e.lineno}: {_clip(e.text)})"
    code = getattr(getattr(fn, "forward", fn), "__code__", None)
    if not where and code is not None and code.co_filename in files:
        given = f"; get_inputs() gives {inputs} input{'s' if inputs != 1 else ''}" if inputs is not None else ""
        where = f" ({Path(code.co_filename).name}, line {code.co_firstlineno}: def {code.co_name}{given})"
    text = (e.msg if isinstance(e, SyntaxError) and e.msg else str(e)).strip()
    msg = text.splitlines()[0][:300] if text else ""
    return f"{what} raised {type(e).__name__}{': ' + msg if msg else ''}{where}{memory_hint(e)}"


def load_module(path: Path, name: str, also_as: str | None = None) -> ModuleType:
    """Import ``path`` as module ``name`` (registered under ``also_as`` too, from the start). Nothing is
    written beside the user's files: no ``__pycache__`` for the harness, the kernel or the project modules
    they import (``sys.dont_write_bytecode`` while it runs; the flag is the process's, so a module another
    thread imports meanwhile is not cached either, which costs nothing but its next import's compile)."""
    spec = importlib.util.spec_from_file_location(name, str(path))
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    mod = importlib.util.module_from_spec(spec)
    names = [name] + ([also_as] if also_as else [])
    for n in names:
        sys.modules[n] = mod
    before, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        for n in names:
            sys.modules.pop(n, None)
        raise
    finally:
        sys.dont_write_bytecode = before
    return mod


def importable_from(place: ModulePlace, first: bool = True) -> None:
    """The folder of a task's file and its package root on ``sys.path``: first (as when Python runs
    the file itself: the candidate's process), or last (the judge, which loads harnesses of many
    tasks: a project's ``utils.py`` must not shadow a module the judge imports later)."""
    for p in (reversed(place.search_path) if first else place.search_path):
        if first or p not in sys.path:
            if p in sys.path:
                sys.path.remove(p)
            sys.path.insert(0, p) if first else sys.path.append(p)


def to_device(x: Any, device: torch.device) -> Any:
    if isinstance(x, torch.Tensor):
        return x.to(device)
    if isinstance(x, (list, tuple)):
        return type(x)(to_device(v, device) for v in x)
    return x


def clone_inputs(xs: list[Any]) -> list[Any]:
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in xs]


def shapes_only(xs: list[Any]) -> list[Any]:
    """The same list with every tensor replaced by one of its shape and dtype on the ``meta`` device (no
    storage): what the judge keeps of a task's inputs and outputs while candidates' processes run, so a
    task of gigabytes a call is not held twice on the GPU."""
    return [torch.empty_like(x, device="meta") if isinstance(x, torch.Tensor) else x for x in xs]


def storages(xs: list[Any]) -> set[int]:
    """Where the tensors among ``xs`` keep their data (``shares_storage`` compares two draws)."""
    return {x.untyped_storage().data_ptr() for x in xs if isinstance(x, torch.Tensor) and x.numel()}


def seed_everything(seed: int) -> None:
    """``torch.manual_seed(seed)`` for the generators a task can draw from: the CPU's and every CUDA
    device's. ``torch.manual_seed`` also queues seeds for XPU and MTIA, which here are never
    initialized, and each queued seed records a traceback: 0.7 ms a draw on the H200, more than the
    draw itself, for each of a timing's hundreds of calls the judge checks."""
    torch.default_generator.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


@dataclass
class Reference:
    """What a task provides: reference, inputs, tolerances, and how to call a candidate."""

    spec: TaskSpec
    module: ModuleType
    device: torch.device
    atol: float | None = None
    rtol: float | None = None
    # whether get_inputs() draws new tensors every time (checked by the judge on two draws): the judge then
    # runs the reference on inputs it drew for that call alone without copying them first
    fresh_inputs: bool = False
    _model_cache: dict[int, Any] = field(default_factory=dict)

    def inputs(self, seed: int) -> list[Any]:
        seed_everything(seed)
        try:
            with torch.device(self.device):  # torch.randn(...) lands on the device directly
                xs = self.module.get_inputs()
        except Exception as e:  # the user's code: said in one line, with its place
            raise HarnessError(task_code_failure("get_inputs()", e, self.spec)) from None
        if not isinstance(xs, (list, tuple)):
            raise HarnessError("get_inputs() must return a list of inputs")
        return [to_device(x, self.device) for x in xs]

    def init_inputs(self) -> list[Any]:
        fn = getattr(self.module, "get_init_inputs", None)
        if not fn:
            return []
        try:
            return list(fn())
        except Exception as e:  # the user's code: said in one line, with its place
            raise HarnessError(task_code_failure("get_init_inputs()", e, self.spec)) from None

    def forget_models(self) -> None:
        """The models ``reference_fn`` built, let go of."""
        self._model_cache.clear()

    def reference_fn(self, seed: int) -> Callable[..., Any]:
        m = self.module
        if hasattr(m, "reference") and callable(m.reference):
            return m.reference
        if hasattr(m, "Model"):
            if seed not in self._model_cache:
                seed_everything(seed)
                self._model_cache.clear()
                with torch.device(self.device):
                    self._model_cache[seed] = m.Model(*self.init_inputs()).to(self.device).eval()
            return self._model_cache[seed]
        raise HarnessError(f"{self.spec.harness or self.spec.path}: define reference(*inputs) or class Model")


def load_reference(spec: TaskSpec, device: torch.device) -> Reference:
    path = spec.harness if spec.kind != "kernelbench" else spec.path
    assert path is not None
    importable_from(module_place(path), first=False)  # a harness may import the project's modules
    if spec.kind == "triton" and path != spec.path:
        importable_from(module_place(spec.path), first=False)
    try:
        mod = load_module(path, f"stark_task_{spec.task_id()}_{int(time.time() * 1e6)}")
    except Exception as e:  # the user's code (a module-level line that raises, a syntax error), with its place
        raise HarnessError(f"cannot load {path.name}: {task_code_failure('importing it', e, spec)}") from None
    if not hasattr(mod, "get_inputs"):
        raise HarnessError(f"{path.name}: define get_inputs()")
    if spec.kind == "cuda" and not callable(getattr(mod, "run", None)):
        raise HarnessError(f"{path.name}: define run(lib, *inputs), which calls the kernel's launcher")
    if spec.kind == "triton" and not (callable(getattr(mod, "run", None)) or isinstance(getattr(mod, "ENTRY", None), str)):
        raise HarnessError(f"{path.name}: define ENTRY = '<entry function name>' or run(kernel, *inputs)")
    tol = getattr(mod, "TOLERANCE", None) or {}
    return Reference(spec, mod, device, atol=tol.get("atol"), rtol=tol.get("rtol"))


MAX_NESTING = 32  # levels of tuples, lists and dicts an output may be nested in


def as_outputs(value: Any, depth: int = 0) -> list[Any]:
    """A model may return a tensor, a number, or tuples, lists and dicts of them, nested (an LSTM's
    ``out, (h, c)``): its outputs flattened in order, a dict's by its keys' order as text. Nested ones
    used to reach the judge's comparisons whole ("evaluator error: Boolean value of Tensor ..."). A list
    that holds itself, or nesting past ``MAX_NESTING``, is a ``HarnessError`` (said in one line)."""
    if isinstance(value, (tuple, list, dict)) and depth >= MAX_NESTING:
        raise HarnessError(f"the outputs are nested more than {MAX_NESTING} levels deep (or hold themselves)")
    if isinstance(value, (tuple, list)):
        return [o for v in value for o in as_outputs(v, depth + 1)]
    if isinstance(value, dict):
        return [o for k in sorted(value, key=str) for o in as_outputs(value[k], depth + 1)]
    return [value]
