"""The CUDA_GRAPH switch on the built-in team's own candidates (issue 22; ``agents/builtin/cuda_graph_text.py``):
the fused ModelNew and the single-operation templates carry it, off; on, their forward is captured in a
CUDA graph and replayed. There is no GPU here: the graph runs against a CPU stand-in for torch.cuda's
graph API (its capture runs the call, its replay runs it again on the graph's own inputs and writes into
the captured outputs, as a real replay writes the same memory), the kernels under Triton's interpreter."""

from __future__ import annotations

import ast
import contextlib
import sys
import textwrap
import types
from pathlib import Path

import pytest

from stark_lsp.agents.base import AgentContext
from stark_lsp.agents.builtin.cuda_graph_text import with_cuda_graph, wrap_forward, NoForward
from stark_lsp.agents.builtin.kb_lowering import implement_lowering
from stark_lsp.agents.builtin.tunables import set_value
from stark_lsp.agents.builtin.tunables_triton import find_triton_tunables
from stark_lsp.context_window import Window, WindowEntry
from stark_lsp.evaluate.judge.launch_rule import uses_cuda_graph

sys.path.insert(0, str(Path(__file__).parent))
from kb_small import _load  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
KB = ROOT / "benchmarks" / "kernelbench"


def _model(init: str, forward: str, params: str, inputs: str) -> str:
    return ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
            "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            + textwrap.indent(textwrap.dedent(init), " " * 8) + "\n"
            f"    def forward(self, {params}):\n" + textwrap.indent(textwrap.dedent(forward), " " * 8) + "\n\n\n"
            f"def get_inputs():\n    return {inputs}\n\n\ndef get_init_inputs():\n    return []\n")


# a fused candidate whose forward branches on self.bn.training (batch or running statistics) and reads a
# Python number; a template (softmax, kb_triton), a matmul (kb_matmul) and a cross-entropy (kb_cross_entropy)
FUSED = _model("self.bn = nn.BatchNorm1d(8)\n", "return torch.relu(self.bn(x)) * scale", "x, scale",
               "[torch.randn(6, 8), 2.0]")
SOFTMAX = _model("pass\n", "return torch.softmax(x, dim=1)", "x", "[torch.randn(5, 40)]")
MATMUL = _model("pass\n", "return torch.matmul(a, b)", "a, b", "[torch.randn(12, 20), torch.randn(20, 9)]")
CROSS_ENTROPY = _model("pass\n", "return F.cross_entropy(p, t)", "p, t",
                       "[torch.randn(7, 10), torch.randint(0, 10, (7,))]")


def _candidate(source: str) -> str:
    return implement_lowering(source + "\n\nclass ModelNew(Model):\n    pass\n")


def _switched(code: str, on: bool) -> str:
    t = [t for t in find_triton_tunables(code) if t.name == "CUDA_GRAPH"]
    assert len(t) == 1 and t[0].kind == "switch" and t[0].value is False
    return set_value(code, t[0], on)


class _StandIn:
    """torch.cuda's graph API on the CPU. ``graphs``: one per capture; a replay recomputes the owner's
    call on its static inputs and copies the result into the captured outputs."""

    def __init__(self):
        self.graphs: list[_StandIn.Graph] = []
        self.model = None  # whose _graph owns the graphs

    class Graph:
        def __init__(self, stand_in):
            self.stand_in, self.replays = stand_in, 0
            stand_in.graphs.append(self)

        def replay(self):
            import torch

            self.replays += 1
            owner = self.stand_in.model._graph
            assert owner.graph is self
            fresh = owner.fn(list(owner.static))

            def into(mine, new):
                if isinstance(mine, torch.Tensor):
                    mine.copy_(new)
                elif isinstance(mine, (tuple, list)):
                    for m, n in zip(mine, new):
                        into(m, n)

            into(owner.out, fresh)

    def install(self, monkeypatch, ns):
        import torch

        stream = types.SimpleNamespace(wait_stream=lambda s: None)
        monkeypatch.setattr(torch.cuda, "CUDAGraph", lambda: _StandIn.Graph(self))
        monkeypatch.setattr(torch.cuda, "graph", lambda g, capture_error_mode=None: contextlib.nullcontext())
        monkeypatch.setattr(torch.cuda, "Stream", lambda: stream)
        monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext())
        monkeypatch.setattr(torch.cuda, "current_stream", lambda: stream)
        real_ok = ns["_graph_ok"]
        assert real_ok(torch.randn(3)) is False  # a CPU tensor: the forward as written
        # the CPU stands in for CUDA here: the same test with is_cuda read as True
        ns["_graph_ok"] = lambda *a: (not torch.is_grad_enabled() and any(isinstance(x, torch.Tensor) for x in a)
                                      and all(isinstance(x, (torch.Tensor, *ns["_GRAPH_VALUES"])) for x in a))


def _instance(source: str, on: bool, monkeypatch):
    import torch

    ns = _load(source + "\n\n" + _switched(_candidate(source), on))
    stand_in = _StandIn()
    stand_in.install(monkeypatch, ns)
    torch.manual_seed(0)
    ref = ns["Model"]()
    torch.manual_seed(0)
    new = ns["ModelNew"]()
    new.load_state_dict(ref.state_dict())
    stand_in.model = new
    return ns, ref, new, stand_in


def _close(a, b):
    import torch

    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    return torch.allclose(a, b, atol=1e-4, rtol=1e-4)


@pytest.mark.timeout(600)
def test_a_fused_candidate_replays_its_graph_copies_in_and_out_and_captures_again_on_shape_and_mode(monkeypatch):
    pytest.importorskip("triton")
    import torch

    ns, ref, new, stand_in = _instance(FUSED, True, monkeypatch)
    ref.eval()
    new.eval()
    with torch.no_grad():
        x1 = torch.randn(6, 8)
        out1 = new(x1, 2.0)
        assert _close(out1, ref(x1, 2.0)) and len(stand_in.graphs) == 1 and stand_in.graphs[0].replays == 1
        g = new._graph
        assert g.static[0].data_ptr() != x1.data_ptr()  # the input copied into the graph's own
        x2 = torch.randn(6, 8)
        kept = x2.clone()
        out2 = new(x2, 2.0)
        assert _close(out2, ref(x2, 2.0)) and len(stand_in.graphs) == 1 and stand_in.graphs[0].replays == 2
        assert torch.equal(x2, kept)  # read, never written
        assert _close(out1, ref(x1, 2.0))  # the first call's output was cloned out: the replay left it alone
        assert out2.data_ptr() != g.out.data_ptr()
        assert _close(new(x2, 3.0), ref(x2, 3.0)) and len(stand_in.graphs) == 2  # another Python number: again
        x3 = torch.randn(4, 8)
        assert _close(new(x3, 3.0), ref(x3, 3.0)) and len(stand_in.graphs) == 3  # another shape: again
        new(x3, 3.0)
        assert len(stand_in.graphs) == 3 and stand_in.graphs[2].replays == 2
        new.train()  # the forward now takes the batch's statistics: its host logic reads self.bn.training
        ref.train()
        out = new(x3, 3.0)
        assert len(stand_in.graphs) == 4
        assert _close(out, ref(x3, 3.0))
        assert not _close(out, new.eval()._forward_eager(x3, 3.0))  # the modes differ on this input
        new.train()
        new(x3, 3.0)
        assert len(stand_in.graphs) == 4 and stand_in.graphs[3].replays == 2
        new.eval()
        assert _close(new(x3, 3.0), new._forward_eager(x3, 3.0)) and len(stand_in.graphs) == 5  # back: again
        # new weights copied in place (load_state_dict) are read by the next replay, with no capture: the
        # key is self.training alone, not a walk over the parameters on every call
        state = {k: v + 0.5 if v.is_floating_point() else v for k, v in ref.state_dict().items()}
        ref.load_state_dict(state)
        new.load_state_dict(state)
        ref.eval()
        assert _close(new(x3, 3.0), ref(x3, 3.0)) and len(stand_in.graphs) == 5
    with torch.enable_grad():  # autograd: the forward as written, never a graph
        new(x3, 3.0)
    assert len(stand_in.graphs) == 5


@pytest.mark.timeout(600)
@pytest.mark.parametrize("source", [SOFTMAX, MATMUL, CROSS_ENTROPY], ids=["softmax", "matmul", "cross_entropy"])
def test_a_template_candidate_replays_its_graph(source, monkeypatch):
    pytest.importorskip("triton")
    import torch

    ns, ref, new, stand_in = _instance(source, True, monkeypatch)
    assert "_forward_eager" in ns["ModelNew"].__dict__
    inputs = ns["get_inputs"]()
    with torch.no_grad():
        first = new(*inputs)
        assert _close(first, ref(*inputs))
        again = [torch.randn_like(a) if a.is_floating_point() else a for a in ns["get_inputs"]()]
        assert _close(new(*again), ref(*again)) and _close(first, ref(*inputs))
    assert len(stand_in.graphs) == 1 and stand_in.graphs[0].replays == 2


@pytest.mark.timeout(600)
@pytest.mark.parametrize("source", [FUSED, SOFTMAX], ids=["fused", "softmax"])
def test_with_the_switch_off_the_candidate_runs_its_forward_as_written(source, monkeypatch):
    pytest.importorskip("triton")
    import torch

    code = _candidate(source)
    assert "\nCUDA_GRAPH = False\n" in code
    ns, ref, new, stand_in = _instance(source, False, monkeypatch)
    inputs = ns["get_inputs"]()
    ref.eval()
    new.eval()
    with torch.no_grad():
        out = new(*inputs)
        assert torch.equal(out, new._forward_eager(*inputs)) and _close(out, ref(*inputs))
    assert stand_in.graphs == [] and new._graph is None


def test_the_wrapper_keeps_the_forward_as_written_and_the_launch_rule_follows_the_switch():
    code = _candidate(SOFTMAX)
    tree = ast.parse(code)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew")
    methods = [n.name for n in cls.body if isinstance(n, ast.FunctionDef)]
    assert methods == ["forward", "_forward_listed", "_forward_eager"]
    assert code.index("CUDA_GRAPH = False") < code.index("class ModelNew")
    assert with_cuda_graph(code) == code  # once only
    # off: Triton's launch counter judges it; on: the profiler (a graph's replay launches nothing from Python)
    assert uses_cuda_graph(code) is False
    assert uses_cuda_graph(_switched(code, True)) is True
    fused = _candidate(FUSED)
    assert uses_cuda_graph(fused) is False and uses_cuda_graph(_switched(fused, True)) is True
    with pytest.raises(NoForward):
        wrap_forward("class ModelNew(Model):\n    def forward(self, *xs):\n        return xs\n")
    odd = "class ModelNew(Model):\n    def forward(self, *xs):\n        return xs\n"
    assert with_cuda_graph(odd) == odd  # left without the switch


def test_the_team_offers_the_switch_on_a_gpu_and_not_under_the_interpreter():
    from stark_lsp.agents.builtin.code import BuiltinCoder
    from stark_lsp.agents.builtin.plan import BuiltinPlanner
    from stark_lsp.tasks.spec import TaskSpec

    task = TaskSpec(kind="kernelbench", path=KB / "level1" / "33_BatchNorm.py")
    code = implement_lowering(task.root_source())
    switch = [(t.name, t.value, t.candidates) for t in find_triton_tunables(code) if t.kind == "switch"]
    assert switch[-1] == ("CUDA_GRAPH", False, (True,))
    for hardware, offered in (("NVIDIA H100 80GB HBM3", True), ("CPU (Triton interpreter)", False)):
        ctx = AgentContext(task, 1, code, "ok 1.00x", "", Window(history=(WindowEntry("root", 0, "1.00x", code),)),
                           seed=3, hardware=hardware)
        names = {t.name for _, t, _ in BuiltinPlanner().options(ctx)}
        assert ("CUDA_GRAPH" in names) is offered
    ctx = AgentContext(task, 1, code, "ok 1.00x", "", Window(history=(WindowEntry("root", 0, "1.00x", code),)),
                       seed=3, hardware="NVIDIA H100 80GB HBM3")
    ranked = BuiltinPlanner(explore=0.0, noise=0.0).ranked(ctx)
    on = [(t, v) for t, v in ranked if t.name == "CUDA_GRAPH"]
    assert [v for _, v in on] == [True] and ranked[0][0].name != "CUDA_GRAPH"  # a small move, as the seed's
    marked = BuiltinPlanner().mark(ctx, *on[0]).marked_source
    from stark_lsp.markers.syntax import apply_replacements

    done = apply_replacements(marked, BuiltinCoder().code(ctx, marked).replacements)
    assert "\nCUDA_GRAPH = True\n" in done and uses_cuda_graph(done)
    ast.parse(done)
