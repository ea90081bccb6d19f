"""Triton's launcher stubs, built by the zygote (trusted) instead of by each candidate process.

Triton (3.6 on the H200 image) compiles a small C extension with gcc for
every kernel signature it launches (``__triton_launcher``, about 0.3 s). A
fresh process per candidate with an empty cache would pay it on every
candidate, and a cache shared with candidates could be poisoned (a stub
planted under another kernel's key). So:

1. the candidate process notes the signature of every launcher Triton makes
   (``log_signatures``, installed before any candidate code);
2. the launch-check reply carries them to the judge, which keeps only
   signatures made of known type names (``valid_signatures``): a claim, not
   code;
3. the judge hands them to the zygote, which generates each stub's C source
   with Triton's own generator from the type names alone and compiles it
   (``build``), content-addressed by Triton's own key; the next candidate
   processes get copies in their fresh caches, like the driver stubs.

A candidate can make the zygote build stubs for signatures it names (a few,
bounded), never put its own bytes in another's cache.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

MAX_NEW = 8  # signatures one evaluation may add
MAX_KEPT = 64  # signatures the zygote keeps stubs for
MAX_ARGS = 64
_TYPE = re.compile(r"\*?(?:i1|i8|i16|i32|i64|u1|u8|u16|u32|u64|fp16|bf16|fp32|f32|fp64|"
                   r"fp8e4nv|fp8e4b15|fp8e4b8|fp8e5|fp8e5b16)|constexpr")


def valid_signatures(raw: Any, limit: int = MAX_NEW) -> list[tuple[str, ...]]:
    """The well-formed signatures among ``raw`` (a list of lists of type names), deduplicated."""
    out: list[tuple[str, ...]] = []
    if not isinstance(raw, list):
        return out
    for sig in raw[:256]:
        if (isinstance(sig, list) and 0 < len(sig) <= MAX_ARGS
                and all(isinstance(t, str) and _TYPE.fullmatch(t) for t in sig)):
            key = tuple(sig)
            if key not in out:
                out.append(key)
        if len(out) >= limit:
            break
    return out


def log_signatures(sink: list[list[str]]) -> bool:
    """In the candidate process, before any candidate code: note each launcher signature
    Triton generates into ``sink``. False where this Triton makes no per-signature stubs."""
    try:
        from triton.backends.nvidia import driver as drv
    except Exception:  # noqa: BLE001 - no Triton, or no CUDA backend
        return False
    make = getattr(drv, "make_launcher", None)
    if not callable(make):
        return False

    def logged(constants: Any, signature: Any, *args: Any, **kw: Any) -> Any:
        meta = args[0] if args else kw.get("tensordesc_meta")
        if not meta and isinstance(signature, dict) and len(sink) < 256:
            sink.append([v for v in signature.values()])
        return make(constants, signature, *args, **kw)

    drv.make_launcher = logged
    return True


def build(signatures: list[tuple[str, ...]]) -> dict[str, bytes]:
    """In the zygote: compile the stubs of ``signatures`` exactly as Triton's launcher
    would (same generator, same key); the cache files they make, as bytes."""
    try:
        from triton.backends.nvidia import driver as drv
    except Exception:  # noqa: BLE001
        return {}
    make = getattr(drv, "make_launcher", None)
    compile_src = getattr(drv, "compile_module_from_src", None)
    if not callable(make) or not callable(compile_src):
        return {}
    cache = tempfile.mkdtemp(prefix="stark-launchers-")
    old = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = cache
    files: dict[str, bytes] = {}
    try:
        for sig in signatures:
            try:
                src = make({}, dict(enumerate(sig)), None)
                compile_src(src=src, name="__triton_launcher", library_dirs=drv.library_dirs(),
                            include_dirs=drv.include_dirs, libraries=drv.libraries)
            except Exception as e:  # noqa: BLE001 - a stub not built costs one candidate a compile
                sys.stderr.write(f"zygote: launcher stub for {list(sig)} not built ({type(e).__name__})\n")
        for p in Path(cache).rglob("*"):
            if p.is_file():
                files[str(p.relative_to(cache))] = p.read_bytes()
    finally:
        if old is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = old
        shutil.rmtree(cache, ignore_errors=True)
    return files
