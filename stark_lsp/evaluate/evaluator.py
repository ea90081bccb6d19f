"""The evaluator: candidate source in, verified ``EvalResult`` out.

    with Evaluator() as ev:
        result = ev.evaluate(load_task("samples/triton/softmax.py"), source)

Thread-safe and blocking; it never raises for a bad candidate (a broken,
hanging, crashing or cheating one gets a failed result with the reason). It
raises ``EvaluatorUnavailable`` when it cannot work at all (no judge starts,
or a sandbox is required and none can be made), so a search stops instead of
blaming its candidates.

CUDA candidates are built here (in parallel across calling threads, cached,
nvcc in the sandbox); a warm judge process decides every verdict, and each
candidate runs in its own fresh sandboxed process (docs/EVALUATOR.md).

``sandbox``: "required" (candidates written by an LLM: refuse to run without
a sandbox), "auto" (use one where it can be made, else say so once in
``hardware()`` and run unsandboxed: the user's own code and the built-in
team's rewrites of it), or "off" (``--unsafe-no-sandbox``).
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path
from typing import Any

from stark_lsp.evaluate import phases
from stark_lsp.evaluate.cuda_build import CudaBuilder
from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.evaluate.pool import WorkerPool, WorkerStartError
from stark_lsp.evaluate.result import CompileReport, EvalResult, Status
from stark_lsp.evaluate.sandbox.policy import Sandbox, SandboxRefused, llm_refusal, make_layout, probe, root_refusal
from stark_lsp.evaluate.source_limits import unsendable
from stark_lsp.evaluate.unavailable import EvaluatorUnavailable
from stark_lsp.tasks.gpu_need import builds_cuda_inline
from stark_lsp.tasks.spec import TaskSpec

# past a --timeout cap (EvalOptions.cap_s): what the judge may take to answer once its own deadline passed
CAP_GRACE_S = 10.0


def default_cache_dir() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")  # set but empty: unset
    base = os.environ.get("STARK_CACHE_DIR") or os.path.join(xdg, "stark-lsp")
    return Path(base)


def absolute_cache_dir(folder: Path | str) -> Path:
    """The cache as an absolute path: its workers run in a folder of their own, where a relative one
    (``STARK_CACHE_DIR=cache``, ``--cache-dir .``) named another place, and ``~`` is the shell's to expand."""
    return Path(os.path.expanduser(str(folder))).absolute()


class Evaluator:
    def __init__(self, workers: int = 1, cache_dir: Path | None = None, device: str = "auto",
                 arch: str | None = None, memory_fraction: float = 0.0, gpu: int | None = None,
                 sandbox: str = "auto", warm_for: TaskSpec | None = None):
        """``warm_for``: the task the first evaluations will be of (``stark eval``): each judge starts its
        sandbox for it as it starts, before the first candidate is sent."""
        if sandbox not in ("auto", "required", "off"):
            raise ValueError(f"sandbox must be auto, required or off, not {sandbox!r}")
        self.sandbox_policy = sandbox
        self.cache_dir = absolute_cache_dir(cache_dir or default_cache_dir())
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        (self.cache_dir / "candidates").mkdir(exist_ok=True)
        for d in (self.cache_dir, self.cache_dir / "candidates"):  # the user's: no sandbox ever reads it
            try:
                d.chmod(d.stat().st_mode & ~0o022)
            except OSError:
                pass
        env = {
            "TRITON_CACHE_DIR": str(self.cache_dir / "triton"),
            "TORCH_EXTENSIONS_DIR": str(self.cache_dir / "torch_extensions"),
            # the baselines' figures across sessions (judge/baseline_cache.py); set to nothing: off
            "STARK_EVAL_BASELINE_CACHE": os.environ.get("STARK_EVAL_BASELINE_CACHE", str(self.cache_dir / "baselines")),
            # the zygote's own trusted builds across starts (judge/build_cache.py); set to nothing: off
            "STARK_EVAL_BUILD_CACHE": os.environ.get("STARK_EVAL_BUILD_CACHE", str(self.cache_dir / "builds")),
        }
        if device == "cpu":
            env["TRITON_INTERPRET"] = "1"
            env["CUDA_VISIBLE_DEVICES"] = ""
        elif device == "auto" and not gpu_present():
            env["TRITON_INTERPRET"] = "1"
        elif gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = visible_gpu(gpu)  # the workers see this GPU only, as device 0
        self.gpu = gpu
        workdir = self.cache_dir / "workers" / (f"{os.getpid()}" if gpu is None else f"{os.getpid()}-gpu{gpu}")
        self.pool = WorkerPool(size=workers, device=device, workdir=workdir, env=env, memory_fraction=memory_fraction,
                               warm=self._view(warm_for) if warm_for is not None else None)
        self._arch = arch
        self._builder: CudaBuilder | None = None
        self._builder_lock = threading.Lock()

    def __enter__(self) -> "Evaluator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self, wait: bool = True) -> None:
        """Stop the judges; ``wait=False``: without waiting for their clean-up (``WorkerPool.close``)."""
        self.pool.close(wait)

    # ------------------------------------------------------------------
    def hardware_info(self) -> dict[str, Any]:
        return self.pool.hardware()

    def hardware(self) -> str:
        try:
            hw = self.pool.hardware()
        except WorkerStartError as e:
            return f"unknown ({e})"
        if hw.get("is_gpu"):
            return f"{hw['device']} (sm_{hw['capability'].replace('.', '')}, {hw['sms']} SMs, L2 {hw['l2_bytes'] >> 20} MiB)"
        return str(hw.get("device", "cpu"))

    def refusal(self, task: TaskSpec | None = None) -> str | None:
        """Why this evaluator will refuse candidates written by an LLM (no sandbox, one without its syscall
        filter, or, for ``task``, one that would keep uid 0 to show its folders; under the "required"
        policy), or None; known before anything is evaluated, by the judge's own checks."""
        if self.sandbox_policy != "required":
            return None
        sb = self.sandbox_info()
        refused = llm_refusal(sb if sb.available else None, sb.reason)
        if refused is None and task is not None:
            refused = root_refusal(sb, make_layout(expose=task_folders(task), hide=[str(self.cache_dir)]))
        return refused

    def sandbox_info(self) -> Sandbox:
        """The sandbox candidates run in here (probed once per process)."""
        return probe() if self.sandbox_policy != "off" else Sandbox("none", "turned off (--unsafe-no-sandbox)")

    def cancel(self) -> None:
        """Stop the evaluations in flight: their candidates are killed and they answer "stopped"."""
        self.pool.cancel()

    def builder(self) -> CudaBuilder:
        with self._builder_lock:
            if self._builder is None:
                arch = self._arch
                if arch is None:
                    try:
                        hw = self.pool.hardware()
                        arch = "sm_" + hw["capability"].replace(".", "") if hw.get("is_gpu") else "sm_90"
                    except WorkerStartError:
                        arch = "sm_90"
                sb = self.sandbox_info()
                self._builder = CudaBuilder(self.cache_dir, arch=arch, sandbox=sb if sb.available else None,
                                            required=self.sandbox_policy == "required")
            return self._builder

    def _view(self, task: TaskSpec) -> dict[str, Any]:
        """What a job of ``task`` shows its sandbox: the task's own folders only (the candidate's files
        reach its process by value, judge/judge.py), so no candidate sees the evaluator's cache, nor any
        other candidate in it."""
        return {"sandbox": self.sandbox_policy, "expose": sorted(set(task_folders(task))),
                "hide": [str(self.cache_dir)]}

    def evaluate(self, task: TaskSpec, source: str, options: EvalOptions | None = None) -> EvalResult:
        opts = options or EvalOptions()
        t0 = time.perf_counter()
        try:
            result = self._evaluate(task, source, opts)
        except WorkerStartError as e:
            raise EvaluatorUnavailable(f"evaluation worker unavailable: {e}") from e
        except SandboxRefused as e:
            raise EvaluatorUnavailable(str(e)) from e
        result.seconds = time.perf_counter() - t0
        return result

    def _evaluate(self, task: TaskSpec, source: str, opts: EvalOptions) -> EvalResult:
        refused = unsendable(source)  # not UTF-8 text, or over one message: a compile error, never a raise
        if refused is not None:
            return EvalResult(Status.COMPILE_ERROR, refused, compile=CompileReport(ok=False))
        digest = hashlib.sha256(source.encode()).hexdigest()[:20]
        cand_file = self.cache_dir / "candidates" / f"c{digest}{task.candidate_suffix}"
        if not cand_file.exists():
            tmp = cand_file.with_suffix(cand_file.suffix + f".{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_text(source)
            os.replace(tmp, cand_file)
        job: dict[str, Any] = {"task": task.to_dict(), "candidate_file": str(cand_file), "options": opts.to_dict(),
                               **self._view(task)}
        # a safety net over the judge's own phase limits: loading, reference timing, trials, timing
        timeout = opts.load_timeout_s + opts.run_timeout_s + 600.0
        started = time.monotonic()
        hw = self.pool.hardware()
        if task.kind == "cuda":
            phases.report(phases.BUILDING)
            build_s = opts.compile_timeout_s if opts.cap_s is None else max(1.0, min(opts.compile_timeout_s, opts.cap_s))
            art = self.builder().build(source, opts.nvcc_flags, timeout_s=build_s, task=task)
            if not art.report.ok:
                msg = next((d.message for d in art.report.diagnostics if d.severity == "error"), "compile failed")
                return EvalResult(Status.COMPILE_ERROR, msg, compile=art.report)
            if not hw.get("is_gpu"):
                return EvalResult(Status.NOT_RUN, "compiled; not run: no GPU", compile=art.report, resources=art.resources)
            job.update(library=str(art.library), compile=_report_dict(art.report),
                       resources=[r.__dict__ for r in art.resources], compile_seconds=art.report.seconds)
        elif task.kind == "kernelbench" and builds_cuda_inline(source):
            if not hw.get("is_gpu"):
                return EvalResult(Status.NOT_RUN, "uses load_inline (CUDA); not run: no GPU")
            timeout += opts.compile_timeout_s
            job["load_inline"] = True
        if opts.cap_s is not None:  # --timeout: what is left of it is the judge's, and the hard limit on it
            spent = time.monotonic() - started
            if spent >= opts.cap_s:
                return EvalResult(Status.TIMEOUT, f"the evaluation's time limit ({opts.cap_s:g} s, --timeout) passed "
                                                  f"while it was built")
            job["spent_s"] = spent
            timeout = opts.cap_s - spent + CAP_GRACE_S
        reply = self.pool.run(job, timeout)
        if reply.result is None:
            status = Status.TIMEOUT if reply.fault == "timeout" else Status.CRASHED
            message = reply.message
            if opts.cap_s is not None and reply.fault == "timeout":
                message = (f"the evaluation's time limit ({opts.cap_s:g} s, --timeout) passed before the judge "
                           f"finished (it was stopped: {reply.message})")
            res = EvalResult(status, message, output=reply.output)
            if task.kind == "cuda":
                res.compile = CompileReport(**{**job["compile"], "diagnostics": []}) if job.get("compile") else None
            return res
        return EvalResult.from_dict(reply.result)


def task_folders(task: TaskSpec) -> list[str]:
    """The folders a task's evaluation reads (shown read-only in the sandbox): the kernel's and the
    harness's, and for Python files their package roots (a candidate imports its neighbours). A folder
    that is one the sandbox hides (the user's home, ``/tmp``) or holds one is never shown whole: a kernel
    directly in ``~`` showed every candidate ``~/.netrc``, ``~/.ssh`` and every key file there (and one in
    ``/tmp`` the machine's ``/tmp``, the GPU gate's lock files among them). Only what Python may import
    from it is shown then (``_importable_in``)."""
    from stark_lsp.evaluate.sandbox.policy import never_whole
    from stark_lsp.project_build.python_paths import module_place

    out = {str(task.path.parent)}
    for p in (task.path, task.harness):
        if p is not None:
            out.add(str(p.parent))
            if p.suffix == ".py":
                out.add(module_place(p).root)
    hidden = never_whole()
    shown: set[str] = set()
    for folder in out:
        real = os.path.realpath(folder)
        if any(h == real or h.startswith(real.rstrip("/") + "/") for h in hidden):
            shown.update(_importable_in(real, task))
        else:
            shown.add(folder)
    # a task (or harness) file that is itself a dot-file: named, so the sandbox never covers it (``dot_entries``)
    shown.update(str(p) for p in (task.path, task.harness) if p is not None and p.name.startswith("."))
    return sorted(shown)


def _importable_in(folder: str, task: TaskSpec) -> list[str]:
    """What a task in ``folder`` (a folder not to be shown whole) needs from it: its own files, and the Python
    modules and packages beside them, by name (no dotfile, nothing else: no key, no history, no config)."""
    files = [os.path.realpath(p) for p in (task.path, task.harness) if p is not None]
    out = [f for f in files if os.path.dirname(f) == folder]
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return out
    for e in entries:
        if e.name.startswith(".") or e.is_symlink():
            continue
        if (e.name.endswith(".py") and e.is_file()) or (e.is_dir() and os.path.isfile(os.path.join(e.path, "__init__.py"))):
            out.append(e.path)
    return out


def _report_dict(r: CompileReport) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(r)


def visible_gpu(index: int) -> str:
    """The CUDA_VISIBLE_DEVICES entry for GPU ``index`` as this process numbers
    them (the index-th entry of our own CUDA_VISIBLE_DEVICES when it is set)."""
    mine = [x.strip() for x in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if x.strip()]
    if not mine:
        return str(index)
    if not 0 <= index < len(mine):
        raise ValueError(f"GPU {index} is not visible (CUDA_VISIBLE_DEVICES={','.join(mine)})")
    return mine[index]


def gpu_count() -> int:
    """NVIDIA GPUs this process may use (its CUDA_VISIBLE_DEVICES, else /dev/nvidiaN)."""
    vis = os.environ.get("CUDA_VISIBLE_DEVICES")
    if vis is not None:
        return len([x for x in vis.split(",") if x.strip()])
    return len([p for p in Path("/dev").glob("nvidia[0-9]*") if p.name[len("nvidia"):].isdigit()])


def gpu_memory_gib() -> float | None:
    """The least total memory of the GPUs this process may use (nvidia-smi, without torch); None when
    it cannot be read."""
    import subprocess

    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index,memory.total", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    sizes = {}
    for line in out.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0].isdigit() and parts[1].replace(".", "", 1).isdigit():
            sizes[int(parts[0])] = float(parts[1]) / 1024
    vis = os.environ.get("CUDA_VISIBLE_DEVICES")
    if vis and all(x.strip().isdigit() for x in vis.split(",") if x.strip()):
        sizes = {i: m for i, m in sizes.items() if str(i) in [x.strip() for x in vis.split(",")]}
    return min(sizes.values()) if sizes else None


def gpu_present() -> bool:
    """Whether this machine has an NVIDIA GPU, without importing torch."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) == "":
        return False
    return any(Path("/dev").glob("nvidia[0-9]*")) or Path("/proc/driver/nvidia").exists()
