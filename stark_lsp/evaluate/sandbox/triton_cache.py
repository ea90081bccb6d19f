"""A scratch Triton cache for the zygote's own builds (driver stubs, warm-up kernels, launcher stubs).

Triton reads ``TRITON_CACHE_DIR`` when it builds; the zygote points it at a
new empty folder for the length of one build, takes what it needs from it,
and removes it, so nothing it builds lands in a folder a candidate can write.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def scratch_cache(prefix: str) -> Iterator[Path]:
    """``TRITON_CACHE_DIR`` set to a new empty folder inside; restored and the folder removed after."""
    cache = tempfile.mkdtemp(prefix=prefix)
    old = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = cache
    try:
        yield Path(cache)
    finally:
        if old is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = old
        shutil.rmtree(cache, ignore_errors=True)
