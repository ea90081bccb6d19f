"""LSP over stdin/stdout without a reader thread.

pygls reads stdin in a worker thread, one ``readline`` (or ``read``) per
executor round trip: three thread hops per message, and it writes each
message with its own ``write`` and ``flush``. Every system call gives the GIL
away, and with a search's threads wanting it too, the loop then waits up to
a switch interval to get it back: a burst of requests waits on handoffs, not
on work. Here stdin is an ``asyncio`` pipe read by the event loop itself
(pygls's own message loop, ``pygls.io_.run_async``, runs on it unchanged), and
the messages sent in one turn of the loop go out in one write. Where stdin is
not a pipe or a socket (a regular file), pygls's reader is used.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from threading import Event
from typing import Any, BinaryIO

from pygls.io_ import StdinAsyncReader, run_async

log = logging.getLogger(__name__)
READ_LIMIT = 1 << 26  # a didOpen of a large file is one line of JSON
MAX_BATCH = 64  # messages written together at most


async def _reader(stdin: BinaryIO, server: Any) -> Any:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=READ_LIMIT)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    except (ValueError, OSError) as e:  # not a pipe, a socket or a character device
        log.info("stdin cannot be read by the event loop (%s): reading it in a thread", e)
        return StdinAsyncReader(stdin, server.thread_pool)
    return reader


class BatchedWriter:
    """pygls's writer interface; what is written during one turn of the event
    loop is written (and flushed) once, at its end, in order (at most
    ``MAX_BATCH`` messages at a time)."""

    def __init__(self, stdout: BinaryIO):
        self._out = stdout
        self._parts: list[bytes] = []
        self._scheduled = False

    def write(self, data: bytes) -> None:
        self._parts.append(data)
        if len(self._parts) >= MAX_BATCH:  # a long run of messages: do not hold them all back
            self.flush()
            return
        if self._scheduled:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on the loop (shutting down): write now
            self.flush()
            return
        self._scheduled = True
        loop.call_soon(self.flush)

    def flush(self) -> None:
        self._scheduled = False
        if self._parts:
            data, self._parts = b"".join(self._parts), []
            self._out.write(data)
            self._out.flush()

    def close(self) -> None:
        self.flush()
        self._out.close()


async def _serve(server: Any, stdin: BinaryIO) -> None:
    reader = await _reader(stdin, server)
    await run_async(stop_event=server._stop_event, reader=reader, protocol=server.protocol, logger=log,
                    error_handler=server.report_server_error)


def serve_stdio(server: Any, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
    """Run ``server`` (a pygls ``LanguageServer``) on stdio until the client exits."""
    server._stop_event = Event()
    writer = BatchedWriter(stdout or sys.stdout.buffer)
    server.protocol.set_writer(writer)
    try:
        asyncio.run(_serve(server, stdin or sys.stdin.buffer))
    except BrokenPipeError:
        log.error("the connection to the client is lost: shutting down")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        try:
            writer.flush()
        except (BrokenPipeError, ValueError):
            pass
        server.shutdown()
