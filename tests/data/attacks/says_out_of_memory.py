"""Says the GPU's memory ran out on every call, as a candidate may to be evaluated again with the GPU to itself
(every other judge on the GPU held off for its whole evaluation), attempt after attempt."""
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        raise RuntimeError("CUDA out of memory. Tried to allocate 80.00 GiB (said by the candidate)")
