"""Class 3/4 (against one_big_element_task.py): the digest's bound of an output is a sum of its elements'
tolerances, so one element of a million (tolerance 100) lets every other element of a call not read back be
off by far more than its own tolerance: right in the trials (the first call alone, then one batch), input b
ignored on every later call (0.01 * b: 100 times the tolerance of each element). The calls read back, drawn
after each batch ran, catch it: ``cheat: wrong_while_timed``."""
import torch.nn as nn

_batches = {"n": 0, "last": None}


class ModelNew(nn.Module):
    def forward(self, a, b):
        import sys

        f, key = sys._getframe(1), None
        while f is not None and key is None:
            calls = f.f_locals.get("calls")
            key = id(calls) if isinstance(calls, list) else None
            f = f.f_back
        if key != _batches["last"]:
            _batches["n"] += 1
            _batches["last"] = key
        out = a * 2 + (b * 0.01 if _batches["n"] <= 2 else 0.0)
        out[0, 0] = 1e6
        return out
