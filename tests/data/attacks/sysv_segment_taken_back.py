"""Class 5: looks for the segment ``sysv_segment_given_away.py`` left, takes it back (its creator may set its mode
again) and prints what it holds. A correct answer otherwise."""
import ctypes
import os

import torch.nn as nn

KEY = 0x5151
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
shm = libc.shmget(KEY, 0, 0)
if shm < 0:
    print("NO SEGMENT LEFT", os.strerror(ctypes.get_errno()))
else:
    perm = ctypes.create_string_buffer(256)
    ctypes.c_uint32.from_buffer(perm, 4).value = os.getuid()
    ctypes.c_uint32.from_buffer(perm, 8).value = os.getgid()
    ctypes.c_uint32.from_buffer(perm, 20).value = 0o600
    libc.shmctl(shm, 1, perm)  # IPC_SET
    addr = libc.shmat(shm, None, 0)
    print("FOUND", ctypes.string_at(addr, 28) if addr not in (None, 2**64 - 1) else os.strerror(ctypes.get_errno()))


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a * 2 + b
