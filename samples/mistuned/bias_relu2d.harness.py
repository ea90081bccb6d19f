"""Harness of bias_relu2d.cu. STARK_SMALL=1 gives small shapes for CPU tests."""

import os

import torch


def _shape() -> tuple[int, int]:
    return (30, 70) if os.environ.get("STARK_SMALL") == "1" else (8192, 8192)


def reference(x, bias):
    return torch.relu(x + bias)


def get_inputs():
    rows, cols = _shape()
    return [torch.randn(rows, cols), torch.randn(cols)]


def run(lib, x, bias):
    rows, cols = x.shape
    out = torch.empty_like(x)
    lib.bias_relu(x, bias, out, rows, cols)
    return out
