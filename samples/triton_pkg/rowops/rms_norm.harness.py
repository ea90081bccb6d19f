"""Harness of rowops/rms_norm.py: reference, inputs, and the entry function to call."""
import os

import torch

ENTRY = "rms_norm"
SMALL = os.environ.get("STARK_SMALL") == "1"  # small shapes for CPU tests


def reference(x, w):
    return x * torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + 1e-6) * w


def get_inputs():
    rows, cols = (32, 320) if SMALL else (16384, 8192)
    return [torch.randn(rows, cols), torch.randn(cols)]


TOLERANCE = {"atol": 1e-4, "rtol": 1e-4}
