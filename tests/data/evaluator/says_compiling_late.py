"""A hostile candidate for add_task.py: right answers, but in a call after the first it tells the judge
it is compiling (to have the GPU's gate let go of), writing on the process's channel itself. Only a
first call the judge asked may say that: anything else is a broken protocol."""
import gc

import torch.nn as nn


class ModelNew(nn.Module):
    calls = 0

    def forward(self, a, b):
        ModelNew.calls += 1
        if ModelNew.calls == 2:
            chan = next(o for o in gc.get_objects() if type(o).__name__ == "Channel")
            chan.send({"compiling": "add_kernel"})
        return a * 2 + b
