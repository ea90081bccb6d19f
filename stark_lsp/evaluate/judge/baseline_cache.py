"""The baselines' figures on disk: eager's and torch.compile's timings of a task, kept across sessions.

Timing a task's reference and its ``torch.compile`` takes tens of seconds on
a level-2 model (the compile, then the batches), and a bench that resumes, a
repeated bench, or the editor optimizing the same kernel again would pay it
every time. The judge (trusted) writes what it measured into the user's cache
(``$STARK_EVAL_BASELINE_CACHE``, set by the evaluator to ``<cache>/baselines``; the
sandbox never sees it), and reads it back when every part of the key is the
same:

* the task's files (its source and harness, byte for byte), the shapes and
  dtypes of its inputs and outputs as drawn now (so ``STARK_SMALL`` or a
  changed ``get_inputs`` is another key);
* the timing options, whether torch.compile is timed, the chain forced by
  the environment and whether the device chain works in this judge, and
  the environment that changes what the reference or torch.compile runs
  (``TORCH*``, ``NVIDIA_TF32*``, ``CUBLAS*``, ...);
* the GPU (name, capability, memory, SMs), the driver, torch, Triton and
  CUDA versions;
* the judge's own timing code (its files' bytes): a new protocol times
  afresh.

An entry is used only if the folder and the file are the user's and
writable by nobody else, and for at most ``MAX_AGE_S`` (a week).

Not in it: modules the reference imports besides its own files, the
model's parameters and the inputs' values, drawn anew each
session, on which a runtime does not depend. A file that is missing,
malformed or of another format is timed afresh and replaced. The verdict
says when its baselines came from here, and when they were measured.
Setting ``STARK_EVAL_BASELINE_CACHE`` to nothing turns the cache off.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from stark_lsp.evaluate.judge import timing as TM
from stark_lsp.evaluate.judge.replies import compiled_code
from stark_lsp.evaluate.wire.channel import ChannelError
from stark_lsp.evaluate.judge.timed_calls import Timed
from stark_lsp.evaluate.judge.user_owned import owned

FORMAT = 2
MAX_AGE_S = 7 * 24 * 3600  # older figures are timed afresh (a driver's or a machine's state drifts)
# environment that changes what the reference or torch.compile runs (TF32, inductor's choices, cuBLAS)
_ENV_PREFIXES = ("TORCH", "NVIDIA_TF32", "CUBLAS", "CUDNN", "STARK_SMALL", "PYTORCH")
_CODE = ("timing.py", "timed_calls.py", "batches.py", "judge.py", "../harness.py", "../wire/device_chain.py",
         "../wire/device_chain_kernels.py", "../wire/digest.py", "../wire/signed_sum.py", "../candidate/process.py",
         "../candidate/compiled_capture.py", "../candidate/compile_stretch.py", "link.py", "replies.py")


def directory() -> Path | None:
    d = os.environ.get("STARK_EVAL_BASELINE_CACHE", "")
    return Path(d) if d else None


def code_digest() -> str:
    """The judge's timing code, as bytes: a change to the protocol is a change of key."""
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for name in _CODE:
        try:
            h.update((here / name).resolve().read_bytes())
        except OSError:
            h.update(name.encode())
    return h.hexdigest()[:16]


def file_digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(str(p.name).encode() + b"\0")
        h.update(p.read_bytes())
    return h.hexdigest()


def environment() -> dict[str, str]:
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith(_ENV_PREFIXES)}


def key(parts: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:32]


def _timed_doc(t: Timed) -> dict[str, Any]:
    f = t.figure
    return {"median_ms": f.median_ms, "bound_ms": f.bound_ms if math.isfinite(f.bound_ms) else None,
            "noise": f.noise if math.isfinite(f.noise) else None, "batches": f.batches, "calls": f.calls,
            "samples_ms": list(f.samples_ms), "slow": t.slow, "protocol_ms": t.protocol_ms, "fixed_ms": t.fixed_ms,
            "chain": t.chain}


def _num(v: Any, *, optional: bool = False) -> float | None:
    if v is None and optional:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise ValueError(f"not a figure: {v!r}")
    return float(v)


def _timed(d: Any) -> Timed:
    if not isinstance(d, dict):
        raise ValueError("not a timing")
    samples = d.get("samples_ms")
    if not isinstance(samples, list) or len(samples) > 100000:
        raise ValueError("no samples")
    bound, noise = _num(d.get("bound_ms"), optional=True), _num(d.get("noise"), optional=True)
    fig = TM.Figure(median_ms=_num(d.get("median_ms")) or 0.0, bound_ms=math.inf if bound is None else bound,
                    noise=math.inf if noise is None else noise, batches=int(_num(d.get("batches")) or 0),
                    calls=int(_num(d.get("calls")) or 0), samples_ms=tuple(_num(x) or 0.0 for x in samples))
    chain = d.get("chain")
    return Timed(fig, slow=d.get("slow") is True, protocol_ms=_num(d.get("protocol_ms"), optional=True),
                 fixed_ms=_num(d.get("fixed_ms"), optional=True), chain=chain if chain in ("host", "device") else "host")


def load(k: str) -> tuple[Timed, Timed | None, str, str, dict[str, Any] | None] | None:
    """(reference, compiled, note, when measured, what Inductor wrote) stored under ``k``, or None."""
    d = directory()
    if d is None:
        return None
    try:
        f = d / f"{k}.json"
        if not (owned(d) and owned(f)) or time.time() - f.stat().st_mtime > MAX_AGE_S:
            return None
        doc = json.loads(f.read_text())
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("key") != k:
            return None
        ref = _timed(doc.get("reference"))
        comp = _timed(doc["compiled"]) if doc.get("compiled") is not None else None
        note, when = doc.get("note", ""), doc.get("measured_at", "")
        if not isinstance(note, str) or not isinstance(when, str):
            return None
        code = doc.get("compiled_code")
        if code is not None:  # written by a judge of this machine, and only ever a proposal: checked as a reply is
            code = compiled_code({"compiled_code": code})
        return ref, comp, note[:500], when[:40], code
    except (OSError, ValueError, TypeError, KeyError, RecursionError, ChannelError):
        return None


def store(k: str, reference: Timed, compiled: Timed | None, note: str, parts: dict[str, Any],
          compiled_code: dict[str, Any] | None = None) -> None:
    """Write the figures under ``k`` (atomically: a reader never sees half a file). A cache that cannot
    be written only costs the next session the timing."""
    d = directory()
    if d is None:
        return
    doc = {"format": FORMAT, "key": k, "measured_at": time.strftime("%Y-%m-%d %H:%M:%S"), "parts": parts, "note": note,
           "reference": _timed_doc(reference), "compiled": _timed_doc(compiled) if compiled else None, "compiled_code": compiled_code}
    try:
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=f".{k}.", dir=d)
        with os.fdopen(fd, "w") as fh:
            json.dump(doc, fh, default=str)
        os.replace(tmp, d / f"{k}.json")
    except OSError:
        pass
