"""A judge told what its jobs will be (``Evaluator(warm_for=task)``, as ``stark eval`` does) starts its
sandbox's zygote before the first job, for that job's view; a command about to return closes its judges
without waiting (``WorkerPool.close(wait=False)``): each judge, told to exit, still clears its sandbox
away and ends by itself, never lingering."""

from __future__ import annotations

import os
import time
from pathlib import Path

from stark_lsp.evaluate.evaluator import Evaluator
from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.evaluate.result import Status
from stark_lsp.tasks.spec import load_task

DATA = Path(__file__).resolve().parent / "data" / "evaluator"


def _gone(pid: int, within_s: float) -> bool:
    end = time.monotonic() + within_s
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True  # exited; its parent (this test) has not reaped it yet
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_a_judge_left_to_exit_ends_by_itself_with_its_sandbox(tmp_path):
    ev = Evaluator(workers=1, cache_dir=tmp_path / "cache", device="cpu")
    r = ev.evaluate(load_task(DATA / "add_task.py"), (DATA / "good_torch.py").read_text(),
                    EvalOptions(trials=1, cpu_reps=1, reps=5, time_budget_s=0.2, run_timeout_s=60))
    assert r.status is Status.OK, r.summary()
    judges = [w.proc for w in ev.pool._all]
    zygotes = sorted(_zygotes())
    assert judges and zygotes
    ev.close(wait=False)  # returns at once: the judge's clean-up (about 2 s on a GPU) is its own
    assert all(_gone(p.pid, 30) for p in judges)
    assert all(_gone(z, 30) for z in zygotes)
    for p in judges:
        assert p.wait(5) == 0  # a clean exit, not the alarm's


def _runs_zygote(pid: int) -> bool:
    try:
        return b"stark_lsp.evaluate.sandbox.zygote" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def _is_zygote(pid: int) -> bool:
    """A zygote started under this test (through its judge, and the sandbox's own processes); not a
    candidate process, which a zygote forks (same command line) and replaces after every job."""
    return _runs_zygote(pid) and not _runs_zygote(_parent(pid)) and _descends_from(pid, os.getpid())


def _descends_from(pid: int, ancestor: int) -> bool:
    while pid > 1:
        pid = _parent(pid)
        if pid == ancestor:
            return True
    return False


def test_a_judge_told_its_task_starts_the_zygote_before_the_first_job_and_uses_it(tmp_path):
    task = load_task(DATA / "add_task.py")
    ev = Evaluator(workers=1, cache_dir=tmp_path / "cache", device="cpu", warm_for=task)
    try:
        ev.pool.hardware()  # the judge is up; no job has been sent
        end = time.monotonic() + 60
        while time.monotonic() < end and not _zygotes():
            time.sleep(0.1)
        before = _zygotes()
        assert before, "no zygote before the first job"
        r = ev.evaluate(task, (DATA / "good_torch.py").read_text(),
                        EvalOptions(trials=1, cpu_reps=1, reps=5, time_budget_s=0.2, run_timeout_s=60))
        assert r.status is Status.OK, r.summary()
        assert before <= _zygotes()  # the same zygote served the job: its view was the job's
    finally:
        ev.close()


def _zygotes() -> set[int]:
    return {int(p) for p in os.listdir("/proc") if p.isdigit() and _is_zygote(int(p))}
