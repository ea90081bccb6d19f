"""Class 5: tries to change the zygote (PID 1 of the sandbox, the same uid) so the next candidate suffers.

Lowers its memory and process limits, renices it and everything of its uid, pins it to one CPU, and
prints what the kernel let through. A correct answer otherwise."""
import os
import resource

import torch.nn as nn


def attempt(name, fn):
    try:
        fn()
        print("SABOTAGE", name, "went through")
    except OSError as e:
        print("SABOTAGE", name, "refused:", e.strerror)


attempt("prlimit AS", lambda: resource.prlimit(1, resource.RLIMIT_AS, (64 << 20, 64 << 20)))
attempt("prlimit NOFILE", lambda: resource.prlimit(1, resource.RLIMIT_NOFILE, (8, 8)))
attempt("setpriority pid 1", lambda: os.setpriority(os.PRIO_PROCESS, 1, 19))
attempt("setpriority user", lambda: os.setpriority(os.PRIO_USER, 0, 19))
attempt("setpriority group", lambda: os.setpriority(os.PRIO_PGRP, 1, 19))
attempt("affinity pid 1", lambda: os.sched_setaffinity(1, {min(os.sched_getaffinity(0))}))


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a * 2 + b
