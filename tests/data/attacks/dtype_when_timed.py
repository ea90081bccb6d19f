"""Class 3: exact in the first calls, then float16 outputs (another dtype) in later ones."""
import torch.nn as nn

_calls = [0]


class ModelNew(nn.Module):
    def forward(self, a, b):
        _calls[0] += 1
        out = a * 2 + b
        return out.half() if _calls[0] > 3 else out
