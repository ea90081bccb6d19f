"""Load a candidate into a callable, in the candidate process (never in the judge).

A Python candidate is imported in place of the user's module (``load_candidate_module``);
a CUDA candidate's library is opened with typed launchers (``cuda_library.py``) and
called through the harness's ``run``; a KernelBench candidate's ``ModelNew`` is built
from ``get_init_inputs()`` under the judge's parameter seed.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import torch

from stark_lsp.project_build.python_paths import ModulePlace, module_place
from stark_lsp.evaluate.harness import Reference, importable_from, load_module
from stark_lsp.tasks.spec import TaskSpec


class CandidateLoadError(RuntimeError):
    """The candidate failed to import or build; ``__cause__`` has the original."""


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


def load_candidate(ref: Reference, candidate_file: Path, library: str | None, seed: int) -> Callable[..., Any]:
    """A callable running the candidate; raises CandidateLoadError if it does not import."""
    spec = ref.spec
    if spec.kind == "cuda":
        from stark_lsp.evaluate.candidate.cuda_library import CudaLibrary

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
