"""Which files become bench tasks, and the static checks --dry-run makes."""

from __future__ import annotations

import shutil
from pathlib import Path

from stark_lsp.bench.checks import check_task, extern_c_launchers
from stark_lsp.bench.discover import discover
from stark_lsp.tasks.spec import load_task

ROOT = Path(__file__).resolve().parents[1]
KB = ROOT / "samples" / "kernelbench"


def test_a_kernelbench_folder_is_taken_as_is(tmp_path):
    """Like a checkout of KernelBench's level1/: numbered task files, plus files that are not tasks."""
    level1 = tmp_path / "level1"
    level1.mkdir()
    shutil.copy(KB / "relu.py", level1 / "19_ReLU.py")
    shutil.copy(KB / "gelu.py", level1 / "26_GELU_.py")
    shutil.copy(KB / "relu_inline_new.py", level1 / "19_ReLU_new.py")  # a candidate, not a task
    (level1 / "__init__.py").write_text("")
    (level1 / "notes.txt").write_text("not python")
    (level1 / "helper.py").write_text("def f():\n    return 1\n")
    (level1 / "__pycache__").mkdir()
    (level1 / "__pycache__" / "x.py").write_text("class Model: pass\n")
    found = discover([level1])
    assert [t.path.name for t in found.tasks] == ["19_ReLU.py", "26_GELU_.py"]
    assert all(t.kind == "kernelbench" for t in found.tasks)
    reasons = {Path(s.path).name: s for s in found.skipped}
    assert set(reasons) == {"19_ReLU_new.py", "__init__.py", "helper.py"}
    assert "not a task" in reasons["helper.py"].reason and not reasons["helper.py"].quiet
    assert reasons["__init__.py"].quiet


def test_files_and_directories_mix_without_duplicates(tmp_path):
    found = discover([KB / "relu.py", KB, tmp_path / "missing.py"])
    names = [t.path.name for t in found.tasks]
    assert names.count("relu.py") == 1 and names[0] == "relu.py"
    assert any(s.reason == "no such file or directory" for s in found.skipped)


def test_harnesses_and_best_kernels_are_not_tasks(tmp_path):
    for f in ("swish_add.py", "swish_add.harness.py"):
        shutil.copy(ROOT / "samples" / "mistuned" / f, tmp_path / f)
    shutil.copy(ROOT / "samples" / "mistuned" / "swish_add.py", tmp_path / "swish_add.best.py")
    found = discover([tmp_path])
    assert [t.path.name for t in found.tasks] == ["swish_add.py"]
    assert {Path(s.path).name for s in found.skipped if s.quiet} == {"swish_add.harness.py", "swish_add.best.py"}


def test_samples_pass_and_broken_harnesses_are_caught(tmp_path):
    cu = tmp_path / "k.cu"
    cu.write_text('__global__ void k(float* x) {}\nextern "C" void launch(float* x, int n) { k<<<1, 32>>>(x); }\n')
    h = tmp_path / "k.harness.py"
    h.write_text("def reference(x):\n    return x\n\ndef get_inputs():\n    return []\n\n"
                 "def run(lib, x):\n    lib.launch(x, 1)\n    lib.other(x)\n    return x\n")
    assert check_task(load_task(cu)) == ['k.harness.py: calls lib.other, but k.cu has no extern "C" other']
    h.write_text("def get_inputs(:\n")
    assert "syntax error" in check_task(load_task(cu))[0]

    py = tmp_path / "t.py"
    py.write_text("import triton\n\n@triton.jit\ndef kern(x):\n    pass\n\ndef go(x):\n    return x\n")
    th = tmp_path / "t.harness.py"
    th.write_text("ENTRY = 'entry'\n\ndef get_inputs():\n    return []\n")
    problems = check_task(load_task(py))
    assert "t.harness.py: defines no reference(*inputs)" in problems
    assert "t.py: defines no entry function 'entry' (ENTRY in t.harness.py)" in problems
    th.write_text("ENTRY = 'go'\n\ndef reference(x):\n    return x\n\ndef get_inputs():\n    return []\n")
    assert check_task(load_task(py)) == []


def test_extern_c_launchers():
    src = 'extern "C" void a(float* x) {}\nextern "C" __host__ int b (int n) { return n; }\n__global__ void c() {}\n'
    assert extern_c_launchers(src) == {"a", "b"}
    assert extern_c_launchers('extern "C" {\nvoid a() {}\n}\n') is None  # names hidden in a block: not checked
