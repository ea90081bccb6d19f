"""Class 7: tries to keep 700 processes alive at once."""
import os
import time

import torch.nn as nn

alive = 0
for _ in range(700):
    try:
        pid = os.fork()
    except OSError as e:
        print("FORK refused after", alive, e.strerror)
        break
    if pid == 0:
        time.sleep(120)
        os._exit(0)
    alive += 1
print("FORKED", alive)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a * 2 + b
