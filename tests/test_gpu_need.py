"""The one "needs a GPU" rule (tasks/gpu_need.py) the server, the CLI and the evaluator share."""

from types import SimpleNamespace

from stark_lsp.tasks.gpu_need import CUDA, LOAD_INLINE, builds_cuda_inline, gpu_need


def task(kind, source="", unreadable=False):
    def root_source():
        if unreadable:
            raise FileNotFoundError("gone")
        return source
    return SimpleNamespace(kind=kind, root_source=root_source)


def test_cuda_and_a_kernelbench_file_that_builds_cuda_need_a_gpu():
    assert gpu_need(task("cuda")) == CUDA
    assert gpu_need(task("kernelbench", "from torch.utils.cpp_extension import load_inline\nm = load_inline(name='m')\n"
                                        )) == LOAD_INLINE
    assert gpu_need(task("kernelbench", "mod = torch.utils.cpp_extension.load(name='m', sources=[])\n")) == LOAD_INLINE


def test_everything_else_runs_without_one():
    assert gpu_need(task("triton", "load_inline")) is None  # only a KernelBench file's ModelNew builds CUDA itself
    assert gpu_need(task("kernelbench", "class ModelNew(Model):\n    pass\n")) is None
    assert gpu_need(task("kernelbench", unreadable=True)) is None  # reading it fails elsewhere, with its own message
    assert not builds_cuda_inline("def my_load_inline_helper(): pass\n")  # a whole name, not a part of one


def test_a_comment_or_a_string_that_names_load_inline_is_no_build():
    """Session 31's review: a Python candidate whose docstring said it needs no load_inline was "not run: no GPU"
    on the CPU, and on a GPU its load got compile_timeout_s (300 s) more, on a word."""
    assert not builds_cuda_inline('"""A pure PyTorch rewrite: no load_inline needed."""\nimport torch\n')
    assert not builds_cuda_inline("import torch  # from torch.utils.cpp_extension import load_inline\n")
    assert not builds_cuda_inline("NOTE = 'cpp_extension.load is not used'\n")
    assert builds_cuda_inline("from torch.utils import cpp_extension\nm = cpp_extension.load(name='m', sources=[])\n")
    assert builds_cuda_inline("def f(:\n    load_inline  # broken source: read whole\n")
    assert builds_cuda_inline('s = """unterminated\nload_inline\n')
    assert builds_cuda_inline("x = 1\x0c\nfrom torch.utils.cpp_extension import load_inline\nload_inline()\n")  # a form feed


def test_an_import_never_used_is_no_build_and_every_name_a_build_gets_is_seen():
    """Session 32: an unused ``import load_inline`` bought a Python candidate 300 s more for its load."""
    imp = "from torch.utils.cpp_extension import load_inline"
    assert not builds_cuda_inline(f"{imp}\nimport torch\n")
    assert not builds_cuda_inline("import torch.utils.cpp_extension as ce\nx = 1\n")
    assert not builds_cuda_inline("import json\ncfg = json.load(open('c'))\n")  # another module's ``load``
    assert builds_cuda_inline(f"{imp} as li\nm = li(name='m', cpp_sources='', cuda_sources='')\n")
    assert builds_cuda_inline(f"{imp}\nimport functools\nbuild = functools.partial(load_inline, name='m')\n")
    assert builds_cuda_inline("import torch.utils.cpp_extension as ce\nm = ce.load(name='m', sources=[])\n")
    assert builds_cuda_inline("from torch.utils.cpp_extension import load as build\nm = build(name='m')\n")
    assert builds_cuda_inline("import torch\nm = torch.utils.cpp_extension.load_inline(name='m')\n")
    assert builds_cuda_inline("import torch\nm = torch.utils.cpp_extension.load(name='m', sources=[])\n")
