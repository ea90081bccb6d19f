"""Class 7: 2 GiB touched in one call, under the process's own limit (3/4 of RAM) but past the sandboxes' cap."""
import torch.nn as nn

SIZE = 2 << 30


class ModelNew(nn.Module):
    def forward(self, a, b):
        block = bytearray(SIZE)
        block[::4096] = b"\x01" * (SIZE // 4096)
        return a * 2 + b
