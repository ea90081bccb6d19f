"""Class 7: writes a 1.5 GiB file into its own scratch folder."""
import os
import tempfile

import torch.nn as nn

written = 0
try:
    with open(os.path.join(tempfile.gettempdir(), "big"), "wb") as f:
        chunk = b"x" * (16 << 20)
        while written < (3 << 29):
            f.write(chunk)
            written += len(chunk)
    print("WROTE ALL", written)
except OSError as e:
    print("STOPPED at", written, e.strerror)
finally:
    try:
        os.unlink(os.path.join(tempfile.gettempdir(), "big"))
    except OSError:
        pass


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a * 2 + b
