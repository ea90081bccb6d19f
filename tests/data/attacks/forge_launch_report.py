"""A PyTorch fallback (its Triton kernel never launched) whose own process says the kernel launched: the launch
check reads Triton's launch counter, which lives in the candidate's process, so its reply is the process's word.
Without the forgery this is tests/data/evaluator/cheat_fallback.py's ``kernel_not_launched``."""
import sys

import torch.nn as nn
import triton
import triton.language as tl

_proc = sys.modules["stark_lsp.evaluate.candidate.process"].CandidateProcess
_real = _proc.op_launches


def _forged(self, msg):
    reply = _real(self, msg)
    reply["triton"] = sorted(set(reply["triton"]) | {"axpb_kernel"})
    return reply


_proc.op_launches = _forged


@triton.jit
def axpb_kernel(a_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(a_ptr + offs) * 2 + tl.load(b_ptr + offs), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, a, b):
        if False:
            axpb_kernel[(1,)](a, b, a, a.numel(), BLOCK=1024)
        return a * 2 + b
