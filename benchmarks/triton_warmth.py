"""A Triton kernel's first call in a fresh process forked from a zygote, cold and warm.

    python benchmarks/triton_warmth.py [--arch 90] [--n 3]

The evaluator forks one fresh process per candidate from a zygote that
imports torch and Triton but never touches CUDA. This measures what the
candidate process pays on its first call of a new Triton kernel: CUDA's
start, Triton's compile (the kernel, its launcher), the launch. "cold": the
zygote only imported Triton; "warm": it also compiled the trusted kernels of
``stark_lsp/evaluate/sandbox/triton_warm.py`` for the GPU's architecture first (what
the evaluator's zygote does). Each child gets its own empty Triton cache and
a kernel source no process has compiled before. Prints one line per child.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KERNEL = '''
import torch, triton, triton.language as tl

@triton.jit
def scale_kernel(x_ptr, y_ptr, a, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, a * tl.load(x_ptr + offs, mask=mask) + {salt}.0, mask=mask)

def run(x):
    y = torch.empty_like(x)
    scale_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, 2.0, x.numel(), BLOCK=1024)
    return y
'''


def child(workdir: str) -> dict:
    """In the forked child: CUDA's start, then the first call of a new kernel, timed apart."""
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(dir=workdir)
    import torch

    t0 = time.perf_counter()
    torch.ones(1, device="cuda").add_(1)
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    path = Path(tempfile.mkdtemp(dir=workdir)) / "cand.py"
    path.write_text(KERNEL.replace("{salt}", str(uuid.uuid4().int % 1000)))
    spec = importlib.util.spec_from_file_location("cand", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    x = torch.randn(1 << 20, device="cuda")
    t2 = time.perf_counter()
    mod.run(x)
    torch.cuda.synchronize()
    t3 = time.perf_counter()
    mod.run(x)
    torch.cuda.synchronize()
    t4 = time.perf_counter()
    cache = os.environ["TRITON_CACHE_DIR"]
    built = sorted({p.suffix for p in Path(cache).rglob("*") if p.is_file()})
    return {"cuda_start_s": t1 - t0, "first_call_s": t3 - t2, "second_call_s": t4 - t3, "cache_files": built}


def fork_child(workdir: str) -> dict:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            out = child(workdir)
        except BaseException as e:  # noqa: BLE001
            out = {"error": f"{type(e).__name__}: {e}"}
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.waitpid(pid, 0)
    return json.loads(data or b"{}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", type=int, default=90)
    ap.add_argument("--n", type=int, default=3)
    args = ap.parse_args()
    import torch  # noqa: F401  (as the zygote: imports, no CUDA)
    import triton  # noqa: F401

    with tempfile.TemporaryDirectory() as work:
        for label in ("cold", "warm"):
            if label == "warm":
                from stark_lsp.evaluate.sandbox.triton_warm import warm_compile

                done, secs = warm_compile(args.arch)
                print(f"zygote warm-up: {done} kernels compiled for sm_{args.arch} in {secs:.2f} s", flush=True)
            for i in range(args.n):
                got = fork_child(work)
                print(f"{label} child {i + 1}: " + json.dumps({k: round(v, 3) if isinstance(v, float) else v
                                                               for k, v in got.items()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
