"""What a candidate process may answer, checked field by field before the judge reads it.

Every reply is hostile input. ``wire/channel.py`` already refused what is not
strict JSON, too long or too deep; here each kind of reply is checked for its
fields' types, sizes and ranges and turned into plain typed values. Anything
malformed raises ``ChannelError``: the judge then fails *that candidate*
("broke the protocol") and goes on judging the next one. Nothing in a reply
reaches a dict lookup, an arithmetic operation or a format string unchecked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from stark_lsp.evaluate.result import Diagnostic
from stark_lsp.evaluate.wire.channel import DTYPES, ChannelError, finite_number
from stark_lsp.evaluate.wire.output_hash import HEX
from stark_lsp.safe_text import clean_text

STATUSES = ("compile_error", "runtime_error", "task_error")
MAX_OUTPUTS = 64
MAX_DIMS = 16


@dataclass(frozen=True)
class CallError:
    status: str  # one of STATUSES
    message: str
    diagnostics: list[Diagnostic]
    log: str
    sticky: bool


@dataclass(frozen=True)
class CallReply:
    """One call of a batch: its digest and what it returned (dtype and shape per output). No time:
    a call's time is the judge's clock's alone (``timing.py``)."""

    digest: list[list[float]]
    meta: list[tuple[Any, ...]]  # ("float32", (4, 8)) | ("scalar",) | ("other", "NoneType")
    hashes: list[str] = field(default_factory=list)  # per output: ``wire/output_hash.py``'s hash ('' if not a tensor)


def error_of(reply: dict[str, Any]) -> CallError | None:
    """The error a reply reports, if it is one (a malformed error is still an error)."""
    if "error" not in reply:
        return None
    raw = reply["error"]
    if not isinstance(raw, dict):
        return CallError("runtime_error", "the candidate process reported a malformed error", [], "", False)
    status = raw.get("status")
    status = status if isinstance(status, str) and status in STATUSES else "runtime_error"
    message = clean_text(raw.get("message") if isinstance(raw.get("message"), str) else "", 1000) or status
    return CallError(status, message, diagnostics(raw.get("diagnostics")),
                     clean_text(raw.get("log") if isinstance(raw.get("log"), str) else "", 20000),
                     raw.get("sticky") is True)


def diagnostics(raw: Any) -> list[Diagnostic]:
    out = []
    for d in raw[:20] if isinstance(raw, list) else []:
        if not isinstance(d, dict):
            continue
        line, col = small_int(d.get("line")), small_int(d.get("column"))
        sev = d.get("severity") if d.get("severity") in ("error", "warning", "note") else "error"
        msg = d.get("message") if isinstance(d.get("message"), str) else ""
        file = d.get("file") if isinstance(d.get("file"), str) else None
        out.append(Diagnostic(message=clean_text(msg, 2000), line=line, column=col, severity=sev,
                              file=clean_text(file, 300) if file is not None else None))
    return out


def small_int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 40 else None


def strings(v: Any, limit: int = 500) -> list[str]:
    return [clean_text(x, 300) for x in v[:limit] if isinstance(x, str)] if isinstance(v, list) else []


def _digest(raw: Any, i: int) -> list[list[float]]:
    if not isinstance(raw, list) or len(raw) > MAX_OUTPUTS:
        raise ChannelError(f"call {i + 1}: a digest must be a list of at most {MAX_OUTPUTS} outputs")
    out = []
    for row in raw:
        if (not isinstance(row, list) or len(row) != 4 or not all(finite_number(x) for x in row)
                or not all(float(c) >= 0 and float(c).is_integer() for c in row[1:])):
            raise ChannelError(f"call {i + 1}: a malformed digest")
        out.append([float(x) for x in row])
    return out


def _meta(raw: Any, i: int) -> list[tuple[Any, ...]]:
    if not isinstance(raw, list) or len(raw) > MAX_OUTPUTS:
        raise ChannelError(f"call {i + 1}: outputs must be described as a list of at most {MAX_OUTPUTS}")
    out: list[tuple[Any, ...]] = []
    for m in raw:
        if isinstance(m, list) and m == ["scalar"]:
            out.append(("scalar",))
        elif isinstance(m, list) and len(m) == 2 and m[0] == "other" and isinstance(m[1], str):
            out.append(("other", clean_text(m[1], 60)))
        elif (isinstance(m, list) and len(m) == 2 and isinstance(m[0], str) and m[0] in DTYPES
              and isinstance(m[1], list) and len(m[1]) <= MAX_DIMS
              and all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 40 for d in m[1])):
            out.append((m[0], tuple(m[1])))
        else:
            raise ChannelError(f"call {i + 1}: a malformed output description")
    return out


def batch(reply: dict[str, Any], calls: int) -> list[CallReply]:
    """The answer to a batch of ``calls`` calls: exactly that many entries, each well formed."""
    raw = reply.get("calls")
    if not isinstance(raw, list) or len(raw) != calls:
        raise ChannelError(f"a batch of {calls} calls must be answered with {calls} entries")
    out = []
    for i, c in enumerate(raw):
        if not isinstance(c, dict):
            raise ChannelError(f"call {i + 1}: not an object")
        meta = _meta(c.get("meta"), i)
        out.append(CallReply(_digest(c.get("digest"), i), meta, _hashes(c.get("hash"), len(meta), i)))
    return out


_HEX = frozenset("0123456789abcdef")


def _hashes(raw: Any, outputs: int, i: int) -> list[str]:
    """One hash per output: ``HEX`` lowercase hex digits, or '' (an output that is not a tensor)."""
    if (not isinstance(raw, list) or len(raw) != outputs
            or not all(isinstance(h, str) and (h == "" or (len(h) == HEX and set(h) <= _HEX)) for h in raw)):
        raise ChannelError(f"call {i + 1}: each output needs its hash")
    return list(raw)


def prepared(reply: dict[str, Any], calls: int) -> int:
    """The answer to ``prepare``: as many input sets as asked for."""
    if reply.get("prepared") != calls:
        raise ChannelError(f"{calls} input sets were to be drawn")
    return calls


def inputs_changed(reply: dict[str, Any]) -> int | None:
    v = reply.get("inputs_changed")
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 20 else None


def finite(v: Any) -> float | None:
    return float(v) if finite_number(v) and math.isfinite(float(v)) else None


MAX_COMPILED_CODE = 2_000_000  # characters of Inductor's output module (compiled_capture.MAX_CODE_CHARS)


def compiled_code(reply: dict[str, Any]) -> dict[str, Any]:
    """What the torch.compile baseline's process says Inductor wrote (``candidate/compiled_capture.py``):
    ``{"code", "inputs", "configs", "torch", "triton"}`` or ``{"error"}``, every field checked. It is
    only ever a proposal (the built-in team's starting point), judged later like any candidate."""
    raw = reply.get("compiled_code")
    if not isinstance(raw, dict):
        raise ChannelError("a compiled_code reply needs its compiled_code")
    if "error" in raw:
        return {"error": clean_text(str(raw.get("error")))[:500]}
    code, inputs, configs = raw.get("code"), raw.get("inputs"), raw.get("configs")
    if not isinstance(code, str) or not 0 < len(code) <= MAX_COMPILED_CODE:
        raise ChannelError("compiled_code: the code is not text of a sensible size")
    if not isinstance(inputs, list) or len(inputs) > 10000 or not all(isinstance(s, str) and len(s) <= 300
                                                                        for s in inputs):
        raise ChannelError("compiled_code: the graph's inputs are not a list of names")
    if not isinstance(configs, dict) or len(configs) > 10000:
        raise ChannelError("compiled_code: the kernels' configurations are not a mapping")
    out_cfg: dict[str, dict[str, Any]] = {}
    for name, c in configs.items():
        if not isinstance(name, str) or len(name) > 300 or not isinstance(c, dict):
            raise ChannelError("compiled_code: a kernel's configuration is malformed")
        kw = c.get("kwargs")
        nums = [c.get("num_warps"), c.get("num_stages")]
        if not isinstance(kw, dict) or len(kw) > 16 or not all(
                isinstance(k, str) and len(k) <= 64 and small_int(v) is not None for k, v in kw.items()) \
                or any(small_int(v) is None for v in nums):
            raise ChannelError(f"compiled_code: the configuration of {name[:60]!r} is malformed")
        out_cfg[name] = {"kwargs": {k: int(v) for k, v in kw.items()}, "num_warps": int(nums[0]),
                         "num_stages": int(nums[1])}
    versions = {k: clean_text(str(raw.get(k, "")))[:40] for k in ("torch", "triton")}
    return {"code": code, "inputs": list(inputs), "configs": out_cfg, **versions}
