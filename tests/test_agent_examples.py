"""Issue 23, 8a: the one-shot example of each backend is a correct candidate of this project's format
(judged by the evaluator: on the CPU for Triton and KernelBench, on a GPU for CUDA too), and each
agent that writes code sees the example of its task's backend alone."""

from __future__ import annotations

import pytest

from llm_trees import CPU_HARDWARE, HARDWARE, sample_task, sample_tree
from stark_lsp.agents.llm import examples, prompts
from stark_lsp.evaluate import launcher_check
from stark_lsp.evaluate.evaluator import Evaluator
from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.evaluate.result import Status
from stark_lsp.markers.anchors import parse_anchored, place_markers
from stark_lsp.search.context import build_context
from stark_lsp.tasks.spec import load_task

pytestmark = pytest.mark.timeout(300)
FAST = EvalOptions(trials=2, cpu_reps=1, reps=20, time_budget_s=0.5, run_timeout_s=120)
HARNESS = '''import torch

def reference(x):
    return torch.relu(x)

def get_inputs():
    return [torch.randn(3, 1000)]
'''
CUDA_RUN = '''
def run(lib, x):
    y = torch.empty_like(x)
    lib.relu(x, y, x.numel())
    return y
'''
KB_TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(3, 1000)]


def get_init_inputs():
    return []
'''


def task_files(tmp_path, kind):
    if kind == "cuda":
        (tmp_path / "relu.cu").write_text(examples.CUDA)
        (tmp_path / "relu.harness.py").write_text(HARNESS + CUDA_RUN)
        return load_task(tmp_path / "relu.cu")
    if kind == "triton":
        (tmp_path / "relu.py").write_text(examples.TRITON)
        (tmp_path / "relu.harness.py").write_text(HARNESS + 'ENTRY = "relu"\n')
        return load_task(tmp_path / "relu.py")
    (tmp_path / "relu_kb.py").write_text(KB_TASK)
    return load_task(tmp_path / "relu_kb.py")


@pytest.fixture(scope="module")
def ev(tmp_path_factory):
    with Evaluator(workers=1, cache_dir=tmp_path_factory.mktemp("cache")) as e:
        yield e


@pytest.mark.parametrize("kind", ["triton", "kernelbench", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_each_example_is_a_correct_candidate(kind, ev, tmp_path):
    task = task_files(tmp_path, kind)
    source = examples.EXAMPLES[kind][1]
    r = ev.evaluate(task, source, FAST)
    assert r.status is Status.OK, r.summary()


def test_the_cuda_example_fits_the_harness_convention():
    assert launcher_check.problems(examples.CUDA, HARNESS + CUDA_RUN) == []
    assert examples.CUDA.count("__global__") == 1 and 'extern "C" void relu(' in examples.CUDA


def test_examples_are_short():
    for kind, (_, code) in examples.EXAMPLES.items():
        assert len(code.strip().splitlines()) <= 40, kind


def prompts_of(kind, hw=HARDWARE, budget=12000):
    task = sample_task(kind)
    nodes = sample_tree(task, gpu=bool(hw.get("is_gpu")))
    plan = {"cuda": "MARKER t lines 6-6: set THREADS to 512",
            "triton": "MARKER launch at `softmax_kernel[(rows,)]`: BLOCK_SIZE=2048",
            "kernelbench": "MARKER model lines 29-30: write forward with a Triton kernel"}[kind]
    marked = place_markers(nodes[1].source, parse_anchored(plan), task.language)
    common = dict(hardware_info=hw, attempt=4, token_budget=budget)
    plan_ctx = build_context("plan", task, nodes, 2, **common)
    code_ctx = build_context("code", task, nodes, 2, plan=(marked, "the plan"), **common)
    debug_ctx = build_context("debug", task, nodes, 3, **common)
    return (prompts.plan_messages(plan_ctx)[0]["content"], prompts.code_messages(code_ctx, marked)[0]["content"],
            prompts.debug_messages(debug_ctx)[0]["content"])


@pytest.mark.parametrize("kind", ["cuda", "triton", "kernelbench"])
def test_the_code_agent_sees_its_backends_example_alone(kind):
    plan, code, debug = prompts_of(kind)
    mine = examples.example_for(kind)
    assert code.count(mine) == 1 and plan.count(mine) == 1  # the Plan agent too, where the budget has room
    assert mine not in debug
    others = [examples.EXAMPLES[k][1] for k in examples.EXAMPLES if k != kind]
    assert not any(o.strip() in code or o.strip() in plan for o in others)
    if kind == "triton":
        assert "__global__" not in code and "load_inline" not in code


def test_the_plan_agent_drops_the_example_when_the_budget_is_tight():
    plan, code, _ = prompts_of("cuda", budget=3000)
    assert examples.CUDA.strip() not in plan and examples.CUDA.strip() in code


def test_the_kernelbench_root_gets_a_write_the_kernels_first_note():
    task = sample_task("kernelbench")
    nodes = sample_tree(task)
    on_root = prompts.plan_messages(build_context("plan", task, nodes, 1, hardware_info=HARDWARE, attempt=4))
    assert prompts.KERNELBENCH_STUB_NOTE in on_root[1]["content"]
    on_child = prompts.plan_messages(build_context("plan", task, nodes, 2, hardware_info=HARDWARE, attempt=4))
    assert prompts.KERNELBENCH_STUB_NOTE not in on_child[1]["content"]  # ModelNew has its own forward there
    cuda = sample_task("cuda")
    on_cuda_root = prompts.plan_messages(build_context("plan", cuda, sample_tree(cuda), 1, hardware_info=HARDWARE))
    assert prompts.KERNELBENCH_STUB_NOTE not in on_cuda_root[1]["content"]


def test_without_a_gpu_no_agent_is_offered_cuda():
    for agent_system in prompts_of("kernelbench", hw=CPU_HARDWARE):
        assert "load_inline" not in agent_system and "nvcc" not in agent_system
    task = sample_task("kernelbench")
    ctx = build_context("plan", task, sample_tree(task, gpu=False), 2, hardware_info=CPU_HARDWARE, attempt=4)
    user = prompts.plan_messages(ctx)[1]["content"]
    assert "load_inline" not in user and "nvcc" not in user and "no GPU here, so no CUDA" in user
    gpu = build_context("plan", task, sample_tree(task), 2, hardware_info=HARDWARE, attempt=4)
    user = prompts.plan_messages(gpu)[1]["content"]
    assert "inline CUDA through load_inline" in user and "nvcc 13.0" in user  # a GPU: still offered
