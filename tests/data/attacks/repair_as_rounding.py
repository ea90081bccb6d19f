"""Class 3 against the rounding excuse: float16 in every timed call; at a read-back, the exact output with
one element nudged 3e-4 (a 'rounding'). Trials: exact, and 0.9e-4 on one element, so the trials' largest
error is 0.9e-4 (4x: 3.6e-4). The bytes read back are not those the call committed to: a cheat."""
import gc, sys
import torch
import torch.nn as nn
_calls = [0]
_st = {}

def _process():
    for mod in list(sys.modules.values()):
        cls = getattr(mod, "CandidateProcess", None)
        if isinstance(cls, type):
            for obj in gc.get_objects():
                if isinstance(obj, cls):
                    return obj
    return None

def _hook(p):
    fetch = p.op_fetch
    def op_fetch(msg):
        j = msg.get("index")
        if _calls[0] > 3 and isinstance(j, int) and 0 <= j < len(p.kept):
            seed, inputs, out = p.kept[j]
            exact = (inputs[0] * 2 + inputs[1]).clone()
            f = exact.view(-1)
            f[f.abs().argmin()] += 3e-4
            p.kept[j] = (seed, inputs, [exact])
        return fetch(msg)
    p.op_fetch = op_fetch
    _st["hooked"] = True

class ModelNew(nn.Module):
    def forward(self, a, b):
        if "hooked" not in _st:
            p = _process()
            if p is not None:
                _hook(p)
        _calls[0] += 1
        out = a * 2 + b
        if _calls[0] > 3:
            return out.half().float()
        out.view(-1)[0] += 0.9e-4
        return out
