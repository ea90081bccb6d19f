"""Harness of row_softmax.py. STARK_SMALL=1 gives small shapes for CPU tests."""

import os

import torch

ENTRY = "row_softmax"


def _shape() -> tuple[int, int]:
    return (8, 300) if os.environ.get("STARK_SMALL") == "1" else (16384, 8192)


def reference(x):
    return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(*_shape())]
