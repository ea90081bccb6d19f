"""Class 4: a task with two outputs, one of which does not depend on the inputs: a softmax over a dimension of
size 1 after a matrix product is all ones (KernelBench's degenerate pattern), returned beside a sound output."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        scores = (a @ b.T).sum(dim=1, keepdim=True)
        return a * 2 + b, torch.softmax(scores, dim=1)


def get_inputs():
    return [torch.randn(128, 128), torch.randn(128, 128)]


def get_init_inputs():
    return []
