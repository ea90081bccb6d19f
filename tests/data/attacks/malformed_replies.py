"""Class 9: answers a batch with a status that is a list and a message that is an object."""
import sys

import torch.nn as nn

proc = sys.modules["stark_lsp.evaluate.candidate.process"].CandidateProcess


def _bad(self, msg, call, calibration=False):
    return {"error": {"status": ["compile_error"], "message": {"nested": [1, 2, 3]}, "diagnostics": "x"}}


proc._batch = _bad


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a * 2 + b
