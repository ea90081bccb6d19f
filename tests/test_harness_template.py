"""Harness templates: stark_lsp/tasks/harness_template.py."""

import ast
import types as pytypes
from pathlib import Path

import pytest

from stark_lsp.tasks.harness_template import (
    cuda_launcher,
    parse_c_param,
    render_harness,
    triton_entry,
)

CUDA = r'''
__global__ void relu_kernel(const float* __restrict__ x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

__global__ void other(float* y) {}

extern "C" void launch_other(float* y) { other<<<1, 1>>>(y); }

extern "C" void launch_relu(const float* x, float* y, int n) {
    relu_kernel<<<(n + 255) / 256, 256>>>(x, y, n);
}
'''

TRITON = '''import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pass


def helper(a):
    return a


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    add_kernel[(1,)](x, y, out, x.numel(), BLOCK=1024)
    return out
'''


def test_parse_c_param_roles():
    assert parse_c_param("const float* __restrict__ x", 0).role == "input"
    y = parse_c_param("float *y", 1)
    assert (y.name, y.base_type, y.role) == ("y", "float", "output")
    assert parse_c_param("int n", 2).role == "size"
    assert parse_c_param("unsigned int n", 2).base_type == "unsigned"
    assert parse_c_param("float alpha", 3).role == "scalar"
    assert parse_c_param("const __half x[]", 4).pointer


def test_cuda_launcher_is_the_one_that_launches_the_kernel():
    assert cuda_launcher(CUDA, "relu_kernel") == ("launch_relu", ("const float* x", "float* y", "int n"))
    assert cuda_launcher(CUDA, "other")[0] == "launch_other"
    assert cuda_launcher("__global__ void k() {}", "k") is None


def test_cuda_template_calls_the_launcher():
    text = render_harness("cuda", "relu.cu", CUDA, "relu_kernel")
    tree = ast.parse(text)
    fns = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert set(fns) == {"get_inputs", "reference", "run"}
    assert [a.arg for a in fns["reference"].args.args] == ["x"]  # inputs only: y is an output
    assert [a.arg for a in fns["run"].args.args] == ["lib", "x"]
    assert "lib.launch_relu(x, y, x.numel())" in text
    assert "return y" in text
    assert 'extern "C" void launch_relu(const float* x, float* y, int n)' in text


def test_cuda_template_run_calls_the_launcher_of_a_fake_lib():
    torch = pytest.importorskip("torch")
    text = render_harness("cuda", "relu.cu", CUDA, "relu_kernel").replace('DEVICE = "cuda"', 'DEVICE = "cpu"')
    ns: dict = {}
    exec(compile(text, "relu.harness.py", "exec"), ns)
    calls = []

    class Fn:
        def __call__(self, *args):
            calls.append(args)

    lib = pytypes.SimpleNamespace(launch_relu=Fn())
    ns["N"] = 8
    (x,) = ns["get_inputs"]()
    y = ns["run"](lib, x)
    assert isinstance(y, torch.Tensor) and y.shape == x.shape
    (args,) = calls
    assert args[0] is x and args[1] is y and args[2] == 8
    with pytest.raises(NotImplementedError):
        ns["reference"](x)


def test_cuda_without_launcher_says_so():
    text = render_harness("cuda", "k.cu", "__global__ void k(float* y) {}", "k")
    assert "found no extern \"C\" launcher" in text
    ast.parse(text)


def test_triton_entry_found_by_launch():
    assert triton_entry(TRITON, "add_kernel") == ("add", ["x", "y"])
    assert triton_entry(TRITON, None) == ("add", ["x", "y"])
    broken = TRITON + "\ndef oops(:\n"
    assert triton_entry(broken, "add_kernel")[0] == "helper"  # regex fallback: first plain def


def test_triton_template_runs_the_entry():
    torch = pytest.importorskip("torch")
    text = render_harness("triton", "add.py", TRITON, "add_kernel")
    ns: dict = {}
    exec(compile(text, "add.harness.py", "exec"), ns)
    ns["N"] = 4
    x, y = ns["get_inputs"]()
    mod = pytypes.SimpleNamespace(add=lambda a, b: a + b)
    assert torch.equal(ns["run"](mod, x, y), x + y)
    assert "def reference(x, y):" in text


def _lib_recording(name):
    calls = []
    return pytypes.SimpleNamespace(**{name: lambda *args: calls.append(args)}), calls


def _exec_harness(text):
    ns: dict = {}
    exec(compile(text.replace('DEVICE = "cuda"', 'DEVICE = "cpu"'), "h.harness.py", "exec"), ns)
    return ns


@pytest.mark.parametrize("sample, launcher, sizes", [
    ("samples/cuda/softmax_rows.cu", "softmax_rows", ("x.shape[0]", "x.shape[1]")),
    ("samples/cuda/bias_gelu.cu", "bias_gelu", ("x.shape[0]", "x.shape[1]")),
    ("samples/cuda/matmul_naive.cu", "matmul_naive", ("a.shape[0]", "b.shape[1]", "a.shape[1]")),
    ("samples/cuda/sum_dim1.cu", "sum_dim1", ("x.shape[0]", "x.shape[1]", "x.shape[2]")),
])
def test_cuda_template_passes_each_size_from_the_tensors(sample, launcher, sizes):
    """Not numel for every size: rows and cols of a 2-D input, m, n, k of a matmul."""
    from tests.server_fixtures import REPO

    text = render_harness("cuda", Path(sample).name, (REPO / sample).read_text(), None)
    call = text.rsplit(f"    lib.{launcher}(", 1)[1].split("\n")[0]
    assert call.endswith(", ".join(sizes) + ")"), call


def test_cuda_template_sizes_match_the_tensors_a_launcher_gets():
    """Every size argument equals the extent of the tensors it indexes, so a
    kernel that trusts them stays in bounds (the 1-D numel-for-both bug)."""
    torch = pytest.importorskip("torch")
    from tests.server_fixtures import REPO

    def run(sample, launcher):
        ns = _exec_harness(render_harness("cuda", sample, (REPO / "samples/cuda" / sample).read_text(), None))
        ns["SMALL"] = True
        inputs = ns["get_inputs"]()
        lib, calls = _lib_recording(launcher)
        ns["run"](lib, *inputs)
        (args,) = calls
        return inputs, args

    (x,), args = run("softmax_rows.cu", "softmax_rows")
    assert x.dim() == 2 and args[2:] == (x.shape[0], x.shape[1]) and args[1].shape == x.shape
    (a, b), args = run("matmul_naive.cu", "matmul_naive")
    m, n, k = args[3:]
    assert a.shape == (m, k) and b.shape == (k, n) and args[2].shape == (m, n)
    (x, w, bias, eps), args = run("layernorm.cu", "layernorm")
    assert w.shape == bias.shape == (x.shape[1],) and isinstance(eps, float)
    (x, bias), args = run("bias_gelu.cu", "bias_gelu")
    assert bias.shape == (x.shape[1],) and args[3:] == tuple(x.shape)
    assert isinstance(torch.empty(1), torch.Tensor)


def test_triton_template_shapes_follow_what_the_entry_reads():
    from tests.server_fixtures import REPO

    text = render_harness("triton", "matmul.py", (REPO / "samples/triton/matmul.py").read_text(), None)
    assert "a = torch.randn(M, K, device=DEVICE)" in text  # M, K = a.shape
    assert "b = torch.randn(B_DIM0, N, device=DEVICE)" in text  # N = b.shape[1]
    ns = _exec_harness(text)
    ns["SMALL"] = True
    a, b = ns["get_inputs"]()
    assert a.shape[1] == b.shape[0]  # the default sizes agree, so a matmul runs
    entry = '''import triton

@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    pass


def entry(x, n: int, block=128):
    rows, cols = x.shape
    k[(rows,)](x, n, BLOCK=block)
    return x
'''
    text = render_harness("triton", "e.py", entry, "k")
    assert "def run(mod, x, n):\n    return mod.entry(x, n)" in text  # block keeps its default
    assert "x = torch.randn(ROWS, COLS, device=DEVICE)" in text and "n = 1024  # a int" in text
    ast.parse(text)


@pytest.mark.gpu
def test_cuda_templates_run_the_samples_on_the_gpu(tmp_path):
    """On a GPU: each CUDA sample with a generated harness whose reference() is
    the sample's own: built, run and judged; no launch reads out of bounds."""
    from stark_lsp.evaluate.evaluator import Evaluator
    from stark_lsp.tasks.spec import load_task
    from tests.server_fixtures import REPO

    references = {  # what the user writes in reference(), for the inputs the template makes
        "softmax_rows": "def reference(x):\n    return torch.softmax(x, dim=-1)\n",
        "bias_gelu": "def reference(x, bias):\n    return torch.nn.functional.gelu(x + bias)\n",
        "matmul_naive": "def reference(a, b):\n    return a @ b\n",
        "layernorm": "def reference(x, w, b, eps):\n    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps)\n",
        "sum_dim1": "def reference(x):\n    return x.sum(dim=1)\n",
    }
    with Evaluator() as ev:
        for sample, reference in references.items():
            src = REPO / "samples/cuda" / f"{sample}.cu"
            text = render_harness("cuda", src.name, src.read_text(), None)
            start, end = text.index("def reference("), text.index("def run(")
            text = text[:start] + reference + "\n\n" + text[end:]
            text = text.replace("eps = 1.5  # float scalar: choose a value", "eps = 1e-5")
            (tmp_path / src.name).write_text(src.read_text())
            (tmp_path / f"{sample}.harness.py").write_text(text)
            task = load_task(tmp_path / src.name)
            result = ev.evaluate(task, task.root_source())
            # a reduction's output is allocated at the input's size, so it may be "incorrect";
            # no launch may fault (out of bounds) or fail
            assert result.status.value in ("ok", "incorrect"), (sample, result.status, result.message)
            if sample != "sum_dim1":
                assert result.status.value == "ok", (sample, result.message)
