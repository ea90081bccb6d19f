"""Anti-cheat machinery that runs inside the worker around candidate code.

* ``TamperGuard``: snapshots torch's and the timer's functions before candidate
  code is imported; any replaced or deleted attribute afterwards is a cheat
  (monkey-patched timers, patched reference ops, changed numerics settings).
* ``poison_cached_memory``: fills every free block of PyTorch's CUDA caching
  allocator with NaN bytes, so an output taken from ``torch.empty`` cannot
  inherit a result the reference left behind.
* ``LaunchCounter``: counts Triton kernel launches (also under the
  interpreter); on a GPU the profiler lists every kernel that ran, so a custom
  kernel that is compiled but never launched (dead code, or a try/except
  fallback to PyTorch) is caught.
"""

from __future__ import annotations

import re
import time
from typing import Any

import torch

_SNAPSHOT_MODULES: list[tuple[str, Any]] = [
    ("torch", torch),
    ("torch.Tensor", torch.Tensor),
    ("torch.nn.functional", torch.nn.functional),
    ("torch.cuda", torch.cuda),
    ("torch.cuda.Event", torch.cuda.Event),
    ("torch.nn.Module", torch.nn.Module),
    ("time", time),
]


def _numerics() -> dict[str, Any]:
    return {
        "torch.backends.cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "torch.backends.cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
        "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction": torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction": torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "torch.backends.cudnn.benchmark": torch.backends.cudnn.benchmark,
        "torch.backends.cudnn.deterministic": torch.backends.cudnn.deterministic,
    }


def _watched(obj: Any) -> dict[str, int]:
    """Public callables (functions, methods, classes) of a module or class, by identity.

    Plain state (``torch.cuda._initialized``, generator tuples) changes as torch
    initialises lazily and is not watched; numerics settings are, separately.
    """
    return {k: id(v) for k, v in list(vars(obj).items()) if not k.startswith("_") and callable(v)}


def preload() -> None:
    """Import what torch patches into itself lazily, so the snapshot sees the final state."""
    import importlib

    for name in ("torch._dynamo", "torch.profiler", "torch.utils.cpp_extension", "triton", "triton.language"):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - optional pieces
            pass


class TamperGuard:
    """Create it last, after the worker's own warm-up (see ``preload``)."""

    def __init__(self) -> None:
        self._ids: dict[str, dict[str, int]] = {name: _watched(obj) for name, obj in _SNAPSHOT_MODULES}
        self._numerics = _numerics()

    def changes(self) -> list[str]:
        """Names of snapshotted attributes that were replaced or removed."""
        changed = []
        for name, obj in _SNAPSHOT_MODULES:
            now = vars(obj)
            for k, ident in self._ids[name].items():
                if k not in now or id(now[k]) != ident:  # replaced or deleted
                    changed.append(f"{name}.{k}")
        for k, v in _numerics().items():
            if self._numerics[k] != v:
                changed.append(k)
        return changed


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


class LaunchCounter:
    """Counts launches of Triton kernels by name (JIT and interpreter)."""

    def __init__(self) -> None:
        self.launches: dict[str, int] = {}
        self._installed = False

    def reset(self) -> None:
        self.launches.clear()

    def install(self) -> None:
        if self._installed:
            return
        try:
            import triton.runtime.jit as jit
        except ImportError:
            return
        classes = [jit.JITFunction]
        try:
            from triton.runtime.interpreter import InterpretedFunction

            classes.append(InterpretedFunction)
        except ImportError:
            pass
        counter = self
        for cls in classes:
            original = cls.run

            def run(self: Any, *a: Any, __orig: Any = original, **k: Any) -> Any:
                out = __orig(self, *a, **k)  # count only launches that went through
                name = getattr(getattr(self, "fn", None), "__name__", None) or getattr(self, "__name__", "?")
                counter.launches[name] = counter.launches.get(name, 0) + 1
                return out

            cls.run = run  # type: ignore[method-assign]
        self._installed = True


def profiled_kernel_names(fn: Any, args: list[Any]) -> list[str]:
    """Names of the GPU kernels that ran during one call (CUDA only)."""
    from torch.profiler import ProfilerActivity, profile

    with torch.no_grad(), profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn(*args)
        torch.cuda.synchronize()
    names = []
    for ev in prof.events():
        dt = getattr(ev, "device_type", None)
        if dt is not None and "CUDA" in str(dt) and ev.name not in names:
            names.append(ev.name)
    return names


_CUDA_KERNEL = re.compile(r"__global__\s+(?:[\w:<>,\s\*]+?\s+)?(\w+)\s*\(")
_TRITON_KERNEL = re.compile(r"@triton\.jit[^\n]*\n(?:\s*@[^\n]*\n)*\s*def\s+(\w+)\s*\(")


def custom_kernel_names(source: str) -> list[str]:
    """Kernels a candidate defines: ``__global__`` functions (also inside Python strings) and ``@triton.jit`` functions."""
    names = [m.group(1) for m in _CUDA_KERNEL.finditer(source)]
    names += [m.group(1) for m in _TRITON_KERNEL.finditer(source)]
    return list(dict.fromkeys(names))


def kernel_launched(custom: list[str], ran: list[str]) -> bool:
    return any(c in r for c in custom for r in ran)


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
