"""Class 3 (against scalar_task.py): right in its first calls, then the dot product in bfloat16 while it thinks
it is timed: a Python number now gets float32's tolerance, which must not let that through."""
import torch.nn as nn

_calls = [0]


class ModelNew(nn.Module):
    def forward(self, a, b):
        _calls[0] += 1
        if _calls[0] <= 3:
            return (a * b).sum().item()
        return (a.bfloat16() * b.bfloat16()).sum().item()
