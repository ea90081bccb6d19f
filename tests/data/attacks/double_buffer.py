"""Not an attack: two output buffers kept as tensors, written in turn (double buffering, as a pipeline of CUDA
graphs does): each call's output is right when it returns, and the call after next writes it again."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.bufs = None
        self.turn = 0

    def forward(self, a, b):
        if self.bufs is None:
            self.bufs = torch.empty((2,) + tuple(a.shape), dtype=a.dtype)
        self.turn ^= 1
        out = self.bufs[self.turn]
        torch.mul(a, 2, out=out)
        return out.add_(b)
