"""Replays a CUDA graph of its Triton kernel while its text tells ``launch_rule.uses_cuda_graph`` it replays
none: the built-in team's switch, ``CUDA_GRAPH = False``, written at the start of a line, and the graph made
through ``torch._C._CUDAGraph`` (no word boundary before ``CUDAGraph``). Its launch check then has Triton's
counter alone, which saw the kernel launch while the graph was captured; its outputs are checked and its
figure is the judge's clock's like any other (tests/test_evaluator_attacks_review27.py)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

CUDA_GRAPH = False
CUDA_GRAPH = not CUDA_GRAPH  # on after all


@triton.jit
def axpb_kernel(a_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(a_ptr + offs, mask=mask) * 2 + tl.load(b_ptr + offs, mask=mask), mask=mask)


def _launch(a, b, y):
    axpb_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, y, a.numel(), BLOCK=1024)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.g = None

    def forward(self, a, b):
        if not CUDA_GRAPH or not a.is_cuda:
            y = torch.empty_like(a)
            _launch(a, b, y)
            return y
        if self.g is None or self.a.shape != a.shape:
            self.a, self.b, self.y = a.clone(), b.clone(), torch.empty_like(a)
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                _launch(self.a, self.b, self.y)  # compiled off the graph
            torch.cuda.current_stream().wait_stream(side)
            self.g = torch._C._CUDAGraph()
            pool = torch.cuda.graph_pool_handle()
            with torch.cuda.stream(side):
                self.g.capture_begin(pool, capture_error_mode="thread_local")
                _launch(self.a, self.b, self.y)
                self.g.capture_end()
            torch.cuda.current_stream().wait_stream(side)
        self.a.copy_(a)
        self.b.copy_(b)
        self.g.replay()
        return self.y.clone()
