"""Harness of l2norm.cu: reference, inputs, how to call it, and the other unit to link.

Include directories and macros come from ../build/compile_commands.json (as
CMake writes it); BUILD only names what a compile database cannot say: which
other translation units the kernel is linked with.
"""

import os

import torch

BUILD = {"sources": ["scale_rows.cu"]}

SMALL = os.environ.get("STARK_SMALL") == "1"
ROWS, COLS = (64, 256) if SMALL else (16384, 4096)


def reference(x):
    return x * torch.rsqrt((x * x).sum(dim=1, keepdim=True) + 1e-6)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def run(lib, x):
    inv = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
    y = torch.empty_like(x)
    lib.l2_normalize_rows(x, inv, y, x.shape[0], x.shape[1])
    return y


TOLERANCE = {"atol": 1e-4, "rtol": 1e-4}
