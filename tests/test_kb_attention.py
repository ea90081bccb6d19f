"""The flash-attention and fused cross-entropy templates (kb_attention, kb_cross_entropy): models
whose forward is one library call (refused before as "forward is only library operations") are
written in Triton and agree with the reference under the Triton interpreter (CPU, fp32, the task's
1e-4 tolerance); variants the templates do not write are refused with the reason."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from stark_lsp.agents.base import AgentContext, AgentError
from stark_lsp.agents.builtin import make_builtin_team
from stark_lsp.agents.builtin.kb_ast import NotRecognized, Unsupported
from stark_lsp.agents.builtin.kb_forward import analyse
from stark_lsp.agents.builtin.kb_lowering import STARTS, implement_lowering, instruction_for
from stark_lsp.agents.builtin.kb_triton import render
from stark_lsp.agents.builtin.tunables import find_tunables
from stark_lsp.context_window import Window, WindowEntry
from stark_lsp.evaluate.evaluator import Evaluator
from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.evaluate.result import Status
from stark_lsp.markers.syntax import apply_replacements, parse_markers
from stark_lsp.source_digest import NOTHING_NEW
from stark_lsp.tasks.spec import load_task

sys.path.insert(0, str(Path(__file__).parent))
from kb_small import _load, compare, with_sizes  # noqa: E402

L1 = Path(__file__).resolve().parents[1] / "benchmarks" / "kernelbench" / "level1"


def model(forward: str, inputs: str, init: str = "pass", params: str = "q, k, v", init_inputs: str = "[]") -> str:
    body = "\n".join("        " + line for line in forward.strip().splitlines())
    return ("import math\n\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
            "class Model(nn.Module):\n    def __init__(self, *args):\n        super().__init__()\n"
            f"        {init}\n\n    def forward(self, {params}):\n{body}\n\n\n"
            f"def get_inputs():\n    return {inputs}\n\n\ndef get_init_inputs():\n    return {init_inputs}\n")


def qkv(*shapes) -> str:
    return "[" + ", ".join(f"torch.randn{s}" for s in shapes) + "]"


ATTENTION = {  # name: (forward, inputs, init, init_inputs, what describe() says)
    "sdpa_4d_odd_head": ("return F.scaled_dot_product_attention(q, k, v)", qkv((2, 2, 37, 24), (2, 2, 37, 24), (2, 2, 37, 24)),
                         "pass", "[]", "not causal, scale 1/sqrt(head size)"),
    "sdpa_causal": ("return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)",
                    qkv((1, 3, 45, 16), (1, 3, 45, 16), (1, 3, 45, 16)), "pass", "[]", "causal,"),
    "sdpa_3d_cross_lengths": ("out = F.scaled_dot_product_attention(q, k, v)\nreturn out",
                              qkv((3, 20, 32), (3, 33, 32), (3, 33, 8)), "pass", "[]", "not causal"),
    "sdpa_causal_fewer_queries": ("return F.scaled_dot_product_attention(q, k, v, None, 0.0, True)",
                                  qkv((2, 30, 16), (2, 50, 16), (2, 50, 16)), "pass", "[]", "causal,"),
    "sdpa_more_queries_causal_attr": ("return F.scaled_dot_product_attention(q, k, v, is_causal=self.causal, scale=0.3)",
                                      qkv((2, 50, 8), (2, 21, 8), (2, 21, 8)), "self.causal = args[0]", "[True]",
                                      "causal if self.causal, scale 0.3"),
    "sdpa_wide_head": ("return F.scaled_dot_product_attention(q, k, v, is_causal=True)",
                       qkv((1, 1, 19, 160), (1, 1, 19, 160), (1, 1, 19, 160)), "pass", "[]", "causal"),
    "explicit": ("scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))\nattn = torch.softmax(scores, dim=-1)\n"
                 "return attn @ v", qkv((2, 4, 29, 16), (2, 4, 29, 16), (2, 4, 29, 16)), "pass", "[]",
                 "scale 1.0 / (math.sqrt(q.size(-1)))"),
    "explicit_causal_triu": (
        "L = q.size(-2)\ns = torch.matmul(q, k.transpose(-1, -2)) * self.scale\n"
        "mask = torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)\n"
        "s = s.masked_fill(mask, float('-inf'))\nreturn F.softmax(s, dim=-1) @ v",
        qkv((3, 40, 16), (3, 40, 16), (3, 40, 16)), "self.scale = args[0]", "[0.25]", "causal, scale (self.scale)"),
    "explicit_causal_tril_no_scale": (
        "mask = torch.tril(torch.ones(q.shape[-2], k.shape[-2])) == 0\n"
        "return torch.bmm(torch.softmax(torch.bmm(q, k.transpose(1, 2)).masked_fill(mask, -math.inf), dim=-1), v)",
        qkv((2, 23, 16), (2, 23, 16), (2, 23, 16)), "pass", "[]", "causal, scale 1.0"),
    "explicit_mT_method_softmax": ("return (0.5 * (q @ k.mT)).softmax(dim=-1) @ v",
                                   qkv((2, 17, 32), (2, 26, 32), (2, 26, 16)), "pass", "[]", "scale (0.5)"),
}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(ATTENTION))
def test_attention_agrees_with_the_reference(name):
    pytest.importorskip("triton")
    forward, inputs, init, init_inputs, says = ATTENTION[name]
    source = model(forward, inputs, init, init_inputs=init_inputs)
    op = analyse(source)
    assert op.kind == "attention" and says in op.describe(), op.describe()
    compare(source, render(op))


def test_kernelbench_sdpa_at_small_size():
    pytest.importorskip("triton")
    source = with_sizes((L1 / "97_ScaledDotProductAttention.py").read_text(),
                        {"batch_size": 1, "num_heads": 2, "sequence_length": 33, "embedding_dimension": 48})
    compare(source, render(analyse(source)))


def test_attention_in_half_precision():
    pytest.importorskip("triton")
    for dtype in ("float16", "bfloat16"):
        shape = f"(1, 2, 35, 32, dtype=torch.{dtype})"
        source = model("return F.scaled_dot_product_attention(q, k, v, is_causal=True)", qkv(shape, shape, shape))
        compare(source, render(analyse(source)), atol=1e-2, rtol=1e-2)


CROSS_ENTROPY = {  # name: (forward, inputs, init, params, what describe() says)
    "mean": ("return F.cross_entropy(x, t)", "[torch.randn(13, 1500) * 4, torch.randint(0, 1500, (13,))]", "pass",
             "reduction 'mean', ignore_index -100"),
    "sum_ignore_index": ("return torch.nn.functional.cross_entropy(x, t, ignore_index=3, reduction='sum')",
                         "[torch.randn(40, 77), torch.randint(0, 77, (40,)).index_fill(0, torch.tensor([0, 5, 7]), 3)]",
                         "pass", "reduction 'sum', ignore_index 3"),
    "mean_default_ignore": ("return F.cross_entropy(x, t)",
                            "[torch.randn(9, 33), torch.randint(0, 33, (9,)).index_fill(0, torch.tensor([2, 4]), -100)]",
                            "pass", "ignore_index -100"),
    "module_none": ("return self.loss(x, t)",
                    "[torch.randn(21, 1030), torch.randint(0, 1030, (21,)).index_fill(0, torch.tensor([1]), 2)]",
                    "self.loss = nn.CrossEntropyLoss(reduction='none', ignore_index=2)",
                    "reduction self.loss.reduction"),
    "module_class_dim_1": ("loss = self.ce(x, t)\nreturn loss", "[torch.randn(4, 10, 3, 5), torch.randint(0, 10, (4, 3, 5))]",
                           "self.ce = nn.CrossEntropyLoss()", "ignore_index self.ce.ignore_index"),
}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(CROSS_ENTROPY))
def test_cross_entropy_agrees_with_the_reference(name):
    pytest.importorskip("triton")
    forward, inputs, init, says = CROSS_ENTROPY[name]
    source = model(forward, inputs, init, params="x, t")
    op = analyse(source)
    assert op.kind == "cross_entropy" and says in op.describe(), op.describe()
    compare(source, render(op))


def test_kernelbench_cross_entropy_at_small_size():
    pytest.importorskip("triton")
    source = with_sizes((L1 / "95_CrossEntropyLoss.py").read_text(), {"batch_size": 7, "num_classes": 2100})
    compare(source, render(analyse(source)))


def test_probability_targets_are_a_one_line_error_at_run_time():
    pytest.importorskip("triton")
    import torch

    source = model("return F.cross_entropy(x, t)", "[]", params="x, t")
    ns = _load(source + "\n\n" + render(analyse(source)))
    with pytest.raises(ValueError, match="class-index targets, not class probabilities"):
        ns["ModelNew"]()(torch.randn(3, 4), torch.softmax(torch.randn(3, 4), dim=1))


@pytest.mark.parametrize("forward,init,params,reason", [
    ("return F.scaled_dot_product_attention(q, k, v, attn_mask=m)", "pass", "q, k, v, m", "with an attn_mask"),
    ("return F.scaled_dot_product_attention(q, k, v, dropout_p=0.1)", "pass", "q, k, v", "dropout_p other than"),
    ("return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)", "pass", "q, k, v", "enable_gqa"),
    ("return F.scaled_dot_product_attention(q, k, v, scale=torch.rand(1))", "pass", "q, k, v", "scale .* calls torch.rand"),
    ("return torch.softmax((q @ k.transpose(-2, -1)).masked_fill(q > 0, float('-inf')), dim=-1) @ v", "pass", "q, k, v",
     "mask other than the causal one"),
    ("return F.cross_entropy(x, t, label_smoothing=0.1)", "pass", "x, t", "with label smoothing"),
    ("return F.cross_entropy(x, t, weight=self.w)", "self.w = torch.ones(3)", "x, t", "with class weights"),
    ("return self.loss(x, t)", "self.loss = nn.CrossEntropyLoss(label_smoothing=0.2)", "x, t", "with label smoothing"),
    ("return self.loss(x, t)", "self.loss = nn.CrossEntropyLoss(torch.ones(3))", "x, t", "with class weights"),
])
def test_a_variant_the_templates_do_not_write_says_why(forward, init, params, reason):
    source = model(forward, "[]", init, params=params)
    with pytest.raises(Unsupported, match=reason):
        analyse(source)


@pytest.mark.parametrize("forward", ["torch.softmax(x, dim=0) @ w", "torch.softmax(x, dim=-1) @ w",
                                     "torch.softmax(x @ w * w, dim=-1) @ w", "torch.softmax(x @ w, dim=-1) @ w"])
def test_softmax_times_a_matrix_that_is_not_attention_is_left_to_the_fused_kernels(forward):
    source = model(f"return {forward}", "[]", params="x, w")
    with pytest.raises(NotRecognized) as caught:
        analyse(source)
    assert not isinstance(caught.value, Unsupported)


def _ctx(task, source):
    return AgentContext(task, 0, source, "1.00x", "", Window(history=(WindowEntry("root", 0, "1.00x", source),)),
                        seed=0, seen=set())


def test_the_planner_gives_the_templates_reason_in_one_line(tmp_path):
    path = tmp_path / "masked.py"
    path.write_text(model("return F.scaled_dot_product_attention(q, k, v, attn_mask=m)",
                          qkv((1, 4, 16), (1, 4, 16), (1, 4, 16), (4, 4)), params="q, k, v, m"))
    task = load_task(path)
    with pytest.raises(AgentError, match=f"{NOTHING_NEW}.*attn_mask: the flash-attention template") as caught:
        make_builtin_team().planner.plan(_ctx(task, task.root_source()))
    assert "\n" not in str(caught.value)


@pytest.fixture(scope="module")
def ev(tmp_path_factory):
    with Evaluator(workers=1, cache_dir=tmp_path_factory.mktemp("cache")) as e:
        yield e


FAST = EvalOptions(trials=2, cpu_reps=1, reps=20, time_budget_s=0.5, run_timeout_s=120)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name,kind", [("97_ScaledDotProductAttention", "attention"),
                                       ("95_CrossEntropyLoss", "cross_entropy")])
def test_the_team_rewrites_the_kernelbench_model_and_every_start_is_correct(tmp_path, ev, name, kind):
    pytest.importorskip("triton")
    sizes = {"batch_size": 2, "num_heads": 2, "sequence_length": 21, "embedding_dimension": 16} if kind == "attention" \
        else {"batch_size": 11, "num_classes": 300}
    path = tmp_path / f"{name}.py"
    path.write_text(with_sizes((L1 / f"{name}.py").read_text(), sizes))
    task = load_task(path)
    team = make_builtin_team()
    root = task.root_source()
    ctx = _ctx(task, root)
    plan = team.planner.plan(ctx)
    (marker,) = parse_markers(plan.marked_source)
    assert marker.instruction.startswith("rewrite ModelNew in Triton: flash attention" if kind == "attention"
                                         else "rewrite ModelNew in Triton: fused cross-entropy")
    new = apply_replacements(plan.marked_source, team.coder.code(ctx, plan.marked_source).replacements)
    r = ev.evaluate(task, new, FAST)  # the real evaluator (CPU: the Triton interpreter in its own process)
    assert r.status is Status.OK, r.summary() + "\n" + r.output[-3000:]
    names = {t.name for t in find_tunables(new, "python")}
    assert {"num_warps"} | ({"BLOCK_M", "BLOCK_N", "num_stages"} if kind == "attention" else {"BLOCK_C"}) <= names, names
    what = analyse(root).describe()
    reference = (tmp_path / f"{name}.py").read_text()
    for start in STARTS[kind]:
        code = implement_lowering(root, instruction_for(what, start))
        for key, value in start.items():
            assert any(t.name == key and t.value == value for t in find_tunables(code, "python")), (key, code)
        compare(reference, code)
