"""Names ``load_inline`` in a comment and builds nothing: the judge takes such a source for one that compiles
CUDA while it loads, and lets go of the GPU's gate for its whole load (up to ``load_timeout_s`` +
``compile_timeout_s``, 6 minutes by default), with no compile said. Its import runs the GPU for RUN_S seconds
meanwhile, beside any other judge's timed window; then it is an honest candidate
(tests/test_evaluator_attacks_review27.py)."""
import time

import torch
import torch.nn as nn

# from torch.utils.cpp_extension import load_inline  -- never called
RUN_S = 2.0

if torch.cuda.is_available():
    _x = torch.randn(2048, 2048, device="cuda")
    _t = time.monotonic()
    while time.monotonic() - _t < RUN_S:
        for _ in range(20):
            _x = torch.tanh(_x @ _x)
        torch.cuda.synchronize()
    del _x


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a * 2 + b
