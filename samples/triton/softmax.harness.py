"""Harness of softmax.py: reference, inputs, and the entry function to call."""
import os

import torch

ENTRY = "softmax"
SMALL = os.environ.get("STARK_SMALL") == "1"  # small shapes for CPU tests


def reference(x):
    return torch.softmax(x, dim=-1)


def get_inputs():
    rows, cols = (64, 384) if SMALL else (16384, 8192)
    return [torch.randn(rows, cols)]
