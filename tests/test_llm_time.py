"""The LLM's wall time per node and per tree (issue 23): the client times every request it sends (retries
included) with its clock, ``Usage`` sums it, ``search/usage.py`` formats it, the tree store keeps it and
reads trees stored before it as 0."""

import sqlite3

import pytest

from conftest_replay import replay  # noqa: F401  (the fixture)
from fakes import make_fake_task
from replay_server import completion
from stark_lsp.agents.base import AgentError, Exchange, Usage
from stark_lsp.agents.llm.client import ChatClient
from stark_lsp.search import TreeStore, usage
from stark_lsp.search.node import PLAN_CODE, ROOT, RUNNING

KEY = "sk-llm-time-0123456789"
MSG = [{"role": "user", "content": "hi"}]

pytestmark = pytest.mark.timeout(120)


class SteppingClock:
    """A stand-in for ``time.monotonic``: each reading is ``step`` seconds after the last."""

    def __init__(self, step: float):
        self.step, self.now, self.readings = step, 100.0, 0

    def __call__(self) -> float:
        self.now += self.step
        self.readings += 1
        return self.now


def test_the_client_times_each_request_with_its_clock(replay):
    replay.push(completion("ok"))
    clock = SteppingClock(2.5)
    reply = ChatClient(replay.base_url, KEY, clock=clock).chat("m", MSG, 0.1)
    assert clock.readings == 2  # before and after the one request
    assert reply.usage.seconds == pytest.approx(2.5)
    assert (reply.usage.prompt_tokens, reply.usage.calls) == (100, 1)


def test_retries_count_in_the_time(replay):
    replay.push({"status": 503}, completion("ok"))
    clock = SteppingClock(1.5)
    reply = ChatClient(replay.base_url, KEY, max_retries=2, sleep=lambda s: None, clock=clock).chat("m", MSG, 0.1)
    assert len(replay.requests) == 2
    assert reply.usage.seconds == pytest.approx(3.0)  # two requests of 1.5 s each; the backoff is not counted


def test_a_failed_call_carries_its_time(replay):
    replay.push(completion("first"), {"status": 503}, {"status": 503})
    client = ChatClient(replay.base_url, KEY, max_retries=1, sleep=lambda s: None, clock=SteppingClock(4.0))
    assert client.chat("m", MSG, 0.1).usage.seconds == pytest.approx(4.0)
    with pytest.raises(AgentError) as e:
        client.chat("m", MSG, 0.1)
    assert e.value.usage.calls == 2 and e.value.usage.seconds == pytest.approx(8.0)


def test_usage_sums_and_formats_its_time():
    u = Usage(11000, 1300, 0.0, 1, 12.5) + Usage(900, 50, 0.0, 1, 28.75)
    assert u.seconds == pytest.approx(41.25) and u.calls == 2
    assert usage.cell(u) == "13.2k tok, 41.2s"
    assert usage.cell(u, with_time=False) == "13.2k tok"
    assert usage.line(u) == "agents, whole tree: 2 calls, 11.9k prompt + 1.4k completion tokens, 41.2s of answers"
    assert usage.detail(u) == "agents: 2 call(s), 11900 prompt + 1350 completion tokens, 41.2s of answers"
    assert usage.as_json(u)["seconds"] == pytest.approx(41.25)
    priced = Usage(10, 2, 0.02, 1, 192.0)
    assert usage.line(priced).endswith("completion tokens, 3m12s of answers, $0.0200")



def test_no_time_is_shown_where_none_was_measured():
    old = Usage(800, 20, 0.0, 1)  # an LLM call stored before the time was measured
    assert usage.cell(old) == "820 tok" and "answers" not in usage.line(old)
    assert usage.time_text(old) == "" and usage.as_json(old)["seconds"] == 0
    assert usage.time_text(Usage()) == "" and usage.as_json(Usage()) is None  # the built-in team


def test_the_store_keeps_the_time_and_reads_old_trees_as_0(tmp_path):
    (tmp_path / ".git").mkdir()
    task = make_fake_task(tmp_path)
    path = tmp_path / ".stark" / "tree.sqlite"
    with TreeStore.open(path) as store:
        tid = store.create_tree(task)
        root = store.add_node(tid, None, ROOT, RUNNING)
        new = store.add_node(tid, root.id, PLAN_CODE, RUNNING, attempt=1)
        store.update_node(new.id, exchanges=[Exchange("plan", "p", "a", Usage(100, 20, 0.0, 1, 7.5))])
        old = store.add_node(tid, root.id, PLAN_CODE, RUNNING, attempt=2)
        store.update_node(old.id, exchanges=[Exchange("plan", "p", "a", Usage(100, 20, 0.0, 1, 3.0))])
    with sqlite3.connect(path) as db:  # as an older version wrote it: no "seconds"
        db.execute("UPDATE nodes SET exchanges_json = ? WHERE id = ?", (
            '[{"agent": "plan", "prompt": "p", "response": "a", "usage": '
            '{"prompt_tokens": 100, "completion_tokens": 20, "cost_usd": 0.0, "calls": 1}}]', old.id))
    with TreeStore.open(path, readonly=True) as store:
        by_id = {n.id: n for n in store.nodes(tid)}
    assert by_id[new.id].usage.seconds == pytest.approx(7.5)
    assert by_id[old.id].usage.seconds == 0.0 and by_id[old.id].usage.prompt_tokens == 100
    assert usage.total(by_id.values()).seconds == pytest.approx(7.5)
