"""The mistuned Triton samples, before and after a built-in plan, agree with
their reference under the Triton interpreter (CPU, STARK_SMALL=1 shapes)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stark_lsp.agents.base import AgentContext
from stark_lsp.context_window import Window, WindowEntry
from stark_lsp.agents.builtin import make_builtin_team
from stark_lsp.markers.syntax import apply_replacements
from stark_lsp.tasks.spec import load_task

SAMPLES = Path(__file__).resolve().parent.parent / "samples" / "mistuned"

CHECK = r"""
import importlib.util, json, sys, torch
def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod); return mod
harness = load(sys.argv[1], "harness")
errors = []
for i, path in enumerate(sys.argv[2:]):
    kernel = load(path, f"kernel{i}")
    torch.manual_seed(0)
    inputs = harness.get_inputs()
    got = getattr(kernel, harness.ENTRY)(*inputs)
    want = harness.reference(*inputs)
    errors.append(float((got - want).abs().max()))
print(json.dumps(errors))
"""


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ["swish_add.py", "row_softmax.py"])
def test_triton_sample_and_tuned_variants_are_correct(name, tmp_path):
    pytest.importorskip("triton")
    task = load_task(SAMPLES / name)
    root = task.root_source()
    team = make_builtin_team()
    paths = [str(task.path)]
    for seed in range(3):
        ctx = AgentContext(task, 0, root, "1.00x", "", Window(history=(WindowEntry("root", 0, "1.00x", root),)), seed=seed)
        p = team.planner.plan(ctx)
        new = apply_replacements(p.marked_source, team.coder.code(ctx, p.marked_source).replacements)
        f = tmp_path / f"variant{seed}.py"
        f.write_text(new)
        paths.append(str(f))
    env = dict(os.environ, TRITON_INTERPRET="1", STARK_SMALL="1")
    out = subprocess.run([sys.executable, "-c", CHECK, str(task.harness), *paths], env=env,
                         capture_output=True, text=True, timeout=280)
    assert out.returncode == 0, out.stderr[-3000:]
    errors = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(errors) == 4 and max(errors) < 1e-5, errors


def test_harnesses_shrink_under_stark_small():
    env = dict(os.environ, STARK_SMALL="1")
    code = ("import importlib.util, sys, json\n"
            "sizes = []\n"
            "for p in sys.argv[1:]:\n"
            "    s = importlib.util.spec_from_file_location('h', p); m = importlib.util.module_from_spec(s); s.loader.exec_module(m)\n"
            "    sizes.append(sum(t.numel() for t in m.get_inputs()))\n"
            "print(json.dumps(sizes))\n")
    harnesses = sorted(str(p) for p in SAMPLES.glob("*.harness.py"))
    assert len(harnesses) == 4
    out = subprocess.run([sys.executable, "-c", code, *harnesses], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert max(json.loads(out.stdout)) <= 20000


@pytest.mark.nvcc
@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ["row_sum.cu", "bias_relu2d.cu"])
def test_cuda_sample_and_tuned_variants_compile(name, tmp_path):
    import shutil

    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on the PATH")
    task = load_task(SAMPLES / name)
    root = task.root_source()
    team = make_builtin_team()
    sources = [root]
    for seed in range(3):
        ctx = AgentContext(task, 0, root, "1.00x", "", Window(history=(WindowEntry("root", 0, "1.00x", root),)), seed=seed)
        p = team.planner.plan(ctx)
        sources.append(apply_replacements(p.marked_source, team.coder.code(ctx, p.marked_source).replacements))
    for i, src in enumerate(sources):
        f = tmp_path / f"v{i}.cu"
        f.write_text(src)
        out = subprocess.run([nvcc, "-arch=sm_90", "-c", str(f), "-o", str(tmp_path / f"v{i}.o")],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
