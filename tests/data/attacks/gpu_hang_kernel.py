"""Class 12 on a GPU: a Triton kernel that never ends (it waits for a flag nobody sets)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def spin(flag_ptr, out_ptr):
    v = tl.load(flag_ptr)
    while v == 0:
        v = tl.load(flag_ptr, volatile=True)
    tl.store(out_ptr, v)


class ModelNew(nn.Module):
    def forward(self, a, b):
        flag = torch.zeros(1, dtype=torch.int32, device=a.device)
        out = torch.empty(1, dtype=torch.int32, device=a.device)
        spin[(1,)](flag, out)
        return a * 2 + b
