"""Class 3 (against complex_task.py): right in its first calls, then each part computed in float16 while it
thinks it is timed; the complex output's new tolerance (its parts' float32's) must not let that through."""
import torch
import torch.nn as nn

_calls = [0]


class ModelNew(nn.Module):
    def forward(self, a, b):
        _calls[0] += 1
        if _calls[0] <= 3:
            return a * (0.3 + 0.7j) + b
        h = torch.view_as_real(a).half()
        w = torch.view_as_real(b).half()
        re = h[..., 0] * 0.3 - h[..., 1] * 0.7 + w[..., 0]
        im = h[..., 1] * 0.3 + h[..., 0] * 0.7 + w[..., 1]
        return torch.complex(re.float(), im.float())
