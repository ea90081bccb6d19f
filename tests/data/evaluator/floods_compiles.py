"""A hostile candidate for add_task.py: in its first call it writes on the process's channel itself,
MODE "pairs": compile after compile said without ever reading the judge's answers (to hang the
judge in a send while it holds the GPU's gate); "unsaid": a compile's end that no start preceded.
Either is a broken protocol."""
import gc

import torch.nn as nn

MODE = "pairs"


class ModelNew(nn.Module):
    calls = 0

    def forward(self, a, b):
        ModelNew.calls += 1
        if ModelNew.calls == 1:
            chan = next(o for o in gc.get_objects() if type(o).__name__ == "Channel")
            if MODE == "unsaid":
                chan.send({"compiled": "k"})
            else:
                for _ in range(5000):
                    chan.send({"compiling": "k"})
                    chan.send({"compiled": "k"})
        return a * 2 + b
