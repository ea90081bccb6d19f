"""The per-SM and per-block limits of a GPU, for the agents' hardware card
(what KernelBench's prompts give a model: how much shared memory a block may
take, how many registers, threads and blocks an SM holds).

``gpu_limits(props)`` reads ``torch.cuda.get_device_properties``; a field the
installed torch does not expose (``regs_per_multiprocessor`` and
``shared_memory_per_block_optin`` are recent; the blocks per SM and the
registers per block are in none) comes from ``BY_CAPABILITY``, the CUDA C++
Programming Guide's "Technical Specifications per Compute Capability", for
the architectures listed; other limits are left out. Never raises: a limit
that cannot be read is simply not known.
"""

from __future__ import annotations

from typing import Any

KIB = 1024

# per compute capability: (max resident blocks per SM, max threads per SM,
# shared memory per SM, max shared memory per block opted in)
_SPECS = {
    "8.0": (32, 2048, 164 * KIB, 163 * KIB),  # A100
    "8.6": (16, 1536, 100 * KIB, 99 * KIB),  # RTX 30xx, A10, A40
    "8.9": (24, 1536, 100 * KIB, 99 * KIB),  # L4, L40, RTX 40xx
    "9.0": (32, 2048, 228 * KIB, 227 * KIB),  # H100, H200
    "10.0": (32, 2048, 228 * KIB, 227 * KIB),  # B200
}
BY_CAPABILITY: dict[str, dict[str, int]] = {
    cap: {"max_blocks_per_sm": blocks, "max_threads_per_sm": threads, "smem_per_sm": smem_sm,
          "smem_per_block_optin": smem_optin,
          # the same on every architecture since compute capability 5.0
          "smem_per_block": 48 * KIB, "regs_per_sm": 64 * KIB, "regs_per_block": 64 * KIB,
          "max_threads_per_block": 1024, "warp_size": 32}
    for cap, (blocks, threads, smem_sm, smem_optin) in _SPECS.items()
}

# our key: the attribute of torch's device properties that gives it
FROM_TORCH = {
    "smem_per_block": "shared_memory_per_block",
    "smem_per_block_optin": "shared_memory_per_block_optin",
    "smem_per_sm": "shared_memory_per_multiprocessor",
    "regs_per_sm": "regs_per_multiprocessor",
    "max_threads_per_sm": "max_threads_per_multi_processor",
    "max_threads_per_block": "max_threads_per_block",
    "warp_size": "warp_size",
}


def gpu_limits(props: Any) -> dict[str, int]:
    """The limits known for a device (``torch.cuda.get_device_properties(d)``): torch's
    figures first, the table's for the rest; {} when nothing is known."""
    out: dict[str, int] = {}
    try:
        cap = f"{int(props.major)}.{int(props.minor)}"
    except Exception:  # not a device's properties: the table cannot help
        cap = ""
    out.update(BY_CAPABILITY.get(cap, {}))
    for key, attr in FROM_TORCH.items():
        try:
            v = int(getattr(props, attr, 0) or 0)
        except Exception:
            v = 0
        if v > 0:
            out[key] = v
    return out
