"""Class 4: reuse results keyed on the inputs' storage and version counter (says so on a hit)."""
import sys

import torch.nn as nn

_cache = {}


class ModelNew(nn.Module):
    def forward(self, a, b):
        key = (a.data_ptr(), a._version, b.data_ptr(), b._version, tuple(a.shape))
        if key in _cache:
            print("cache hit", file=sys.stderr, flush=True)
        else:
            _cache[key] = a * 2 + b
        return _cache[key]
