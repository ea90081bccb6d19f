"""Class 4, the property behind it: every call's inputs sit in storage the candidate has
never seen holding other values (a cache keyed on addresses can only miss). Honest
otherwise; it says on stderr when an address comes back with new contents."""
import sys

import torch.nn as nn

_seen = {}


class ModelNew(nn.Module):
    def forward(self, a, b):
        for t in (a, b):
            key, value = t.data_ptr(), float(t.double().sum())
            if _seen.get(key, value) != value:
                print(f"STORAGE REUSED at {key:#x}", file=sys.stderr, flush=True)
            _seen[key] = value
        print(f"calls so far: {len(_seen)} addresses", file=sys.stderr, flush=True)
        return a * 2 + b
