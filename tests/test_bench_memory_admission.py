"""Memory admission in ``stark bench`` (issue 21): a task's GPU memory estimated from its files (and from
an evaluation's reported inputs and outputs), the gate that shares one GPU's memory among the jobs on
it, and the runner with fake evaluators: big tasks never overlap, small ones do. No GPU, no timing
assertions: events, barriers and the order things happened in."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from fakes import FakeEvaluator, FakeTeam, fake_source

from stark_lsp.bench import call_size as CS
from stark_lsp.bench.memory_admission import CALL_FACTOR, FLOOR_GIB, GIB, MemoryGate, budget_gib, estimate_gib
from stark_lsp.bench.plan import BenchConfig
from stark_lsp.bench.progress import BenchProgress, memory_wait_line
from stark_lsp.bench.runner import BenchRunner
from stark_lsp.evaluate.result import EvalResult, TaskIO, ValueInfo
from stark_lsp.tasks.spec import load_task

ROOT = Path(__file__).resolve().parents[1]
KB = ROOT / "benchmarks" / "kernelbench" / "level1"
WAIT_S = 60  # what a test waits for an event at most before it fails (never reached when it passes)


# -- one call's size, read from the task's files ----------------------------------------------------
def test_kernelbench_sizes_are_read_from_get_inputs_without_running_it():
    rms = CS.read_call_size(load_task(KB / "36_RMSNorm_.py"), env={})
    assert rms.input_bytes == 112 * 64 * 512 * 512 * 4 and rms.output_bytes == rms.input_bytes  # outputs guessed
    assert not rms.measured
    sum_ = CS.read_call_size(load_task(KB / "47_Sum_reduction_over_a_dimension.py"), env={})
    assert sum_.input_bytes == 128 * 4096 * 4095 * 4
    masked = CS.read_call_size(load_task(KB / "93_masked_cumsum.py"), env={})  # randint(0, 2, x.shape).bool()
    assert masked.input_bytes == 32768 * 32768 * (4 + 1)


def test_a_harness_small_switch_follows_the_environment():
    task = load_task(ROOT / "samples" / "mistuned" / "row_softmax.py")  # _shape() reads STARK_SMALL
    assert CS.read_call_size(task, env={}).input_bytes == 16384 * 8192 * 4
    assert CS.read_call_size(task, env={"STARK_SMALL": "1"}).input_bytes == 8 * 300 * 4


@pytest.mark.parametrize("body, expected", [
    ("N = 1 << 20\ndef get_inputs():\n    return [torch.randn(N, dtype=torch.float16), torch.rand(N).half(), 3]\n",
     (1 << 20) * 2 * 2),
    ("SHAPE = (64, 32)\ndef get_inputs():\n    return [torch.zeros(*SHAPE), torch.randint(0, 9, SHAPE), torch.full(SHAPE, 1.0)]\n",
     64 * 32 * (4 + 8 + 4)),
    (("def make(n, m=2):\n    return torch.ones(n, m).cuda()\n\ndef get_inputs():\n    xs = []\n"
      "    for _ in range(3):\n        xs.append(make(10))\n    return xs\n"), 3 * 10 * 2 * 4),
    (("import torch as th\nDEVICE = 'cuda' if th.cuda.is_available() else 'cpu'\n"
      "def get_inputs():\n    x = th.randn(8, 8, device=DEVICE)\n    return [x, th.empty_like(x, dtype=th.float64), x.to(DEVICE)]\n"),
     8 * 8 * (4 + 8 + 4)),
    ("def get_inputs():\n    return [torch.rand(4, 4) for _ in range(5)]\n", 5 * 16 * 4),
])
def test_what_the_reader_follows(body, expected):
    size = CS.call_size_of_text("import torch\n" + body, env={})
    assert size is not None and size.input_bytes == expected


@pytest.mark.parametrize("body", [
    "def get_inputs():\n    return [torch.load('x.pt')]\n",  # a file it cannot read
    "import random\ndef get_inputs():\n    n = random.randint(1, 9)\n    return [torch.rand(n)]\n",
    "def get_inputs():\n    while True:\n        pass\n",
    "N = 10 ** 10 ** 10\ndef get_inputs():\n    return [torch.rand(N)]\n",  # no runaway arithmetic
    "N = pow(3, 10 ** 8)\ndef get_inputs():\n    return [torch.rand(N)]\n",  # a hostile file (a review's): no pow
    "X = 10 ** 200\nfor _ in range(40):\n    X = X * X\ndef get_inputs():\n    return [torch.rand(X)]\n",
    "L = sum([[0] * 10000] * 10000, [])\ndef get_inputs():\n    return [torch.rand(len(L))]\n",
    "S = 'a' * 10000 * 10000 * 10000\ndef get_inputs():\n    return [torch.rand(len(S))]\n",
    "def get_inputs(:\n",  # does not parse
    "X = 3\n",  # no get_inputs
])
def test_what_it_cannot_follow_is_unknown_not_a_guess(body):
    assert CS.call_size_of_text("import torch\n" + body, env={}) is None


def test_a_reported_io_gives_the_exact_size():
    io = TaskIO(inputs=[ValueInfo([128, 4096, 4095], "float32"), ValueInfo(value="1")],
                outputs=[ValueInfo([128, 1, 4095], "float32")])
    size = CS.io_call_size(io)
    assert size.measured and size.input_bytes == 128 * 4096 * 4095 * 4 and size.output_bytes == 128 * 4095 * 4
    assert CS.io_call_size(None) is None and CS.io_call_size(TaskIO()) is None


# -- the estimate -------------------------------------------------------------------------------------
def test_the_estimate_is_a_floor_or_a_multiple_of_a_call():
    assert estimate_gib(None) == FLOOR_GIB  # unknown: the floor
    assert estimate_gib(CS.CallSize(1 << 20, 1 << 20)) == FLOOR_GIB
    rms = CS.CallSize(7 << 30, 7 << 30)
    assert estimate_gib(rms) == CALL_FACTOR * 14 == 56.0  # 42 GiB measured in its judge + its candidate's 14
    assert estimate_gib(rms, workers=2) == 112.0  # two judges on the GPU: each its own


def test_the_two_tasks_that_ran_out_of_an_h100_do_not_fit_it_together_but_fit_an_h200():
    """docs/benchmarks.md, session 23: 47_Sum_reduction and 36_RMSNorm_ side by side on an 80 GB H100 ran
    out of memory (5 of 8 evaluations evaluated again alone). Their measured sizes (EvalResult.io)."""
    sum_ = estimate_gib(CS.CallSize(128 * 4096 * 4095 * 4, 128 * 4095 * 4, measured=True))
    rms = estimate_gib(CS.CallSize(112 * 64 * 512 * 512 * 4, 112 * 64 * 512 * 512 * 4, measured=True))
    assert rms + sum_ > budget_gib(79.2)
    assert rms + sum_ <= budget_gib(139.8) and max(rms, sum_) <= budget_gib(79.2)  # each alone fits the H100


# -- the gate ------------------------------------------------------------------------------------------
def waiter(gate: MemoryGate, need: float, label: str, stop=None):
    """A thread that asks for ``need``, holds it until its ``go`` event, then releases it."""
    told, admitted, go = threading.Event(), threading.Event(), threading.Event()
    out: dict = {}

    def body():
        t = gate.admit(need, label, stop=stop, on_wait=lambda n, f, b: (out.setdefault("told", (n, f, b)), told.set()))
        out["ticket"] = t
        if t is None:
            return
        admitted.set()
        go.wait(WAIT_S)
        gate.release(t)

    th = threading.Thread(target=body, daemon=True)
    th.start()
    return th, told, admitted, go, out


def test_tasks_that_fit_are_admitted_together_without_waiting():
    gate = MemoryGate(10.0)
    a = gate.admit(4, "a")
    b = gate.admit(5, "b")
    assert a.admitted and b.admitted and not a.waited and not b.waited
    assert gate.used_gib == 9 and gate.free_gib == 1
    gate.release(a)
    gate.release(b)
    gate.release(b)  # twice is once
    assert gate.used_gib == 0


def test_first_come_first_served_a_small_task_does_not_overtake_a_waiting_big_one():
    gate = MemoryGate(10.0)
    a = gate.admit(6, "a")
    tb, told_b, admitted_b, go_b, out_b = waiter(gate, 6, "b")
    assert told_b.wait(WAIT_S) and out_b["told"] == (6, 4, 10)  # b needs 6, 4 of 10 free
    tc, told_c, admitted_c, go_c, _ = waiter(gate, 1, "c")  # fits beside a, but b came first
    assert told_c.wait(WAIT_S) and not admitted_c.is_set()
    assert gate.admitted_order == ["a"] and gate.waiting() == 2
    gate.release(a)
    assert admitted_b.wait(WAIT_S) and admitted_c.wait(WAIT_S)  # 6 + 1 fit together
    assert gate.admitted_order == ["a", "b", "c"]
    go_b.set()
    go_c.set()
    tb.join(WAIT_S)
    tc.join(WAIT_S)
    assert gate.used_gib == 0


def test_a_task_bigger_than_the_gpu_runs_alone_and_is_never_refused():
    gate = MemoryGate(10.0)
    small = gate.admit(1, "small")
    tb, told_big, admitted_big, go_big, _ = waiter(gate, 25, "big")
    assert told_big.wait(WAIT_S) and not admitted_big.is_set()  # waits for the small one to finish
    gate.release(small)
    assert admitted_big.wait(WAIT_S)
    tl, told_late, admitted_late, go_late, _ = waiter(gate, 0.5, "late")
    assert told_late.wait(WAIT_S) and not admitted_late.is_set()  # nothing starts beside it
    assert gate.holders() == ["big"]
    go_big.set()
    assert admitted_late.wait(WAIT_S)
    go_late.set()
    tb.join(WAIT_S)
    tl.join(WAIT_S)
    assert gate.admitted_order == ["small", "big", "late"]


def test_no_deadlock_when_every_task_is_too_big():
    gate = MemoryGate(10.0)
    lock = threading.Lock()
    running: list[str] = []
    most = [0]

    def job(name):
        with gate.hold(30, name) as t:
            assert t is not None
            with lock:
                running.append(name)
                most[0] = max(most[0], len(running))
            with lock:
                running.remove(name)

    threads = [threading.Thread(target=job, args=(f"t{i}",), daemon=True) for i in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(WAIT_S)
    assert not any(th.is_alive() for th in threads)
    assert most[0] == 1 and sorted(gate.admitted_order) == [f"t{i}" for i in range(6)] and gate.used_gib == 0


def test_what_is_held_is_released_when_the_task_fails():
    gate = MemoryGate(10.0)
    with pytest.raises(RuntimeError), gate.hold(8, "fails"):
        raise RuntimeError("the search broke")
    assert gate.used_gib == 0 and gate.holders() == []
    whole = gate.admit(10, "next")
    assert whole is not None and not whole.waited


def test_a_stopped_wait_is_withdrawn_and_holds_nothing_up():
    gate = MemoryGate(10.0)
    a = gate.admit(8, "a")
    stop = threading.Event()
    tb, told_b, _, _, out_b = waiter(gate, 8, "b", stop=stop.is_set)
    assert told_b.wait(WAIT_S)
    stop.set()
    tb.join(WAIT_S)
    assert out_b["ticket"] is None and gate.waiting() == 0 and gate.admitted_order == ["a"]
    assert gate.wait_for_turn()  # nobody waits: a job may take its next task
    c = gate.admit(2, "c")
    assert c is not None and not c.waited
    gate.release(a)
    gate.release(c)


def test_a_measured_smaller_size_lets_the_next_task_in():
    gate = MemoryGate(10.0)
    a = gate.admit(40, "a")  # read from its files: larger than the GPU
    tb, told_b, admitted_b, go_b, _ = waiter(gate, 3, "b")
    assert told_b.wait(WAIT_S) and not admitted_b.is_set()
    gate.resize(a, 4)  # its first evaluation reported its inputs and outputs
    assert admitted_b.wait(WAIT_S) and sorted(gate.holders()) == ["a", "b"]
    go_b.set()
    tb.join(WAIT_S)
    gate.release(a)


def test_a_job_takes_no_task_while_another_waits_on_its_gpu():
    gate = MemoryGate(10.0)
    a = gate.admit(8, "a")
    tb, told_b, admitted_b, go_b, _ = waiter(gate, 8, "b")
    assert told_b.wait(WAIT_S)
    turn = threading.Event()
    tt = threading.Thread(target=lambda: gate.wait_for_turn() and turn.set(), daemon=True)
    tt.start()
    assert not turn.is_set() and gate.waiting() == 1
    gate.release(a)
    assert admitted_b.wait(WAIT_S) and turn.wait(WAIT_S)
    go_b.set()
    tb.join(WAIT_S)


def test_the_waiting_line_says_what_it_needs_and_what_is_free():
    line = memory_wait_line(2, 8, "36_RMSNorm_ / stark / r0", 56.0, 18.5, 75.2, 12.0)
    assert line.startswith("[3/8] 36_RMSNorm_ / stark / r0  waiting for GPU memory: needs ~56 GiB, 18 GiB of 75 GiB free")
    alone = memory_wait_line(0, 1, "t / stark / r0", 120.0, 70.0, 75.2, 0.0)
    assert "more than the GPU's 75 GiB: runs alone once the others finish" in alone


# -- the runner ----------------------------------------------------------------------------------------
def sized_task(directory: Path, name: str, numel: int) -> Path:
    """A fake task whose get_inputs makes one float32 tensor of ``numel`` elements (never run)."""
    p = directory / f"{name}.py"
    p.write_text(fake_source(1.0) + f"\n\ndef get_inputs():\n    return [torch.rand({numel})]\n")
    return p


BIG = 1 << 34  # 64 GiB of float32 a call: an estimate far above a 100 GiB GPU
SMALL = 1024


class Recording(FakeEvaluator):
    """Evaluations of tasks named ``small*`` meet at a barrier (their first evaluation each): it breaks
    unless they overlap. ``io_bytes``: each evaluation reports inputs of that many float32 elements."""

    def __init__(self, barrier: threading.Barrier | None = None, io_numel: dict[str, int] | None = None,
                 meet: set[str] | None = None, told: threading.Event | None = None):
        super().__init__()
        self.barrier, self.io_numel, self.meet = barrier, io_numel or {}, meet or set()
        self.met: set[str] = set()
        self.told = told  # set once a task was told to wait: big tasks' evaluations wait for it

    def evaluate(self, task, source, options=None):
        name = task.path.stem
        if name in self.meet and name not in self.met and self.barrier is not None:
            self.met.add(name)
            self.barrier.wait(WAIT_S)
        if self.told is not None and name.startswith("big"):
            self.told.wait(WAIT_S)  # a big task runs until another was told to wait for it (or for the small)
        r: EvalResult = super().evaluate(task, source, options)
        if name in self.io_numel:
            r.io = TaskIO(inputs=[ValueInfo([self.io_numel[name]], "float32")],
                          outputs=[ValueInfo([self.io_numel[name]], "float32")])
        return r


def run_bench(tmp_path, tasks: list[tuple[str, int]], evaluators, gpu_memory_gib=100.0, told=None, **kw):
    d = tmp_path / "tasks"
    d.mkdir(exist_ok=True)
    specs = [load_task(sized_task(d, name, n)) for name, n in tasks]
    names = [name for name, _ in tasks]
    events: list[tuple[str, str]] = []
    waits: list[tuple[str, float, float, float]] = []
    lock = threading.Lock()

    def on_start(i, total, key):
        events.append(("start", names[key.task]))  # called under the runner's lock

    def on_record(rec, i, total):
        events.append(("end", rec.task))

    def on_wait(i, total, key, need, free, budget):
        with lock:
            waits.append((names[key.task], need, free, budget))
        if told is not None:
            told.set()

    runner = BenchRunner(specs, names, BenchConfig(policies=["greedy"], budget=2, retime_top=0), evaluators,
                         FakeTeam(), tmp_path / "out", on_start=on_start, on_record=on_record,
                         gpu_memory_gib=gpu_memory_gib, on_memory_wait=on_wait, **kw)
    return runner, runner.run(), events, waits


def overlapped(events, a, b) -> bool:
    """Whether a's run and b's run were going at the same time (each task has one run)."""
    at = {e: i for i, e in enumerate(events)}
    return at[("start", a)] < at[("end", b)] and at[("start", b)] < at[("end", a)]


def test_two_big_tasks_never_overlap_while_two_small_ones_do(tmp_path):
    barrier = threading.Barrier(2)  # the small tasks' evaluations meet: they must run at once
    told = threading.Event()
    evs = [Recording(barrier, meet={"small_a", "small_b"}, told=told) for _ in range(2)]
    runner, records, events, waits = run_bench(
        tmp_path, [("small_a", SMALL), ("small_b", SMALL), ("big_a", BIG), ("big_b", BIG)], evs, told=told)
    assert [r.outcome for r in records] == ["done"] * 4, [r.error for r in records]
    assert overlapped(events, "small_a", "small_b")
    assert not overlapped(events, "big_a", "big_b")
    for big in ("big_a", "big_b"):
        assert not any(overlapped(events, big, s) for s in ("small_a", "small_b"))  # alone: nothing beside it
    assert waits and {w[0] for w in waits} <= {"big_a", "big_b"}  # only the big ones waited, and said so
    assert all(need > budget for _, need, _, budget in waits)
    assert runner.memory_need[2] == estimate_gib(CS.CallSize(BIG * 4, BIG * 4))


def test_a_task_measured_smaller_than_read_lets_the_next_one_start_beside_it(tmp_path):
    """big_read's file says 64 GiB a call; its first evaluation reports 1 MiB: small then starts beside it
    (their evaluations meet at a barrier, which breaks unless they overlap)."""
    barrier = threading.Barrier(2)

    class Second(Recording):  # big_read meets small at its second evaluation (after its first reported io)
        def evaluate(self, task, source, options=None):
            if task.path.stem == "big_read":
                self.n = getattr(self, "n", 0) + 1
                if self.n == 2:
                    barrier.wait(WAIT_S)
            return super().evaluate(task, source, options)

    evs = [Second(barrier, io_numel={"big_read": 1 << 18}, meet={"small"}) for _ in range(2)]
    runner, records, events, _ = run_bench(tmp_path, [("big_read", BIG), ("small", SMALL)], evs)
    assert [r.outcome for r in records] == ["done", "done"], [r.error for r in records]
    assert overlapped(events, "big_read", "small")
    assert runner.memory_need[0] == FLOOR_GIB  # measured: 2 MiB a call


def test_cancel_while_a_task_waits_for_memory_ends_the_bench(tmp_path):
    """Ctrl-C while big_b waits for big_a's memory: big_b never starts, and nothing is left held."""
    cancel, told = threading.Event(), threading.Event()

    def on_wait(*_):
        cancel.set()
        told.set()  # big_a's evaluation goes on only now, so big_b asked while big_a held the GPU

    d = tmp_path / "tasks"
    d.mkdir()
    specs = [load_task(sized_task(d, n, BIG)) for n in ("big_a", "big_b")]
    evs = [Recording(told=told) for _ in range(2)]
    runner = BenchRunner(specs, ["big_a", "big_b"], BenchConfig(policies=["greedy"], budget=2, retime_top=0), evs,
                         FakeTeam(), tmp_path / "out", cancel=cancel, gpu_memory_gib=100.0, on_memory_wait=on_wait)
    records = runner.run()
    assert [r.task for r in records] == ["big_a"]  # big_b never started
    assert not runner.stopped_early and all(g.used_gib == 0 and g.waiting() == 0 for g in runner.gates.values())


def test_with_several_gpus_each_has_its_own_budget(tmp_path):
    evs = []
    for g in (0, 0, 1, 1):  # --gpus 0,1 --jobs 2
        ev = Recording()
        ev.gpu = g
        evs.append(ev)
    runner, records, events, _ = run_bench(tmp_path, [(f"big_{i}", BIG) for i in range(4)], evs)
    assert sorted(runner.gates) == [0, 1] and all(g.budget_gib == budget_gib(100.0) for g in runner.gates.values())
    assert [r.outcome for r in records] == ["done"] * 4
    gpu = {r.task: r.gpu for r in records}
    for a, gpu_a in gpu.items():
        for b, gpu_b in gpu.items():
            if a < b and gpu_a == gpu_b:
                assert not overlapped(events, a, b), (a, b)  # two big tasks on one GPU: one after the other


def test_no_admission_on_the_cpu_or_with_one_job_a_gpu(tmp_path):
    evs = [Recording() for _ in range(2)]
    runner, records, _, waits = run_bench(tmp_path, [("big_a", BIG), ("big_b", BIG)], evs, gpu_memory_gib=None)
    assert runner.gates == {} and not waits and len(records) == 2
    one = [Recording()]
    runner, records, _, _ = run_bench(tmp_path, [("big_c", BIG)], one)
    assert runner.gates == {} and len(records) == 1


def test_the_bench_shares_memory_only_where_jobs_share_a_gpu(monkeypatch):
    import argparse

    import stark_lsp.evaluate.evaluator as E
    from stark_lsp.commands import bench_cmd, refusal

    monkeypatch.setattr(E, "gpu_memory_gib", lambda: 79.2)
    monkeypatch.setattr(refusal, "runs_on_cpu", lambda device: device == "cpu")
    two_jobs = [FakeEvaluator(), FakeEvaluator()]
    assert bench_cmd.admission_memory_gib(argparse.Namespace(device="cuda"), two_jobs) == 79.2
    assert bench_cmd.admission_memory_gib(argparse.Namespace(device="cpu"), two_jobs) is None
    assert bench_cmd.admission_memory_gib(argparse.Namespace(device="cuda"), [FakeEvaluator()]) is None
    per_gpu = []
    for g in (0, 1):
        ev = FakeEvaluator()
        ev.gpu = g
        per_gpu.append(ev)
    assert bench_cmd.admission_memory_gib(argparse.Namespace(device="cuda"), per_gpu) is None  # --gpus, one job each


def test_the_progress_prints_the_wait(capsys):
    import io

    from stark_lsp.bench.plan import RunKey

    out = io.StringIO()
    p = BenchProgress(["36_RMSNorm_"], stream=out, tty=False)
    p.memory_wait(0, 4, RunKey(0, "stark", 0, 0), 56.0, 20.0, 75.2)
    assert "36_RMSNorm_ / stark / r0  waiting for GPU memory: needs ~56 GiB, 20 GiB of 75 GiB free" in out.getvalue()


def test_gib_is_a_gibibyte():
    assert GIB == 1 << 30
