import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        scale = {"two": 2}
        return a * scale["three"] + b
