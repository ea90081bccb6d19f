"""Profiling in the search: background profiles of the leading nodes, stored
in the tree (schema 2, version-1 stores still read), rendered into the Plan
agent's context with the resource report and the hardware floor."""

import sqlite3
import threading
import time

import pytest

from fakes import FakeEvaluator, FakeTeam, fake_source, make_fake_task, verdict
from stark_lsp.evaluate.result import EvalResult, Floor, KernelResources, Runtime, Status, Timing
from stark_lsp.profile import ncu as N
from stark_lsp.profile.ncu import NcuProfiler
from stark_lsp.profile.report import KernelProfile, ProfileReport
from stark_lsp.search import Search, SearchConfig, StoreError, TreeStore, build_context
from stark_lsp.search.context import floor_text, ncu_text, node_profile
from stark_lsp.search.engine import GpuGate
from stark_lsp.search.node import ROOT, Node
from stark_lsp.search.tree_store import SCHEMA_VERSION

pytestmark = pytest.mark.timeout(60)

KP = KernelProfile("entry_kernel", duration_ms=0.4, dram_pct=41.0, sm_pct=12.0, occupancy_pct=48.0,
                   stalls={"long_scoreboard": 61.0, "barrier": 12.0, "wait": 0.2})
NCU_LINE = "ncu: dram 41% of peak, sm 12%, occupancy 48%, stalls: long_scoreboard 61%, barrier 12%"


# -- rendering ---------------------------------------------------------------------
def _t(ms):
    return Timing(median_ms=ms, mean_ms=ms, min_ms=ms, max_ms=ms, iqr_ms=0.0, std_ms=0.0, reps=10)


def _ok_node(floor=None, profile=None, status="ok"):
    r = EvalResult(Status(status), runtime=Runtime("H200", True, _t(0.372), _t(1.0), 2.69, floor=floor),
                   resources=[KernelResources("entry_kernel", registers=32, shared_bytes=0, spill_stores=0, spill_loads=0)])
    return Node(id=3, task_id="t", parent_id=1, kind="plan_code", status=status, result=r, speedup=2.69,
                runtime_ms=0.372, profile=profile)


def test_profile_line_with_resources_floor_and_ncu():
    floor = Floor(bytes=1 << 30, flops=0, memory_floor_ms=0.12, compute_floor_ms=0.0, bandwidth_gbs=8900.0,
                  peak_tflops=None, bound="memory")
    node = _ok_node(floor, ProfileReport(ok=True, kernels=[KP]).to_dict())
    assert node_profile(node) == ("entry_kernel: 32 regs, 0 B smem, spills 0 st / 0 ld"
                                  " | 3.10× the memory floor (0.12 ms, memory-bound) | " + NCU_LINE)
    compute = Floor(bytes=1, flops=10, memory_floor_ms=0.01, compute_floor_ms=0.2, bandwidth_gbs=1.0,
                    peak_tflops=900.0, bound="compute")
    assert floor_text(_ok_node(compute)) == "1.86× the compute floor (0.2 ms, compute-bound)"
    # the floor as a plain dict (a result stored before Floor was a dataclass), and absent
    assert floor_text(_ok_node({"memory_floor_ms": 0.12, "compute_floor_ms": 0.0, "bound": "memory"})).startswith("3.10× the memory floor")
    assert floor_text(_ok_node(None)) == "" and ncu_text(_ok_node(None)) == ""
    assert node_profile(_ok_node(None)) == "entry_kernel: 32 regs, 0 B smem, spills 0 st / 0 ld"


def test_unavailable_profiles_and_failed_nodes_add_nothing():
    gone = ProfileReport.unavailable("ncu not found").to_dict()
    assert ncu_text(_ok_node(None, gone)) == ""
    fl = Floor(1, 0, 0.1, 0.0, 1.0, None)
    assert floor_text(_ok_node(fl, status="incorrect")) == ""
    assert ncu_text(_ok_node(None, {"ok": True, "kernels": "not a list"})) == ""


def test_the_plan_context_shows_the_profile(tmp_path):
    task = make_fake_task(tmp_path)
    root = Node(id=1, task_id="t", parent_id=None, kind=ROOT, status="ok", source=fake_source(1.0),
                result=verdict(fake_source(1.0)), speedup=1.0,
                profile=ProfileReport(ok=True, kernels=[KP]).to_dict())
    ctx = build_context("plan", task, [root], 1)
    assert ctx.window.history[0].profile.endswith(" | " + NCU_LINE)
    assert "Profile: entry_kernel: 32 regs, 1024 B smem, spills 0 st / 0 ld | " + NCU_LINE in ctx.window.history[0].full


# -- the store ---------------------------------------------------------------------
V1_SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE trees (task_id TEXT PRIMARY KEY, spec_json TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE nodes (
    id INTEGER PRIMARY KEY AUTOINCREMENT, task_id TEXT NOT NULL REFERENCES trees(task_id) ON DELETE CASCADE,
    parent_id INTEGER REFERENCES nodes(id), kind TEXT NOT NULL, status TEXT NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 0, plan TEXT NOT NULL DEFAULT '', summary TEXT NOT NULL DEFAULT '',
    source TEXT NOT NULL DEFAULT '', source_hash TEXT, result_json TEXT, speedup REAL, runtime_ms REAL,
    error TEXT NOT NULL DEFAULT '', duplicate_of INTEGER, exchanges_json TEXT NOT NULL DEFAULT '[]',
    prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0, seed INTEGER NOT NULL DEFAULT 0, created REAL NOT NULL, updated REAL NOT NULL
);
INSERT INTO schema_version(version) VALUES (1);
"""


def _v1_store(tmp_path, task):
    import json

    path = tmp_path / "old" / "tree.sqlite"
    path.parent.mkdir()
    conn = sqlite3.connect(path)
    conn.executescript(V1_SCHEMA)
    tid = task.task_id()
    conn.execute("INSERT INTO trees VALUES (?, ?, 1.0)", (tid, json.dumps(task.to_dict())))
    r = verdict(fake_source(1.0))
    conn.execute("INSERT INTO nodes(task_id, parent_id, kind, status, source, result_json, speedup, created, updated)"
                 " VALUES (?, NULL, 'root', 'ok', ?, ?, 1.0, 1.0, 1.0)", (tid, fake_source(1.0), r.to_json()))
    conn.commit()
    conn.close()
    return path


def _version(path):
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT version FROM schema_version").fetchone()[0], \
            {r[1] for r in conn.execute("PRAGMA table_info(nodes)")}
    finally:
        conn.close()


def test_a_version_1_store_is_read_as_it_is_and_migrated_on_a_writable_open(tmp_path):
    task = make_fake_task(tmp_path)
    path = _v1_store(tmp_path, task)
    with TreeStore.open(path, readonly=True) as ro:
        [root] = ro.nodes(task.task_id())
        assert root.source == fake_source(1.0) and root.profile is None and root.result.ok
    assert _version(path) == (1, _version(path)[1]) and "profile_json" not in _version(path)[1]
    with TreeStore.open(path) as rw:
        [root] = rw.nodes(task.task_id())
        assert root.profile is None
        rw.update_node(root.id, profile=ProfileReport(ok=True, kernels=[KP]).to_dict())
    version, cols = _version(path)
    assert version == SCHEMA_VERSION == 3 and "profile_json" in cols and "retimed_json" in cols
    with TreeStore.open(path, readonly=True) as ro:
        [root] = ro.nodes(task.task_id())
        assert ProfileReport.from_dict(root.profile).kernels == [KP]
        assert ro.best(task.task_id()).profile == root.profile
    with TreeStore.open(path) as rw:  # opening again changes nothing
        assert rw.get(root.id).profile == root.profile


def test_a_newer_store_is_refused(tmp_path):
    path = tmp_path / "tree.sqlite"
    TreeStore.open(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE schema_version SET version = 4")
    conn.commit()
    conn.close()
    for ro in (False, True):
        with pytest.raises(StoreError, match="schema version 4"):
            TreeStore.open(path, readonly=ro)


# -- the engine ------------------------------------------------------------------------
class CountingEvaluator(FakeEvaluator):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.active = 0
        self.lock2 = threading.Lock()

    def evaluate(self, task, source, options=None):
        with self.lock2:
            self.active += 1
        try:
            return super().evaluate(task, source, options)
        finally:
            with self.lock2:
                self.active -= 1


class FakeProfiler:
    def __init__(self, ev, delay=0.05):
        self.ev = ev
        self.delay = delay
        self.sources = []
        self.running = 0
        self.max_running = 0
        self.overlapped = False
        self.lock = threading.Lock()

    def available(self):
        return ""

    def profile(self, task, source, cancel=None):
        with self.lock:
            self.running += 1
            self.max_running = max(self.max_running, self.running)
            self.sources.append(source)
        if self.ev.active:
            self.overlapped = True
        time.sleep(self.delay)
        if self.ev.active:
            self.overlapped = True
        with self.lock:
            self.running -= 1
        return ProfileReport(ok=True, kernels=[KP], command="fake")


def _search(tmp_path, ev, profiler, **cfg):
    task = make_fake_task(tmp_path)
    store = TreeStore.open(tmp_path / ".stark" / "tree.sqlite")
    progress = []
    team = FakeTeam(factor=1.25)  # every attempt a new leader
    s = Search(task, store, ev, team, SearchConfig(**{"concurrency": 2, "budget": 10, **cfg}),
               on_progress=progress.append, profiler=profiler)
    return task, store, s, progress, team


def test_leaders_are_profiled_in_the_background_one_at_a_time_and_stored(tmp_path):
    ev = CountingEvaluator(delay=0.03)
    prof = FakeProfiler(ev)
    task, store, s, progress, team = _search(tmp_path, ev, prof, profile_top=2)
    s.run()
    nodes = store.nodes(task.task_id())
    profiled = [n for n in nodes if n.profile is not None]
    assert nodes[0].profile is not None  # the root: the first leader
    assert len(profiled) >= 2 and all(n.correct and n.duplicate_of is None for n in profiled)
    assert len(prof.sources) == len(set(prof.sources)) == len(profiled)  # each once
    assert prof.max_running == 1 and not prof.overlapped  # alone on the GPU
    assert sum(1 for n in nodes if n.kind != ROOT and n.spends_budget) == 10  # the budget, untouched
    assert any(p.message.startswith("#1 profiled: ncu: dram 41% of peak") for p in progress)
    # a Plan agent after the root's profile saw it
    plans = [c for a, c in team.contexts if a == "plan"]
    assert any(NCU_LINE in e.full for c in plans for e in c.window.history)
    store.close()
    with TreeStore.open(tmp_path / ".stark" / "tree.sqlite", readonly=True) as ro:  # persisted
        assert [n.id for n in ro.nodes(task.task_id()) if n.profile] == [n.id for n in profiled]


def test_profiling_off_by_default(tmp_path):
    ev = CountingEvaluator()
    prof = FakeProfiler(ev)
    task, store, s, progress, _ = _search(tmp_path, ev, prof)
    s.run()
    assert prof.sources == [] and all(n.profile is None for n in store.nodes(task.task_id()))
    store.close()


def test_without_ncu_the_search_goes_on_unprofiled(tmp_path, monkeypatch):
    monkeypatch.delenv("NCU", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    monkeypatch.setattr(N, "NCU_CANDIDATES", ())
    ev = CountingEvaluator()
    task, store, s, progress, _ = _search(tmp_path, ev, None, profile_top=3)
    s.run()
    assert any(p.message.startswith("profiling off: ncu not found") for p in progress)
    nodes = store.nodes(task.task_id())
    assert all(n.profile is None for n in nodes) and sum(1 for n in nodes if n.spends_budget and n.kind != ROOT) == 10
    store.close()


def test_a_failing_ncu_records_why_and_the_agents_see_nothing_of_it(tmp_path):
    ev = CountingEvaluator()
    prof = NcuProfiler(str(tmp_path / "no-such-ncu"), cache_dir=tmp_path / "cache")
    task, store, s, progress, team = _search(tmp_path, ev, prof, profile_top=1, budget=4)
    s.run()
    profiled = [n for n in store.nodes(task.task_id()) if n.profile is not None]
    assert profiled and all(not n.profile["ok"] and n.profile["reason"].startswith("cannot start ncu")
                            for n in profiled)
    assert not any("ncu" in e.full for _, c in team.contexts for e in c.window.history)
    store.close()


def test_a_profiler_that_raises_does_not_stop_the_search(tmp_path):
    class Broken(FakeProfiler):
        def profile(self, task, source, cancel=None):
            raise RuntimeError("profiler bug")

    ev = CountingEvaluator()
    # one attempt at a time: the fake team makes one child source per node, so two attempts in flight on the same
    # node make a duplicate (free, not budget) or not depending on timing (a loaded CI machine); this test is about
    # the profiler's failure only
    task, store, s, progress, _ = _search(tmp_path, ev, Broken(ev), profile_top=2, budget=5, concurrency=1)
    s.run()
    assert any(p.message == "profiling failed: RuntimeError: profiler bug" for p in progress)
    assert sum(1 for n in store.nodes(task.task_id()) if n.spends_budget and n.kind != ROOT) == 5
    store.close()


def test_gpu_gate_keeps_evaluations_out_while_the_profiler_holds_it():
    gate = GpuGate()
    order = []
    with gate.exclusive():
        t = threading.Thread(target=lambda: (gate.shared().__enter__(), order.append("eval")))
        t.start()
        time.sleep(0.2)
        order.append("profile done")
    t.join(5)
    assert order == ["profile done", "eval"]
