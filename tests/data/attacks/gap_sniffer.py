"""Class 3: tells the judge's checks from its clock by the wall-clock gaps between calls: inside a batch the
calls follow one another within microseconds; after a batch the judge reads calls back and compares them
(milliseconds). A call that follows a long gap is "first in a batch" and done right; the others, which a
timed batch has hundreds of, skip the work once the process has seen more than the trials' calls.

Every call's digest is checked whatever the gaps say: ``cheat: wrong_while_timed``."""
import time

import torch
import torch.nn as nn

_state = {"last": 0.0, "calls": 0}


class ModelNew(nn.Module):
    def forward(self, a, b):
        now = time.perf_counter()
        gap, _state["last"] = now - _state["last"], now
        _state["calls"] += 1
        if gap > 2e-3 or _state["calls"] <= 8:
            return a * 2 + b
        return torch.zeros_like(a) + b  # "not looked at": within a batch
