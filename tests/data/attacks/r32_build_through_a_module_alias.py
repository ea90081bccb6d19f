"""Honest (class 10, a careless builder): builds its CUDA through ``torch.utils.cpp_extension`` bound to another
name (``ext.load``), never naming ``load_inline``. The rule that gives a build its time (tasks/gpu_need.py) read
only calls through an import's own name: this build got no build time, and on the CPU it was run (its build failed
there, a false verdict) instead of "not run: no GPU" (session 32's review)."""
import torch
import torch.nn as nn
import torch.utils.cpp_extension

ext = torch.utils.cpp_extension
_module = None


def _build():
    global _module
    if _module is None:
        _module = ext.load(name="r32_add", sources=["r32_add.cu"], verbose=False)
    return _module


class ModelNew(nn.Module):
    def forward(self, a, b):
        return _build().add(a, b) if torch.cuda.is_available() else a * 2 + b
