"""A hostile review of session 26's judge changes (the torch.compile baseline's compile stretch and its trusted
limits, the baselines' overhead capped by their own empty twins, the launch check of sources that may replay a
CUDA graph), as a candidate author after a false figure or a broken judge.

The CPU tests here are the judge's side of the compile protocol (judge/link.py): what a candidate process that
lies about compiling may have without the GPU's gate. The GPU ones (marked ``gpu``: scripts/gpu_tests.sh) are the
launch check's: a Triton kernel named like PyTorch's beside a word that sends the source to the profiler, and a
CUDA graph replayed by a source that hides it from ``launch_rule.uses_cuda_graph``. Their candidates are in
tests/data/attacks/.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from link_pair import link_and_process

ROOT = Path(__file__).resolve().parents[1]
ATTACKS = ROOT / "tests" / "data" / "attacks"
DATA = ROOT / "tests" / "data" / "evaluator"


# the compile protocol: a candidate's time without the gate ---------------------------------------------------

def _liar(process, seconds: float) -> None:
    """The process's side of one request: a single "compile" of ``seconds`` (a liar runs the GPU meanwhile),
    answered go, then the reply."""
    assert process.recv(time.monotonic() + 10) == {"op": "run"}
    process.send({"compiling": "k"})
    time.sleep(seconds)
    process.send({"compiled": "k"})
    assert process.recv(time.monotonic() + 10) == {"go": True}
    process.send({"calls": []})


def _request(link, process, seconds: float, steps: list) -> float:
    """One request whose process says one compile of ``seconds``; the request's wall time."""
    t = threading.Thread(target=_liar, args=(process, seconds))
    t0 = time.monotonic()
    t.start()
    try:
        reply = link.request({"op": "run"}, 30.0,
                             on_compile=lambda step: steps.append((step, time.monotonic() - t0)) or 0.0)
    finally:
        t.join(30)
    assert reply == {"calls": []}
    return time.monotonic() - t0


def test_one_compile_said_for_longer_than_a_process_may_go_without_the_gate_gets_it_taken_back(monkeypatch):
    """``UNGATED_S`` is what one candidate process's compiles may have the GPU's gate let go of, in all. It was
    looked at only when a compile's grace ran out: one compile, said once and held open, kept the gate let go
    of for the rest of its request's limit (a first call's: 60 s; a load_inline load's: 6 minutes), and one
    begun a moment before the budget ran out did the same in the next request. The judge now takes the gate
    back (shared) once the budget is spent, whatever the process says; the compile goes on under it."""
    from stark_lsp.evaluate.judge import link as L

    monkeypatch.setattr(L, "COMPILE_GRACE_S", 0.02)
    monkeypatch.setattr(L, "UNGATED_S", 0.3)
    link, process = link_and_process()
    steps: list = []
    try:
        _request(link, process, 3.0, steps)
    finally:
        link.close()
    assert [s for s, _ in steps] == ["compiling", "compiled"], steps
    taken_back = steps[1][1] - steps[0][1]
    # at the budget (0.3 s), not at the process's word 3 s later: the margin is for a busy machine's threads
    assert taken_back < 0.3 + 1.2, steps
    assert link.ungated_s < 0.3 + 1.2, link.ungated_s


def test_a_compile_begun_just_inside_the_budget_ends_without_the_gate_at_the_budget(monkeypatch):
    """Two requests (a load, then a first call): a compile that leaves the process a moment of its budget, then
    one that begins within that moment and is held open. The second has the gate back once the moment is
    spent: the process's time without the gate is ``UNGATED_S`` (plus a grace), not twice it."""
    from stark_lsp.evaluate.judge import link as L

    monkeypatch.setattr(L, "COMPILE_GRACE_S", 0.02)
    monkeypatch.setattr(L, "UNGATED_S", 0.6)
    link, process = link_and_process()
    steps: list = []
    try:
        _request(link, process, 0.45, steps)  # 0.43 s without the gate: 0.17 s of the budget left
        second: list = []
        _request(link, process, 3.0, second)
    finally:
        link.close()
    assert [s for s, _ in second] == ["compiling", "compiled"], second
    assert link.ungated_s < 0.6 + 1.2, link.ungated_s  # was about 0.43 + 3


def test_the_torch_compile_baselines_long_compile_keeps_the_gate_let_go_of(monkeypatch):
    """The trusted baseline's process (``trust_compiles``) is not held to a candidate's budget: its one long
    compile keeps the gate let go of until it says it ended."""
    from stark_lsp.evaluate.judge import link as L

    monkeypatch.setattr(L, "COMPILE_GRACE_S", 0.02)
    monkeypatch.setattr(L, "UNGATED_S", 0.1)
    link, process = link_and_process()
    link.trust_compiles()
    steps: list = []
    try:
        _request(link, process, 0.8, steps)
    finally:
        link.close()
    assert [s for s, _ in steps] == ["compiling", "compiled"], steps
    assert steps[1][1] - steps[0][1] >= 0.7, steps
    assert link.ungated_s >= 0.7


# the launch check: GPU ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def gpu_ev(tmp_path_factory):
    from stark_lsp.evaluate.evaluator import Evaluator

    with Evaluator(workers=1, cache_dir=tmp_path_factory.mktemp("cache")) as e:
        yield e


def _gpu_opts():
    from stark_lsp.evaluate.options import EvalOptions

    return EvalOptions(trials=2, reps=30, time_budget_s=1.0, run_timeout_s=120)


@pytest.mark.gpu
@pytest.mark.parametrize("word", ["# torch.cuda.CUDAGraph: none here\n", ""])
def test_a_triton_kernel_named_like_pytorchs_is_not_launched_by_pytorch_beside_a_graph_word(gpu_ev, word):
    """A never-launched Triton kernel named exactly like PyTorch's elementwise kernel, and a PyTorch fallback.
    A word of CUDA graphs anywhere in the source (a comment) sends its launch check to the profiler, which
    names every kernel of a call, PyTorch's own among them: the fallback's kernel counted as the candidate's
    (``ok`` before the fix). A Triton kernel is the candidate's launch only by Triton's counter."""
    from stark_lsp.evaluate.result import Status
    from stark_lsp.tasks.spec import load_task

    source = word + (ATTACKS / "gpu_named_like_pytorch_beside_a_graph.py").read_text()
    r = gpu_ev.evaluate(load_task(DATA / "gpu_big_task.py"), source, _gpu_opts())
    assert r.status is Status.CHEAT and r.cheats[0].kind == "kernel_not_launched", r.summary()


@pytest.mark.gpu
def test_a_cuda_graph_hidden_from_the_rule_is_still_checked_and_timed_on_the_judges_clock(gpu_ev):
    """A source that replays a CUDA graph of its Triton kernel and hides it from ``uses_cuda_graph`` (a line
    ``CUDA_GRAPH = False``, then the graph through ``torch._C._CUDAGraph``): Triton's counter saw the kernel's
    launches when the graph was captured, every output is checked, and the figure is the judge's clock's, as
    for any candidate. Hiding it gains nothing (and costs it nothing: the counter is cumulative)."""
    from stark_lsp.evaluate.judge.launch_rule import uses_cuda_graph
    from stark_lsp.evaluate.result import Status
    from stark_lsp.tasks.spec import load_task

    source = (ATTACKS / "gpu_graph_hidden_from_the_rule.py").read_text()
    assert not uses_cuda_graph(source)  # the rule is a reading of the text: this one says no graph
    task = load_task(DATA / "add_task.py")
    r = gpu_ev.evaluate(task, source, _gpu_opts())
    assert r.status is Status.OK, r.summary()  # not "kernel_not_launched": the capture's launches were counted
    t = r.runtime.candidate
    assert t.source == "judge" and t.median_ms == t.judged_ms, t
    shown_source = source.replace("CUDA_GRAPH = False\n", "CUDA_GRAPH = 0\n")
    assert uses_cuda_graph(shown_source)  # the same graph, which the rule sees: the profiler's launch check
    shown = gpu_ev.evaluate(task, shown_source, _gpu_opts())
    assert shown.status is Status.OK, shown.summary()
    print(f"hidden graph: {t.median_ms:.4g} ms ({r.runtime.speedup:.3g}x eager); the same, profiled: "
          f"{shown.runtime.candidate.median_ms:.4g} ms ({shown.runtime.speedup:.3g}x)")


@pytest.mark.gpu
def test_a_source_that_only_names_load_inline_loads_under_the_gate(monkeypatch, tmp_path):
    """Candidate code runs beside another judge's timing only while its process says it compiles, and for
    ``link.UNGATED_S`` in all (docs/EVALUATOR.md). A KernelBench source whose text named ``load_inline`` (a
    comment would do) had its load held without the gate for up to ``load_timeout_s + compile_timeout_s``: its
    import ran GPU work beside other judges' timed windows (their baselines too, which the baseline cache then
    keeps for a week) with no compile said. Now the load holds the gate shared and only a real build is said
    as a compile (``candidate/extension_builds.py``)."""
    import json

    from stark_lsp.evaluate.evaluator import Evaluator
    from stark_lsp.evaluate.result import Status
    from stark_lsp.tasks.spec import load_task

    trace = tmp_path / "trace.jsonl"
    monkeypatch.setenv("STARK_EVAL_TRACE", str(trace))
    task = load_task(DATA / "add_task.py")
    with Evaluator(workers=1, cache_dir=tmp_path / "cache") as ev:
        r = ev.evaluate(task, (ATTACKS / "gpu_load_inline_word.py").read_text(), _gpu_opts())
    assert r.status is Status.OK, r.summary()
    takes = [(t["take"], t["for"]) for t in map(json.loads, trace.read_text().splitlines()) if "take" in t]
    load = next(t for t in takes if t[1] == "load")
    assert load[0] == "shared", takes
