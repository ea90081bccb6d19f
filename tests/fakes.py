"""A fake evaluator and a fake agent team, for fast search tests.

A fake candidate is a Python file with two adjacent lines::

    SPEED = 1.0
    STATUS = "ok"

The fake evaluator reports STATUS, and for "ok" a speedup of SPEED. The fake
planner marks those two lines (real ``@stark`` markers); the fake coder
rewrites SPEED (times a factor drawn from the context's seed) and STATUS;
the fake debugger sets STATUS back to "ok".

Run as a script, it searches a fake task (used by the SIGKILL resume test).
"""

from __future__ import annotations

import random
import re
import sys
import threading
import time
from pathlib import Path

from stark_lsp.agents.base import (AgentContext, AgentError, CodeResult, DebugResult, Exchange, PlanResult,
                                   Team, Usage)
from stark_lsp.evaluate.result import CompileReport, EvalResult, KernelResources, Runtime, Status, Timing
from stark_lsp.tasks.spec import TaskSpec

_SPEED = re.compile(r"^SPEED = ([0-9.]+)$", re.M)
_STATUS = re.compile(r'^STATUS = "(\w+)"$', re.M)


def fake_source(speed: float = 1.0, status: str = "ok", body: str = "") -> str:
    return (f'# a fake kernel\n{body}SPEED = {speed}\nSTATUS = "{status}"\n\nimport triton\n\n\n'
            f'@triton.jit\ndef entry_kernel(x):\n    pass\n\n\ndef get_inputs():\n    return []\n\n\n'
            f'def reference():\n    return []\n\n\nENTRY = "entry_kernel"\n')  # a task stark's checks accept


def make_fake_task(directory: Path, speed: float = 1.0, status: str = "ok", name: str = "k") -> TaskSpec:
    p = Path(directory) / f"{name}.py"
    p.write_text(fake_source(speed, status))
    return TaskSpec("triton", p, p)


def _timing(ms: float) -> Timing:
    return Timing(median_ms=ms, mean_ms=ms, min_ms=ms, max_ms=ms, iqr_ms=0.0, std_ms=0.0, reps=10)


class FakeEvaluator:
    """Thread-safe. ``delay`` seconds per call; after ``hang_after`` calls every
    further call blocks until ``release`` is set; ``barrier`` (if given) is
    waited on by the first ``barrier.parties`` calls after the first one (the
    root), so a test fails unless that many evaluations overlap."""

    def __init__(self, delay: float = 0.0, hang_after: int | None = None, barrier: threading.Barrier | None = None,
                 raise_on: int | None = None):
        self.delay = delay
        self.hang_after = hang_after
        self.barrier = barrier
        self.raise_on = raise_on
        self.release = threading.Event()
        self.calls = 0
        self.sources: list[str] = []
        self.settings: list = []  # the options of each evaluation, in order
        self._lock = threading.Lock()

    def hardware(self) -> str:
        return "Fake GPU"

    def evaluate(self, task: TaskSpec, source: str, options=None) -> EvalResult:
        with self._lock:
            self.calls += 1
            n = self.calls
            self.sources.append(source)
            self.settings.append(options)
        if self.raise_on is not None and n == self.raise_on:
            raise OSError("fake evaluator infrastructure failure")
        if self.barrier is not None and 2 <= n <= 1 + self.barrier.parties:
            self.barrier.wait()
        if self.hang_after is not None and n > self.hang_after:
            self.release.wait()
        if self.delay:
            time.sleep(self.delay)
        return verdict(source)


class RetimedEvaluator(FakeEvaluator):
    """A fake evaluator whose re-timing disagrees with the search's single runs, as a noisy machine's does:
    every evaluation of a candidate after its first (the re-timing's rounds) runs ``factor`` times as fast
    as its first, and the fastest candidate of the search only a quarter as fast, so the re-timed best is
    another node than the best single run. The root (the first source evaluated) keeps its figure."""

    def __init__(self, factor: float = 0.9, **kw):
        super().__init__(**kw)
        self.factor = factor
        self._first: dict[str, float] = {}  # source -> its first evaluation's speedup
        self._root: str | None = None

    def evaluate(self, task: TaskSpec, source: str, options=None) -> EvalResult:
        r = super().evaluate(task, source, options)
        if r.runtime is None:
            return r
        with self._lock:
            if self._root is None:
                self._root = source
            again = source in self._first and source != self._root
            self._first.setdefault(source, r.runtime.speedup)
            fastest = max(self._first.values())
        if again:
            speed = r.runtime.speedup * (0.25 if r.runtime.speedup >= fastest else self.factor)
            r.runtime.speedup = speed
            r.runtime.candidate = _timing(r.runtime.reference.median_ms / speed)
        return r


class LoadedCpuEvaluator(FakeEvaluator):
    """The CPU as a loaded machine times it: every evaluation runs under its own load (a factor of the
    ``loads`` in turn), which slows the candidate and the eager reference timed in turn with it alike, so its
    speedup is SPEED whatever the load, while raw times of two evaluations disagree by up to 20×."""

    def __init__(self, loads: tuple[float, ...] = (1.0, 8.0, 0.4, 3.0, 0.5, 5.0, 1.5), **kw):
        super().__init__(**kw)
        self.loads = loads

    def hardware(self) -> str:
        return "cpu (fake interpreter)"

    def evaluate(self, task: TaskSpec, source: str, options=None) -> EvalResult:
        r = super().evaluate(task, source, options)
        if r.runtime is None:
            return r
        with self._lock:
            load = self.loads[(self.calls - 1) % len(self.loads)]
        rt = r.runtime
        rt.device, rt.is_gpu = "cpu (fake interpreter)", False
        rt.reference = _timing(load * rt.reference.median_ms)
        rt.candidate = _timing(load * rt.candidate.median_ms)
        return r


def verdict(source: str) -> EvalResult:
    s = _STATUS.search(source)
    v = _SPEED.search(source)
    if not s or not v:
        return EvalResult(Status.COMPILE_ERROR, "not a fake kernel",
                          compile=CompileReport(ok=False, log="SyntaxError: no SPEED/STATUS"))
    status = Status(s.group(1))
    if status is not Status.OK:
        return EvalResult(status, f"fake {status.value}",
                          compile=CompileReport(ok=status is not Status.COMPILE_ERROR, log="fake log"))
    speed = float(v.group(1))
    return EvalResult(
        Status.OK,
        runtime=Runtime(device="Fake GPU", is_gpu=True, candidate=_timing(1.0 / speed), reference=_timing(1.0),
                        speedup=speed),
        resources=[KernelResources("entry_kernel", registers=32, shared_bytes=1024, spill_stores=0, spill_loads=0)],
    )


def _usage() -> Usage:
    return Usage(prompt_tokens=100, completion_tokens=20, calls=1)


def _prompt(ctx: AgentContext) -> str:
    """What a fake agent stores as its prompt: the task's line and the window's history as text."""
    task = ctx.task
    head = f"Task: {task.name} ({task.kind}, {task.language})" + (f" on {ctx.hardware}" if ctx.hardware else "")
    return head + "\n" + "\n".join(e.full for e in ctx.window.history)


class FakePlanner:
    def __init__(self, team: "FakeTeam"):
        self.team = team

    def plan(self, ctx: AgentContext) -> PlanResult:
        self.team.seen("plan", ctx)
        rng = random.Random(ctx.seed)
        if rng.random() < self.team.plan_error_rate:
            raise AgentError("fake planner gave up", usage=_usage(), raw="I cannot")
        lines = ctx.node_source.split("\n")
        i = next(k for k, l in enumerate(lines) if l.startswith("SPEED = "))
        marked = lines[:i] + ["# @stark begin s1: retune the speed"] + lines[i:i + 2] + ["# @stark end s1"] + lines[i + 2:]
        text = "\n".join(marked)
        if rng.random() < self.team.bad_plan_rate:
            text = text.replace("# a fake kernel", "# a changed kernel")
        return PlanResult(text, f"retune (seed {ctx.seed})", [Exchange("plan", _prompt(ctx), text, _usage())])


class FakeCoder:
    def __init__(self, team: "FakeTeam"):
        self.team = team

    def code(self, ctx: AgentContext, marked_source: str) -> CodeResult:
        self.team.seen("code", ctx)
        rng = random.Random(ctx.seed + 7)
        speed = float(_SPEED.search(marked_source).group(1))
        factor = self.team.factor if self.team.factor is not None else rng.choice([0.8, 0.95, 1.1, 1.25, 1.5])
        new = round(speed * factor, 6)
        status = "compile_error" if rng.random() < self.team.fail_rate else "ok"
        text = f'SPEED = {new}\nSTATUS = "{status}"\n'
        return CodeResult({"s1": text}, [Exchange("code", _prompt(ctx), text, _usage())])


class FakeDebugger:
    def __init__(self, team: "FakeTeam"):
        self.team = team

    def debug(self, ctx: AgentContext) -> DebugResult:
        self.team.seen("debug", ctx)
        if self.team.debug_fixes:
            fixed = _STATUS.sub('STATUS = "ok"', ctx.node_source)
        else:
            fixed = ctx.node_source + f"# tried (seed {ctx.seed})\n"
        return DebugResult(fixed, "set STATUS to ok", [Exchange("debug", _prompt(ctx), fixed, _usage())])


class FakeTeam(Team):
    """A Team whose agents are deterministic in the context's seed. Every
    context received is kept in ``contexts`` as (agent, ctx)."""

    def __init__(self, fail_rate: float = 0.0, plan_error_rate: float = 0.0, bad_plan_rate: float = 0.0,
                 factor: float | None = None, debug_fixes: bool = True):
        self.debug_fixes = debug_fixes
        self.fail_rate = fail_rate
        self.plan_error_rate = plan_error_rate
        self.bad_plan_rate = bad_plan_rate
        self.factor = factor
        self.contexts: list[tuple[str, AgentContext]] = []
        self._lock = threading.Lock()
        super().__init__("fake", FakePlanner(self), FakeCoder(self), FakeDebugger(self))

    def seen(self, agent: str, ctx: AgentContext) -> None:
        with self._lock:
            self.contexts.append((agent, ctx))


def main(argv: list[str]) -> int:
    """fakes.py STORE TASKFILE BUDGET CONCURRENCY HANG_AFTER: search, hanging
    in the evaluator after HANG_AFTER evaluations (negative: never)."""
    from stark_lsp.search import Search, SearchConfig, TreeStore

    store_path, task_file, budget, conc, hang = argv
    task = TaskSpec("triton", Path(task_file), Path(task_file))
    ev = FakeEvaluator(hang_after=int(hang) if int(hang) >= 0 else None)
    store = TreeStore.open(store_path)
    Search(task, store, ev, FakeTeam(fail_rate=0.3), SearchConfig(budget=int(budget), concurrency=int(conc))).run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
