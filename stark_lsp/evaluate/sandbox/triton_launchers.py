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
3. the judge hands them to the zygote, which first kills every process of
   the sandbox and wipes its scratch folders (so nothing of the candidate's
   is alive to write into the build), then generates each stub's C source
   with Triton's own generator from the type names alone and compiles it
   (``build``), content-addressed by Triton's own key, and keeps only the
   regular ``__triton_launcher`` libraries the build made (no links, no
   other files, a size cap); the next candidate processes get copies in
   their fresh caches, like the driver stubs.

A candidate can make the zygote build stubs for signatures it names (a few
per evaluation; the oldest stubs make room), never put its own bytes in
another's cache.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

from stark_lsp.evaluate.sandbox.triton_cache import scratch_cache

MAX_NEW = 4  # signatures one evaluation may add
MAX_KEPT = 64  # signatures the zygote keeps stubs for
MAX_ARGS = 64
MAX_STUB_BYTES = 4 << 20  # a launcher library is about 50-100 KB
STUB_NAME = "__triton_launcher"
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


def stub_files(cache: Path) -> dict[str, bytes]:
    """``<key>/__triton_launcher*.so`` under ``cache`` that are regular files within the size
    cap (never a link, a FIFO or anything else), as bytes."""
    import stat

    out: dict[str, bytes] = {}
    try:
        for key in os.scandir(cache):
            if not key.is_dir(follow_symlinks=False):
                continue
            for f in os.scandir(key.path):
                if not (f.name.startswith(STUB_NAME) and f.name.endswith(".so")):
                    continue
                st = os.lstat(f.path)
                if stat.S_ISREG(st.st_mode) and 0 < st.st_size <= MAX_STUB_BYTES:
                    fd = os.open(f.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                    with os.fdopen(fd, "rb") as fh:
                        data = fh.read(MAX_STUB_BYTES + 1)
                    if len(data) <= MAX_STUB_BYTES:
                        out[f"{key.name}/{f.name}"] = data
    except OSError as e:
        sys.stderr.write(f"zygote: launcher stubs not collected ({e})\n")
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
    with scratch_cache("stark-launchers-", kept=True) as cache:
        for sig in signatures:
            try:
                src = make({}, dict(enumerate(sig)), None)
                compile_src(src=src, name=STUB_NAME, library_dirs=drv.library_dirs(),
                            include_dirs=drv.include_dirs, libraries=drv.libraries)
            except Exception as e:  # noqa: BLE001 - a stub not built costs one candidate a compile
                sys.stderr.write(f"zygote: launcher stub for {list(sig)} not built ({type(e).__name__})\n")
        return stub_files(cache)
