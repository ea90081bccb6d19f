"""The torch.compile baseline's first call, said to the judge as one compile broken by the GPU's work in it
(evaluate/candidate/compile_stretch.py): the words said, in order, around fake graph and kernel runs
(torch's own classes stand in only where their names are checked), and what is left after it."""

from __future__ import annotations

import shutil
import threading

import pytest

from stark_lsp.evaluate.candidate.compile_stretch import (
    GPU_RUNS,
    STRETCH,
    CompileStretch,
    gpu_runs,
)

ran: list = []  # what the fake runs did, in the order of the words said


class FakeAutotuner:
    """Stands in for Inductor's ``CachingAutotuner``: ``run`` at a kernel's launch (its autotuning on the GPU)."""

    def __init__(self, name: str, fails: bool = False):
        self.fn = type("Fn", (), {"__name__": name})()
        self.fails = fails

    def run(self, *args, stream=None):
        ran.append(("run", self.fn.__name__, args, stream))
        if self.fails:
            raise RuntimeError("launch failed")
        return "out"


class FakeGraph:
    """Stands in for Inductor's ``CompiledFxGraph``: its run launches its kernels."""

    def __init__(self, kernels: list[FakeAutotuner]):
        self.kernels = kernels

    def __call__(self, inputs):
        ran.append(("graph",))
        return [k.run(*inputs, stream=0) for k in self.kernels]


class FakeBenchmarker:
    """Stands in for Inductor's ``benchmarker`` object: its ``benchmark_gpu`` times a function on the GPU (pad_mm
    calls it inside the compile)."""

    def benchmark_gpu(self, fn, warmup=25):
        ran.append(("benchmark", fn(), warmup))
        return 0.5


bench = FakeBenchmarker()
KERNELS = ((__name__, "FakeAutotuner", "run"),)
BOTH = ((__name__, "FakeGraph", "__call__"), (__name__, "FakeAutotuner", "run"))


@pytest.fixture(autouse=True)
def _clear():
    ran.clear()


def _recorder(heard: bool = True):
    def say(step: str, name: str) -> bool:
        ran.append((step, name))
        return heard

    return say


def test_each_kernel_run_in_the_stretch_ends_the_compile_before_it_and_begins_one_after():
    original = FakeAutotuner.run
    a, b = FakeAutotuner("triton_poi_0"), FakeAutotuner("triton_red_1")
    stretch = CompileStretch(_recorder(), KERNELS)
    with stretch.as_compile():
        ran.append(("dynamo and inductor compile",))
        assert a.run(1, 2, stream=7) == "out"  # arguments and result pass through
        assert b.run(3, stream=7) == "out"
    assert ran == [
        ("compiling", STRETCH), ("dynamo and inductor compile",),
        ("compiled", "triton_poi_0"), ("run", "triton_poi_0", (1, 2), 7), ("compiling", STRETCH),
        ("compiled", "triton_red_1"), ("run", "triton_red_1", (3,), 7), ("compiling", STRETCH),
        ("compiled", STRETCH),
    ]
    assert stretch.said == 6 and not stretch.compiling
    # nothing of it is left on the timed path: the class's own method again, and a run says nothing
    assert FakeAutotuner.run is original
    ran.clear()
    a.run(stream=0)
    assert ran == [("run", "triton_poi_0", (), 0)]


def test_a_graph_run_is_one_stretch_of_the_gpus_work_with_its_kernels_inside_it():
    k = FakeAutotuner("triton_poi_0")
    with CompileStretch(_recorder(), BOTH).as_compile():
        FakeGraph([k, k])(["x"])
    assert ran == [("compiling", STRETCH), ("compiled", "FakeGraph"), ("graph",),
                   ("run", "triton_poi_0", ("x",), 0), ("run", "triton_poi_0", ("x",), 0),
                   ("compiling", STRETCH), ("compiled", STRETCH)]


def test_a_benchmark_inside_the_compile_is_the_gpus_work_too():
    """Inductor's benchmarker is an object, not a class: its own method is wrapped, then taken away."""
    with CompileStretch(_recorder(), ((__name__, "bench", "benchmark_gpu"),)).as_compile():
        assert bench.benchmark_gpu(lambda: "padded", warmup=3) == 0.5
    assert ran == [("compiling", STRETCH), ("compiled", "FakeBenchmarker"), ("benchmark", "padded", 3),
                   ("compiling", STRETCH), ("compiled", STRETCH)]
    assert "benchmark_gpu" not in vars(bench)  # the class's own method again


def test_without_torchs_classes_the_whole_call_is_one_compile_as_before():
    missing = (("stark_no_such_module", "CachingAutotuner", "run"), (__name__, "NoSuchClass", "run"),
               (__name__, "FakeAutotuner", "no_such_method"))
    assert gpu_runs(missing) == []
    with CompileStretch(_recorder(), missing).as_compile():
        FakeAutotuner("k").run(stream=0)
    assert ran == [("compiling", STRETCH), ("run", "k", (), 0), ("compiled", STRETCH)]


def test_a_failed_run_gets_its_compile_said_again_and_the_stretch_still_ends():
    with pytest.raises(RuntimeError, match="launch failed"), CompileStretch(_recorder(), KERNELS).as_compile():
        FakeAutotuner("bad", fails=True).run(stream=0)
    assert ran == [("compiling", STRETCH), ("compiled", "bad"), ("run", "bad", (), 0), ("compiling", STRETCH),
                   ("compiled", STRETCH)]


def test_a_drain_that_fails_before_compiling_is_said_leaves_nothing_to_end():
    """Before "compiling" the process drains the GPU's queue; a kernel's error raised there is the call's
    failure, and the judge, who heard no compile begin, must not hear one end."""
    said = []

    def say(step: str, name: str) -> bool:
        if step == "compiling" and said:
            raise RuntimeError("CUDA error: an illegal memory access")
        said.append((step, name))
        return True

    with pytest.raises(RuntimeError, match="illegal memory access"), CompileStretch(say, KERNELS).as_compile():
        FakeAutotuner("k").run(stream=0)
    assert said == [("compiling", STRETCH), ("compiled", "k")]


def test_what_the_judge_did_not_hear_is_never_ended():
    """``say`` says nothing (another thread, a CUDA graph being captured): the stretch keeps to what was said,
    so the words the judge hears always alternate."""
    with CompileStretch(_recorder(heard=False), KERNELS).as_compile() as stretch:
        FakeAutotuner("k").run(stream=0)
        assert not stretch.compiling
    assert ran == [("compiling", STRETCH), ("run", "k", (), 0)] and stretch.said == 0

    ran.clear()
    answers = iter([True, False, True])  # the stretch heard; the run's end not (a capture): it stays a compile

    def say(step: str, name: str) -> bool:
        ran.append((step, name))
        return next(answers)

    with CompileStretch(say, KERNELS).as_compile() as stretch:
        FakeAutotuner("k").run(stream=0)
        assert stretch.compiling
    assert ran == [("compiling", STRETCH), ("compiled", "k"), ("run", "k", (), 0), ("compiled", STRETCH)]


def test_another_threads_runs_say_nothing():
    with CompileStretch(_recorder(), KERNELS).as_compile():
        t = threading.Thread(target=lambda: FakeAutotuner("other").run(stream=0))
        t.start()
        t.join()
    assert ran == [("compiling", STRETCH), ("run", "other", (), 0), ("compiled", STRETCH)]


def test_this_torch_has_the_places_where_inductor_runs_the_gpus_work():
    """Where a torch upgrade moves them, the baseline falls back to one compile for the whole call (safe, but
    its autotuning then runs without the gate): this says so here first."""
    from torch._inductor.output_code import CompiledFxGraph
    from torch._inductor.runtime import benchmarking
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    assert gpu_runs() == [(CompiledFxGraph, "__call__"), (CachingAutotuner, "run"),
                          (benchmarking.benchmarker, "benchmark_gpu")]
    assert len(GPU_RUNS) == 3


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                    reason="Inductor's CPU backend needs a C++ compiler")
def test_torch_compiles_first_call_runs_its_graph_between_two_compiles():
    """For real (Inductor's C++ on the CPU: no Triton kernels, its graph's run stands for the GPU's work): the
    compile, then the graph's run with the compile said to end, then the rest; the second call says nothing."""
    import torch
    from torch._inductor.output_code import CompiledFxGraph

    original = CompiledFxGraph.__call__
    model = torch.compile(torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU()))
    x = torch.randn(4, 16)
    with torch.no_grad():
        with CompileStretch(_recorder()).as_compile():
            out = model(x)
        assert ran == [("compiling", STRETCH), ("compiled", "CompiledFxGraph"), ("compiling", STRETCH),
                       ("compiled", STRETCH)]
        assert CompiledFxGraph.__call__ is original
        ran.clear()
        assert torch.equal(model(x), out) and ran == []


def fake_frame_compile(kernels: list) -> str:
    """Stands in for Dynamo's ``convert_frame._compile``: a frame's compile, which may run the GPU's work (a
    benchmark) inside it."""
    ran.append(("frame compile",))
    for k in kernels:
        k.run()
    return "code"


def convert(kernels: list) -> str:
    """Stands in for Dynamo's frame converter: it calls the compile by its module-level name."""
    return fake_frame_compile(kernels)


FRAME = (__name__, "fake_frame_compile")


def test_in_frame_compiles_only_dynamos_compiles_are_said_and_eager_work_keeps_the_gate():
    """A hostile review ran a whole model eagerly (a frame Dynamo skipped at a graph break) inside a first call
    said as one compile: with the compiles said frame by frame, eager work and the graphs' runs say nothing
    (the gate held shared), and the GPU's work inside a compile is carved out of it."""
    eager, inside = FakeAutotuner("eager_kernel"), FakeAutotuner("benchmarked")
    stretch = CompileStretch(_recorder(), places=KERNELS)
    with stretch.in_frame_compiles(FRAME):
        eager.run()
        assert convert([inside]) == "code"
        eager.run()
    assert ran == [("run", "eager_kernel", (), None),
                   ("compiling", STRETCH), ("frame compile",), ("compiled", "benchmarked"),
                   ("run", "benchmarked", (), None), ("compiling", STRETCH), ("compiled", STRETCH),
                   ("run", "eager_kernel", (), None)]
    assert fake_frame_compile.__name__ == "fake_frame_compile" and convert([]) == "code"  # unwrapped after
    assert stretch.said == 4


def boom_compile(kernels: list) -> str:
    raise RuntimeError("dynamo failed")


def test_a_failed_frame_compile_still_ends_its_compile():
    stretch = CompileStretch(_recorder(), places=KERNELS)
    with stretch.in_frame_compiles((__name__, "boom_compile")):
        with pytest.raises(RuntimeError):
            globals()["boom_compile"]([])  # called by its module-level name, as Dynamo calls its own
    assert ran == [("compiling", STRETCH), ("compiled", STRETCH)] and not stretch.compiling


def test_without_dynamos_frame_compile_the_whole_call_is_one_compile():
    stretch = CompileStretch(_recorder(), places=KERNELS)
    with stretch.in_frame_compiles((__name__, "no_such_function")):
        FakeAutotuner("k").run()
    assert ran == [("compiling", STRETCH), ("compiled", "k"), ("run", "k", (), None), ("compiling", STRETCH),
                   ("compiled", STRETCH)]


def test_this_torch_has_dynamos_frame_compile():
    from stark_lsp.evaluate.candidate.compile_stretch import FRAME_COMPILE

    import importlib

    assert callable(getattr(importlib.import_module(FRAME_COMPILE[0]), FRAME_COMPILE[1], None))


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                    reason="Inductor's CPU backend needs a C++ compiler")
def test_torch_compiles_first_call_said_frame_by_frame_for_real():
    """Inductor's C++ on the CPU, a model with a graph break: each frame's compile said, the graphs' runs and
    the eager code between them not."""
    import torch

    class Broken(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(16, 16), torch.nn.Linear(16, 8)

        def forward(self, x):
            y = self.a(x).relu()
            if float(y.sum()) > -1e30:  # a graph break: .item() on a traced value
                y = y + 1
            return self.b(y)

    model = torch.compile(Broken())
    x = torch.randn(4, 16)
    with torch.no_grad():
        with CompileStretch(_recorder()).in_frame_compiles():
            out = model(x)
        words = [w for w in ran if w[0] in ("compiling", "compiled")]
        assert words and words[0] == ("compiling", STRETCH) and words[-1] == ("compiled", STRETCH)
        assert all(a[0] != b[0] for a, b in zip(words, words[1:]))  # they alternate
        assert ("compiled", "CompiledFxGraph") not in words  # a graph's run outside a compile says nothing
        ran.clear()
        assert torch.equal(model(x), out) and ran == []
