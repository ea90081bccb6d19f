"""Class 5: holds as many processes as the process limit lets it, until RELEASE_PATH appears (the test fills it
in) or 60 s pass, while another judge's candidate runs beside it.

The process limit counts every process of a uid on the machine, and every root caller's sandbox ran as ``nobody``:
with this candidate's 509 processes alive, another judge's honest candidate could not start a thread ("can't start
new thread", a compile error) until the review of session 31. Each sandbox now has a uid of its own. A correct
answer otherwise."""
import os
import time

import torch.nn as nn

RELEASE = "RELEASE_PATH"


def _wait() -> None:
    end = time.monotonic() + 60
    while not os.path.exists(RELEASE) and time.monotonic() < end:
        time.sleep(0.5)


held = 0
for _ in range(2000):
    try:
        pid = os.fork()
    except OSError as e:
        print("HOLD refused after", held, e.strerror, flush=True)
        break
    if pid == 0:
        _wait()
        os._exit(0)
    held += 1
_wait()
print("HOLD", held, flush=True)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a * 2 + b
