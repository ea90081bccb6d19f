"""Launchers a harness could never call, found before anything is built (evaluate/launcher_check.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

from stark_lsp.bench.checks import check_task
from stark_lsp.evaluate.candidate.cuda_library import SignatureError, _parse_param, parse_launchers
from stark_lsp.evaluate.launcher_check import problems
from stark_lsp.tasks.spec import load_task

ROOT = Path(__file__).resolve().parents[1]

SOURCE = 'extern "C" void scale(const float* x, float* y, float a, int n, int m) {}\n'


def test_a_call_with_too_few_arguments_is_named_with_its_line_and_the_parameters():
    harness = "def run(lib, x):\n    y = x * 0\n    lib.scale(x, y, 2.0, x.numel())\n    return y\n"
    assert problems(SOURCE, harness) == ["the harness's line 3: scale takes 5 arguments (x, y, a, n, m), got 4"]
    ok = "def run(lib, x):\n    lib.scale(x, x, 2.0, 1, 1)\n"
    assert problems(SOURCE, ok) == []


def test_a_trailing_stream_may_be_left_out_and_unpacked_calls_are_left_to_the_run():
    src = 'extern "C" void f(float* x, int n, cudaStream_t s) {}\n'
    assert problems(src, "def run(lib, x):\n    lib.f(x, 3)\n") == []
    assert problems(src, "def run(lib, x):\n    lib.f(x)\n") != []
    assert problems(src, "def run(lib, *xs):\n    lib.f(*xs)\n") == []


def test_a_parameter_python_cannot_pass_is_named_with_its_own_type():
    src = 'extern "C" void g(float* x, int2 v) {}\n'
    (msg,) = problems(src, None)
    assert "parameter 'v' has type 'int2'" in msg
    try:
        _parse_param("unsigned int", 0)
        _parse_param("unsigned int n", 0)
    except SignatureError:  # pragma: no cover - the check's premise
        raise AssertionError("a plain unsigned int must be accepted")


def test_the_task_check_refuses_such_a_kernel_before_anything_runs(tmp_path):
    for f in ("sum_dim1.cu", "sum_dim1.harness.py"):
        shutil.copy(ROOT / "samples" / "cuda" / f, tmp_path / f)
    task = load_task(tmp_path / "sum_dim1.cu")
    assert check_task(task) == []
    src = (tmp_path / "sum_dim1.cu").read_text()
    name = next(iter(parse_launchers(src)))
    widened = src.replace(f"{name}(", f"{name}(int extra_param, ", 1)
    found = check_task(task, kernel_source=widened, kernel_name="candidate.cu")
    assert found and found[0].startswith("candidate.cu: sum_dim1.harness.py's line ") and "got" in found[0], found
