"""A scratch Triton cache for the zygote's own builds (driver stubs, warm-up kernels, launcher stubs).

Triton reads ``TRITON_CACHE_DIR`` when it builds; the zygote points it at a
new empty folder for the length of one build, takes what it needs from it,
and removes it, so nothing it builds lands in a folder a candidate can write.

A build that may be kept (``kept=True``: the driver stub, the device chain's
kernels and the launcher stubs, all trusted code) starts from the files
``seed`` was given (the last zygote's builds, from the judge's cache:
``judge/build_cache.py``), so Triton loads what it built before instead of
compiling it again; what such a build leaves in its folder is added to
``take_built()``. The warm-up is never seeded: compiling is its purpose.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_seed: dict[str, bytes] = {}
_built: dict[str, bytes] | None = {}  # None once taken: later builds are not kept


def seed(files: dict[str, bytes]) -> None:
    """Files (relative path to bytes) every kept build's folder starts with."""
    _seed.update(files)


def seeded() -> frozenset[str]:
    """The seed's paths."""
    return frozenset(_seed)


def take_built() -> dict[str, bytes]:
    """What the kept builds so far left in their folders (the seed's files among them); from now on
    nothing more is kept (the zygote takes it once, before any candidate exists)."""
    global _built
    got, _built = _built or {}, None
    return got


@contextmanager
def scratch_cache(prefix: str, kept: bool = False) -> Iterator[Path]:
    """``TRITON_CACHE_DIR`` set to a new empty folder inside (holding the seed when ``kept``);
    restored and the folder removed after."""
    cache = tempfile.mkdtemp(prefix=prefix)
    old = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = cache
    try:
        if kept:
            for rel, data in _seed.items():
                dst = Path(cache) / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                dst.write_bytes(data)
        yield Path(cache)
        if kept and _built is not None:
            for p in Path(cache).rglob("*"):
                if p.is_file() and not p.is_symlink():
                    _built[str(p.relative_to(cache))] = p.read_bytes()
    finally:
        if old is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = old
        shutil.rmtree(cache, ignore_errors=True)
