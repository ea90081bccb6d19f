"""The cache key of a build: every file it read, by content.

A build's *pre-key* covers what is known before it runs: the candidate's
source, the settings, the target, the toolchain. What it reads besides (the
project's headers, the other translation units and their headers) is known
only afterwards, from the compiler's depfiles. So, as ccache's direct mode
does, the cache keeps per pre-key a small *manifest*: the inputs of each
earlier build with their content digests, and the key of the artifact they
made. A lookup re-hashes those files (a stat per file while it is unchanged)
and reuses the artifact whose inputs all still match; a changed header
matches no entry, so the build runs again.

Files of the toolchain (the CUDA toolkit, the host compiler's and the system's
headers) are covered by the toolchain's version in the pre-key and are not
hashed. A file outside the build's allowed folders, or not a regular file
(``/proc/self/environ``, a device), makes a build uncacheable: it is never
read here.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
from pathlib import Path

MAX_VARIANTS = 8
_TOOLCHAIN_PREFIXES = ("/usr/include/", "/usr/lib/gcc/", "/usr/lib64/gcc/", "/usr/local/include/",
                       "/usr/lib/llvm", "/opt/rh/")

_lock = threading.Lock()
_digests: dict[str, tuple[tuple[int, int, int, int], str]] = {}


class Uncacheable(Exception):
    """The build read something that must not be hashed or reused."""


def toolchain_prefixes(nvcc: str | None) -> tuple[str, ...]:
    """Folders whose files the toolchain's version covers."""
    out = list(_TOOLCHAIN_PREFIXES)
    if nvcc:
        real = os.path.realpath(nvcc)
        root = os.path.dirname(os.path.dirname(real))  # .../cuda-13.0/bin/nvcc -> .../cuda-13.0
        out.append(root.rstrip("/") + "/")
        out.append(os.path.dirname(os.path.dirname(os.path.abspath(nvcc))).rstrip("/") + "/")
    return tuple(out)


def file_digest(path: str) -> str | None:
    """sha256 of a regular file's bytes (cached while its inode, size and mtime stay); None if missing."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        raise Uncacheable(f"{path} is not a regular file")
    sig = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    with _lock:
        hit = _digests.get(path)
    if hit is not None and hit[0] == sig:
        return hit[1]
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    d = h.hexdigest()[:32]
    with _lock:
        _digests[path] = (sig, d)
    return d


def project_inputs(paths: list[str], allowed_roots: list[str], toolchain: tuple[str, ...],
                   skip: tuple[str, ...] = ()) -> dict[str, str]:
    """``{path: digest}`` of the files a build read, less the toolchain's and ``skip``'s.

    Raises Uncacheable for a file outside ``allowed_roots`` or not a regular file.
    """
    out: dict[str, str] = {}
    roots = [r.rstrip("/") + "/" for r in allowed_roots]
    for p in paths:
        real = os.path.realpath(p)
        if any(real.startswith(s) or p.startswith(s) for s in skip):
            continue
        if any(real.startswith(t) or os.path.normpath(p).startswith(t) for t in toolchain):
            continue
        if not any(real.startswith(r) for r in roots):
            raise Uncacheable(f"the build read {p}, outside the project's folders")
        d = file_digest(real)
        if d is None:
            raise Uncacheable(f"{p} went away during the build")
        out[real] = d
    return out


def final_key(prekey: str, inputs: dict[str, str]) -> str:
    h = hashlib.sha256(prekey.encode())
    for p in sorted(inputs):
        h.update(b"\0" + p.encode() + b"\0" + inputs[p].encode())
    return h.hexdigest()[:24]


class Manifests:
    """Per pre-key, the inputs and artifact key of recent builds (``<dir>/<prekey>.json``)."""

    def __init__(self, directory: Path):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)

    def lookup(self, prekey: str) -> str | None:
        """The key of an artifact whose inputs all still have the recorded digests."""
        for v in self._variants(prekey):
            try:
                if all(file_digest(p) == d for p, d in v["inputs"].items()):
                    return str(v["key"])
            except (Uncacheable, OSError):
                continue
        return None

    def record(self, prekey: str, inputs: dict[str, str], key: str) -> None:
        variants = [v for v in self._variants(prekey) if v.get("key") != key]
        variants.insert(0, {"inputs": inputs, "key": key})
        path = self.dir / f"{prekey}.json"
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps({"variants": variants[:MAX_VARIANTS]}))
        os.replace(tmp, path)

    def _variants(self, prekey: str) -> list[dict]:
        try:
            d = json.loads((self.dir / f"{prekey}.json").read_text())
            vs = d.get("variants", [])
            return [v for v in vs if isinstance(v, dict) and isinstance(v.get("inputs"), dict) and "key" in v]
        except (OSError, ValueError, AttributeError):
            return []
