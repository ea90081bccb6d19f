"""A task (a tuple, a dict or many outputs: tests/test_evaluator_attacks_review29.py); its candidate is its own code."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return (a + b, (a - b, a * b))


def get_inputs():
    return [torch.randn(64, 128), torch.randn(64, 128)]


def get_init_inputs():
    return []
