"""Harness of layernorm.py: layer norm over the last dimension, with affine weight and bias.

Full size: 65536 x 8192 fp32 (2.1 GB in, 2.1 GB out): at least 1 ms at an
H200's ~4.3 TB/s; eager F.layer_norm about 1.2-1.5 ms."""
import os

import torch
import torch.nn.functional as F

ENTRY = "layernorm"
SMALL = os.environ.get("STARK_SMALL") == "1"  # small shapes for CPU tests


def reference(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, 1e-5)


def get_inputs():
    rows, cols = (32, 700) if SMALL else (65536, 8192)
    return [torch.randn(rows, cols) * 2.0 + 0.5, 1.0 + 0.1 * torch.randn(cols), 0.1 * torch.randn(cols)]
