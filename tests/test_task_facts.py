"""What the cards read: the task's files (ast only) and the evaluator's hardware facts."""

from llm_trees import sample_task
from stark_lsp.search.hardware_card import hardware_card, hardware_facts
from stark_lsp.tasks.describe import describe_task, describe_text


def test_facts_of_each_sample_format():
    cu = describe_task(sample_task("cuda"))
    assert (cu.reference_name, cu.reference_params, cu.entry) == ("reference", ("x",), None)
    assert cu.run.startswith("def run(lib, x):") and "def _shape()" in cu.inputs and not cu.problems
    tr = describe_task(sample_task("triton"))
    assert tr.entry == "softmax" and tr.run == "" and tr.inputs.startswith('SMALL = os.environ.get("STARK_SMALL")')
    kb = describe_task(sample_task("kernelbench"))
    assert kb.reference.startswith("class Model(nn.Module):") and kb.reference_params == ("x",)
    assert "batch_size = 16 if SMALL else 4096\ndim = 1024 if SMALL else 393216" in kb.inputs
    assert kb.init_inputs.endswith("def get_init_inputs():\n    return []")


def test_tolerance_literal_model_harness_and_broken_files():
    f = describe_text("cuda", "h.py", "import torch\nTOLERANCE = {'atol': 1e-3, 'rtol': 0}\n"
                                      "class Model:\n    def forward(self, a, b):\n        return a + b\n"
                                      "def get_inputs():\n    return [1]\ndef get_init_inputs():\n    return []\n")
    assert f.tolerance == {"atol": 1e-3, "rtol": 0} and f.reference_name == "Model" and f.reference_params == ("a", "b")
    assert f.init_inputs.startswith("def get_init_inputs")
    bad = describe_text("triton", "h.py", "def reference(:\n")
    assert bad.reference == "" and "does not parse: line 1" in bad.problems[0]
    none = describe_text("triton", "h.py", "x = 1\n")
    assert any("no reference" in p for p in none.problems) and any("no get_inputs" in p for p in none.problems)


class NoInfo:
    def hardware(self):
        return "Fake GPU"


class Broken:
    def hardware_info(self):
        raise RuntimeError("no worker became ready")


class Remote:
    def hardware_info(self):
        return {"device": "NVIDIA H100", "is_gpu": True, "cluster": "ray://head:10001", "actors": 8}


def test_hardware_facts_from_the_evaluator_and_this_machine():
    from importlib import metadata

    local = hardware_facts(NoInfo())
    assert local.get("torch") == metadata.version("torch")  # the local evaluator's workers run this Python
    broken = hardware_facts(Broken())
    assert "no worker became ready" in broken["error"]
    assert hardware_card(broken).startswith("## Hardware card\nGPU: unknown (RuntimeError: no worker became ready)")
    remote = hardware_facts(Remote())
    assert "torch" not in remote and "nvcc" not in remote  # not this machine's toolchain
    card = hardware_card(remote)
    assert "GPU: NVIDIA H100 (compute capability unknown), unknown SMs" in card and "8 evaluation GPUs on Ray" in card
    assert "bandwidth and matmul peak unknown (no floor measured yet)" in card
    assert "Compilers: nvcc unknown, triton unknown, torch unknown" in card
