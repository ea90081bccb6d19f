"""Class 9: a reply of 4 MiB less a little, one string that never closes, made of escaped quotes (``\\"``).

The judge's scan for nesting (``channel.nesting_depth``) matched strings with one pattern that backtracked from
every quote in it: the judge sat in the scan for hours (over 11 minutes seen, still going), its GPU's gate held,
until the review of session 31. Now the reply is refused at once ("broke the protocol")."""
import sys

import torch.nn as nn

proc = sys.modules["stark_lsp.evaluate.candidate.process"]
_real = proc.CandidateProcess._batch


def _unclosed(self, msg, call, calibration=False):
    self.chan.sock.sendall(b'{"calls": "' + b'\\"' * ((2 << 20) - 64) + b"\n")
    return _real(self, msg, call, calibration)


proc.CandidateProcess._batch = _unclosed


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a * 2 + b
