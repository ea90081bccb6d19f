"""Harness of softmax_rows.cu: the reference, the inputs, and how to call the launcher."""
import os

import torch

SMALL = os.environ.get("STARK_SMALL") == "1"  # small shapes for CPU tests


def reference(x):
    return torch.softmax(x, dim=-1)


def get_inputs():
    rows, cols = (256, 512) if SMALL else (16384, 4096)
    return [torch.randn(rows, cols)]


def run(lib, x):
    y = torch.empty_like(x)
    lib.softmax_rows(x, y, x.shape[0], x.shape[1])
    return y
