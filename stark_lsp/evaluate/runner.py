"""One evaluation, inside a worker process: load, verify, time, check for cheats.

Order of work for a candidate:

1. Load the task's reference (cached per worker) and import / load the candidate.
2. Correctness trials, each on fresh inputs from its own seed. The reference
   runs on its own copy of the inputs; its outputs stay alive while the
   candidate runs, and the allocator's free memory is poisoned first. The
   candidate's inputs are compared bit for bit with a pristine copy afterwards.
3. A custom kernel the candidate defines must really launch (profiler on the
   GPU, launch counter for Triton).
4. Timing of reference and candidate the same way (see timing.py), with a
   check for work hidden on other streams.
5. A reuse check: new values written into the *same* input tensors; the
   candidate must follow them (catches results cached across calls).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any, Callable

import torch

from stark_lsp.evaluate import timing as T
from stark_lsp.evaluate.compare import as_outputs, compare_outputs, same_tensors
from stark_lsp.evaluate.diagnostics import find_kernel_line, locate_snippet, parse_compiler_output, traceback_diagnostics
from stark_lsp.evaluate.guards import (
    LaunchCounter,
    TamperGuard,
    custom_kernel_names,
    kernel_launched,
    poison_cached_memory,
    preload,
    profiled_kernel_names,
    source_flags,
)
from stark_lsp.evaluate.loading import CandidateLoadError, HarnessError, Reference, clone_inputs, load_candidate, load_reference
from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.evaluate.roofline import Ceilings, task_floor
from stark_lsp.evaluate.result import (
    Cheat,
    CompileReport,
    Correctness,
    Diagnostic,
    EvalResult,
    Floor,
    KernelResources,
    Runtime,
    Status,
    Timing,
    Trial,
    build_dataclass,
)
from stark_lsp.tasks.spec import TaskSpec

_STICKY_CUDA = ("illegal memory access", "misaligned address", "unspecified launch failure", "device-side assert",
                "illegal instruction", "an illegal", "CUDA error: unknown error", "launch timed out")


class _Fail(Exception):
    def __init__(self, result: EvalResult, recycle: bool = False):
        self.result = result
        self.recycle = recycle


class Runner:
    def __init__(self, device: str = "auto"):
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        self.is_gpu = self.device.type == "cuda"
        preload()
        self.launches = LaunchCounter()
        self.launches.install()
        self._refs: dict[tuple[Any, ...], Reference] = {}
        self._ref_timing: dict[tuple[Any, ...], tuple[Timing, Timing | None]] = {}
        self.flusher = T.L2Flusher(self.device) if self.is_gpu else None
        self.ceilings = Ceilings(self.device) if self.is_gpu else None
        self._floors: dict[tuple[Any, ...], Floor | None] = {}
        self._buffers: dict[str, list[Any]] = {}
        self._compile_errors: dict[tuple[Any, ...], str] = {}
        self.overhead_ms = T.sync_overhead_ms(self.device) if self.is_gpu else 0.0
        if self.is_gpu:
            self._warm_profiler()
        self.guard = TamperGuard()  # last: after torch's own lazy initialisation

    def hardware(self) -> dict[str, Any]:
        if not self.is_gpu:
            interp = os.environ.get("TRITON_INTERPRET") == "1"
            return {"device": "cpu (triton interpreter)" if interp else "cpu", "is_gpu": False}
        p = torch.cuda.get_device_properties(self.device)
        return {
            "device": p.name, "is_gpu": True, "capability": f"{p.major}.{p.minor}",
            "sms": p.multi_processor_count, "l2_bytes": int(getattr(p, "L2_cache_size", 0) or 0),
            "memory_bytes": int(p.total_memory), "torch": torch.__version__,
        }

    def _warm_profiler(self) -> None:
        x = torch.ones(1024, device=self.device)
        try:
            profiled_kernel_names(lambda a: a * 2, [x])
        except Exception:
            pass

    # ------------------------------------------------------------------
    def evaluate(self, job: dict[str, Any]) -> tuple[EvalResult, bool]:
        t0 = time.perf_counter()
        try:
            result = self._evaluate(job)
            recycle = False
        except _Fail as f:
            result, recycle = f.result, f.recycle
        except torch.cuda.OutOfMemoryError as e:
            result, recycle = EvalResult(Status.RUNTIME_ERROR, f"out of GPU memory: {str(e).splitlines()[0]}"), False
        except HarnessError as e:
            result, recycle = EvalResult(Status.TASK_ERROR, f"task error: {e}"), False
        changed = self.guard.changes()
        if changed and not any(c.kind == "tampering" for c in result.cheats):
            recycle = True
            if result.status is Status.OK or result.status is Status.INCORRECT:
                result.status = Status.CHEAT
                result.message = "candidate changed global state: " + ", ".join(changed[:5])
            result.cheats.append(Cheat("tampering", "replaced or removed: " + ", ".join(changed[:10])))
        if self.is_gpu and not recycle:
            recycle = not self._context_healthy()
        result.seconds = time.perf_counter() - t0 + job.get("compile_seconds", 0.0)
        return result, recycle

    def _context_healthy(self) -> bool:
        try:
            torch.cuda.synchronize(self.device)
            return float(torch.ones(1, device=self.device).add_(1).item()) == 2.0
        except Exception:
            return False

    def _reference(self, spec: TaskSpec) -> Reference:
        path = spec.harness or spec.path
        key = (spec.task_id(), path.stat().st_mtime_ns, spec.path.stat().st_mtime_ns)
        if key not in self._refs:
            self._refs[key] = load_reference(spec, self.device)
        return self._refs[key]

    def _evaluate(self, job: dict[str, Any]) -> EvalResult:
        spec = TaskSpec.from_dict(job["task"])
        opts = EvalOptions.from_dict(job.get("options"))
        cand_file = Path(job["candidate_file"])
        source = cand_file.read_text()
        library = job.get("library")
        compile_report = build_dataclass(CompileReport, job["compile"]) if job.get("compile") else CompileReport(ok=True)
        resources = [KernelResources(**r) for r in job.get("resources", [])]
        flags = source_flags(source)

        def fail(status: Status, message: str, recycle: bool = False, **kw: Any) -> _Fail:
            return _Fail(EvalResult(status, message, compile=compile_report, resources=resources, flags=flags, **kw), recycle)

        try:
            ref = self._reference(spec)
        except HarnessError as e:
            raise fail(Status.TASK_ERROR, f"task error: {e}")

        # 1. import / load the candidate ------------------------------------
        self.launches.reset()
        tc = time.perf_counter()
        try:
            cand = load_candidate(ref, cand_file, library, opts.seed)
        except CandidateLoadError as e:
            cause = e.__cause__ or e
            diags = _load_diagnostics(cause, cand_file, source)
            compile_report.ok = False
            compile_report.diagnostics = compile_report.diagnostics + diags
            compile_report.log = (compile_report.log + "\n" + str(e)).strip()[-20000:]
            raise fail(Status.COMPILE_ERROR, _first_line(str(e)))
        if spec.kind != "cuda":
            compile_report.seconds += time.perf_counter() - tc
        changed = self.guard.changes()
        if changed:
            raise fail(Status.CHEAT, "importing the candidate changed global state: " + ", ".join(changed[:5]),
                       recycle=True, cheats=[Cheat("tampering", "replaced or removed: " + ", ".join(changed[:10]))])

        # 2. correctness ------------------------------------------------------
        trials: list[Trial] = []
        correctness = Correctness(passed=False, trials=trials)
        atol = opts.atol if opts.atol is not None else ref.atol
        rtol = opts.rtol if opts.rtol is not None else ref.rtol
        last_inputs: list[Any] = []
        for i in range(max(1, opts.trials)):
            seed = opts.seed + i
            inputs = ref.inputs(seed)
            pristine = clone_inputs(inputs)
            ref_out = self._run_reference(ref, opts.seed, clone_inputs(inputs))
            if self.is_gpu:
                poison_cached_memory(self.device)
            cand_in = clone_inputs(pristine)
            out = self._call_candidate(cand, cand_in, cand_file, source, compile_report, resources, flags, first=(i == 0))
            changed = same_tensors(pristine, cand_in)
            if changed is not None:
                raise fail(Status.CHEAT, f"the candidate modified input {changed} in place",
                           cheats=[Cheat("inputs_modified", f"input {changed} changed during the call")], correctness=correctness)
            cmp = compare_outputs(ref_out, out, atol, rtol)
            trials.append(Trial(seed, cmp.passed, cmp.max_abs_error, cmp.max_rel_error, cmp.failed_output, cmp.message))
            correctness.atol, correctness.rtol = cmp.atol, cmp.rtol
            if not cmp.passed:
                raise fail(Status.INCORRECT, f"trial {i + 1} (seed {seed}): {cmp.message}", correctness=correctness)
            last_inputs = cand_in
            del ref_out, out
        correctness.passed = True

        # 3. the custom kernel must really run ---------------------------------
        custom = custom_kernel_names(source)
        if custom:
            ran = list(self.launches.launches)  # Triton launches, compiled or interpreted
            if self.is_gpu and opts.profile_launches:
                ran += profiled_kernel_names(cand, clone_inputs(last_inputs))
            if spec.kind == "cuda" and not self.is_gpu:
                ran = custom  # never reached: CUDA candidates do not run without a GPU
            if not kernel_launched(custom, ran):
                raise fail(Status.CHEAT, f"kernel(s) {', '.join(custom)} defined but never launched (dead code or a fallback to PyTorch)",
                           cheats=[Cheat("kernel_not_launched", f"defined: {custom}; ran: {ran[:10]}")], correctness=correctness)

        # 4. timing ----------------------------------------------------------------
        t_inputs = ref.inputs(opts.seed + 1000)
        ref_t, compiled_t = self._time_reference(ref, spec, opts, t_inputs)
        cand_in = self._timing_buffers(spec, t_inputs)
        try:
            cand_t = self._time(cand, cand_in, opts)
        except Exception as e:
            raise self._runtime_failure(e, cand_file, source, compile_report, resources, flags)
        cheats: list[Cheat] = []
        if self.is_gpu:
            hidden = T.hidden_work_ms(cand_t, self.overhead_ms)
            if hidden > max(0.5 * cand_t.median_ms, 0.05) and hidden > 3 * max(T.hidden_work_ms(ref_t, self.overhead_ms), 0.0):
                cheats.append(Cheat("side_stream", f"{hidden:.3f} ms per call ran outside the timed stream "
                                                   f"(events {cand_t.median_ms:.3f} ms, device-synchronized wall {cand_t.wall_median_ms:.3f} ms)"))

        # 5. reuse check: same tensors, new values ------------------------------------
        fresh = ref.inputs(opts.seed + 2000)
        for dst, src in zip(cand_in, fresh):
            if isinstance(dst, torch.Tensor):
                dst.copy_(src)
        ref_out = self._run_reference(ref, opts.seed, clone_inputs(cand_in))
        out = self._call_candidate(cand, cand_in, cand_file, source, compile_report, resources, flags, first=False)
        cmp = compare_outputs(ref_out, out, atol, rtol)
        if not cmp.passed:
            cheats.append(Cheat("stale_results", "with new values in the same input tensors the output was wrong "
                                                 f"(results reused across calls?): {cmp.message}"))

        speedup = ref_t.median_ms / cand_t.median_ms if cand_t.median_ms > 0 else float("inf")
        runtime = Runtime(
            device=self.hardware()["device"], is_gpu=self.is_gpu, candidate=cand_t, reference=ref_t, speedup=speedup,
            compiled_reference=compiled_t,
            speedup_vs_compiled=(compiled_t.median_ms / cand_t.median_ms) if compiled_t and cand_t.median_ms > 0 else None,
            note="" if self.is_gpu else "CPU timing (Triton interpreter / eager CPU): not a GPU figure",
        )
        runtime.floor = self._floor(ref, spec, opts, t_inputs)
        why = self._compile_errors.get(self._ref_key(spec, opts))
        if why:
            runtime.note = (runtime.note + "; " if runtime.note else "") + why
        resources = resources or self._triton_resources()
        if speedup > opts.review_speedup:
            flags.append(f"speedup {speedup:.1f}x is over {opts.review_speedup:g}x: review before trusting it")
        if cheats:
            return EvalResult(Status.CHEAT, cheats[0].message, compile=compile_report, correctness=correctness,
                              runtime=runtime, resources=resources, cheats=cheats, flags=flags)
        return EvalResult(Status.OK, "", compile=compile_report, correctness=correctness, runtime=runtime,
                          resources=resources, flags=flags)

    # ------------------------------------------------------------------
    def _run_reference(self, ref: Reference, seed: int, inputs: list[Any]) -> Any:
        fn = ref.reference_fn(seed)
        with torch.no_grad():
            out = fn(*inputs)
        if self.is_gpu:
            torch.cuda.synchronize(self.device)
        return [o.detach() if isinstance(o, torch.Tensor) else o for o in as_outputs(out)]

    def _call_candidate(self, cand: Callable[..., Any], inputs: list[Any], cand_file: Path, source: str,
                        compile_report: CompileReport, resources: list[KernelResources], flags: list[str], first: bool) -> Any:
        try:
            with torch.no_grad():
                out = cand(*inputs)
            if self.is_gpu:
                torch.cuda.synchronize()  # the whole device: side streams included
        except torch.cuda.OutOfMemoryError:
            raise
        except Exception as e:
            if first and _is_triton_compile_error(e):
                compile_report.ok = False
                compile_report.diagnostics = compile_report.diagnostics + _triton_diagnostics(e, source)
                compile_report.log = str(e)[-20000:]
                raise _Fail(EvalResult(Status.COMPILE_ERROR, _triton_message(e), compile=compile_report,
                                       resources=resources, flags=flags))
            raise self._runtime_failure(e, cand_file, source, compile_report, resources, flags)
        return [o.detach() if isinstance(o, torch.Tensor) else o for o in as_outputs(out)]

    def _runtime_failure(self, e: BaseException, cand_file: Path, source: str, compile_report: CompileReport,
                         resources: list[KernelResources], flags: list[str]) -> _Fail:
        if isinstance(e, torch.cuda.OutOfMemoryError):
            return _Fail(EvalResult(Status.RUNTIME_ERROR, "out of GPU memory", compile=compile_report), False)
        msg = f"{type(e).__name__}: {_first_line(str(e))}"
        sticky = any(s in str(e) for s in _STICKY_CUDA)
        diags = traceback_diagnostics(e, str(cand_file))
        return _Fail(EvalResult(Status.RUNTIME_ERROR, msg, compile=compile_report, resources=resources, flags=flags,
                                diagnostics=diags), recycle=sticky)

    def _time(self, fn: Callable[..., Any], inputs: list[Any], opts: EvalOptions) -> Timing:
        if self.is_gpu:
            return T.time_gpu(fn, inputs, self.device, flusher=self.flusher if opts.flush_l2 else None,
                              warmup_ms=opts.warmup_ms, reps=opts.reps, budget_s=opts.time_budget_s)
        return T.time_cpu(fn, inputs, reps=opts.cpu_reps)

    def _time_reference(self, ref: Reference, spec: TaskSpec, opts: EvalOptions, inputs: list[Any]) -> tuple[Timing, Timing | None]:
        key = self._ref_key(spec, opts)
        if key not in self._ref_timing:
            fn = ref.reference_fn(opts.seed)
            ref_t = self._time(fn, clone_inputs(inputs), opts)
            compiled_t = None
            if opts.compile_baseline and self.is_gpu:
                try:
                    compiled = torch.compile(fn)
                    compiled_t = self._time(compiled, clone_inputs(inputs), opts)
                except Exception as e:  # noqa: BLE001 - a missing baseline never fails a candidate
                    self._compile_errors[key] = f"torch.compile baseline unavailable: {type(e).__name__}: {_first_line(str(e))}"
            self._ref_timing[key] = (ref_t, compiled_t)
        return self._ref_timing[key]

    @staticmethod
    def _ref_key(spec: TaskSpec, opts: EvalOptions) -> tuple[Any, ...]:
        return (spec.task_id(), opts.seed, opts.reps, opts.flush_l2, opts.compile_baseline, opts.cpu_reps)

    def _timing_buffers(self, spec: TaskSpec, values: list[Any]) -> list[Any]:
        """The candidate's timing inputs, in buffers kept per task: every candidate is
        timed on the same addresses, so placement in memory does not move the medians."""
        key = spec.task_id()
        bufs = self._buffers.get(key)
        shapes = [(v.shape, v.dtype) if isinstance(v, torch.Tensor) else None for v in values]
        if bufs is None or [(b.shape, b.dtype) if isinstance(b, torch.Tensor) else None for b in bufs] != shapes:
            self._buffers.clear()  # one task's buffers at a time: memory is the candidates'
            bufs = clone_inputs(values)
            self._buffers[key] = bufs
        out = []
        for b, v in zip(bufs, values):
            if isinstance(b, torch.Tensor):
                b.copy_(v)
                out.append(b)
            else:
                out.append(v)
        return out

    def _floor(self, ref: Reference, spec: TaskSpec, opts: EvalOptions, inputs: list[Any]) -> Floor | None:
        if self.ceilings is None:
            return None
        key = (spec.task_id(), opts.seed)
        if key not in self._floors:
            try:
                fn = ref.reference_fn(opts.seed)
                outs = self._run_reference(ref, opts.seed, clone_inputs(inputs))
                self._floors[key] = task_floor(self.ceilings, fn, clone_inputs(inputs), outs)
            except Exception:  # noqa: BLE001 - a floor is a bonus, never a failure
                self._floors[key] = None
        return self._floors[key]

    def _triton_resources(self) -> list[KernelResources]:
        """Registers, shared memory and spills of the Triton kernels compiled so far for this candidate."""
        out: list[KernelResources] = []
        if not self.is_gpu:
            return out
        import sys

        for modname, mod in list(sys.modules.items()):
            if not modname.startswith("stark_candidate_"):
                continue
            for obj in list(vars(mod).values()):
                cache = getattr(obj, "device_caches", None) or getattr(obj, "cache", None)
                if not isinstance(cache, dict):
                    continue
                for dev_cache in cache.values():
                    kernels = dev_cache[0] if isinstance(dev_cache, tuple) else dev_cache
                    if not isinstance(kernels, dict):
                        continue
                    for k in kernels.values():
                        md = getattr(k, "metadata", None)
                        out.append(KernelResources(
                            kernel=getattr(md, "name", getattr(getattr(obj, "fn", None), "__name__", "?")),
                            registers=getattr(k, "n_regs", None), spill_stores=getattr(k, "n_spills", None),
                            shared_bytes=getattr(md, "shared", None)))
        return out[-8:]


def _first_line(s: str) -> str:
    for ln in s.splitlines():
        if ln.strip():
            return ln.strip()[:500]
    return ""


def _is_triton_compile_error(e: BaseException) -> bool:
    return type(e).__module__.startswith("triton.compiler") or type(e).__name__ in ("CompilationError", "CompileTimeAssertionFailure")


def _triton_message(e: BaseException) -> str:
    """Triton's CompilationError reads "at L:C:", the source, a caret, then the cause."""
    text = str(e)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and set(ln.strip()) != {"^"}]
    cause = e.__cause__
    detail = f"{type(cause).__name__}: {cause}" if cause is not None else (lines[-1] if len(lines) > 1 else "")
    head = lines[0] if lines else type(e).__name__
    return f"{type(e).__name__} {head} {detail}".strip()[:1000]


def _triton_diagnostics(e: BaseException, source: str) -> list[Diagnostic]:
    message = _triton_message(e)
    line = None
    src = getattr(e, "src", None)
    fn_src = getattr(src, "src", src) if src is not None else None
    m = re.search(r"^at (\d+):(\d+):", str(e), re.M)
    if isinstance(fn_src, str) and m:
        first = next((ln for ln in fn_src.splitlines() if ln.strip().startswith("def ")), None)
        start = locate_snippet(first, source) if first else None
        if start is not None:  # "at L:C" counts from the function's def line
            def_offset = next((i for i, ln in enumerate(fn_src.splitlines()) if ln.strip().startswith("def ")), 0)
            line = start - def_offset + int(m.group(1)) - 1
    if line is None:  # fall back to the echoed source line
        for ln in str(e).splitlines()[1:]:
            hit = locate_snippet(ln, source) if len(ln.strip()) > 6 else None
            if hit:
                line = hit
                break
    return [Diagnostic(message=message, line=line, severity="error")]


def _load_diagnostics(cause: BaseException, cand_file: Path, source: str) -> list[Diagnostic]:
    text = str(cause)
    compiler = parse_compiler_output(text, source=source)
    if compiler:
        return compiler
    diags = traceback_diagnostics(cause, str(cand_file))
    if diags and diags[0].line is None:
        name = None
        for n in custom_kernel_names(source):
            if n in text:
                name = n
        if name:
            diags[0].line = find_kernel_line(source, name)
    return diags
