"""Streamed answers (stark_lsp/agents/llm/stream.py and the client): read as they come, with a deadline for
the whole answer, a loop cut short, progress for the CLI and the editor, and servers that do not stream."""

from __future__ import annotations

import pytest
from conftest_replay import replay  # noqa: F401  (the fixture)
from replay_server import completion

from stark_lsp.agents.base import AgentError
from stark_lsp.agents.llm import stream as S
from stark_lsp.agents.llm.client import ChatClient
from stark_lsp.agents.llm.failures import summarize

KEY = "sk-stream-test-0123456789abcdef"
ASK = [{"role": "user", "content": "hello"}]


def plan_ctx():
    from llm_trees import agent_ctx

    return agent_ctx("plan")


def test_an_answer_is_asked_for_as_a_stream_and_read_whole_with_its_usage(replay):
    replay.push(completion("MARKER s1 lines 1-2: a plan in many pieces " * 3, prompt_tokens=321, completion_tokens=45))
    c = ChatClient(replay.base_url, KEY, max_retries=0)
    reply = c.chat("m", ASK, 0.1)
    body = replay.requests[0]["body"]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert reply.text == "MARKER s1 lines 1-2: a plan in many pieces " * 3 and reply.finish_reason == "stop"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (321, 45)


def test_a_server_that_reports_no_usage_in_a_stream_gets_its_pieces_counted(replay):
    replay.push(dict(completion("abcdefgh" * 8), usage=None, piece=8))
    reply = ChatClient(replay.base_url, KEY, max_retries=0).chat("m", ASK, 0.1)
    assert reply.usage.completion_tokens == 8 and reply.usage.prompt_tokens == 0


def test_an_answer_past_its_deadline_is_cut_says_so_and_is_not_asked_again(replay):
    from stark_lsp.agents.team import make_team

    replay.push(dict(completion("MARKER s1 lines 1-2: slow " * 200), piece=4, chunk_delay_s=0.05))
    team = make_team("openai", base_url=replay.base_url, model="m", api_key=KEY, max_retries=0, answer_timeout_s=1.0)
    with pytest.raises(AgentError, match="cut at the answer deadline") as e:
        team.planner.plan(plan_ctx())
    assert "--answer-timeout" in str(e.value)
    assert len(replay.requests) == 1  # a second try would miss the deadline too
    assert "1 cut at the answer deadline" in summarize([str(e.value)]).line
    assert "--answer-timeout" in summarize([str(e.value)]).line


def _planner(replay, **options):
    from stark_lsp.agents.team import make_team

    return make_team("openai", base_url=replay.base_url, model="m", api_key=KEY, max_retries=0, read_timeout_s=60,
                     answer_timeout_s=1.0, **options).planner


def _client_went_away(replay) -> bool:
    import threading

    for _ in range(200):  # the server notices at its next write
        if replay.streams_closed:
            return True
        threading.Event().wait(0.05)
    return False


def test_a_stream_of_keep_alives_after_its_first_chunk_is_cut_at_the_deadline(replay):
    # the read timeout (60 s) never fires: comments keep arriving; only the wall clock ends it
    replay.push(dict(completion(""), head="MARKER s1 lines 1-2: a start", keepalive_s=0.05))
    with pytest.raises(AgentError, match=r"cut at the answer deadline \(--answer-timeout\)"):
        _planner(replay).plan(plan_ctx())
    assert len(replay.requests) == 1 and _client_went_away(replay)


@pytest.mark.parametrize("entry", [dict(keepalive_s=0.05), dict(head_delay_s=60)], ids=["keep-alives", "silence"])
def test_a_stream_with_no_text_by_the_deadline_is_no_answer_not_an_empty_one(replay, entry):
    replay.push(dict(completion(""), **entry))
    with pytest.raises(AgentError, match=r"no answer within --answer-timeout \(1 s\)") as e:
        _planner(replay).plan(plan_ctx())
    assert "empty" not in str(e.value)
    assert len(replay.requests) == 1  # a second try would miss the deadline too


def test_a_whole_answer_dripped_a_byte_at_a_time_is_bounded_by_the_answer_timeout(replay):
    replay.push(dict(completion("MARKER s1 lines 1-2: slow\nSUMMARY: slow"), drip_s=0.05))
    with pytest.raises(AgentError, match=r"no answer within --answer-timeout \(1 s\)"):
        _planner(replay, stream=False).plan(plan_ctx())
    assert replay.requests[0]["body"].get("stream") is None
    assert len(replay.requests) == 1 and _client_went_away(replay)


def test_an_answer_that_repeats_itself_is_cut_and_named_a_loop(replay):
    replay.push(dict(completion(""), loop="the kernel is the kernel is "))
    c = ChatClient(replay.base_url, KEY, max_retries=0)
    reply = c.chat("m", ASK, 0.1)
    assert reply.finish_reason == "loop" and len(reply.text) < 20000
    from stark_lsp.agents.llm.parse import check_reply

    with pytest.raises(AgentError, match="kept repeating the same text"):
        check_reply(reply.text, reply.finish_reason, "plan")


def test_a_waiting_answer_says_how_long_and_how_many_tokens_to_the_search(replay, monkeypatch):
    from stark_lsp.agents.team import make_team

    monkeypatch.setattr(S, "PROGRESS_S", 0.0)
    plan = "MARKER s1 lines 1-2: use a bigger block\n"
    replay.push(dict(completion(plan * 4, prompt_tokens=4000), piece=10, chunk_delay_s=0.01))  # the whole prompt
    lines: list[str] = []
    ctx = plan_ctx()
    ctx.on_wait = lines.append
    team = make_team("openai", base_url=replay.base_url, model="m", api_key=KEY, max_retries=0)
    try:
        team.planner.plan(ctx)
    except AgentError:
        pass  # the answer's use is not the point here
    assert lines and all(line.startswith("waiting for the plan agent (") and " tokens)" in line for line in lines)


def test_a_server_that_does_not_stream_is_asked_for_whole_answers_from_then_on(replay):
    replay.refuse_stream = True
    replay.push(completion("first"), completion("second"))
    c = ChatClient(replay.base_url, KEY, max_retries=0)
    assert c.chat("m", ASK, 0.1).text == "first"
    assert c.chat("m", ASK, 0.1).text == "second"
    streamed = [bool(r["body"].get("stream")) for r in replay.requests]
    assert streamed == [True, False, False]  # refused once (a 400 naming 'stream'), then never asked again


def test_no_stream_asks_for_whole_answers():
    from stark_lsp.commands.llm_args import add_llm_arguments, team_options
    import argparse

    p = argparse.ArgumentParser()
    add_llm_arguments(p)
    assert team_options(p.parse_args(["--no-stream", "--answer-timeout", "60"])) == {"stream": False,
                                                                                     "answer_timeout_s": 60.0}
    assert team_options(p.parse_args(["--no-structured"])) == {"structured": False}
    assert team_options(p.parse_args([])) == {}


def test_looping_needs_a_real_piece_repeated_over_a_span():
    assert S.looping("x = 1\n" * 200)
    assert S.looping("intro text " + "the same words again " * 40)
    assert not S.looping("x" * 5000)  # padding, not a phrase
    assert not S.looping("".join(f"line {i}\n" for i in range(400)))  # counting lines differ
    assert not S.looping("ab c " * 3)  # too short to tell
