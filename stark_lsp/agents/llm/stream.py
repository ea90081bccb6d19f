"""Reading a streamed chat completion: the answer as it comes, a deadline for the whole of it, a loop cut short.

With ``stream=True`` an OpenAI-compatible server sends the answer in chunks
(server-sent events). The read timeout then bounds the wait for each chunk,
not for the answer, so a slow local model that keeps writing is never cut by
it, and one that writes forever would never end: ``collect`` gives the whole
answer ``deadline_s`` (``--answer-timeout``), cuts an answer that repeats
itself (``looping``: a small model's failure mode), and reports its progress
(seconds, tokens) to ``on_tokens`` at most every ``PROGRESS_S``. The deadline holds on the wall clock,
not only when a chunk arrives: a server that, after its first chunk, sends only keep-alive comments
(``: ping`` lines, which the SSE reader skips) or nothing at all is cut at it too (``started``: when the
request was sent, so the wait for the response's head counts). What it
returns looks like a non-streamed completion (``choices[0].message.content``,
``finish_reason``, ``usage``, ``model``), so the client reads both alike.
Its own finish reasons: ``"deadline"`` and ``"loop"``. An exception while reading (a read timeout
between pieces) carries ``stark_partial``: (seconds, pieces with text) received before it, so the
client can tell a stall mid-answer (not asked again) from one before the answer began.
"""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any, Awaitable, Callable

PROGRESS_S = 5.0  # how often a waiting answer says how far it got
LOOP_CHECK_CHARS = 2048  # how often (in characters) an answer is checked for a loop
LOOP_MIN_REPEATS = 6
LOOP_MIN_SPAN = 600  # characters the repeats must cover
LOOP_MAX_PERIOD = 400
LOOP_TAIL = LOOP_MAX_PERIOD * LOOP_MIN_REPEATS + LOOP_MIN_SPAN  # enough for the longest loop looked for
LOOP_MIN_DISTINCT = 3  # characters in the repeated piece: a phrase or a line, not a run of one character (padding)


def looping(text: str) -> bool:
    """Whether ``text`` ends in one piece repeated over and over (``LOOP_MIN_REPEATS`` times at least,
    over ``LOOP_MIN_SPAN`` characters at least, the piece of ``LOOP_MIN_DISTINCT`` characters at
    least): a model caught in a loop."""
    n = len(text)
    for period in range(1, min(LOOP_MAX_PERIOD, n // LOOP_MIN_REPEATS) + 1):
        repeats = max(LOOP_MIN_REPEATS, -(-LOOP_MIN_SPAN // period))
        span = period * repeats
        if span > n:
            continue
        tail = text[n - period:]
        if len(set(tail)) >= LOOP_MIN_DISTINCT and text[n - span:] == tail * repeats:
            return True
    return False


class _Read:
    """What has come of a streamed answer so far."""

    def __init__(self, model: str):
        self.parts: list[str] = []
        self.tail = ""  # the answer's last LOOP_TAIL characters: what the loop check reads (never the whole again)
        self.size = self.checked = self.chunks = self.events = 0
        self.finish, self.usage, self.model = "", None, model


async def collect(stream: Any, *, deadline_s: float, on_tokens: Callable[[float, int], None] | None = None,
                  model: str = "", started: float | None = None) -> Any:
    """The streamed answer, read to its end, its deadline, or a loop (see the module's docstring)."""
    t0 = time.monotonic() if started is None else started
    got = _Read(model)
    try:  # the deadline holds between chunks too (keep-alive comments, silence)
        finished, _ = await within(_read(stream, got, t0, deadline_s, on_tokens), deadline_s - (time.monotonic() - t0))
        if not finished:
            got.finish = "deadline"
    except Exception as e:  # a read timeout, a dropped connection: what had come is noted for the client
        try:
            e.stark_partial = (time.monotonic() - t0, got.chunks)  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001  an exception that takes no attributes
            pass
        raise
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            try:
                await close()
            except Exception:  # noqa: BLE001  a connection already gone
                pass
    if not got.events:  # a body that is not server-sent events (an HTML page, a proxy's error)
        if got.finish == "deadline":
            return _reply(got)  # no event before the deadline: no answer (the client says so)
        raise ValueError("a streamed request got no events: the body is not server-sent events")
    return _reply(got)


async def within(aw: Awaitable[Any], seconds: float) -> tuple[bool, Any]:
    """``(True, its value)`` when ``aw`` ends within ``seconds`` of the wall clock (its exception raised as
    it is), else ``(False, None)``: it is cancelled then (a request's connection closed). A cancel of the
    caller cancels it too. (``asyncio.timeout`` is Python 3.11's; this is the same on 3.10.)"""
    task = asyncio.ensure_future(aw)
    try:
        done, _ = await asyncio.wait([task], timeout=max(0.0, seconds))
    except BaseException:
        task.cancel()
        raise
    if done:
        return True, task.result()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    return False, None


async def _read(stream: Any, got: _Read, t0: float, deadline_s: float,
                on_tokens: Callable[[float, int], None] | None) -> None:
    said = t0
    async for chunk in stream:
        got.events += 1
        got.model = getattr(chunk, "model", None) or got.model
        if getattr(chunk, "usage", None) is not None:
            got.usage = chunk.usage
        for choice in getattr(chunk, "choices", None) or []:
            delta = getattr(choice, "delta", None)
            text = getattr(delta, "content", None) if delta is not None else None
            if text:
                got.parts.append(text)
                got.tail = (got.tail + text)[-LOOP_TAIL:]
                got.size += len(text)
                got.chunks += 1
            if getattr(choice, "finish_reason", None):
                got.finish = choice.finish_reason
        now = time.monotonic()
        if on_tokens is not None and now - said >= PROGRESS_S:
            said = now
            on_tokens(now - t0, got.chunks)
        if now - t0 > deadline_s:
            got.finish = "deadline"
            return
        if got.size - got.checked >= LOOP_CHECK_CHARS:
            got.checked = got.size
            if looping(got.tail):
                got.finish = "loop"
                return


def _reply(got: _Read) -> Any:
    """What ``collect`` returns: the shape of a non-streamed completion."""
    usage = got.usage
    if usage is None:  # a server that does not report usage in a stream: what was received, counted
        usage = SimpleNamespace(prompt_tokens=0, completion_tokens=got.chunks)
    message = SimpleNamespace(content="".join(got.parts))
    return SimpleNamespace(choices=[SimpleNamespace(message=message, finish_reason=got.finish or "stop")],
                           usage=usage, model=got.model, streamed=True)
