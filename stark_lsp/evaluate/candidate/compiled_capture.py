"""torch.compile of a KernelBench model, keeping what Inductor wrote for it.

The judge's ``compiled`` baseline process (``process.py``, role ``compiled``) compiles the task's
reference with torch.compile and times it. For a model (``nn.Module``) it compiles through
``CompiledCapture``: the same Inductor compile (``compile_fx``, what ``torch.compile``'s default
backend calls), with three things noted on the way:

* Inductor's output code for the graph (the Python module it writes: its Triton kernels and the
  ``call(args)`` that launches them), as Inductor hands it to ``GraphLowering.save_output_code``;
* what each of the graph's inputs is: a parameter or buffer of the model (by its name) or the
  forward's argument i, matched by identity, which is how ``call``'s arguments are ordered;
* the launch configuration Inductor's autotuner chose for each Triton kernel, read after the first
  call from the kernels' launchers.

``export()`` gives these as plain data (``compiled_code`` in the reply): the built-in team writes a
standalone ``ModelNew`` from them (``agents/builtin/inductor_seed.py``), which the judge then
verifies and times like any candidate. Nothing here is a figure, and nothing in it is trusted:
it is a proposal, checked like every other.
"""

from __future__ import annotations

from typing import Any, Callable
from unittest import mock

import torch

MAX_CODE_CHARS = 2_000_000  # an output module larger than this is not exported


class CompiledCapture:
    """``first(*args)`` is the compiled model's first call (it compiles, noting what it wrote);
    from then on ``compiled`` is torch.compile's own callable, with nothing of this class on the
    timed path (``on_compiled`` is told of it after the first call)."""

    def __init__(self, model: torch.nn.Module, on_compiled: Callable[[Callable[..., Any]], None] | None = None):
        self.model = model
        self.codes: list[str] = []
        self.graph_inputs: list[list[str]] = []
        self._args: tuple[Any, ...] = ()
        self.compiled = torch.compile(model, backend=self._backend)
        self._on_compiled = on_compiled

    def first(self, *args: Any) -> Any:
        from torch._inductor.graph import GraphLowering

        self._args = args
        try:
            with mock.patch.object(GraphLowering, "save_output_code", self._save):
                out = self.compiled(*args)
        finally:
            self._args = ()
        if self._on_compiled is not None:
            self._on_compiled(self.compiled)
        return out

    def _save(self, code: str) -> None:
        if code not in self.codes:
            self.codes.append(code)

    def _backend(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        from torch._inductor.compile_fx import compile_fx

        names = {id(p): f"param {n}" for n, p in self.model.named_parameters()}
        names.update({id(b): f"buffer {n}" for n, b in self.model.named_buffers()})
        names.update({id(a): f"input {i}" for i, a in enumerate(self._args) if isinstance(a, torch.Tensor)})
        self.graph_inputs.append([names.get(id(t), f"unknown {type(t).__name__}") for t in example_inputs])
        return compile_fx(gm, example_inputs)

    def export(self) -> dict[str, Any]:
        """What Inductor wrote and what its graph's inputs are, or why there is nothing to export."""
        if len(self.codes) != 1 or len(self.graph_inputs) != 1:
            return {"error": f"torch.compile made {len(self.graph_inputs)} graphs ({len(self.codes)} output modules): "
                             f"only a model compiled as one graph is exported"}
        code = self.codes[0]
        if len(code) > MAX_CODE_CHARS:
            return {"error": f"Inductor's output is {len(code)} characters: too large to export"}
        unknown = [n for n in self.graph_inputs[0] if n.startswith("unknown")]
        if unknown:
            return {"error": f"an input of the compiled graph is neither a parameter, a buffer nor an argument "
                             f"of forward ({unknown[0]})"}
        import triton

        return {"code": code, "inputs": self.graph_inputs[0], "configs": _chosen_configs(code),
                "torch": torch.__version__, "triton": triton.__version__}


def _chosen_configs(code: str) -> dict[str, dict[str, Any]]:
    """Each Triton kernel's launch configuration as Inductor's autotuner left it (its one launcher
    after the first call; with several left, the first, as Inductor launches), by kernel name."""
    try:
        from torch._inductor.codecache import PyCodeCache
    except ImportError:
        return {}
    modules = list(getattr(PyCodeCache, "modules", []) or []) + list(
        (getattr(PyCodeCache, "modules_no_attr", {}) or {}).values())
    out: dict[str, dict[str, Any]] = {}
    for mod in modules:
        if not callable(getattr(mod, "call", None)):
            continue
        for name, obj in vars(mod).items():
            launchers = getattr(obj, "launchers", None)
            if not name.startswith("triton_") or not launchers or f"{name} = async_compile" not in code:
                continue
            cfg = getattr(launchers[0], "config", None)
            if cfg is None:
                continue
            out[name] = {"kwargs": {k: v for k, v in dict(cfg.kwargs).items() if type(v) is int},
                         "num_warps": int(cfg.num_warps), "num_stages": int(cfg.num_stages)}
    return out
