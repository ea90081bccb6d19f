"""Class 4: ignores an input the output depends on (b in a * 2 + b), returning its typical value."""
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a * 2
