"""Honest: the output lives in memory the candidate keeps and reaches only through a raw buffer (a NumPy array here;
a C library's static buffer under ``torch::from_blob`` alike), written in place and wrapped anew every call. No
tensor or storage object survives the call, so only the storage's origin (not torch's allocator) tells."""
import numpy as np
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.raw = None

    def forward(self, a, b):
        if self.raw is None or self.raw.shape != tuple(a.shape):
            self.raw = np.empty(tuple(a.shape), dtype=np.float32)
        out = torch.from_numpy(self.raw)  # a new tensor and storage object each call, on the same memory
        torch.mul(a, 2, out=out)
        out.add_(b)
        return out
