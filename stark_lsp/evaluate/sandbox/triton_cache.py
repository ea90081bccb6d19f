"""A scratch Triton cache for the zygote's own builds (driver stubs, warm-up kernels, launcher stubs).

Triton reads ``TRITON_CACHE_DIR`` when it builds; the zygote points it at a
new empty folder for the length of one build, takes what it needs from it,
and removes it, so nothing it builds lands in a folder a candidate can write.

A build that may be kept (``kept=True``: the driver stub, the device chain's
kernels and the launcher stubs, all trusted code) starts from the files
``seed`` was given (the last zygote's builds, from the judge's cache:
``judge/build_cache.py``), so Triton loads what it built before instead of
compiling it again; what such a build leaves in its folder is added to
``take_built()``. The warm-up is never seeded: compiling is its purpose. Triton's group files
name their members by absolute path, so a seeded one is rewritten for its new folder.
"""

from __future__ import annotations

import json
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


def _in_folder(rel: str, data: bytes, cache: str) -> bytes:
    """A seed file as it must read in ``cache``: Triton's group files (``__grp__*.json``) name their
    members by absolute path, in the folder they were built in; they are named in this one instead
    (a member is always beside its group file), and a group file that cannot be read is dropped."""
    name = rel.rsplit("/", 1)[-1]
    if not (name.startswith("__grp__") and name.endswith(".json")):
        return data
    folder = os.path.join(cache, os.path.dirname(rel))
    try:
        doc = json.loads(data)
        members = doc["child_paths"]
        names = {k: os.path.basename(str(v)) for k, v in members.items()}
        if any(n in ("", ".", "..") for n in names.values()):
            return b"{}"
        doc["child_paths"] = {k: os.path.join(folder, n) for k, n in names.items()}
        return json.dumps(doc).encode()
    except (ValueError, KeyError, AttributeError, TypeError):
        return b"{}"  # no child_paths: Triton takes it for a miss and builds again


@contextmanager
def scratch_cache(prefix: str, kept: bool = False) -> Iterator[Path]:
    """``TRITON_CACHE_DIR`` set to a new empty folder inside (holding the seed when ``kept``);
    restored and the folder removed after."""
    cache = tempfile.mkdtemp(prefix=prefix)
    old = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = cache
    try:
        written: dict[str, bytes] = {}
        if kept:
            for rel, data in _seed.items():
                dst = Path(cache) / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                written[rel] = _in_folder(rel, data, cache)
                dst.write_bytes(written[rel])
        yield Path(cache)
        if kept and _built is not None:
            for p in Path(cache).rglob("*"):
                if p.is_file() and not p.is_symlink():
                    rel = str(p.relative_to(cache))
                    data = p.read_bytes()  # a seed file as it was (its group file not renamed): no change
                    _built[rel] = _seed[rel] if rel in written and data == written[rel] else data
    finally:
        if old is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = old
        shutil.rmtree(cache, ignore_errors=True)
