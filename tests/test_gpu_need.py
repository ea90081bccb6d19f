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
    assert gpu_need(task("kernelbench", "from torch.utils.cpp_extension import load_inline\n")) == LOAD_INLINE
    assert gpu_need(task("kernelbench", "mod = torch.utils.cpp_extension.load(name='m', sources=[])\n")) == LOAD_INLINE


def test_everything_else_runs_without_one():
    assert gpu_need(task("triton", "load_inline")) is None  # only a KernelBench file's ModelNew builds CUDA itself
    assert gpu_need(task("kernelbench", "class ModelNew(Model):\n    pass\n")) is None
    assert gpu_need(task("kernelbench", unreadable=True)) is None  # reading it fails elsewhere, with its own message
    assert not builds_cuda_inline("def my_load_inline_helper(): pass\n")  # a whole name, not a part of one
