"""The real LLM agents and client against the local replay server."""

import logging
import threading
from pathlib import Path

import pytest

from conftest_replay import replay  # noqa: F401  (the fixture)
from llm_trees import agent_ctx
from replay_server import RECORDINGS, completion, load_recording
from stark_lsp.agents.base import AgentError, AgentsUnavailable
from stark_lsp.agents.llm.client import ChatClient
from stark_lsp.agents.llm.pricing import Price
from stark_lsp.agents.team import make_team
from stark_lsp.markers.syntax import apply_replacements

KEY = "sk-test-SECRET-0123456789abcdefXYZ"
MARKED = (RECORDINGS / "row_sum_marked.cu").read_text()


ctx = agent_ctx


def team_for(replay, **kw):
    kw.setdefault("max_retries", 2)
    return make_team("openai", base_url=replay.base_url, model="m-base", api_key=KEY, timeout_s=10, **kw)


def warm(team, replay):
    """One answered call first: later failures are the attempt's, not the endpoint's."""
    replay.push(completion("ready"))
    team.planner.client.chat("m", [{"role": "user", "content": "hi"}], 0.1)
    replay.requests.clear()


def no_key_anywhere(replay, *texts):
    for r in replay.requests:
        assert KEY not in r["raw"]
        assert r["headers"].get("authorization") == f"Bearer {KEY}"  # only where it belongs
    for t in texts:
        assert KEY not in t and KEY[8:20] not in t


def test_plan_code_debug_from_recordings(replay):
    replay.push(*load_recording("row_sum_plan_ok"), *load_recording("row_sum_code_blocks_ok"),
                *load_recording("row_sum_code_whole_file_ok"), *load_recording("row_sum_debug_ok"))
    team = team_for(replay, models={"code": "m-code"}, temperatures={"debug": 0.3})
    c = ctx()
    p = team.planner.plan(c)  # a whole-file plan: still accepted
    assert p.marked_source == MARKED
    assert p.summary == "256 threads per block and a warp-shuffle tail for the reduction"
    [ex] = p.exchanges
    assert ex.agent == "plan" and ex.usage.prompt_tokens == 1200 and ex.usage.completion_tokens == 400
    assert "NVIDIA H200" in ex.prompt and " 6 | #define THREADS 32" in ex.prompt and "SUMMARY:" in ex.prompt

    code_ctx = ctx("code", plan=(MARKED, p.summary))
    code = team.coder.code(code_ctx, p.marked_source)
    new = apply_replacements(p.marked_source, code.replacements)
    assert "#define THREADS 256" in new and "__shfl_down_sync" in new
    whole = team.coder.code(code_ctx, p.marked_source)
    assert whole.replacements == code.replacements

    dctx = ctx("debug", node=3, upto=3)  # (#4 of the sample tree is the recorded answer's source)
    d = team.debugger.debug(dctx)
    assert "#define THREADS 128" in d.source and d.summary == "size the shared buffer by THREADS again"

    bodies = [r["body"] for r in replay.requests]
    assert [(b["model"], b["temperature"]) for b in bodies] == [
        ("m-base", 0.8), ("m-code", 0.1), ("m-code", 0.1), ("m-base", 0.3)]
    assert all(b["max_tokens"] == 8192 for b in bodies)  # every answer is capped
    assert all(r["path"] == "/v1/chat/completions" for r in replay.requests)
    no_key_anywhere(replay, ex.prompt, ex.response, d.exchanges[0].prompt, repr(team))


@pytest.mark.parametrize("entry, fragment", [
    (completion(""), "answer was empty"),
    (completion("MARKER threads lines 6-6: set THREADS", finish_reason="length", completion_tokens=8192), "cut off at the token limit"),
    (completion("Use more threads, it will be faster."), "no MARKER line"),
    (completion("```cuda\n" + MARKED.replace("acc += row[c];", "acc += 2 * row[c];") + "```"), "changed code outside the markers"),
    (completion("```cuda\n" + MARKED.replace("// @stark end reduce\n", "") + "```"), "marker 'reduce' is never ended"),
    (completion("MARKER threads lines 60-61: set THREADS to 256"), "line 60 is outside the source (lines 1-30)"),
])
def test_unusable_plans_are_asked_again_once_then_fail(replay, entry, fragment):
    team = team_for(replay)
    warm(team, replay)
    replay.push(entry, entry)
    with pytest.raises(AgentError) as e:
        team.planner.plan(ctx())
    assert fragment in str(e.value) and not isinstance(e.value, AgentsUnavailable)
    assert len(replay.requests) == 2 and len(e.value.exchanges) == 2
    second = replay.requests[1]["body"]["messages"]
    assert second[-1]["role"] == "user" and fragment in second[-1]["content"]  # the exact error, quoted
    assert second[-2] == {"role": "assistant", "content": entry["content"]}
    no_key_anywhere(replay, str(e.value), e.value.raw)


def test_code_marker_violations_are_asked_again(replay):
    team = team_for(replay)
    warm(team, replay)
    one = completion("```replace threads\n#define THREADS 256\n```")
    other = completion("```replace threads\n#define THREADS 256\n```\n```replace reduce\n\n```\n```replace other\nx\n```")
    replay.push(one, one)
    with pytest.raises(AgentError, match="no block for marker id\\(s\\) reduce"):
        team.coder.code(ctx("code", plan=(MARKED, "p")), MARKED)
    replay.push(other, other)
    with pytest.raises(AgentError, match="unknown marker id\\(s\\) other"):
        team.coder.code(ctx("code", plan=(MARKED, "p")), MARKED)
    assert len(replay.requests) == 4


def test_retries_on_429_500_and_dropped_connections(replay):
    replay.push({"status": 429, "headers": {"Retry-After": "0"}},
                {"status": 500},
                {"drop": True},
                *load_recording("row_sum_plan_ok"))
    slept = []
    client = ChatClient(replay.base_url, KEY, timeout_s=10, max_retries=3, backoff_s=0.001, sleep=slept.append)
    reply = client.chat("m", [{"role": "user", "content": "hi"}], 0.8)
    assert reply.text.startswith("I will raise the block size")
    assert len(replay.requests) == 4
    assert slept[0] == 0.0  # Retry-After honoured
    assert len(slept) == 3 and all(0 <= s < 0.01 for s in slept[1:])


def test_retry_after_is_respected_and_gives_up_after_max_retries(replay):
    replay.push({"status": 429, "headers": {"Retry-After": "7"}}, {"status": 503}, {"status": 502})
    slept = []
    client = ChatClient(replay.base_url, KEY, timeout_s=10, max_retries=2, backoff_s=0.001, sleep=slept.append)
    with pytest.raises(AgentsUnavailable) as e:  # it never answered: the endpoint is unusable
        client.chat("m", [{"role": "user", "content": "hi"}], 0.1)
    assert "failed its first call" in str(e.value)
    assert "after 3 attempts" in str(e.value) and "HTTP 502" in str(e.value)
    assert slept[0] == 7.0 and len(slept) == 2
    assert e.value.usage.calls == 3


def test_key_in_an_error_message_is_redacted(replay, caplog):
    replay.push({"status": 401, "body": {"error": {"message": f"Incorrect API key provided: {KEY[:20]}...{KEY[-4:]}"}}})
    caplog.set_level(logging.DEBUG)
    team = team_for(replay)
    with pytest.raises(AgentsUnavailable) as e:
        team.planner.plan(ctx())
    assert "HTTP 401" in str(e.value) and "***" in str(e.value) and "refused the API key" in str(e.value)
    no_key_anywhere(replay, str(e.value), repr(e.value), caplog.text, repr(team.planner))
    assert KEY[:20] not in str(e.value) and KEY[-4:] not in str(e.value)


def test_usage_and_cost_accounting(replay):
    replay.push(completion("hello", prompt_tokens=1_000_000, completion_tokens=500_000, model="m"))
    client = ChatClient(replay.base_url, KEY, prices={"m": Price(2.0, 8.0)})
    reply = client.chat("m-2025", [{"role": "user", "content": "x"}], 0.1)  # priced by prefix
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.calls) == (1_000_000, 500_000, 1)
    assert reply.usage.cost_usd == pytest.approx(6.0)


def test_concurrency_limit_is_shared(replay):
    replay.push(*[dict(completion(f"answer {i}"), delay_s=0.2) for i in range(6)])
    client = ChatClient(replay.base_url, KEY, max_concurrency=2)
    threads = [threading.Thread(target=client.chat, args=("m", [{"role": "user", "content": "x"}], 0.1)) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(replay.requests) == 6 and 1 <= replay.peak <= 2


def test_stark_api_key_wins_over_openai_api_key(monkeypatch, replay):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("STARK_API_KEY", raising=False)
    with pytest.raises(AgentError, match="no API key: set STARK_API_KEY") as refused:
        make_team("openai", base_url="https://api.example.com/v1")  # a remote endpoint needs a key
    assert "one elsewhere that takes no key: STARK_API_KEY=EMPTY" in str(refused.value)  # vLLM on a GPU host
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-key-0000000000000000")
    monkeypatch.setenv("STARK_API_KEY", KEY)
    replay.push(completion("ok"), completion("ok"))
    team = make_team("openai", base_url=replay.base_url, model="m")
    team.planner.client.chat("m", [{"role": "user", "content": "x"}], 0.1)
    assert replay.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"
    assert KEY not in repr(team)
    # and through the CLI's factory, which used to pass OPENAI_API_KEY explicitly
    import argparse

    from stark_lsp.commands import optimize_cmd

    args = argparse.Namespace(llm="openai", base_url=replay.base_url, model="m")
    optimize_cmd.team_from_args(args).planner.client.chat("m", [{"role": "user", "content": "x"}], 0.1)
    assert replay.requests[1]["headers"]["authorization"] == f"Bearer {KEY}"


def test_make_team_defaults_and_errors():
    assert make_team().name == "builtin"
    with pytest.raises(AgentError, match="unknown team"):
        make_team("claude")
    with pytest.raises(AgentError, match="unknown agent name"):
        make_team("openai", api_key=KEY, models={"planner": "x"})
    with pytest.raises(AgentError, match="temperatures must be in"):
        make_team("openai", api_key=KEY, temperatures={"plan": 3.0})
    t = make_team("openai", api_key=KEY, base_url="http://127.0.0.1:9/v1", model="mm")
    assert t.name == "openai:mm"
    assert (t.planner.temperature, t.coder.temperature, t.debugger.temperature) == (0.8, 0.1, 0.1)
    c = t.planner.client
    assert (c.max_tokens, c.connect_timeout_s, c.read_timeout_s, c.max_retries, c.timeout_retries) == (8192, 10.0, 300.0, 3, 1)
    t = make_team("openai", api_key=KEY, max_tokens=2048, connect_timeout_s=2, read_timeout_s=30, max_retries=0,
                  timeout_retries=0)
    c = t.planner.client
    assert (c.max_tokens, c.connect_timeout_s, c.read_timeout_s, c.max_retries, c.timeout_retries) == (2048, 2.0, 30.0, 0, 0)


def _code_answer(reduce_lines: str) -> dict:
    from stark_lsp.markers.syntax import parse_markers

    spans = {m.id: m.span for m in parse_markers(MARKED)}
    spans["reduce"] = reduce_lines
    return completion("\n".join(f"```replace {i}\n{text}```" for i, text in spans.items()))


def test_code_answer_repeating_a_tree_source_gets_one_follow_up(replay):
    from stark_lsp.markers.syntax import parse_markers
    from stark_lsp.source_digest import source_digest

    (marker,) = [m for m in parse_markers(MARKED) if m.id == "reduce"]
    same = marker.span  # an "implementation" that changes nothing: the node's own source
    other = marker.span + "    // the same loop, new text\n"
    c = ctx("code", plan=(MARKED, "p"))
    repeated = apply_replacements(MARKED, {m.id: m.span for m in parse_markers(MARKED)})
    c.seen = {source_digest(repeated)}
    replay.push(_code_answer(same), _code_answer(other))
    res = team_for(replay).coder.code(c, MARKED)
    assert "new text" in apply_replacements(MARKED, res.replacements)
    assert [e.agent for e in res.exchanges] == ["code", "code"]
    follow_up = replay.requests[-1]["body"]["messages"]
    assert follow_up[-2]["role"] == "assistant" and "already judged" in follow_up[-1]["content"]

    # a second repeat is returned as it is (the search reuses the stored result), not a third call
    replay.push(_code_answer(same), _code_answer(same))
    again = team_for(replay).coder.code(c, MARKED)
    assert apply_replacements(MARKED, again.replacements) == repeated and len(again.exchanges) == 2
    assert len(replay.requests) == 4

    # nothing seen: one call, as before
    c.seen = set()
    replay.push(_code_answer(same))
    assert len(team_for(replay).coder.code(c, MARKED).exchanges) == 1


def test_debug_answer_repeating_a_tree_source_gets_one_follow_up(replay):
    from stark_lsp.source_digest import source_digest

    c = ctx("debug", node=3)
    first = c.node_source.replace("#define THREADS (2 * THREAD)", "#define THREADS 64")
    second = c.node_source.replace("#define THREADS (2 * THREAD)", "#define THREADS 128")
    assert first != c.node_source and second != first
    c.seen = {source_digest(first)}
    replay.push(completion(f"```cuda\n{first}```\nSUMMARY: 64 threads"),
                completion(f"```cuda\n{second}```\nSUMMARY: 128 threads"))
    d = team_for(replay).debugger.debug(c)
    assert d.source == second and d.summary == "128 threads" and len(d.exchanges) == 2


def test_recordings_are_realistic_files():
    assert all(p.suffix in (".json", ".cu") for p in Path(RECORDINGS).iterdir())


def test_a_server_on_this_machine_needs_no_key(monkeypatch, replay):
    """llama.cpp, vLLM and Ollama on loopback take no key (issue 23): the client sends a placeholder."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("STARK_API_KEY", raising=False)
    replay.push(completion("ok"))
    team = make_team("openai", base_url=replay.base_url, model="m")  # http://127.0.0.1:PORT/v1
    team.planner.client.chat("m", [{"role": "user", "content": "x"}], 0.1)
    assert replay.requests[0]["headers"]["authorization"] == "Bearer EMPTY"
