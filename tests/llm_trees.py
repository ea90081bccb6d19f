"""Small search trees over the samples, with realistic verdicts, for rendering
and testing the LLM agents' prompts (and for scripts/render_prompts.py).

``sample_tree(task)``: #1 your kernel (correct), #2 a faster plan, #3 a plan
that broke the build, #4 the debug attempt that repaired #3, #5 a plan that
ran but gave wrong results. Timings are those of an H200-class GPU
(``HARDWARE``), or CPU interpreter ones with ``gpu=False``.
"""

from __future__ import annotations

from pathlib import Path

from stark_lsp.evaluate.result import (CompileReport, Correctness, Diagnostic, EvalResult, Floor, KernelResources,
                                       Runtime, Status, TaskIO, Timing, Trial, ValueInfo)
from stark_lsp.search.node import DEBUG, PLAN_CODE, ROOT, Node
from stark_lsp.tasks.spec import TaskSpec, load_task

ROOT_DIR = Path(__file__).resolve().parent.parent
SAMPLES = {
    "cuda": ROOT_DIR / "samples" / "mistuned" / "row_sum.cu",
    "triton": ROOT_DIR / "samples" / "triton" / "softmax.py",
    "kernelbench": ROOT_DIR / "samples" / "kernelbench" / "relu.py",
}

HARDWARE = {
    "device": "NVIDIA H200", "is_gpu": True, "capability": "9.0", "sms": 132, "l2_bytes": 60 * 2**20,
    "memory_bytes": 140 * 2**30, "torch": "2.9.0", "triton": "3.5.0", "nvcc": "13.0 (V13.0.88)",
    "limits": {"smem_per_sm": 233472, "regs_per_sm": 65536, "max_threads_per_sm": 2048, "max_blocks_per_sm": 32,
               "smem_per_block": 49152, "smem_per_block_optin": 232448, "regs_per_block": 65536,
               "max_threads_per_block": 1024, "warp_size": 32},  # evaluate.gpu_limits on an H200
}
CPU_HARDWARE = {"device": "cpu (triton interpreter)", "is_gpu": False, "torch": "2.9.0", "triton": "3.5.0"}

# per sample: (old, faster, broken) text of one line of the root
EDITS = {
    "cuda": ("#define THREADS 32", "#define THREADS 256", "#define THREADS (2 * THREAD)"),
    "triton": ("BLOCK_SIZE=128, num_warps=4", "BLOCK_SIZE=1024, num_warps=8", "BLOCK_SIZE=100, num_warps=4"),
    "kernelbench": ("class ModelNew(Model):\n    pass",
                    "class ModelNew(Model):\n    def forward(self, x):\n        return torch.clamp_min(x, 0.0)",
                    "class ModelNew(Model):\n    def forward(self, x):\n        return torch.clamp_min(x, 0)[:-1]"),
}
IO = {
    "cuda": TaskIO([ValueInfo([512, 262144], "float32")], [ValueInfo([512], "float32")]),
    "triton": TaskIO([ValueInfo([16384, 8192], "float32")], [ValueInfo([16384, 8192], "float32")]),
    "kernelbench": TaskIO([ValueInfo([4096, 393216], "float32")], [ValueInfo([4096, 393216], "float32")]),
}
FLOORS = {  # bytes moved, measured bandwidth (GB/s): the memory floor
    "cuda": Floor(bytes=512 * 262144 * 4 + 512 * 4, flops=0, memory_floor_ms=0.1258, compute_floor_ms=0.0,
                  bandwidth_gbs=4268.0, peak_tflops=494.0),
    "triton": Floor(bytes=2 * 16384 * 8192 * 4, flops=0, memory_floor_ms=0.2516, compute_floor_ms=0.0,
                    bandwidth_gbs=4268.0, peak_tflops=494.0),
    "kernelbench": Floor(bytes=2 * 4096 * 393216 * 4, flops=0, memory_floor_ms=3.019, compute_floor_ms=0.0,
                         bandwidth_gbs=4268.0, peak_tflops=494.0),
}
ERRORS = {
    "cuda": EvalResult(Status.COMPILE_ERROR, 'identifier "THREAD" is undefined', compile=CompileReport(
        ok=False, log='kernel.cu(9): error: identifier "THREAD" is undefined',
        diagnostics=[Diagnostic('identifier "THREAD" is undefined', line=9, column=23)])),
    "triton": EvalResult(Status.COMPILE_ERROR, "arange's range must be a power of 2", compile=CompileReport(
        ok=False, log="triton.compiler.errors.CompilationError: at 5:11: arange's range must be a power of 2",
        diagnostics=[Diagnostic("arange's range must be a power of 2", line=14)])),
    "kernelbench": EvalResult(Status.RUNTIME_ERROR, "output 1: shape (4095, 393216), expected (4096, 393216)"),
}


def timing(ms: float) -> Timing:
    return Timing(median_ms=ms, mean_ms=ms * 1.01, min_ms=ms * 0.98, max_ms=ms * 1.05, iqr_ms=ms * 0.02,
                  std_ms=ms * 0.015, reps=100)


def verdict(kind: str, ms: float, eager_ms: float, gpu: bool = True) -> EvalResult:
    scale = 1.0 if gpu else 37.0  # the interpreter is slow; eager on the CPU less so
    rt = Runtime(device=HARDWARE["device"] if gpu else "cpu (triton interpreter)", is_gpu=gpu,
                 candidate=timing(ms * scale), reference=timing(eager_ms * (1.0 if gpu else 0.02)),
                 speedup=eager_ms * (1.0 if gpu else 0.02) / (ms * scale), floor=FLOORS[kind] if gpu else None)
    return EvalResult(Status.OK, correctness=Correctness(True, 1e-5, 1e-5, [Trial(s, True, 1e-7) for s in range(5)]),
                      runtime=rt, resources=[KernelResources("row_sum_kernel" if kind == "cuda" else "kernel",
                                                              registers=32, shared_bytes=128, spill_stores=0,
                                                              spill_loads=0)],
                      io=IO[kind])


def _node(id, parent, kind, source, result, summary, plan="") -> Node:
    from stark_lsp.search.node import outcome_fields

    status, speed, runtime, err = outcome_fields(result)
    return Node(id=id, task_id="t", parent_id=parent, kind=kind, status=status, attempt=0 if parent is None else id - 1,
                source=source, result=result, speedup=speed, runtime_ms=runtime, error=err, summary=summary,
                plan=plan, seed=id)


def sample_task(kind: str) -> TaskSpec:
    return load_task(SAMPLES[kind])


def sample_tree(task: TaskSpec, gpu: bool = True, with_io: bool = True) -> list[Node]:
    kind = task.kind
    root_src = task.root_source()
    old, fast, broken = EDITS[kind]
    assert old in root_src, (kind, old)
    eager = {"cuda": 2.61, "triton": 1.9, "kernelbench": 6.1}[kind]
    base = {"cuda": 2.53, "triton": 1.45, "kernelbench": 6.2}[kind]
    root = verdict(kind, base, eager, gpu)
    gain = {"cuda": 4.1, "triton": 4.1, "kernelbench": 1.9}[kind]
    faster = verdict(kind, base / gain, eager, gpu)
    wrong = EvalResult(Status.INCORRECT, "output 1: 12 of 512 elements outside atol=1e-05, rtol=1e-05 (max abs error 3.1)",
                       correctness=Correctness(False, 1e-5, 1e-5, [Trial(0, False, 3.1, 0.2, 0,
                                                                         "output 1: 12 of 512 elements outside")]))
    fixed = verdict(kind, base / (gain * 0.8), eager, gpu)
    if not with_io:
        for r in (root, faster, fixed):
            r.io = None
    return [
        _node(1, None, ROOT, root_src, root, "the original kernel"),
        _node(2, 1, PLAN_CODE, root_src.replace(old, fast), faster, f"raise the work per block: {fast.splitlines()[-1].strip()}"),
        _node(3, 1, PLAN_CODE, root_src.replace(old, broken), ERRORS[kind], "double the block size"),
        _node(4, 3, DEBUG, root_src.replace(old, fast.replace("256", "128").replace("1024", "512")), fixed,
              "fix the undefined name"),
        _node(5, 2, PLAN_CODE, root_src.replace(old, fast) + ("\n// unrolled\n" if kind == "cuda" else "\n# unrolled\n"),
              wrong, "unroll the column loop by 4"),
    ]


def agent_ctx(agent: str = "plan", node: int = 1, upto: int | None = None, kind: str = "cuda", **kw):
    """An agent's context on the sample tree of ``kind``: the Plan agent on the root sees the root alone."""
    from stark_lsp.search.context import build_context

    task = sample_task(kind)
    nodes = sample_tree(task)[:upto]
    if agent == "plan" and node == 1:
        nodes = nodes[:1]  # only the root: nothing else in the tree
    return build_context(agent, task, nodes, node, hardware_info=HARDWARE, attempt=1, seed=3, **kw)
