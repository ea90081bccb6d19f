"""Class 7: leave the sandbox's memory cap: move into the parent group or the root one, raise the cap, make a group of
its own, through every cgroup hierarchy mounted. Prints each try."""
import os

import torch.nn as nn

own = {}
for line in open("/proc/self/cgroup").read().splitlines():
    _, controllers, path = line.split(":", 2)
    own[controllers or "2"] = path
tries = []
for line in open("/proc/self/mountinfo").read().splitlines():
    left, _, right = line.partition(" - ")
    point, fstype = left.split()[4], right.split()[0]
    if fstype not in ("cgroup", "cgroup2"):
        continue
    key = "2" if fstype == "cgroup2" else next((c for c in own if set(c.split(",")) & set(right.split()[2].split(","))), None)
    if key is None:
        continue
    here = point + own[key]
    for target in (here, os.path.dirname(here), point):
        for name in ("cgroup.procs", "memory.max", "memory.limit_in_bytes", "memory.memsw.limit_in_bytes"):
            path = os.path.join(target, name)
            if os.path.exists(path):
                try:
                    with open(path, "w") as f:
                        f.write(str(os.getpid()) if name == "cgroup.procs" else "max")
                    tries.append("WROTE " + path)
                except OSError as e:
                    tries.append(f"refused {name}: {e.strerror}")
    try:
        os.mkdir(os.path.join(here, "escape"))
        tries.append("MADE a group in " + here)
    except OSError as e:
        tries.append(f"refused mkdir: {e.strerror}")
print("TRIES", " | ".join(tries), flush=True)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a * 2 + b
