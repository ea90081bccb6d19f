"""Class 12: correct, and far slower than the reference."""
import time

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        time.sleep(0.05)
        return a * 2 + b
