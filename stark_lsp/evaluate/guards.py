"""Checks that run inside the candidate process, and the launch rule the judge applies.

Inside the candidate process (they catch honest mistakes and the usual LLM
shortcuts; a process that forges them gains nothing the judge does not check
again, see docs/EVALUATOR.md):

* ``poison_cached_memory``: fills every free block of PyTorch's CUDA caching
  allocator with NaN bytes, so an output that is never written reads as NaN;
* ``LaunchCounter``: counts Triton kernel launches by name (JIT and
  interpreter), only launches that went through, and the kernels whose
  launch was attempted; ``profiled_kernel_names``:
  every GPU kernel of one call, from the profiler.

In the judge: ``missing_launches`` says which kernels were reached but never
launched, or whether none of the kernels the source launches ran, matching
exact names (a kernel called
``elementwise`` is not PyTorch's ``vectorized_elementwise_kernel``).
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import torch

from stark_lsp.evaluate.diagnostics import demangle


def preload() -> None:
    """Import what torch patches into itself lazily (the zygote does this once)."""
    import importlib

    for name in ("torch._dynamo", "torch.profiler", "torch.utils.cpp_extension", "triton", "triton.language"):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - optional pieces
            pass


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


class LaunchCounter:
    """Counts launches of Triton kernels by name (JIT and interpreter), and which
    kernels a launch was attempted for (``kernel[grid]`` evaluated): a kernel
    reached but never launched is a failed launch behind a fallback.

    ``on_launch`` (when set) is called with the name after each launch went
    through: the candidate process reports progress through a long first call.
    """

    def __init__(self) -> None:
        self.launches: dict[str, int] = {}
        self.reached: set[str] = set()
        self.created: list[tuple[str, str]] = []  # (kernel, the file that defines it), as Triton made them
        self.on_launch: Any = None
        self._installed = False

    def reset(self) -> None:
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
                name = _kernel_name(self)
                counter.launches[name] = counter.launches.get(name, 0) + 1
                if counter.on_launch is not None:
                    counter.on_launch(name)
                return out

            cls.run = run  # type: ignore[method-assign]
        for cls in indexers:
            get = cls.__getitem__

            def getitem(self: Any, grid: Any, __orig: Any = get) -> Any:
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


_TRITON_KERNEL = re.compile(r"@triton\.jit[^\n]*\n(?:\s*@[^\n]*\n)*\s*def\s+(\w+)\s*\(")


_CUDA_ATTRIBUTES = {"__launch_bounds__", "__cluster_dims__", "__maxnreg__", "__attribute__", "__declspec",
                    "__align__", "alignas", "__grid_constant__", "decltype"}
_TOKEN = re.compile(r"\s*(\w+|\(|[^\w\s(])")


def _cuda_kernel_name(source: str, at: int) -> str | None:
    """The name of the ``__global__`` function whose qualifiers start at ``at``: the first
    identifier followed by ``(`` that is not an attribute (``__launch_bounds__(256)``)."""
    i, prev = at, None
    for _ in range(64):
        m = _TOKEN.match(source, i)
        if not m:
            return None
        tok, i = m.group(1), m.end()
        if tok == "(":
            if prev is None or prev in _CUDA_ATTRIBUTES:  # skip the attribute's balanced arguments
                depth = 1
                while depth and i < len(source):
                    depth += {"(": 1, ")": -1}.get(source[i], 0)
                    i += 1
                prev = None
                continue
            return prev if prev != "void" else None  # ``__global__ void (*p)(int)``: a pointer, no kernel
        if tok in (";", "{", "}", "="):
            return None
        prev = tok if re.fullmatch(r"[A-Za-z_]\w*", tok) else None
    return None


def custom_kernel_names(source: str) -> list[str]:
    """Kernels a candidate defines: ``__global__`` functions (also inside Python strings) and ``@triton.jit`` functions."""
    names = [n for m in re.finditer(r"\b__global__\b", source) if (n := _cuda_kernel_name(source, m.end()))]
    names += [m.group(1) for m in _TRITON_KERNEL.finditer(source)]
    return list(dict.fromkeys(names))


def triton_kernel_names(source: str) -> list[str]:
    """The ``@triton.jit`` functions a candidate defines (Triton's launch counter sees them)."""
    return list(dict.fromkeys(m.group(1) for m in _TRITON_KERNEL.finditer(source)))


def kernel_base_name(name: str) -> str:
    """The bare function name of a kernel as a profiler or Triton reports it.

    ``void ns::softmax<256>(float const*, float*, int)`` -> ``softmax``;
    ``_Z3addPKfPfi`` -> ``add``; ``my_kernel`` -> ``my_kernel``.
    """
    n = name.strip()
    if n.startswith("_Z"):
        return demangle(n)
    depth, cut = 0, len(n)
    for i, ch in enumerate(n):  # the parameter list: the first '(' outside template brackets
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif ch == "(" and depth == 0:
            cut = i
            break
    n = n[:cut]
    out, depth = [], 0
    for ch in n:  # drop template arguments
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    n = "".join(out).strip().split()[-1] if "".join(out).strip() else ""
    return n.rsplit("::", 1)[-1].lstrip("*&")


def launched_kernel_names(raw: list[str]) -> set[str]:
    return {kernel_base_name(r) for r in raw if r}


def launch_sites(source: str, kernels: list[str]) -> list[str]:
    """Kernels the source launches by name: ``k[grid](...)`` (Triton) or ``k<<<...>>>`` (CUDA)."""
    return [k for k in kernels if re.search(r"\b" + re.escape(k) + r"\s*(\[|<<<)", source)]


def missing_launches(source: str, defined: list[str], ran: set[str], reached: set[str] = frozenset()) -> list[str]:
    """The candidate's kernels that should have run and did not (exact names).

    Every kernel whose launch the forward path reached (``kernel[grid]``
    evaluated) must have launched: reached but not launched is a launch that
    failed behind a fallback. And at least one kernel the source launches by
    name (any defined one, where it launches none by name: an indirect launch)
    must have run. Not every one: a kernel chosen by shape (``if inner == 1:
    rows_kernel[...] else: strided_kernel[...]``) rightly leaves the other
    unreached.
    """
    failed = [k for k in defined if k in reached and k not in ran]
    if failed:
        return failed
    expected = launch_sites(source, defined) or list(defined)
    return [] if any(k in ran for k in expected) else list(expected)


_SUSPICIOUS = [
    (re.compile(r"\b(torch\.cuda\.Stream|cuda\.Stream|cudaStreamCreate\w*|cupy\.cuda\.Stream)\b"), "creates its own CUDA stream"),
    (re.compile(r"\b(threading|multiprocessing|concurrent\.futures)\b"), "uses threads or processes"),
    (re.compile(r"\b(gc\.get_objects|sys\._getframe|inspect\.stack)\b"), "inspects the interpreter's state"),
    (re.compile(r"\b(elapsed_time|perf_counter|Event\s*\.)"), "touches timing functions"),
]


def source_flags(source: str) -> list[str]:
    """Patterns worth a reviewer's look; dynamic checks decide pass or fail."""
    flags = [f"source {why}" for pat, why in _SUSPICIOUS if pat.search(source)]
    if re.search(r"^\s*except\b", source, re.M) and custom_kernel_names(source):
        flags.append("source has try/except around kernel code (possible fallback)")
    return flags
