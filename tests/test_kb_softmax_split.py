"""The softmax template (kb_triton) on few long rows: each row split into chunks, one program each, their max and sum
combined (issue 22: softmax over 32000 columns ran one program per row, 0.67-0.71x eager). Run by the Triton
interpreter against torch, rows of -inf included; the split is taken exactly when there are fewer rows than programs
to fill the GPU (4 nominal SMs without one)."""

from __future__ import annotations

import os

import pytest

from stark_lsp.agents.builtin.kb_forward import analyse
from stark_lsp.agents.builtin.kb_triton import render

torch = pytest.importorskip("torch")
pytest.importorskip("triton")


def model_source(forward: str, shape: tuple[int, ...]) -> str:
    return ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\nclass Model(nn.Module):\n"
            f"    def forward(self, x):\n        return {forward}\n\n\n"
            f"def get_inputs():\n    return [torch.randn{shape}]\n\n\ndef get_init_inputs():\n    return []\n")


class Launches:
    """A kernel's launches counted (``kernel[grid](...)``), the kernel run as it is."""

    def __init__(self, kernel):
        self.kernel, self.grids = kernel, []

    def __getitem__(self, grid):
        self.grids.append(grid)
        return self.kernel[grid]


@pytest.mark.parametrize("forward, shape, split", [
    ("torch.softmax(x, dim=-1)", (6, 2100), True),  # 6 rows, 3 chunks of 1024 each
    ("torch.log_softmax(x, dim=1)", (5, 3000), True),
    ("F.softmax(x, dim=0)", (5000, 3), True),  # 3 rows once transposed
    ("torch.softmax(x, dim=-1)", (300, 70), False),  # many short rows: one program a row
])
def test_softmax_of_few_long_rows_is_split_and_agrees_with_torch(forward, shape, split):
    if os.environ.get("TRITON_INTERPRET") != "1":  # (tests/conftest.py sets it where there is no GPU)
        pytest.skip("the Triton interpreter runs this on the CPU")
    src = model_source(forward, shape)
    ns: dict = {}
    exec(compile(src + "\n" + render(analyse(src)), "<candidate>", "exec"), ns)
    stats = ns["_stark_softmax_stats_kernel"] = Launches(ns["_stark_softmax_stats_kernel"])
    single = ns["_stark_softmax_kernel"] = Launches(ns["_stark_softmax_kernel"])
    torch.manual_seed(0)
    x = torch.randn(*shape) * 5
    if forward.endswith("dim=-1)"):
        x[0] = float("-inf")  # a row of -inf: NaN, as torch
        x[1, :1500] = float("-inf")  # a row's first chunks all -inf
    want = ns["Model"]()(x)
    got = ns["ModelNew"]()(x)
    assert torch.allclose(want, got, atol=1e-5, rtol=1e-5, equal_nan=True), (want - got).abs().nan_to_num().max()
    assert (len(stats.grids), len(single.grids)) == ((1, 0) if split else (0, 1))
    if split:
        rows, chunks = stats.grids[0]
        assert chunks > 1 and rows * chunks >= 9
