"""Not an attack (against complex_task.py): the same product, its real and imaginary parts computed in another
order: float32 rounding, which a complex output was allowed none of before session 31's review (`incorrect`)."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        ar, ai = a.real, a.imag
        re = (ar * 0.3 + b.real) - ai * 0.7
        im = (ai * 0.3 + b.imag) + ar * 0.7
        return torch.complex(re, im)
