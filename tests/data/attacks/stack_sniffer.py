"""Class 3: tells trials from timed calls by its own call stack, and skips the work when it thinks it is timed.

Every call arrives through the same request, so whatever it keys on is the same in trials and timed calls."""
import inspect

import torch.nn as nn

_seen = []


class ModelNew(nn.Module):
    def forward(self, a, b):
        names = tuple(f.function for f in inspect.stack()[1:8])
        if not _seen:
            _seen.append(names)
        if names != _seen[0] or any(n in ("op_rep", "_timed", "op_warm", "timed") for n in names):
            return a * 0  # "not looked at"
        print("STACK", names)
        return a * 2 + b
