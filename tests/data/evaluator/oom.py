import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        big = torch.empty(1 << 42, dtype=torch.uint8, device=a.device)  # 4 TiB
        return a * 2 + b + big[0]
