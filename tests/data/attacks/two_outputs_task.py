"""A task of two outputs for evaluator tests: a * 2 + b and a * b."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return a * 2 + b, a * b


def get_inputs():
    return [torch.randn(64, 128), torch.randn(64, 128)]


def get_init_inputs():
    return []
