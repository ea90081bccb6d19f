"""Every fused template and the operations the fusion reader knows, against PyTorch on small
shapes (CPU, Triton interpreter): elementwise with scalars and broadcasting, reductions (split
across programs, over several dim runs, arg-reductions), softmax, norms (eval and training),
scans, pools, losses, views and PyTorch calls in the middle."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from stark_lsp.agents.builtin import fusion

sys.path.insert(0, str(Path(__file__).parent))
from kb_small import compare  # noqa: E402


def model(init: str, forward: str, inputs: str, init_inputs: str = "[]", params: str = "x") -> str:
    return (
        "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
        "class Model(nn.Module):\n"
        "    def __init__(self, *args):\n"
        "        super().__init__()\n"
        + textwrap.indent(textwrap.dedent(init).strip() or "pass", " " * 8) + "\n\n"
        f"    def forward(self, {params}):\n"
        + textwrap.indent(textwrap.dedent(forward).strip(), " " * 8) + "\n\n\n"
        f"def get_inputs():\n    return {inputs}\n\n\n"
        f"def get_init_inputs():\n    return {init_inputs}\n"
    )


R = "torch.randn"
CASES = {
    # elementwise: scalars, broadcasting, the function table
    "scalar_argument": ("", "return A * s", "[torch.rand(7, 9), 3.14]", "[]", "A, s"),
    "broadcast_column": ("", "return A.unsqueeze(1) * B", f"[{R}(9), {R}(9, 13)]", "[]", "A, B"),
    "activations": ("", "return F.mish(x) + F.hardswish(x) - F.gelu(x, approximate='tanh') + F.logsigmoid(x) "
                        "+ F.celu(x, 0.7) + F.threshold(x, 0.1, -2.0) + F.softplus(x, beta=2.0, threshold=5.0)",
                    f"[{R}(300) * 4]"),
    "powers": ("", "return torch.abs(x) ** 1.7 + torch.pow(x, 3) + (x * x + 1) ** -1 + x ** 4",
               f"[{R}(500)]"),
    "comparisons_bool_output": ("", "return (x > 0) & (x < 0.5)", f"[{R}(200)]"),
    "where_and_int_input": ("", "return torch.where(m > 0, x * m, -x)", f"[{R}(6, 50), torch.randint(0, 3, (6, 50))]",
                            "[]", "x, m"),
    "float64": ("", "return torch.sigmoid(x) * 2.5 - x", "[torch.randn(300, dtype=torch.float64)]"),
    "tuple_output": ("", "y = torch.relu(x)\nreturn y, y.sum(dim=1)", f"[{R}(9, 40)]"),
    "pytorch_call_in_the_middle": ("", "h = torch.matmul(torch.relu(a), b)\nreturn torch.tanh(h) + 1.0",
                                   f"[{R}(12, 20), {R}(20, 7)]", "[]", "a, b"),
    "size1_views": ("self.w = nn.Parameter(torch.randn(5))",
                    "y = (x.unsqueeze(1) * self.w.view(1, 1, 5)).squeeze(1)\nreturn torch.exp(y - 1)", f"[{R}(8, 5)]"),
    "gelu_mingpt": ("", "return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * "
                        "torch.pow(x, 3.0))))", f"[{R}(64, 33)]"),
    # reductions
    "sum_all_split": ("", "return torch.sum(x * 2.0)", f"[{R}(300, 200)]"),
    "mean_dim0_split_columns": ("", "return torch.mean(torch.abs(x), dim=0)", f"[{R}(2000, 3)]"),
    "dims_in_two_runs": ("", "return torch.amax(x + 1.0, dim=(1, 3), keepdim=True)", f"[{R}(3, 5, 4, 6)]"),
    "prod_and_logsumexp": ("", "return torch.prod(x * 0.5 + 1.0, dim=1) + torch.logsumexp(x, dim=1)",
                           f"[{R}(4, 6, 7)]"),
    "logsumexp_two_dims": ("", "return torch.logsumexp(x, dim=(1, 2))", f"[{R}(4, 6, 7) * 5]"),
    "argmax_dims": ("", "return torch.argmax(x, dim=1), torch.argmin(x, dim=-1), torch.argmax(x)", f"[{R}(5, 40, 30)]"),
    "max_values_and_indices": ("", "v, i = torch.max(x, dim=2)\nreturn v * 2, i", f"[{R}(3, 4, 50)]"),
    "frobenius": ("", "norm = torch.norm(x, p='fro')\nreturn x / norm", f"[{R}(6, 8, 9)]"),
    "l1_l2_norms": ("", "return x / torch.mean(torch.abs(x), dim=1, keepdim=True) + x / torch.norm(x, p=2, dim=1, "
                        "keepdim=True)", f"[{R}(16, 300)]"),
    "rmsnorm_explicit": ("self.eps = 1e-5", "rms = torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.eps)\n"
                         "return x / rms", f"[{R}(3, 8, 5, 6)]"),
    "softmax_dims": ("self.sm = nn.Softmax(dim=0)", "return self.sm(x) + torch.log_softmax(x, dim=1)", f"[{R}(7, 9, 4) * 3]"),
    # norms
    "layernorm_last_two": ("self.ln = nn.LayerNorm((6, 7), elementwise_affine=False)", "return self.ln(x) * 2",
                           f"[{R}(4, 5, 6, 7) + 3]"),
    "groupnorm_3d_input": ("self.gn = nn.GroupNorm(3, 12)", "return self.gn(x)", f"[{R}(4, 12, 33) * 2 + 1]"),
    "groupnorm_one_channel_per_group": ("self.gn = nn.GroupNorm(6, 6)", "return torch.relu(self.gn(x))",
                                        f"[{R}(2, 6, 5, 5)]"),
    "instancenorm_running_stats": ("self.n = nn.InstanceNorm1d(5, affine=True, track_running_stats=True)",
                                   "return self.n(x)", f"[{R}(3, 5, 40)]"),
    "batchnorm_2d_input": ("self.bn = nn.BatchNorm1d(10)", "return self.bn(x) + 1", f"[{R}(64, 10) * 3]"),
    # scans
    "cumsum_rows": ("", "return torch.cumsum(x, dim=1)", f"[torch.rand(5, 3000)]"),
    "cumsum_columns": ("", "return torch.cumsum(x * 2, dim=0)", f"[torch.rand(40, 7, 3)]"),
    "cumprod": ("", "return torch.cumprod(x, dim=1)", f"[torch.rand(4, 300) * 0.2 + 0.9]"),
    "cumsum_reverse": ("self.dim = 1", "return torch.cumsum(x.flip(self.dim), dim=self.dim).flip(self.dim)",
                       f"[torch.rand(6, 1500)]"),
    "cumsum_exclusive": ("self.dim = 1", "cumsum = torch.cumsum(x.narrow(dim=self.dim, start=0, length=x.size(self.dim) - 1), "
                         "dim=self.dim)\nreturn torch.cat((torch.zeros_like(x.select(self.dim, 0).unsqueeze(self.dim)), "
                         "cumsum), dim=self.dim)", f"[torch.rand(6, 700)]"),
    "cumsum_masked": ("", "return torch.cumsum(x * mask, dim=1)", f"[torch.rand(5, 900), torch.rand(5, 900) > 0.5]",
                      "[]", "x, mask"),
    # pools
    "maxpool_stride_padding": ("self.p = nn.MaxPool2d(3, stride=2, padding=1)", "return self.p(x - 0.5)",
                               f"[{R}(2, 3, 11, 12)]"),
    "avgpool_no_pad_count": ("self.p = nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False)",
                             "return self.p(torch.relu(x))", f"[{R}(2, 3, 9, 10)]"),
    "avgpool1d_and_functional": ("self.p = nn.AvgPool1d(4)", "return self.p(x) + F.max_pool1d(x, 4)", f"[{R}(3, 5, 22)]"),
    "maxpool3d_dilation_ceil": ("self.p = nn.MaxPool3d(2, stride=2, dilation=2, ceil_mode=True)", "return self.p(x)",
                                f"[{R}(2, 2, 7, 8, 9)]"),
    "adaptive_avgpool": ("self.p = nn.AdaptiveAvgPool2d((1, 1))", "return self.p(x * 3).squeeze(-1).squeeze(-1)",
                         f"[{R}(2, 4, 6, 7)]"),
    # losses
    "mse_huber_smooth_l1": ("", "return F.mse_loss(a, b) + F.huber_loss(a, b, delta=0.3) + "
                                "F.smooth_l1_loss(a, b, beta=0.5) + F.l1_loss(a, b, reduction='sum')",
                            f"[{R}(20, 30), {R}(20, 30)]", "[]", "a, b"),
    "hinge_broadcast": ("", "return torch.mean(torch.clamp(1 - p * t, min=0))",
                        f"[torch.rand(16, 16), torch.randint(0, 2, (16,)).float() * 2 - 1]", "[]", "p, t"),
    "kl_div": ("", "return F.kl_div(torch.log(p), t, reduction='batchmean') + F.kl_div(p, t, reduction='sum', "
                   "log_target=True)", f"[torch.rand(8, 30).softmax(-1), torch.rand(8, 30).softmax(-1)]", "[]", "p, t"),
    "cosine_similarity_loss": ("", "cos = F.cosine_similarity(a, b, dim=1)\nreturn torch.mean(1 - cos)",
                               f"[{R}(12, 40), {R}(12, 40)]", "[]", "a, b"),
    "normalize": ("", "return F.normalize(x, p=2, dim=1)", f"[{R}(9, 33)]"),
}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(CASES))
def test_fused_model_matches_pytorch(name):
    pytest.importorskip("triton")
    init, fwd, inputs, *rest = CASES[name]
    init_inputs = rest[0] if rest else "[]"
    params = rest[1] if len(rest) > 1 else "x"
    source = model(init, fwd, inputs, init_inputs, params)
    fused = fusion.analyse(source)
    assert fused.program.kernels
    compare(source, fusion.render(source))


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", ["batchnorm_2d_input", "instancenorm_running_stats", "groupnorm_3d_input"])
def test_norms_in_training_mode(name):
    pytest.importorskip("triton")
    init, fwd, inputs = CASES[name][:3]
    source = model(init, fwd, inputs)
    compare(source, fusion.render(source), train=True)


def test_rmsnorm_module():
    pytest.importorskip("triton")
    torch = pytest.importorskip("torch")
    if not hasattr(torch.nn, "RMSNorm"):
        pytest.skip("torch without nn.RMSNorm")
    source = model("self.n = nn.RMSNorm(12)", "return self.n(x)", "[torch.randn(4, 7, 12)]")
    compare(source, fusion.render(source))


@pytest.mark.parametrize("forward,reason", [
    ("if x.sum() > 0:\n    x = x * 2\nreturn x", "data-dependent control flow"),
    ("while x.sum() > 0:\n    x = x - 1\nreturn x", "While statement"),
    ("for row in x:\n    x = x + row\nreturn x", "a loop over a tensor"),
    ("x.add_(1)\nreturn x", "in-place"),
    ("return self.conv(x)", "only library operations"),
])
def test_refusals_say_why(forward, reason):
    source = model("self.conv = nn.Conv2d(3, 3, 3)", forward, "[torch.randn(1, 3, 8, 8)]")
    with pytest.raises(fusion.NotRecognized, match=reason):
        fusion.analyse(source)


GEMM_CASES = {
    "bias_relu_scale": ("self.fc = nn.Linear(24, 40)\nself.s = 0.5", "return torch.relu(self.fc(x) - 1.0) * self.s",
                        f"[{R}(7, 24)]"),
    "no_bias_residual_3d_input": ("self.fc = nn.Linear(24, 40, bias=False)", "y = self.fc(x)\nreturn y * torch.sigmoid(y) + y",
                                  f"[{R}(2, 5, 24)]"),
    "epilogue_broadcasts_larger": ("self.fc = nn.Linear(24, 40)\nself.p = nn.Parameter(torch.randn(3, 1, 40))",
                                   "return self.fc(x) + self.p", f"[{R}(7, 24)]"),
}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", sorted(GEMM_CASES))
def test_linear_with_its_epilogue_in_a_triton_matmul(name):
    pytest.importorskip("triton")
    source = model(*GEMM_CASES[name])
    assert fusion.analyse(source).gemm_epilogue
    code = fusion.render(source, {"gemm": 1})
    assert "_stark_gemm_epilogue[grid]" in code
    compare(source, code)


def test_no_gemm_variant_when_something_else_follows_the_linear_layer():
    source = model("self.fc = nn.Linear(24, 40)", "return torch.softmax(self.fc(x), dim=1)", f"[{R}(7, 24)]")
    assert not fusion.analyse(source).gemm_epilogue
