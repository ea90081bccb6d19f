"""Class 3: half precision in every call (once it has hooked in), and an exact output, nudged to fit the commitment, whenever one is read back.

Every call returns its output rounded through float16 (about half the elements outside the float32
tolerance; the signed-sum digest moves by little, within its bound). When the judge reads a call back,
the process computes that call again exactly from the inputs it kept, then moves its elements by a small
fraction of the tolerance, along the digest's own signs (``wire/signed_sum.py``), until the signed
sum equals the one it committed to while the call ran. The read-back then passes element by element and
matches the committed digest: only a commitment that binds every byte (``wire/output_hash.py``) sees it."""
import gc
import sys

import torch
import torch.nn as nn

_state: dict = {}


def _process():
    for mod in list(sys.modules.values()):
        cls = getattr(mod, "CandidateProcess", None)
        if isinstance(cls, type):
            for obj in gc.get_objects():
                if isinstance(obj, cls):
                    return obj
    return None


def _fit(exact: torch.Tensor, target: float, sign: int) -> torch.Tensor:
    from stark_lsp.evaluate.wire.digest import digest
    from stark_lsp.evaluate.wire.signed_sum import key, signs_negative

    y = exact.clone().reshape(-1)
    s = torch.where(signs_negative(y.numel(), key(sign, 0, 0), y.device), -1.0, 1.0).to(y.dtype)
    for step in range(8):  # the rounding of each nudge leaves a residue: nudge again, fewer elements
        miss = target - digest([y], sign)[0][0]
        m = max(1, y.numel() >> (2 * step))  # every element first: each moves by far less than the tolerance
        idx = torch.arange(m, device=y.device) * (y.numel() // m)
        y[idx] += s[idx] * (miss / m)
    return y.reshape(exact.shape)


def _hook(p) -> None:
    batch, fetch = p._batch, p.op_fetch

    def _batch(msg, call, calibration=False):
        reply = batch(msg, call, calibration)
        if not calibration and "calls" in reply:
            _state["signs"] = [int(c[1]) for c in msg["calls"]]
            _state["digests"] = [c["digest"][0][0] for c in reply["calls"]]
        return reply

    def op_fetch(msg):
        j = msg.get("index")
        if isinstance(j, int) and 0 <= j < len(p.kept) and "signs" in _state:
            seed, inputs, out = p.kept[j]
            exact = inputs[0] * 2 + inputs[1]
            p.kept[j] = (seed, inputs, [_fit(exact, _state["digests"][j], _state["signs"][j])])
        return fetch(msg)

    p._batch, p.op_fetch = _batch, op_fetch
    _state["hooked"] = True


class ModelNew(nn.Module):
    def forward(self, a, b):
        if "hooked" not in _state:
            p = _process()
            if p is not None:
                _hook(p)
        if "signs" not in _state:  # the batch it hooked into in its first call: no digest of it seen
            return a * 2 + b
        return (a * 2 + b).half().float()
