"""The evaluator on every failure class, through real worker processes.

Runs on the CPU (Triton interpreter, plain torch) and, unchanged, on a GPU
(scripts/gpu_tests.sh): expectations that differ say so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from stark_lsp.evaluate.evaluator import Evaluator
from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.evaluate.result import EvalResult, Status
from stark_lsp.tasks.spec import HarnessNotFound, load_task

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "evaluator"
FAST = EvalOptions(trials=2, cpu_reps=1, reps=20, time_budget_s=0.5, run_timeout_s=60)


@pytest.fixture(scope="module")
def ev(tmp_path_factory):
    os.environ["STARK_TEST_SECRET_API_KEY"] = "sk-test-must-not-leak"
    with Evaluator(workers=1, cache_dir=tmp_path_factory.mktemp("cache")) as e:
        yield e


@pytest.fixture(scope="module")
def gpu(ev) -> bool:
    return bool(ev.hardware_info().get("is_gpu"))


def add_task():
    return load_task(DATA / "add_task.py")


def evaluate(ev, name: str, task=None, opts: EvalOptions = FAST) -> EvalResult:
    return ev.evaluate(task or add_task(), (DATA / name).read_text(), opts)


def test_plain_torch_candidate_is_correct_and_timed(ev, gpu):
    r = evaluate(ev, "good_torch.py")
    assert r.status is Status.OK, r.summary()
    assert r.correctness.passed and len(r.correctness.trials) == 2
    assert r.correctness.atol == 1e-4  # float32 default
    assert r.runtime.is_gpu == gpu
    assert r.runtime.candidate.reps >= 1 and r.runtime.speedup > 0
    c = r.runtime.candidate  # the judge's own figure, and its noise
    assert c.judged_ms is not None and c.bound_ms is not None and c.bound_ms > 0 and c.batches >= 1
    assert c.source == "judge" and c.median_ms == c.judged_ms
    if not gpu:
        assert "not a GPU figure" in r.runtime.note


def test_triton_candidate_runs(ev):
    r = evaluate(ev, "good_triton.py")
    assert r.status is Status.OK, r.summary() + r.output


def test_result_round_trips_through_json(ev):
    r = evaluate(ev, "good_torch.py")
    back = EvalResult.from_json(r.to_json())
    assert back == r


def test_wrong_output_is_incorrect_with_errors_reported(ev):
    r = evaluate(ev, "wrong.py")
    assert r.status is Status.INCORRECT
    t = r.correctness.trials[0]
    assert not t.passed and t.failed_output == 0 and t.max_abs_error > 1e-3
    assert "outside atol" in t.message


def test_tolerance_can_be_overridden(ev):
    loose = EvalOptions(**{**FAST.to_dict(), "atol": 1.0, "rtol": 1.0})
    r = evaluate(ev, "wrong.py", opts=loose)
    assert r.status is Status.OK, r.summary()


def test_syntax_error_is_a_compile_error_on_its_line(ev):
    r = evaluate(ev, "syntax_error.py")
    assert r.status is Status.COMPILE_ERROR
    assert [d.line for d in r.all_diagnostics()] == [5]


def test_exception_is_a_runtime_error_on_its_line(ev):
    r = evaluate(ev, "raises.py")
    assert r.status is Status.RUNTIME_ERROR
    assert "KeyError" in r.message
    assert r.diagnostics[0].line == 7


def test_hang_is_killed_and_next_evaluation_works(ev):
    r = evaluate(ev, "hangs.py", opts=EvalOptions(**{**FAST.to_dict(), "run_timeout_s": 8}))
    assert r.status is Status.TIMEOUT and "killed" in r.message
    assert evaluate(ev, "good_torch.py").status is Status.OK


def test_segfault_is_a_crash_and_next_evaluation_works(ev):
    r = evaluate(ev, "segfaults.py")
    assert r.status is Status.CRASHED and "SIGSEGV" in r.message
    assert evaluate(ev, "good_torch.py").status is Status.OK


def test_killed_worker_is_replaced(ev):
    assert evaluate(ev, "good_torch.py").status is Status.OK
    for w in list(ev.pool._all):
        os.kill(w.proc.pid, 9)
    r = evaluate(ev, "good_torch.py")
    assert r.status in (Status.CRASHED, Status.OK)  # the job may have gone to the dead one
    assert evaluate(ev, "good_torch.py").status is Status.OK


def test_cheat_modifying_inputs(ev):
    r = evaluate(ev, "cheat_inplace.py")
    assert r.status is Status.CHEAT
    assert r.cheats[0].kind == "inputs_modified"


def test_cheat_uninitialised_output(ev):
    r = evaluate(ev, "cheat_empty.py")
    assert r.status is Status.INCORRECT


def test_cheat_caching_by_shape_fails_on_fresh_inputs(ev):
    r = evaluate(ev, "cheat_cache_shape.py")
    assert r.status is Status.INCORRECT
    assert r.correctness.trials[0].passed and not r.correctness.trials[1].passed


def test_cheat_caching_by_pointer_never_hits(ev):
    # every timed call's inputs take storage the candidate has never seen (the warm-up repeats
    # one set on purpose): the cache misses, the candidate computes, and its figure is honest
    r = evaluate(ev, "cheat_cache_pointer.py", opts=replace(FAST, cpu_reps=3))
    assert r.status is Status.OK, (r.summary(), r.output[-2000:])


def test_cheat_try_except_fallback(ev):
    r = evaluate(ev, "cheat_fallback.py")
    assert r.status is Status.CHEAT
    assert r.cheats[0].kind == "kernel_not_launched"
    assert any("try/except" in f for f in r.flags)


def test_cheat_kernel_never_launched(ev):
    r = evaluate(ev, "cheat_dead_kernel.py")
    assert r.status is Status.CHEAT and r.cheats[0].kind == "kernel_not_launched"


def test_patching_the_public_timer_changes_nothing_measured(ev):
    """time.perf_counter patched to read 0: the candidate process bound its clocks before the
    candidate was imported, and the judge times with its own (tests/test_evaluator_attacks.py
    forges the process's own clocks)."""
    r = evaluate(ev, "cheat_timer.py")
    assert r.status is Status.OK, r.summary()
    assert r.runtime.candidate.median_ms > 0 and r.runtime.speedup < 100
    assert evaluate(ev, "good_torch.py").status is Status.OK


def test_large_speedup_is_flagged_for_review(ev):
    task = load_task(DATA / "slow_ref_task.py")
    r = evaluate(ev, "slow_ref_fast.py", task=task, opts=EvalOptions(**{**FAST.to_dict(), "cpu_reps": 3,
                                                                        "review_speedup": 3.0}))
    assert r.status is Status.OK, r.summary()
    # ~100x on an idle CPU; on a busy one the figure moves, the rule does not: flagged iff over 3x
    flagged = [f for f in r.flags if f.startswith("speedup ")]
    assert bool(flagged) == (r.runtime.speedup > 3.0), (r.runtime.speedup, r.flags)
    assert not flagged or "× eager is over 3" in flagged[0]


def test_secrets_do_not_reach_candidates(ev):
    r = evaluate(ev, "leak_env.py")
    assert r.status is Status.OK
    assert "ENV:" in r.output  # what the candidate printed comes back ...
    assert "sk-test-must-not-leak" not in r.output  # ... without the secret
    assert "STARK_TEST_SECRET_API_KEY" not in r.output


def test_triton_task_sample(ev):
    task = load_task(ROOT / "samples" / "triton" / "softmax.py")
    assert task.kind == "triton" and task.harness.name == "softmax.harness.py"
    r = ev.evaluate(task, task.root_source(), FAST)
    assert r.status is Status.OK, r.summary() + r.output


def test_triton_error_points_at_the_kernel_line(ev):
    task = load_task(ROOT / "samples" / "triton" / "softmax.py")
    r = evaluate(ev, "triton_compile_error.py", task=task)
    assert r.status in (Status.COMPILE_ERROR, Status.RUNTIME_ERROR)
    assert "undefined_name" in r.message or any("undefined_name" in d.message for d in r.all_diagnostics())
    assert 12 in [d.line for d in r.all_diagnostics()]


def test_kernelbench_sample_with_triton_candidate(ev):
    task = load_task(ROOT / "samples" / "kernelbench" / "relu.py")
    assert task.kind == "kernelbench"
    r = ev.evaluate(task, (ROOT / "samples" / "kernelbench" / "relu_triton_new.py").read_text(), FAST)
    assert r.status is Status.OK, r.summary() + r.output


def test_kernelbench_root_is_the_reference_itself(ev):
    task = load_task(ROOT / "samples" / "kernelbench" / "relu.py")
    r = ev.evaluate(task, task.root_source(), FAST)
    assert r.status is Status.OK


@pytest.mark.nvcc
def test_cuda_candidate_builds_and_runs_only_on_a_gpu(ev, gpu):
    task = load_task(ROOT / "samples" / "cuda" / "softmax_rows.cu")
    r = ev.evaluate(task, task.root_source(), FAST)
    assert r.compile.ok
    regs = {k.kernel: k.registers for k in r.resources}
    assert regs.get("softmax_rows_kernel", 0) > 0  # from ptxas -v
    if gpu:
        assert r.status is Status.OK, r.summary()
    else:
        assert r.status is Status.NOT_RUN and "no GPU" in r.message
    again = ev.evaluate(task, task.root_source(), FAST)
    assert again.compile.cached


@pytest.mark.nvcc
def test_cuda_compile_error_is_mapped_to_the_candidate_line(ev):
    task = load_task(ROOT / "samples" / "cuda" / "softmax_rows.cu")
    r = evaluate(ev, "bad_kernel.cu", task=task)
    assert r.status is Status.COMPILE_ERROR
    errs = [d for d in r.compile.diagnostics if d.severity == "error"]
    assert errs and errs[0].line == 7 and "missing_value" in errs[0].message


def test_missing_harness_is_a_clear_error(tmp_path):
    k = tmp_path / "k.cu"
    k.write_text("__global__ void k(float* x) {}\n")
    with pytest.raises(HarnessNotFound) as e:
        load_task(k)
    assert "k.harness.py" in str(e.value)


def test_broken_harness_is_a_task_error(ev, tmp_path):
    (tmp_path / "t.py").write_text((ROOT / "samples" / "triton" / "softmax.py").read_text())
    (tmp_path / "t.harness.py").write_text("import torch\nENTRY = 'softmax'\ndef get_inputs():\n    return [1 / 0]\n")
    task = load_task(tmp_path / "t.py")
    r = ev.evaluate(task, task.root_source(), FAST)
    assert r.status is Status.TASK_ERROR and "ZeroDivisionError" in r.message


def test_cli_eval_json(tmp_path):
    env = {**os.environ, "STARK_CACHE_DIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-m", "stark_lsp", "eval", str(DATA / "add_task.py"), str(DATA / "good_torch.py"),
         "--json", "--trials", "2", "--reps", "10"],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["status"] == "ok" and d["correctness"]["passed"] is True
    assert EvalResult.from_dict(d).status is Status.OK
