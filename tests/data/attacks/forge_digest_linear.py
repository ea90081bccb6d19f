"""Against linear_task.py: answer the trials honestly, skip the product on timed calls, and
forge each timed call's digest from the input alone. The digest is sum(S * y) for the call's
signs S; for y = x W^T + b that is sum((S W) * x) + sum(S.sum(0) * b). With signs that stay the
same across calls, S W is made once and every forged digest costs one cheap product (this got
"ok" at 439x when they did, 2026-12-01); with new signs for every call, S W is a product as big
as the task's own, made outside the timed call, on the judge's clock."""
import sys

import torch
import torch.nn as nn

cp = sys.modules["stark_lsp.evaluate.candidate.process"]
D = sys.modules["stark_lsp.evaluate.wire.digest"]
state = {"timed": False, "x": None, "model": None, "made": {}}
real_digest, real_rep = cp.digest, cp.CandidateProcess.op_rep


def rep(self, msg):
    state["timed"] = True
    try:
        return real_rep(self, msg)
    finally:
        state["timed"] = False


def forged(values, seed):
    x, state["x"] = state["x"], None
    if x is None:
        return real_digest(values, seed)
    fc = state["model"].fc
    n = x.shape[0] * fc.out_features
    if seed not in state["made"]:  # the signs the judge will use, then S W
        g = D._generator(seed, 0, x.device)
        flip = torch.empty(n, dtype=torch.float32, device=x.device).bernoulli_(0.5, generator=g)
        s = (1.0 - 2.0 * flip.double()).view(x.shape[0], fc.out_features)
        state["made"] = {seed: (s @ fc.weight.double(), (s.sum(0) * fc.bias.double()).sum())}
    sw, c = state["made"][seed]
    return [[float((sw * x.double()).sum() + c), 0.0, 0.0, 0.0]]


cp.digest = forged
cp.CandidateProcess.op_rep = rep


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        k = 4096 if torch.cuda.is_available() else 2048  # as linear_task.py
        self.fc = nn.Linear(k, k)  # the same weights, under the judge's parameter seed
        state["model"] = self

    def forward(self, x):
        if state["timed"]:
            state["x"] = x
            return torch.zeros(1, device=x.device)  # no product while timed
        return self.fc(x)
