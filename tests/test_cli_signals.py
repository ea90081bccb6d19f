"""SIGTERM and SIGHUP to stark optimize and stark bench take Ctrl-C's orderly path (issue 24): one line saying
so, the tree left consistent (no running node; the attempts in flight redone on resume), the resume line, and
the documented exit code (143, 129). Both commands run in a process of their own, as a user runs them, with
the fake evaluator and team."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fakes import make_fake_task
from stark_lsp import exit_codes
from stark_lsp.search import TreeStore

pytestmark = [pytest.mark.timeout(120), pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")]

TESTS = str(Path(__file__).parent)

# the evaluator double: evaluations after the third wait until the search stops them (cancel), then answer
# "stopped", as the real evaluator's are; the run writes "ready" to a file once one waits, so the test knows
# an attempt is in flight when it sends the signal
OPTIMIZE = """
import sys, threading
from pathlib import Path
sys.path.insert(0, {tests!r})
from fakes import FakeEvaluator, FakeTeam
from stark_lsp import cli
from stark_lsp.commands import optimize_cmd
from stark_lsp.evaluate.result import EvalResult, Status

class Stoppable(FakeEvaluator):
    def __init__(self, hang):
        super().__init__()
        self.hang, self.stop = hang, threading.Event()

    def cancel(self):
        self.stop.set()

    def evaluate(self, task, source, options=None):
        with self._lock:
            n = self.calls + 1
        if self.hang and n > 3:
            with self._lock:
                self.calls += 1
            Path({ready!r}).write_text("ready")
            self.stop.wait()
            return EvalResult(Status.TIMEOUT, "stopped before it finished (the search was stopped)", stopped=True)
        return super().evaluate(task, source, options)

optimize_cmd.evaluator_from_args = lambda args, warm_for=None: Stoppable({hang!r})
optimize_cmd.team_from_args = lambda args: FakeTeam()
sys.exit(cli.main(sys.argv[1:]))
"""


def optimize(tmp_path: Path, task, *args: str, hang: bool) -> subprocess.Popen:
    script = OPTIMIZE.format(tests=TESTS, ready=str(tmp_path / "ready"), hang=hang)
    return subprocess.Popen([sys.executable, "-c", script, "optimize", str(task.path), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)


def wait_for(path: Path, proc: subprocess.Popen) -> None:
    import time

    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)


@pytest.mark.parametrize("signum, code, word, name", [
    (signal.SIGTERM, 143, "terminated", "SIGTERM"),
    (signal.SIGHUP, 129, "hung up", "SIGHUP"),
])
def test_a_signal_stops_optimize_as_ctrl_c_does_and_the_same_command_resumes(tmp_path, signum, code, word, name):
    task = make_fake_task(tmp_path)
    store = tmp_path / "st"
    argv = ("--budget", "6", "--concurrency", "1", "--store", str(store))
    proc = optimize(tmp_path, task, *argv, hang=True)
    wait_for(tmp_path / "ready", proc)  # an evaluation is in flight
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert code in exit_codes.MEANINGS
    assert f"stark optimize: {word} ({name}): stopping: the attempts in flight are cut and will be redone" in err
    assert err.rstrip().splitlines()[-1].startswith(
        f"stark optimize: {word}: the tree is saved; to resume, run the same command again: stark optimize "), err
    assert "Traceback" not in err
    assert f"{word} before the search's end: " in out and not task.path.with_name("k.best.py").exists()
    nodes = TreeStore.open(store / "tree.sqlite", readonly=True).nodes(task.task_id())
    assert not any(n.in_flight for n in nodes), [(n.id, n.status) for n in nodes]
    stopped = [n for n in nodes if n.status == "abandoned"]
    assert stopped and all("redone when the search continues" in (n.error or "") for n in stopped), \
        [(n.id, n.status, n.error) for n in nodes]
    done = sum(1 for n in nodes if n.parent_id and n.completed)
    assert done < 6

    again = optimize(tmp_path, task, *argv, hang=False)  # the same command resumes: the stopped attempt redone
    out, err = again.communicate(timeout=60)
    assert again.returncode in (0, 3), err
    nodes = TreeStore.open(store / "tree.sqlite", readonly=True).nodes(task.task_id())
    assert sum(1 for n in nodes if n.parent_id and n.completed) == 6, [(n.id, n.status) for n in nodes]


BENCH = """
import os, signal, sys
sys.path.insert(0, {tests!r})
from fakes import FakeEvaluator, FakeTeam
from stark_lsp import cli
from stark_lsp.bench import runner
from stark_lsp.commands import bench_cmd

bench_cmd.evaluator_from_args = lambda args, warm_for=None: FakeEvaluator()
bench_cmd.team_from_args = lambda args: FakeTeam()
real = runner.BenchRunner.run_one

def run_one(self, key, index=0, total=1, evaluator=None):
    if index == 1:  # the bench is sent SIGTERM during its second run
        os.kill(os.getpid(), signal.SIGTERM)
    return real(self, key, index, total, evaluator)

runner.BenchRunner.run_one = run_one
sys.exit(cli.main(sys.argv[1:]))
"""


def test_sigterm_stops_bench_as_ctrl_c_does_with_the_resume_line(tmp_path):
    from fakes import fake_source

    body = "ENTRY = 'entry'\n\n\ndef reference():\n    pass\n\n\ndef entry():\n    pass\n\n\n"
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    for name in ("a", "b", "c"):
        (tasks / f"{name}.py").write_text(fake_source(1.0, body=body))
    out_dir = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-c", BENCH.format(tests=TESTS), "bench", str(tasks), "--budget", "2",
                           "--out", str(out_dir), "--retime-top", "0"],
                          capture_output=True, text=True, timeout=100, cwd=tmp_path, env={**os.environ})
    assert proc.returncode == 143, proc.stderr
    assert "stark bench: terminated (SIGTERM): stopping:" in proc.stderr and "Traceback" not in proc.stderr
    last = proc.stderr.rstrip().splitlines()[-1]
    assert last.startswith("stark bench: terminated: ") and last.endswith("--resume"), last
    doc = json.loads((out_dir / "bench.json").read_text())
    assert doc["complete"] is False and len(doc["runs"]) < 3
