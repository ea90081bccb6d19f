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
