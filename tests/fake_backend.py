"""A fast, deterministic stand-in for the evaluator and the agents (a test double).

Used by the fast server tests, the latency benchmark and the editor's
end-to-end test (``stark serve --backend tests/fake_backend.py:FakeBackend``).
The tree store and the search loop are the real ones; only the expensive or
remote parts are fake:

* the evaluator gives the saved task file a speedup of 1.0 and every other
  source one drawn from its hash (so the same source always gets the same
  verdict), sleeping ``STARK_FAKE_DELAY`` seconds
  (default 0.2) to look busy; a source with a ``STARK_BROKEN`` line fails to
  compile there; one containing ``STARK_FAKE_EVALUATOR_CRASH`` makes the
  evaluator itself raise (a crashed evaluator); a harness line with
  ``STARK_FAKE_TASK_BROKEN`` makes the reference "raise" there (a broken task,
  named by its harness line as the real judge names it); ``STARK_FAKE_FAIL_RATE`` (default 0)
  fails that share of the other sources to compile, drawn from their hash; with ``STARK_FAKE_GPU=0``
  the machine has no GPU: a CUDA source is only compile-checked (``not_run``)
  and Triton timings are CPU timings;
* the team's planner wraps the first kernel's last line in a marker, the
  coder appends a comment line naming the attempt's seed there, the debugger
  deletes ``STARK_BROKEN`` lines; a task file containing
  ``STARK_FAKE_AGENT_DOWN`` makes every agent fail like a dead endpoint;
* the team's probe (before the search evaluates anything) goes by ``stark.baseUrl``: one
  containing ``probe-down`` is refused as a dead endpoint is, one containing ``probe-notice`` answers
  with a notice as a server with limits does, and says it serves one request at a time (``slots``).

Never used unless asked for by name.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path
from typing import Any

from stark_lsp.agents.base import AgentContext, AgentError, CodeResult, DebugResult, PlanResult, Team
from stark_lsp.evaluate.result import CompileReport, Diagnostic, EvalResult, Runtime, Status, Timing
from stark_lsp.markers.syntax import insert_marker, parse_markers
from stark_lsp.server.backend import Backend
from stark_lsp.server.settings import Secret, Settings
from stark_lsp.tasks.kernels import find_kernels
from stark_lsp.tasks.spec import TaskSpec

REFERENCE_MS = 0.92


def fake_gpu() -> bool:
    """The fake machine has a GPU unless STARK_FAKE_GPU=0."""
    return os.environ.get("STARK_FAKE_GPU", "1") != "0"


def fake_speedup(source: str) -> float:
    h = int(hashlib.sha256(source.encode()).hexdigest()[:8], 16)
    return round(0.8 + (h % 1000) / 500, 3)  # 0.8 .. 2.8


def _root_source(task: TaskSpec) -> str | None:
    try:
        return task.root_source()
    except OSError:
        return None


def _timing(ms: float) -> Timing:
    return Timing(median_ms=ms, mean_ms=ms, min_ms=ms, max_ms=ms, iqr_ms=0.0, std_ms=0.0, reps=10)


class FakeEvaluator:
    def __init__(self, delay: float | None = None):
        self.delay = float(os.environ.get("STARK_FAKE_DELAY", "0.2")) if delay is None else delay
        self.calls = 0
        self._lock = threading.Lock()

    def hardware(self) -> str:
        return "Fake GPU"

    def evaluate(self, task: TaskSpec, source: str, options: Any = None) -> EvalResult:
        with self._lock:
            self.calls += 1
        time.sleep(self.delay)
        if "STARK_FAKE_EVALUATOR_CRASH" in source:
            raise OSError("fake evaluator: the worker process died")
        for i, line in enumerate(source.split("\n"), start=1):
            if "STARK_BROKEN" in line:
                d = Diagnostic(message="error: identifier STARK_BROKEN is undefined", line=i, column=1)
                return EvalResult(Status.COMPILE_ERROR, "compilation failed",
                                  compile=CompileReport(ok=False, log=d.message, diagnostics=[d]))
        for f in (task.path, task.harness):
            if f is not None and not Path(f).exists():  # as the real one fails when it loads the harness
                return EvalResult(Status.RUNTIME_ERROR, f"FileNotFoundError: {f}")
        harness = Path(task.harness) if task.harness is not None else None
        for i, line in enumerate(harness.read_text().split("\n") if harness else [], start=1):
            if "STARK_FAKE_TASK_BROKEN" in line:
                return EvalResult(Status.TASK_ERROR, f"task error: the reference raised TypeError: fake breakage "
                                                     f"({harness.name}, line {i}: {line.strip()[:80]})")
        rate = float(os.environ.get("STARK_FAKE_FAIL_RATE", "0") or 0)
        if rate and source != _root_source(task) and fake_speedup(source + "\x00fail") < 0.8 + 2.0 * rate:
            return EvalResult(Status.COMPILE_ERROR, "fake: this variant does not compile",
                              compile=CompileReport(ok=False, log="fake: this variant does not compile",
                                                    diagnostics=[Diagnostic(message="fake compile error")]))
        gpu = fake_gpu()
        if task.kind == "cuda" and not gpu:
            return EvalResult(Status.NOT_RUN, "compiled; not run: no GPU", compile=CompileReport(ok=True))
        try:
            is_root = source == task.root_source()
        except OSError:
            is_root = False
        speed = 1.0 if is_root else fake_speedup(source)
        return EvalResult(
            Status.OK,
            runtime=Runtime(device="Fake GPU" if gpu else "cpu (fake interpreter)", is_gpu=gpu,
                            candidate=_timing(REFERENCE_MS / speed), reference=_timing(REFERENCE_MS), speedup=speed),
        )

    def close(self) -> None:
        pass


def _language(task: TaskSpec) -> str:
    return "cuda" if task.kind == "cuda" else "triton"


def _check_endpoint(task: TaskSpec) -> None:
    try:
        text = task.path.read_text()
    except OSError:
        return
    if "STARK_FAKE_AGENT_DOWN" in text:
        raise AgentError("fake LLM endpoint: connection refused after 3 retries")


class FakePlanner:
    def plan(self, ctx: AgentContext) -> PlanResult:
        _check_endpoint(ctx.task)
        src = ctx.node_source
        kernels = find_kernels(src, _language(ctx.task))
        if not kernels:
            raise AgentError("no kernel to plan for")
        k = kernels[0]
        line = k.end_line + 1  # 1-based: the kernel's last line
        marked = insert_marker(src, line, line, "p1", f"retune the tail (seed {ctx.seed})", ctx.task.language)
        return PlanResult(marked, f"retune the tail of {k.name} (seed {ctx.seed})")


class FakeCoder:
    def code(self, ctx: AgentContext, marked_source: str) -> CodeResult:
        _check_endpoint(ctx.task)
        out = {}
        leader = "//" if ctx.task.kind == "cuda" else "#"
        for m in parse_markers(marked_source):
            span = m.span if m.span.endswith("\n") or not m.span else m.span + "\n"
            first = next((l for l in span.split("\n") if l.strip()), "")
            indent = first[: len(first) - len(first.lstrip())]
            out[m.id] = f"{span}{indent}{leader} variant {ctx.seed}: {m.instruction}\n"
        return CodeResult(out)


class FakeDebugger:
    def debug(self, ctx: AgentContext) -> DebugResult:
        _check_endpoint(ctx.task)
        fixed = "\n".join(l for l in ctx.node_source.split("\n") if "STARK_BROKEN" not in l)
        return DebugResult(fixed, "deleted the STARK_BROKEN line")


def fake_team() -> Team:
    return Team("fake", FakePlanner(), FakeCoder(), FakeDebugger())


class FakeBackend(Backend):
    name = "fake"

    def gpu_available(self, settings: Settings) -> bool:
        return fake_gpu() and settings.device != "cpu"

    def make_evaluator(self, settings: Settings, warm_for: Any = None) -> Any:
        return FakeEvaluator()

    def make_team(self, settings: Settings, api_key: Secret) -> Any:
        team = fake_team()
        url = settings.base_url or ""
        if "probe-down" in url or "probe-notice" in url:
            team.probe = lambda: _probe(url)
            team.slots = lambda: 1  # what llama.cpp's /props says of its slots, read at the probe
        return team


def _probe(url: str) -> list[str]:
    from stark_lsp.agents.base import AgentsUnavailable

    if "probe-down" in url:
        raise AgentsUnavailable(f"cannot connect to the LLM endpoint {url} (fake: connection refused)")
    return ["the server answers 1 request at a time (fake)"]
