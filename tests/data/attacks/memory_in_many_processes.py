"""Class 7: memory past any one process's limit, spread over many processes (16 x 128 MiB, each under the
per-process limit), all held at once: only a bound on the sandbox as a whole (a cgroup) stops it. Prints how many
children held their block together to the end, and how many were killed."""
import os
import select
import time

import torch.nn as nn

CHUNK, N = 128 << 20, 16
ready_r, ready_w = os.pipe()
go_r, go_w = os.pipe()
children = []
for _ in range(N):
    pid = os.fork()
    if pid == 0:
        os.close(go_w)
        block = bytearray(CHUNK)
        block[::4096] = b"\x01" * (CHUNK // 4096)  # every page touched: resident, charged
        os.write(ready_w, b"1")
        os.read(go_r, 1)  # held until every sibling is ready or dead
        os._exit(0)
    children.append(pid)
os.close(ready_w)
status, ready, deadline = {}, 0, time.monotonic() + 60
while ready + len(status) < N and time.monotonic() < deadline:
    if select.select([ready_r], [], [], 0.05)[0]:
        ready += len(os.read(ready_r, 64))
    for pid in children:
        if pid not in status:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status[pid] = st
os.close(go_w)  # let the survivors go
for pid in children:
    if pid not in status:
        status[pid] = os.waitpid(pid, 0)[1]
survived = sum(os.WIFEXITED(s) and os.WEXITSTATUS(s) == 0 for s in status.values())
print("SURVIVED", survived, "KILLED", sum(os.WIFSIGNALED(s) for s in status.values()), flush=True)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a * 2 + b
