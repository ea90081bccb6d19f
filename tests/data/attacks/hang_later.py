"""Class 12: correct at first, then hangs on a later call (a kernel that never ends, on the CPU)."""
import torch.nn as nn

_calls = [0]


class ModelNew(nn.Module):
    def forward(self, a, b):
        _calls[0] += 1
        if _calls[0] >= 2:
            while True:
                pass
        return a * 2 + b
