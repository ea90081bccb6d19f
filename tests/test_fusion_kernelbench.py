"""The built-in team on KernelBench level-2 models (benchmarks/kernelbench/level2, at small sizes): the
first plan rewrites ModelNew as fused Triton, the real evaluator finds it correct (CPU: Triton
interpreter), the library operation stays a PyTorch call, and the epilogue takes few kernels.
Training mode (batch statistics, running statistics updated) is checked directly. Every level-2
model of benchmarks/kernelbench gets a plan."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from stark_lsp.agents.base import AgentContext
from stark_lsp.context_window import Window, WindowEntry
from stark_lsp.agents.builtin import fusion, make_builtin_team
from stark_lsp.agents.builtin.kb_lowering import STARTS, implement_lowering, instruction_for
from stark_lsp.evaluate.evaluator import Evaluator
from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.evaluate.result import Status
from stark_lsp.markers.syntax import apply_replacements, parse_markers
from stark_lsp.tasks.spec import load_task

sys.path.insert(0, str(Path(__file__).parent))
from kb_small import LEVEL2_DIR, LEVEL2_MODELS, compare, with_sizes  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FAST = EvalOptions(trials=2, cpu_reps=1, reps=20, time_budget_s=0.5, run_timeout_s=300)

# file -> (small sizes, Triton kernels in the fused ModelNew; a BatchNorm's statistics kernel runs in training only)
SMALL = {
    "1_Conv2D_ReLU_BiasAdd": ({"batch_size": 2, "in_channels": 3, "out_channels": 8, "height": 10, "width": 10}, 1),
    "11_ConvTranspose2d_BatchNorm_Tanh_MaxPool_GroupNorm": (
        {"batch_size": 2, "in_channels": 4, "out_channels": 16, "height": 9, "width": 9, "groups": 4,
         "num_groups": 4}, 4),
    "18_Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp": ({"batch_size": 5, "in_features": 40, "out_features": 30}, 5),
    "23_Conv3d_GroupNorm_Mean": ({"batch_size": 2, "in_channels": 3, "out_channels": 8, "D": 6, "H": 6, "W": 6,
                                  "num_groups": 4}, 2),
    "28_BMM_InstanceNorm_Sum_ResidualAdd_Multiply": ({"batch_size": 4, "in_features": 24, "out_features": 40}, 2),
    "38_ConvTranspose3d_AvgPool_Clamp_Softmax_Multiply": (
        {"batch_size": 2, "in_channels": 3, "out_channels": 4, "depth": 4, "height": 6, "width": 6}, 5),
    "55_Matmul_MaxPool_Sum_Scale": ({"batch_size": 6, "in_features": 32, "out_features": 40}, 3),
    "89_ConvTranspose3d_MaxPool_Softmax_Subtract_Swish_Max": (
        {"batch_size": 2, "in_channels": 3, "out_channels": 6, "depth": 4, "height": 6, "width": 6}, 3),
    "92_Conv2d_GroupNorm_Tanh_HardSwish_ResidualAdd_LogSumExp": (
        {"batch_size": 2, "in_channels": 3, "out_channels": 16, "height": 9, "width": 9, "groups": 4}, 2),
    "97_Matmul_BatchNorm_BiasAdd_Divide_Swish": ({"batch_size": 8, "in_features": 24, "out_features": 40}, 2),
}

assert set(SMALL) == set(LEVEL2_MODELS)  # every test model has its small sizes


def small_source(name: str) -> str:
    return with_sizes((LEVEL2_DIR / f"{name}.py").read_text(), SMALL[name][0])


def _ctx(task, source, seed=0):
    return AgentContext(task, 0, source, "1.00x", "", Window(history=(WindowEntry("root", 0, "1.00x", source),)), seed=seed)


@pytest.fixture(scope="module")
def ev(tmp_path_factory):
    with Evaluator(workers=1, cache_dir=tmp_path_factory.mktemp("cache")) as e:
        yield e


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", sorted(SMALL, key=lambda n: int(n.split("_")[0])))
def test_level2_model_is_fused_and_correct(tmp_path, ev, name):
    pytest.importorskip("triton")
    path = tmp_path / f"{name}.py"
    path.write_text(small_source(name))
    task = load_task(path)
    team = make_builtin_team()
    root = task.root_source()
    ctx = _ctx(task, root)
    plan = team.planner.plan(ctx)
    (marker,) = parse_markers(plan.marked_source)
    assert marker.instruction.startswith("rewrite ModelNew in Triton: fused: ")
    new = apply_replacements(plan.marked_source, team.coder.code(ctx, plan.marked_source).replacements)
    r = ev.evaluate(task, new, FAST)
    assert r.status is Status.OK, r.summary() + "\n" + r.output[-3000:]
    fused = fusion.analyse(root)
    assert len(fused.program.kernels) == SMALL[name][1], fused.describe()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", ["11_ConvTranspose2d_BatchNorm_Tanh_MaxPool_GroupNorm",
                                  "28_BMM_InstanceNorm_Sum_ResidualAdd_Multiply",
                                  "97_Matmul_BatchNorm_BiasAdd_Divide_Swish"])
def test_training_mode_uses_batch_statistics_and_updates_running_ones(name):
    pytest.importorskip("triton")
    source = small_source(name)
    compare(source, fusion.render(source), train=True)


@pytest.mark.timeout(600)
def test_every_fused_starting_point_is_correct(tmp_path):
    pytest.importorskip("triton")
    source = small_source("92_Conv2d_GroupNorm_Tanh_HardSwish_ResidualAdd_LogSumExp")
    what = fusion.analyse(source).describe()
    for start in STARTS["fused"][1:]:
        code = implement_lowering(source + "\n\nclass ModelNew(Model):\n    pass\n", instruction_for(what, start))
        compare(source, code)


def test_the_library_operation_stays_a_pytorch_call():
    fused = fusion.analyse(small_source("1_Conv2D_ReLU_BiasAdd"))
    assert fused.program.libs == ["self.conv"]
    code = fusion.render(small_source("1_Conv2D_ReLU_BiasAdd"))
    forward = code[code.index("class ModelNew"):]
    assert "self.conv(x)" in forward and "torch.relu" not in forward
    # cuDNN's algorithm for the convolution: a switch the search turns on (tunables_triton.SWITCHES)
    assert fused.program.convolution and "\nCUDNN_BENCHMARK = False\ntorch.backends.cudnn.benchmark = CUDNN_BENCHMARK\n" in code
    assert "CUDNN_BENCHMARK" not in fusion.render(small_source("97_Matmul_BatchNorm_BiasAdd_Divide_Swish"))


@pytest.mark.parametrize("level", [1, 2])
def test_kernelbench_coverage(level):
    """Every level-2 model gets a fused plan; level 1: all but the library-only ones (convolutions,
    plain matmuls, which have their own template or are left to an LLM team)."""
    folder = ROOT / "benchmarks" / "kernelbench" / f"level{level}"
    files = sorted(folder.glob("*.py"))
    assert len(files) == 100
    refused = {}
    for f in files:
        source = f.read_text()
        try:
            code = fusion.render(source)
        except fusion.NotRecognized as e:
            refused[f.name] = str(e)
            continue
        ast.parse(source + "\n\n" + code)
    if level == 2:
        assert refused == {}
    else:
        assert all("only library operations" in why for why in refused.values()), refused
        assert len(refused) <= 56, sorted(refused)


@pytest.mark.timeout(900)
def test_a_short_search_tunes_the_fused_kernels_and_every_candidate_is_correct(tmp_path, ev):
    """After the rewrite, the usual tunables (BLOCK_<k>, BLOCK_R_<k>, num_warps) move; every candidate
    the built-in team makes stays correct."""
    pytest.importorskip("triton")
    from stark_lsp.search import Search, SearchConfig, TreeStore
    from stark_lsp.search.node import ROOT

    path = tmp_path / "m92.py"
    path.write_text(small_source("92_Conv2d_GroupNorm_Tanh_HardSwish_ResidualAdd_LogSumExp"))
    task = load_task(path)
    with TreeStore.open(tmp_path / ".stark" / "tree.sqlite") as store:
        Search(task, store, ev, make_builtin_team(), SearchConfig(budget=8, policy="greedy", concurrency=1,
                                                                   eval_options=FAST, retime_top=1,
                                                                   retime_rounds=2)).run()
        nodes = [n for n in store.nodes(task.task_id()) if n.kind != ROOT]
    evaluated = [n for n in nodes if n.evaluated]
    assert len(evaluated) >= 6 and all(n.status == "ok" for n in evaluated), [(n.summary, n.status) for n in nodes]
    summaries = [n.summary for n in evaluated]
    assert any(s.startswith("rewrite ModelNew") for s in summaries) and any(s.startswith("set ") for s in summaries)
    assert sum(1 for n in nodes if n.retimed) == 1
