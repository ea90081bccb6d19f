"""Structured answers (stark_lsp/agents/llm/structured.py): a JSON schema for each agent where the server takes
one, read by the same parsers as free text; a server that refuses the schema gets free-text requests."""

from __future__ import annotations

import json

from conftest_replay import replay  # noqa: F401  (the fixture)
from llm_trees import agent_ctx
from replay_server import RECORDINGS, completion, load_recording

from stark_lsp.agents.llm import structured as S
from stark_lsp.agents.team import make_team
from stark_lsp.markers.syntax import apply_replacements

KEY = "sk-structured-test-0123456789abcdef"
MARKED = (RECORDINGS / "row_sum_marked.cu").read_text()


ctx = agent_ctx


def team_for(replay):
    return make_team("openai", base_url=replay.base_url, model="m", api_key=KEY, max_retries=0)


def line_of(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def test_plan_code_and_debug_answers_in_json_reach_the_same_results_as_free_text(replay):
    c = ctx()
    root = c.node_source
    first = line_of(root, "for (int s = THREADS / 2")
    plan = {"markers": [{"id": "threads", "first": line_of(root, "#define THREADS"),
                         "last": line_of(root, "#define THREADS"), "instruction": "set THREADS to 256 (was 32)"},
                        {"id": "reduce", "first": first, "last": first + 5,
                         "instruction": "finish the last 32 partial sums with __shfl_down_sync instead of shared "
                                        "memory"}],
            "summary": "256 threads per block and a warp-shuffle tail for the reduction"}
    blocks = load_recording("row_sum_code_blocks_ok")[0]["content"]
    spans = {m: blocks.split(f"replace {m}\n", 1)[1].split("```", 1)[0] for m in ("threads", "reduce")}
    code = {"replacements": [{"id": k, "code": v} for k, v in spans.items()]}
    debug_src = load_recording("row_sum_debug_ok")[0]["content"].split("```cuda\n", 1)[1].rsplit("```", 1)[0]
    debug = {"summary": "size the shared buffer by THREADS again", "source": debug_src}
    replay.push(completion(json.dumps(plan)), completion(json.dumps(code)), completion(json.dumps(debug)))
    team = team_for(replay)

    p = team.planner.plan(c)
    assert p.marked_source == MARKED and p.summary == plan["summary"]
    assert p.exchanges[0].response == json.dumps(plan)  # the answer as the model gave it, on record
    got = team.coder.code(ctx("code", plan=(MARKED, p.summary)), p.marked_source)
    new = apply_replacements(p.marked_source, got.replacements)
    assert "#define THREADS 256" in new and "__shfl_down_sync" in new
    d = team.debugger.debug(ctx("debug", node=3, upto=3))
    assert "#define THREADS 128" in d.source and d.summary == debug["summary"]

    plan_schema = replay.requests[0]["body"]["response_format"]["json_schema"]["schema"]
    first_field = plan_schema["properties"]["markers"]["items"]["properties"]["first"]
    assert first_field == {"type": "integer", "minimum": 1, "maximum": len(root.splitlines())}  # lines that exist
    code_schema = replay.requests[1]["body"]["response_format"]["json_schema"]["schema"]["properties"]["replacements"]
    assert code_schema["items"]["properties"]["id"]["enum"] == ["threads", "reduce"]  # the plan's markers, each once
    assert code_schema["minItems"] == code_schema["maxItems"] == 2
    for r, role in zip(replay.requests, ("plan", "code", "debug")):
        body = r["body"]
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["name"] == f"stark_{role}"
        schema = body["response_format"]["json_schema"]["schema"]
        assert schema["required"] == S.SCHEMAS[role]["required"]
        assert body["messages"][-1]["content"].endswith(S.NOTES[role])  # the fields, besides the grammar


def test_a_server_that_refuses_the_schema_gets_free_text_requests_from_then_on(replay):
    replay.push({"status": 400, "body": {"error": {"message": "response_format json_schema is not supported"}}},
                *load_recording("row_sum_plan_ok"), *load_recording("row_sum_plan_ok"))
    team = team_for(replay)
    assert team.planner.plan(ctx()).marked_source == MARKED
    assert team.planner.plan(ctx()).marked_source == MARKED
    asked = [("response_format" in r["body"], r["body"]["messages"][-1]["content"].endswith(S.NOTES["plan"]))
             for r in replay.requests]
    # the refused request is sent again at once without the schema (its note kept: a JSON answer is read too),
    # and later requests carry neither
    assert asked == [(True, True), (False, True), (False, False)]


def test_a_free_text_answer_to_a_schema_request_is_read_as_before(replay):
    replay.push(*load_recording("row_sum_plan_ok"))
    assert team_for(replay).planner.plan(ctx()).marked_source == MARKED


def test_as_text_takes_only_what_conforms():
    assert S.as_text("plan", "MARKER a lines 1-2: x") is None  # free text: the parsers read it as it is
    assert S.as_text("plan", '{"markers": [{"id": "a b", "first": 1, "last": 2, "instruction": "x"}]}') is None
    assert S.as_text("plan", '{"markers": [{"id": "a", "first": "1", "last": 2, "instruction": "x"}]}') is None
    assert S.as_text("plan", '```json\n{"markers": [{"id": "a", "first": 3, "last": 3, "instruction": "go", '
                             '"insert": "after"}], "summary": "s"}\n```') == "MARKER a after line 3: go\nSUMMARY: s\n"
    assert S.as_text("code", '{"replacements": [{"id": "k", "code": "x = 1"}]}') == "```replace k\nx = 1\n```\n"
    assert "````replace k\n" in S.as_text("code", '{"replacements": [{"id": "k", "code": "```"}]}')
    assert S.as_text("debug", '{"summary": "s", "source": 3}') is None
    assert S.as_text("debug", "{not json") is None


def test_a_plans_slips_are_mended_backwards_overlapping_and_repeated_spans():
    doc = {"markers": [{"id": "a", "first": 19, "last": 17, "instruction": "x"},
                       {"id": "b", "first": 16, "last": 18, "instruction": "y"},
                       {"id": "b", "first": 30, "last": 31, "instruction": "z"}], "summary": "s"}
    assert S.as_text("plan", json.dumps(doc)) == "MARKER b lines 16-19: y; x\nMARKER b_1 lines 30-31: z\nSUMMARY: s\n"


def _objects(schema):
    if isinstance(schema, dict):
        if isinstance(schema.get("properties"), dict):
            yield schema
        for v in schema.values():
            yield from _objects(v)
    elif isinstance(schema, list):
        for v in schema:
            yield from _objects(v)


def test_openais_api_gets_its_strict_subset_and_local_servers_the_full_schema(monkeypatch):
    from stark_lsp.agents.llm.client import ChatClient

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert S.wants_strict_subset(None)  # no --base-url: the openai client's default, OpenAI's API
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1")
    assert not S.wants_strict_subset(None)
    monkeypatch.delenv("OPENAI_BASE_URL")

    assert S.wants_strict_subset("https://api.openai.com/v1") and S.wants_strict_subset("https://x.openai.azure.com/v1")
    for url in ("http://127.0.0.1:8080/v1", "https://api.openai.com.example.org/v1", "http://localhost:11434/v1"):
        assert not S.wants_strict_subset(url)
    assert ChatClient("https://api.openai.com/v1", api_key=KEY)._strict_subset
    assert not ChatClient("http://127.0.0.1:8080/v1", api_key=KEY)._strict_subset
    for role, kw in (("plan", {"lines": 30}), ("code", {"ids": ["a", "b"], "source_chars": 100}),
                     ("debug", {"source_chars": 100})):
        full = S.response_format(role, **kw)
        strict = S.strict_subset(full)
        assert full != strict and full == S.response_format(role, **kw)  # the full schema is left as it was
        for obj in _objects(strict["json_schema"]["schema"]):
            assert sorted(obj["required"]) == sorted(obj["properties"]) and obj["additionalProperties"] is False
        assert "maxLength" not in json.dumps(strict)
    plan = S.strict_subset(S.response_format("plan", lines=30))["json_schema"]["schema"]
    insert = plan["properties"]["markers"]["items"]["properties"]["insert"]
    assert insert["type"] == ["string", "null"] and insert["enum"] == ["after", "before", None]
    # the answer such a schema allows: an insert of null is a replaced span, as if the field were absent
    answer = {"markers": [{"id": "a", "first": 4, "last": 5, "instruction": "x", "insert": None}], "summary": "s"}
    assert S.as_text("plan", json.dumps(answer)) == "MARKER a lines 4-5: x\nSUMMARY: s\n"
