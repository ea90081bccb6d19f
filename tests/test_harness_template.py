"""Harness templates: stark_lsp/tasks/harness_template.py."""

import ast
import types as pytypes

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
