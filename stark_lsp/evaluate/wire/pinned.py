"""Page-locking the shared output buffer, so the GPU copies into and out of it at full speed.

A candidate's outputs travel through a ``memfd`` buffer (``channel.py``): the
candidate process copies them from the GPU into its mapping, the judge from
its own mapping onto the GPU. Both are pageable memory, which the driver
copies through a staging buffer (a 64 MB output: about 8 ms each way on the
H200's host). Each side registers its own mapping with CUDA
(``cudaHostRegister``), and the copies become direct (DMA).

The calls go to the CUDA runtime this process already loaded (torch's), found
by its path in ``/proc/self/maps``, so that a refused registration can be
cleared from that runtime's last-error slot: otherwise torch's next launch
check would report it as the candidate's error. Where there is no such
runtime, or CUDA refuses, the buffer simply stays pageable.
"""

from __future__ import annotations

import ctypes
import mmap
from functools import lru_cache

_PAGE = mmap.PAGESIZE


@lru_cache(maxsize=1)
def _cudart() -> ctypes.CDLL | None:
    """The CUDA runtime library loaded in this process (torch's), or None."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "libcudart.so" in line and "/" in line}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)  # the same handle: already loaded
            for name in ("cudaHostRegister", "cudaHostUnregister", "cudaGetLastError"):
                getattr(lib, name)
            lib.cudaHostRegister.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint]
            lib.cudaHostUnregister.argtypes = [ctypes.c_void_p]
            return lib
        except (OSError, AttributeError):
            continue
    return None


def address(buf: mmap.mmap) -> int:
    view = ctypes.c_char.from_buffer(buf)
    try:
        return ctypes.addressof(view)
    finally:
        del view  # no export may outlive this call: the mapping must stay closable


def pin(buf: mmap.mmap) -> int:
    """Register ``buf`` (a whole mapping) with CUDA; its address, or 0 where it stays pageable.
    Call only after this process initialised CUDA."""
    lib = _cudart()
    size = len(buf) // _PAGE * _PAGE
    if lib is None or size == 0:
        return 0
    addr = address(buf)
    if lib.cudaHostRegister(addr, size, 0) != 0:
        lib.cudaGetLastError()  # not the candidate's error: clear it
        return 0
    return addr


def unpin(addr: int) -> None:
    """Undo ``pin`` (before the mapping is closed)."""
    lib = _cudart()
    if addr and lib is not None and lib.cudaHostUnregister(addr) != 0:
        lib.cudaGetLastError()
