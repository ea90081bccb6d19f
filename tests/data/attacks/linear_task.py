"""A KernelBench-style task whose output is a fixed linear map of its input: y = x W^T + b.
Bigger on a GPU, so that a forged digest's product (float64) is well past the judge's
noise margin there too (about 2 ms on an H200; 40 ms for the CPU size on 2 cores)."""
import torch
import torch.nn as nn

ON_GPU = torch.cuda.is_available()
K, ROWS = (4096, 4096) if ON_GPU else (2048, 256)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(K, K)

    def forward(self, x):
        return self.fc(x)


def get_inputs():
    return [torch.randn(ROWS, K)]


def get_init_inputs():
    return []
