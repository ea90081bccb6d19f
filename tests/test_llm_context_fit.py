"""Context that fits (issue 23, items 3a, 4a, 4b): a request over the server's context is named as such (not
an endpoint failure), the token estimate is calibrated from the server's own count, and ``--context-tokens``
is a cap the user hears about, with a request that cannot fit the server's context refused before it is sent."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from conftest_replay import replay  # noqa: F401  (the fixture)
from llm_trees import agent_ctx
from replay_server import completion, overflow_400

from stark_lsp.agents.base import AgentError, AgentsUnavailable
from stark_lsp.agents.llm.client import RATIO_RANGE, ChatClient
from stark_lsp.agents.llm.failures import is_endpoint_error, summarize
from stark_lsp.agents.team import make_team
from stark_lsp.context_budget import estimate_tokens

KEY = "sk-fitting-test-0123456789abcdef"
MSG = [{"role": "user", "content": "hi"}]
PLAN = "MARKER s1 lines 1-1: make it faster\nSUMMARY: faster"

pytestmark = pytest.mark.timeout(120)


def estimated(body) -> int:
    """What the client's estimate makes of a request (characters / 4, message by message)."""
    return sum(estimate_tokens(m.get("content") or "") for m in body["messages"])


# -- 3a: a context overflow is a full context, not an endpoint failure ---------------------------------------
@pytest.mark.parametrize("kind, figures", [
    ("llama.cpp", "prompt 2100 tokens + answer up to 1024 > 2048"),
    ("vllm", "prompt 2100 tokens + answer up to 1024 > 2048"),
    ("vllm-max-tokens", "prompt 2100 tokens + answer up to 1024 > 2048"),
    ("openai", "prompt 2100 tokens + answer up to 1024 > 2048"),
])
@pytest.mark.parametrize("warm", [False, True])
def test_a_context_overflow_400_is_a_full_context_with_its_figures_and_fix_and_not_retried(replay, kind, figures,
                                                                                            warm):
    client = ChatClient(replay.base_url, KEY, max_retries=3, max_tokens=1024, sleep=lambda s: None)
    if warm:
        replay.push(completion("ok"))
        client.chat("m", MSG, 0.1)
        replay.requests.clear()
    replay.push(overflow_400(kind), completion("never asked"))
    with pytest.raises(AgentError) as e:
        client.chat("m", MSG, 0.1)
    text = str(e.value)
    assert not isinstance(e.value, AgentsUnavailable)  # even on the first call: the server works
    assert "over the server's context" in text and figures in text, text
    assert "--context-tokens" in text and "--max-tokens" in text and "--ctx-size 4096" in text
    assert "--base-url" not in text and "STARK_API_KEY" not in text and not is_endpoint_error(text)
    assert len(replay.requests) == 1  # not retried: the same request would be refused again
    assert "max_tokens" in replay.requests[0]["body"]  # vLLM's words did not rename the parameter
    assert e.value.usage.calls == 1


def test_an_overflow_without_figures_gives_the_estimate_and_the_known_context(replay):
    client = ChatClient(replay.base_url, KEY, max_tokens=512)
    replay.push({"status": 400, "body": {"error": {"message": "Input is too long: the context length is exceeded"}}})
    with pytest.raises(AgentError, match=r"over the server's context: prompt ~1 tokens \+ answer up to 512"):
        client.chat("m", MSG, 0.1)


def test_a_run_of_overflows_is_exit_4s_full_context_not_the_endpoint():
    line = summarize(["plan agent (m): the request is over the server's context: prompt 2100 tokens + answer "
                      "up to 1024 > 2048 (HTTP 400: x): lower --context-tokens or --max-tokens, or start the server "
                      "with a larger context (llama.cpp: llama-server --ctx-size 4096)"] * 3)
    assert line.kind == "answers" and line.line.startswith("no request fit the server's context (3 attempts)")
    assert "--base-url" not in line.line and line.line.count("--ctx-size") == 1
    mixed = summarize(["plan agent: the request is over the server's context: …",
                       "plan agent: the plan answer has no MARKER line: answer with 'MARKER …'"])
    assert "the model answered 1 time but no answer was usable (1 without a MARKER line)" in mixed.line
    assert "1 more request was over the server's context" in mixed.line and "--ctx-size" in mixed.line


def test_an_overflow_reaches_the_agent_once_as_its_attempts_failure(replay):
    replay.push(overflow_400("llama.cpp"), completion(PLAN))
    team = make_team("openai", base_url=replay.base_url, model="m", api_key=KEY, max_retries=2)
    with pytest.raises(AgentError) as e:
        team.planner.plan(agent_ctx("plan"))
    assert str(e.value).startswith("plan agent (m): the request is over the server's context")
    assert len(replay.requests) == 1


# -- 4a: the estimate, calibrated to the server's count -------------------------------------------------------
def test_the_budget_is_scaled_by_the_servers_count_so_the_next_prompt_fits_it(replay):
    counted = []

    def server(body):  # a tokenizer that counts 1.3 times the estimate
        counted.append(math.ceil(1.3 * estimated(body)))
        return completion(PLAN, prompt_tokens=counted[-1])

    replay.responder = server
    team = make_team("openai", base_url=replay.base_url, model="m", api_key=KEY, max_retries=0)
    ctx = replace(agent_ctx("plan", node=2), context_tokens=2400)
    team.planner.plan(ctx)
    assert counted[0] > 2400  # fitted by the raw estimate, the first prompt was over the budget by the server's count
    assert team.planner.client.token_ratio == pytest.approx(1.3, abs=0.01)
    team.planner.plan(ctx)
    assert counted[1] <= 2400  # the second fits it
    assert counted[1] > 2400 * 0.85  # and still uses it: the window was shortened, not dropped
    assert "Search so far" in replay.requests[1]["body"]["messages"][1]["content"]


def test_the_ratio_is_clamped_smoothed_and_not_learnt_from_a_tiny_prompt():
    c = ChatClient("http://127.0.0.1:9/v1", KEY)
    c._learn(10, 500)  # "hi": mostly the chat template's tokens
    assert c.token_ratio == 1.0
    c._learn(1000, 9000)
    assert c.token_ratio == RATIO_RANGE[1]
    c._learn(1000, 1000)
    assert c.token_ratio == pytest.approx((RATIO_RANGE[1] + 1.0) / 2)  # the mean of the first replies
    assert c.prompt_budget(12000) == int(12000 / c.token_ratio)
    for _ in range(30):
        c._learn(1000, 1200)
    assert c.token_ratio == pytest.approx(1.2, abs=0.01)


# -- 4b: --context-tokens is a cap the user hears about -------------------------------------------------------
def test_a_prompt_whose_card_and_source_exceed_the_budget_is_said_once_and_still_sent(replay):
    replay.responder = lambda body: completion(PLAN, prompt_tokens=estimated(body))
    team = make_team("openai", base_url=replay.base_url, model="m", api_key=KEY, max_retries=0)
    heard = []
    ctx = replace(agent_ctx("plan", node=2), context_tokens=500, on_wait=heard.append)
    team.planner.plan(ctx)
    team.planner.plan(ctx)
    assert len(heard) == 1, heard  # once per run and agent
    assert heard[0].startswith("the prompt for the plan agent is ~") and "over --context-tokens 500" in heard[0]
    assert "the task card and the source cannot be cut; raise --context-tokens" in heard[0]
    assert team.planner.client.notices == heard
    assert len(replay.requests) == 2  # the agents need the source whole: sent all the same
    sent = replay.requests[0]["body"]["messages"][1]["content"]
    assert "#define" in sent or "def " in sent  # the source, not cut
    kept, passing = [], []  # where the search listens for notices apart, the notice goes there, not to on_wait
    team.planner.client._told.clear()
    team.planner.plan(replace(ctx, on_wait=passing.append, on_notice=kept.append))
    assert kept == heard and not any("cannot be cut" in line for line in passing)
    ok = replace(agent_ctx("plan", node=2), on_wait=heard.append)  # the default budget: nothing to say
    team.coder.client._told.clear()
    team.planner.plan(ok)
    assert len(heard) == 1


def test_a_prompt_the_server_cut_without_a_word_is_said_once_and_not_learnt_from(replay):
    """Ollama past its context length keeps the prompt's end and counts only that (no error): the count far
    below the estimate says so once, with the fix, and teaches the estimate nothing."""
    replay.responder = lambda body: completion(PLAN, prompt_tokens=estimated(body) // 4)
    team = make_team("openai", base_url=replay.base_url, model="m", api_key=KEY, max_retries=0)
    heard = []
    ctx = replace(agent_ctx("plan", node=2), on_wait=heard.append)
    team.planner.plan(ctx)
    team.planner.plan(ctx)
    cut = [line for line in heard if "cut the prompt" in line]
    assert len(cut) == 1, heard
    assert cut[0].startswith("the server counted ") and "prompt tokens of the ~" in cut[0]
    assert "OLLAMA_CONTEXT_LENGTH=32768, or lower --context-tokens" in cut[0]
    assert team.planner.client.token_ratio == 1.0  # a cut prompt's count is no tokenizer's
    fine = make_team("openai", base_url=replay.base_url, model="m", api_key=KEY, max_retries=0)
    replay.responder = lambda body: completion(PLAN, prompt_tokens=estimated(body))
    heard.clear()
    fine.planner.plan(ctx)
    assert not any("cut the prompt" in line for line in heard)


def test_a_prompt_that_cannot_fit_the_servers_context_is_refused_before_it_is_sent(replay):
    replay.models, replay.props = ["m"], {"default_generation_settings": {"n_ctx": 1024}, "total_slots": 4}
    team = make_team("openai", base_url=replay.base_url, model="m", api_key=KEY, max_retries=0)
    assert any("context is 1024 tokens" in n for n in team.probe())
    heard = []
    with pytest.raises(AgentError) as e:
        team.planner.plan(replace(agent_ctx("plan"), on_wait=heard.append))
    assert replay.requests == []  # no request wasted
    text = str(e.value)
    assert "over the server's context: the prompt (~" in text and "of its 1024 for the answer" in text
    assert "not sent" in text and "--ctx-size 2048" in text and not is_endpoint_error(text)
    assert len(heard) == 1
    assert "that the server's context (1024 tokens) leaves beside an answer of up to 512" in heard[0]
    assert "llama-server --ctx-size" in heard[0] and "--max-tokens" in heard[0]
    assert summarize([text]).kind == "answers"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("text", ["9" * 200000, "'max_tokens'" * 20000, "1 in the messages " * 20000])
def test_a_huge_overflow_message_is_read_in_bounded_time_and_figures(text):
    """A hostile server's 400 cannot hold the client (a regex that backtracks holds the GIL, so not
    even Ctrl-C is handled): its text is read in a bounded piece, with bounded counts."""
    httpx = pytest.importorskip("httpx2", reason="the openai client's HTTP library")
    import openai

    from stark_lsp.agents.llm import client as C

    req = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    e = openai.BadRequestError(f"context length exceeded: {text}", response=httpx.Response(400, request=req),
                               body={"type": "exceed_context_size_error", "message": text})
    assert C._overflows(e)
    prompt, answer, n_ctx = C._overflow_figures(e)
    assert all(x is None or 0 < x < 10**9 for x in (prompt, answer, n_ctx))
