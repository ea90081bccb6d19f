"""Project builds with the real compiler (nvcc + ninja, in the sandbox where one can be made),
and Python kernels that import their neighbours, through the evaluator.

On a machine without a GPU a CUDA candidate is compiled and not run (``not_run``): these
tests check the build; scripts/gpu_project_check.sh runs the samples on the GPU."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from stark_lsp.project_build.scrub import WITHHELD
from stark_lsp.evaluate.cuda_build import CudaBuilder
from stark_lsp.evaluate.evaluator import Evaluator
from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.evaluate.result import Status
from stark_lsp.evaluate.sandbox.policy import probe
from stark_lsp.tasks.spec import load_task

ROOT = Path(__file__).resolve().parents[1]
FAST = EvalOptions(trials=2, cpu_reps=1, reps=5, time_budget_s=0.5, run_timeout_s=120)
SECRET = "sk-test-" + "q" * 24


def _builder(tmp_path: Path) -> CudaBuilder:
    sb = probe()
    return CudaBuilder(tmp_path / "cache", sandbox=sb if sb.available else None)


@pytest.fixture
def project(tmp_path) -> Path:
    dst = tmp_path / "proj"
    shutil.copytree(ROOT / "samples" / "project", dst)
    return dst


HARNESS = "import torch\ndef reference(x):\n    return x\ndef get_inputs():\n    return [torch.randn(8)]\ndef run(lib, x):\n    return x\n"


@pytest.mark.nvcc
def test_header_beside_the_kernel_is_found_and_a_changed_header_rebuilds(tmp_path):
    (tmp_path / "common.cuh").write_text("#pragma once\n#define SCALE 2.0f\n")
    k = tmp_path / "k.cu"
    k.write_text('#include "common.cuh"\n__global__ void k(float* x) { x[0] *= SCALE; }\n'
                 'extern "C" void launch(float* x) { k<<<1, 1>>>(x); }\n')
    (tmp_path / "k.harness.py").write_text(HARNESS)
    task = load_task(k)
    b = _builder(tmp_path)
    first = b.build(k.read_text(), task=task)
    assert first.report.ok, first.report.log
    again = b.build(k.read_text(), task=task)
    assert again.report.cached and again.key == first.key
    (tmp_path / "common.cuh").write_text("#pragma once\n#define SCALE 3.0f\n")
    changed = b.build(k.read_text(), task=task)
    assert changed.report.ok and not changed.report.cached and changed.key != first.key
    # back to the first header: the first artifact is found again
    (tmp_path / "common.cuh").write_text("#pragma once\n#define SCALE 2.0f\n")
    back = b.build(k.read_text(), task=task)
    assert back.report.cached and back.key == first.key


@pytest.mark.nvcc
def test_two_unit_project_links_and_rebuilds_only_the_candidate_unit(project, tmp_path):
    task = load_task(project / "src" / "l2norm.cu")
    b = _builder(tmp_path)
    first = b.build(task.root_source(), task=task)
    assert first.report.ok, first.report.log
    assert [r.kernel for r in first.resources] == ["inv_norm_kernel"]  # the candidate's own kernels only
    assert "stark-lsp build note: from compile_commands.json: ignored --generate-code" in first.report.log
    nm = shutil.which("nm")
    if nm:
        syms = subprocess.run([nm, "-D", "--defined-only", str(first.library)], capture_output=True, text=True).stdout
        assert "launch_scale_rows" in syms and "l2_normalize_rows" in syms
    from stark_lsp.evaluate.cuda_build import build_root

    [obj] = [o for o in (build_root() / "objects").glob("*/scale_rows-*.o") if str(project) in o.with_suffix(".o.d")
             .read_text()]  # under the private build root, not the cache (nothing there is the sandbox's)
    stamp = obj.stat().st_mtime_ns
    cand = task.root_source().replace("float acc = 0.0f;", "float acc = 0.0f;  // candidate 2")
    second = b.build(cand, task=task)
    assert second.report.ok and not second.report.cached
    assert obj.stat().st_mtime_ns == stamp  # the other unit's object was reused
    # the shared header changes: the other unit is rebuilt too, and nothing stale is reused
    h = project / "include" / "rownorm.cuh"
    h.write_text(h.read_text().replace("1e-6f", "1e-5f"))
    third = b.build(cand, task=task)
    assert third.report.ok and not third.report.cached and third.key != second.key
    assert obj.stat().st_mtime_ns != stamp


@pytest.mark.nvcc
def test_compiler_error_in_a_header_is_on_the_header_line(project, tmp_path):
    task = load_task(project / "src" / "l2norm.cu")
    h = project / "include" / "rownorm.cuh"
    lines = h.read_text().splitlines()
    n = next(i for i, ln in enumerate(lines, 1) if "return v * v;" in ln)
    h.write_text(h.read_text().replace("return v * v;", "return v * v + not_declared;"))
    art = _builder(tmp_path).build(task.root_source(), task=task)
    assert not art.report.ok
    errs = [d for d in art.report.diagnostics if d.severity == "error"]
    assert any(d.file == str(h.resolve()) and d.line == n and "not_declared" in d.message for d in errs), errs


@pytest.mark.nvcc
def test_compile_commands_alone_gives_include_dirs_and_macros(tmp_path):
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "tile.cuh").write_text("#pragma once\nconstexpr int kTile = TILE;\n")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "compile_commands.json").write_text(
        f'[{{"directory": "{tmp_path}/build", "file": "../k.cu", '
        f'"command": "nvcc -I../include -DTILE=64 -c ../k.cu -o k.o"}}]')
    k = tmp_path / "k.cu"
    k.write_text('#include "tile.cuh"\nstatic_assert(kTile == 64, "TILE from compile_commands.json");\n'
                 '__global__ void k(float* x) { x[0] = kTile; }\nextern "C" void launch(float* x) { k<<<1, 1>>>(x); }\n')
    (tmp_path / "k.harness.py").write_text(HARNESS)
    art = _builder(tmp_path).build(k.read_text(), task=load_task(k))
    assert art.report.ok, art.report.log
    assert "-DTILE=64" in art.report.command


@pytest.mark.nvcc
def test_an_included_secret_leaks_nothing(project, tmp_path, monkeypatch):
    """A candidate that includes the process environment, or a key file in the project,
    gets neither into the log, the diagnostics or the command."""
    monkeypatch.setenv("STARK_TEST_SECRET_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    (project / ".env").write_text(f"OPENAI_API_KEY={SECRET}\n")
    (project / "key.txt").write_text(f"{SECRET}\n")
    home_key = Path(os.path.expanduser("~")) / f".stark-test-key-{os.getpid()}"
    home_key.write_text(f"{SECRET}\n")
    task = load_task(project / "src" / "l2norm.cu")
    b = _builder(tmp_path)
    try:
        for include in ("/proc/self/environ", "../.env", "../key.txt", str(home_key), "/proc/1/environ"):
            src = f'#include "{include}"\n' + task.root_source()
            art = b.build(src, task=task)
            text = art.report.log + art.report.command + " ".join(f"{d.file} {d.message}" for d in art.report.diagnostics)
            assert SECRET not in text and "q" * 12 not in text, (include, text)
            assert "OPENAI_API_KEY" not in text
        art = b.build('#include "../.env"\n' + task.root_source(), task=task)
        text = art.report.log + " ".join(f"{d.file} {d.message}" for d in art.report.diagnostics)
        # the build's sandbox covers the project's dot-files (policy.dot_entries): the compiler cannot open the
        # .env at all; where a file it reads is no source of the project, its lines are withheld from the log
        assert not art.report.ok and (WITHHELD in art.report.log or ".env: Permission denied" in text), text
    finally:
        home_key.unlink()


@pytest.mark.nvcc
def test_evaluator_builds_the_sample_project(tmp_path):
    task = load_task(ROOT / "samples" / "project" / "src" / "l2norm.cu")
    with Evaluator(workers=1, cache_dir=tmp_path / "cache") as ev:
        r = ev.evaluate(task, task.root_source(), FAST)
        gpu = bool(ev.hardware_info().get("is_gpu"))
    assert r.compile is not None and r.compile.ok, r.summary()
    assert r.status is (Status.OK if gpu else Status.NOT_RUN), r.summary()


# ---------------------------------------------------------------------------- Python
@pytest.fixture(scope="module")
def ev(tmp_path_factory):
    with Evaluator(workers=1, cache_dir=tmp_path_factory.mktemp("cache")) as e:
        yield e


def test_triton_candidate_imports_a_sibling_module(ev, tmp_path):
    (tmp_path / "mycfg.py").write_text("BLOCK_SIZE = 64\n")
    src = (ROOT / "samples" / "triton" / "softmax.py").read_text()
    src = src.replace("import torch\n", "import torch\nimport mycfg\n", 1).replace("BLOCK_SIZE=128", "BLOCK_SIZE=mycfg.BLOCK_SIZE")
    (tmp_path / "softmax.py").write_text(src)
    shutil.copy(ROOT / "samples" / "triton" / "softmax.harness.py", tmp_path / "softmax.harness.py")
    task = load_task(tmp_path / "softmax.py")
    r = ev.evaluate(task, task.root_source(), FAST)
    assert r.status is Status.OK, r.summary() + r.output


def test_triton_package_candidate_uses_relative_imports_and_replaces_only_its_module(ev, tmp_path):
    shutil.copytree(ROOT / "samples" / "triton_pkg", tmp_path / "p")
    task = load_task(tmp_path / "p" / "rowops" / "rms_norm.py")
    r = ev.evaluate(task, task.root_source(), FAST)
    assert r.status is Status.OK, r.summary() + r.output
    # a candidate that breaks the user's module on purpose: its own code runs, not the file on disk
    wrong = task.root_source().replace("x * inv * w", "x * inv")
    r = ev.evaluate(task, wrong, FAST)
    assert r.status is Status.INCORRECT, r.summary()
    # the neighbours are the user's files on disk: a changed config is seen
    cfg = tmp_path / "p" / "rowops" / "config.py"
    cfg.write_text(cfg.read_text().replace("EPS = 1e-6", "EPS = 0.5"))
    r = ev.evaluate(task, task.root_source() + "\n# v2\n", FAST)
    assert r.status is Status.INCORRECT, r.summary()


def test_a_kernel_named_like_a_stdlib_module_does_not_replace_it(ev, tmp_path):
    src = (ROOT / "samples" / "triton" / "softmax.py").read_text()
    (tmp_path / "random.py").write_text(src)
    h = (ROOT / "samples" / "triton" / "softmax.harness.py").read_text()
    (tmp_path / "random.harness.py").write_text(h)
    task = load_task(tmp_path / "random.py")
    r = ev.evaluate(task, task.root_source(), FAST)
    assert r.status is Status.OK, r.summary() + r.output


@pytest.mark.nvcc
def test_a_header_elsewhere_in_the_repository_is_visible_to_the_sandboxed_build(tmp_path):
    """No compile_commands.json: ``#include "../common/u.cuh"`` from the kernel's folder still builds,
    though the repository lies under a folder the sandbox hides (/tmp here)."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "common").mkdir()
    (repo / "common" / "u.cuh").write_text("#pragma once\n#define FACTOR 4\n")
    (repo / "kernels").mkdir()
    k = repo / "kernels" / "k.cu"
    k.write_text('#include "../common/u.cuh"\n__global__ void k(float* x) { x[0] *= FACTOR; }\n'
                 'extern "C" void launch(float* x) { k<<<1, 1>>>(x); }\n')
    (repo / "kernels" / "k.harness.py").write_text(HARNESS)
    art = _builder(tmp_path).build(k.read_text(), task=load_task(k))
    assert art.report.ok, art.report.log
