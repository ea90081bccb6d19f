"""The real LLM agents and client against the local replay server."""

import logging
from pathlib import Path

import pytest

from conftest_replay import replay  # noqa: F401  (the fixture)
from replay_server import RECORDINGS, completion, load_recording
from stark_lsp.agents.base import AgentContext, AgentError, ContextItem
from stark_lsp.agents.llm.client import ChatClient
from stark_lsp.agents.llm.pricing import Price
from stark_lsp.agents.team import make_team
from stark_lsp.markers.syntax import apply_replacements
from stark_lsp.tasks.spec import load_task

KEY = "sk-test-SECRET-0123456789abcdefXYZ"
SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "mistuned" / "row_sum.cu"
MARKED = (RECORDINGS / "row_sum_marked.cu").read_text()


def ctx(summary="#0 root: ok, 1.00x, 2 ms: the original kernel", diagnostics=""):
    task = load_task(SAMPLE)
    src = task.root_source()
    return AgentContext(task, 0, src, summary, diagnostics, [ContextItem("root", 0, summary, src)],
                        "### [root] ok, 1.00x\n(source above)", hardware="NVIDIA H200, 132 SMs", seed=3)


def team_for(replay, **kw):
    kw.setdefault("max_retries", 2)
    return make_team("openai", base_url=replay.base_url, model="m-base", api_key=KEY, timeout_s=10, **kw)


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
    p = team.planner.plan(c)
    assert p.marked_source == MARKED
    assert p.summary == "256 threads per block and a warp-shuffle tail for the reduction"
    [ex] = p.exchanges
    assert ex.agent == "plan" and ex.usage.prompt_tokens == 1200 and ex.usage.completion_tokens == 400
    assert "NVIDIA H200" in ex.prompt and c.node_source in ex.prompt and "SUMMARY:" in ex.prompt

    code = team.coder.code(c, p.marked_source)
    new = apply_replacements(p.marked_source, code.replacements)
    assert "#define THREADS 256" in new and "__shfl_down_sync" in new
    whole = team.coder.code(c, p.marked_source)
    assert whole.replacements == code.replacements

    d = team.debugger.debug(ctx("#4 plan: incorrect: max abs error 7.2", "mismatch on output 0"))
    assert "#define THREADS 128" in d.source and d.summary == "size the shared buffer by THREADS again"

    bodies = [r["body"] for r in replay.requests]
    assert [(b["model"], b["temperature"]) for b in bodies] == [
        ("m-base", 0.8), ("m-code", 0.1), ("m-code", 0.1), ("m-base", 0.3)]
    assert all(r["path"] == "/v1/chat/completions" for r in replay.requests)
    no_key_anywhere(replay, ex.prompt, ex.response, d.exchanges[0].prompt, repr(team))


@pytest.mark.parametrize("entry, fragment", [
    (completion(""), "answer was empty"),
    (completion("```cuda\n#define THREADS", finish_reason="length"), "cut off at the token limit"),
    (completion("Use more threads, it will be faster."), "no fenced code block"),
    (completion("```cuda\n" + MARKED.replace("acc += row[c];", "acc += 2 * row[c];") + "```"), "changed code outside the markers"),
    (completion("```cuda\n" + MARKED.replace("// @stark end reduce\n", "") + "```"), "marker 'reduce' is never ended"),
    ({"raw": "<html>garbage</html>"}, "plan agent"),
    ({"status": 400, "body": {"error": {"message": "bad request: context too long"}}}, "HTTP 400"),
])
def test_plan_failures_are_agent_errors(replay, entry, fragment):
    replay.push(entry)
    with pytest.raises(AgentError) as e:
        team_for(replay).planner.plan(ctx())
    assert fragment in str(e.value)
    assert len(replay.requests) == 1  # no retry for answers that were delivered
    no_key_anywhere(replay, str(e.value), e.value.raw)


def test_code_marker_violations(replay):
    replay.push(completion("```replace threads\n#define THREADS 256\n```"),
                completion("```replace threads\n#define THREADS 256\n```\n```replace reduce\n\n```\n```replace other\nx\n```"))
    team = team_for(replay)
    with pytest.raises(AgentError, match="no block for marker id\\(s\\) reduce"):
        team.coder.code(ctx(), MARKED)
    with pytest.raises(AgentError, match="unknown marker id\\(s\\) other"):
        team.coder.code(ctx(), MARKED)


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
    with pytest.raises(AgentError) as e:
        client.chat("m", [{"role": "user", "content": "hi"}], 0.1)
    assert "after 3 attempts" in str(e.value) and "HTTP 502" in str(e.value)
    assert slept[0] == 7.0 and len(slept) == 2
    assert e.value.usage.calls == 3


def test_key_in_an_error_message_is_redacted(replay, caplog):
    replay.push({"status": 401, "body": {"error": {"message": f"Incorrect API key provided: {KEY[:20]}...{KEY[-4:]}"}}})
    caplog.set_level(logging.DEBUG)
    team = team_for(replay)
    with pytest.raises(AgentError) as e:
        team.planner.plan(ctx())
    assert "HTTP 401" in str(e.value) and "***" in str(e.value)
    no_key_anywhere(replay, str(e.value), repr(e.value), caplog.text, repr(team.planner))
    assert KEY[:20] not in str(e.value)


def test_usage_and_cost_accounting(replay):
    replay.push(completion("hello", prompt_tokens=1_000_000, completion_tokens=500_000, model="m"))
    client = ChatClient(replay.base_url, KEY, prices={"m": Price(2.0, 8.0)})
    reply = client.chat("m-2025", [{"role": "user", "content": "x"}], 0.1)  # priced by prefix
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.calls) == (1_000_000, 500_000, 1)
    assert reply.usage.cost_usd == pytest.approx(6.0)


def test_concurrency_limit_is_shared(replay):
    import threading

    replay.push(*[completion(f"answer {i}") for i in range(6)])
    client = ChatClient(replay.base_url, KEY, max_concurrency=2)
    inside, peak, lock = [0], [0], threading.Lock()
    real = client._openai.chat.completions.create

    def counting(**kw):
        with lock:
            inside[0] += 1
            peak[0] = max(peak[0], inside[0])
        try:
            return real(**kw)
        finally:
            with lock:
                inside[0] -= 1

    client._openai.chat.completions.create = counting
    threads = [threading.Thread(target=client.chat, args=("m", [{"role": "user", "content": "x"}], 0.1)) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(replay.requests) == 6 and 1 <= peak[0] <= 2


def test_key_from_environment_and_missing_key(monkeypatch, replay):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("STARK_API_KEY", raising=False)
    with pytest.raises(AgentError, match="no API key"):
        make_team("openai", base_url=replay.base_url)
    monkeypatch.setenv("STARK_API_KEY", KEY)
    replay.push(completion("ok"))
    team = make_team("openai", base_url=replay.base_url, model="m")
    team.planner.client.chat("m", [{"role": "user", "content": "x"}], 0.1)
    assert replay.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"
    assert KEY not in repr(team)


def test_make_team_defaults_and_errors():
    assert make_team().name == "builtin"
    with pytest.raises(AgentError, match="unknown team"):
        make_team("claude")
    with pytest.raises(AgentError, match="unknown agent name"):
        make_team("openai", api_key=KEY, models={"planner": "x"})
    t = make_team("openai", api_key=KEY, base_url="http://127.0.0.1:9/v1", model="mm")
    assert t.name == "openai:mm"
    assert (t.planner.temperature, t.coder.temperature, t.debugger.temperature) == (0.8, 0.1, 0.1)


def _code_answer(reduce_lines: str) -> dict:
    from stark_lsp.markers.syntax import parse_markers

    spans = {m.id: m.span for m in parse_markers(MARKED)}
    spans["reduce"] = reduce_lines
    return completion("\n".join(f"```replace {i}\n{text}```" for i, text in spans.items()))


def test_code_answer_repeating_a_tree_source_gets_one_follow_up(replay):
    from stark_lsp.markers.syntax import parse_markers
    from stark_lsp.search.digest import source_digest

    (marker,) = [m for m in parse_markers(MARKED) if m.id == "reduce"]
    same = marker.span  # an "implementation" that changes nothing: the node's own source
    other = marker.span + "    // the same loop, new text\n"
    c = ctx()
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
    from stark_lsp.search.digest import source_digest

    c = ctx("#4 plan: incorrect: max abs error 7.2", "mismatch on output 0")
    first = c.node_source.replace("#define THREADS 32", "#define THREADS 64")
    second = c.node_source.replace("#define THREADS 32", "#define THREADS 128")
    assert first != c.node_source and second != first
    c.seen = {source_digest(first)}
    replay.push(completion(f"```cuda\n{first}```\nSUMMARY: 64 threads"),
                completion(f"```cuda\n{second}```\nSUMMARY: 128 threads"))
    d = team_for(replay).debugger.debug(c)
    assert d.source == second and d.summary == "128 threads" and len(d.exchanges) == 2
