"""Checks that run inside the candidate process: they catch honest mistakes and the usual LLM
shortcuts; a process that forges them gains nothing the judge does not check again
(docs/EVALUATOR.md).

* ``poison_cached_memory``: fills every free block of PyTorch's CUDA caching
  allocator with NaN bytes, so an output that is never written reads as NaN;
* ``LaunchCounter``: counts Triton kernel launches by name (JIT and
  interpreter), only launches that went through, and the kernels whose
  launch was attempted; ``profiled_kernel_names``: every GPU kernel of one
  call, from the profiler;
* ``same_tensors``: which input a call changed in place.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch


def poison_cached_memory(device: torch.device, limit_bytes: int = 16 << 30) -> int:
    """Fill the caching allocator's free blocks with 0xFF (NaN for floats). Returns bytes poisoned."""
    if device.type != "cuda":
        return 0
    sizes = []
    for seg in torch.cuda.memory_snapshot():
        if seg.get("device", 0) != (device.index or 0):
            continue
        for blk in seg.get("blocks", []):
            if blk.get("state") == "inactive" and blk.get("size", 0) > 0:
                sizes.append(int(blk["size"]))
    sizes.sort(reverse=True)
    held, total = [], 0
    for s in sizes:
        if total + s > limit_bytes:
            break
        t = torch.empty(s, dtype=torch.uint8, device=device)
        t.fill_(0xFF)
        held.append(t)
        total += s
    del held
    return total


def _kernel_name(obj: Any) -> str:
    """The Python function's name behind a Triton kernel object (JIT, autotuner, heuristics, interpreter)."""
    for _ in range(8):
        inner = getattr(obj, "fn", None)
        if inner is None:
            break
        obj = inner
    return getattr(obj, "__name__", "?")


# the judge's protocol launches Triton kernels in the candidate process (the device chain, the digest): never
# counted as the candidate's, or a candidate could name a kernel it never launches after one of them
PROTOCOL_MODULES = ("stark_lsp.evaluate.wire.device_chain_kernels", "stark_lsp.evaluate.wire.signed_sum")


def _is_protocol(kernel: Any) -> bool:
    return getattr(getattr(kernel, "fn", None), "__module__", "") in PROTOCOL_MODULES


class LaunchCounter:
    """Counts launches of Triton kernels by name (JIT and interpreter), and which
    kernels a launch was attempted for (``kernel[grid]`` evaluated): a kernel
    reached but never launched is a failed launch behind a fallback.

    ``on_launch`` (when set) is called with the name after each launch went
    through: the candidate process reports progress through a long first call.
    ``on_compile`` (when set) is called with ``("compiling", name)`` before
    Triton compiles a kernel for a launch and ``("compiled", name)`` after
    (``JITFunction._do_compile``, where Triton has it): the judge lets go of the
    GPU's gate for the compile, the CPU's work, and takes it back shared before
    the kernel runs.
    """

    def __init__(self) -> None:
        self.launches: dict[str, int] = {}
        self.reached: set[str] = set()
        self.created: list[tuple[str, str]] = []  # (kernel, the file that defines it), as Triton made them
        self.on_launch: Any = None
        self.on_compile: Any = None
        self._installed = False

    def reset(self) -> None:
        """Launches counted so far forgotten (the reference's, timed in this process before the candidate
        loaded): the launch check counts the candidate's alone. Kernels made stay known (by their file)."""
        self.launches.clear()
        self.reached.clear()

    def install(self) -> None:
        if self._installed:
            return
        try:
            import triton.runtime.jit as jit
        except ImportError:
            return
        runners = [jit.JITFunction]
        indexers = [jit.KernelInterface]
        try:
            from triton.runtime.interpreter import InterpretedFunction

            runners.append(InterpretedFunction)
            if "__getitem__" in vars(InterpretedFunction):
                indexers.append(InterpretedFunction)
        except ImportError:
            pass
        counter = self
        for cls in runners:  # every kernel object made from now on, however the decorator was spelled
            init = cls.__init__

            def made(self: Any, fn: Any, *a: Any, __init: Any = init, **k: Any) -> None:
                __init(self, fn, *a, **k)
                code = getattr(fn, "__code__", None)
                counter.created.append((getattr(fn, "__name__", "?"), getattr(code, "co_filename", "")))

            cls.__init__ = made  # type: ignore[method-assign]
        for cls in runners:
            original = cls.run

            def run(self: Any, *a: Any, __orig: Any = original, **k: Any) -> Any:
                out = __orig(self, *a, **k)  # count only launches that went through
                if _is_protocol(self):
                    return out  # the protocol's own kernels are not the candidate's launches, whatever their names
                name = _kernel_name(self)
                counter.launches[name] = counter.launches.get(name, 0) + 1
                if counter.on_launch is not None:
                    counter.on_launch(name)
                return out

            cls.run = run  # type: ignore[method-assign]
        compile_ = getattr(jit.JITFunction, "_do_compile", None)
        if callable(compile_):
            def do_compile(self: Any, *a: Any, __orig: Any = compile_, **k: Any) -> Any:
                told = counter.on_compile
                if told is None or _is_protocol(self):
                    return __orig(self, *a, **k)
                name = _kernel_name(self)
                told("compiling", name)
                try:
                    return __orig(self, *a, **k)
                finally:
                    told("compiled", name)  # a failed compile too: its error is raised with the gate back

            jit.JITFunction._do_compile = do_compile  # type: ignore[attr-defined]
        for cls in indexers:
            get = cls.__getitem__

            def getitem(self: Any, grid: Any, __orig: Any = get) -> Any:
                if not _is_protocol(self):
                    counter.reached.add(_kernel_name(self))
                return __orig(self, grid)

            cls.__getitem__ = getitem  # type: ignore[method-assign]
        self._installed = True


def profiled_kernel_names(fn: Any, args: list[Any]) -> list[str]:
    """Names of the GPU kernels that ran during one call (CUDA only)."""
    from torch.profiler import ProfilerActivity, profile

    with warnings.catch_warnings():  # a second session in the process warns about its cycles: not the candidate's
        warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
        with torch.no_grad(), profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn(*args)
            torch.cuda.synchronize()
    names = []
    for ev in prof.events():
        dt = getattr(ev, "device_type", None)
        if dt is not None and "CUDA" in str(dt) and ev.name not in names:
            names.append(ev.name)
    return names


def same_tensors(before: list[Any], after: list[Any], skip: set[int] | frozenset[int] = frozenset()) -> int | None:
    """Index of the first input that changed, bit for bit, or None; those in ``skip`` are not looked at."""
    for i, (b, a) in enumerate(zip(before, after)):
        if i in skip:
            continue
        if isinstance(b, torch.Tensor) and isinstance(a, torch.Tensor):
            if b.shape != a.shape or b.dtype != a.dtype:
                return i
            if b.dtype.is_floating_point:
                eq = (b == a) | (torch.isnan(b) & torch.isnan(a))
                if not bool(eq.all()):
                    return i
            elif not torch.equal(b, a):
                return i
    return None
