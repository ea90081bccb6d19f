"""The CHANNELS_LAST switch of the fused ModelNew (fusion/runtime.py, tunables_triton.SWITCHES): written
for models with a library convolution whose results the forward never views; on, the convolutions'
weights go channels-last once and elementwise kernels write their results in their operands' memory
order, walking it along the channels; the values stay the model's (CPU, Triton interpreter)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from stark_lsp.agents.builtin import fusion
from stark_lsp.agents.builtin.fusion import runtime as rt
from stark_lsp.agents.builtin.tunables_triton import find_triton_tunables

sys.path.insert(0, str(Path(__file__).parent))
from kb_small import _load, compare  # noqa: E402
from test_fusion_kernelbench import small_source  # noqa: E402

OFF, ON = "\nCHANNELS_LAST = False\n", "\nCHANNELS_LAST = True\n"
WITH_SWITCH = ["1_Conv2D_ReLU_BiasAdd", "11_ConvTranspose2d_BatchNorm_Tanh_MaxPool_GroupNorm",
               "23_Conv3d_GroupNorm_Mean", "89_ConvTranspose3d_MaxPool_Softmax_Subtract_Swish_Max",
               "92_Conv2d_GroupNorm_Tanh_HardSwish_ResidualAdd_LogSumExp"]


@pytest.fixture
def following():
    rt._STARK_LAYOUT["follow"] = True
    yield
    rt._STARK_LAYOUT["follow"] = False


def test_an_elementwise_result_follows_a_channels_last_operand(following):
    x = torch.randn(2, 8, 5, 6).contiguous(memory_format=torch.channels_last)
    out = rt._stark_out(x.shape, [x, 2.0], torch.float32, "cpu")
    assert out.is_contiguous(memory_format=torch.channels_last) and not out.is_contiguous()
    launch = rt._stark_pointwise(x.shape, [x, 2.0], 256)
    # walked in memory order, every dim merges into one group of stride 1: reads along the channels
    assert launch.args[-5:-1] == [1, 1, 1, 2 * 8 * 5 * 6]
    assert launch.args[4] == 1 and launch.args[0].is_contiguous()  # operand 0's innermost stride; permuted view


def test_a_reduction_walks_a_channels_last_operand_along_the_channels(following):
    x = torch.randn(2, 8, 5, 6).contiguous(memory_format=torch.channels_last)
    # InstanceNorm's statistics (over H, W for each N, C): the channels are kept, a vector of them (COLS)
    per_channel = rt._stark_reduce(x.shape, (2, 3), [x], [torch.empty(2, 8, 1, 1)], 1024, 64)
    assert per_channel.sizes[3] == 8 and per_channel.sizes[6] == 30 and per_channel.meta["BLOCK_K"] == 8
    assert per_channel.head[1 + 3] == 1  # operand 0's stride on the kept vector slot: along the channels
    # the channels reduced (a GroupNorm's groups, a softmax over dim 1): the logical order's tile, as before
    same = []
    for follow in (True, False):
        rt._STARK_LAYOUT["follow"] = follow
        same.append([(r.sizes, r.head[1:8]) for r in (
            rt._stark_reduce(x.shape, None, [x], [torch.empty(2, 8, 1, 1)], 1024, 64, split_groups=2),
            rt._stark_reduce(x.shape, (1,), [x], [torch.empty(2, 1, 5, 6)], 1024, 64))])
    assert same[0] == same[1]
    rt._STARK_LAYOUT["follow"] = False  # before the switch: the logical order, the vector along W (stride C)
    logical = rt._stark_reduce(x.shape, (2, 3), [x], [torch.empty(2, 8, 1, 1)], 1024, 64)
    assert logical.sizes[6] == 30 and logical.head[1 + 6] == 8


def test_without_the_switch_the_result_keeps_the_logical_order():
    x = torch.randn(2, 8, 5, 6).contiguous(memory_format=torch.channels_last)
    assert rt._stark_order(x.shape, [x]) is None
    assert rt._stark_out(x.shape, [x], torch.float32, "cpu").is_contiguous()
    launch = rt._stark_pointwise(x.shape, [x], 256)
    assert launch.args[-5:-1] == [1, 2, 8, 30]  # N, C, H*W: the channels outside, strided reads


def test_only_a_dense_permuted_operand_sets_the_order(following):
    shape = (2, 8, 5, 6)
    broadcast = torch.randn(1, 8, 1, 1).expand(shape)
    sliced = torch.randn(2, 8, 5, 12)[..., ::2]
    assert rt._stark_order(shape, [broadcast, 3.0, sliced, torch.randn(shape)]) is None
    nhwc = torch.randn(shape).contiguous(memory_format=torch.channels_last)
    assert rt._stark_order(shape, [broadcast, nhwc]) == (0, 2, 3, 1)
    ndhwc = torch.randn(2, 8, 3, 4, 5).contiguous(memory_format=torch.channels_last_3d)
    assert rt._stark_order(ndhwc.shape, [ndhwc]) == (0, 2, 3, 4, 1)


def test_the_switch_is_written_only_where_it_can_run():
    for name in WITH_SWITCH:
        code = fusion.render(small_source(name))
        assert OFF in code and "CHANNELS_LAST" in [t.name for t in find_triton_tunables(code)], name
    # its pool's result viewed as another shape: a channels-last result could not be
    for name in ("38_ConvTranspose3d_AvgPool_Clamp_Softmax_Multiply", "97_Matmul_BatchNorm_BiasAdd_Divide_Swish"):
        code = fusion.render(small_source(name))
        assert "CHANNELS_LAST =" not in code and "if CHANNELS_LAST:" not in code, name


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", WITH_SWITCH)
def test_on_the_values_are_the_models_and_the_layout_is_channels_last(name):
    pytest.importorskip("triton")
    source = small_source(name)
    on = fusion.render(source).replace(OFF, ON)
    compare(source, on)
    ns = _load(source + "\n\n" + on)
    model = ns["ModelNew"](*ns["get_init_inputs"]()).eval()
    with torch.no_grad():
        model(*ns["get_inputs"]())
    convs = [m for m in model.modules() if isinstance(m, torch.nn.modules.conv._ConvNd)]
    fmt = torch.channels_last if convs[0].weight.dim() == 4 else torch.channels_last_3d
    assert convs and all(m.weight.is_contiguous(memory_format=fmt) and not m.weight.is_contiguous() for m in convs)


def test_on_an_elementwise_epilogue_writes_channels_last():
    pytest.importorskip("triton")
    source = small_source("1_Conv2D_ReLU_BiasAdd")  # conv, then relu + bias: one kernel whose result is returned
    outputs = {}
    for label, code in (("off", fusion.render(source)), ("on", fusion.render(source).replace(OFF, ON))):
        ns = _load(source + "\n\n" + code)
        with torch.no_grad():
            outputs[label] = ns["ModelNew"](*ns["get_init_inputs"]()).eval()(*ns["get_inputs"]())
    assert outputs["off"].is_contiguous()
    assert outputs["on"].is_contiguous(memory_format=torch.channels_last) and not outputs["on"].is_contiguous()
