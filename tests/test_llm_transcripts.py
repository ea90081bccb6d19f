"""A corpus of answers written the way strong models answer (right, nearly
right, verbose, truncated, whole file, wrong format), for each agent and each
task format, played through the replay server against the real agents.

The corpus is tests/data/transcripts/: one file per answer (``name.1.md``,
``name.2.md`` for the turns of one case) and cases.json with what each case
must give: the markers placed, the candidate's text, the exact error quoted
in the follow-up turn, or the final error.
"""

import ast
import json
import shutil
from pathlib import Path

import pytest

from conftest_replay import replay  # noqa: F401  (the fixture)
from llm_trees import HARDWARE, sample_task, sample_tree
from replay_server import completion
from stark_lsp.agents.base import AgentError
from stark_lsp.agents.llm.parse import parse_plan
from stark_lsp.agents.team import make_team
from stark_lsp.markers.syntax import apply_replacements, has_markers, parse_markers
from stark_lsp.search.context import build_context

CORPUS = Path(__file__).resolve().parent / "data" / "transcripts"
CASES = json.loads((CORPUS / "cases.json").read_text())
KEY = "sk-transcripts-0123456789abcdef"
MAX_TOKENS = 4096


def _marked(case, task, nodes) -> str | None:
    if "marked" in case:
        return (CORPUS / case["marked"]).read_text()
    if "marked_from" in case:
        node = nodes[case["node"] - 1]
        return parse_plan((CORPUS / case["marked_from"]).read_text(), "stop", node.source, task.language)[0]
    return None


def _compiles(task, source: str, tmp_path: Path) -> None:
    if task.kind == "cuda":
        if shutil.which("nvcc") is None:
            return
        from stark_lsp.evaluate.cuda_build import CudaBuilder

        art = CudaBuilder(tmp_path / "cache").build(source)
        assert art.report.ok, art.report.log
    else:
        ast.parse(source)


def test_every_corpus_file_is_used():
    used = {t for c in CASES for t in c["turns"]} | {c["marked_from"] for c in CASES if "marked_from" in c}
    files = {str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*.md")}
    assert files == used


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_transcript(case, replay, tmp_path):
    task = sample_task(case["task"])
    nodes = sample_tree(task)
    node = nodes[case["node"] - 1]
    agent, expect = case["agent"], case["expect"]
    marked = _marked(case, task, nodes)
    plan = (marked, "the plan") if agent == "code" else None
    ctx = build_context(agent, task, nodes, node.id, hardware_info=HARDWARE, attempt=6, plan=plan)
    finish = case.get("finish", ["stop"] * len(case["turns"]))
    for turn, fr in zip(case["turns"], finish):  # a server that stops at the token limit has spent it all
        replay.push(completion((CORPUS / turn).read_text(), finish_reason=fr,
                               completion_tokens=MAX_TOKENS if fr == "length" else 50))
    team = make_team("openai", base_url=replay.base_url, model="replay-model", api_key=KEY, timeout_s=10,
                     max_tokens=MAX_TOKENS)
    run = {"plan": lambda: team.planner.plan(ctx), "code": lambda: team.coder.code(ctx, marked),
           "debug": lambda: team.debugger.debug(ctx)}[agent]

    if "error" in expect:
        with pytest.raises(AgentError) as e:
            run()
        assert expect["error"] in str(e.value)
        assert len(e.value.exchanges) == expect["exchanges"]
        assert len(replay.requests) == expect["exchanges"]
        return
    result = run()
    assert len(result.exchanges) == expect.get("exchanges", 1) == len(replay.requests)
    if "fix_request_contains" in expect:
        follow_up = replay.requests[1]["body"]["messages"]
        assert follow_up[-2]["role"] == "assistant" and follow_up[-1]["role"] == "user"
        assert expect["fix_request_contains"] in follow_up[-1]["content"]
    if agent == "plan":
        markers = parse_markers(result.marked_source)
        assert [m.id for m in markers] == expect["ids"]
        spans = {m.id: m.span for m in markers}
        for mid, span in expect.get("spans", {}).items():
            assert spans[mid] == span
        for mid, pieces in expect.get("span_contains", {}).items():
            assert all(p in spans[mid] for p in pieces), spans[mid]
        if "summary" in expect:
            assert result.summary == expect["summary"]
        return
    if agent == "code":
        source = apply_replacements(marked, result.replacements)
    else:
        source = result.source
        if "summary" in expect:
            assert result.summary == expect["summary"]
    assert not has_markers(source) and "@stark" not in source
    for piece in expect.get("contains", []):
        assert piece in source
    if expect.get("compiles"):
        _compiles(task, source, tmp_path)
