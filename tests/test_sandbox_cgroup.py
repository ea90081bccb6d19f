"""The memory bound on all sandboxes together (evaluate/sandbox/cgroup.py): where the cgroup files are found, and a
candidate that spreads its memory over many processes, each under its own limit, against a real sandboxed
evaluator."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from stark_lsp.evaluate.sandbox import cgroup
from stark_lsp.evaluate.sandbox.cgroup import Hierarchy, locate, parse_size

ROOT = Path(__file__).resolve().parents[1]

V2_ONLY = "0::/user.slice/user-1000.slice/session-3.scope\n"
V2_MOUNTS = "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n"
HYBRID = "4:memory:/process_api/abc\n8:pids:/\n0::/\n"
HYBRID_MOUNTS = ("40 30 0:40 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
                 "41 30 0:41 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
                 "42 30 0:42 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n")


def test_locate_v2_makes_groups_beside_the_process_own_group_and_below_the_root():
    assert locate(V2_ONLY, V2_MOUNTS) == Hierarchy(2, Path("/sys/fs/cgroup/user.slice/user-1000.slice"))
    assert locate("0::/\n", V2_MOUNTS) == Hierarchy(2, Path("/sys/fs/cgroup"))


def test_locate_prefers_v1_memory_on_a_hybrid_machine_and_says_why_when_there_is_none():
    assert locate(HYBRID, HYBRID_MOUNTS) == Hierarchy(1, Path("/sys/fs/cgroup/memory/process_api/abc"))
    assert Hierarchy(1, Path("/x")).files() == ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes")
    why = locate("8:pids:/\n", HYBRID_MOUNTS.splitlines()[2])
    assert isinstance(why, str) and "no cgroup memory controller" in why


def test_parse_size():
    assert parse_size("512M") == 512 << 20 and parse_size("2g") == 2 << 30 and parse_size("4096") == 4096
    for bad in ("", "-1M", "lots", "0"):
        with pytest.raises(ValueError):
            parse_size(bad)


def _cgroup_or_skip() -> None:
    if cgroup.group("probe") is None:
        pytest.skip(f"no cgroup here: {cgroup.why_not()}")


def test_a_group_holds_what_runs_in_it_and_close_kills_what_is_left():
    _cgroup_or_skip()
    g = cgroup.group("candidate")
    proc = subprocess.Popen(g.argv(["sleep", "60"]))
    for _ in range(100):
        if proc.pid in g.pids():
            break
        time.sleep(0.05)
    assert g.pids() == [proc.pid]
    g.close()
    assert proc.wait(timeout=5) == -9 and not g.path.exists()


def test_a_forked_child_that_exits_leaves_its_parent_process_group_alone():
    _cgroup_or_skip()
    parent = cgroup.group("candidate").path.parent
    pid = os.fork()
    if pid == 0:
        cgroup.release()
        os._exit(0)
    os.waitpid(pid, 0)
    assert parent.exists()


def test_memory_past_the_sandboxes_cap_is_killed_there_named_and_not_escaped(tmp_path, monkeypatch):
    from stark_lsp.evaluate.evaluator import Evaluator
    from stark_lsp.evaluate.options import EvalOptions
    from stark_lsp.evaluate.result import Status
    from stark_lsp.evaluate.sandbox.policy import probe
    from stark_lsp.tasks.spec import load_task

    if not probe().available:
        pytest.skip(f"no sandbox here: {probe().reason}")
    _cgroup_or_skip()
    cap = 1 << 30
    monkeypatch.setenv(cgroup.ENV_CAP, str(cap))  # this test's sandboxes: 1 GiB each; the attack asks for 2 GiB
    opts = EvalOptions(trials=3, cpu_reps=5, reps=30, time_budget_s=1.0, load_timeout_s=60, cap_s=120.0)
    task = load_task(ROOT / "tests" / "data" / "evaluator" / "add_task.py")
    attack = (ROOT / "tests" / "data" / "attacks" / "memory_in_many_processes.py").read_text()
    good = (ROOT / "tests" / "data" / "evaluator" / "good_torch.py").read_text()
    with Evaluator(workers=1, cache_dir=tmp_path / "cache", sandbox="auto") as ev:
        r = ev.evaluate(task, attack, opts)
        if "SURVIVED" in r.output:  # children killed at the cap: never more than the cap held at once (16: 2 GiB)
            survived, killed = (int(w) for w in r.output.split("SURVIVED")[1].split()[0:3:2])
            assert survived * (128 << 20) <= cap and killed > 0, r.output[-800:]
        else:  # the OOM killer took the candidate process itself (its children die with its sandbox)
            assert r.status is Status.CRASHED and "the candidate process died" in r.message, (r.summary(), r.output[-800:])
        r = ev.evaluate(task, (ROOT / "tests" / "data" / "attacks" / "memory_in_one_call.py").read_text(), opts)
        assert r.status is Status.CRASHED and "out of memory, the sandboxes' cap of 1.0 GiB" in r.message, r.summary()
        r = ev.evaluate(task, (ROOT / "tests" / "data" / "attacks" / "cgroup_escape.py").read_text(), opts)
        assert "TRIES" in r.output and "refused" in r.output, r.output[-800:]
        assert "WROTE" not in r.output and "MADE" not in r.output, r.output[-800:]  # /sys is read-only in there
        after = ev.evaluate(task, good, opts)
        assert after.status is Status.OK, after.summary()  # the judge went on; the next candidate is honest and ok
