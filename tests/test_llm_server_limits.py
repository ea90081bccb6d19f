"""The client fits itself to what a local server says of its limits (``agents/llm/server_limits.py``):
llama.cpp's ``/props`` (context, slots, chat template), vLLM's ``max_model_len``."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
from replay_server import ReplayServer, completion

from stark_lsp.agents.llm import server_limits as SL
from stark_lsp.agents.llm.client import ChatClient

CHATML = ("{%- for message in messages -%}\n  {{- '<|im_start|>' + message.role + '\\n' + message.content + "
          "'<|im_end|>\\n' -}}\n{%- endfor -%}")
# the shape llama.cpp's server (xllamacpp 2026.10) answers, cut to what is read
PROPS = {"default_generation_settings": {"n_ctx": 2048, "temperature": 0.8}, "total_slots": 1,
         "chat_template": CHATML, "model_path": "/root/.cache/gemma3/gemma-3-270m-q4_k_m.gguf", "build_info": "b1"}


@pytest.fixture
def replay():
    s = ReplayServer().start()
    yield s
    s.stop()


def test_props_are_read_from_llama_cpps_shape_and_anything_odd_is_unknown():
    lim = SL.from_props(PROPS)
    assert (lim.context_tokens, lim.slots, lim.model_path) == (2048, 1, PROPS["model_path"])
    assert SL.from_props({"default_generation_settings": {"n_ctx": "2048"}, "total_slots": True}) == SL.ServerLimits()
    assert SL.from_props(None) == SL.ServerLimits() and SL.from_props([1]) == SL.ServerLimits()
    assert SL.props_url("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/props"
    assert SL.props_url("http://h:1/v1/") == "http://h:1/props" and SL.props_url(None) is None


def test_vllm_names_its_context_with_the_model():
    listed = [SimpleNamespace(id="other", max_model_len=4096), SimpleNamespace(id="m", max_model_len=32768)]
    assert SL.with_model_length(SL.ServerLimits(), listed, "m").context_tokens == 32768
    assert SL.with_model_length(SL.ServerLimits(context_tokens=2048), listed, "m").context_tokens == 2048


def test_answers_get_half_the_context_and_prompts_the_rest():
    assert SL.fit_max_tokens(8192, 2048) == 1024 and SL.fit_max_tokens(512, 2048) == 512
    assert SL.fit_max_tokens(None, 2048) == 1024 and SL.fit_max_tokens(8192, None) == 8192
    assert SL.fit_max_tokens(8192, 300) == 256  # never below a usable answer where the context allows it
    assert SL.prompt_budget(12000, 2048, 1024) == 2048 - 1024 - SL.PROMPT_MARGIN_TOKENS
    assert SL.prompt_budget(500, 2048, 1024) == 500 and SL.prompt_budget(12000, None, 1024) == 12000


def test_the_chatml_fallback_is_said_for_a_model_not_trained_on_it():
    assert "ChatML" in SL.template_notice(SL.from_props(PROPS), "m")
    assert "gemma-3-270m" in SL.template_notice(SL.from_props(PROPS), "m")
    qwen = SL.from_props(dict(PROPS, model_path="/m/qwen2.5-0.5b-instruct-q4.gguf"))
    assert SL.template_notice(qwen, "m") is None
    assert SL.template_notice(SL.from_props(dict(PROPS, chat_template="gemma")), "m") is None


def test_the_probe_fits_the_client_to_the_server_before_the_first_request(replay):
    replay.models, replay.props = ["m"], PROPS
    client = ChatClient(base_url=replay.base_url, api_key="k", max_tokens=8192, max_concurrency=4, stream=False,
                        structured=False)
    notices = client.probe(["m"])
    assert replay.gets == ["/v1/models", "/props"]
    assert client.limits.context_tokens == 2048 and client.max_tokens == 1024
    assert any("context is 2048 tokens" in n and "capped at 1024" in n and "--max-tokens 8192" in n for n in notices)
    assert any("1 request at a time" in n for n in notices)
    assert any("ChatML" in n for n in notices)
    assert client.prompt_budget(12000) == 2048 - 1024 - SL.PROMPT_MARGIN_TOKENS
    replay.push(completion("ok"))
    client.chat("m", [{"role": "user", "content": "hi"}], 0.1)
    assert replay.requests[-1]["body"]["max_tokens"] == 1024


def test_requests_take_turns_in_the_client_when_the_server_has_one_slot(replay):
    replay.models, replay.props = ["m"], dict(PROPS, chat_template="gemma")
    client = ChatClient(base_url=replay.base_url, api_key="k", max_tokens=512, max_concurrency=4, stream=False,
                        structured=False)
    assert client.probe(["m"]) and client.max_tokens == 512  # asked for less than half: kept
    replay.push(completion("a"), completion("b"))
    replay.script[0]["delay_s"] = 0.3
    threads = [threading.Thread(target=client.chat, args=("m", [{"role": "user", "content": "hi"}], 0.1))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(replay.requests) == 2 and replay.peak == 1  # never two inside the server at once


def test_a_server_without_props_is_left_as_it_is(replay):
    replay.models = ["m"]
    client = ChatClient(base_url=replay.base_url, api_key="k", max_tokens=8192, max_concurrency=4, stream=False,
                        structured=False)
    assert client.probe(["m"]) == [] and client.max_tokens == 8192 and client.prompt_budget(12000) == 12000


# -- a hostile or broken server (a review's findings): never a crash, a hang, a key sent elsewhere


def _serve(handler_cls):
    import http.server

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler_cls)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def test_props_never_follow_a_redirect_so_the_key_stays_home():
    import http.server

    seen: list[str | None] = []

    class Elsewhere(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            seen.append(self.headers.get("Authorization"))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"total_slots": 1}')

        def log_message(self, *a):
            pass

    other = _serve(Elsewhere)

    class Redirect(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.1:{other.server_address[1]}/props")
            self.end_headers()

        def log_message(self, *a):
            pass

    home = _serve(Redirect)
    try:
        assert SL.read_props(f"http://127.0.0.1:{home.server_address[1]}/v1", "sk-secret", 5) is None
        assert seen == []  # the key never left for the other host
    finally:
        home.shutdown()
        other.shutdown()


@pytest.mark.parametrize("body", [b"[" * 100000, b"\xff\xfe not json", b"{" + b'"a":' * 5000])
def test_props_that_cannot_be_read_are_no_limits(body):
    import http.server

    class Odd(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = _serve(Odd)
    try:
        assert SL.read_props(f"http://127.0.0.1:{srv.server_address[1]}/v1", "k", 5) is None
    finally:
        srv.shutdown()


def test_a_bad_status_line_is_no_limits():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)

    def answer():
        c, _ = s.accept()
        c.recv(4096)
        c.sendall(b"GARBAGE\r\n\r\n")
        c.close()

    threading.Thread(target=answer, daemon=True).start()
    try:
        assert SL.read_props(f"http://127.0.0.1:{s.getsockname()[1]}/v1", "k", 5) is None
    finally:
        s.close()


def test_model_ids_that_are_not_names_never_crash_the_probe(replay):
    replay.models = [1, None, "m"]
    client = ChatClient(base_url=replay.base_url, api_key="k", max_tokens=512, stream=False, structured=False)
    assert client.probe(["m"]) == []


def test_usage_that_is_no_count_is_none():
    from stark_lsp.agents.llm.client import _count

    assert [_count(x) for x in (5, 0, -5, 2**63, 1e300, float("nan"), "abc", [1], True, None)] == [5] + [0] * 9


def test_attempts_in_flight_stay_few_whatever_the_server_says():
    from stark_lsp.agents.llm.in_flight import MAX_SLOTS_FOLLOWED, in_flight_for_server

    n, line = in_flight_for_server(SimpleNamespace(slots=lambda: 10**7))
    assert n == MAX_SLOTS_FOLLOWED + 1 and "answers 10000000 requests" in line
    assert in_flight_for_server(SimpleNamespace(slots=lambda: 2))[0] == 3
    assert in_flight_for_server(SimpleNamespace(slots=lambda: None)) is None


def test_props_dripped_a_byte_at_a_time_are_given_up_at_the_timeout():
    import http.server
    import time as _time

    class Drip(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(200)
            self.end_headers()
            try:
                for ch in b" " * 40 + b'{"total_slots": 1}':  # valid once whole: only the deadline refuses it
                    self.wfile.write(bytes([ch]))
                    self.wfile.flush()
                    _time.sleep(0.2)
            except OSError:
                pass

        def log_message(self, *a):
            pass

    srv = _serve(Drip)
    try:
        assert SL.read_props(f"http://127.0.0.1:{srv.server_address[1]}/v1", "k", 1.0) is None
    finally:
        srv.shutdown()
