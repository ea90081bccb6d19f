"""The agents' cards from a real evaluation on a GPU (scripts/gpu_tests.sh runs
this on the device machine and keeps the printed prompts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stark_lsp.agents.base import Team
from stark_lsp.agents.llm import prompts
from stark_lsp.evaluate.evaluator import Evaluator
from stark_lsp.search import Search, SearchConfig, TreeStore
from stark_lsp.search.context import build_context
from stark_lsp.search.hardware_card import hardware_facts
from stark_lsp.tasks.spec import load_task

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("sample", ["samples/mistuned/row_sum.cu", "samples/triton/softmax.py",
                                    "samples/kernelbench/relu.py"])
def test_plan_prompt_cards_on_a_gpu(sample, tmp_path):
    task = load_task(ROOT / sample)
    store = TreeStore.open(tmp_path / "tree.sqlite")
    with Evaluator(workers=1, cache_dir=tmp_path / "cache") as ev:
        Search(task, store, ev, Team("none", None, None, None), SearchConfig(budget=0)).run()  # the root only
        info = hardware_facts(ev)
    nodes = store.nodes(task.task_id())
    assert nodes[0].status == "ok", nodes[0].error
    ctx = build_context("plan", task, nodes, nodes[0].id, hardware_info=info, attempt=1)
    user = prompts.plan_messages(ctx)[1]["content"]
    print(f"\n===== {sample} =====\n{user}")
    assert f"GPU: {info['device']} (compute capability {info['capability']}), {info['sms']} SMs" in user
    assert "Measured by the evaluator: copy bandwidth" in user and "Hardware floor: " in user
    assert "unknown SMs" not in user and "CPU interpreter" not in user
    assert "Per SM: " in user and "per block: " in user and "warp size 32" in user  # gpu_limits, from torch's figures
    assert "your kernel (#1, the root): " in user and " ms, " in user and "× eager" in user
    if nodes[0].result.io is not None:  # EvalResult.io, once the evaluator reports it
        assert "Inputs and outputs, as the evaluator saw them:" in user
