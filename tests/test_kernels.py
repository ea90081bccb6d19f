"""Kernel discovery: stark_lsp/tasks/kernels.py."""

from pathlib import Path

from stark_lsp.tasks.kernels import (
    find_cuda_functions,
    find_kernels,
    kernel_source,
    kernels_in_range,
    language_of,
    mask_cuda,
    mask_python,
    split_params,
)

REPO_SAMPLES = Path(__file__).resolve().parents[1] / "samples"

CUDA = r'''#include <cuda_runtime.h>
#define CHECK(x) do { if ((x) != cudaSuccess) { return; } } while (0)

// a comment with braces } { and __global__ void fake(int x) {}
/* block comment
   __global__ void also_fake() { }
*/
static const char* kMsg = "braces } in a string {";

__device__ float helper(float v) { return v > 0.f ? v : 0.f; }

template <typename T>
__global__ void __launch_bounds__(256) relu_kernel(const T* __restrict__ x, T* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        char c = '}';
        y[i] = helper(x[i]);
    }
}

__global__ void scale(float* y, float a, int n);  // a prototype, not a definition

__global__ void scale(float* y, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] *= a;
}

extern "C" void launch_relu(const float* x, float* y, int n) {
    relu_kernel<float><<<(n + 255) / 256, 256>>>(x, y, n);
}

extern "C" {
void launch_scale(float* y, float a, int n) { scale<<<(n + 255) / 256, 256>>>(y, a, n); }
}
'''


def test_cuda_kernels_found_with_ranges():
    ks = find_kernels(CUDA, "cuda")
    assert [k.name for k in ks] == ["relu_kernel", "scale"]
    relu, scale = ks
    lines = CUDA.split("\n")
    assert lines[relu.start_line] == "template <typename T>"
    assert lines[relu.end_line] == "}"
    assert lines[relu.name_line][relu.name_col :].startswith("relu_kernel(")
    assert relu.params == ("const T* __restrict__ x", "T* y", "int n")
    assert lines[scale.start_line] == "__global__ void scale(float* y, float a, int n)"
    assert lines[scale.end_line] == "}"
    assert scale.end_line - scale.start_line == 4


def test_cuda_comments_strings_and_chars_do_not_count():
    masked = mask_cuda(CUDA)
    assert len(masked) == len(CUDA)
    assert masked.count("\n") == CUDA.count("\n")
    assert "fake" not in masked and "also_fake" not in masked
    assert "braces" not in masked
    assert "'}'" not in masked and "' '" in masked
    assert "#include" not in masked and "#define" not in masked


def test_cuda_extern_c_launchers():
    fns = find_cuda_functions(CUDA)
    launchers = [f for f in fns if f.is_extern_c and not f.is_kernel]
    assert [f.name for f in launchers] == ["launch_relu", "launch_scale"]
    assert launchers[0].params == ("const float* x", "float* y", "int n")
    helper = next(f for f in fns if f.name == "helper")
    assert helper.is_device and not helper.is_kernel and not helper.is_extern_c


def test_cuda_unfinished_document_does_not_raise():
    half = CUDA[: CUDA.index("if (i < n) y[i]")]
    ks = find_kernels(half, "cuda")
    assert [k.name for k in ks] == ["relu_kernel", "scale"]
    assert ks[-1].end_line == half.count("\n")  # runs to the end of the text
    for cut in range(0, len(CUDA), 7):  # never raises, whatever the prefix
        find_kernels(CUDA[:cut], "cuda")


def test_cuda_raw_string_and_comment_with_quote():
    src = 'const char* s = R"x(__global__ void no() { })x";\n// it\'s fine\n__global__ void yes() {}\n'
    assert [k.name for k in find_kernels(src, "cuda")] == ["yes"]


TRITON = '''import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements,
               BLOCK: tl.constexpr):
    """Adds.

def not_a_kernel(): the docstring mentions a def
"""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)

    mask = offs < n_elements  # comment with a ) paren
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def add(x, y):
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out


@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 128}),
        triton.Config({"BLOCK": 256}),
    ],
    key=["n"],
)
@triton.jit
def relu_kernel(x_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)


class Holder:
    @triton.jit
    def method_kernel(x):
        pass
'''


def test_triton_kernels_by_indentation():
    ks = find_kernels(TRITON, "triton")
    assert [k.name for k in ks] == ["add_kernel", "relu_kernel", "method_kernel"]
    add, relu, method = ks
    lines = TRITON.split("\n")
    assert lines[add.start_line] == "@triton.jit"
    assert lines[add.end_line].lstrip().startswith("tl.store(")
    assert add.params == ("x_ptr", "y_ptr", "out_ptr", "n_elements", "BLOCK: tl.constexpr")
    assert lines[add.name_line][add.name_col :].startswith("add_kernel(")
    assert lines[relu.start_line].startswith("@triton.autotune(")
    assert lines[relu.end_line] == "    pid = tl.program_id(0)"
    assert lines[method.start_line] == "    @triton.jit"
    assert lines[method.end_line] == "        pass"


def test_triton_masking_keeps_offsets():
    masked = mask_python(TRITON)
    assert len(masked) == len(TRITON)
    assert "not_a_kernel" not in masked
    assert "comment with" not in masked


def test_triton_plain_functions_are_not_kernels():
    src = "import triton\n\ndef f(x):\n    return x\n\n@staticmethod\ndef g():\n    pass\n"
    assert find_kernels(src, "triton") == []


def test_triton_half_typed_decorator():
    assert find_kernels("@triton.jit\n", "triton") == []
    assert [k.name for k in find_kernels("@triton.jit\ndef k(x", "triton")] == ["k"]


def test_helpers():
    ks = find_kernels(TRITON, "triton")
    add = ks[0]
    assert kernels_in_range(ks, add.end_line, add.end_line) == [add]
    assert kernels_in_range(ks, 0, 2) == []
    assert kernel_source(TRITON, add).startswith("@triton.jit\ndef add_kernel(")
    assert language_of("cuda-cpp") == "cuda" and language_of("/a/b.cuh") == "cuda"
    assert language_of("python") == "triton" and language_of("x.txt") is None
    assert split_params("void") == ()
    assert split_params("std::pair<int, int> p, float* q") == ("std::pair<int, int> p", "float* q")


def test_a_kernelbench_file_has_one_kernel_its_model():
    text = (REPO_SAMPLES / "kernelbench" / "gelu.py").read_text()
    (k,) = find_kernels(text, "triton")
    lines = text.split("\n")
    assert (k.name, k.language) == ("Model", "kernelbench")
    assert lines[k.name_line].startswith("class Model(") and lines[k.name_line][k.name_col:].startswith("Model")
    assert "return F.gelu(x)" in lines[k.end_line] and lines[k.end_line + 1].strip() == ""
    # with a Triton ModelNew written into it, the model is still the one kernel
    with_new = text + "\n\n@triton.jit\ndef k(x_ptr):\n    pass\n\n\nclass ModelNew(Model):\n    pass\n"
    assert [x.name for x in find_kernels(with_new, "triton")] == ["Model"]
    # a file with a Model but no get_inputs is not KernelBench, nor is one whose Model is in a string
    assert find_kernels(text.replace("def get_inputs", "def other"), "triton") == []
    assert find_kernels('"""\nclass Model(nn.Module):\n"""\ndef get_inputs():\n    pass\n', "triton") == []
