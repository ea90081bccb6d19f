"""A hostile candidate for add_task.py: in its first call it says as many compiles as the judge's
answers ("go") fill its side of the socket with, reads none of them, and from then on reads nothing
(its channel's recv replaced by a sleep), so that the judge's next request cannot be sent: the judge
must not wait without end to send it (with the GPU's gate held, every judge on the GPU would wait)."""
import gc
import socket
import time

import torch.nn as nn


def _answers_that_fit() -> int:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    n = 0
    while True:
        try:
            a.send(b'{"go":true}\n', socket.MSG_DONTWAIT)
            n += 1
        except BlockingIOError:
            return n


class ModelNew(nn.Module):
    calls = 0

    def forward(self, a, b):
        ModelNew.calls += 1
        if ModelNew.calls == 1:
            chan = next(o for o in gc.get_objects() if type(o).__name__ == "Channel")
            for _ in range(_answers_that_fit()):
                chan.send({"compiling": "k"})
                chan.send({"compiled": "k"})
            chan.recv = lambda *a, **k: time.sleep(1e9)
        return a * 2 + b
