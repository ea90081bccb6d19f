import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return torch.addcmul(b, a, torch.full_like(a, 2.0))
