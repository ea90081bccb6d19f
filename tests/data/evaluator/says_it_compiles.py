"""A candidate for add_task.py whose first call says a Triton compile through the process's own hook,
as Triton's JITFunction._do_compile does on a GPU (the interpreter never compiles), taking COMPILE_S
seconds as a real compile would, then computes the right answer."""
import gc
import time

import torch.nn as nn

COMPILE_S = 0.5


def _counter():
    return next((o for o in gc.get_objects() if type(o).__name__ == "LaunchCounter"), None)


class ModelNew(nn.Module):
    def forward(self, a, b):
        counter = _counter()
        if counter is not None and counter.on_compile is not None:
            counter.on_compile("compiling", "add_kernel")
            time.sleep(COMPILE_S)
            counter.on_compile("compiled", "add_kernel")
        return a * 2 + b
