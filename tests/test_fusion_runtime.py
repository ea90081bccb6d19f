"""The fused ModelNew's run-time helpers (fusion/runtime.py), without kernels: shapes as torch
computes them, the grouping of dims into kernel slots, and the operands made contiguous only when
a kernel's slots cannot walk them."""

from __future__ import annotations

import pytest
import torch

from stark_lsp.agents.builtin.fusion import runtime as rt


@pytest.mark.parametrize("shapes", [[(4, 1, 3), (5, 1), ()], [(2, 3), (3,)], [(1,), (7, 1, 1)], [()]])
def test_bshape_is_torch_broadcasting(shapes):
    assert rt._stark_bshape(*shapes) == tuple(torch.broadcast_shapes(*shapes))


def test_bshape_refuses_what_torch_refuses():
    with pytest.raises(RuntimeError, match="do not broadcast"):
        rt._stark_bshape((2, 3), (4,))


@pytest.mark.parametrize("dims,keep", [(1, True), ((0, 2), False), (None, False), ("bn", True), ("spatial", True),
                                        (("last", 2), True), (-1, False)])
def test_reduced_shapes(dims, keep):
    x = torch.empty(2, 3, 4, 5)
    want = {"bn": (0, 2, 3), "spatial": (2, 3), ("last", 2): (2, 3)}.get(dims, dims)
    expected = x.sum(dim=want, keepdim=keep).shape if want is not None else x.sum().shape
    if want is None and keep:
        expected = (1,) * 4
    assert rt._stark_rshape(x.shape, dims, keep) == tuple(expected)


@pytest.mark.parametrize("cfg", [
    ("max", 2, dict(kernel_size=3, stride=2, padding=1)), ("avg", 2, dict(kernel_size=2)),
    ("max", 3, dict(kernel_size=2, stride=2, dilation=2, ceil_mode=True)), ("avg", 1, dict(kernel_size=4, stride=3,
                                                                                         ceil_mode=True, padding=1)),
])
def test_pool_shapes_are_torch_shapes(cfg):
    op, nd, kw = cfg
    shape = (2, 3, 11, 9, 8)[: 2 + nd]
    fn = getattr(torch.nn.functional, f"{op}_pool{nd}d")
    assert rt._stark_pshape(shape, rt._stark_pool_config(nd, op, **kw)) == tuple(fn(torch.empty(shape), **kw).shape)


def test_a_per_channel_bias_keeps_three_groups_and_a_full_tensor_merges_into_one():
    space = (8, 16, 10, 10)
    x = torch.empty(space)
    bias = torch.empty(16, 1, 1).expand(space)
    launch = rt._stark_pointwise(space, [x, bias, 2.0], 1024)
    sizes = launch.args[-5:-1]
    assert sizes == [1, 8, 16, 100]  # (N)(C)(H*W): the channel is a scalar of each program
    assert launch.meta["M2"] == 0 and launch.meta["M0"] == launch.meta["M1"] == 1
    full = rt._stark_pointwise(space, [x, x * 2], 1024)
    assert full.args[-5:-1] == [1, 1, 1, 8 * 16 * 100]


def test_an_operand_that_needs_too_many_groups_is_made_contiguous():
    space = (4, 5, 6, 7, 8)
    odd = torch.empty(8, 7, 6, 5, 4).permute(4, 3, 2, 1, 0)  # every dim breaks a merge
    launch = rt._stark_pointwise(space, [torch.empty(space), odd], 256)
    assert launch.args[-5:-1] == [1, 1, 1, 4 * 5 * 6 * 7 * 8]
    assert launch.args[5].is_contiguous() and launch.args[5] is not odd  # operand 1 (after operand 0 and its 4 strides)


def test_reduction_slots_rows_and_columns():
    rows = rt._stark_reduce((6, 1000), 1, [torch.empty(6, 1000)], [torch.empty(6, 1)], 1024, 64)
    assert rows.sizes[:4] == [1, 1, 6, 1] and rows.sizes[6] == 1000 and rows.meta["BLOCK_K"] == 1
    cols = rt._stark_reduce((6, 1000, 32), 1, [torch.empty(6, 1000, 32)], [torch.empty(6, 1, 32)], 1024, 64)
    assert cols.sizes[3] == 32 and cols.sizes[6] == 1000 and cols.meta["BLOCK_K"] == 32


def test_few_kept_outputs_split_the_reduction():
    r = rt._stark_reduce((100000,), None, [torch.empty(100000)], [torch.empty(1)], 1024, 64)
    assert r.split > 1 and r.grid == (r.split,)


def test_group_norm_statistics_repeat_per_channel():
    x = torch.empty(2, 12, 5, 5)
    mean = torch.empty(2, 12, 1, 1)
    r = rt._stark_reduce(x.shape, "group", [x], [mean], 1024, 64, split_groups=3)
    assert r.repeat == 4 and r.rep_stride == 1


def test_dtype_follows_torch_promotion():
    f16 = torch.empty(3, dtype=torch.float16)
    assert rt._stark_dtype(f16, 2.0) == torch.float16
    assert rt._stark_dtype(f16, torch.empty(3)) == torch.float32
    assert rt._stark_dtype(torch.empty(3, dtype=torch.int64), 0.5) == torch.float32
    assert rt._stark_dtype(torch.empty(3, dtype=torch.float64), torch.tensor(1.0)) == torch.float64


def test_the_team_copies_the_runtime_as_text_without_importing_torch_or_triton():
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys, importlib\nA = importlib.import_module('stark_lsp.agents.builtin.fusion.assemble')\n"
            "import stark_lsp.agents.builtin.plan, stark_lsp.agents.builtin.code\n"
            "text = A.runtime_text()\n"
            "print('def _stark_shape(v):' in text, 'import triton' in text.split('def ', 1)[0],\n"
            "      [m for m in ('torch', 'triton', 'stark_lsp.agents.builtin.fusion.runtime') if m in sys.modules])\n")
    root = Path(__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert r.stdout.split("\n")[0] == "True False []", r.stdout + r.stderr
