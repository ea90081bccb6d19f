"""Class 9: answers with JSON nested 100,000 deep, then with a digest that is a dict."""
import sys

import torch.nn as nn

proc = sys.modules["stark_lsp.evaluate.candidate.process"]
_real = proc.CandidateProcess._batch
_n = [0]


def _deep(self, msg, call, calibration=False):
    _n[0] += 1
    if _n[0] == 1:
        self.chan.sock.sendall(b'{"calls": ' + b"[" * 100000 + b"]" * 100000 + b"}\n")
        return _real(self, msg, call, calibration)
    reply = _real(self, msg, call, calibration)
    reply["calls"][0]["digest"] = {"sum": 1}
    return reply


proc.CandidateProcess._batch = _deep


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a * 2 + b
