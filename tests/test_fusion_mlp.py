"""MLPs whose layers are built in a loop (issue 22, KernelBench level 3's form): the built-in team plans
them at run time, each Linear with the activation after it one GEMM launch (``fusion.mlp``). Each model
is written here in that form (not copied from KernelBench), generated through the team's lowering,
run under the Triton interpreter and compared with PyTorch at the fp32 tolerance (1e-4)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from stark_lsp.agents.builtin.fusion.mlp import DESCRIPTION, STARTS as MLP_STARTS, read_mlp
from stark_lsp.agents.builtin.kb_lowering import _lowering, implement_lowering, instruction_for

sys.path.insert(0, str(Path(__file__).parent))
from kb_small import _load, compare  # noqa: E402
from test_fusion_ops import model  # noqa: E402

R = "torch.randn"
STUB = "\n\nclass ModelNew(Model):\n    pass\n"
SEQUENTIAL_INIT = """layers = []
current = args[0]
for size in args[1]:
    layers.append(nn.Linear(current, size))
    layers.append({act})
    current = size
layers.append(nn.Linear(current, args[2]))
self.network = nn.Sequential(*layers)"""
MODULELIST_INIT = """self.layers = nn.ModuleList()
current = args[0]
for size in args[1] + [args[2]]:
    self.layers.append(nn.Linear(current, size))
    current = size"""

# name: (init, forward, inputs, init inputs, the plan's activation codes per launch, None: a PyTorch call)
CASES = {
    "sequential_relu_last_plain": (SEQUENTIAL_INIT.format(act="nn.ReLU()"), "return self.network(x)",
                                   f"[{R}(5, 12)]", "[12, [20, 17], 6]", [1, 1, 0]),
    "sequential_gelu_3d_input": (SEQUENTIAL_INIT.format(act="nn.GELU()"), "return self.network(x)",
                                 f"[{R}(2, 3, 10)]", "[10, [33], 7]", [2, 0]),
    "sequential_of_activations_chosen_per_layer": (
        "acts = [nn.GELU(approximate='tanh'), nn.Tanh(), nn.Sigmoid(), nn.SiLU(), nn.LeakyReLU(0.2)]\n"
        "layers = []\nfor i, a in enumerate(acts):\n    layers += [nn.Linear(8 + i, 9 + i), nn.Dropout(0.3), a, "
        "nn.Identity()]\nself.net = nn.Sequential(*layers)", "return self.net(x)", f"[{R}(4, 8)]", "[]",
        [3, 4, 5, 6, 7]),
    "modulelist_loop_relu_then_last_layer": (MODULELIST_INIT, "for layer in self.layers[:-1]:\n"
                                             "    x = F.relu(layer(x))\nreturn self.layers[-1](x)",
                                             f"[{R}(6, 16)]", "[16, [24, 24, 12], 5]", [1, 1, 1, 0]),
    "modulelist_loop_two_statements_every_layer": (MODULELIST_INIT, "for layer in self.layers:\n    x = layer(x)\n"
                                                   "    x = torch.sigmoid(x)\nreturn x", f"[{R}(3, 9)]",
                                                   "[9, [11], 4]", [5, 5]),
    "functional_activations_with_settings": (
        "self.layers = nn.ModuleList([nn.Linear(12, 12) for _ in range(args[0])])\nself.head = nn.Linear(12, 3)",
        "for layer in self.layers:\n    x = F.leaky_relu(layer(x), 0.1)\n    x = F.gelu(x, approximate='tanh')\n"
        "return self.head(x).tanh()", f"[{R}(4, 12)]", "[2]", [7, None, 7, None, 4]),
    "nested_sequential_blocks": ("self.blocks = nn.Sequential(*[nn.Sequential(nn.Linear(10, 10), nn.ReLU()) "
                                 "for _ in range(args[0])])\nself.out = nn.Linear(10, 2)",
                                 "x = self.blocks(x)\nreturn torch.relu(self.out(x))", f"[{R}(7, 10)]", "[3]",
                                 [1, 1, 1, 1]),
    "unsupported_layers_fall_back_to_pytorch": (
        "layers = []\nfor size in args[0]:\n    layers += [nn.Linear(8, size, bias=False), nn.LayerNorm(size), "
        "nn.ReLU(), nn.Linear(size, 8), nn.Softplus(), nn.Linear(8, 8), nn.ReLU(), nn.Tanh()]\n"
        "layers.append(nn.Softmax(dim=-1))\nself.net = nn.Sequential(*layers)", "return self.net(x)",
        f"[{R}(5, 8)]", "[[6, 9]]",
        [0, None, None, 0, None, 1, None] * 2 + [None]),
}


def _plan_codes(source: str, code: str, train: bool = False) -> list[int | None]:
    """The activation code of each step of the plan the candidate made on its first call."""
    import torch

    ns = _load(source + "\n\n" + code)
    torch.manual_seed(0)
    new = ns["ModelNew"](*ns["get_init_inputs"]()).train(train)
    with torch.no_grad():
        new(*ns["get_inputs"]())
    return [act for _, act, _, _ in new.__dict__["_stark_mlp_plan"][1]]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_mlp_start_plans_each_linear_with_its_activation(name):
    pytest.importorskip("triton")
    init, fwd, inputs, init_inputs, codes = CASES[name]
    source = model(init, fwd, inputs, init_inputs)
    _, starts = _lowering(source)
    what, first = starts[0]
    assert what.startswith(DESCRIPTION) and first == {}, starts[0]
    code = implement_lowering(source + STUB, instruction_for(what, first))
    assert _plan_codes(source, code) == codes
    assert "\nCUDA_GRAPH = False" in code  # the switch of every team candidate, off
    compare(source, code)
    other = implement_lowering(source + STUB, instruction_for(what, MLP_STARTS[1]))
    assert "BLOCK_M = 16" in other and "BLOCK_K = 128" in other
    compare(source, other)


@pytest.mark.timeout(600)
def test_training_mode_calls_dropout_and_batchnorm_as_pytorch():
    pytest.importorskip("triton")
    source = model("self.net = nn.Sequential(*[m for _ in range(2) for m in (nn.Linear(6, 6), nn.Dropout(0.0), "
                   "nn.BatchNorm1d(6), nn.ReLU())])", "return self.net(x)", f"[{R}(5, 6)]")
    what, start = _lowering(source)[1][0]
    code = implement_lowering(source + STUB, instruction_for(what, start))
    assert _plan_codes(source, code, train=True) == [0, None, None, None] * 2  # Dropout in training: not skipped
    assert _plan_codes(source, code, train=False) == [0, None, None] * 2
    compare(source, code, train=True)
    compare(source, code, train=False)


@pytest.mark.timeout(600)
def test_a_hooked_linear_and_a_linear_subclass_are_called_as_pytorch():
    pytest.importorskip("triton")
    import torch

    source = ("import torch\nimport torch.nn as nn\n\n\nclass Scaled(nn.Linear):\n    def forward(self, x):\n"
              "        return super().forward(x) * 2\n\n\n" + model(
                  "self.net = nn.Sequential(*[Scaled(4, 4), nn.ReLU(), nn.Linear(4, 4), nn.ReLU()])",
                  "return self.net(x)", f"[{R}(3, 4)]"))
    what, start = _lowering(source)[1][0]
    code = implement_lowering(source + STUB, instruction_for(what, start))
    ns = _load(source + "\n\n" + code)
    torch.manual_seed(0)
    ref = ns["Model"]()
    torch.manual_seed(0)
    new = ns["ModelNew"]()
    seen = []
    for m in (ref, new):
        m.net[2].register_forward_hook(lambda mod, inp, out: seen.append(out.sum().item()))
    x = torch.randn(3, 4)
    with torch.no_grad():
        assert torch.allclose(ref(x), new(x), atol=1e-4, rtol=1e-4)
    assert len(seen) == 2 and abs(seen[0] - seen[1]) < 1e-4  # the hook ran in both, on the same output
    assert [act for _, act, _, _ in new.__dict__["_stark_mlp_plan"][1]] == [None, None, None, None]


@pytest.mark.parametrize("init,forward", [
    ("self.fc = nn.Linear(8, 8)", "x = self.fc(x)\nreturn torch.relu(x)"),  # level 2's form: the fused kernels
    ("self.net = nn.Sequential(nn.Linear(8, 8), nn.ReLU())", "return self.net(x)"),  # written out: the reader inlines
    ("self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])",
     "for layer in self.layers:\n    x = layer(x)\nreturn x.view(x.size(0), -1)"),  # more than layers
    ("self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])",
     "r = x\nfor layer in self.layers:\n    x = layer(x) + r\nreturn x"),
    ("self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])",
     "for i, layer in enumerate(self.layers):\n    x = layer(x)\nreturn x"),
    ("", "return self.helper(x)"),  # not set in __init__ (a method, say): nothing to plan
])
def test_forwards_the_mlp_start_leaves_alone(init, forward):
    assert read_mlp(model(init, forward, f"[{R}(4, 8)]")) is None


def test_the_loop_form_also_keeps_the_fused_starts():
    """for layer in self.layers: x = F.relu(layer(x)) is read by the fusion reader too (a host loop): both."""
    source = model(MODULELIST_INIT, "for layer in self.layers:\n    x = F.relu(layer(x))\nreturn x",
                   f"[{R}(4, 8)]", "[8, [8], 8]")
    descriptions = [what for what, _ in _lowering(source)[1]]
    assert descriptions[:len(MLP_STARTS)] == [descriptions[0]] * len(MLP_STARTS)
    assert descriptions[0].startswith(DESCRIPTION) and "(self.layers)" in descriptions[0]
    assert any(d.startswith("fused: ") and "host loop" in d for d in descriptions)


@pytest.mark.timeout(900)
def test_the_team_plans_and_the_evaluator_accepts_an_mlp_built_in_a_loop(tmp_path):
    """Through the whole built-in team and the real evaluator (a process of its own, the judge's checks)."""
    pytest.importorskip("triton")
    from stark_lsp.agents.base import AgentContext
    from stark_lsp.agents.builtin import make_builtin_team
    from stark_lsp.context_window import Window, WindowEntry
    from stark_lsp.evaluate.evaluator import Evaluator
    from stark_lsp.evaluate.options import EvalOptions
    from stark_lsp.evaluate.result import Status
    from stark_lsp.markers.syntax import apply_replacements, parse_markers
    from stark_lsp.tasks.spec import load_task

    path = tmp_path / "mlp.py"
    path.write_text(model(SEQUENTIAL_INIT.format(act="nn.ReLU()"), "return self.network(x)", f"[{R}(4, 16)]",
                          "[16, [32, 24], 8]"))
    task = load_task(path)
    team = make_builtin_team()
    root = task.root_source()
    ctx = AgentContext(task, 0, root, "1.00x", "", Window(history=(WindowEntry("root", 0, "1.00x", root),)), seed=0)
    plan = team.planner.plan(ctx)
    (marker,) = parse_markers(plan.marked_source)
    assert DESCRIPTION in marker.instruction
    new = apply_replacements(plan.marked_source, team.coder.code(ctx, plan.marked_source).replacements)
    assert "_stark_mlp_gemm[grid]" in new
    fast = EvalOptions(trials=2, cpu_reps=1, reps=20, time_budget_s=0.5, run_timeout_s=300)
    with Evaluator(workers=1, cache_dir=tmp_path / "cache") as ev:
        r = ev.evaluate(task, new, fast)
    assert r.status is Status.OK, r.summary() + "\n" + r.output[-3000:]


@pytest.mark.timeout(600)
def test_where_the_kernel_does_not_apply_pytorch_runs_the_layers():
    """fp64 (not a dtype the kernel takes): PyTorch's own calls, bit for bit; a transposed (strided) fp32
    input goes through the kernel; a width that is not the layer's raises PyTorch's own error."""
    pytest.importorskip("triton")
    import torch

    init, fwd, inputs, init_inputs, _ = CASES["sequential_relu_last_plain"]
    source = model(init, fwd, inputs, init_inputs)
    what, start = _lowering(source)[1][0]
    ns = _load(source + "\n\n" + implement_lowering(source + STUB, instruction_for(what, start)))
    torch.manual_seed(0)
    ref = ns["Model"](12, [20, 17], 6).eval()
    torch.manual_seed(0)
    new = ns["ModelNew"](12, [20, 17], 6).eval()
    x = torch.randn(12, 5).t()
    with torch.no_grad():
        assert torch.allclose(ref(x), new(x), atol=1e-4, rtol=1e-4)
        assert torch.equal(ref.double()(x.double()), new.double()(x.double()))
        with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
            new.float()(torch.randn(5, 13))


@pytest.mark.timeout(600)
def test_with_the_cuda_graph_switch_on_the_planned_forward_is_captured_once_and_replayed(monkeypatch):
    """The CUDA_GRAPH switch (cuda_graph_text) over the run-time plan, against test_cuda_graph_switch's CPU
    stand-in for torch.cuda's graph API: the plan is made on the call that captures, then replayed."""
    pytest.importorskip("triton")
    import torch
    from test_cuda_graph_switch import _StandIn, _switched

    source = model(SEQUENTIAL_INIT.format(act="nn.Tanh()"), "return self.network(x)", f"[{R}(4, 10)]",
                   "[10, [16], 3]")
    what, start = _lowering(source)[1][0]
    ns = _load(source + "\n\n" + _switched(implement_lowering(source + STUB, instruction_for(what, start)), True))
    stand_in = _StandIn()
    stand_in.install(monkeypatch, ns)
    torch.manual_seed(0)
    ref = ns["Model"](10, [16], 3).eval()
    torch.manual_seed(0)
    new = ns["ModelNew"](10, [16], 3).eval()
    stand_in.model = new
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(4, 10)
            assert torch.allclose(new(x), ref(x), atol=1e-4, rtol=1e-4)
    assert len(stand_in.graphs) == 1 and stand_in.graphs[0].replays == 3
    assert [act for _, act, _, _ in new.__dict__["_stark_mlp_plan"][1]] == [4, 0]
