"""Class 2: slow the clocks this process reads, then do real (slow) work."""
import sys
import time

import torch.nn as nn

_real = time.perf_counter
for name, mod in list(sys.modules.items()):
    if name.startswith("stark_lsp"):
        for attr in ("_perf", "_elapsed", "_record"):
            if hasattr(mod, attr) and attr == "_perf":
                setattr(mod, attr, lambda: _real() * 0.001)
            elif hasattr(mod, attr) and attr == "_elapsed":
                setattr(mod, attr, lambda s, e: 0.001)
        if hasattr(mod, "elapsed"):
            mod.elapsed = lambda s, e: 0.001
time.perf_counter = lambda: _real() * 0.001


class ModelNew(nn.Module):
    def forward(self, a, b):
        time.sleep(0.04)  # the real cost the forged clock hides
        return a * 2 + b
