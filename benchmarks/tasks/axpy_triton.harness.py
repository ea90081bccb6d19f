import torch

ENTRY = "axpy"
N = 1 << 24


def reference(x, b):
    return 3.0 * x + b


def get_inputs():
    return [torch.randn(N), torch.randn(N)]
