"""A local OpenAI-compatible server that replays scripted answers.

``ReplayServer`` listens on 127.0.0.1 (a free port) and answers each
``POST /v1/chat/completions`` with the next entry of its script:

* ``{"content": "...", "finish_reason": "stop", "usage": {...}}``: a chat completion;
* ``{"status": 429, "headers": {"Retry-After": "0"}, "body": {...}}``: an HTTP error;
* ``{"raw": "text", "status": 200}``: a body that is not JSON (garbage);
* ``{"drop": true}``: start a response, then close the socket mid-way;
* ``{"hang": true}``: answer nothing until ``release`` is set (or the server stops), then
  close the connection: a hung endpoint. ``hanging`` counts the requests held right now.

A request with ``"stream": true`` gets its completion entry as server-sent events (``_stream``:
``piece`` (default: a few hundred events in all), ``chunk_delay_s``, ``head_delay_s`` (a wait after the
first event, the role, before any text: a server still reading the prompt), ``loop``, ``keepalive_s``
(after the first event, which carries ``head`` as its text, only SSE comments ``: keep-alive``, one
every ``keepalive_s``, until the client goes away); usage when
``stream_options.include_usage`` asks for it, unless the entry's ``usage`` is None); ``refuse_stream``
answers such requests with a 400. A whole (not streamed) answer with ``drip_s`` is sent a byte at a
time, one every ``drip_s``, until its end or the client goes away (``streams_closed`` counts that too).
A context overflow is an HTTP error entry with the server's own body: ``overflow_400(kind)`` gives
llama.cpp's, vLLM's and OpenAI's.

The client's probe request of one token (``client.PROBE_PROMPT``: sent when ``models`` does not list the
model, or the route is missing) is answered as a server would, taking no scripted entry, and recorded in
``probes``, not ``requests``; ``probe_status`` makes it an HTTP error (404: an unknown model, as vLLM says it).
``GET /v1/models`` lists ``models`` (404 when it is None; ``models_status`` makes it an HTTP error), and
``GET /props`` answers ``props`` as llama.cpp's does (404 when None); their paths are recorded in ``gets``,
apart from the chat requests.
An empty script asks ``responder(request_body)`` for the entry when one is set, else answers 500. Every request is recorded (path, lower-cased headers, JSON
body) so tests can check models, temperatures and that no key leaked; ``peak`` is the
most requests handled at once.
Recordings of realistic answers live in tests/data/replay/*.json.
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

RECORDINGS = Path(__file__).resolve().parent / "data" / "replay"


def load_recording(name: str) -> list[dict[str, Any]]:
    return json.loads((RECORDINGS / f"{name}.json").read_text())


def completion(content: str, finish_reason: str = "stop", model: str = "replay-model",
               prompt_tokens: int = 100, completion_tokens: int = 50) -> dict[str, Any]:
    return {"content": content, "finish_reason": finish_reason, "model": model,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}}


def overflow_400(kind: str, prompt: int = 2100, context: int = 2048, answer: int = 1024) -> dict[str, Any]:
    """The HTTP 400 a server answers to a request over its context, as each says it."""
    if kind == "llama.cpp":  # llama.cpp's server (tools/server): its error type and figures
        error = {"code": 400, "message": "the request exceeds the available context size, try increasing it",
                 "type": "exceed_context_size_error", "n_prompt_tokens": prompt, "n_ctx": context}
        return {"status": 400, "body": {"error": error}}
    if kind == "vllm":  # vLLM's OpenAI server: the figures in words, the error at the top level
        return {"status": 400, "body": {
            "object": "error", "type": "BadRequestError", "param": None, "code": 400,
            "message": f"This model's maximum context length is {context} tokens. However, you requested "
                       f"{prompt + answer} tokens ({prompt} in the messages, {answer} in the completion). Please "
                       f"reduce the length of the messages or completion."}}
    if kind == "vllm-max-tokens":  # newer vLLM: names max_tokens and max_completion_tokens (not a parameter to rename)
        return {"status": 400, "body": {
            "object": "error", "type": "BadRequestError", "param": None, "code": 400,
            "message": f"'max_tokens' or 'max_completion_tokens' is too large: {answer}. This model's maximum "
                       f"context length is {context} tokens and your request has {prompt} input tokens "
                       f"({answer} > {context} - {prompt})."}}
    if kind == "openai":
        return {"status": 400, "body": {"error": {
            "message": f"This model's maximum context length is {context} tokens. However, your messages resulted "
                       f"in {prompt} tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}}
    raise ValueError(kind)


class ReplayServer:
    def __init__(self, script: list[dict[str, Any]] | None = None, responder: Any = None):
        self.script: deque[dict[str, Any]] = deque(script or [])
        self.responder = responder
        self.models: list[str] | None = None  # what GET /v1/models lists (None: the route is missing)
        self.models_status: int | None = None  # an HTTP error GET /v1/models answers instead
        self.props: dict[str, Any] | None = None  # what GET /props answers, as llama.cpp's (None: 404)
        self.probes: list[dict[str, Any]] = []  # the client's one-token probe requests (not in ``requests``)
        self.probe_status: int | None = None  # an HTTP error the probe's request gets (404: an unknown model)
        self.requests: list[dict[str, Any]] = []  # the chat requests (POST)
        self.gets: list[str] = []  # the paths of GET requests (the probe's /v1/models)
        self._lock = threading.Lock()
        self.release = threading.Event()
        self.hanging = 0
        self.active = 0
        self.peak = 0
        self.closed_hangs = threading.Semaphore(0)  # released once per hung request whose client went away
        self.refuse_stream = False  # answer a streamed request with a 400 naming 'stream'
        self.streams_closed = 0  # streamed answers whose client went away before their end
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_GET(self) -> None:  # noqa: N802  GET /v1/models: ``models`` (None: 404, as servers without it)
                with server._lock:
                    server.gets.append(self.path)
                if self.path.rstrip("/") == "/props":
                    if server.props is None:
                        return _send(self, 404, {"error": {"message": "not found", "type": "not_found"}})
                    return _send(self, 200, server.props)
                if server.models_status is not None:
                    return _send(self, server.models_status, {"error": {"message": "refused", "type": "auth"}})
                if server.models is None or not self.path.rstrip("/").endswith("/models"):
                    return _send(self, 404, {"error": {"message": "not found", "type": "not_found"}})
                return _send(self, 200, {"object": "list", "data": [{"id": m, "object": "model"} for m in server.models]})

            def do_POST(self) -> None:  # noqa: N802
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n).decode("utf-8", "replace")
                try:
                    body: Any = json.loads(raw)
                except ValueError:
                    body = raw
                if _is_probe(body):  # the client's one-token probe: answered as a server would, off the script
                    with server._lock:
                        server.probes.append(body)
                    if server.probe_status is not None:
                        return _send(self, server.probe_status, {"error": {
                            "message": f"The model `{body.get('model')}` does not exist.", "type": "NotFoundError"}})
                    return server._answer(self, {"content": "ready", "finish_reason": "length",
                                                 "usage": {"prompt_tokens": 12, "completion_tokens": 1}}, body)
                with server._lock:
                    server.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body, "raw": raw})
                    entry = server.script.popleft() if server.script else None
                    server.active += 1
                    server.peak = max(server.peak, server.active)
                if entry is None and server.responder is not None and isinstance(body, dict):
                    entry = server.responder(body)
                try:
                    delay = (entry or {}).get("delay_s")
                    if delay:
                        server.release.wait(delay)
                    server._answer(self, entry, body)
                finally:
                    with server._lock:
                        server.active -= 1

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def push(self, *entries: dict[str, Any]) -> None:
        with self._lock:
            self.script.extend(entries)

    def start(self) -> "ReplayServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> "ReplayServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- answers -------------------------------------------------------------------
    def _answer(self, h: BaseHTTPRequestHandler, entry: dict[str, Any] | None, request: Any) -> None:
        if entry is None:
            return _send(h, 500, {"error": {"message": "replay script is empty", "type": "server_error"}})
        if entry.get("hang"):
            with self._lock:
                self.hanging += 1
            h.connection.settimeout(0.05)
            try:
                while not self.release.is_set():
                    try:
                        if h.connection.recv(1, socket.MSG_PEEK) == b"":  # the client closed its end
                            self.closed_hangs.release()
                            break
                    except socket.timeout:
                        continue
                    except OSError:
                        self.closed_hangs.release()
                        break
            finally:
                with self._lock:
                    self.hanging -= 1
            h.close_connection = True
            return None
        if entry.get("drop"):
            h.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n{\"id\": \"chat")
            h.wfile.flush()
            h.connection.shutdown(socket.SHUT_RDWR)
            h.close_connection = True
            return None
        if "raw" in entry:
            return _send(h, entry.get("status", 200), entry["raw"], entry.get("headers"))
        if "status" in entry:
            body = entry.get("body") or {"error": {"message": f"scripted HTTP {entry['status']}", "type": "error"}}
            return _send(h, entry["status"], body, entry.get("headers"))
        model = entry.get("model") or (request.get("model") if isinstance(request, dict) else "replay")
        if isinstance(request, dict) and request.get("stream"):
            if self.refuse_stream:  # a server that does not stream: a 400 naming the parameter (the entry waits)
                with self._lock:
                    self.script.appendleft(entry)
                return _send(h, 400, {"error": {"message": "'stream' is not supported", "type": "invalid_request"}})
            return self._stream(h, entry, model, bool((request.get("stream_options") or {}).get("include_usage")))
        payload = {
            "id": "chatcmpl-replay",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": entry.get("content", "")},
                "finish_reason": entry.get("finish_reason", "stop"),
            }],
            "usage": dict(entry.get("usage") or {"prompt_tokens": 0, "completion_tokens": 0},
                          total_tokens=sum((entry.get("usage") or {}).values())),
        }
        if entry.get("drip_s"):
            return self._drip(h, json.dumps(payload).encode(), float(entry["drip_s"]))
        return _send(h, 200, payload)

    def _drip(self, h: BaseHTTPRequestHandler, data: bytes, every_s: float) -> None:
        """A whole answer, its head at once and its body a byte at a time (a server that drips it)."""
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.send_header("Connection", "close")
        h.end_headers()
        h.close_connection = True
        try:
            for i in range(len(data)):
                h.wfile.write(data[i:i + 1])
                h.wfile.flush()
                if self.release.wait(every_s):
                    return None
        except OSError:  # the client went away (its deadline)
            with self._lock:
                self.streams_closed += 1
        return None

    def _stream(self, h: BaseHTTPRequestHandler, entry: dict[str, Any], model: str, usage: bool) -> None:
        """The entry as server-sent events: its content in pieces of ``piece`` characters (each
        ``chunk_delay_s`` apart), then its finish reason, its usage (when asked for and ``usage`` is not
        None), and [DONE]. ``loop``: those characters again and again until the client goes away."""
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Connection", "close")
        h.end_headers()
        h.close_connection = True

        def event(delta: dict[str, Any] | None, finish: str | None = None, use: Any = None) -> None:
            chunk: dict[str, Any] = {"id": "chatcmpl-replay", "object": "chat.completion.chunk", "created": 0,
                                     "model": model, "choices": []}
            if delta is not None or finish is not None:
                chunk["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
            if use is not None:
                chunk["usage"] = use
            h.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            h.wfile.flush()

        text = entry.get("content", "")
        piece = int(entry.get("piece") or max(16, len(text) // 200))  # a big answer in a few hundred events
        delay = float(entry.get("chunk_delay_s", 0.0))
        try:
            event({"role": "assistant", "content": entry.get("head", "")})
            if entry.get("keepalive_s"):  # then only comments: the SSE reader skips them, no chunk comes
                while not self.release.wait(float(entry["keepalive_s"])):
                    h.wfile.write(b": keep-alive\n\n")
                    h.wfile.flush()
                return None
            if entry.get("head_delay_s"):
                self.release.wait(float(entry["head_delay_s"]))
            if entry.get("loop"):
                while not self.release.is_set():
                    event({"content": entry["loop"]})
                    if delay:
                        self.release.wait(delay)
                return None
            for i in range(0, len(text), piece):
                event({"content": text[i:i + piece]})
                if delay:
                    self.release.wait(delay)
            event({}, entry.get("finish_reason", "stop"))
            if usage and entry.get("usage", {}) is not None:
                u = dict(entry.get("usage") or {"prompt_tokens": 0, "completion_tokens": 0})
                event(None, use=dict(u, total_tokens=sum(u.values())))
            h.wfile.write(b"data: [DONE]\n\n")
            h.wfile.flush()
        except OSError:  # the client closed its end (a deadline, a loop cut, a cancel)
            with self._lock:
                self.streams_closed += 1
        return None


def _is_probe(body: Any) -> bool:
    """The client's probe request of one token (``client.PROBE_PROMPT``): it takes no scripted entry."""
    from stark_lsp.agents.llm.client import PROBE_PROMPT

    return isinstance(body, dict) and body.get("max_tokens") == 1 and \
        body.get("messages") == [{"role": "user", "content": PROBE_PROMPT}]


def _send(h: BaseHTTPRequestHandler, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
    data = (body if isinstance(body, str) else json.dumps(body)).encode()
    h.send_response(status)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(data)))
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.end_headers()
    h.wfile.write(data)
