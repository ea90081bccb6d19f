"""The Ray backend on a real local Ray cluster (2 CPUs, 2 CPU actors, Triton
interpreter, STARK_SMALL shapes): actors without secrets, an actor killed in
the middle of an evaluation, and a real search whose evaluations all go
through Ray. One cluster for the module (starting Ray takes ~10 s)."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the cluster backend needs Ray: pip install 'stark-lsp[ray]'")
pytest.importorskip("torch")
pytest.importorskip("triton")

from stark_lsp.agents.team import make_team  # noqa: E402
from stark_lsp.cluster.ray_evaluator import RayEvaluator  # noqa: E402
from stark_lsp.evaluate.options import EvalOptions  # noqa: E402
from stark_lsp.evaluate.result import Status  # noqa: E402
from stark_lsp.search import Search, SearchConfig, TreeStore  # noqa: E402
from stark_lsp.search.node import ABANDONED, ROOT  # noqa: E402
from stark_lsp.tasks.spec import load_task  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SECRET = "sk-cluster-test-do-not-leak"
FAST = EvalOptions(trials=2, cpu_reps=2, time_budget_s=0.5)  # the interpreter is slow: keep timing short
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def ev(tmp_path_factory):
    saved = {k: os.environ.get(k) for k in ("RAY_ADDRESS", "OPENAI_API_KEY", "STARK_TEST_TOKEN")}
    os.environ.pop("RAY_ADDRESS", None)  # "auto" must start a local cluster here
    os.environ["OPENAI_API_KEY"] = SECRET  # in the environment the cluster inherits
    os.environ["STARK_TEST_TOKEN"] = SECRET
    assert not ray.is_initialized()
    evaluator = RayEvaluator("auto", device="cpu", cpu_actors=2, local_cpus=2,
                             cache_dir=tmp_path_factory.mktemp("cache"))
    try:
        yield evaluator
    finally:
        evaluator.close()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    assert not ray.is_initialized()  # the local cluster started here was stopped


@pytest.fixture(scope="module")
def task():
    return load_task(REPO / "samples" / "triton" / "softmax.py")


def test_one_actor_per_slot_and_the_hardware(ev):
    members = ev.actors.wait_ready(timeout=240)
    assert len(members) == 2 and ev.placement.device == "cpu"
    assert len({m.info["pid"] for m in members}) == 2
    info = ev.hardware_info()
    assert info["is_gpu"] is False and info["actors"] == 2
    assert "Ray: 2 CPU actors" in ev.hardware()


def test_actors_get_no_secrets(ev):
    for m in ev.actors.wait_ready(timeout=240):
        env = ray.get(m.handle.environment.remote(), timeout=60)
        assert SECRET not in env["current"] and SECRET not in env["launched"]
        assert "STARK_SMALL=1" in env["current"]  # evaluation settings do arrive


def test_a_candidate_evaluates_through_an_actor(ev, task):
    before = ev.evaluations
    result = ev.evaluate(task, task.root_source(), FAST)
    assert result.status is Status.OK, (result.message, result.output[-2000:])
    assert ev.evaluations == before + 1
    bad = ev.evaluate(task, task.root_source().replace("def softmax_kernel", "def softmax_kernel(:"), FAST)
    assert bad.status is Status.COMPILE_ERROR and ev.evaluations == before + 2


SLEEPER = "stark-sleeper"


def slow_candidate(task, flag: Path) -> str:
    """The sample, but while ``flag`` exists its load names its process ``SLEEPER`` and sleeps.

    The candidate runs in the sandbox: it can read the task's folder (where
    ``flag`` is) but write nothing outside, so the test finds it by its name."""
    return task.root_source() + (
        "\n\nimport ctypes as _ct, os as _os, time as _time\n"
        f"if _os.path.exists({str(flag)!r}):\n"
        f"    _ct.CDLL(None).prctl(15, {SLEEPER.encode()!r}, 0, 0, 0)  # PR_SET_NAME\n"
        "    _time.sleep(600)\n"
    )


def sleeper_pid() -> int | None:
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().strip() == SLEEPER:
                return int(comm.parent.name)
        except OSError:
            continue
    return None


def kill_busy_actor_when_sleeping(ev, flag: Path, how: str) -> int:
    deadline = time.monotonic() + 240
    while (pid := sleeper_pid()) is None:
        assert time.monotonic() < deadline, "the slow candidate never started"
        time.sleep(0.2)
    flag.unlink()  # a retry elsewhere does not sleep
    (busy,) = [m for m in ev.actors.members() if m.busy]
    if how == "ray.kill":
        ray.kill(busy.handle)  # as if its node went away
    else:
        os.kill(busy.info["pid"], signal.SIGKILL)  # as if the actor process crashed (or the OOM killer came)
    return pid


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1].startswith("Z")
    except FileNotFoundError:
        return True


@pytest.mark.parametrize("how,retries", [("ray.kill", 1), ("crash", 0)])
def test_an_actor_killed_mid_evaluation_is_replaced(ev, tmp_path, how, retries):
    ev.actors.wait_ready(timeout=240)
    replaced, retried = ev.actors.replaced, ev.retried
    for name in ("softmax.py", "softmax.harness.py"):
        shutil.copy(REPO / "samples" / "triton" / name, tmp_path / name)
    task = load_task(tmp_path / "softmax.py")
    flag = tmp_path / "sleep-once"
    flag.write_text("")
    ev.retries = retries
    out = {}
    try:
        t = threading.Thread(target=lambda: out.update(r=ev.evaluate(task, slow_candidate(task, flag), FAST)))
        t.start()
        pid = kill_busy_actor_when_sleeping(ev, flag, how)
        t.join(240)
    finally:
        ev.retries = 1
    assert not t.is_alive()
    r = out["r"]
    assert ev.actors.replaced == replaced + 1
    if retries:  # retried once on another actor, where it no longer sleeps
        assert r.status is Status.OK and ev.retried == retried + 1, (r.status, r.message)
    else:
        assert r.status is Status.CRASHED and "actor died once" in r.message, r.message
    deadline = time.monotonic() + 60
    while not gone(pid):  # the killed actor's evaluation worker went with it (Ray, or the actor's watchdog)
        assert time.monotonic() < deadline, f"the candidate process {pid} outlived its actor"
        time.sleep(0.5)
    members = ev.actors.wait_ready(timeout=240)
    assert len(members) == 2  # replaced
    later = ev.evaluate(task, task.root_source(), FAST)
    assert later.status is Status.OK


def test_a_real_search_through_ray(ev, task, tmp_path):
    store = TreeStore.open(tmp_path / ".stark" / "tree.sqlite")
    before = ev.evaluations
    try:
        Search(task, store, ev, make_team("builtin"), SearchConfig(budget=3, concurrency=3, eval_options=FAST,
                                                                  retime_top=0)).run()
        nodes = store.nodes(task.task_id())
    finally:
        store.close()
    assert nodes[0].kind == ROOT and nodes[0].status == "ok"
    attempts = [n for n in nodes if n.kind != ROOT]
    assert sum(1 for n in attempts if n.spends_budget) == 3
    assert not [n for n in attempts if n.status == ABANDONED or n.in_flight]
    evaluated = [n for n in nodes if n.evaluated and n.duplicate_of is None]
    assert ev.evaluations - before == len(evaluated)  # every verdict came back from an actor
