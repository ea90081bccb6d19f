"""What the agents spent, per node and per tree (issue 23): `stark show` (text and --json), the end of
`stark optimize` with an LLM team, and the editor's `stark/tree`; a built-in tree shows none of it."""

import json

import pytest

from fakes import FakeEvaluator, FakeTeam, fake_source, make_fake_task, verdict
from stark_lsp import cli
from stark_lsp.agents.base import Exchange, Usage
from stark_lsp.commands import optimize_cmd
from stark_lsp.search import TreeStore, usage
from stark_lsp.search.node import AGENT_ERROR, PLAN_CODE, ROOT, RUNNING, outcome_fields
from stark_lsp.server.tree_json import tree_json
from stark_lsp.search.tree_view import tree_view

pytestmark = pytest.mark.timeout(60)


def _done(store, node_id, speed, **fields):
    r = verdict(fake_source(speed))
    status, sp, rt, err = outcome_fields(r)
    return store.update_node(node_id, status=status, result=r, speedup=sp, runtime_ms=rt, error=err, **fields)


def make_tree(tmp_path, with_usage: bool, cost: float = 0.0, seconds: float = 0.0):
    """#1 your kernel; #2 a faster candidate (plan + code calls); #3 an agent error (one plan call).
    ``seconds``: each call's wall time (0: as trees stored before it was measured)."""
    (tmp_path / ".git").mkdir(exist_ok=True)
    task = make_fake_task(tmp_path)
    with TreeStore.open(tmp_path / ".stark" / "tree.sqlite") as store:
        tid = store.create_tree(task)
        root = store.add_node(tid, None, ROOT, RUNNING, source=fake_source(1.0))
        _done(store, root.id, 1.0)
        fast = store.add_node(tid, root.id, PLAN_CODE, RUNNING, attempt=1, source=fake_source(2.0))
        ex = [Exchange("plan", "p", "a", Usage(11000, 1300, cost, 1, seconds)),
              Exchange("code", "p", "a", Usage(900, 50, cost, 1, seconds))]
        _done(store, fast.id, 2.0, summary="tile it", exchanges=ex if with_usage else [])
        bad = store.add_node(tid, root.id, PLAN_CODE, RUNNING, attempt=2)
        store.update_node(bad.id, status=AGENT_ERROR, error="plan agent: no MARKER line",
                          exchanges=[Exchange("plan", "p", "junk", Usage(800, 20, 0.0, 1, seconds))] if with_usage else [])
        nodes = store.nodes(tid)
    return task, nodes


def show(task, capsys, *extra):
    capsys.readouterr()
    assert cli.main(["show", str(task.path), *extra]) == 0
    return capsys.readouterr().out


def test_show_gives_tokens_per_node_and_the_tree_total(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    task, _ = make_tree(tmp_path, with_usage=True)
    lines = show(task, capsys).splitlines()
    row = {ln.split()[0]: ln for ln in lines if ln.lstrip().startswith("#")}
    assert "tok" not in row["#1"]  # your kernel made no agent call
    assert "· 13.2k tok" in row["#2"] and "· 820 tok" in row["#3"]
    assert lines[-1] == "agents, whole tree: 3 calls, 12.7k prompt + 1.4k completion tokens"  # no price: no cost
    data = json.loads(show(task, capsys, "--json"))
    assert data["usage"] == {"prompt_tokens": 12700, "completion_tokens": 1370, "tokens": 14070, "calls": 3,
                             "cost_usd": None, "seconds": 0.0}
    assert [n["usage"]["prompt_tokens"] for n in data["nodes"]] == [0, 11900, 800]


def test_show_gives_the_llm_time_per_node_and_the_tree_total(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    task, nodes = make_tree(tmp_path, with_usage=True, seconds=20.5)
    lines = show(task, capsys).splitlines()
    row = {ln.split()[0]: ln for ln in lines if ln.lstrip().startswith("#")}
    assert "tok" not in row["#1"] and " s" not in row["#1"].split("eager")[-1]  # your kernel: no call, no time
    assert "· 13.2k tok, 41.0s" in row["#2"] and "· 820 tok, 20.5s" in row["#3"]
    assert lines[-1] == "agents, whole tree: 3 calls, 12.7k prompt + 1.4k completion tokens, 1m02s of answers"
    data = json.loads(show(task, capsys, "--json"))
    assert data["usage"]["seconds"] == pytest.approx(61.5)
    assert [n["usage"]["seconds"] for n in data["nodes"]] == [0.0, 41.0, 20.5]
    one = show(task, capsys, "--node", "2")
    assert "agents: 2 call(s), 11900 prompt + 1350 completion tokens, 41.0s of answers" in one
    assert "completion tokens, 20.5s) =====" in show(task, capsys, "--node", "2", "--transcript")
    j = tree_json(tree_view("t", nodes))
    assert [n["seconds"] for n in j["nodes"]] == [None, 41.0, 20.5]
    assert [n["tokens_text"] for n in j["nodes"]] == ["", "13.2k tok, 41.0s", "820 tok, 20.5s"]
    assert j["usage_text"].endswith("1m02s of answers") and j["usage"]["seconds"] == pytest.approx(61.5)
    from stark_lsp.search.render import table

    rows = table(nodes).splitlines()
    assert rows[0].split()[-4:] == ["tokens", "llm", "time", "note"]
    end = rows[0].index("llm time") + len("llm time")
    assert [r[end - 10:end].strip() for r in rows[1:]] == ["-", "41.0s", "20.5s"]


def test_a_builtin_node_shows_no_time(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    task, nodes = make_tree(tmp_path, with_usage=False)
    assert "of answers" not in show(task, capsys) and "agents:" not in show(task, capsys, "--node", "2")
    data = json.loads(show(task, capsys, "--json"))
    assert data["usage"] is None and {n["usage"]["seconds"] for n in data["nodes"]} == {0.0}
    assert [n["seconds"] for n in tree_json(tree_view("t", nodes))["nodes"]] == [None, None, None]


def test_a_priced_tree_gives_its_cost(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    task, nodes = make_tree(tmp_path, with_usage=True, cost=0.01)
    assert show(task, capsys).splitlines()[-1].endswith("completion tokens, $0.0200")
    assert json.loads(show(task, capsys, "--json"))["usage"]["cost_usd"] == pytest.approx(0.02)
    assert tree_json(tree_view("t", nodes))["usage"]["cost_usd"] == pytest.approx(0.02)


def test_a_builtin_tree_renders_as_before(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    task, nodes = make_tree(tmp_path, with_usage=False)
    out = show(task, capsys)
    assert "tok" not in out and "agents" not in out
    assert out.splitlines()[1] == "#1 root [ok] 1.00× eager"
    assert json.loads(show(task, capsys, "--json"))["usage"] is None
    j = tree_json(tree_view("t", nodes))
    assert j["usage"] is None and [n["tokens"] for n in j["nodes"]] == [None, None, None]
    assert j["usage_text"] == "" and {n["tokens_text"] for n in j["nodes"]} == {""}
    from stark_lsp.search.render import table

    assert "tok" not in table(nodes)


def test_the_editor_tree_has_the_total_and_tokens_per_node(tmp_path):
    _, nodes = make_tree(tmp_path, with_usage=True)
    view = tree_view("t", nodes)
    j = tree_json(view)
    assert j["usage"] == {"prompt_tokens": 12700, "completion_tokens": 1370, "tokens": 14070, "calls": 3,
                          "cost_usd": None, "seconds": 0.0}
    assert [n["tokens"] for n in j["nodes"]] == [None, 13250, 820]
    # the texts the tree view draws are the CLI's own (search/usage.py), not formatted again in TypeScript
    assert j["usage_text"] == usage.line(usage.total(nodes)) and "3 calls" in j["usage_text"]
    assert [n["tokens_text"] for n in j["nodes"]] == ["", "13.2k tok", "820 tok"]
    assert usage.total(view.nodes) == usage.total(nodes)  # one sum for the CLI and the editor
    json.dumps(j)  # the wire carries it as it is
    assert tree_json(None)["usage"] is None


def test_the_table_has_a_tokens_column_only_with_usage(tmp_path):
    from stark_lsp.search.render import table

    _, nodes = make_tree(tmp_path, with_usage=True)
    rows = table(nodes).splitlines()
    assert rows[0].split()[-2:] == ["tokens", "note"]
    end = rows[0].index("tokens") + len("tokens")
    assert [r[end - 8:end].strip() for r in rows[1:]] == ["-", "13.2k", "820"]


@pytest.mark.parametrize("llm", ["openai", "builtin"])
def test_optimize_ends_with_the_total_for_an_llm_team(tmp_path, monkeypatch, capsys, llm):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda args, warm_for=None: FakeEvaluator())
    monkeypatch.setattr(optimize_cmd, "team_from_args", lambda args: FakeTeam())
    task = make_fake_task(tmp_path)
    extra = ["--llm", "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"] if llm == "openai" else []
    cli.main(["optimize", str(task.path), "--budget", "2", "--concurrency", "1", *extra])
    out = capsys.readouterr().out
    totals = [ln for ln in out.splitlines() if ln.startswith("agents, whole tree:")]
    if llm == "openai":
        assert len(totals) == 1 and "prompt +" in totals[0] and "$" not in totals[0], out
    else:
        assert not totals  # the built-in team spends no tokens: no line
