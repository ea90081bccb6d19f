"""The GPU's gate, across processes (stark_lsp/evaluate/judge/gpu_lock.py): what is timed has the GPU
alone, everything else shares it.

On the CPU the workers take no lock unless STARK_EVAL_LOCK_NAME names one, which
these tests do to exercise the same path a GPU worker takes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from stark_lsp.evaluate.judge.gpu_lock import GpuLock, lock_path

ROOT = Path(__file__).resolve().parents[1]

HOLD = r"""
import json, sys, time
from stark_lsp.evaluate.judge.gpu_lock import GpuLock
with GpuLock(sys.argv[1]):
    t0 = time.time()
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
    t1 = time.time()
print(json.dumps([t0, t1]), flush=True)
"""


HOLD_MODE = r"""
import json, sys, time
from stark_lsp.evaluate.judge.gpu_lock import GpuGate
gate = GpuGate(sys.argv[1])
print("ready", flush=True)
with gate.hold(sys.argv[3]):
    t0 = time.time()
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
    t1 = time.time()
print(json.dumps([t0, t1]), flush=True)
"""


def _hold(key: str, seconds: float, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", HOLD, key, str(seconds)], stdout=subprocess.PIPE, text=True,
                            env=env, cwd=ROOT)


def _hold_as(mode: str, key: str, seconds: float, env: dict) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", HOLD_MODE, key, str(seconds), mode], stdout=subprocess.PIPE,
                         text=True, env=env, cwd=ROOT)
    assert p.stdout.readline().strip() == "ready"
    return p


def _span(p: subprocess.Popen) -> list[float]:
    # through the buffered reader that _hold_as read "ready" from: it may hold the rest already
    # (communicate(timeout=...) reads the raw pipe and would miss it)
    out = p.stdout.read()
    p.wait(timeout=60)
    return json.loads(out.strip().splitlines()[-1])


@pytest.fixture
def lock_env(tmp_path, monkeypatch):
    monkeypatch.setenv("STARK_EVAL_LOCK_DIR", str(tmp_path / "locks"))
    return dict(os.environ, PYTHONPATH=str(ROOT))


def test_two_processes_never_hold_one_gpu_at_once(lock_env):
    procs = [_hold("GPU-abc", 0.5, lock_env) for _ in range(3)]
    spans = sorted(json.loads(p.communicate(timeout=60)[0].strip().splitlines()[-1]) for p in procs)
    for (_, end), (start, _) in zip(spans, spans[1:]):
        assert start >= end, spans
    assert lock_path("GPU-abc").exists() and "GPU-abc" in lock_path("GPU-abc").name


def test_other_gpus_are_not_held_up(lock_env):
    with GpuLock("GPU-one"):
        p = _hold("GPU-two", 0.0, lock_env)
        out = p.communicate(timeout=60)[0]
    assert "held" in out


def test_a_killed_holder_releases_the_lock(lock_env):
    p = _hold("GPU-k", 600, lock_env)
    assert p.stdout.readline().strip() == "held"
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=30)
    got = threading.Event()

    def take():
        with GpuLock("GPU-k"):
            got.set()

    t = threading.Thread(target=take, daemon=True)
    t.start()
    assert got.wait(30), "the lock stayed held after its holder was killed"


@pytest.mark.timeout(300)
def test_the_time_limit_runs_from_when_the_worker_holds_the_gpu(lock_env, monkeypatch, tmp_path):
    from stark_lsp.evaluate.evaluator import Evaluator
    from stark_lsp.evaluate.options import EvalOptions
    from stark_lsp.evaluate.result import Status
    from stark_lsp.tasks.spec import load_task

    monkeypatch.setenv("STARK_EVAL_LOCK_NAME", "GPU-test")  # the workers inherit it: they lock like GPU workers
    task = load_task(ROOT / "tests" / "data" / "evaluator" / "add_task.py")
    # a limit an evaluation on a GPU fits (a fresh process, the calibration, 1.5 s of timing), held longer
    opts = EvalOptions(trials=1, cpu_reps=1, run_timeout_s=8.0)
    with Evaluator(workers=1, cache_dir=tmp_path / "cache") as ev:
        # warm, under the default limits: a first evaluation on a GPU starts the sandbox (5-7 s on the H200)
        assert ev.evaluate(task, task.root_source(), EvalOptions(trials=1, cpu_reps=1)).status is Status.OK
        with GpuLock("GPU-test"):
            result: list = []
            again = task.root_source() + "\n# a new source: not a cached verdict\n"
            t = threading.Thread(target=lambda: result.append(ev.evaluate(task, again, opts)))
            t.start()
            time.sleep(10.0)  # longer than the run limit: waiting must not count
            assert t.is_alive(), "the evaluation ran while another process held the GPU"
        t.join(120)
        assert result and result[0].status is Status.OK, result[0].summary() if result else "no result"


def test_the_lock_name_comes_from_the_gpu_uuid_else_a_fallback():
    from types import SimpleNamespace

    from stark_lsp.evaluate.judge.gpu_lock import gpu_key

    def fake_torch(props):
        def get(device):
            if props is None:
                raise RuntimeError("no device properties")
            return props
        return SimpleNamespace(cuda=SimpleNamespace(get_device_properties=get, current_device=lambda: 0))

    dev = SimpleNamespace(index=0)
    assert gpu_key(fake_torch(SimpleNamespace(uuid="GPU-1234", name="H200")), dev) == "GPU-1234"
    assert gpu_key(fake_torch(SimpleNamespace(uuid=None, pci_bus_id=7, name="H200")), dev) == "pci7"
    assert gpu_key(fake_torch(None), dev).startswith("cuda")


def test_a_lock_file_that_cannot_be_written_still_locks_and_none_at_all_does_not_fail(lock_env, monkeypatch):
    import stark_lsp.evaluate.judge.gpu_lock as gl

    lock_path("GPU-ro").parent.mkdir(parents=True, exist_ok=True)
    lock_path("GPU-ro").touch()
    real_open = os.open

    def no_write(path, flags, *a):  # as for another user's file in a shared /tmp
        if flags & os.O_RDWR:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *a)

    monkeypatch.setattr(gl.os, "open", no_write)
    with GpuLock("GPU-ro"):
        p = _hold("GPU-ro", 0.0, lock_env)  # a process that can write the file
        time.sleep(3.0)
        released = time.time()
    t0, _ = json.loads(p.communicate(timeout=60)[0].strip().splitlines()[-1])
    assert t0 >= released  # it waited: the read-only descriptor still locks

    def nothing(path, flags, *a):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(gl.os, "open", nothing)
    with GpuLock("GPU-none") as lock:  # no lock to be had: the evaluation goes on
        assert lock.waited_s == 0.0


def test_shared_holders_overlap_and_an_exclusive_one_waits_for_them(lock_env):
    a = _hold_as("shared", "GPU-s", 2.0, lock_env)
    assert a.stdout.readline().strip() == "held"
    b = _hold_as("shared", "GPU-s", 0.0, lock_env)  # passes while a holds its share
    (b0, b1) = _span(b)
    w = _hold_as("exclusive", "GPU-s", 0.0, lock_env)
    (a0, a1), (w0, _) = _span(a), _span(w)
    assert b1 <= a1, "a second shared holder waited for the first"
    assert w0 >= a1, "the exclusive holder ran beside a shared one"


def test_a_waiting_exclusive_holder_is_not_starved_by_new_shared_ones(lock_env):
    """A timer waits only for the shared phases already running: one that comes after it waits for it."""
    from stark_lsp.evaluate.judge.gpu_lock import SHARED, GpuGate

    reader = GpuGate("GPU-w")
    reader.switch(SHARED)
    w = _hold_as("exclusive", "GPU-w", 1.0, lock_env)
    late = None
    try:
        deadline = time.time() + 30
        while time.time() < deadline:  # the writer has the turnstile once a shared try fails
            probe = GpuGate("GPU-w")
            if not probe._take(SHARED, blocking=False):
                probe.close()
                break
            probe.close()  # its descriptors closed: the share it took goes with them
            time.sleep(0.05)
        else:
            pytest.fail("the exclusive holder never reached the turnstile")
        late = _hold_as("shared", "GPU-w", 0.0, lock_env)
    finally:
        reader.close()  # the running shared phase ends: the writer goes, then the late reader
    (w0, w1) = _span(w)
    (l0, _) = _span(late)
    assert l0 >= w1, "a shared holder that came after a waiting timer went before it"


def test_a_gate_says_when_it_waits_and_for_how_long(lock_env):
    from stark_lsp.evaluate.judge.gpu_lock import EXCLUSIVE, SHARED, GpuGate

    seen = []
    gate = GpuGate("GPU-n", on_wait=lambda mode, s: seen.append((mode, s)))
    with gate.hold(SHARED):
        pass
    assert seen == [] and gate.waited_s == 0.0  # nothing to wait for: nothing said
    p = _hold_as("shared", "GPU-n", 1.0, lock_env)
    assert p.stdout.readline().strip() == "held"
    with gate.hold(EXCLUSIVE):
        assert gate.mode == EXCLUSIVE
    _span(p)
    assert seen[0] == (EXCLUSIVE, None) and seen[1][0] == EXCLUSIVE and seen[1][1] > 0
    assert gate.waited_s == seen[1][1] and gate.mode is None


def test_with_a_trace_every_exclusive_hold_is_written_with_what_it_was_for(lock_env, monkeypatch, tmp_path):
    from stark_lsp.evaluate.judge.gpu_lock import EXCLUSIVE, SHARED, GpuGate

    trace = tmp_path / "trace.jsonl"
    monkeypatch.setenv("STARK_EVAL_TRACE", str(trace))
    gate = GpuGate("GPU-t")
    with gate.hold(SHARED):
        with gate.hold(EXCLUSIVE, "candidate timing"):
            with gate.hold(SHARED):  # the checks mid-way: the hold is let go of, then taken again
                pass
    gate.close()
    rows = [json.loads(line) for line in trace.read_text().splitlines()]
    holds = [r for r in rows if "gate" in r]
    assert [r["gate"] for r in holds] == ["candidate timing", "candidate timing"]
    assert all(r["held_s"] >= 0 for r in holds)


def test_with_a_trace_a_wait_is_written_with_what_it_waited_for_and_what_came_before(lock_env, monkeypatch,
                                                                                     tmp_path):
    from stark_lsp.evaluate.judge.gpu_lock import EXCLUSIVE, GpuGate

    trace = tmp_path / "trace.jsonl"
    monkeypatch.setenv("STARK_EVAL_TRACE", str(trace))
    gate = GpuGate("GPU-v")
    with gate.hold(None, "first call"):
        pass
    p = _hold_as("shared", "GPU-v", 1.0, lock_env)  # another judge's checks
    assert p.stdout.readline().strip() == "held"
    with gate.hold(None, "load"):
        with gate.hold(EXCLUSIVE, "candidate timing"):
            pass
    _span(p)
    gate.close()
    rows = [json.loads(line) for line in trace.read_text().splitlines()]
    waits = [r for r in rows if "wait" in r]
    assert [(r["wait"], r["for"], r["after"]) for r in waits] == [(EXCLUSIVE, "candidate timing", "load")]
    assert waits[0]["waited_s"] > 0 and [r["gate"] for r in rows if "gate" in r] == ["candidate timing"]


def test_a_cpu_gate_never_waits():
    from stark_lsp.evaluate.judge.gpu_lock import EXCLUSIVE, GpuGate

    gate = GpuGate("")
    with gate.hold(EXCLUSIVE):
        assert not gate.active
    assert gate.waited_s == 0.0


@pytest.mark.timeout(300)
def test_an_evaluation_times_only_when_no_other_process_uses_the_gpu(lock_env, monkeypatch, tmp_path):
    """A process that holds the gate shared (another judge's checks) keeps an evaluation from timing
    until it lets go; the wait is not the candidate's time, and the result says how long it was."""
    from stark_lsp.evaluate.evaluator import Evaluator
    from stark_lsp.evaluate.options import EvalOptions
    from stark_lsp.evaluate.result import Status
    from stark_lsp.tasks.spec import load_task

    monkeypatch.setenv("STARK_EVAL_LOCK_NAME", "GPU-eval")
    task = load_task(ROOT / "tests" / "data" / "evaluator" / "add_task.py")
    opts = EvalOptions(trials=1, cpu_reps=1, run_timeout_s=8.0)
    with Evaluator(workers=1, cache_dir=tmp_path / "cache") as ev:
        # warm, under the default limits (see the test above)
        assert ev.evaluate(task, task.root_source(), EvalOptions(trials=1, cpu_reps=1)).status is Status.OK
        p = _hold_as("shared", "GPU-eval", 10.0, lock_env)  # longer than the run limit
        assert p.stdout.readline().strip() == "held"
        done: list = []
        again = task.root_source() + "\n# a new source: not a cached verdict\n"
        t = threading.Thread(target=lambda: done.append((ev.evaluate(task, again, opts), time.time())))
        t.start()
        (_, released) = _span(p)
        t.join(120)
    result, finished = done[0]
    assert result.status is Status.OK, result.summary()
    assert finished >= released
    assert result.phases.get("waiting for the GPU", 0.0) > 0.0


def _takes(trace: Path) -> list[tuple]:
    return [(r["take"], r["for"], r["after"]) for r in map(json.loads, trace.read_text().splitlines())
            if "take" in r]


def _traced_evaluation(monkeypatch, tmp_path, candidate: str | None = None, trials: int = 2,
                       edit: tuple[str, str] = ("", "")):
    from stark_lsp.evaluate.evaluator import Evaluator
    from stark_lsp.evaluate.options import EvalOptions
    from stark_lsp.tasks.spec import load_task

    trace = tmp_path / "trace.jsonl"
    monkeypatch.setenv("STARK_EVAL_LOCK_NAME", "GPU-takes")
    monkeypatch.setenv("STARK_EVAL_TRACE", str(trace))
    task = load_task(ROOT / "tests" / "data" / "evaluator" / "add_task.py")
    source = (ROOT / "tests" / "data" / "evaluator" / candidate).read_text() if candidate else task.root_source()
    source = source.replace(*edit) if edit[0] else source
    with Evaluator(workers=1, cache_dir=tmp_path / "cache") as ev:
        result = ev.evaluate(task, source, EvalOptions(trials=trials, cpu_reps=1))
    return result, _takes(trace)


@pytest.mark.timeout(300)
def test_candidate_code_runs_only_with_the_gate_held_from_the_calibration_to_the_timing(lock_env, monkeypatch,
                                                                                        tmp_path):
    """A candidate's process start and the task's harness (trusted code) hold nothing; from the
    calibration (exclusive) the judge goes straight to the candidate's load, its first call, its
    trials and its launch check, all shared, so no candidate code runs beside another judge's timing
    (docs/EVALUATOR.md), and into the timing; every take of the gate can mean a wait, so there is no
    other."""
    from stark_lsp.evaluate.judge.gpu_lock import EXCLUSIVE, SHARED
    from stark_lsp.evaluate.result import Status

    result, takes = _traced_evaluation(monkeypatch, tmp_path)
    assert result.status is Status.OK, result.summary()
    start = next(i for i, t in enumerate(takes) if t[1] == "candidate calibration")
    end = next(i for i, t in enumerate(takes) if t[1] == "candidate timing")
    assert takes[start - 1][:2] == (None, "process start"), takes
    assert takes[start:end + 1] == [(EXCLUSIVE, "candidate calibration", "process start"),
                                    (SHARED, "load", "candidate calibration"),  # then its first call, trials...
                                    (EXCLUSIVE, "candidate timing", "evaluation")], takes


@pytest.mark.timeout(300)
def test_a_first_call_lets_go_of_the_gate_only_while_it_says_it_compiles(lock_env, monkeypatch, tmp_path):
    """Triton's compile in a first call is the CPU's work: the process says it starts and ends
    (``guards.LaunchCounter.on_compile``), the judge lets go of the gate for it and takes it shared
    again before the kernel runs, and the evaluation goes on as any other."""
    from stark_lsp.evaluate.judge.gpu_lock import SHARED
    from stark_lsp.evaluate.result import Status

    result, takes = _traced_evaluation(monkeypatch, tmp_path, "says_it_compiles.py")
    assert result.status is Status.OK, result.summary()
    i = takes.index((None, "first call: compiling", "first call"))
    assert takes[i + 1] == (SHARED, "first call", "first call: compiling"), takes
    assert sum(t[1] == "first call: compiling" for t in takes) == 1, takes  # the trials' calls said nothing


@pytest.mark.timeout(300)
def test_a_compile_over_within_a_moment_keeps_the_gate(lock_env, monkeypatch, tmp_path):
    """A compile that Triton's disk cache answers in milliseconds is not worth a wait at the gate:
    said and ended within ``link.COMPILE_GRACE_S``, the gate stays held shared throughout."""
    from stark_lsp.evaluate.result import Status

    result, takes = _traced_evaluation(monkeypatch, tmp_path, "says_it_compiles.py",
                                       edit=("COMPILE_S = 0.5", "COMPILE_S = 0.0"))
    assert result.status is Status.OK, result.summary()
    assert not any("compiling" in t[1] for t in takes), takes


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["pairs", "unsaid"])
def test_a_candidate_that_floods_or_fakes_its_compiles_broke_the_protocol(lock_env, monkeypatch, tmp_path, mode):
    """Compile after compile said without reading the judge's answers (the judge must not hang in a
    send with the gate held, stalling every judge behind a waiting timer), or a compile ended that
    was never said: a broken protocol, found at once."""
    from stark_lsp.evaluate.result import Status

    result, _ = _traced_evaluation(monkeypatch, tmp_path, "floods_compiles.py",
                                   edit=('MODE = "pairs"', f'MODE = "{mode}"'))  # a hang: the pool's limit,
    assert result.status is Status.CHEAT and "protocol" in result.message, result.summary()  # over the timeout


@pytest.mark.timeout(300)
def test_a_candidate_that_stops_reading_cannot_keep_its_judge_waiting_to_send(lock_env, monkeypatch, tmp_path):
    """A process that fills its side of the socket with unread answers and then reads nothing: the
    judge's next request cannot be sent. Every send has the request's deadline, so the evaluation ends
    within its limits (a time-out, or a broken protocol if the answers overflowed first), not after the
    pool's minutes with the gate held shared (a hang shows as this test's own time-out)."""
    from stark_lsp.evaluate.result import Status

    result, _ = _traced_evaluation(monkeypatch, tmp_path, "stops_reading.py")
    assert result.status in (Status.TIMEOUT, Status.CHEAT), result.summary()
    assert "judge gave no result" not in result.message, result.summary()


@pytest.mark.timeout(300)
def test_the_benchmarks_switch_leaves_a_candidates_load_and_first_call_without_the_gate(lock_env, monkeypatch,
                                                                                       tmp_path):
    """``STARK_EVAL_CANDIDATE_GATE=none`` (benchmarks/gate_ab.py measures both): the load and the first
    call hold nothing, as before, and no compile is asked to be said."""
    from stark_lsp.evaluate.judge.gpu_lock import EXCLUSIVE, SHARED
    from stark_lsp.evaluate.result import Status

    monkeypatch.setenv("STARK_EVAL_CANDIDATE_GATE", "none")
    result, takes = _traced_evaluation(monkeypatch, tmp_path, "says_it_compiles.py")
    assert result.status is Status.OK, result.summary()
    start = next(i for i, t in enumerate(takes) if t[1] == "candidate calibration")
    assert takes[start + 1:start + 3] == [(None, "load", "candidate calibration"),
                                          (SHARED, "evaluation", "first call")], takes
    assert takes[start][0] == EXCLUSIVE and not any("compiling" in t[1] for t in takes), takes


@pytest.mark.timeout(300)
def test_a_compile_said_outside_a_first_call_is_a_broken_protocol(lock_env, monkeypatch, tmp_path):
    """Letting go of the gate is asked only of a first call: a candidate that writes "compiling" on
    its channel in a later call (to run beside another judge's timing) broke the protocol."""
    from stark_lsp.evaluate.result import Status

    result, takes = _traced_evaluation(monkeypatch, tmp_path, "says_compiling_late.py", trials=3)
    assert result.status is Status.CHEAT and "protocol" in result.message, result.summary()
    assert not any(t[1] == "first call: compiling" for t in takes), takes


@pytest.mark.timeout(300)
def test_an_evaluation_that_ran_out_of_memory_beside_others_is_done_again_alone(lock_env, monkeypatch, tmp_path):
    """Out of GPU memory is the machine's state when judges share a GPU: neither the task's fault
    nor the candidate's. The judge evaluates the job again with the gate held exclusive throughout,
    and says so."""
    from stark_lsp.evaluate.evaluator import Evaluator
    from stark_lsp.evaluate.options import EvalOptions
    from stark_lsp.evaluate.result import Status
    from stark_lsp.tasks.spec import load_task

    monkeypatch.setenv("STARK_EVAL_LOCK_NAME", "GPU-oom")
    monkeypatch.setenv("STARK_EVAL_OOM_MARKER", str(tmp_path / "ran-out-once"))
    task = load_task(ROOT / "tests" / "data" / "evaluator" / "oom_once_task.py")
    with Evaluator(workers=1, cache_dir=tmp_path / "cache") as ev:
        result = ev.evaluate(task, task.root_source(), EvalOptions(trials=1, cpu_reps=1))
    assert result.status is Status.OK, result.summary()
    assert (tmp_path / "ran-out-once").exists()
    assert result.phases.get("evaluated alone") == 1.0
    assert any("GPU to itself" in f and "out of memory" in f for f in result.flags), result.flags


def test_a_candidate_that_only_says_out_of_memory_is_evaluated_alone_a_bounded_number_of_times(lock_env, monkeypatch,
                                                                                               tmp_path):
    """Its own error text is the candidate's word: each evaluation done again alone holds every other judge on the
    GPU off, so a task's candidates get that at most ``MAX_ALONE_FOR_CANDIDATES`` times in a judge; the rest fail
    as they said, and say why they were not done again."""
    from stark_lsp.evaluate.evaluator import Evaluator
    from stark_lsp.evaluate.judge.process import MAX_ALONE_FOR_CANDIDATES
    from stark_lsp.evaluate.options import EvalOptions
    from stark_lsp.tasks.spec import load_task

    monkeypatch.setenv("STARK_EVAL_LOCK_NAME", "GPU-says-oom")
    task = load_task(ROOT / "tests" / "data" / "evaluator" / "add_task.py")
    source = (ROOT / "tests" / "data" / "attacks" / "says_out_of_memory.py").read_text()
    n = MAX_ALONE_FOR_CANDIDATES + 2
    with Evaluator(workers=1, cache_dir=tmp_path / "cache") as ev:
        results = [ev.evaluate(task, source, EvalOptions(trials=1, cpu_reps=1)) for _ in range(n)]
    assert all(r.status.failed and "out of memory" in r.message for r in results), [r.summary() for r in results]
    alone = [r.phases.get("evaluated alone") == 1.0 for r in results]
    assert alone == [True] * MAX_ALONE_FOR_CANDIDATES + [False] * 2, alone
    assert all("not evaluated alone again" in r.message for r in results[MAX_ALONE_FOR_CANDIDATES:])


def test_a_process_that_could_not_start_is_nobodys_verdict():
    from stark_lsp.evaluate.judge.process import out_of_memory
    from stark_lsp.evaluate.result import EvalResult, Status

    assert out_of_memory(EvalResult(Status.RUNTIME_ERROR, "start: the process did not start: AcceleratorError: "
                                                          "CUDA error: out of memory"))
    assert out_of_memory(EvalResult(Status.TASK_ERROR, "the reference could not be timed: RuntimeError: CUDA error: "
                                                       "CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate"))
    assert not out_of_memory(EvalResult(Status.INCORRECT, "trial 1: 12 elements differ"))
    assert not out_of_memory(EvalResult(Status.OK, "out of memory in a name"))


@pytest.mark.timeout(300)
@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                    reason="Inductor's CPU backend needs a C++ compiler")
def test_the_torch_compile_baseline_lets_go_of_the_gate_only_while_it_compiles(lock_env, monkeypatch, tmp_path):
    """torch.compile's baseline (here on the CPU, Inductor's C++: STARK_EVAL_COMPILED_BASELINE_CPU=1) holds the
    gate shared for its load and first call, as any other, but for what its process says is the CPU's work: its
    load's torch.compile() (imports) and its first call's compile; the compiled graph's run, the GPU's work on a
    GPU (each kernel's autotuning there: tests/test_compile_stretch.py), has it taken back shared first."""
    from stark_lsp.evaluate.evaluator import Evaluator
    from stark_lsp.evaluate.judge.gpu_lock import EXCLUSIVE, SHARED
    from stark_lsp.evaluate.options import EvalOptions
    from stark_lsp.evaluate.result import Status
    from stark_lsp.tasks.spec import load_task

    trace = tmp_path / "trace.jsonl"
    monkeypatch.setenv("STARK_EVAL_LOCK_NAME", "GPU-compiled")
    monkeypatch.setenv("STARK_EVAL_TRACE", str(trace))
    monkeypatch.setenv("STARK_EVAL_COMPILED_BASELINE_CPU", "1")
    task = load_task(ROOT / "tests" / "data" / "evaluator" / "add_task.py")
    with Evaluator(workers=1, cache_dir=tmp_path / "cache") as ev:
        result = ev.evaluate(task, task.root_source(), EvalOptions(trials=1, cpu_reps=1, compile_baseline=True))
    assert result.status is Status.OK, result.summary()
    assert result.runtime.compiled_reference is not None and "torch.compile baseline" not in result.runtime.note
    takes = _takes(trace)
    start = takes.index((EXCLUSIVE, "compiled calibration", "evaluation"))
    end = takes.index((EXCLUSIVE, "compiled timing", "evaluation"))
    between = takes[start + 1:end]
    assert between[0] == (SHARED, "evaluation", "compiled calibration"), takes  # then its load, shared as it was
    # the load's torch.compile() let go of it (seconds of imports here) and took it back before the first call
    assert between[1:-2] in ([], [(None, "compiled load: compiling", "compiled load and first call"),
                                  (SHARED, "compiled load", "compiled load: compiling")]), takes
    assert between[-2][:2] == (None, "compiled first call: compiling"), takes  # Dynamo's and Inductor's work,
    assert between[-1] == (SHARED, "compiled first call", "compiled first call: compiling"), takes  # then its run
