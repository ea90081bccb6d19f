"""The wire between the judge and a candidate process, and how the judge reads it.

Messages are JSON objects, one per line, on a Unix socket that the judge made
for that one candidate process. Bulk data (output tensors) travels in a sealed
``memfd`` shared buffer that the judge made and sized: the candidate process
writes raw bytes there and describes them in its reply.

Everything that arrives from a candidate process is hostile input. The judge
reads with a deadline (a candidate that stops answering is killed), caps the
size of a message, rejects what is not strict JSON (no NaN, no Infinity), and
validates every tensor header (dtype from an allow-list, shape, size, offset
inside the buffer) before it copies the bytes out. A buffer that the candidate
could shrink under the judge's feet would crash the judge (SIGBUS), so the
buffer is sealed against resizing before it is handed over.
"""

from __future__ import annotations

import fcntl
import json
import math
import mmap
import os
import re
import select
import socket
import time
from typing import Any

from stark_lsp.output_names import output_name

MAX_MESSAGE = 4 << 20  # bytes in one reply; anything longer is garbage
MAX_DEPTH = 12  # lists and objects nested deeper than this are garbage (no reply needs more than 5)
ALIGN = 256

# dtype name -> bytes per element; the only dtypes a candidate may hand back
DTYPES = {
    "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "complex64": 8, "complex128": 16,
    "int8": 1, "uint8": 1, "int16": 2, "int32": 4, "int64": 8, "bool": 1,
}


class ChannelError(Exception):
    """The peer broke the protocol (garbage, oversize, a bad header)."""


class PeerClosed(ChannelError):
    """The peer closed its end (it died, or exited)."""


class Deadline(Exception):
    """No answer before the deadline."""


class Interrupted(Exception):
    """Another watched descriptor became readable first (a cancel request)."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed")


# an escape (a backslash and the byte after it), then a string once escapes are gone: two passes, each linear. One
# pattern for a whole string (``"(?:[^"\\]|\\.)*"``) backtracked over a string that never closes from every quote in
# it: a 2 MiB reply of escaped quotes kept the judge in the scan for hours (review of session 31)
_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_STRING = re.compile(rb'"[^"]*"')
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def nesting_depth(line: bytes, limit: int = MAX_DEPTH) -> int:
    """How deep ``[`` and ``{`` nest in a JSON text (outside strings), counted up to ``limit + 1``
    without parsing: a reply nested 100,000 deep never reaches the parser's recursion. Linear in the
    text's length, whatever it holds (outside a string a backslash is no JSON: the parser stops there, and
    up to that point the strings found here are the parser's)."""
    brackets = _STRING.sub(b"", _ESCAPE.sub(b"", line)).translate(None, _NOT_BRACKET)
    depth = deepest = 0
    for b in brackets:
        if b in (0x5B, 0x7B):
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    break
        else:
            depth -= 1
    return deepest


def decode(line: bytes) -> dict[str, Any]:
    if nesting_depth(line) > MAX_DEPTH:
        raise ChannelError(f"a message nested deeper than {MAX_DEPTH} levels")
    try:
        msg = json.loads(line.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError, MemoryError) as e:
        raise ChannelError(f"not a valid message ({type(e).__name__})") from None
    if not isinstance(msg, dict):
        raise ChannelError("a message must be a JSON object")
    return msg


def encode(msg: dict[str, Any]) -> bytes:
    return (json.dumps(msg, allow_nan=False, separators=(",", ":")) + "\n").encode()


class Channel:
    """One end of the line protocol over a connected socket."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self._buf = b""
        self.received_at = 0.0  # perf_counter() when the last message's final byte had arrived

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, msg: dict[str, Any], deadline: float | None = None) -> None:
        """Send ``msg`` whole. ``deadline`` (a ``time.monotonic()`` value): a peer that reads nothing
        until then (its side of the socket full) raises ``Deadline``, never a wait without end."""
        data = encode(msg)
        if deadline is None:
            try:
                self.sock.sendall(data)
            except OSError as e:
                raise PeerClosed(f"cannot send: {e}") from None
            return
        view = memoryview(data)
        while view:
            view = view[self._send_some(view):]
            if view:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Deadline()
                select.select([], [self.sock], [], min(left, 5.0))

    def send_now(self, msg: dict[str, Any]) -> None:
        """Send a short message without waiting: a peer that does not read what it is sent (the
        socket's buffer full) broke the protocol."""
        data = encode(msg)
        if self._send_some(memoryview(data)) != len(data):
            raise ChannelError("the peer does not read what it is sent")

    def _send_some(self, view: memoryview) -> int:
        """As many bytes of ``view`` as the socket takes now, without waiting."""
        try:
            return self.sock.send(view, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return 0
        except OSError as e:
            raise PeerClosed(f"cannot send: {e}") from None

    def recv(self, deadline: float | None = None, watch: tuple[int, ...] = ()) -> dict[str, Any]:
        """The next message. ``deadline`` is a ``time.monotonic()`` value; ``watch``:
        descriptors whose readiness interrupts the wait (raises ``Interrupted``)."""
        while b"\n" not in self._buf:
            if len(self._buf) > MAX_MESSAGE:
                raise ChannelError(f"a message over {MAX_MESSAGE >> 20} MiB")
            timeout = None if deadline is None else deadline - time.monotonic()
            if timeout is not None and timeout <= 0:
                raise Deadline()
            ready, _, _ = select.select([self.sock, *watch], [], [], None if timeout is None else min(timeout, 5.0))
            if any(w in ready for w in watch):
                raise Interrupted()
            if self.sock not in ready:
                continue
            try:
                chunk = self.sock.recv(1 << 16)
            except OSError as e:
                raise PeerClosed(str(e)) from None
            if not chunk:
                raise PeerClosed("the peer closed the channel")
            self._buf += chunk
        self.received_at = time.perf_counter()  # before decoding: the judge's clock stops at the last byte
        line, _, self._buf = self._buf.partition(b"\n")
        if len(line) > MAX_MESSAGE:
            raise ChannelError(f"a message over {MAX_MESSAGE >> 20} MiB")
        return decode(line)


# ----------------------------------------------------------------------------
# the shared buffer

def create_buffer(size: int) -> int:
    """A sealed memfd of ``size`` bytes (judge side); the caller owns the descriptor."""
    size = -(-max(ALIGN, int(size)) // mmap.PAGESIZE) * mmap.PAGESIZE  # whole pages: all of it can be pinned
    fd = os.memfd_create("stark-outputs", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, size)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
    return fd


def map_buffer(fd: int) -> mmap.mmap:
    return mmap.mmap(fd, os.fstat(fd).st_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)


def aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def finite_number(v: Any) -> bool:
    """A float that is finite, or an int a float holds exactly (a 400-digit int would
    overflow ``math.isfinite``)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return abs(v) <= 1 << 53 if isinstance(v, int) else math.isfinite(v)


def check_output_headers(headers: Any, capacity: int, limit: int = 64) -> list[dict[str, Any]]:
    """Validate what a candidate process says about the outputs it wrote.

    Each entry is ``{"kind": "tensor", "dtype", "shape", "offset", "nbytes", "stored"}``
    (``stored`` false when the data did not fit), ``{"kind": "scalar", "value"}``
    with a number, a bool, or one of the strings "nan", "inf", "-inf", or
    ``{"kind": "other", "type"}`` for anything else (a wrong answer, not a cheat).
    """
    if not isinstance(headers, list) or len(headers) > limit:
        raise ChannelError(f"outputs must be a list of at most {limit} entries")
    out: list[dict[str, Any]] = []
    spans: list[tuple[int, int]] = []
    for i, h in enumerate(headers):
        if not isinstance(h, dict):
            raise ChannelError(f"{output_name(i)}: not an object")
        kind = h.get("kind")
        if kind == "scalar":
            v = h.get("value")
            if isinstance(v, str):
                if v not in ("nan", "inf", "-inf"):
                    raise ChannelError(f"{output_name(i)}: bad scalar {v!r:.40}")
                v = float(v)
            elif not (isinstance(v, bool) or finite_number(v)):
                raise ChannelError(f"{output_name(i)}: bad scalar")
            out.append({"kind": "scalar", "value": v})
            continue
        if kind == "other":  # neither a tensor nor a number: an answer, a wrong one
            t = h.get("type")
            out.append({"kind": "other", "type": t[:60] if isinstance(t, str) else "?"})
            continue
        if kind != "tensor":
            raise ChannelError(f"{output_name(i)}: unknown kind {kind!r:.40}")
        dtype, shape = h.get("dtype"), h.get("shape")
        if not isinstance(dtype, str) or dtype not in DTYPES:  # (a list would raise in the lookup: unhashable)
            raise ChannelError(f"{output_name(i)}: dtype {dtype!r:.40} is not allowed")
        if not isinstance(shape, list) or len(shape) > 16 or not all(isinstance(d, int) and not isinstance(d, bool)
                                                                     and 0 <= d < (1 << 40) for d in shape):
            raise ChannelError(f"{output_name(i)}: bad shape")
        numel = math.prod(shape)
        if numel > 1 << 40:
            raise ChannelError(f"{output_name(i)}: {numel:.3g} elements is not an output")
        nbytes = numel * DTYPES[dtype]
        stored = h.get("stored") is True
        entry = {"kind": "tensor", "dtype": dtype, "shape": shape, "nbytes": nbytes, "stored": stored, "offset": 0}
        if stored:
            off = h.get("offset")
            if not isinstance(off, int) or isinstance(off, bool) or off < 0 or off % ALIGN or off + nbytes > capacity:
                raise ChannelError(f"{output_name(i)}: data outside the shared buffer")
            if h.get("nbytes") != nbytes:
                raise ChannelError(f"{output_name(i)}: size does not match its shape and dtype")
            if any(off < e and s < off + nbytes for s, e in spans):
                raise ChannelError(f"{output_name(i)}: overlaps another output")
            spans.append((off, off + nbytes))
            entry["offset"] = off
        out.append(entry)
    return out
