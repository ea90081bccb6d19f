"""The LLM team inside a real search (fake evaluator, replay endpoint): a dead
endpoint stops the search (exit 4 from the CLI, no best file), Ctrl-C cancels
a hung request, concurrent Plan prompts differ, candidates never keep marker
lines, odd text never crashes the store or the terminal, answers are capped,
and no key (a 12-character one included) is stored, sent or shown."""

import itertools
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest_replay import replay  # noqa: F401  (the fixture)
from fakes import FakeEvaluator, FakeTeam, fake_source, make_fake_task, verdict
from replay_server import ReplayServer, completion
from stark_lsp import cli
from stark_lsp.agents.base import AgentsUnavailable, CodeResult
from stark_lsp.agents.team import make_team
from stark_lsp.commands import optimize_cmd
from stark_lsp.evaluate.result import EvalResult, Status
from stark_lsp.exit_codes import AGENTS_UNAVAILABLE
from stark_lsp.search import Search, SearchConfig, TreeStore

pytestmark = pytest.mark.timeout(180)
KEY = "sk-search-test-0123456789abcdef"


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def responder(plan_gate: threading.Barrier | None = None, plan_extra: str = "", summary: str = "faster"):
    """Plans mark the SPEED line; each code answer gives a new SPEED."""
    counter = itertools.count(2)
    lock = threading.Lock()

    def answer(body):
        system = body["messages"][0]["content"]
        if "Plan agent" in system:
            if plan_gate is not None:
                try:
                    plan_gate.wait(60)
                except threading.BrokenBarrierError:
                    pass
            return completion(f"{plan_extra}MARKER s1 at `SPEED = `: set SPEED higher\nSUMMARY: {summary}")
        with lock:
            k = next(counter)
        return completion(f"```replace s1\nSPEED = {k}.0\n```")

    return answer


def llm_team(base_url: str, key: str = KEY):
    return make_team("openai", base_url=base_url, model="m", api_key=key, read_timeout_s=60, max_retries=0)


def test_a_dead_endpoint_stops_the_search_at_once(tmp_path):
    task = make_fake_task(tmp_path)
    store = TreeStore.open(tmp_path / "tree.sqlite")
    search = Search(task, store, FakeEvaluator(), llm_team(f"http://127.0.0.1:{closed_port()}/v1"),
                    SearchConfig(budget=10, concurrency=2))
    with pytest.raises(AgentsUnavailable, match="cannot connect"):
        search.run()
    nodes = store.nodes(task.task_id())
    assert nodes[0].status == "ok"  # the root was judged
    assert {n.status for n in nodes[1:]} == {"abandoned"}  # nothing spent: resumable
    assert len(nodes) <= 3  # it stopped at once, not after the budget


def test_cli_exits_4_with_one_line_and_writes_no_best_file(tmp_path, monkeypatch, capsys):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STARK_API_KEY", KEY)
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda args, warm_for=None: FakeEvaluator())
    task = make_fake_task(tmp_path)
    rc = cli.main(["optimize", str(task.path), "--llm", "openai", "--model", "m",
                   "--base-url", f"http://127.0.0.1:{closed_port()}/v1", "--budget", "5"])
    assert rc == AGENTS_UNAVAILABLE == 4
    err = capsys.readouterr().err
    line = [l for l in err.splitlines() if "agents unavailable" in l]
    assert len(line) == 1 and "cannot connect" in line[0] and "Traceback" not in err
    assert not task.path.with_name("k.best.py").exists()


def test_cli_llm_options_reach_the_client(tmp_path, monkeypatch, replay):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STARK_API_KEY", KEY)
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda args, warm_for=None: FakeEvaluator())
    replay.responder = responder()
    task = make_fake_task(tmp_path)
    rc = cli.main(["optimize", str(task.path), "--llm", "openai", "--model", "m", "--base-url", replay.base_url,
                   "--budget", "2", "--concurrency", "1", "--max-tokens", "777", "--temperature", "plan=0.9,code=0.2",
                   "--read-timeout", "33", "--connect-timeout", "3", "--retries", "1", "--context-tokens", "5000"])
    assert rc == 0
    bodies = [r["body"] for r in replay.requests]
    assert {b["max_tokens"] for b in bodies} == {777}
    assert sorted({b["temperature"] for b in bodies}) == [0.2, 0.9]
    from stark_lsp.context_budget import estimate_tokens

    assert all(sum(estimate_tokens(m["content"]) for m in b["messages"]) <= 5000 for b in bodies)  # --context-tokens
    with pytest.raises(SystemExit) as e:  # argparse: a one-line usage error, exit 2
        cli.main(["optimize", str(task.path), "--temperature", "hot"])
    assert e.value.code == 2


CTRL_C = """
import sys
sys.path.insert(0, {tests!r})
from fakes import FakeEvaluator
from stark_lsp import cli
from stark_lsp.commands import optimize_cmd
optimize_cmd.evaluator_from_args = lambda args, warm_for=None: FakeEvaluator()
sys.exit(cli.main(sys.argv[1:]))
"""


def test_ctrl_c_cancels_a_hung_request(tmp_path):
    with ReplayServer() as server:
        server.responder = lambda body: {"hang": True}
        (tmp_path / ".git").mkdir()
        task = make_fake_task(tmp_path)
        env = dict(os.environ, STARK_API_KEY=KEY, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
        proc = subprocess.Popen(
            [sys.executable, "-c", CTRL_C.format(tests=str(Path(__file__).parent)), "optimize", str(task.path),
             "--llm", "openai", "--model", "m", "--base-url", server.base_url, "--read-timeout", "600",
             "--budget", "3", "--concurrency", "2"],
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            while server.hanging < 2:  # both attempts wait for their plans
                if proc.poll() is not None:
                    pytest.fail(f"exited early: {proc.communicate()}")
                threading.Event().wait(0.02)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=120)  # only a cancel can end it: the read timeout is 600 s
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 130, err
        assert server.closed_hangs.acquire(timeout=30) and server.closed_hangs.acquire(timeout=30)
        store = TreeStore.open(tmp_path / ".stark" / "tree.sqlite", readonly=True)
        assert {n.status for n in store.nodes(task.task_id())[1:]} == {"abandoned"}


def test_concurrent_attempts_never_send_identical_plan_prompts(tmp_path, replay):
    gate = threading.Barrier(3)  # the first three Plan requests must be in flight together
    replay.responder = responder(gate)
    task = make_fake_task(tmp_path)
    store = TreeStore.open(tmp_path / "tree.sqlite")
    Search(task, store, FakeEvaluator(), llm_team(replay.base_url), SearchConfig(budget=6, concurrency=3)).run()
    assert not gate.broken
    plans = [r["body"]["messages"][1]["content"] for r in replay.requests
             if "Plan agent" in r["body"]["messages"][0]["content"]]
    assert len(plans) >= 6 and len(set(plans)) == len(plans)
    first = plans[:3]
    hints = [next(l for l in p.splitlines() if l.startswith("Exploration hint")) for p in first]
    assert len(set(hints)) == 3  # different directions for attempts in flight together
    assert sum("Other attempts in flight now (propose something different from them): none" in p for p in first) <= 1


def test_a_candidate_never_keeps_marker_lines(tmp_path):
    class EchoingCoder:
        def code(self, ctx, marked):
            from stark_lsp.markers.syntax import parse_markers

            (m,) = parse_markers(marked)
            return CodeResult({m.id: "# @stark begin x: stray\nSPEED = 9.0\n# @stark end x\n"})

    team = FakeTeam()
    team.coder = EchoingCoder()
    task = make_fake_task(tmp_path)
    store = TreeStore.open(tmp_path / "tree.sqlite")
    Search(task, store, FakeEvaluator(), team, SearchConfig(budget=2, concurrency=1)).run()
    kids = store.nodes(task.task_id())[1:]
    assert {n.status for n in kids} == {"agent_error"}
    assert all("still contains '@stark' marker lines" in n.error for n in kids)
    assert store.best(task.task_id()).parent_id is None  # nothing with markers can become the best


class OddEvaluator(FakeEvaluator):
    """Every candidate fails with a message holding a lone surrogate, a terminal escape and a key."""

    def __init__(self, key: str):
        super().__init__()
        self.key = key

    def evaluate(self, task, source, options=None):
        r = verdict(source)
        if self.calls == 0:
            self.calls += 1
            return r
        self.calls += 1
        return EvalResult(Status.RUNTIME_ERROR, f"bad byte \udc80 here \x1b]0;owned\x07\x1b[2J key={self.key}")


def test_odd_text_and_short_keys_never_reach_the_store_the_endpoint_or_the_terminal(tmp_path, monkeypatch, capsys):
    short = "k3y-SHORT-12"  # a 12-character key
    assert len(short) == 12
    monkeypatch.setenv("STARK_API_KEY", short)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    src = tmp_path / "k.py"
    src.write_text(fake_source(1.0))
    from stark_lsp.tasks.spec import TaskSpec

    task = TaskSpec("triton", src, src)
    big = "x" * (5 * 1024 * 1024)  # a 5 MB answer
    with ReplayServer() as server:
        server.responder = responder(plan_extra=f"Thinking ({short}) \ud800 \x1b[31m {big}\n",
                                     summary=f"faster \x1b]0;t\x07 {short[:8]}...{short[-4:]}")
        server.push({"status": 401, "body": {"error": {"message": f"Incorrect API key provided: {short[:8]}****{short[-4:]}"}}})
        store = TreeStore.open(tmp_path / ".stark" / "tree.sqlite")
        team = make_team("openai", base_url=server.base_url, model="m", read_timeout_s=60, max_retries=0)
        with pytest.raises(AgentsUnavailable) as e:  # the 401 first: the message echoes the key
            Search(task, store, OddEvaluator(short), team, SearchConfig(budget=3, concurrency=1)).run()
        assert short not in str(e.value) and short[:8] not in str(e.value)
        team = make_team("openai", base_url=server.base_url, model="m", read_timeout_s=60, max_retries=0)
        Search(task, store, OddEvaluator(short), team, SearchConfig(budget=3, concurrency=1)).run()
        sent = "".join(r["raw"] for r in server.requests)
        assert short not in sent and short[:8] not in sent
        assert all(r["headers"]["authorization"] == f"Bearer {short}" for r in server.requests)
        store.close()
    blob = b"".join(p.read_bytes() for p in (tmp_path / ".stark").iterdir() if p.is_file())
    assert short.encode() not in blob and short[:8].encode() not in blob
    assert len(blob) < 8 * 1024 * 1024  # 5 MB answers are stored up to 256 KiB each
    ro = TreeStore.open(tmp_path / ".stark" / "tree.sqlite", readonly=True)
    nodes = ro.nodes(task.task_id())
    failed = [n for n in nodes if n.status == "runtime_error"]
    assert failed and all("\ufffd" in n.error for n in failed)
    answers = [e.response for n in nodes for e in n.exchanges if e.agent == "plan"]
    assert answers and all(len(a.encode()) < 300 * 1024 and "more bytes of this answer were cut" in a for a in answers)
    capsys.readouterr()
    assert cli.main(["show", str(src)]) == 0
    assert cli.main(["show", str(src), "--node", str(failed[0].id), "--transcript"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and short not in out and short[:8] not in out
    assert "===== exchange 1/" in out and "----- answer -----" in out and "\\x1b" in out


def test_a_key_in_the_task_file_is_not_sent(tmp_path, monkeypatch, replay):
    short = "k3y-SHORT-12"
    monkeypatch.setenv("STARK_API_KEY", short)
    src = tmp_path / "k.py"
    src.write_text(fake_source(1.0).replace("# a fake kernel", f"# a fake kernel (token {short})"))
    from stark_lsp.tasks.spec import TaskSpec

    task = TaskSpec("triton", src, src)
    replay.responder = responder()
    store = TreeStore.open(tmp_path / "tree.sqlite")
    team = make_team("openai", base_url=replay.base_url, model="m", read_timeout_s=60, max_retries=0)
    Search(task, store, FakeEvaluator(), team, SearchConfig(budget=2, concurrency=1)).run()
    sent = "".join(r["raw"] for r in replay.requests)
    assert replay.requests and short not in sent and "(token ***)" in sent
    stored = [e.prompt for n in store.nodes(task.task_id()) for e in n.exchanges]
    assert stored and all(short not in p for p in stored)


def test_show_transcript_needs_a_node_and_a_known_one(tmp_path, monkeypatch, capsys):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda args, warm_for=None: FakeEvaluator())
    monkeypatch.setattr(optimize_cmd, "team_from_args", lambda args: FakeTeam())
    task = make_fake_task(tmp_path)
    cli.main(["optimize", str(task.path), "--budget", "2", "--concurrency", "1"])
    capsys.readouterr()
    assert cli.main(["show", str(task.path), "--transcript"]) == 2
    assert cli.main(["show", str(task.path), "--node", "99"]) == 2
    assert "no node #99" in capsys.readouterr().err
    assert cli.main(["show", str(task.path), "--node", "2", "--transcript"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("#2 plan_code:") and "exchange 1/2: plan agent" in out and "exchange 2/2: code agent" in out
    import json

    assert cli.main(["show", str(task.path), "--node", "2", "--transcript", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [e["agent"] for e in d["exchanges"]] == ["plan", "code"]


def test_attempts_in_flight_follow_the_servers_slots_unless_given(tmp_path, monkeypatch, replay):
    """llama.cpp's /props names its slots: without --concurrency a search keeps one more attempt in flight
    than the server serves at once, and says so; --concurrency still decides."""
    from stark_lsp.search import engine

    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STARK_API_KEY", KEY)
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda args, warm_for=None: FakeEvaluator())
    seen: list[int] = []
    real_init = engine.Search.__init__

    def spy(self, task, store, evaluator, team, config=None, *a, **kw):
        seen.append(config.concurrency)
        real_init(self, task, store, evaluator, team, config, *a, **kw)

    monkeypatch.setattr(engine.Search, "__init__", spy)
    replay.responder = responder()
    replay.models, replay.props = ["m"], {"default_generation_settings": {"n_ctx": 32768}, "total_slots": 3,
                                          "chat_template": "gemma"}
    task = make_fake_task(tmp_path)
    base = ["optimize", str(task.path), "--llm", "openai", "--model", "m", "--base-url", replay.base_url, "--budget", "2"]
    import io
    from contextlib import redirect_stderr

    err = io.StringIO()
    with redirect_stderr(err):
        assert cli.main(base) == 0
    assert seen == [4] and "4 attempts in flight, as the server answers 3 requests at a time" in err.getvalue()
    assert cli.main([*base, "--fresh", "--concurrency", "1"]) == 0
    assert seen == [4, 1]
