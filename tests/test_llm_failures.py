"""What a run's failed LLM attempts say (stark_lsp/agents/llm/failures.py), and the CLI's exit 4 with it:
the endpoint failed, or the model answered and nothing was usable, counting this run's attempts only."""

import pytest
from conftest_replay import replay  # noqa: F401  (the fixture)
from fakes import FakeEvaluator, FakeTeam, make_fake_task
from replay_server import completion
from stark_lsp import cli
from stark_lsp.agents.llm.failures import summarize
from stark_lsp.commands import optimize_cmd
from stark_lsp.exit_codes import AGENTS_UNAVAILABLE

KEY = "sk-failures-test-0123456789abcdef"


def test_an_endpoint_that_never_answered_is_named_with_its_flags():
    f = summarize(["plan agent (m): the endpoint failed after 2 tries: HTTP 401: bad key"] * 3)
    assert f.kind == "endpoint" and "every attempt (3)" in f.line and "--base-url" in f.line


def test_answers_that_were_all_unusable_are_counted_by_why_with_the_fix():
    f = summarize(["plan agent: the plan answer has no MARKER line: answer with 'MARKER …'",
                   "plan agent: the plan answer was cut off at the token limit (finish_reason 'length'): answer 557",
                   "plan agent: the plan answer has no MARKER line: answer with 'MARKER …'",
                   "plan agent: the endpoint failed: HTTP 500"])
    assert f.kind == "answers"
    assert "answered 3 times" in f.line and "2 without a MARKER line" in f.line
    assert "1 cut off at the token limit" in f.line and "1 more failed at the endpoint" in f.line
    assert "--max-tokens" in f.line and "answer format" in f.line and "--base-url" not in f.line


def _cli(tmp_path, monkeypatch, base_url, budget="3"):
    monkeypatch.setenv("STARK_API_KEY", KEY)
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda args, warm_for=None: FakeEvaluator())
    return cli.main(["optimize", str(tmp_path / "k.py"), "--llm", "openai", "--model", "m", "--base-url", base_url,
                     "--budget", budget, "--concurrency", "1", "--retries", "0"])


def test_exit_4_for_unusable_answers_quotes_this_runs_errors_only(tmp_path, monkeypatch, capsys, replay):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    make_fake_task(tmp_path)
    replay.responder = lambda body: {"status": 401, "body": {"error": {"message": "invalid key"}}}
    assert _cli(tmp_path, monkeypatch, replay.base_url) == AGENTS_UNAVAILABLE  # an earlier run: a bad key
    capsys.readouterr()
    replay.responder = lambda body: completion("I would make it faster by using shared memory.")
    assert _cli(tmp_path, monkeypatch, replay.base_url, budget="6") == AGENTS_UNAVAILABLE
    err = capsys.readouterr().err
    line = [x for x in err.splitlines() if "made no candidate" in x]
    assert len(line) == 1, err
    assert "but no answer was usable" in line[0] and "without a MARKER line" in line[0], line[0]
    assert "401" not in line[0] and "invalid key" not in line[0] and "--base-url" not in line[0]


def test_exit_4_for_requests_over_the_servers_context_names_the_context_not_the_endpoint(tmp_path, monkeypatch,
                                                                                        capsys, replay):
    from replay_server import overflow_400

    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    make_fake_task(tmp_path)
    replay.responder = lambda body: overflow_400("llama.cpp")
    assert _cli(tmp_path, monkeypatch, replay.base_url) == AGENTS_UNAVAILABLE
    err = capsys.readouterr().err
    line = [x for x in err.splitlines() if "made no candidate" in x]
    assert len(line) == 1, err
    assert "no request fit the server's context (3 attempts)" in line[0], line[0]
    assert "prompt 2100 tokens + answer up to" in line[0] and "--ctx-size" in line[0]
    assert "--base-url" not in line[0] and "agents unavailable" not in err
    assert len(replay.requests) == 3  # one per attempt, none retried


def test_an_http_error_names_its_status_once_and_a_timeout_its_seconds_and_flags():
    httpx = pytest.importorskip("httpx2", reason="the openai client's HTTP library")
    import openai

    from stark_lsp.agents.llm.client import _describe

    req = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    bad = openai.BadRequestError("Error code: 400 - {'error': 'exceed_context_size_error'}",
                                 response=httpx.Response(400, request=req), body=None)
    assert _describe(bad) == "HTTP 400: {'error': 'exceed_context_size_error'}"
    slow = _describe(openai.APITimeoutError(request=req), 300.0)
    assert "(300 s)" in slow and "--read-timeout" in slow and "--max-tokens" in slow


# the probe: a dead endpoint or a refused key is found before anything is evaluated -----------------------
def _probe_workspace(tmp_path, monkeypatch) -> FakeEvaluator:
    """A project with the fake task, a key, and a stand-in evaluator that counts what it was asked."""
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    make_fake_task(tmp_path)
    ev = FakeEvaluator()
    monkeypatch.setenv("STARK_API_KEY", KEY)
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda args, warm_for=None: ev)
    return ev


def test_a_refused_key_stops_before_the_kernel_is_evaluated(tmp_path, monkeypatch, capsys, replay):
    ev = _probe_workspace(tmp_path, monkeypatch)
    replay.models_status = 401
    rc = cli.main(["optimize", str(tmp_path / "k.py"), "--llm", "openai", "--model", "m", "--base-url",
                   replay.base_url, "--budget", "3"])
    assert rc == AGENTS_UNAVAILABLE and ev.calls == 0  # not even the user's kernel was timed
    err = capsys.readouterr().err
    assert "refused the API key" in err and "Traceback" not in err
    assert replay.gets == ["/v1/models"] and replay.requests == []


def test_a_model_the_server_does_not_list_is_said_once_and_the_search_goes_on(tmp_path, monkeypatch, capsys, replay):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    make_fake_task(tmp_path)
    replay.models = ["gemma-3-270m"]
    replay.responder = lambda body: completion("MARKER s1 at `SPEED = `: set SPEED higher\nSUMMARY: faster") \
        if "Plan agent" in body["messages"][0]["content"] else completion("```replace s1\nSPEED = 3.0\n```")
    assert _cli(tmp_path, monkeypatch, replay.base_url, budget="1") == 0
    err = capsys.readouterr().err
    notice = [x for x in err.splitlines() if "is not among them" in x]
    assert len(notice) == 1 and "gemma-3-270m" in notice[0] and "--model m" in notice[0], err


def test_a_server_without_the_models_route_is_asked_one_token_then_the_search_goes_on(tmp_path, monkeypatch,
                                                                                      capsys, replay):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    make_fake_task(tmp_path)
    replay.responder = lambda body: completion("MARKER s1 at `SPEED = `: set SPEED higher\nSUMMARY: faster") \
        if "Plan agent" in body["messages"][0]["content"] else completion("```replace s1\nSPEED = 3.0\n```")
    assert _cli(tmp_path, monkeypatch, replay.base_url, budget="1") == 0
    assert "not among them" not in capsys.readouterr().err
    assert [(p["model"], p["max_tokens"], "stream" in p) for p in replay.probes] == [("m", 1, False)]


def test_a_listed_model_is_not_asked_one_token(tmp_path, monkeypatch, capsys, replay):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    make_fake_task(tmp_path)
    replay.models = ["m", "other"]
    replay.responder = lambda body: completion("MARKER s1 at `SPEED = `: set SPEED higher\nSUMMARY: faster") \
        if "Plan agent" in body["messages"][0]["content"] else completion("```replace s1\nSPEED = 3.0\n```")
    assert _cli(tmp_path, monkeypatch, replay.base_url, budget="1") == 0
    assert replay.probes == [] and "not among them" not in capsys.readouterr().err


@pytest.mark.parametrize("listed", [["qwen2.5-coder:32b", "llama3.1:8b"], [], None])
def test_a_misnamed_model_or_a_wrong_url_stops_before_the_kernel_is_evaluated(tmp_path, monkeypatch, capsys, replay,
                                                                              listed):
    """vLLM and Ollama answer 404 to a model they do not serve: found by the probe's one-token request, before
    the user's kernel is timed (it took 33 s on a small task, minutes on a big one); with the models the server
    lists where it lists them, else the URL to check."""
    ev = _probe_workspace(tmp_path, monkeypatch)
    replay.models = listed
    replay.probe_status = 404
    rc = cli.main(["optimize", str(tmp_path / "k.py"), "--llm", "openai", "--model", "qwen-coder", "--base-url",
                   replay.base_url, "--budget", "3"])
    assert rc == AGENTS_UNAVAILABLE and ev.calls == 0  # not even the user's kernel was timed
    err = capsys.readouterr().err
    line = [x for x in err.splitlines() if "agents unavailable" in x]
    assert len(line) == 1 and "does not know model 'qwen-coder'" in line[0], err
    assert "HTTP 404: The model `qwen-coder` does not exist." in line[0]
    if listed:
        assert "it lists qwen2.5-coder:32b, llama3.1:8b: check --model" in line[0]
    else:
        assert "check --model and --base-url (it usually ends in /v1)" in line[0]
    assert replay.requests == [] and len(replay.probes) == 1 and "Traceback" not in err


# a full context is not the token limit -------------------------------------------------------------------------
def plan_ctx():
    from llm_trees import agent_ctx

    return agent_ctx("plan")


def test_an_answer_cut_short_of_max_tokens_is_a_full_context_and_is_not_retried(replay):
    from stark_lsp.agents.base import AgentError
    from stark_lsp.agents.team import make_team

    replay.push(completion("MARKER s1 lines 1-2: go fas", finish_reason="length", completion_tokens=557))
    team = make_team("openai", base_url=replay.base_url, model="m", api_key=KEY, max_tokens=8192, max_retries=0)
    with pytest.raises(AgentError) as e:
        team.planner.plan(plan_ctx())
    assert "context (prompt and answer) is full" in str(e.value) and "--ctx-size" in str(e.value)
    assert len(replay.requests) == 1  # the follow-up would only overflow it again


def test_an_answer_cut_at_max_tokens_is_asked_again_with_only_its_head_replayed(replay):
    from stark_lsp.agents.base import AgentError
    from stark_lsp.agents.team import make_team

    long = "x" * 9000
    replay.push(completion(long, finish_reason="length", completion_tokens=100),
                completion(long, finish_reason="length", completion_tokens=100))
    team = make_team("openai", base_url=replay.base_url, model="m", api_key=KEY, max_tokens=100, max_retries=0)
    with pytest.raises(AgentError, match="cut off at the token limit"):
        team.planner.plan(plan_ctx())
    follow_up = replay.requests[1]["body"]["messages"]
    replayed = [m["content"] for m in follow_up if m["role"] == "assistant"][0]
    assert len(replayed) < 2100 and "more characters cut" in replayed
    assert "--max-tokens" not in follow_up[-1]["content"]  # the model cannot change the user's flags


# the same line from a run's nodes, for the CLI's exit 4 and the editor's end of a search -------------------------
def test_run_failure_reads_a_runs_nodes_and_names_only_runs_that_judged_nothing():
    from types import SimpleNamespace as N

    from stark_lsp.agents.llm import failures
    from stark_lsp.search import node

    assert failures.AGENT_ERROR == node.AGENT_ERROR  # the store's statuses, without importing the search
    assert set(failures.NOT_FINISHED) == set(node.IN_FLIGHT) | {node.ABANDONED}
    root = N(parent_id=None, status="ok", error="")
    cut = N(parent_id=1, status="agent_error", error="plan agent (m): the plan answer has no MARKER line: …")
    gone = N(parent_id=1, status="abandoned", error="cancelled")
    f = failures.run_failure([root, cut, gone, N(parent_id=1, status="running", error="")])
    assert f is not None and f.kind == "answers" and "answered 1 time but" in f.line and "cancelled" not in f.line
    assert failures.run_failure([root, cut, N(parent_id=1, status="compile_error", error="x")]) is None  # judged
    assert failures.run_failure([root, gone]) is None  # nothing finished
    dead = N(parent_id=1, status="agent_error", error="plan agent (m): the endpoint failed: HTTP 500: boom")
    assert failures.run_failure([dead]).kind == "endpoint"


def test_fresh_keeps_the_tree_when_the_endpoint_refuses(tmp_path, monkeypatch, capsys, replay):
    """--fresh archived the tree before the probe found the endpoint dead (exit 4): the user's tree went to
    the archive and no new one began ('stark show' then said 'only archived trees'). Archived once it answers."""
    ev = _probe_workspace(tmp_path, monkeypatch)
    real_team = optimize_cmd.team_from_args
    monkeypatch.setattr(optimize_cmd, "team_from_args", lambda args: FakeTeam())
    assert cli.main(["optimize", str(tmp_path / "k.py"), "--budget", "1", "--concurrency", "1"]) in (0, 3)
    monkeypatch.setattr(optimize_cmd, "team_from_args", real_team)
    replay.models_status = 401
    capsys.readouterr()
    rc = cli.main(["optimize", str(tmp_path / "k.py"), "--llm", "openai", "--model", "m", "--base-url",
                   replay.base_url, "--budget", "3", "--fresh"])
    assert rc == AGENTS_UNAVAILABLE, capsys.readouterr().err
    assert "--fresh" not in capsys.readouterr().err
    assert cli.main(["show", str(tmp_path / "k.py")]) == 0
    assert "1 attempt" in capsys.readouterr().out and ev.calls > 0
