"""Reads every file it can find in the caller's home folder (its path replaces HOME_OF_CALLER), as a candidate
would for keys and passwords when a task's folder brings the home folder into the sandbox."""
import os

import torch.nn as nn

for dirpath, dirs, files in os.walk("HOME_OF_CALLER"):
    dirs[:] = [d for d in dirs if d != "__pycache__"]
    for f in files:
        p = os.path.join(dirpath, f)
        try:
            with open(p, errors="replace") as fh:
                print("READ", p, fh.read(80).strip())
        except OSError as e:
            print("NO", p, e.strerror)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a * 2 + b
