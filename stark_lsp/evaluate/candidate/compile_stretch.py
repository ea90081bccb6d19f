"""torch.compile's first call, said to the judge as a compile broken by the GPU's work in it.

The judge's ``compiled`` baseline (``process.py``, role ``compiled``) compiles the task's reference
with torch.compile in its first call: Dynamo's tracing, Inductor's code generation and its Triton
builds are the CPU's work (5-40 s), which no other judge's timing need wait for. But Inductor also
runs the GPU's work inside that call: each compiled graph it runs, and in it, at each Triton kernel's
first launch, its autotuner benchmarking the kernel's configurations on the GPU
(``CachingAutotuner.run`` → ``autotune_to_one_config``), then the kernel itself.

So the process says each compile of a frame by Dynamo as a compile (``in_frame_compiles``: the rest of
the first call, the compiled graphs' runs and any eager code between them or in a frame Dynamo skipped,
is the GPU's work under the gate held shared; a hostile review ran a whole model eagerly inside a
"compile" when the whole first call was said as one). Where this torch has no such place, it says the
whole first call as one compile (``as_compile``) (``{"compiling": ...}`` before, the GPU's
queue drained first; ``{"compiled": ...}`` after: the judge lets go of the GPU's gate once the compile
outlasts its grace, judge/link.py), except each run of a compiled graph (``CompiledFxGraph.__call__``),
and outside one each run of an Inductor kernel (``CachingAutotuner.run``) and of Inductor's benchmarker
(``benchmarker.benchmark_gpu``: pad_mm times matrix products inside the compile): before it the compile
is said to end (the judge takes the gate back shared before it runs, and answers ``go``), after it a new
one to begin. What torch does not have of these is left out; with none, the whole call is one compile,
as the baseline's first call held no gate before. The wrappers sit on torch's classes (and its
benchmarker) for the first call only: nothing of this is on the timed path (``CompiledCapture``'s
promise). The load's ``torch.compile(model)`` (Dynamo's and Inductor's imports, seconds of the CPU's)
is said the same way.

The words are said by ``say`` (``process.CandidateProcess._compile_gate``: only the thread that made
the request, never while a CUDA graph is captured; False when it said nothing), and this keeps to what
the judge heard, so that its compiles alternate as the judge requires, whatever was not said.
"""

from __future__ import annotations

import functools
import importlib
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

STRETCH = "torch.compile"  # the name the first call's compile is said with
# where Inductor runs the GPU's work in a first call, as (module, a class or an object in it, its method): a
# compiled graph's run (its extern kernels, cuBLAS's and cuDNN's, included), a Triton kernel's run (its
# autotuning at its first launch), and Inductor's benchmarker (its runs inside the compile: pad_mm's timing of
# a matrix product padded and not)
GPU_RUNS = (("torch._inductor.output_code", "CompiledFxGraph", "__call__"),
            ("torch._inductor.runtime.triton_heuristics", "CachingAutotuner", "run"),
            ("torch._inductor.runtime.benchmarking", "benchmarker", "benchmark_gpu"))

# where Dynamo compiles one frame (its tracing, then Inductor's compile of the graph it found): a module-level
# function its frame converter calls by name, so a wrapper put in the module is the one called
FRAME_COMPILE = ("torch._dynamo.convert_frame", "_compile")

Say = Callable[[str, str], bool]
Places = tuple[tuple[str, str, str], ...]


def gpu_runs(places: Places = GPU_RUNS) -> list[tuple[Any, str]]:
    """The classes (or objects) and methods of ``places`` this torch has (a missing one is left out, never an
    error)."""
    found = []
    for module, name, attr in places:
        try:
            owner = getattr(importlib.import_module(module), name, None)
        except Exception:  # noqa: BLE001 - another torch: that place is not there
            owner = None
        if owner is not None and callable(getattr(owner, attr, None)):
            found.append((owner, attr))
    return found


def _label(obj: Any) -> str:
    """A run's name for the judge's trace: the kernel's, or the class's."""
    name = getattr(getattr(obj, "fn", None), "__name__", None)
    return str(name if isinstance(name, str) else type(obj).__name__)[:80]


class CompileStretch:
    """``with CompileStretch(say).as_compile(): ...``: the block (torch.compile's first call; the load's
    ``torch.compile(model)`` too, seconds of imports) said as one compile, but for the runs of
    ``gpu_runs(places)`` in it (other places: tests). ``said`` counts the words the judge heard."""

    def __init__(self, say: Say, places: Places = GPU_RUNS):
        self.say = say
        self.places = places
        self.compiling = False  # what the judge heard last: a compile under way
        self.said = 0
        self._thread = 0

    @contextmanager
    def as_compile(self) -> Iterator[CompileStretch]:
        self._thread = threading.get_ident()
        with ExitStack() as stack:
            self._to(True, STRETCH)  # before torch's imports below: they are the CPU's work too
            stack.callback(self._to, False, STRETCH)  # the last word, after the wrappers are gone
            for owner, attr in gpu_runs(self.places):
                stack.enter_context(mock.patch.object(owner, attr, self._wrap(owner, getattr(owner, attr))))
            yield self

    @contextmanager
    def in_frame_compiles(self, frame: tuple[str, str] = FRAME_COMPILE) -> Iterator[CompileStretch]:
        """``with CompileStretch(say).in_frame_compiles(): ...``: the block (torch.compile's first call) runs
        as the GPU's work (the gate held shared), but for each compile of a frame by Dynamo (``frame``), said
        as a compile, with the runs of ``gpu_runs`` in it said as the GPU's work again. Eager code (a graph
        break, a frame Dynamo skips and runs as it is) and the compiled graphs' runs are then under the gate
        whatever torch does between them. Without ``frame`` in this torch, the whole block is one compile
        (``as_compile``)."""
        try:
            module = importlib.import_module(frame[0])
            original = getattr(module, frame[1], None)
        except Exception:  # noqa: BLE001 - another torch: the coarser stretch
            module, original = None, None
        if module is None or not callable(original):
            with self.as_compile() as stretch:
                yield stretch
            return
        self._thread = threading.get_ident()
        depth = [0]
        stretch = self

        @functools.wraps(original)
        def compile_frame(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() != stretch._thread or depth[0]:
                return original(*args, **kwargs)
            depth[0] += 1
            stretch._to(True, STRETCH)
            try:
                return original(*args, **kwargs)
            finally:
                depth[0] -= 1
                stretch._to(False, STRETCH)

        with ExitStack() as stack:
            stack.callback(self._to, False, STRETCH)  # whatever an error left said, the last word ends it
            stack.enter_context(mock.patch.object(module, frame[1], compile_frame))
            for owner, attr in gpu_runs(self.places):
                stack.enter_context(mock.patch.object(owner, attr, self._wrap(owner, getattr(owner, attr))))
            yield self

    def _wrap(self, owner: Any, original: Callable[..., Any]) -> Callable[..., Any]:
        """``original`` said as the GPU's work: a class's method (its object first), or an object's own."""
        stretch = self
        if not isinstance(owner, type):
            label = _label(owner)

            @functools.wraps(original)
            def bound(*args: Any, **kwargs: Any) -> Any:
                with stretch.gpu_work(label):
                    return original(*args, **kwargs)

            return bound

        @functools.wraps(original)
        def run(obj: Any, *args: Any, **kwargs: Any) -> Any:
            with stretch.gpu_work(_label(obj)):
                return original(obj, *args, **kwargs)

        return run

    @contextmanager
    def gpu_work(self, name: str) -> Iterator[None]:
        """The GPU's work inside the compile: the compile said to end before it, and a new one to begin
        after it (an error in it too). Inside another such run, or in another thread, nothing is said."""
        if threading.get_ident() != self._thread or not self.compiling or not self._to(False, name):
            yield
            return
        try:
            yield
        finally:
            self._to(True, STRETCH)

    def _to(self, compiling: bool, name: str) -> bool:
        """Say that a compile begins (``compiling``) or ends, unless the judge heard that already; True
        when it was said. The state follows what was sent: "compiling" is sent after the GPU's queue is
        drained (an error there raises with nothing sent), "compiled" before its answer is awaited."""
        if compiling == self.compiling:
            return False
        if compiling:
            said = self.say("compiling", name)
            self.compiling = said
        else:
            self.compiling = False
            said = self.say("compiled", name)
            self.compiling = not said
        self.said += said
        return said
