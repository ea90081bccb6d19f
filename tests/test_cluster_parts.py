"""The cluster backend's parts that need no Ray: the option, the actors'
environment, tasks rebuilt on another node, the queue over the actors, and
that nothing imports Ray unless a cluster is asked for."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from stark_lsp.cluster.actor import materialize_task, task_payload
from stark_lsp.cluster.env import actor_env_vars, drop_secrets
from stark_lsp.cluster.scheduler import ActorSet, ActorsUnavailable, Member
from stark_lsp.cluster.spec import parse_cluster
from stark_lsp.tasks.spec import load_task

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.timeout(60)


# -- the option -------------------------------------------------------------------
@pytest.mark.parametrize("value,want", [(None, None), ("", None), ("off", None), ("auto", "auto"), (" AUTO ", "auto"),
                                        ("ray://head:10001", "ray://head:10001"),
                                        ("ray://10.0.0.5:10001", "ray://10.0.0.5:10001")])
def test_parse_cluster(value, want):
    assert parse_cluster(value) == want


@pytest.mark.parametrize("value", ["yes", "ray://head", "http://head:10001", "head:10001", "ray://a b:1"])
def test_parse_cluster_rejects(value):
    with pytest.raises(ValueError, match="auto' or 'ray://HOST:PORT"):
        parse_cluster(value)


# -- the actors' environment ----------------------------------------------------------------
def test_actor_env_blanks_secrets_and_forwards_only_evaluation_settings():
    base = {"OPENAI_API_KEY": "sk-1", "GITHUB_TOKEN": "gh", "AWS_SECRET_ACCESS_KEY": "aws", "STARK_SMALL": "1",
            "TRITON_INTERPRET": "1", "STARK_EVAL_X": "y", "PATH": "/bin", "HOME": "/root", "RAY_AUTH_TOKEN": "r"}
    env = actor_env_vars(base)
    assert env == {"OPENAI_API_KEY": "", "GITHUB_TOKEN": "", "AWS_SECRET_ACCESS_KEY": "", "STARK_SMALL": "1",
                   "STARK_EVAL_X": "y"}
    assert not any(v in env.values() for v in ("sk-1", "gh", "aws", "r"))
    assert actor_env_vars(base, device="cuda")["TRITON_INTERPRET"] == ""  # GPU actors compile for real


def test_drop_secrets_in_place():
    environ = {"OPENAI_API_KEY": "sk", "MY_PASSWORD": "p", "PATH": "/bin", "RAY_ADDRESS": "x"}
    assert sorted(drop_secrets(environ)) == ["MY_PASSWORD", "OPENAI_API_KEY"]
    assert environ == {"PATH": "/bin", "RAY_ADDRESS": "x"}


# -- tasks on another node ------------------------------------------------------------------------
def test_a_task_is_used_in_place_when_its_files_are_here(tmp_path):
    task = load_task(REPO / "samples" / "triton" / "softmax.py")
    assert materialize_task(task_payload(task), tmp_path) == task
    assert not (tmp_path / "tasks").exists()


def test_a_task_is_copied_when_its_files_are_elsewhere(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("softmax.py", "softmax.harness.py"):
        (src / name).write_text((REPO / "samples" / "triton" / name).read_text())
    task = load_task(src / "softmax.py")
    payload = task_payload(task)
    (src / "softmax.harness.py").write_text("# edited on the driver after the payload was made\n")
    node = tmp_path / "node"
    copy = materialize_task(payload, node)
    assert copy.kind == task.kind and copy.path.parent == copy.harness.parent and node in copy.path.parents
    assert copy.path.read_text() == payload["files"]["path"]
    assert copy.harness.read_text() == payload["files"]["harness"]
    mtime = copy.harness.stat().st_mtime_ns
    time.sleep(0.01)
    assert materialize_task(payload, node) == copy and copy.harness.stat().st_mtime_ns == mtime


# -- the queue over the actors ------------------------------------------------------------------------
class Fleet:
    """Fake actors: start/stop record what happened; ``fail`` makes starts fail."""

    def __init__(self, fail: bool = False):
        self.fail = fail
        self.started: list[int] = []
        self.stopped: list[int] = []

    def start(self, n: int) -> Member:
        if self.fail:
            raise RuntimeError(f"no resources for actor {n}")
        self.started.append(n)
        return Member(index=n, handle=f"actor-{n}")

    def stop(self, m: Member) -> None:
        self.stopped.append(m.index)


def test_at_most_one_candidate_in_flight_per_actor():
    fleet = Fleet()
    actors = ActorSet(3, fleet.start, fleet.stop)
    busy: set[str] = set()
    peak, clash = [0], []
    lock = threading.Lock()

    def job():
        m = actors.acquire()
        with lock:
            if m.handle in busy:
                clash.append(m.handle)
            busy.add(m.handle)
            peak[0] = max(peak[0], len(busy))
        time.sleep(0.02)
        with lock:
            busy.discard(m.handle)
        actors.release(m)

    threads = [threading.Thread(target=job) for _ in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not clash and 1 <= peak[0] <= 3
    assert sum(m.jobs for m in actors.members()) == 24
    actors.close()
    assert sorted(fleet.stopped) == [1, 2, 3]


def test_a_lost_actor_is_replaced_and_the_line_moves_on():
    fleet = Fleet()
    actors = ActorSet(2, fleet.start, fleet.stop)
    assert len(actors.wait_ready(timeout=10)) == 2
    m = actors.acquire()
    actors.replace(m, "killed")
    actors.replace(m, "killed again")  # a second report of the same loss changes nothing
    assert fleet.stopped == [m.index] and actors.replaced == 1
    live = actors.wait_ready(timeout=10)
    assert len(live) == 2 and m not in live and max(x.index for x in live) == 3
    a, b = actors.acquire(), actors.acquire()
    assert {a.index, b.index} == {x.index for x in live}
    actors.close()


def test_no_actor_at_all_raises_instead_of_waiting_for_ever():
    fleet = Fleet(fail=True)
    actors = ActorSet(2, fleet.start, fleet.stop)
    with pytest.raises(ActorsUnavailable, match="no resources"):
        actors.acquire()
    fleet.fail = False  # the cluster got its resources back: the next caller starts one
    assert actors.acquire().index >= 3
    actors.close()


def test_a_failed_replacement_does_not_stop_the_others():
    fleet = Fleet()
    actors = ActorSet(2, fleet.start, fleet.stop, retry_after_s=0.05)
    actors.wait_ready(timeout=10)
    fleet.fail = True
    actors.replace(actors.acquire(), "node lost")
    time.sleep(0.2)
    m = actors.acquire()  # the survivor keeps serving
    actors.release(m)
    fleet.fail = False
    assert len(actors.wait_ready(timeout=10)) == 2  # the retry brought the second back
    actors.close()


def test_waiting_callers_are_released_on_close():
    fleet = Fleet()
    actors = ActorSet(1, fleet.start, fleet.stop)
    held = actors.acquire()
    errors = []

    def waiter():
        try:
            actors.acquire()
        except ActorsUnavailable as e:
            errors.append(str(e))

    t = threading.Thread(target=waiter)
    t.start()
    actors.close()
    t.join(10)
    assert errors == ["the evaluator is closed"] and held.index == 1


# -- no Ray unless asked for ----------------------------------------------------------------------------
def test_the_cli_search_and_server_do_not_import_ray():
    code = ("import sys\n"
            "import stark_lsp.cli, stark_lsp.commands.optimize_cmd, stark_lsp.search.engine\n"
            "import stark_lsp.server.backend, stark_lsp.server.settings, stark_lsp.cluster\n"
            "from stark_lsp.commands import optimize_cmd\n"
            "import argparse; p = argparse.ArgumentParser(); optimize_cmd.add_arguments(p)\n"
            "args = p.parse_args(['x.py'])\n"
            "assert args.cluster is None, args.cluster\n"
            "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


# -- the CLI and the server settings ------------------------------------------------------------------------
def test_optimize_rejects_a_bad_cluster(tmp_path, capsys):
    from stark_lsp import cli

    sample = REPO / "samples" / "triton" / "softmax.py"
    assert cli.main(["optimize", str(sample), "--cluster", "yes", "--store", str(tmp_path / "s")]) == 2
    assert "'auto' or 'ray://HOST:PORT'" in capsys.readouterr().err


def test_optimize_cluster_builds_the_cluster_evaluator_and_feeds_every_actor(tmp_path, monkeypatch):
    import types

    import stark_lsp.cluster
    from fakes import FakeEvaluator, FakeTeam, make_fake_task
    from stark_lsp import cli
    from stark_lsp.commands import optimize_cmd

    calls = []

    def fake_cluster(cluster, **kw):
        calls.append((cluster, kw))
        ev = FakeEvaluator(barrier=threading.Barrier(3, timeout=20))  # fails unless 3 evaluations overlap
        ev.placement = types.SimpleNamespace(actors=2)
        return ev

    monkeypatch.setattr(stark_lsp.cluster, "make_evaluator", fake_cluster)
    monkeypatch.setattr(optimize_cmd, "team_from_args", lambda args: FakeTeam())
    task = make_fake_task(tmp_path)
    code = cli.main(["optimize", str(task.path), "--cluster", "auto", "--workers", "5", "--budget", "3",
                     "--store", str(tmp_path / "store")])
    assert code == 0
    assert calls == [("auto", {"device": "auto", "cpu_actors": 5})]


def test_server_setting_cluster(monkeypatch):
    import stark_lsp.cluster
    from stark_lsp.server.backend import Backend, BackendUnavailable
    from stark_lsp.server.settings import parse_settings

    s, problems = parse_settings({"evaluation": {"cluster": "ray://head:10001", "workers": 3}})
    assert (s.cluster, s.workers, problems) == ("ray://head:10001", 3, [])
    s2, problems = parse_settings({"evaluation": {"cluster": "everywhere"}}, base=s)
    assert s2.cluster == "ray://head:10001" and problems and problems[0].startswith("stark.evaluation.cluster must be")
    assert parse_settings({"evaluation": {"cluster": ""}}, base=s)[0].cluster is None

    made = []
    monkeypatch.setattr(stark_lsp.cluster, "make_evaluator", lambda c, **kw: made.append((c, kw)) or object())
    backend = Backend()
    ev = backend.evaluator(s)
    assert backend.evaluator(s) is ev and made == [("ray://head:10001", {"device": "auto", "cpu_actors": 3})]

    def no_ray(c, **kw):
        raise ImportError("the cluster backend needs Ray: pip install 'stark-lsp[ray]'")

    monkeypatch.setattr(stark_lsp.cluster, "make_evaluator", no_ray)
    with pytest.raises(BackendUnavailable, match=r"stark-lsp\[ray\]"):
        Backend().make_evaluator(s)


# -- the watchdog beside each actor ----------------------------------------------------------------------------
def test_the_watchdog_kills_the_workers_of_a_dead_actor(tmp_path):
    actor = subprocess.Popen(["sleep", "300"])
    worker = subprocess.Popen(["sleep", "300"], start_new_session=True)  # like an evaluation worker
    bystander = subprocess.Popen(["sleep", "300"], start_new_session=True)
    pgids = tmp_path / "actor.pgids"
    pgids.write_text(f"{worker.pid}")
    dog = subprocess.Popen([sys.executable, "-m", "stark_lsp.cluster.watchdog", str(actor.pid), str(pgids)], cwd=REPO)
    try:
        time.sleep(1.0)
        assert worker.poll() is None and dog.poll() is None  # nothing happens while the actor lives
        actor.kill()
        actor.wait()
        assert dog.wait(30) == 0
        assert worker.wait(10) == -9 and not pgids.exists()
        assert bystander.poll() is None
    finally:
        for p in (actor, worker, bystander, dog):
            p.kill()
            p.wait()
