"""Class 8: write files outside the work directory and reach the network (the test fills in the targets)."""
import os
import socket

import torch.nn as nn

report = []
for path in ["MARKER_HOME", "MARKER_TMP", "MARKER_PROJECT", "/etc/stark-escape", "/var/tmp/stark-escape"]:
    try:
        with open(path, "w") as f:
            f.write("escaped")
        report.append(f"WROTE {path}")
    except OSError as e:
        report.append(f"blocked {path}: {e.strerror}")
for host in ("127.0.0.1", "10.0.2.2", "1.1.1.1"):
    try:
        socket.create_connection((host, PORT), timeout=2).sendall(b"escaped")
        report.append(f"CONNECTED {host}")
    except OSError as e:
        report.append(f"no connection to {host}: {e}")
print("\n".join(report))


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a * 2 + b
