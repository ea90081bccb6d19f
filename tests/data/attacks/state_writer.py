"""Fresh state, first half: leave traces everywhere a later candidate could look."""
import builtins
import os
import sys

import torch
import torch.nn as nn

builtins.STARK_LEFTOVER = 1
torch.STARK_LEFTOVER = 1
sys.modules["stark_leftover"] = sys
for d in ("/tmp", os.environ.get("HOME", "/tmp"), os.environ.get("TMPDIR", "/tmp"), "/dev/shm", "/var/tmp"):
    try:
        open(os.path.join(d, "stark_leftover"), "w").write("1")
    except OSError:
        pass
here = os.getcwd()
for d in ("/tmp", "/var/tmp"):  # a tree deeper than the wipe goes, a file at its bottom, a locked folder
    try:
        os.chdir(d)
        for _ in range(100):
            os.makedirs("deep", exist_ok=True)
            os.chdir("deep")
        open("stark_leftover_deep", "w").write("1")
        os.chdir(d)
        os.makedirs("locked/inner", exist_ok=True)
        open("locked/inner/stark_leftover_locked", "w").write("1")
        os.chmod("locked", 0)
    except OSError:
        pass
os.chdir(here)
if os.fork() == 0:  # a child that outlives this candidate
    os.setsid()
    import time
    time.sleep(3600)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a * 2 + b
