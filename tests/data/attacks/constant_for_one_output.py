"""Class 4 (against one_output_degenerate_task.py): the sound output computed, the degenerate one returned as
a constant without its matrix product: right on every call. The speedup is the task's flaw, and must say so."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a * 2 + b, torch.ones(a.shape[0], 1)
