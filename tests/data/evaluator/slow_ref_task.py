"""A task whose reference is needlessly slow, so an honest candidate is >10x faster."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a):
        out = a
        for _ in range(200):
            out = torch.relu(out.clone())
        return out


def get_inputs():
    return [torch.randn(256, 256)]


def get_init_inputs():
    return []
