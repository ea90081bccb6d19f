"""Class 1, second half: a plainly wrong candidate evaluated after a patching one."""
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a * 3 + b
