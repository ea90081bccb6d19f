"""Evaluator checks that need a real GPU (run by scripts/gpu_tests.sh on the device machine)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stark_lsp.evaluate.evaluator import Evaluator
from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.evaluate.result import Status
from stark_lsp.tasks.spec import load_task

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "evaluator"
OPTS = EvalOptions(trials=2, reps=30, time_budget_s=1.0, run_timeout_s=120)


@pytest.fixture(scope="module")
def ev(tmp_path_factory):
    with Evaluator(workers=1, cache_dir=tmp_path_factory.mktemp("cache")) as e:
        yield e


def test_honest_candidate_on_a_big_task(ev):
    r = ev.evaluate(load_task(DATA / "gpu_big_task.py"), (DATA / "good_big.py").read_text(), OPTS)
    assert r.status is Status.OK, r.summary()
    # at least 3 batches: 5 unless the timing's budget (1 s here, its checks of big outputs included) runs out first
    assert r.runtime.is_gpu and r.runtime.candidate.judged_ms is not None and r.runtime.candidate.batches >= 3
    assert 0.5 < r.runtime.speedup < 2.0  # the same computation as the reference


def test_fast_candidates_are_timed_in_full(ev):
    # a short kernel on big inputs: each request is mostly drawing the inputs, so the judge's
    # clock around one warm-up call once read over 10x the reference (cut after 3 calls)
    task = load_task(ROOT / "benchmarks" / "tasks" / "axpy_triton.py")
    opts = EvalOptions(trials=2, reps=40, time_budget_s=1.0)
    for _ in range(3):
        r = ev.evaluate(task, task.root_source(), opts)
        assert r.status is Status.OK, r.summary()
        assert r.runtime.candidate.reps >= 40 and "slower than" not in r.runtime.note, r.summary()


def test_work_on_a_side_stream_is_inside_the_timed_region(ev):
    # the timed region ends with a device sync: the side stream's work is timed, so the
    # "speedup" is the reference's own speed (it was 1.94x when only the current stream was timed)
    r = ev.evaluate(load_task(DATA / "gpu_big_task.py"), (DATA / "cheat_side_stream.py").read_text(), OPTS)
    assert r.status is Status.CHEAT or (r.status is Status.OK and r.runtime.speedup < 1.3), r.summary()


def test_out_of_memory_is_a_clean_failure(ev):
    r = ev.evaluate(load_task(DATA / "add_task.py"), (DATA / "oom.py").read_text(), OPTS)
    assert r.status is Status.RUNTIME_ERROR and "memory" in r.message


def test_illegal_memory_access_then_next_evaluation_works(ev):
    task = load_task(ROOT / "samples" / "cuda" / "softmax_rows.cu")
    r = ev.evaluate(task, (DATA / "illegal_access.cu").read_text(), OPTS)
    assert r.status in (Status.RUNTIME_ERROR, Status.CRASHED), r.summary()
    assert "cuda error" in r.message.lower() or r.status is Status.CRASHED
    assert ev.evaluate(task, task.root_source(), OPTS).status is Status.OK


def test_bad_launch_configuration_is_reported(ev):
    task = load_task(ROOT / "samples" / "cuda" / "softmax_rows.cu")
    r = ev.evaluate(task, (DATA / "bad_launch.cu").read_text(), OPTS)
    assert r.status is Status.RUNTIME_ERROR
    assert "CUDA error" in r.message and "invalid" in r.message  # CUDA 13 says "invalid argument"


def test_cuda_and_triton_samples_pass_with_resources(ev):
    for path in ("samples/cuda/softmax_rows.cu", "samples/triton/softmax.py"):
        task = load_task(ROOT / path)
        r = ev.evaluate(task, task.root_source(), OPTS)
        assert r.status is Status.OK, (path, r.summary())
        assert r.resources and r.resources[0].registers, path


def test_floor_counts_the_bytes_the_task_must_move(ev):
    r = ev.evaluate(load_task(DATA / "gpu_big_task.py"), (DATA / "good_big.py").read_text(), OPTS)
    f = r.runtime.floor
    assert f is not None and f.bytes == 3 * 8192 * 8192 * 4  # two inputs read, one output written
    assert f.flops == 0 and f.bound == "memory"


# ---- the trust boundary on the GPU (issue 10) --------------------------------------------
ATTACKS = ROOT / "tests" / "data" / "attacks"


def test_a_hung_gpu_kernel_is_killed_within_30_s_and_the_gpu_serves_the_next(ev):
    task = load_task(DATA / "gpu_big_task.py")
    r = ev.evaluate(task, (ATTACKS / "gpu_hang_kernel.py").read_text(), OPTS)
    assert r.status is Status.TIMEOUT, r.summary()
    limit = float(r.message.split("(")[-1].split(" s)")[0])
    assert limit <= 30.0, r.message
    print(f"hung kernel: {r.message}; evaluation took {r.seconds:.1f} s")
    assert ev.evaluate(task, (DATA / "good_big.py").read_text(), OPTS).status is Status.OK


def test_a_kernel_named_like_pytorchs_must_really_launch(ev):
    r = ev.evaluate(load_task(DATA / "gpu_big_task.py"), (ATTACKS / "gpu_elementwise_fallback.py").read_text(), OPTS)
    assert r.status is Status.CHEAT and r.cheats[0].kind == "kernel_not_launched", r.summary()


def test_resources_name_only_the_candidates_own_kernels(ev):
    task = load_task(DATA / "gpu_big_task.py")
    first = ev.evaluate(task, (DATA / "good_triton.py").read_text(), OPTS)
    assert first.status is Status.OK, first.summary()
    r = ev.evaluate(task, (ATTACKS / "gpu_two_kernels.py").read_text(), OPTS)
    assert r.status is Status.OK, r.summary()
    assert r.resources and {k.kernel for k in r.resources} <= {"scale2", "add_into"}, r.resources


def test_the_sandbox_keeps_the_gpu(ev):
    hw = ev.hardware_info()
    assert hw["is_gpu"] and "no sandbox" not in hw["sandbox"] and hw["sandbox"] != "none", hw


FORGER = """import sys
import time
import torch.nn as nn
proc = sys.modules["stark_lsp.evaluate.candidate.process"].CandidateProcess
_batch, _calib = proc._batch, proc.op_calib


def _claims(self, msg, call, calibration=False):  # a sixth of each call's time, in every reply
    reply = _batch(self, msg, call, calibration)
    for c in reply.get("calls") or []:
        c["ms"] = 0.017
    return reply


def _slow_calib(self, msg):  # the empty calls beside each timed batch made dearer: more to subtract
    reply = _calib(self, msg)
    time.sleep(0.0005 * len(msg.get("calls") or []))
    return reply


proc._batch, proc.op_calib = _claims, _slow_calib


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a * 2 + b
"""


def test_1_a_forged_time_on_a_short_kernel_gains_no_more_than_the_judges_bound(ev, tmp_path):
    # about 0.1 ms a call on an H200: below the old protocol's 1 ms of request overhead, where a sixth was believed
    folder = ROOT / "out" / "gpu-forge"
    folder.mkdir(parents=True, exist_ok=True)
    task_file = folder / "axpy_short.py"
    task_file.write_text("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, a, b):\n"
                         "        return a * 2 + b\n\n\ndef get_inputs():\n    return [torch.randn(28 << 20), "
                         "torch.randn(28 << 20)]\n\n\ndef get_init_inputs():\n    return []\n")
    task = load_task(task_file)
    opts = EvalOptions(trials=2)
    honest = ev.evaluate(task, "import torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, a, b):\n"
                               "        return a * 2 + b\n", opts)
    forged = ev.evaluate(task, FORGER, opts)
    assert honest.status is Status.OK and forged.status is Status.OK, (honest.summary(), forged.summary())
    h, f = honest.runtime.candidate, forged.runtime.candidate
    assert f.source == "judge" and f.median_ms == f.judged_ms, f
    assert f.median_ms >= h.median_ms - 3 * h.bound_ms, (h, f)  # not a sixth: the judge's clock, within its noise
