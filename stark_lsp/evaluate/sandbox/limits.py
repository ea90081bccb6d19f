"""Resource limits for the processes that run candidate code or build it."""

from __future__ import annotations

import resource


def apply_limits(max_file_bytes: int = 8 << 30, max_open_files: int = 4096, max_address_bytes: int | None = None) -> None:
    """Resource limits for a process that runs candidate code."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _lower(resource.RLIMIT_FSIZE, max_file_bytes)
    _lower(resource.RLIMIT_NOFILE, max_open_files)
    if hasattr(resource, "RLIMIT_MSGQUEUE"):  # a POSIX message queue would outlive the process: none
        _lower(resource.RLIMIT_MSGQUEUE, 0)
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
