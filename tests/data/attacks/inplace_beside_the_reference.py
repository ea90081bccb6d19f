"""Against add_task.py: writes its answer into input b, which the reference leaves alone (still a cheat)."""
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return b.add_(a, alpha=2)
