"""Load a task's reference and a candidate into callables (worker side).

The reference, the inputs and the tolerances always come from the task (the
KernelBench file or the harness), never from the candidate: a candidate file
that also defines ``reference`` or ``get_inputs`` does not change them.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import torch

from stark_lsp.build.python_paths import ModulePlace, module_place
from stark_lsp.tasks.spec import TaskSpec


class HarnessError(RuntimeError):
    """The task itself is broken (not the candidate's fault)."""


class CandidateLoadError(RuntimeError):
    """The candidate failed to import or build; ``__cause__`` has the original."""


def load_module(path: Path, name: str, also_as: str | None = None) -> ModuleType:
    """Import ``path`` as module ``name`` (registered under ``also_as`` too, from the start)."""
    spec = importlib.util.spec_from_file_location(name, str(path))
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    mod = importlib.util.module_from_spec(spec)
    names = [name] + ([also_as] if also_as else [])
    for n in names:
        sys.modules[n] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        for n in names:
            sys.modules.pop(n, None)
        raise
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


def _own_package(place: ModulePlace) -> bool:
    """Whether ``place.package`` imports as the user's package (not a same-named one from elsewhere)."""
    if not place.package:
        return True
    top = place.package.split(".")[0]
    try:
        mod = importlib.import_module(place.package)
    except Exception:  # noqa: BLE001 - the candidate's import then fails with the real error
        return False
    paths = [str(Path(p).resolve()) for p in getattr(sys.modules.get(top), "__path__", [])]
    return str(Path(place.root, top).resolve()) in paths and mod is not None


def load_candidate_module(spec: TaskSpec, candidate_file: Path) -> ModuleType:
    """A Python candidate, imported in place of the user's module.

    Its folder and package root are importable; inside a package it is the
    module ``pkg.sub.kernel`` (relative imports resolve to the user's files on
    disk), and the package's attribute points to it. Neighbours are imported
    as they are: only the user's module is replaced. A name that is taken by
    another module (a kernel file called ``random.py``) is not replaced; the
    candidate then runs under its own name only.
    """
    private = f"stark_candidate_{candidate_file.stem}"
    if spec.kind == "kernelbench":
        importable_from(module_place(spec.path))
        return load_module(candidate_file, private)
    place = module_place(spec.path)
    importable_from(place)
    name = place.name
    if name and place.package and not _own_package(place):
        name = ""
    if name and not place.package and name in sys.modules and not _from_folder(sys.modules[name], place.folder):
        name = ""  # a stdlib or installed module of that name is in use
    if not name:
        return load_module(candidate_file, private)
    mod = load_module(candidate_file, name, also_as=private)
    if place.package:
        setattr(sys.modules[place.package], name.rsplit(".", 1)[1], mod)
    return mod


def _from_folder(mod: ModuleType, folder: str) -> bool:
    f = getattr(mod, "__file__", None)
    return bool(f) and str(Path(f).resolve().parent) == str(Path(folder).resolve())


def to_device(x: Any, device: torch.device) -> Any:
    if isinstance(x, torch.Tensor):
        return x.to(device)
    if isinstance(x, (list, tuple)):
        return type(x)(to_device(v, device) for v in x)
    return x


def clone_inputs(xs: list[Any]) -> list[Any]:
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in xs]


@dataclass
class Reference:
    """What a task provides: reference, inputs, tolerances, and how to call a candidate."""

    spec: TaskSpec
    module: ModuleType
    device: torch.device
    atol: float | None = None
    rtol: float | None = None
    _model_cache: dict[int, Any] = field(default_factory=dict)

    def inputs(self, seed: int) -> list[Any]:
        torch.manual_seed(seed)
        try:
            with torch.device(self.device):  # torch.randn(...) lands on the device directly
                xs = self.module.get_inputs()
        except Exception as e:
            raise HarnessError(f"get_inputs() failed: {type(e).__name__}: {e}") from e
        if not isinstance(xs, (list, tuple)):
            raise HarnessError("get_inputs() must return a list of inputs")
        return [to_device(x, self.device) for x in xs]

    def init_inputs(self) -> list[Any]:
        fn = getattr(self.module, "get_init_inputs", None)
        return list(fn()) if fn else []

    def reference_fn(self, seed: int) -> Callable[..., Any]:
        m = self.module
        if hasattr(m, "reference") and callable(m.reference):
            return m.reference
        if hasattr(m, "Model"):
            if seed not in self._model_cache:
                torch.manual_seed(seed)
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
    except Exception as e:
        raise HarnessError(f"cannot load {path.name}: {type(e).__name__}: {e}") from e
    if not hasattr(mod, "get_inputs"):
        raise HarnessError(f"{path.name}: define get_inputs()")
    if spec.kind == "cuda" and not callable(getattr(mod, "run", None)):
        raise HarnessError(f"{path.name}: define run(lib, *inputs), which calls the kernel's launcher")
    if spec.kind == "triton" and not (callable(getattr(mod, "run", None)) or isinstance(getattr(mod, "ENTRY", None), str)):
        raise HarnessError(f"{path.name}: define ENTRY = '<entry function name>' or run(kernel, *inputs)")
    tol = getattr(mod, "TOLERANCE", None) or {}
    return Reference(spec, mod, device, atol=tol.get("atol"), rtol=tol.get("rtol"))


def load_candidate(ref: Reference, candidate_file: Path, library: str | None, seed: int) -> Callable[..., Any]:
    """A callable running the candidate; raises CandidateLoadError if it does not import."""
    spec = ref.spec
    if spec.kind == "cuda":
        from stark_lsp.evaluate.cuda_library import CudaLibrary

        if library is None:
            raise CandidateLoadError("no compiled library for the CUDA candidate")
        try:
            lib = CudaLibrary(library, candidate_file.read_text())
        except Exception as e:
            raise CandidateLoadError(f"cannot load the compiled library: {e}") from e
        run = ref.module.run
        return lambda *xs: run(lib, *xs)
    try:
        mod = load_candidate_module(spec, candidate_file)
    except BaseException as e:
        raise CandidateLoadError(f"{type(e).__name__}: {e}") from e
    if spec.kind == "kernelbench":
        cls = getattr(mod, "ModelNew", None)
        if cls is None:
            raise CandidateLoadError("the candidate defines no class ModelNew")
        torch.manual_seed(seed)
        try:
            with torch.device(ref.device):
                model = cls(*ref.init_inputs()).to(ref.device).eval()
        except Exception as e:
            raise CandidateLoadError(f"ModelNew(*get_init_inputs()) failed: {type(e).__name__}: {e}") from e
        return model
    run = getattr(ref.module, "run", None)
    if callable(run):
        return lambda *xs: run(mod, *xs)
    entry = getattr(mod, ref.module.ENTRY, None)
    if not callable(entry):
        raise CandidateLoadError(f"the candidate defines no entry function {ref.module.ENTRY!r}")
    return entry
