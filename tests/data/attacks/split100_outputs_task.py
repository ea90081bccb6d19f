"""A task (a tuple, a dict or many outputs: tests/test_evaluator_attacks_review29.py); its candidate is its own code."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return torch.split(a * 2 + b, 1, dim=1)


def get_inputs():
    return [torch.randn(64, 100), torch.randn(64, 100)]


def get_init_inputs():
    return []
