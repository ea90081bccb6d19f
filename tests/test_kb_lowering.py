"""The built-in team on KernelBench tasks: single operations get their own template, everything
else (elementwise expressions included) the fused kernels; the result agrees with the reference in
the real evaluator (CPU: Triton interpreter; unchanged on a GPU). Multi-statement (level 2) models:
tests/test_fusion_*.py."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from stark_lsp.agents.base import AgentContext, AgentError
from stark_lsp.context_window import Window, WindowEntry
from stark_lsp.agents.builtin import fusion, make_builtin_team
from stark_lsp.agents.builtin.kb_ast import NotRecognized
from stark_lsp.agents.builtin.kb_forward import analyse
from stark_lsp.agents.builtin.kb_lowering import STARTS, implement_lowering, instruction_for, modelnew_stub
from stark_lsp.agents.builtin.tunables import find_tunables
from stark_lsp.evaluate.evaluator import Evaluator
from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.evaluate.result import Status
from stark_lsp.markers.syntax import apply_replacements, parse_markers
from stark_lsp.source_digest import NOTHING_NEW, source_digest
from stark_lsp.tasks.spec import load_task

FAST = EvalOptions(trials=2, cpu_reps=1, reps=20, time_budget_s=0.5, run_timeout_s=120)


def kb_file(tmp_path: Path, name: str, init: str, forward: str, inputs: str, init_inputs: str = "[]",
            params: str = "x") -> Path:
    body = textwrap.indent(textwrap.dedent(init), " " * 8)
    text = (
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
        "class Model(nn.Module):\n"
        "    def __init__(self, *args):\n"
        "        super().__init__()\n"
        f"{body}\n"
        f"    def forward(self, {params}):\n"
        f"        return {forward}\n\n\n"
        f"def get_inputs():\n    return {inputs}\n\n\n"
        f"def get_init_inputs():\n    return {init_inputs}\n"
    )
    p = tmp_path / f"{name}.py"
    p.write_text(text)
    return p


CASES = {  # name: (init, forward, inputs, init_inputs, params, (kind, op name))
    "relu": ("pass\n", "torch.relu(x)", "[torch.randn(7, 301)]", "[]", "x", ("elementwise", "relu")),
    "gelu_tanh": ("pass\n", 'F.gelu(x, approximate="tanh")', "[torch.randn(1000)]", "[]", "x", ("elementwise", "gelu")),
    "sigmoid_method": ("pass\n", "x.sigmoid()", "[torch.randn(33, 5)]", "[]", "x", ("elementwise", "sigmoid")),
    "tanh_module": ("self.act = nn.Tanh()\n", "self.act(x)", "[torch.randn(513)]", "[]", "x", ("elementwise", "tanh")),
    "silu": ("pass\n", "F.silu(x)", "[torch.randn(2, 3, 50)]", "[]", "x", ("elementwise", "silu")),
    "gelu_module": ("self.act = nn.GELU()\n", "self.act(x)", "[torch.randn(999)]", "[]", "x", ("elementwise", "gelu")),
    "leaky_attr": ("self.slope = args[0]\n", "F.leaky_relu(x, negative_slope=self.slope)", "[torch.randn(300)]",
                   "[0.2]", "x", ("elementwise", "leaky_relu")),
    "elu_module": ("self.act = nn.ELU(alpha=0.5)\n", "self.act(x)", "[torch.randn(300)]", "[]", "x",
                   ("elementwise", "elu")),
    "softplus": ("pass\n", "F.softplus(x)", "[torch.randn(500) * 15]", "[]", "x", ("elementwise", "softplus")),
    "selu": ("pass\n", "torch.selu(x)", "[torch.randn(500)]", "[]", "x", ("elementwise", "selu")),
    "hardtanh": ("pass\n", "F.hardtanh(x, min_val=-0.5, max_val=0.75)", "[torch.randn(500)]", "[]", "x",
                 ("elementwise", "hardtanh")),
    "clamp_min": ("pass\n", "torch.clamp(x, min=-0.1)", "[torch.randn(500)]", "[]", "x", ("elementwise", "clamp")),
    "hardsigmoid": ("pass\n", "F.hardsigmoid(x)", "[torch.randn(500) * 4]", "[]", "x", ("elementwise", "hardsigmoid")),
    "softsign": ("pass\n", "F.softsign(x)", "[torch.randn(500)]", "[]", "x", ("elementwise", "softsign")),
    "swish_expr": ("pass\n", "x * torch.sigmoid(x)", "[torch.randn(500)]", "[]", "x",
                   ("elementwise", "expression (sigmoid)")),
    "two_inputs": ("self.alpha = args[0]\n", "torch.tanh(a * self.alpha - b / 2) ** 2 + 1", "[torch.randn(40, 9), torch.randn(40, 9)]",
                   "[1.5]", "a, b", ("elementwise", "expression (tanh)")),
    "sum_dim0": ("self.dim = args[0]\n", "torch.sum(x, dim=self.dim, keepdim=True)", "[torch.randn(37, 19, 3)]",
                 "[0]", "x", ("reduce", "sum")),
    "mean_last": ("pass\n", "x.mean(-1)", "[torch.randn(9, 1500)]", "[]", "x", ("reduce", "mean")),
    "amax_mid": ("pass\n", "torch.amax(x, dim=1)", "[torch.randn(4, 70, 33)]", "[]", "x", ("reduce", "amax")),
    "amin_mid": ("pass\n", "torch.amin(x, 1, True)", "[torch.randn(4, 70, 33)]", "[]", "x", ("reduce", "amin")),
    "softmax_last": ("pass\n", "torch.softmax(x, dim=-1)", "[torch.randn(6, 2100) * 5]", "[]", "x", ("softmax", "softmax")),
    "softmax_first": ("pass\n", "F.softmax(x, dim=0)", "[torch.randn(50, 8)]", "[]", "x", ("softmax", "softmax")),
    "layernorm": ("self.ln = nn.LayerNorm(args[0])\n", "self.ln(x)", "[torch.randn(3, 5, 40, 41) + 2]",
                  "[(40, 41)]", "x", ("layernorm", "layernorm")),
    "layernorm_plain": ("self.norm = nn.LayerNorm(args[0], elementwise_affine=False)\n", "self.norm(x)",
                        "[torch.randn(4, 300)]", "[300]", "x", ("layernorm", "layernorm")),
    "layernorm_chunks": ("self.ln = nn.LayerNorm(args[0])\n", "self.ln(x)",  # 3 chunks with different means
                         "[torch.randn(2, 9000) + torch.linspace(0, 6, 9000)]", "[9000]", "x", ("layernorm", "layernorm")),
    "log_softmax": ("pass\n", "torch.log_softmax(x, dim=1)", "[torch.randn(5, 3000) * 3]", "[]", "x",
                    ("softmax", "log_softmax")),
    "max_values": ("self.dim = args[0]\n", "torch.max(x, dim=self.dim)[0]", "[torch.randn(6, 50, 7)]", "[1]", "x",
                   ("reduce", "amax")),
    "min_method": ("pass\n", "x.min(dim=-1, keepdim=True).values", "[torch.randn(6, 50)]", "[]", "x",
                   ("reduce", "amin")),
    "bmm": ("pass\n", "torch.bmm(a, b)", "[torch.randn(3, 20, 33), torch.randn(3, 33, 17)]", "[]", "a, b",
            ("matmul", "bmm")),
    "matmul_batch_by_matrix": ("pass\n", "torch.matmul(a, b)", "[torch.randn(2, 20, 33), torch.randn(33, 17)]", "[]",
                               "a, b", ("matmul", "matmul")),
    "matmul": ("pass\n", "torch.matmul(A, B)", "[torch.randn(70, 45), torch.randn(45, 33)]", "[]", "A, B",
               ("matmul", "matmul")),
    "matmul_op": ("pass\n", "a @ b", "[torch.randn(16, 32), torch.randn(32, 20)]", "[]", "a, b", ("matmul", "matmul")),
}


def _ctx(task, source, seed=0, seen=frozenset()):
    return AgentContext(task, 0, source, "1.00x", "", Window(history=(WindowEntry("root", 0, "1.00x", source),)), seed=seed,
                        seen=set(seen))


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_is_recognized(tmp_path, name):
    init, fwd, inputs, init_inputs, params, (kind, op_name) = CASES[name]
    source = kb_file(tmp_path, name, init, fwd, inputs, init_inputs, params).read_text()
    if kind == "elementwise":  # no template of its own: one fused elementwise kernel
        with pytest.raises(NotRecognized):
            analyse(source)
        fused = fusion.analyse(source)
        assert [k.kind for k in fused.program.kernels] == ["pointwise"]
        return
    op = analyse(source)
    assert (op.kind, op.name) == (kind, op_name)


@pytest.mark.parametrize("forward,params,reason", [
    ("torch.relu(x)", "x", "not a single reduction, softmax, LayerNorm or matrix product"),
    ("torch.relu(x) @ w", "x, w", "not applied to forward's own input"),
    ("torch.sum(torch.relu(x), dim=1)", "x", "not applied to forward's own input"),
    ("torch.sum(x, dim=(0, 1))", "x", "dim is not a literal"),
    ("torch.sum(x)", "x", "without dim="),
    ("torch.cumsum(x, dim=1)", "x", "not a single reduction"),
])
def test_single_operation_templates_say_why_not(tmp_path, forward, params, reason):
    src = kb_file(tmp_path, "other", "pass\n", forward, "[]", params=params).read_text()
    with pytest.raises(NotRecognized, match=reason):
        analyse(src)


@pytest.fixture(scope="module")
def ev(tmp_path_factory):
    with Evaluator(workers=1, cache_dir=tmp_path_factory.mktemp("cache")) as e:
        yield e


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(CASES))
def test_lowered_model_is_correct_and_launches_its_kernel(tmp_path, ev, name):
    pytest.importorskip("triton")
    init, fwd, inputs, init_inputs, params, _ = CASES[name]
    task = load_task(kb_file(tmp_path, name, init, fwd, inputs, init_inputs, params))
    team = make_builtin_team()
    root = task.root_source()
    ctx = _ctx(task, root)
    plan = team.planner.plan(ctx)
    (marker,) = parse_markers(plan.marked_source)
    assert marker.instruction.startswith("rewrite ModelNew in Triton")
    new = apply_replacements(plan.marked_source, team.coder.code(ctx, plan.marked_source).replacements)
    assert "@triton.jit" in new and modelnew_stub(new) is None
    r = ev.evaluate(task, new, FAST)
    assert r.status is Status.OK, r.summary() + "\n" + r.output[-3000:]
    # what comes next is ordinary tuning of the new kernels
    names = {t.name for t in find_tunables(new, "python")}
    assert "num_warps" in names and any("BLOCK" in n or "SIZE" in n for n in names), names
    tuned = team.planner.plan(_ctx(task, new, seed=1))
    assert "rewrite ModelNew" not in tuned.summary


def test_a_model_it_cannot_lower_is_left_to_an_llm_team(tmp_path):
    task = load_task(kb_file(tmp_path, "conv", "self.c = nn.Conv2d(3, 8, 3)\n", "self.c(x)", "[torch.randn(1, 3, 8, 8)]"))
    with pytest.raises(AgentError, match=f"{NOTHING_NEW}.*only library operations.*self.c.*LLM team"):
        make_builtin_team().planner.plan(_ctx(task, task.root_source()))


def test_each_starting_point_is_offered_once_then_nothing_new(tmp_path):
    init, fwd, inputs, init_inputs, params, _ = CASES["relu"]
    task = load_task(kb_file(tmp_path, "relu", init, fwd, inputs, init_inputs, params))
    team = make_builtin_team()
    root = task.root_source()
    seen = {source_digest(root)}
    summaries = []
    for seed in range(len(STARTS["fused"])):
        ctx = _ctx(task, root, seed=seed, seen=seen)
        plan = team.planner.plan(ctx)
        summaries.append(plan.summary)
        seen.add(source_digest(apply_replacements(plan.marked_source, team.coder.code(ctx, plan.marked_source).replacements)))
    assert summaries[0] == "rewrite ModelNew in Triton: fused: 1 fused Triton kernel (relu)"
    assert len(set(summaries)) == len(STARTS["fused"]) and "start with BLOCK=2048, BLOCK_R=2048, num_warps=8" in str(summaries)
    with pytest.raises(AgentError, match=NOTHING_NEW):
        team.planner.plan(_ctx(task, root, seen=seen))


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", ["silu", "sum_dim0", "mean_last", "softmax_last", "layernorm_chunks", "matmul"])
def test_every_starting_point_is_correct(tmp_path, ev, name):
    init, fwd, inputs, init_inputs, params, (kind, _) = CASES[name]
    task = load_task(kb_file(tmp_path, name, init, fwd, inputs, init_inputs, params))
    fused = kind == "elementwise"
    what = fusion.analyse(task.root_source()).describe() if fused else analyse(task.root_source()).describe()
    for start in STARTS["fused" if fused else kind][1:]:
        code = implement_lowering(task.root_source(), instruction_for(what, start))
        for key, value in start.items():
            if fused:  # every fused kernel starts from these defaults
                names = {"BLOCK": "BLOCK_", "BLOCK_R": "BLOCK_R_", "BLOCK_K": "BLOCK_K_"}
                if key == "num_warps":
                    assert f"num_warps={value})" in code
                elif key in names:
                    found = [t for t in find_tunables(code, "python") if t.name.startswith(names[key])
                             and t.name[len(names[key]):].isdigit()]
                    assert all(t.value == value for t in found), (key, code)
                continue
            assert any(t.name == key and t.value == value for t in find_tunables(code, "python")), (key, code)
        source = task.root_source().replace("class ModelNew(Model):\n    pass\n", code)
        r = ev.evaluate(task, source, FAST)
        assert r.status is Status.OK, (start, r.summary(), r.output[-2000:])


def test_the_kernelbench_samples_are_all_lowerable():
    samples = Path(__file__).resolve().parents[1] / "samples" / "kernelbench"
    for name in ("gelu", "layernorm", "matmul", "relu", "sum_dim"):
        task = load_task(samples / f"{name}.py")
        assert modelnew_stub(task.root_source()) is not None
        plan = make_builtin_team().planner.plan(_ctx(task, task.root_source()))
        assert plan.summary.startswith("rewrite ModelNew in Triton"), name
