"""On the CPU, eager is timed in turn with each candidate (issue 24, item 10): in the candidate's own process,
after its calibration and before any candidate code loads, read back between its batches as the candidate's
are, and the evaluation divides by that figure (``judge.reference_in_turn``). Before, eager was timed once
per task, in a process of its own, and every later ratio divided by the load of that one moment: on a
2-core machine shared with other judges the same eager code read 19 ms in one place and 0.09 ms in another
of one run.

The machine's load is a stand-in here, a deterministic cost model: the reference sleeps as many
milliseconds a call as a file says, and the test changes the file between evaluations, as another job
starting on the machine would change every call's cost. The figures compared differ by the model's 20x,
far beyond the CPU's noise; nothing is asserted about how fast anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from stark_lsp.evaluate.evaluator import Evaluator
from stark_lsp.evaluate.judge.judge import reference_in_turn
from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.evaluate.render import render_result
from stark_lsp.evaluate.result import REFERENCE_IN_TURN, Status
from stark_lsp.tasks.spec import load_task

FAST = EvalOptions(trials=2, cpu_reps=3, reps=20, time_budget_s=0.5, run_timeout_s=120)
QUIET_MS, BUSY_MS = 1.0, 20.0  # a call's cost while the machine is quiet, and once another job runs on it

TASK = '''import time

import torch
import torch.nn as nn

LOAD = {load!r}  # the stand-in for the machine's load: milliseconds every call of this code costs now


class Model(nn.Module):
    def forward(self, x):
        with open(LOAD) as f:
            time.sleep(float(f.read()) / 1000.0)
        return torch.relu(x) * 2.0


def get_inputs():
    return [torch.randn(256)]


def get_init_inputs():
    return []
'''


@pytest.fixture
def loaded_task(tmp_path, monkeypatch):
    for var in ("STARK_EVAL_CPU_REFERENCE", "STARK_EVAL_BASELINE_CACHE_CPU", "STARK_EVAL_COMPILED_BASELINE_CPU"):
        monkeypatch.delenv(var, raising=False)
    d = tmp_path / "task"
    d.mkdir()
    load = d / "load.txt"
    load.write_text(str(QUIET_MS))
    path = d / "sleepy.py"
    path.write_text(TASK.format(load=str(load)))
    return load_task(path), load


def the_reference_against_itself_after_the_machine_got_busy(tmp_path: Path, task, load: Path):
    """The KernelBench reference evaluated as its own candidate (a search's root) twice in one judge: once
    while the machine is quiet, once after it got busy; the second result."""
    with Evaluator(workers=1, cache_dir=tmp_path / "cache", device="cpu") as ev:
        load.write_text(str(QUIET_MS))
        quiet = ev.evaluate(task, task.root_source(), FAST)
        assert quiet.status is Status.OK, quiet.summary()
        load.write_text(str(BUSY_MS))
        busy = ev.evaluate(task, task.root_source(), FAST)
    assert busy.status is Status.OK, busy.summary()
    return busy


def test_the_same_code_agrees_with_itself_when_the_machines_load_changes_between_evaluations(tmp_path,
                                                                                            loaded_task):
    task, load = loaded_task
    busy = the_reference_against_itself_after_the_machine_got_busy(tmp_path, task, load)
    rt = busy.runtime
    # eager's figure is this evaluation's, taken beside the candidate's under the same load: the reference
    # against itself is about 1x (the old rule divided by the quiet moment's eager: about 1/20)
    assert 0.5 < rt.speedup < 2.0, (rt.speedup, rt.reference.median_ms, rt.candidate.median_ms)
    assert rt.reference.median_ms > BUSY_MS / 2 and rt.candidate.median_ms > BUSY_MS / 2
    assert REFERENCE_IN_TURN in rt.note
    text = render_result(busy, "sleepy.py", "cpu (triton interpreter)")
    assert "timed in turn with the candidate" in text and "CPU interpreter: for checking, not speed" in text


def test_eager_timed_once_per_task_divides_by_the_load_of_that_moment(tmp_path, loaded_task, monkeypatch):
    """The rule before, and still the GPU's (whose timing holds the GPU alone): the test above tells them apart."""
    monkeypatch.setenv("STARK_EVAL_CPU_REFERENCE", "once")
    task, load = loaded_task
    busy = the_reference_against_itself_after_the_machine_got_busy(tmp_path, task, load)
    assert busy.runtime.speedup < 0.25, busy.runtime.speedup  # the same code at 1/20 of itself
    assert REFERENCE_IN_TURN not in busy.runtime.note


REF_LAUNCHES = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def axpb_kernel(a_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(a_ptr + offs, mask=mask) * 2 + tl.load(b_ptr + offs, mask=mask), mask=mask)


class Model(nn.Module):  # a reference that launches a Triton kernel itself
    def forward(self, a, b):
        y = torch.empty_like(a)
        axpb_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, y, a.numel(), BLOCK=1024)
        return y


def get_inputs():
    return [torch.randn(64, 128), torch.randn(64, 128)]


def get_init_inputs():
    return []
"""


def test_the_references_launches_in_the_candidates_process_are_not_the_candidates(tmp_path, monkeypatch):
    """The reference ran in the candidate's process first, and launched a kernel of the very name the candidate
    defines but never launches (it falls back to PyTorch): the launches are forgotten before the candidate loads,
    so the launch check still finds the dead kernel."""
    for var in ("STARK_EVAL_CPU_REFERENCE", "STARK_EVAL_BASELINE_CACHE_CPU"):
        monkeypatch.delenv(var, raising=False)
    d = tmp_path / "task"
    d.mkdir()
    (d / "ref_launches.py").write_text(REF_LAUNCHES)
    task = load_task(d / "ref_launches.py")
    data = Path(__file__).resolve().parent / "data" / "evaluator"
    with Evaluator(workers=1, cache_dir=tmp_path / "cache", device="cpu") as ev:
        honest = ev.evaluate(task, (data / "good_triton.py").read_text(), FAST)
        dead = ev.evaluate(task, (data / "cheat_dead_kernel.py").read_text(), FAST)
    assert honest.status is Status.OK and REFERENCE_IN_TURN in honest.runtime.note, honest.summary()
    assert dead.status is Status.CHEAT and dead.cheats[0].kind == "kernel_not_launched", dead.summary()


BUSY_CALIBRATION = """import time

import torch
import torch.nn as nn

DRAWS = [0]


class Model(nn.Module):
    def forward(self, x):
        time.sleep(0.001)  # a call's own cost: a millisecond
        return x * 2.0


def get_inputs():
    # the first 20 draws of each process are its calibration's (4 rounds of batches of 1 and 4 empty calls): they
    # are made dear, as when the machine was busy while the calibration ran, and never after
    DRAWS[0] += 1
    if DRAWS[0] <= 20:
        time.sleep(0.004)
    return [torch.randn(256)]


def get_init_inputs():
    return []
"""


def test_a_calibration_taken_in_a_busy_moment_cannot_subtract_more_than_the_protocol_then_cost(tmp_path,
                                                                                             monkeypatch):
    """The calibration said 4 ms a call more than the protocol costs once the machine is quiet: half of that
    subtracted from every call would leave a millisecond's call at the clock's floor (0.05 ms), the reference's and
    the candidate's alike, whatever they cost. The empty batches beside the reference's timed ones, in the same
    process before the candidate exists, cap what both subtract by what the protocol cost then."""
    for var in ("STARK_EVAL_CPU_REFERENCE", "STARK_EVAL_BASELINE_CACHE_CPU"):
        monkeypatch.delenv(var, raising=False)
    d = tmp_path / "task"
    d.mkdir()
    (d / "busy_calibration.py").write_text(BUSY_CALIBRATION)
    task = load_task(d / "busy_calibration.py")
    with Evaluator(workers=1, cache_dir=tmp_path / "cache", device="cpu") as ev:
        r = ev.evaluate(task, task.root_source(), FAST)
    assert r.status is Status.OK, r.summary()
    rt = r.runtime
    assert rt.reference.median_ms > 0.5 and rt.candidate.median_ms > 0.5, (rt.reference, rt.candidate)
    assert 0.5 < rt.speedup < 2.0, rt.speedup


def test_the_rule_is_the_cpus_alone():
    assert reference_in_turn(is_gpu=False)
    assert not reference_in_turn(is_gpu=True)  # a GPU keeps its once-per-task baselines, unchanged


def test_the_baseline_caches_tests_and_the_switch_keep_the_gpus_rule_on_the_cpu(monkeypatch):
    monkeypatch.delenv("STARK_EVAL_CPU_REFERENCE", raising=False)
    monkeypatch.setenv("STARK_EVAL_BASELINE_CACHE_CPU", "1")
    assert not reference_in_turn(is_gpu=False)
    monkeypatch.delenv("STARK_EVAL_BASELINE_CACHE_CPU")
    monkeypatch.setenv("STARK_EVAL_CPU_REFERENCE", "once")
    assert not reference_in_turn(is_gpu=False)
