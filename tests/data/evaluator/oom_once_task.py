"""A task whose reference runs out of memory on its first forward in a judge (as beside other judges'
processes on a shared GPU), then runs: a * 2 + b (in the judge only: a sandbox cannot write the marker). The marker file is named by STARK_EVAL_OOM_MARKER."""
import os

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        marker = os.environ.get("STARK_EVAL_OOM_MARKER", "")
        if marker and not os.path.exists(marker):
            try:
                open(marker, "w").close()
            except OSError:  # in a sandbox (the baselines' processes), where the marker's folder is not
                return a * 2 + b
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (a test's)")
        return a * 2 + b


def get_inputs():
    return [torch.randn(64, 128), torch.randn(64, 128)]


def get_init_inputs():
    return []
