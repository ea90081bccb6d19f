"""What the torch.compile baseline's process keeps of Inductor's work (``evaluate/candidate/compiled_capture.py``)
and how the judge reads it (``judge/replies.compiled_code``). The capture runs Inductor for real, on the CPU
(its C++ backend: the kernels it writes there are not Triton, so the built-in team cannot start from them, and
says so); on a GPU the same capture gives Triton kernels (tests/test_inductor_seed.py, docs/benchmarks.md)."""

from __future__ import annotations

import shutil

import pytest
import torch

from stark_lsp.agents.builtin.inductor_seed import write_seed
from stark_lsp.agents.builtin.kb_ast import NotRecognized
from stark_lsp.evaluate.judge import replies as R
from stark_lsp.evaluate.wire.channel import ChannelError

SOURCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 8)
        self.register_buffer("scale", torch.ones(8))

    def forward(self, x, y):
        return torch.relu(self.lin(x)) * self.scale + y


class ModelNew(Model):
    pass
'''


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(16, 8)
        self.register_buffer("scale", torch.ones(8))

    def forward(self, x, y):
        return torch.relu(self.lin(x)) * self.scale + y


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                    reason="Inductor's CPU backend needs a C++ compiler")
def test_the_capture_names_every_graph_input_and_hands_over_torch_compiles_callable():
    from stark_lsp.evaluate.candidate.compiled_capture import CompiledCapture

    m = Model().eval()
    handed: list = []
    cap = CompiledCapture(m, on_compiled=handed.append)
    x, y = torch.randn(4, 16), torch.randn(4, 8)
    with torch.no_grad():
        out = cap.first(x, y)
        assert torch.allclose(out, m(x, y), atol=1e-5)
        assert handed == [cap.compiled]  # from now on the timed path is torch.compile's own callable
        assert torch.allclose(handed[0](x, y), m(x, y), atol=1e-5)
    e = cap.export()
    assert sorted(e["inputs"]) == sorted(["param lin.weight", "param lin.bias", "input 0", "buffer scale", "input 1"])
    # the order is call()'s: Inductor's own module, called with the tensors so named, gives the model's output
    import importlib.util
    import tempfile
    from pathlib import Path

    by_name = {"param lin.weight": m.lin.weight, "param lin.bias": m.lin.bias, "buffer scale": m.scale,
               "input 0": x, "input 1": y}
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "inductor_module.py"
        f.write_text(e["code"])
        spec = importlib.util.spec_from_file_location("inductor_module_under_test", f)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        with torch.no_grad():
            got = mod.call([by_name[n] for n in e["inputs"]])
    assert torch.allclose(got[0], m(x, y), atol=1e-5)
    assert "def call(" in e["code"] and e["torch"] == torch.__version__
    parsed = R.compiled_code({"compiled_code": e})  # what the judge accepts of it
    assert parsed["inputs"] == e["inputs"]
    with pytest.raises(NotRecognized, match="cannot write out"):  # C++ kernels: not the team's to tune
        write_seed(parsed, SOURCE)


def test_a_model_compiled_in_several_graphs_is_not_exported():
    from stark_lsp.evaluate.candidate.compiled_capture import CompiledCapture

    cap = CompiledCapture(Model())
    cap.codes, cap.graph_inputs = ["a", "b"], [["input 0"], ["input 0"]]
    assert "2 graphs" in cap.export()["error"]
    cap.codes, cap.graph_inputs = ["a"], [["unknown Tensor"]]
    assert "neither a parameter" in cap.export()["error"]


GOOD = {"code": "def call(args): pass", "inputs": ["input 0"],
        "configs": {"k": {"kwargs": {"XBLOCK": 64}, "num_warps": 4, "num_stages": 1}}, "torch": "2.11", "triton": "3.6"}


@pytest.mark.parametrize("bad", [
    None, "text", {"code": 3}, {**GOOD, "code": ""}, {**GOOD, "code": "x" * (R.MAX_COMPILED_CODE + 1)},
    {**GOOD, "inputs": "input 0"}, {**GOOD, "inputs": [1]}, {**GOOD, "inputs": ["x" * 301]},
    {**GOOD, "configs": []}, {**GOOD, "configs": {"k": {"kwargs": {"XBLOCK": -1}, "num_warps": 4, "num_stages": 1}}},
    {**GOOD, "configs": {"k": {"kwargs": {"XBLOCK": True}, "num_warps": 4, "num_stages": 1}}},
    {**GOOD, "configs": {"k": {"kwargs": {"XBLOCK": 64}, "num_warps": "4", "num_stages": 1}}},
    {**GOOD, "configs": {"k": {"kwargs": {f"K{i}": 1 for i in range(17)}, "num_warps": 4, "num_stages": 1}}},
])
def test_the_judge_refuses_a_malformed_compiled_code_reply(bad):
    with pytest.raises(ChannelError):
        R.compiled_code({"compiled_code": bad})


def test_the_judge_keeps_only_the_fields_it_knows_and_a_short_error():
    got = R.compiled_code({"compiled_code": {**GOOD, "extra": "x"}})
    assert set(got) == {"code", "inputs", "configs", "torch", "triton"}
    assert len(R.compiled_code({"compiled_code": {"error": "e" * 5000}})["error"]) <= 500
