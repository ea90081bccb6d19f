"""The judge's launch rule (pure logic): at least one of the candidate's own
kernels, by exact name, must have run."""

import pytest

pytest.importorskip("torch")

from stark_lsp.evaluate.judge.launch_rule import missing_launches  # noqa: E402

DISPATCH = """
if inner == 1:
    rows_kernel[(outer,)](x, y, R)
else:
    strided_kernel[grid](x, y, R, inner)
"""

FALLBACK = """
try:
    elementwise[grid](x, y, n)
except Exception:
    y = torch.relu(x)
"""


def test_a_kernel_chosen_by_shape_leaves_the_other_unlaunched():
    assert missing_launches(DISPATCH, ["rows_kernel", "strided_kernel"], {"rows_kernel"}) == []
    assert missing_launches(DISPATCH, ["rows_kernel", "strided_kernel"], {"strided_kernel"}) == []


def test_none_of_the_launched_kernels_ran():
    assert missing_launches(DISPATCH, ["rows_kernel", "strided_kernel"], set()) == ["rows_kernel", "strided_kernel"]


def test_names_match_exactly_not_by_substring():
    ran = {"vectorized_elementwise_kernel", "elementwise_kernel_with_index"}  # PyTorch's own kernels
    assert missing_launches(FALLBACK, ["elementwise"], ran) == ["elementwise"]


def test_a_kernel_defined_but_launched_indirectly_must_still_run():
    src = "kernels = {'a': my_kernel}\nkernels['a'].run(grid=(1,), warmup=False)"
    assert missing_launches(src, ["my_kernel"], set()) == ["my_kernel"]
    assert missing_launches(src, ["my_kernel"], {"my_kernel"}) == []


def test_a_dead_kernel_beside_a_launched_one_does_not_count_as_launched():
    src = "live[grid](x)\n"
    assert missing_launches(src, ["live", "dead"], {"dead"}) == ["live"]


def test_a_kernel_reached_but_not_launched_is_a_failed_launch_even_when_another_ran():
    src = "try:\n    fast[grid](x)\nexcept Exception:\n    y = torch.relu(x)\nnoop[(1,)](x)\n"
    assert missing_launches(src, ["fast", "noop"], {"noop"}, reached={"fast", "noop"}) == ["fast"]
    assert missing_launches(src, ["fast", "noop"], {"noop", "fast"}, reached={"fast", "noop"}) == []


def test_kernel_names_behind_launch_bounds_and_other_attributes():
    from stark_lsp.tasks.kernel_names import defined_kernel_names

    src = """
__global__ void __launch_bounds__(256) add(const float* x) {}
__global__ __launch_bounds__(256, 2) void scale(float* x) {}
template <int N>
__global__ void
__launch_bounds__(N)
tiled(float* __restrict__ x, int n) {}
extern "C" __global__ void softmax_rows_kernel(const float *x, float *y, int r, int c) {}
static __global__ void __cluster_dims__(2, 1, 1) clustered(float* x) {}
__global__ void (*pointer)(int);
"""
    assert defined_kernel_names(src) == ["add", "scale", "tiled", "softmax_rows_kernel", "clustered"]
    py = 'CUDA = """__global__ void relu_kernel(const float* a, float* b, int n) {}"""'
    assert defined_kernel_names(py) == ["relu_kernel"]


def test_a_source_that_may_replay_a_cuda_graph_is_checked_with_the_profiler():
    from stark_lsp.agents.builtin.tunables_triton import switch_lines
    from stark_lsp.evaluate.judge.judge import _profiled
    from stark_lsp.evaluate.judge.launch_rule import uses_cuda_graph

    triton_only = "@triton.jit\ndef k(x_ptr):\n    pass\n\ndef run(x):\n    k[(1,)](x)\n"
    assert not uses_cuda_graph(triton_only) and not _profiled(triton_only)  # Triton's counter sees its launches
    for graphed in ("g = torch.cuda.CUDAGraph()\n", "with torch.cuda.graph(g):\n", "torch.cuda.make_graphed_callables(m, (x,))\n",
                    "from torch.cuda import graph\n", "\n".join(switch_lines("CUDA_GRAPH"))):
        src = triton_only + graphed
        assert _profiled(src) == uses_cuda_graph(src)
    assert _profiled(triton_only + "g = torch.cuda.CUDAGraph()\n")  # a replay launches nothing from Python
    assert not uses_cuda_graph(triton_only + "# a graph of the call\nplot.graph(x)\n")
    seed = triton_only + "\n".join(switch_lines("CUDA_GRAPH")) + "\n\ng = torch.cuda.CUDAGraph()\n"
    assert not _profiled(seed)  # the team's switch off: no replay, the counter sees every launch
    assert _profiled(seed.replace("CUDA_GRAPH = False", "CUDA_GRAPH = True"))


def test_a_team_candidate_with_its_graph_switch_off_is_not_flagged_for_the_graphs_stream():
    """The built-in team's candidates carry the CUDA graph's runtime (a side stream for its warm-up): with the
    switch off that stream is never made, and every candidate read 'source creates its own CUDA stream'."""
    from stark_lsp.agents.builtin.cuda_graph_text import GRAPH
    from stark_lsp.evaluate.judge.launch_rule import source_flags

    off = f"CUDA_GRAPH = False\n\n{GRAPH}\n"
    assert not any("stream" in f for f in source_flags(off))
    assert any("own CUDA stream" in f for f in source_flags(off.replace("= False", "= True")))
    assert any("own CUDA stream" in f for f in source_flags("s = torch.cuda.Stream()\n"))  # anyone else's
