"""Harness of swish_add.py. STARK_SMALL=1 gives small shapes for CPU tests."""

import os

import torch

ENTRY = "swish_add"


def _n() -> int:
    return 4096 if os.environ.get("STARK_SMALL") == "1" else 128 * 1024 * 1024


def reference(x, y):
    return x * torch.sigmoid(x) + y


def get_inputs():
    n = _n()
    return [torch.randn(n), torch.randn(n)]
