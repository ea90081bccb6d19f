"""Harness of row_sum.cu. STARK_SMALL=1 gives small shapes for CPU tests.

Few long rows, so 32 threads per block leave the GPU mostly idle."""

import os

import torch


def _shape() -> tuple[int, int]:
    return (16, 1000) if os.environ.get("STARK_SMALL") == "1" else (512, 262144)


def reference(x):
    return x.sum(dim=-1)


def get_inputs():
    # positive values keep the relative error of a reordered fp32 sum small
    return [torch.rand(*_shape())]


def run(lib, x):
    rows, cols = x.shape
    out = torch.empty(rows, device=x.device, dtype=x.dtype)
    lib.row_sum(x, out, rows, cols)
    return out
