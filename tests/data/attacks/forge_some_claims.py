"""Class 2 (CPU and GPU): honest work, but the process's own figure for most calls is a fifth of the truth.

Patches the candidate process's batch loop (it runs in the same process) so that three of every five calls
claim a fifth of their time. The judge's clock around each batch sees the honest work."""
import sys
import time

import torch.nn as nn

proc = sys.modules["stark_lsp.evaluate.candidate.process"].CandidateProcess
_real = proc._batch


_n = [0]


def _forged(self, msg, call, calibration=False):
    reply = _real(self, msg, call, calibration)
    for c in reply.get("calls") or []:
        _n[0] += 1
        if _n[0] % 5 >= 2:
            c["ms"] = c["ms"] / 5
    return reply


proc._batch = _forged


class ModelNew(nn.Module):
    def forward(self, a, b):
        time.sleep(0.02)  # the honest cost
        return a * 2 + b
