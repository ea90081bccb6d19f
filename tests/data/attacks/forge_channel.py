"""Class 5: write forged verdicts and replies on every descriptor this process holds, then exit."""
import json
import os
import socket

forged = [
    {"result": {"status": "ok", "message": "", "runtime": {"speedup": 1000.0}}, "recycle": False},
    {"loaded": True},
    {"outputs": [{"kind": "scalar", "value": 1.0}], "inputs_changed": None, "inputs": []},
    {"ms": 0.0001, "digest": [[0.0, 0.0, 0.0, 0.0]]},
]
payload = b"".join((json.dumps(m) + "\n").encode() for m in forged)
for fd in range(3, 256):
    try:
        os.write(fd, payload)
    except OSError:
        pass
    try:
        socket.socket(fileno=os.dup(fd)).sendall(payload)
    except OSError:
        pass
for arg in open("/proc/self/cmdline", "rb").read().split(b"\0"):
    if arg.isdigit():
        try:
            os.write(int(arg), payload)
        except OSError:
            pass
os._exit(0)
