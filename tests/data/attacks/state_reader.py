"""Fresh state, second half: fail if anything of an earlier candidate is still here."""
import builtins
import os
import sys

import torch
import torch.nn as nn

left = []
if hasattr(builtins, "STARK_LEFTOVER") or hasattr(torch, "STARK_LEFTOVER") or "stark_leftover" in sys.modules:
    left.append("python state")
for d in ("/tmp", os.environ.get("HOME", "/tmp"), os.environ.get("TMPDIR", "/tmp"), "/dev/shm", "/var/tmp"):
    if os.path.exists(os.path.join(d, "stark_leftover")):
        left.append(d)
for d in ("/tmp", "/var/tmp"):
    for top, dirs, files in os.walk(d):
        if "stark_leftover_deep" in files or "stark_leftover_locked" in files or "locked" in dirs:
            left.append(f"a tree under {d}")
            break
others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid())] if os.getpid() < 100 else []
if others:
    left.append(f"processes {others}")


class ModelNew(nn.Module):
    def forward(self, a, b):
        if left:
            raise RuntimeError(f"leftovers from an earlier candidate: {left}")
        return a * 2 + b
