"""Class 3 against the rounding excuse (two_outputs_task.py): every timed call returns output 1 with a
'rounding' on its element nearest zero, and output 2 in float16 precision (lowered precision while timed).
Trials: exact, and 0.9e-4 on one element of output 1. Only output 1 strays as rounding: a cheat."""
import torch
import torch.nn as nn
_calls = [0]
class ModelNew(nn.Module):
    def forward(self, a, b):
        _calls[0] += 1
        o0 = a * 2 + b
        if _calls[0] > 3:
            f = o0.view(-1)
            f[f.abs().argmin()] += 3e-4
            return o0, (a.half() * b.half()).float()
        o0.view(-1)[0] += 0.9e-4
        return o0, a * b
