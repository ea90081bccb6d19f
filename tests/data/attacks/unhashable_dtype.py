"""Class 9: a fetch reply whose output names its dtype as a list, which no dict lookup can hash.

The judge's check looked it up unchecked and raised TypeError: "evaluator error" with the judge's traceback as
the verdict, until the review of session 31. Now the candidate broke the protocol ("cheat: channel")."""
import sys

import torch.nn as nn

proc = sys.modules["stark_lsp.evaluate.candidate.process"]
_real = proc.CandidateProcess.op_fetch


def _fetch(self, msg):
    reply = _real(self, msg)
    for h in reply.get("outputs", []):
        if h.get("kind") == "tensor":
            h["dtype"] = ["float32"]
    return reply


proc.CandidateProcess.op_fetch = _fetch


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a * 2 + b
