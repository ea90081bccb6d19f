"""Which kernels a candidate defines: one function (tasks/kernel_names.py) for the judge and the profiler.

Before it, the profiler (profile/ncu.py) and the judge (evaluate/judge/launch_rule.py) each had their own
patterns and could disagree (issue 26); the old ones are kept here, as they were, only to show that every
case below was one they disagreed on, and that both now get the one answer."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from stark_lsp.tasks.kernel_names import cuda_kernel_names, defined_kernel_names, triton_kernel_names

ROOT = Path(__file__).resolve().parents[1]

# -- what each had before (issue 26), for the comparison only ---------------------------------
_OLD_NCU_CUDA = re.compile(r"__global__\s+[\w:<>\s\*&]*?\b(\w+)\s*\(")
_OLD_NCU_LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\([^)]*\)")
_OLD_NCU_TRITON = re.compile(r"@triton\.(?:jit|autotune\([^@]*?\))\s*(?:@[\w.]+(?:\([^)]*\))?\s*)*def\s+(\w+)", re.S)
_OLD_JUDGE_TRITON = re.compile(r"@triton\.jit[^\n]*\n(?:\s*@[^\n]*\n)*\s*def\s+(\w+)\s*\(")


def old_profiler(source: str) -> list[str]:
    names = [m.group(1) for m in _OLD_NCU_CUDA.finditer(_OLD_NCU_LAUNCH_BOUNDS.sub(" ", source))]
    names += [m.group(1) for m in _OLD_NCU_TRITON.finditer(source)]
    return list(dict.fromkeys(names))


def old_judge(source: str) -> list[str]:
    # the judge's CUDA scan is the one tasks/kernel_names.py now holds, moved as it was
    names = cuda_kernel_names(source) + [m.group(1) for m in _OLD_JUDGE_TRITON.finditer(source)]
    return list(dict.fromkeys(names))


DISAGREED = {  # source -> the kernels it defines, as both now say
    "launch bounds with a macro call": ("__global__ void __launch_bounds__(MAX_THREADS(256)) k(float* x) {}", ["k"]),
    "cluster dims": ("__global__ void __cluster_dims__(2, 1, 1) k(float* x) {}", ["k"]),
    "an attribute": ("__global__ void __attribute__((used)) k(float* x) {}", ["k"]),
    "a pointer, no kernel": ("__global__ void (*launch)(float*);", []),
    "template, extern C and launch bounds among a pointer": (
        'template <typename T, int N>\n__global__ void __launch_bounds__(N) tiled(T* x) {}\n'
        'extern "C" __global__ void softmax(const float* x, float* y) {}\n__global__ void (*p)(int);\n',
        ["tiled", "softmax"]),
    "jit with arguments": ("@triton.jit(do_not_specialize=['n'])\ndef k(x, n):\n    pass\n", ["k"]),
    "a decorator on several lines below jit": ("@triton.jit\n@some.decorator(\n    a=1,\n)\ndef k(x):\n    pass\n", ["k"]),
    "autotune without jit is no kernel": ("@triton.autotune(configs=[], key=['n'])\ndef k(x):\n    pass\n", []),
    "jitter is not jit": ("@triton.jitter\ndef k(x):\n    pass\n", []),
    "CUDA in a Python string beside Triton with arguments": (
        'SRC = """\n__global__ void __cluster_dims__(1, 1, 1) relu(const float* a, float* b) {}\n"""\n'
        "@triton.autotune(configs=[triton.Config({'B': 128})], key=['n'])\n@triton.jit(debug=False)\n"
        "def add_kernel(x):\n    pass\n", ["relu", "add_kernel"]),
}


@pytest.mark.parametrize("case", sorted(DISAGREED))
def test_where_the_old_two_disagreed_there_is_one_answer(case):
    source, names = DISAGREED[case]
    assert old_profiler(source) != old_judge(source), case  # the disagreement issue 26 found
    assert defined_kernel_names(source) == names, case


BOTH_MISSED = {  # valid Triton kernels neither old pattern saw
    "jit with arguments on several lines, a decorator below it on several lines":
        "@triton.jit(\n    do_not_specialize=['n'],\n)\n@functools.wraps(\n    f,\n)\ndef k(x, n):\n    pass\n",
    "a comment between jit and def": "@triton.jit\n# the row kernel\ndef k(x):\n    pass\n",
}


@pytest.mark.parametrize("case", sorted(BOTH_MISSED))
def test_what_both_old_ones_missed_is_found(case):
    source = BOTH_MISSED[case]
    assert old_profiler(source) == old_judge(source) == [], case
    assert defined_kernel_names(source) == ["k"], case


def test_the_old_two_agreed_and_still_do():
    for source, names in [
        ("__global__ void __launch_bounds__(256) add(const float* x) {}", ["add"]),
        ('extern "C" __global__ void softmax_rows_kernel(const float *x, float *y, int r, int c) {}',
         ["softmax_rows_kernel"]),
        ("template <int N>\n__global__ void\n__launch_bounds__(N)\ntiled(float* __restrict__ x, int n) {}", ["tiled"]),
        ("@triton.autotune(configs=[triton.Config({'B': 128}, num_warps=4)], key=['n'])\n@triton.jit\ndef k(x):\n"
         "    pass\n", ["k"]),
        ("@triton.heuristics({'E': lambda a: a['n'] % 2 == 0})\n@triton.jit\ndef k(x):\n    pass\n", ["k"]),
        ((ROOT / "samples/triton/softmax.py").read_text(), ["softmax_kernel"]),
        ((ROOT / "samples/cuda/softmax_rows.cu").read_text(), ["softmax_rows_kernel"]),
    ]:
        assert old_profiler(source) == old_judge(source) == defined_kernel_names(source) == names, source[:60]


def test_comments_blank_lines_and_spacing_between_the_decorators_and_def():
    src = "@ triton . jit\n\n# the row kernel\n@functools.cache  # not Triton's\n\ndef rows(x):\n    pass\n"
    assert triton_kernel_names(src) == ["rows"]
    assert triton_kernel_names("@triton.jit(\n  key=')(',\n)\ndef k(x):\n    pass\n") == ["k"]  # a paren in a string
    # Python cannot parse it (it could never run): read line by line, as the judge's old pattern did
    assert triton_kernel_names("@triton.jit(\ndef k(x):\n") == ["k"]


def test_each_kernel_once_cuda_first():
    src = ('A = "__global__ void k(float* x) {}"\nB = "__global__ void k(float* x) {}"\n'
           "@triton.jit\ndef t(x):\n    pass\n")
    assert defined_kernel_names(src) == ["k", "t"]


def test_the_judge_and_the_profiler_ask_the_one_function():
    from stark_lsp.evaluate.candidate import errors
    from stark_lsp.evaluate.judge import launch_rule
    from stark_lsp.profile import ncu

    for module in (ncu, launch_rule, errors):
        assert module.defined_kernel_names is defined_kernel_names, module.__name__
    judge = ast.parse((ROOT / "stark_lsp/evaluate/judge/judge.py").read_text())  # imports torch: read, not imported
    imported = {(n.module, a.name) for n in ast.walk(judge) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert {("stark_lsp.tasks.kernel_names", "defined_kernel_names"),
            ("stark_lsp.tasks.kernel_names", "triton_kernel_names")} <= imported


HIDERS = [  # text placed before the kernels by a candidate that wants its fallback to PyTorch unseen
    "# helper notes: __global__ (see the kernel below\n",
    "/* __global__ ( */\n",
    's = "__global__ __launch_bounds__("\n',
    "#define G __global__ (\n",
    '__attribute__((annotate("(")))\n',
    "# @triton.jit(\n",
    "s = '@triton.jit('\n",
    '"""@triton.jit(\n"""\n',
]
CUDA_AND_TRITON = (
    'cuda = """\n__global__ void matmul_kernel(const float* a, float* c) { c[0] = a[0]; }\n"""\n'
    "@triton.jit\ndef add_kernel(x, y):\n    pass\n"
)


@pytest.mark.parametrize("hider", HIDERS)
def test_no_text_before_a_kernel_hides_it(hider):
    """A hostile review's finding: an unclosed attribute or decorator in a comment or a string hid every
    kernel after it (the launch rule then saw none, and a fallback to PyTorch passed). Each match is read
    on its own, and Triton's from Python's own parse."""
    assert defined_kernel_names(hider + CUDA_AND_TRITON) == ["matmul_kernel", "add_kernel"]


NOT_A_KERNEL = 'text = """\n@triton.jit\ndef not_a_kernel(x):\n    pass\n"""\n'


def test_a_triton_kernel_under_any_decorator_and_none_in_strings():
    src = ("import triton\n@triton.jit\n@(lambda f: f)\n@decos[0]\n@mk()(1)\ndef k(x):\n    pass\n" + NOT_A_KERNEL +
           "class Ops:\n    @staticmethod\n    @triton.jit(do_not_specialize=['n'])\n    def method_kernel(n):\n"
           "        pass\n")
    assert triton_kernel_names(src) == ["k", "method_kernel"]


def test_a_source_of_many_unclosed_ones_is_still_read_whole():
    """Linear in the source's size (no timing here: the answer shows every match was read on its own)."""
    src = "__global__ __launch_bounds__(\n" * 20000 + "__global__ void late(int a) {}\n" + "# @triton.jit(\n" * 20000
    assert cuda_kernel_names(src) == ["late"]
