"""A task whose reference returns a NumPy array (tests/test_evaluator_attacks_review29.py)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return (a + b).numpy()


def get_inputs():
    return [torch.randn(64, 128), torch.randn(64, 128)]


def get_init_inputs():
    return []
