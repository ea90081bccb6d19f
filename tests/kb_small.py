"""Test helpers for KernelBench files: smaller module-level sizes, and a direct comparison of
ModelNew with Model (CPU, Triton interpreter) for tests that need no evaluator."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

# the ten level-2 models the fusion tests use, read from the benchmark's copy of KernelBench
LEVEL2_DIR = Path(__file__).resolve().parents[1] / "benchmarks" / "kernelbench" / "level2"
LEVEL2_MODELS = (
    "1_Conv2D_ReLU_BiasAdd", "11_ConvTranspose2d_BatchNorm_Tanh_MaxPool_GroupNorm",
    "18_Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp", "23_Conv3d_GroupNorm_Mean",
    "28_BMM_InstanceNorm_Sum_ResidualAdd_Multiply", "38_ConvTranspose3d_AvgPool_Clamp_Softmax_Multiply",
    "55_Matmul_MaxPool_Sum_Scale", "89_ConvTranspose3d_MaxPool_Softmax_Subtract_Swish_Max",
    "92_Conv2d_GroupNorm_Tanh_HardSwish_ResidualAdd_LogSumExp", "97_Matmul_BatchNorm_BiasAdd_Divide_Swish",
)


def with_sizes(source: str, sizes: dict[str, Any]) -> str:
    """The file with the named module-level assignments set to new values (other lines untouched)."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    edits = []
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        names = []
        for t in node.targets:
            if isinstance(t, ast.Name):
                names.append([t.id])
            elif isinstance(t, ast.Tuple) and all(isinstance(e, ast.Name) for e in t.elts):
                names.append([e.id for e in t.elts])
        hit = [n for group in names for n in group if n in sizes]
        if not hit:
            continue
        target = names[0]
        if len(target) == 1:
            value = repr(sizes[target[0]])
        else:
            value = "(" + ", ".join(repr(sizes[n]) for n in target) + ")"
        head = " = ".join(", ".join(g) for g in names)
        edits.append((node.lineno, node.end_lineno, f"{head} = {value}\n"))
    for start, end, text in sorted(edits, reverse=True):
        lines[start - 1:end] = [text]
    return "".join(lines)


_LOADED: list[Any] = []
_FOLDER: list[Any] = []  # one temporary folder per test process, removed at exit


def _load(text: str) -> dict[str, Any]:
    """The candidate as a module from a real file: Triton's JIT (off the interpreter) reads the
    source of its kernels from their file."""
    import importlib.util
    import tempfile
    from pathlib import Path

    if not _FOLDER:
        _FOLDER.append(tempfile.TemporaryDirectory(prefix="stark_candidates_"))
    path = Path(_FOLDER[0].name) / f"candidate_{len(_LOADED)}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _LOADED.append(module)
    return module.__dict__


def compare(source: str, code: str, train: bool = False, atol: float = 1e-4, rtol: float = 1e-4,
            seed: int = 0, device: str = "cpu") -> None:
    """Run Model and ModelNew (``code`` replaces the stub) on the same inputs on ``device``; assert
    they agree, outputs and floating buffers (a norm's running statistics) alike."""
    import torch

    ns = _load(source + "\n\n" + code)
    init = ns["get_init_inputs"]()
    torch.manual_seed(seed)
    ref = ns["Model"](*init).to(device).train(train)
    torch.manual_seed(seed)
    new = ns["ModelNew"](*init).to(device).train(train)
    torch.manual_seed(seed + 1)
    with torch.device(device):
        xs = ns["get_inputs"]()
    with torch.no_grad():
        a = ref(*[x.clone() if isinstance(x, torch.Tensor) else x for x in xs])
        b = new(*xs)
    a = list(a) if isinstance(a, (tuple, list)) else [a]
    b = list(b) if isinstance(b, (tuple, list)) else [b]
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert tuple(x.shape) == tuple(y.shape) and x.dtype == y.dtype, (x.shape, y.shape, x.dtype, y.dtype)
        if x.dtype.is_floating_point:
            assert torch.allclose(x, y, atol=atol, rtol=rtol, equal_nan=True), (x - y).abs().max().item()
        else:
            assert torch.equal(x, y)
    for (name, x), (_, y) in zip(ref.named_buffers(), new.named_buffers()):
        if x.dtype.is_floating_point:
            assert torch.allclose(x, y, atol=1e-5, rtol=1e-4), (name, (x - y).abs().max().item())
        else:
            assert torch.equal(x, y), name
