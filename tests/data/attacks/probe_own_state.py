"""Prints its own limits, priority and CPUs (what it inherited from the zygote)."""
import os
import resource

import torch.nn as nn

names = sorted(n for n in dir(resource) if n.startswith("RLIMIT_"))
print("STATE", {n: resource.getrlimit(getattr(resource, n)) for n in names}, os.getpriority(os.PRIO_PROCESS, 0),
      sorted(os.sched_getaffinity(0)))


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a * 2 + b
