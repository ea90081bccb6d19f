"""The hardware card every agent reads: the GPU, what the evaluator measured on
it, the compilers, and the Nsight Compute line of a profiled node.

    ## Hardware card
    GPU: NVIDIA H200 (compute capability 9.0), 132 SMs, L2 60 MiB, 140 GiB memory
    Per SM: 228 KiB shared memory, 65536 registers, 2048 threads, 32 blocks; per block: 48 KiB shared memory (227 KiB opted in), ...
    Measured by the evaluator: copy bandwidth 4.3 TB/s (read + write), matmul peak 495 TFLOP/s (float32)
    Compilers: nvcc 13.0 (V13.0.88), triton 3.5.0, torch 2.9.0
    Nsight Compute (#7): ncu: dram 41% of peak, sm 12%, occupancy 48%, ...

The facts come from ``evaluator.hardware_info()`` (device, capability, SMs,
L2, memory, torch, and the per-SM and per-block ``limits`` of
``evaluate.gpu_limits``, each shown only where known), the results' floors (bandwidth and matmul peak are
measured by the evaluator when it computes a floor) and, where the evaluator
does not report them, the compiler versions of this machine (for a local
evaluator they are the ones that build and run the candidates). What is not
known is written "unknown". nvcc is listed only where CUDA can run: not on
a machine without a GPU (the Triton interpreter), and never for a Triton
task, which builds nothing with it. ``hardware_card`` is pure;
``hardware_facts`` asks the evaluator and the local toolchain once per search.
"""

from __future__ import annotations

import re
import subprocess
from typing import Any, Iterable

from stark_lsp.evaluate.protocol import hardware_info

from .node import Node
from .task_card import floor_of

UNKNOWN = "unknown"


def hardware_facts(evaluator: Any) -> dict[str, Any]:
    """``evaluator.hardware_info()`` (empty when it has none or fails) with the
    compiler versions filled in where it does not report them."""
    info: dict[str, Any] = {}
    try:
        info = hardware_info(evaluator)
    except Exception as e:  # no worker yet, Ray down...: the card says unknown
        info = {"error": f"{type(e).__name__}: {e}"}
    remote = bool(info.get("cluster"))  # a Ray evaluator: this machine's toolchain may not be the one used
    if not remote:
        for name in ("torch", "triton"):
            if not info.get(name):
                v = _package_version(name)
                if v:
                    info[name] = v
        if not info.get("nvcc") and cuda_runs(info):  # no GPU: no CUDA to build, nvcc is not shown
            v = nvcc_release()
            if v:
                info["nvcc"] = v
    return info


def _package_version(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


_NVCC: dict[str, str | None] = {}


def nvcc_release() -> str | None:
    """``13.0 (V13.0.88)`` from ``nvcc --version``, or None without nvcc."""
    if "v" in _NVCC:
        return _NVCC["v"]
    from stark_lsp.evaluate.cuda_build import nvcc_path

    path = nvcc_path()
    out = ""
    if path:
        try:
            out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
    m = re.search(r"release (\d+\.\d+), (V[\w.]+)", out)
    _NVCC["v"] = f"{m.group(1)} ({m.group(2)})" if m else None
    return _NVCC["v"]


def _mib(n: Any) -> str:
    try:
        n = int(n)
    except (TypeError, ValueError):
        return UNKNOWN
    return f"{n / 2**30:.0f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def cuda_runs(info: dict[str, Any] | None) -> bool:
    """Whether CUDA code can run where the candidates run: not on a machine the
    evaluator says has no GPU (unknown hardware: assumed it can)."""
    return not (info and info.get("device") and info.get("is_gpu") is False)


def _kib(n: int) -> str:
    return f"{n // 1024} KiB" if n % 1024 == 0 else f"{n} B"


def limits_line(limits: Any) -> str:
    """``Per SM: 228 KiB shared memory, 65536 registers, 2048 threads, 32 blocks; per block: 48 KiB
    shared memory (227 KiB opted in), 65536 registers, 1024 threads; warp size 32``, each figure
    where known; '' when none is."""
    if not isinstance(limits, dict):
        return ""

    def get(key: str) -> int | None:
        try:
            v = int(limits.get(key) or 0)
        except (TypeError, ValueError):
            return None
        return v if v > 0 else None

    sm, block = [], []
    if get("smem_per_sm"):
        sm.append(f"{_kib(get('smem_per_sm'))} shared memory")
    if get("regs_per_sm"):
        sm.append(f"{get('regs_per_sm')} registers")
    if get("max_threads_per_sm"):
        sm.append(f"{get('max_threads_per_sm')} threads")
    if get("max_blocks_per_sm"):
        sm.append(f"{get('max_blocks_per_sm')} blocks")
    smem, optin = get("smem_per_block"), get("smem_per_block_optin")
    if smem or optin:
        text = f"{_kib(smem)} shared memory" if smem else "shared memory"
        if optin and optin != smem:
            text += f" ({_kib(optin)} opted in)"
        block.append(text)
    if get("regs_per_block"):
        block.append(f"{get('regs_per_block')} registers")
    if get("max_threads_per_block"):
        block.append(f"{get('max_threads_per_block')} threads")
    parts = []
    if sm:
        parts.append("Per SM: " + ", ".join(sm))
    if block:
        parts.append(("per block: " if parts else "Per block: ") + ", ".join(block))
    if get("warp_size"):
        parts.append(f"warp size {get('warp_size')}")
    return "; ".join(parts)


def hardware_card(info: dict[str, Any] | None, nodes: Iterable[Node] = (), profiled: Node | None = None,
                  ncu_line: str = "", kind: str = "") -> str:
    """The card as prompt text. ``nodes`` give the measured bandwidth and peak
    (from a floor); ``profiled``/``ncu_line`` the Nsight Compute figures;
    ``kind`` the task's (a Triton task is not shown nvcc)."""
    info = info or {}
    nodes = list(nodes)
    lines = ["## Hardware card"]
    if info.get("is_gpu"):
        cap = info.get("capability")
        lines.append(
            f"GPU: {info.get('device', UNKNOWN)} (compute capability {cap or UNKNOWN}), "
            f"{info.get('sms', UNKNOWN)} SMs, L2 {_mib(info.get('l2_bytes')) if info.get('l2_bytes') else UNKNOWN}, "
            f"{_mib(info.get('memory_bytes')) if info.get('memory_bytes') else UNKNOWN} memory"
            + (f"; {info['actors']} evaluation GPUs on Ray" if info.get("actors") else ""))
    elif info.get("device"):
        lines.append(f"Device: {info['device']}: no GPU; timings are CPU ones, not GPU timings. "
                     f"SMs, L2, bandwidth and matmul peak: {UNKNOWN}.")
    else:
        why = f" ({info['error']})" if info.get("error") else ""
        lines.append(f"GPU: {UNKNOWN}{why}")
    limits = limits_line(info.get("limits")) if info.get("is_gpu") else ""
    if limits:
        lines.append(limits)
    if info.get("is_gpu"):
        fl = floor_of(*sorted((n for n in nodes if n.correct), key=lambda n: (n.parent_id is not None, n.id)))
        if fl is not None:
            peak = f"{fl.peak_tflops:.3g} TFLOP/s ({fl.dtype})" if fl.peak_tflops else UNKNOWN
            lines.append(f"Measured by the evaluator: copy bandwidth {fl.bandwidth_gbs / 1000:.3g} TB/s (read + write), "
                         f"matmul peak {peak}")
        else:
            lines.append(f"Measured by the evaluator: bandwidth and matmul peak {UNKNOWN} (no floor measured yet)")
    names = ("nvcc", "triton", "torch") if cuda_runs(info) and kind != "triton" else ("triton", "torch")
    comp = ", ".join(f"{name} {info.get(name) or UNKNOWN}" for name in names)
    lines.append(f"Compilers: {comp}")
    if ncu_line and profiled is not None:
        lines.append(f"Nsight Compute (#{profiled.id}): {ncu_line}")
    return "\n".join(lines) + "\n"
