import sqlite3
from pathlib import Path

import pytest

from fakes import make_fake_task, verdict, fake_source
from stark_lsp.agents.base import Exchange, Usage
from stark_lsp.evaluate.result import Status
from stark_lsp.search.node import ABANDONED, AGENT_ERROR, PLAN_CODE, ROOT, RUNNING, outcome_fields
from stark_lsp.search.tree_store import (SCHEMA_VERSION, StoreError, TreeStore, default_store_path,
                                         find_workspace)


@pytest.fixture
def store(tmp_path):
    s = TreeStore.open(tmp_path / ".stark" / "tree.sqlite")
    yield s
    s.close()


@pytest.fixture
def task(tmp_path):
    return make_fake_task(tmp_path)


def _done(store, node_id, speed):
    r = verdict(fake_source(speed))
    status, sp, rt, err = outcome_fields(r)
    return store.update_node(node_id, status=status, result=r, speedup=sp, runtime_ms=rt, error=err)


def test_tree_and_spec_round_trip(store, task):
    tid = store.create_tree(task)
    assert tid == task.task_id()
    assert store.create_tree(task) == tid  # idempotent
    assert store.has_tree(tid)
    assert store.task(tid) == task
    assert store.tasks() == [(tid, task)]
    assert store.task("nope") is None


def test_node_round_trip_with_result_and_exchanges(store, task):
    tid = store.create_tree(task)
    root = store.add_node(tid, None, ROOT, RUNNING, source=fake_source(1.0))
    assert root.status == RUNNING and root.parent_id is None and root.attempt == 0
    ex = [Exchange("plan", "prompt text", "answer", Usage(100, 20, 0.5, 1)),
          Exchange("code", "p2", "a2", Usage(10, 2, 0.25, 1))]
    n = store.add_node(tid, root.id, PLAN_CODE, RUNNING, attempt=1, seed=7)
    store.update_node(n.id, plan="marked", summary="tile it", source=fake_source(2.0), exchanges=ex)
    n = _done(store, n.id, 2.0)
    got = store.get(n.id)
    assert (got.status, got.speedup, got.runtime_ms) == ("ok", 2.0, 0.5)
    assert got.result.runtime.speedup == 2.0 and got.result.resources[0].registers == 32
    assert got.plan == "marked" and got.summary == "tile it" and got.seed == 7 and got.attempt == 1
    assert [e.agent for e in got.exchanges] == ["plan", "code"]
    assert got.usage.prompt_tokens == 110 and got.usage.cost_usd == 0.75
    row = sqlite3.connect(store.path).execute(
        "SELECT prompt_tokens, completion_tokens, cost_usd FROM nodes WHERE id = ?", (n.id,)).fetchone()
    assert row == (110, 22, 0.75)
    assert [c.id for c in store.children(root.id)] == [n.id]
    assert [x.id for x in store.nodes(tid)] == [root.id, n.id]
    assert store.root(tid).id == root.id


def test_api_keys_are_redacted(store, task):
    tid = store.create_tree(task)
    n = store.add_node(tid, None, ROOT, RUNNING)
    key = "sk-" + "a1B2" * 10
    store.update_node(n.id, exchanges=[Exchange("plan", f"key {key}", f"Bearer {'x' * 30}")], error=key)
    raw = Path(store.path).read_bytes() + Path(str(store.path) + "-wal").read_bytes()
    assert key.encode() not in raw
    got = store.get(n.id)
    assert "[redacted]" in got.exchanges[0].prompt and "[redacted]" in got.exchanges[0].response
    assert got.error == "[redacted]"


def test_best_is_the_fastest_correct_node_earliest_on_ties(store, task):
    tid = store.create_tree(task)
    root = store.add_node(tid, None, ROOT, RUNNING, source=fake_source(1.0))
    _done(store, root.id, 1.0)
    a = _done(store, store.add_node(tid, root.id, PLAN_CODE, RUNNING).id, 3.0)
    _done(store, store.add_node(tid, root.id, PLAN_CODE, RUNNING).id, 3.0)
    bad = store.add_node(tid, root.id, PLAN_CODE, RUNNING)
    store.update_node(bad.id, status=Status.INCORRECT.value, speedup=9.0)  # a speedup on a failure never counts
    assert store.best(tid).id == a.id
    assert store.best("other") is None


def test_find_evaluated_matches_exact_source_in_the_same_tree(store, task, tmp_path):
    tid = store.create_tree(task)
    root = store.add_node(tid, None, ROOT, RUNNING, source=fake_source(1.0))
    assert store.find_evaluated(tid, fake_source(1.0)) is None  # not evaluated yet
    _done(store, root.id, 1.0)
    assert store.find_evaluated(tid, fake_source(1.0)).id == root.id
    assert store.find_evaluated(tid, fake_source(1.5)) is None
    other = make_fake_task(tmp_path, name="other")
    assert store.find_evaluated(store.create_tree(other), fake_source(1.0)) is None


def test_abandon_in_flight_only_touches_unfinished_nodes_of_that_tree(store, task):
    tid = store.create_tree(task)
    root = store.add_node(tid, None, ROOT, RUNNING, source=fake_source(1.0))
    _done(store, root.id, 1.0)
    a = store.add_node(tid, root.id, PLAN_CODE, RUNNING)
    b = store.add_node(tid, root.id, PLAN_CODE, "pending")
    c = store.add_node(tid, root.id, PLAN_CODE, AGENT_ERROR)
    assert sorted(store.abandon_in_flight(tid)) == [a.id, b.id]
    assert [store.get(i).status for i in (root.id, a.id, b.id, c.id)] == ["ok", ABANDONED, ABANDONED, AGENT_ERROR]
    assert store.abandon_in_flight(tid) == []


def test_bad_fields_and_statuses_are_refused(store, task):
    tid = store.create_tree(task)
    n = store.add_node(tid, None, ROOT, RUNNING)
    with pytest.raises(ValueError):
        store.update_node(n.id, colour="red")
    with pytest.raises(ValueError):
        store.update_node(n.id, status="great")
    with pytest.raises(ValueError):
        store.add_node(tid, None, "weird", RUNNING)
    with pytest.raises(StoreError):
        store.update_node(9999, status=RUNNING)
    with pytest.raises(StoreError):
        store.get(9999)


def test_wal_mode_and_schema_version(store):
    conn = sqlite3.connect(store.path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]


def test_a_newer_schema_is_refused(tmp_path):
    path = tmp_path / "tree.sqlite"
    TreeStore.open(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="schema version"):
        TreeStore.open(path)


def test_readonly_reader_sees_committed_writes_and_cannot_write(store, task):
    tid = store.create_tree(task)
    reader = TreeStore.open(store.path, readonly=True)
    assert reader.nodes(tid) == []
    n = store.add_node(tid, None, ROOT, RUNNING, source="x")
    assert [x.id for x in reader.nodes(tid)] == [n.id]
    with pytest.raises(StoreError):
        reader.update_node(n.id, status="ok")
    reader.close()


def test_readonly_open_of_a_missing_file_fails(tmp_path):
    with pytest.raises(StoreError):
        TreeStore.open(tmp_path / "none.sqlite", readonly=True)


def test_workspace_is_the_nearest_ancestor_with_stark_or_git(tmp_path):
    ws = tmp_path / "ws"
    deep = ws / "a" / "b"
    deep.mkdir(parents=True)
    assert find_workspace(deep) == deep  # nothing above: the start itself
    (ws / ".git").mkdir()
    assert find_workspace(deep) == ws
    (ws / "a" / ".stark").mkdir()
    assert find_workspace(deep) == ws / "a"
    assert default_store_path(deep) == ws / "a" / ".stark" / "tree.sqlite"


def _agent_error(store, tid, parent, error, **flag):
    n = store.add_node(tid, parent, PLAN_CODE, RUNNING, attempt=1)
    return store.update_node(n.id, status=AGENT_ERROR, error=error, **flag)


def test_nothing_new_is_data_and_nodes_stored_before_it_are_read_by_their_text(tmp_path, task):
    from stark_lsp.source_digest import NOTHING_NEW

    path = tmp_path / "tree.sqlite"
    with TreeStore.open(path) as s:
        tid = s.create_tree(task)
        root = s.add_node(tid, None, ROOT, RUNNING, source=fake_source(1.0))
        old = _agent_error(s, tid, root.id, f"plan agent: {NOTHING_NEW}: all 6 option(s) are in the tree").id
        other = _agent_error(s, tid, root.id, "plan agent: the endpoint timed out").id
        # the flag is what counts once written, whatever the text says
        flagged = _agent_error(s, tid, root.id, "plan agent: every tunable is tried", nothing_new=True).id
        unflagged = _agent_error(s, tid, root.id, f"plan agent: {NOTHING_NEW}", nothing_new=False).id
    conn = sqlite3.connect(path)  # the file as a stark_lsp from before the flag wrote it
    conn.execute("UPDATE nodes SET nothing_new = NULL WHERE id IN (?, ?)", (old, other))
    conn.commit()
    conn.close()
    with TreeStore.open(path, readonly=True) as ro:
        got = {n.id: n.nothing_new for n in ro.nodes(tid)}
    assert got == {root.id: False, old: True, other: False, flagged: True, unflagged: False}
    spends = {n.id: n.spends_budget for n in TreeStore.open(path, readonly=True).nodes(tid)}
    assert spends[old] is False and spends[other] is True and spends[flagged] is False


def test_a_store_without_the_nothing_new_column_is_read_and_gains_it_on_a_writable_open(tmp_path, task):
    from stark_lsp.source_digest import NOTHING_NEW

    path = tmp_path / "tree.sqlite"
    with TreeStore.open(path) as s:
        tid = s.create_tree(task)
        root = s.add_node(tid, None, ROOT, RUNNING, source=fake_source(1.0))
        old = _agent_error(s, tid, root.id, f"debug agent: {NOTHING_NEW}: no tunable to shrink").id
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE nodes DROP COLUMN nothing_new")  # a version 3 file from before the flag
    conn.commit()
    conn.close()
    with TreeStore.open(path, readonly=True) as ro:
        assert ro.get(old).nothing_new is True
    with TreeStore.open(path) as rw:
        assert rw.get(old).nothing_new is True
        rw.update_node(old, nothing_new=False)
        assert rw.get(old).nothing_new is False
    conn = sqlite3.connect(path)
    assert "nothing_new" in {r[1] for r in conn.execute("PRAGMA table_info(nodes)")}
    assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()
