"""Device chain: spend the work while the batch's inputs are drawn (``prepare``, a request of its own).

A stand-in for the steering attack a hostile review found: forge each committed digest, within its
tolerance, so the next call's perturbation lands on inputs whose answers were worked out in ``prepare``.
Here the work is a sleep in ``prepare`` and the calls themselves are honest and fast: whatever the
work buys, it is done there, so the judge must count that time."""
import sys
import time

import torch.nn as nn

proc = sys.modules["stark_lsp.evaluate.candidate.process"].CandidateProcess
_real = proc.op_prepare


def _slow(self, msg):
    reply = _real(self, msg)
    if self.fn is not None:
        time.sleep(0.08 * len(self.prepared))  # 80 ms of "precomputation" for every call of the batch
    return reply


proc.op_prepare = _slow


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a * 2 + b
