"""The matmul template (kb_matmul): GEMV with K split, split-K, transposed operands through their
strides, batches; and why one long fp32 accumulation chain fails KernelBench's matrix-vector task
(max abs error 52.4 on the H200 before the split)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from stark_lsp.agents.builtin.kb_forward import analyse
from stark_lsp.agents.builtin.kb_lowering import STARTS
from stark_lsp.agents.builtin.kb_matmul import KERNELS, MAX_CHAIN, TUTORIAL_CONFIGS
from stark_lsp.agents.builtin.kb_triton import render

sys.path.insert(0, str(Path(__file__).parent))
from kb_small import compare, with_sizes  # noqa: E402

L1 = Path(__file__).resolve().parents[1] / "benchmarks" / "kernelbench" / "level1"


def _k_split():
    ns: dict = {}
    exec("import torch\nimport triton\nimport triton.language as tl\n" + KERNELS, ns)
    return ns["_stark_k_split"]


def test_one_fp32_chain_over_2_20_positive_terms_misses_the_tolerance_and_the_split_does_not():
    rng = np.random.default_rng(0)
    K = 1 << 20
    a, b = rng.random(K, dtype=np.float32), rng.random(K, dtype=np.float32)
    terms = a * b
    exact = float((a.astype(np.float64) * b.astype(np.float64)).sum())
    tol = 1e-4 + 1e-4 * abs(exact)
    one_chain = float(np.add.accumulate(terms)[-1])  # one accumulator, term after term
    assert abs(one_chain - exact) > tol  # what a single-accumulator kernel did on the H200
    k_split, nsplit = _k_split()(K, 1, 132, 256)
    assert k_split * nsplit >= K and k_split <= MAX_CHAIN
    lanes = terms.reshape(nsplit, -1, 256)  # per slice: a tile of 256 lanes, each summing in order
    per_lane = np.add.accumulate(lanes, axis=1)[:, -1, :]
    per_slice = per_lane.sum(axis=1, dtype=np.float32)  # the tile's tree reduction
    split = float(np.add.accumulate(per_slice)[-1])  # slices summed in order
    assert abs(split - exact) < tol / 10


@pytest.mark.parametrize("K,programs,sms", [(1 << 20, 128, 132), (524288, 16, 132), (4096, 4096, 132), (64, 1, 4)])
def test_split_k_plan(K, programs, sms):
    k_split, nsplit = _k_split()(K, programs, sms, 32)
    assert k_split % 32 == 0 and (nsplit - 1) * k_split < K <= nsplit * k_split
    assert k_split <= max(MAX_CHAIN, 32)
    if programs >= 2 * sms and K <= MAX_CHAIN:
        assert nsplit == 1  # enough tiles, short K: no split
    if programs < 2 * sms and K >= 8 * 32 * 2 * sms:
        assert programs * nsplit >= 2 * sms


MODELS = {
    "4_Matrix_vector_multiplication_": {"M": 8, "K": 1 << 20},
    "6_Matmul_with_large_K_dimension_": {"M": 16, "N": 16, "K": 1 << 16},
    "16_Matmul_with_transposed_A": {"M": 40, "K": 70, "N": 30},
    "17_Matmul_with_transposed_B": {"M": 40, "K": 70, "N": 30},
    "18_Matmul_with_transposed_both": {"M": 40, "K": 70, "N": 30},
    "3_Batched_matrix_multiplication": {"batch_size": 3, "m": 20, "k": 33, "n": 17},
    "10_3D_tensor_matrix_multiplication": {"N": 2, "M": 20, "K": 40, "L": 12},
}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_kernelbench_matmuls(name):
    pytest.importorskip("triton")
    source = with_sizes((L1 / f"{name}.py").read_text(), MODELS[name])
    compare(source, render(analyse(source)))


def test_row_vector_times_matrix_uses_the_gemv_path():
    pytest.importorskip("triton")
    source = (
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        "    def forward(self, a, b):\n        return torch.bmm(a, b)\n\n\n"
        "def get_inputs():\n    return [torch.rand(3, 1, 5000), torch.rand(3, 5000, 21)]\n\n\n"
        "def get_init_inputs():\n    return []\n")
    compare(source, render(analyse(source)))


def test_starting_points_are_the_tutorial_configurations():
    configs = STARTS["matmul"][1:]
    assert len(configs) >= len(TUTORIAL_CONFIGS) >= 6
    assert {c["BLOCK_M"] for c in configs} >= {32, 64, 128, 256} and {c["BLOCK_K"] for c in configs} == {32, 64}
    assert len({tuple(sorted(c.items())) for c in configs}) == len(configs)  # no start twice
    code = render(analyse((L1 / "1_Square_matrix_multiplication_.py").read_text()))
    for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_SIZE_M"):
        assert re.search(rf"^\s+{key} = \d+$", code, re.M), key


GPU_MODELS = ["1_Square_matrix_multiplication_", "2_Standard_matrix_multiplication_", "3_Batched_matrix_multiplication",
              "6_Matmul_with_large_K_dimension_", "7_Matmul_with_small_K_dimension_",
              "8_Matmul_with_irregular_shapes_", "9_Tall_skinny_matrix_multiplication_",
              "10_3D_tensor_matrix_multiplication", "13_Matmul_for_symmetric_matrices", "16_Matmul_with_transposed_A",
              "17_Matmul_with_transposed_B", "18_Matmul_with_transposed_both"]
OUTER = ("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, a, b):\n"
         "        return a @ b\n\n\ndef get_inputs():\n    return [torch.randn(300, 1), torch.randn(1, 257)]\n\n\n"
         "def get_init_inputs():\n    return []\n")


def _cuda():
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU (the compiled kernel specializes sizes; the interpreter does not)")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", GPU_MODELS)
def test_kernelbench_matmuls_at_full_size_on_the_gpu(name):
    _cuda()
    source = (L1 / f"{name}.py").read_text()
    compare(source, render(analyse(source)), device="cuda")


@pytest.mark.parametrize("shapes", [((300, 1), (1, 257)), ((33, 17), (17, 1025))])
def test_sizes_specialized_to_one_or_odd_multiply_on_the_gpu(shapes):
    _cuda()
    (a0, a1), (b0, b1) = shapes
    source = OUTER.replace("(300, 1)", f"({a0}, {a1})").replace("(1, 257)", f"({b0}, {b1})")
    compare(source, render(analyse(source)), device="cuda")
