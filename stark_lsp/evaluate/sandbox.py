"""The environment and limits that candidate code runs under.

Candidates are untrusted: they get an allow-listed environment (no API keys,
tokens or other secrets), their own working directory, no core dumps, and
limits on file size and open files. They never run in the caller's process.
"""

from __future__ import annotations

import os
import re
import resource

# Variables a CUDA / Triton / PyTorch process needs. Everything else is dropped.
_ALLOW_EXACT = {
    "PATH", "HOME", "LANG", "LANGUAGE", "TERM", "TZ", "USER", "LOGNAME", "SHELL",
    "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "PYTHONPATH", "PYTHONHASHSEED",
    "CC", "CXX", "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
    "CUDA_MODULE_LOADING", "CUDA_LAUNCH_BLOCKING", "NVIDIA_VISIBLE_DEVICES",
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
    "TORCH_EXTENSIONS_DIR", "TORCH_CUDA_ARCH_LIST", "MAX_JOBS", "TORCHINDUCTOR_CACHE_DIR",
    "TRITON_INTERPRET", "TRITON_CACHE_DIR", "TRITON_HOME", "TRITON_PTXAS_PATH",
    "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS",
    "STARK_SMALL", "VIRTUAL_ENV", "LC_ALL", "LC_CTYPE",
}
_ALLOW_PREFIX = ("LC_", "STARK_EVAL_")
_SECRET = re.compile(r"(KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION)", re.I)


def scrubbed_env(extra: dict[str, str] | None = None, base: dict[str, str] | None = None) -> dict[str, str]:
    """An allow-listed copy of the environment with anything secret-looking removed."""
    base = dict(os.environ if base is None else base)
    env = {
        k: v
        for k, v in base.items()
        if (k in _ALLOW_EXACT or k.startswith(_ALLOW_PREFIX)) and not _SECRET.search(k)
    }
    for k, v in (extra or {}).items():
        if _SECRET.search(k):
            raise ValueError(f"refusing to pass {k} to candidate code")
        env[k] = v
    return env


def apply_limits(max_file_bytes: int = 8 << 30, max_open_files: int = 4096, max_address_bytes: int | None = None) -> None:
    """Resource limits for the worker process (called in the child before exec)."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _lower(resource.RLIMIT_FSIZE, max_file_bytes)
    _lower(resource.RLIMIT_NOFILE, max_open_files)
    if max_address_bytes:  # only without CUDA: the driver reserves huge address ranges
        _lower(resource.RLIMIT_AS, max_address_bytes)


def _lower(which: int, value: int) -> None:
    soft, hard = resource.getrlimit(which)
    new_hard = value if hard == resource.RLIM_INFINITY else min(hard, value)
    new_soft = value if soft == resource.RLIM_INFINITY else min(soft, value, new_hard)
    try:
        resource.setrlimit(which, (min(new_soft, new_hard), new_hard))
    except (ValueError, OSError):
        pass
