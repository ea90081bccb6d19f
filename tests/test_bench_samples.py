"""Every sample under samples/ is a usable task: Triton and KernelBench roots
pass the real evaluator on the CPU (Triton interpreter, STARK_SMALL shapes);
CUDA roots compile with nvcc (on a machine without a GPU the evaluator stops
at not_run, after a successful build)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from stark_lsp.bench.checks import check_task
from stark_lsp.bench.discover import discover
from stark_lsp.evaluate.evaluator import Evaluator
from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.evaluate.result import Status

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = discover([ROOT / "samples"]).tasks
FAST = EvalOptions(trials=2, cpu_reps=1, reps=10, time_budget_s=0.5, run_timeout_s=240)


def ids(tasks):
    return [str(t.path.relative_to(ROOT / "samples")) for t in tasks]


PY_TASKS = [t for t in SAMPLES if t.kind in ("triton", "kernelbench")]
CUDA_TASKS = [t for t in SAMPLES if t.kind == "cuda"]


def test_there_are_enough_samples_in_both_languages():
    kinds = [t.kind for t in SAMPLES]
    assert len(SAMPLES) >= 10
    assert kinds.count("cuda") >= 4 and kinds.count("triton") >= 4 and kinds.count("kernelbench") >= 4


@pytest.mark.parametrize("task", SAMPLES, ids=ids(SAMPLES))
def test_sample_files_pass_the_static_checks(task):
    assert check_task(task) == []


@pytest.fixture(scope="module")
def cpu_evaluator(tmp_path_factory):
    with Evaluator(workers=1, device="cpu", cache_dir=tmp_path_factory.mktemp("cache")) as ev:
        yield ev


@pytest.mark.timeout(600)
@pytest.mark.parametrize("task", PY_TASKS, ids=ids(PY_TASKS))
def test_python_sample_root_is_correct_on_the_cpu(task, cpu_evaluator):
    r = cpu_evaluator.evaluate(task, task.root_source(), FAST)
    assert r.status is Status.OK, r.summary() + "\n" + r.output[-2000:]
    assert r.correctness.passed and len(r.correctness.trials) == 2


@pytest.mark.nvcc
@pytest.mark.timeout(600)
@pytest.mark.parametrize("task", CUDA_TASKS, ids=ids(CUDA_TASKS))
def test_cuda_sample_root_compiles(task, cpu_evaluator):
    r = cpu_evaluator.evaluate(task, task.root_source(), FAST)
    assert r.compile is not None and r.compile.ok, r.compile.log if r.compile else r.summary()
    assert r.status is Status.NOT_RUN, r.summary()


def test_harness_shapes_shrink_under_stark_small():
    """Small inputs for every harness and KernelBench file (a CPU run stays quick)."""
    code = ("import importlib.util, sys, json\n"
            "sizes = []\n"
            "for p in sys.argv[1:]:\n"
            "    s = importlib.util.spec_from_file_location('h', p); m = importlib.util.module_from_spec(s)\n"
            "    s.loader.exec_module(m)\n"
            "    sizes.append(sum(t.numel() for t in m.get_inputs()))\n"
            "print(json.dumps(sizes))\n")
    files = [str(t.harness or t.path) for t in SAMPLES]
    env = dict(os.environ, STARK_SMALL="1")
    out = subprocess.run([sys.executable, "-c", code, *files], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    import json

    sizes = json.loads(out.stdout)
    assert len(sizes) == len(files) and max(sizes) <= 300_000, dict(zip(files, sizes))
