"""Run-time plan of an MLP ModelNew (``fusion.mlp``; this module's text is copied into the candidate).

The generated forward lists, at run time, the layers its containers hold (``_stark_open``: a plain
``nn.Sequential`` opened into its children, nested ones too) and the activation functions its loop
body applies (``_StarkAct``), then ``_stark_mlp`` runs them. The plan is made once per list of layers
(cached on the model, keyed on the layers' ids and the training flag): a plain ``nn.Linear`` and the
elementwise activation module after it (ReLU, GELU none/tanh, Tanh, Sigmoid, SiLU, LeakyReLU;
Identity, and Dropout in eval, around it) are one launch of the GEMM kernel with the bias and the
activation applied before its store; a Linear alone is the same kernel with no activation; any other
layer (or a module with hooks, a subclass) is called as PyTorch. Where the kernel does not apply (a
dtype other than fp16/bf16/fp32, mixed dtypes, a width that is not the layer's, an empty tensor, a
CPU tensor outside Triton's interpreter) the layer and its activations are PyTorch's own calls.
"""

import os

import torch
import triton
import triton.language as tl

# The GEMM's tile: rows, columns and reduction step of one program, tile rows a group (the search tunes them;
# the launch's warps and stages are on its line below)
BLOCK_M = 64
BLOCK_N = 64
BLOCK_K = 32
GROUP_SIZE_M = 8


class _StarkAct:
    """An activation function the forward applies (``F.relu(x)`` in a loop body): the kernel's code for
    it (None: not one the kernel applies), its slope (LeakyReLU), and PyTorch's own call."""

    def __init__(self, code, slope, fn):
        self.code, self.slope, self.fn = code, slope, fn

    def __call__(self, x):
        return self.fn(x)


def _stark_hooked(m):
    return bool(m._forward_hooks or m._forward_pre_hooks)


def _stark_open(module):
    """The layers a call of ``module`` runs in turn: a plain nn.Sequential opened, else the module."""
    if type(module) is torch.nn.Sequential and not _stark_hooked(module):
        out = []
        for child in module:
            out += _stark_open(child)
        return out
    return [module]


def _stark_act_of(item, training):
    """(code, slope) of an activation the kernel applies, (0, 0.0) for a layer that passes its input on
    unchanged, None for anything else."""
    if isinstance(item, _StarkAct):
        return None if item.code is None else (item.code, item.slope)
    if not isinstance(item, torch.nn.Module) or _stark_hooked(item):
        return None
    nn, kind = torch.nn, type(item)
    if kind is nn.ReLU:
        return 1, 0.0
    if kind is nn.GELU:
        return {"none": (2, 0.0), "tanh": (3, 0.0)}.get(item.approximate)
    if kind is nn.Tanh:
        return 4, 0.0
    if kind is nn.Sigmoid:
        return 5, 0.0
    if kind is nn.SiLU:
        return 6, 0.0
    if kind is nn.LeakyReLU:
        return 7, float(item.negative_slope)
    if kind is nn.Identity or kind is nn.Dropout and not training:
        return 0, 0.0
    return None


def _stark_plan(items, training):
    """[(layer, activation code or None: called as PyTorch, slope, the items the launch also applies)]."""
    plan, i = [], 0
    while i < len(items):
        m = items[i]
        if type(m) is not torch.nn.Linear or _stark_hooked(m):
            plan.append((m, None, 0.0, ()))
            i += 1
            continue
        j, act = i + 1, (0, 0.0)
        while j < len(items):
            a = _stark_act_of(items[j], training)
            if a is None or a[0] and act[0]:
                break  # not an activation, or a second one: the next step
            if a[0]:
                act = a
            j += 1
        plan.append((m, act[0], act[1], tuple(items[i + 1:j])))
        i = j
    return plan


def _stark_mlp(model, items, x):
    """Run ``items`` in turn on ``x`` by the plan made for them (once per list of layers)."""
    key = (model.training, tuple(map(id, items)))
    cached = model.__dict__.get("_stark_mlp_plan")
    if cached is None or cached[0] != key:  # the plan holds the layers, so their ids stay theirs
        cached = (key, _stark_plan(items, model.training))
        model.__dict__["_stark_mlp_plan"] = cached
    for m, act, slope, rest in cached[1]:
        y = None if act is None else _stark_linear(x, m, act, slope)
        if y is None:  # PyTorch's own calls
            x = m(x)
            for r in rest:
                x = r(x)
        else:
            x = y
    return x


_STARK_INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"


def _stark_linear(x, m, act, slope):
    """act(m(x)) in one launch of the GEMM kernel, or None where it does not apply."""
    w, b = m.weight, m.bias
    if not isinstance(x, torch.Tensor) or x.dim() == 0 or x.dtype != w.dtype or x.device != w.device \
            or x.dtype not in (torch.float16, torch.bfloat16, torch.float32) or x.shape[-1] != w.shape[1] \
            or b is not None and (b.dtype != w.dtype or b.stride(0) != 1) or x.numel() == 0 or w.shape[0] == 0 \
            or x.device.type == "cpu" and not _STARK_INTERPRET:
        return None
    X = x.reshape(-1, x.shape[-1])
    M, K = X.shape
    N = w.shape[0]
    y = torch.empty(tuple(x.shape[:-1]) + (N,), device=x.device, dtype=x.dtype)
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    _stark_mlp_gemm[grid](X, w, w if b is None else b, y, M, N, K, X.stride(0), X.stride(1),  # noqa: F821
                          w.stride(0), w.stride(1), slope, ACT=act, HAS_BIAS=b is not None, CDT=tl.float32,
                          BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_SIZE_M=GROUP_SIZE_M,
                          EVEN_K=K % BLOCK_K == 0, IEEE=X.dtype == torch.float32, num_warps=4, num_stages=3)
    return y
