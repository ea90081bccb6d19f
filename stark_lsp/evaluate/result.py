"""The typed result of one evaluation, and its JSON form.

Every number the product shows comes from an ``EvalResult``. It is plain data:
no torch, no GPU, so the search, the tree store and the language server can
read and write it anywhere.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from enum import Enum
from typing import Any

from stark_lsp.speedups import speedup_text


class Status(str, Enum):
    """Outcome of one evaluation, from worst to best stage reached."""

    COMPILE_ERROR = "compile_error"  # the candidate did not build or import
    RUNTIME_ERROR = "runtime_error"  # it raised, or a CUDA error was reported
    CRASHED = "crashed"  # the worker died (segfault, abort, killed)
    TIMEOUT = "timeout"  # it hung and was killed
    INCORRECT = "incorrect"  # it ran but disagreed with the reference
    CHEAT = "cheat"  # it broke an evaluation rule (see EvalResult.cheats)
    TASK_ERROR = "task_error"  # the task itself (harness, reference) is broken
    NOT_RUN = "not_run"  # compile-checked only (e.g. CUDA source, no GPU)
    OK = "ok"  # compiled, correct on every trial, and timed

    @property
    def failed(self) -> bool:
        return self not in (Status.OK, Status.NOT_RUN)


@dataclass
class Diagnostic:
    """A compiler or runtime message placed on a line of the candidate source."""

    message: str
    line: int | None = None  # 1-based line in the candidate source, if known
    column: int | None = None  # 1-based
    severity: str = "error"  # error | warning | note
    file: str | None = None  # file name as the tool reported it


@dataclass
class CompileReport:
    ok: bool
    seconds: float = 0.0
    cached: bool = False
    command: str = ""
    log: str = ""  # compiler output, trimmed
    diagnostics: list[Diagnostic] = field(default_factory=list)


@dataclass
class Trial:
    seed: int
    passed: bool
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    failed_output: int | None = None  # index of the first output that failed
    message: str = ""


@dataclass
class Correctness:
    passed: bool
    atol: float | None = None
    rtol: float | None = None
    trials: list[Trial] = field(default_factory=list)


@dataclass
class Timing:
    """Per-call times in milliseconds over ``reps`` timed calls (docs/EVALUATOR.md, "Timing").

    ``median_ms`` is the runtime: the median of the judge's per-batch figures,
    each its own clock around a batch of calls less the protocol's cost
    (``judge/timing.py``). The other statistics describe those figures."""

    median_ms: float
    mean_ms: float
    min_ms: float
    max_ms: float
    iqr_ms: float
    std_ms: float
    reps: int
    judged_ms: float | None = None  # one call by the judge's clock: batches on it, less the calibrated overhead
    bound_ms: float | None = None  # how far the figure may be from the true time (its noise, what calibration misses)
    noise: float | None = None  # the relative standard error of the judge's figure
    batches: int = 0  # timed requests, each of several calls in a row
    source: str = ""  # "judge" (the judge's clock); "process" only in results stored before that rule
    chain: str = ""  # how the timed calls chained: "device" (on the GPU) or "host" (docs/EVALUATOR.md)

    @property
    def spread(self) -> float:
        """Interquartile range over median: the relative spread of the samples."""
        return self.iqr_ms / self.median_ms if self.median_ms > 0 else 0.0


@dataclass
class Floor:
    """The least time the task's work can take on this GPU (see evaluate/roofline.py)."""

    bytes: int  # inputs read once + outputs written once
    flops: int  # the reference's counted floating-point operations (matmul/conv)
    memory_floor_ms: float  # bytes / measured copy bandwidth
    compute_floor_ms: float  # flops / measured matrix-product rate (0 when flops is 0)
    bandwidth_gbs: float  # measured device-to-device copy bandwidth, read + write
    peak_tflops: float | None  # measured matrix-product rate for ``dtype``
    dtype: str = "float32"
    bound: str = "memory"  # which floor is larger

    @property
    def floor_ms(self) -> float:
        return max(self.memory_floor_ms, self.compute_floor_ms)

    def gap(self, runtime_ms: float) -> float:
        """How many times the floor a runtime is (1.0 = at the hardware limit)."""
        return runtime_ms / self.floor_ms if self.floor_ms > 0 else float("inf")


# a CPU runtime's note when eager was timed in turn with the candidate, in its process (``judge.reference_in_turn``)
REFERENCE_IN_TURN = "eager timed in turn with it, in its process"


@dataclass
class Runtime:
    device: str  # e.g. "NVIDIA H200" or "cpu (triton interpreter)"
    is_gpu: bool
    candidate: Timing
    reference: Timing
    speedup: float  # reference median / candidate median
    compiled_reference: Timing | None = None  # torch.compile of the reference
    speedup_vs_compiled: float | None = None
    note: str = ""  # e.g. "CPU timing under the Triton interpreter: not a GPU figure"
    floor: Floor | None = None  # GPU only


@dataclass
class KernelResources:
    kernel: str
    registers: int | None = None
    shared_bytes: int | None = None
    spill_stores: int | None = None
    spill_loads: int | None = None
    stack_bytes: int | None = None


@dataclass
class ValueInfo:
    """One input or output as the judge saw it: a tensor's shape and dtype, or a plain value."""

    shape: list[int] | None = None  # None for a non-tensor value
    dtype: str | None = None  # "float32", ...; None for a non-tensor value
    value: str | None = None  # repr of a non-tensor value (a scalar argument)


@dataclass
class TaskIO:
    """The task's calling convention as evaluated: inputs in order, outputs in order."""

    inputs: list[ValueInfo] = field(default_factory=list)
    outputs: list[ValueInfo] = field(default_factory=list)


@dataclass
class Cheat:
    kind: str  # e.g. "inputs_modified", "output_reuse", "side_stream", ...
    message: str


@dataclass
class EvalResult:
    status: Status
    message: str = ""
    compile: CompileReport | None = None
    correctness: Correctness | None = None
    runtime: Runtime | None = None
    resources: list[KernelResources] = field(default_factory=list)
    cheats: list[Cheat] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)  # for review, not failures
    diagnostics: list[Diagnostic] = field(default_factory=list)  # runtime ones
    output: str = ""  # tail of what the candidate printed
    seconds: float = 0.0  # source to verdict, wall clock
    io: TaskIO | None = None  # shapes and dtypes of the inputs and reference outputs
    phases: dict[str, float] = field(default_factory=dict)  # seconds per step of the evaluation (judge's clock)
    # why the task cannot tell a right answer from a constant (its reference's outputs do not
    # depend on its inputs beyond the tolerance): every speedup on it is marked; '' for a sound task
    degenerate: str = ""
    # the caller stopped it (Ctrl-C, Cancel, the run's wall time): no verdict on the candidate, which a
    # search redoes when it goes on (search/engine.py stores it as abandoned, never as failed)
    stopped: bool = False
    # what torch.compile's Inductor wrote for a KernelBench model (``EvalOptions.compiled_code``; see
    # ``judge/replies.compiled_code``): a proposal for the built-in team, never part of a verdict
    compiled_code: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    @property
    def speedup(self) -> float | None:
        return self.runtime.speedup if self.runtime else None

    def all_diagnostics(self) -> list[Diagnostic]:
        diags = list(self.compile.diagnostics) if self.compile else []
        return diags + list(self.diagnostics)

    def summary(self) -> str:
        """One line for tables, hovers and logs."""
        if self.status is Status.OK and self.runtime:
            r = self.runtime
            x = speedup_text(r.speedup, "eager", cpu=not r.is_gpu, degenerate=bool(self.degenerate))
            return f"{x}: {r.candidate.median_ms:.4g} ms vs {r.reference.median_ms:.4g} ms"
        return f"{self.status.value}: {self.message}".strip()

    # JSON ----------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["status"] = self.status.value
        return d

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self.to_dict(), **kw)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "EvalResult":
        return build_dataclass(cls, d)

    @classmethod
    def from_json(cls, text: str) -> "EvalResult":
        return cls.from_dict(json.loads(text))


_NESTED: dict[str, Any] = {}


def build_dataclass(cls: Any, d: Any) -> Any:
    """Rebuild nested dataclasses from ``asdict`` output, ignoring unknown keys."""
    if d is None:
        return None
    kwargs = {}
    for f in fields(cls):
        if f.name not in d:
            continue
        v = d[f.name]
        kind = _NESTED.get(f"{cls.__name__}.{f.name}")
        if kind is Status:
            v = Status(v)
        elif isinstance(kind, list):
            v = [build_dataclass(kind[0], x) for x in (v or [])]
        elif kind is not None:
            v = build_dataclass(kind, v)
        kwargs[f.name] = v
    return cls(**kwargs)


_NESTED.update(
    {
        "EvalResult.status": Status,
        "EvalResult.compile": CompileReport,
        "EvalResult.correctness": Correctness,
        "EvalResult.runtime": Runtime,
        "EvalResult.resources": [KernelResources],
        "EvalResult.cheats": [Cheat],
        "EvalResult.diagnostics": [Diagnostic],
        "CompileReport.diagnostics": [Diagnostic],
        "Correctness.trials": [Trial],
        "Runtime.candidate": Timing,
        "Runtime.reference": Timing,
        "Runtime.compiled_reference": Timing,
        "Runtime.floor": Floor,
        "EvalResult.io": TaskIO,
        "TaskIO.inputs": [ValueInfo],
        "TaskIO.outputs": [ValueInfo],
    }
)
