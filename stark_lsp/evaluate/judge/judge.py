"""The judge: one evaluation, decided in a process where no candidate code ever runs.

The judge holds the task's reference, draws the seeds, computes the
reference's outputs, compares, times, and writes the verdict. The candidate
runs in its own fresh process inside the sandbox (``candidate_process.py``,
forked by the zygote), and everything it says is checked:

1. **Load.** The candidate process imports the candidate (or loads its CUDA
   library) under the load limit.
2. **Correctness.** ``trials`` trials, each on a seed drawn here, at random,
   for this evaluation: the candidate process draws the inputs of that seed
   itself (new storage) and writes its outputs to the shared buffer; the judge
   draws the same inputs, runs the reference, and compares (shape, dtype,
   NaN/inf positions, tolerance). The reference's outputs never exist in the
   candidate's process.
3. **Launch check.** Every kernel the source defines and launches must appear,
   by exact name, among the kernels that ran.
4. **Timing.** The reference's own fresh process (no candidate code, same
   protocol) is timed once per task. The candidate's calls are timed one by
   one, each on fresh inputs; the judge times each request on its own clock,
   checks the outputs of a few calls chosen in secret (``digest.py``), and
   compares the time the candidate reports with the time it observed
   (``timing_check.py``). The speedup is computed here.
5. **Limits.** Every phase has a deadline scaled from the reference's time;
   a candidate that misses one is killed (its whole sandbox is cleared) and
   reported; a slow one is cut after a few calls.
"""

from __future__ import annotations

import os
import random
import secrets
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from stark_lsp.evaluate.wire import digest as D
from stark_lsp.evaluate import timing_check as TC
from stark_lsp.speedups import ratio_text, speedup_text
from stark_lsp.safe_text import clean_text, first_line
from stark_lsp.evaluate.judge.link import CandidateLink, SandboxedZygote, SandboxError
from stark_lsp.evaluate.wire.channel import (
    ChannelError,
    Deadline,
    Interrupted,
    PeerClosed,
    aligned,
    check_output_headers,
    checked_number,
    finite_number,
)
from stark_lsp.evaluate.judge.compare import as_outputs, compare_outputs, tolerance_for
from stark_lsp.evaluate.judge.launch_rule import (custom_kernel_names, launched_kernel_names, missing_launches, source_flags,
                                       triton_kernel_names)
from stark_lsp.evaluate.harness import HarnessError, Reference, clone_inputs, load_reference
from stark_lsp.evaluate.options import EvalOptions
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
    TaskIO,
    Timing,
    Trial,
    ValueInfo,
    build_dataclass,
)
from stark_lsp.evaluate.judge.roofline import Ceilings, task_floor
from stark_lsp.evaluate.sandbox.policy import Layout, Sandbox, make_layout, probe
from stark_lsp.evaluate.timing import L2Flusher, summarize
from stark_lsp.evaluate.sandbox.triton_launchers import valid_signatures
from stark_lsp.tasks.spec import TaskSpec

_perf = time.perf_counter
READY_LIMIT_S = 120.0
_PIN_FROM = 4 << 20  # output bytes from which pinning the judge's mapping pays (a few ms once per process)
PROGRESS_SLACK_S = 15.0  # a first call's time after a kernel launched (module loads, the next compile)


class SandboxUnavailable(RuntimeError):
    """The policy requires a sandbox and none can be made here."""


class Cancelled(Exception):
    pass


class _Verdict(Exception):
    def __init__(self, result: EvalResult):
        self.result = result


@dataclass
class _Timed:
    timing: Timing
    samples: list[float]  # what the process reported per call (ms)
    walls: list[float]  # the judge's clock around each request (ms)
    slow: bool = False


@dataclass
class _RefTiming:
    timing: Timing
    samples: list[float]
    walls: list[float]
    compiled: Timing | None = None
    note: str = ""


@dataclass
class _Eval:
    """What one evaluation has gathered so far (for the verdict and its failure paths)."""

    compile: CompileReport
    resources: list[KernelResources]
    flags: list[str]
    correctness: Correctness | None = None
    io: TaskIO | None = None
    cheats: list[Cheat] = field(default_factory=list)
    phases: dict[str, float] = field(default_factory=dict)
    _since: float = field(default_factory=lambda: _perf())

    def mark(self, phase: str) -> None:
        """The time since the last mark goes to ``phase`` (seconds, the judge's clock)."""
        now = _perf()
        self.phases[phase] = round(self.phases.get(phase, 0.0) + now - self._since, 4)
        self._since = now

    def result(self, status: Status, message: str, **kw: Any) -> EvalResult:
        return EvalResult(status, message, compile=self.compile, correctness=self.correctness, resources=self.resources,
                          flags=self.flags, io=self.io, phases=dict(self.phases), **kw)


def _value_info(v: Any) -> ValueInfo:
    if isinstance(v, torch.Tensor):
        return ValueInfo(shape=list(v.shape), dtype=str(v.dtype).replace("torch.", ""))
    return ValueInfo(value=repr(v)[:200])


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Judge:
    def __init__(self, device: str = "auto", env: dict[str, str] | None = None):
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        self.is_gpu = self.device.type == "cuda"
        # the least a call may take: on the CPU, Triton's interpreter runs a kernel hundreds of times
        # slower than eager PyTorch (a fused level-2 model was cut at 2 s in CI on a busy 2-core machine)
        self._floor_s = 2.0 if self.is_gpu else TC.CPU_FLOOR_S
        self.env = dict(env or {})
        self.session_seed = secrets.randbits(31)  # model parameters: unknown to any candidate source
        self._rng = random.SystemRandom()
        self._refs: dict[tuple[Any, ...], Reference] = {}
        self._ref_timing: dict[tuple[Any, ...], _RefTiming] = {}
        self._floors: dict[tuple[Any, ...], Floor | None] = {}
        self.flusher = L2Flusher(self.device) if self.is_gpu else None
        self.ceilings = Ceilings(self.device) if self.is_gpu else None
        self.zygote: SandboxedZygote | None = None
        self._sandbox: Sandbox | None = None
        self._sandbox_probed = False
        self._profiler_next = False  # whether the candidate processes started ahead start the profiler
        self._launchers: list[tuple[str, ...]] = []  # Triton launcher signatures for the zygote to build
        self._zygote_args: tuple[list[str], str] = ([], "auto")  # what the last zygote was made for

    # ------------------------------------------------------------------
    def hardware(self) -> dict[str, Any]:
        sb = self.sandbox()
        if not self.is_gpu:
            interp = os.environ.get("TRITON_INTERPRET") == "1"
            return {"device": "cpu (triton interpreter)" if interp else "cpu", "is_gpu": False,
                    "sandbox": sb.describe() if sb else "none"}
        p = torch.cuda.get_device_properties(self.device)
        return {
            "device": p.name, "is_gpu": True, "capability": f"{p.major}.{p.minor}",
            "sms": p.multi_processor_count, "l2_bytes": int(getattr(p, "L2_cache_size", 0) or 0),
            "memory_bytes": int(p.total_memory), "torch": torch.__version__,
            "sandbox": sb.describe() if sb else "none",
        }

    def sandbox(self) -> Sandbox | None:
        if not self._sandbox_probed:
            sb = probe()
            self._sandbox = sb if sb.available else None
            self._sandbox_reason = sb.reason
            self._sandbox_probed = True
        return self._sandbox

    def close(self) -> None:
        if self.zygote is not None:
            self.zygote.close()
            self.zygote = None

    def _arch(self) -> int:
        """The GPU's architecture as Triton names it (90 for sm_90); 0 on the CPU."""
        if not self.is_gpu:
            return 0
        major, minor = torch.cuda.get_device_capability(self.device)
        return major * 10 + minor

    def _zygote_for(self, paths: list[str], policy: str) -> SandboxedZygote:
        """A zygote whose sandbox shows ``paths`` (restarted with a wider view when needed)."""
        sandbox = None if policy == "off" else self.sandbox()
        if sandbox is None and policy == "required":
            raise SandboxUnavailable(
                f"no sandbox can be made here ({self._sandbox_reason}): candidates written by an LLM are not run "
                f"without one; install util-linux (unshare) or bubblewrap, or pass --unsafe-no-sandbox")
        z = self.zygote
        sandboxed = sandbox is not None
        reuse = z is not None and z.alive() and (z.sandbox is not None) == sandboxed and z.covers(paths)
        if reuse:
            layout = z.layout
        else:
            keep = list(z.layout.expose) if z is not None and z.sandbox is not None else []
            layout = make_layout(expose=[*keep, *paths]) if sandboxed else Layout(hidden=())
        root = sandbox.root_kept(layout) if sandbox is not None else None
        if root and policy == "required":
            raise SandboxUnavailable(
                f"the sandbox would keep uid 0 here ({root}): candidates written by an LLM are not run as root; "
                f"make the path readable by others (chmod o+rX), run as another user, or pass --unsafe-no-sandbox")
        self._zygote_args = (paths, policy)
        if reuse:
            return z
        self.close()
        self.zygote = SandboxedZygote(sandbox, layout, self.device.type, self.env, arch=self._arch())
        return self.zygote

    def _take(self, buffer_bytes: int, profiler: bool) -> CandidateLink:
        """A fresh candidate process; where the zygote cannot give one (it threw its sandbox
        away: something the last candidate left could not be removed), a new zygote's."""
        if self.zygote is not None and self.zygote.alive():
            try:
                return self.zygote.take(buffer_bytes, profiler)
            except SandboxError:
                self.close()
        return self._zygote_for(*self._zygote_args).take(buffer_bytes, profiler)

    def settle(self) -> None:
        """After a verdict went out: wait for the zygote to clear away the last candidate and
        start the next process, so that neither the next evaluation nor another judge on this
        GPU meets what is left of it; a zygote that cannot is replaced now."""
        if self.zygote is None:
            return
        try:
            self.zygote.settle()
        except Exception:  # noqa: BLE001 - never trusted after misbehaving: a new one now, not on the next clock
            self.close()
            try:
                self._zygote_for(*self._zygote_args).prepare_next(self._profiler_next)
            except Exception:  # noqa: BLE001 - the next evaluation tries again, and says why
                self.close()

    # ------------------------------------------------------------------
    def _reference(self, spec: TaskSpec) -> Reference:
        path = spec.harness or spec.path
        key = (spec.task_id(), path.stat().st_mtime_ns, spec.path.stat().st_mtime_ns)
        if key not in self._refs:
            ref = load_reference(spec, self.device)
            a, b = ref.inputs(12345), ref.inputs(12345)
            if any(isinstance(x, torch.Tensor) and not (x.shape == y.shape and torch.equal(x, y))
                   for x, y in zip(a, b)) or len(a) != len(b):
                raise HarnessError("get_inputs() gives different inputs for the same torch.manual_seed: draw every "
                                   "random value through torch (not numpy or random)")
            self._refs[key] = ref
        return self._refs[key]

    def _reference_outputs(self, ref: Reference, seed: int, param_seed: int) -> tuple[list[Any], list[Any]]:
        inputs = ref.inputs(seed)
        fn = ref.reference_fn(param_seed)
        with torch.no_grad():
            out = fn(*clone_inputs(inputs))
        _sync(self.device)
        return inputs, [o.detach() if isinstance(o, torch.Tensor) else o for o in as_outputs(out)]

    def _seeds(self, opts: EvalOptions, n: int, base: int) -> list[int]:
        if opts.seed is None:
            return [self._rng.randrange(1, 2**31) for _ in range(n)]
        return [opts.seed + base + i for i in range(n)]

    # ------------------------------------------------------------------
    def evaluate(self, job: dict[str, Any], cancel_fd: int | None = None) -> EvalResult:
        spec = TaskSpec.from_dict(job["task"])
        opts = EvalOptions.from_dict(job.get("options"))
        cand_file = Path(job["candidate_file"])
        source = cand_file.read_text()  # read for its kernel names only: the judge never runs it
        compile_report = build_dataclass(CompileReport, job["compile"]) if job.get("compile") else CompileReport(ok=True)
        ev = _Eval(compile_report, [KernelResources(**r) for r in job.get("resources", [])], source_flags(source))
        self._profiler_next = bool(self.is_gpu and opts.profile_launches and _cuda_kernels(source))
        try:
            ref = self._reference(spec)
        except HarnessError as e:
            return ev.result(Status.TASK_ERROR, f"task error: {e}")
        param_seed = self.session_seed if opts.seed is None else opts.seed
        paths = [str(p) for p in job.get("expose", [])]
        try:
            self._zygote_for(paths, job.get("sandbox", "auto"))
            ev.mark("sandbox")
            ref_t = self._time_reference(spec, ref, opts, param_seed, cancel_fd)
            ev.mark("reference timing")
            return self._evaluate(spec, opts, ref, ref_t, param_seed, cand_file, source, job, ev, cancel_fd)
        except _Verdict as v:
            return v.result
        except Cancelled:
            return ev.result(Status.TIMEOUT, "stopped before it finished: the run's wall-time limit passed")
        finally:
            if self.zygote is not None and self.zygote.alive():
                try:
                    if self._launchers:
                        self.zygote.add_launchers(self._launchers)
                        self._launchers = []
                    self.zygote.prepare_next(self._profiler_next)
                except Exception:  # noqa: BLE001 - a zygote that misbehaves is replaced, never trusted
                    self.close()

    def _evaluate(self, spec: TaskSpec, opts: EvalOptions, ref: Reference, ref_t: _RefTiming, param_seed: int,
                  cand_file: Path, source: str, job: dict[str, Any], ev: _Eval,
                  cancel_fd: int | None) -> EvalResult:
        ref_ms = ref_t.timing.median_ms
        call_limit = TC.phase_limit_s(ref_ms, 1, self._floor_s)
        seeds = self._seeds(opts, max(1, opts.trials), 0)
        inputs0, ref_out0 = self._reference_outputs(ref, seeds[0], param_seed)
        out_bytes = sum(aligned(o.numel() * o.element_size()) for o in ref_out0 if isinstance(o, torch.Tensor))
        ev.io = TaskIO(inputs=[_value_info(v) for v in inputs0], outputs=[_value_info(v) for v in ref_out0])
        ev.mark("reference outputs")
        link = self._take(out_bytes + (1 << 20), self._profiler_next)
        try:
            self._ask(link, None, READY_LIMIT_S, ev, cancel_fd, "start")
            ev.mark("process start")
            reply = self._ask(link, {"op": "task", "task": spec.to_dict()}, opts.load_timeout_s, ev, cancel_fd,
                              "loading the task")
            self._raise_on_error(reply, ev, link, role="reference")
            cal_e, cal_w = self._calibrate(link, ref_out0, opts, ev, cancel_fd)
            ev.mark("calibration")
            load_limit = opts.load_timeout_s + (opts.compile_timeout_s if job.get("load_inline") else 0.0)
            tl = _perf()
            reply = self._ask(link, {"op": "load", "task": spec.to_dict(), "role": "candidate",
                                     "candidate_file": str(cand_file), "library": job.get("library"),
                                     "param_seed": param_seed}, load_limit, ev, cancel_fd, "loading")
            if spec.kind != "cuda":
                ev.compile.seconds += _perf() - tl
            self._raise_on_error(reply, ev, link, role="candidate")
            ev.mark("load")

            # 2. correctness ------------------------------------------------------
            # the first call compiles Triton kernels (it says after each launch); a CUDA
            # candidate's library is loaded already: its first call gets no compile time
            first_limit = (min(opts.load_timeout_s, call_limit + PROGRESS_SLACK_S)
                           if spec.kind == "cuda" and not job.get("load_inline") else opts.load_timeout_s)
            trials: list[Trial] = []
            ev.correctness = Correctness(passed=False, trials=trials)
            atol = opts.atol if opts.atol is not None else ref.atol
            rtol = opts.rtol if opts.rtol is not None else ref.rtol
            for i, seed in enumerate(seeds):
                ref_out = ref_out0 if i == 0 else self._reference_outputs(ref, seed, param_seed)[1]
                first = i == 0
                reply = self._ask(link, {"op": "trial", "seed": seed},
                                  first_limit if first else call_limit + self._transfer_s(out_bytes),
                                  ev, cancel_fd, "the first call" if first else f"trial {i + 1}",
                                  launched_limit=call_limit + self._transfer_s(out_bytes),
                                  progress_limit=call_limit + PROGRESS_SLACK_S)
                self._raise_on_error(reply, ev, link, role="candidate", first=first)
                outs = self._read_outputs(reply.get("outputs"), link, ev)
                if first:
                    ev.mark("first call")
                changed = reply.get("inputs_changed")
                if isinstance(changed, int) and not isinstance(changed, bool):
                    ev.cheats.append(Cheat("inputs_modified", f"input {changed} changed during the call"))
                    raise _Verdict(ev.result(Status.CHEAT, f"the candidate modified input {changed} in place",
                                             cheats=ev.cheats, output=link.output_tail()))
                why = _unstored(ref_out, outs)
                if why:
                    trials.append(Trial(seed, False, None, None, None, why))
                    raise _Verdict(ev.result(Status.INCORRECT, f"trial {i + 1} (seed {seed}): {why}", output=link.output_tail()))
                cmp = compare_outputs(ref_out, outs, atol, rtol)
                trials.append(Trial(seed, cmp.passed, cmp.max_abs_error, cmp.max_rel_error, cmp.failed_output, cmp.message))
                ev.correctness.atol, ev.correctness.rtol = cmp.atol, cmp.rtol
                if not cmp.passed:
                    raise _Verdict(ev.result(Status.INCORRECT, f"trial {i + 1} (seed {seed}): {cmp.message}",
                                             output=link.output_tail()))
                del ref_out, outs
            ev.correctness.passed = True
            ev.mark("trials")

            # 3. every kernel the source launches must run ------------------------------
            self._launch_check(link, source, spec, opts, ev, call_limit, cancel_fd)
            ev.mark("launch check")

            # 4. timing ------------------------------------------------------------------
            timed = self._time(link, ref, opts, param_seed, ref_ms, ev, cancel_fd, role="candidate", atol=atol, rtol=rtol,
                               overhead_ms=TC.protocol_overhead_ms(cal_e, cal_w, self.is_gpu))
            cand_t, slow = timed.timing, timed.slow
            hidden = TC.untimed_work(timed.samples, timed.walls, cal_e, cal_w, self.is_gpu)
            if hidden.flag:  # the process's figures are below the judge's clock: report the clock's
                cand_t = summarize(TC.judged_samples(timed.samples, timed.walls, hidden.reference_overhead_ms),
                                   timed.walls)
                cand_t.steps_ms = dict(timed.timing.steps_ms)
            ev.mark("timing")
            if not ev.resources:
                ev.resources = self._resources(link, source, ev, cancel_fd)
            output = link.output_tail()
            ev.mark("resources")
        finally:
            link.close()

        speedup = ref_ms / cand_t.median_ms if cand_t.median_ms > 0 else float("inf")
        compiled = ref_t.compiled
        runtime = Runtime(
            device=self.hardware()["device"], is_gpu=self.is_gpu, candidate=cand_t, reference=ref_t.timing,
            speedup=speedup, compiled_reference=compiled,
            speedup_vs_compiled=(compiled.median_ms / cand_t.median_ms) if compiled and cand_t.median_ms > 0 else None,
            note="" if self.is_gpu else "CPU timing (Triton interpreter / eager CPU): not a GPU figure",
        )
        runtime.floor = self._floor(ref, spec, opts, param_seed)
        notes = [n for n in (runtime.note, ref_t.note) if n]
        if slow:
            notes.append(f"slower than {TC.SLOW_FACTOR:g}x the reference ({cand_t.median_ms:.4g} ms vs {ref_ms:.4g} ms): "
                         f"timed over {cand_t.reps} calls only")
        runtime.note = "; ".join(notes)
        if hidden.cheat:
            ev.cheats.append(Cheat("untimed_work", hidden.message()))
        elif hidden.flag:
            ev.flags.append(f"review: the judge's clock saw {hidden.hidden_ms:.3f} ms per call more than this process's "
                            f"calibration (a patched timer, or host noise; a cheat beyond {hidden.margin_ms:.2f} ms): "
                            f"the runtime shown is the judge's clock's")
        if speedup > opts.review_speedup:
            ev.flags.append(f"speedup {speedup_text(speedup, 'eager')} is over {ratio_text(opts.review_speedup)}: "
                            "review before trusting it")
        if ev.cheats:
            return ev.result(Status.CHEAT, ev.cheats[0].message, runtime=runtime, cheats=ev.cheats, output=output)
        return ev.result(Status.OK, "", runtime=runtime, output=output)

    # ------------------------------------------------------------------
    def _ask(self, link: CandidateLink, msg: dict[str, Any] | None, limit_s: float, ev: _Eval, cancel_fd: int | None,
             phase: str, launched_limit: float | None = None, progress_limit: float | None = None) -> dict[str, Any]:
        """One request to the candidate process; any misbehaviour ends the evaluation."""
        try:
            if msg is None:
                link.wait_ready(limit_s, cancel_fd)
                return {}
            return link.request(msg, limit_s, launched_limit_s=launched_limit, progress_limit_s=progress_limit,
                                cancel_fd=cancel_fd)
        except Interrupted:
            self._kill(link)
            raise Cancelled() from None
        except Deadline:
            self._kill(link)
            raise _Verdict(ev.result(Status.TIMEOUT, f"{phase}: no answer within its time limit "
                                                     f"({link.last_limit_s:.1f} s): killed",
                                     output=link.output_tail())) from None
        except PeerClosed:
            how = self.zygote.how_it_ended(link) if self.zygote is not None else ""
            self._kill(link)
            raise _Verdict(ev.result(Status.CRASHED, f"{phase}: the candidate process died{how}",
                                     output=link.output_tail())) from None
        except ChannelError as e:
            self._kill(link)
            ev.cheats.append(Cheat("channel", f"{phase}: {e}"))
            raise _Verdict(ev.result(Status.CHEAT, f"{phase}: the candidate process broke the protocol ({e})",
                                     cheats=ev.cheats, output=link.output_tail())) from None

    def _kill(self, link: CandidateLink) -> None:
        link.close()
        if self.zygote is not None:
            try:
                self.zygote.kill_all()
            except (SandboxError, OSError):
                self.close()

    def _raise_on_error(self, reply: dict[str, Any], ev: _Eval, link: CandidateLink, role: str,
                        first: bool = False) -> None:
        err = reply.get("error")
        if err is None:
            return
        if not isinstance(err, dict):
            err = {"message": "malformed error"}
        status = {"compile_error": Status.COMPILE_ERROR, "task_error": Status.TASK_ERROR}.get(err.get("status"), Status.RUNTIME_ERROR)
        if role == "candidate" and status is Status.TASK_ERROR:
            status = Status.RUNTIME_ERROR  # the judge loaded the task: failing it there is the candidate's doing
        message = clean_text(err.get("message"), 1000) or status.value
        diags = _diagnostics(err.get("diagnostics"))
        if status is Status.COMPILE_ERROR:
            ev.compile.ok = False
            ev.compile.diagnostics = ev.compile.diagnostics + diags
            ev.compile.log = (ev.compile.log + "\n" + clean_text(err.get("log"), 20000)).strip()
            raise _Verdict(ev.result(status, first_line(message), output=link.output_tail()))
        raise _Verdict(ev.result(status, message, diagnostics=diags, output=link.output_tail()))

    @staticmethod
    def _transfer_s(nbytes: int) -> float:
        return nbytes / 0.5e9  # copying outputs to the judge: 0.5 GB/s is a floor, not an estimate

    def _read_outputs(self, headers: Any, link: CandidateLink, ev: _Eval) -> list[Any]:
        try:
            checked = check_output_headers(headers, link.capacity)
        except ChannelError as e:
            ev.cheats.append(Cheat("channel", str(e)))
            raise _Verdict(ev.result(Status.CHEAT, f"the candidate process sent invalid outputs ({e})",
                                     cheats=ev.cheats, output=link.output_tail())) from None
        outs: list[Any] = []
        if self.is_gpu and any(h["kind"] == "tensor" and h["stored"] and h["nbytes"] >= _PIN_FROM for h in checked):
            link.pin_buffer()
        for i, h in enumerate(checked):
            if h["kind"] == "other":
                raise _Verdict(ev.result(Status.INCORRECT, f"output {i} is a {h['type']}, not a tensor or a number",
                                         output=link.output_tail()))
            if h["kind"] == "scalar":
                outs.append(h["value"])
            elif not h["stored"]:  # did not fit a buffer sized for the reference's outputs
                outs.append(torch.empty(h["shape"], dtype=getattr(torch, h["dtype"]), device="meta"))
            else:
                dtype = getattr(torch, h["dtype"])
                t = torch.empty(h["nbytes"], dtype=torch.uint8, device=self.device)
                if h["nbytes"]:  # one copy, from the shared buffer to the device: the snapshot the judge keeps
                    view = torch.frombuffer(link.buffer, dtype=torch.uint8, count=h["nbytes"], offset=h["offset"])
                    try:
                        t.copy_(view)
                    finally:
                        del view  # the buffer is unmapped when the link closes: no view may outlive it
                outs.append(t.view(dtype).reshape(h["shape"]))
        return outs

    def _launch_check(self, link: CandidateLink, source: str, spec: TaskSpec, opts: EvalOptions, ev: _Eval,
                      call_limit: float, cancel_fd: int | None) -> None:
        custom = custom_kernel_names(source)
        if spec.kind == "cuda" and not self.is_gpu:
            return
        profile = bool(self.is_gpu and opts.profile_launches and _cuda_kernels(source))  # Triton's counter sees the rest
        reply = self._ask(link, {"op": "launches", "seed": self._seeds(opts, 1, 3000)[0], "profile": profile},
                          call_limit + 30.0, ev, cancel_fd, "the launch check")
        ran = launched_kernel_names(_strings(reply.get("triton")) + _strings(reply.get("profiled")))
        if self.is_gpu:
            self._launchers = valid_signatures(reply.get("launchers"))
        reached = set(_strings(reply.get("reached")))
        if not custom:  # kernels the source scan cannot see (``@jit`` imported under another name, ...)
            custom = _strings(reply.get("created"))[:64]
            if not custom:
                return
        if not self.is_gpu or not opts.profile_launches:
            ran |= set()  # only Triton's counter: CUDA kernels cannot be seen without the profiler
            if spec.kind == "cuda":
                return
        missing = missing_launches(source, custom, ran, reached)
        if missing:
            ev.cheats.append(Cheat("kernel_not_launched", f"defined: {custom}; ran: {sorted(ran)[:10]}"))
            raise _Verdict(ev.result(
                Status.CHEAT, f"kernel(s) {', '.join(missing)} " + (
                    "reached but never launched (a failed launch behind a fallback)" if set(missing) & reached
                    else "defined but never launched (dead code or a fallback to PyTorch)"),
                cheats=ev.cheats, output=link.output_tail()))

    def _resources(self, link: CandidateLink, source: str, ev: _Eval, cancel_fd: int | None) -> list[KernelResources]:
        names = custom_kernel_names(source)
        if not self.is_gpu or not names:
            return []
        reply = self._ask(link, {"op": "resources", "kernels": names}, 30.0, ev, cancel_fd, "resources")
        out = []
        for r in reply.get("resources") or []:
            if isinstance(r, dict) and r.get("kernel") in names:
                out.append(KernelResources(kernel=str(r["kernel"]), registers=_int(r.get("registers")),
                                           shared_bytes=_int(r.get("shared_bytes")), spill_stores=_int(r.get("spill_stores"))))
        return out

    # ------------------------------------------------------------------
    def _time(self, link: CandidateLink, ref: Reference, opts: EvalOptions, param_seed: int, ref_ms: float | None,
              ev: _Eval, cancel_fd: int | None, role: str, atol: float | None = None,
              rtol: float | None = None, overhead_ms: float = 0.0) -> _Timed:
        """Warm up, then time calls one by one, each on fresh inputs, the judge's clock around each.

        ``overhead_ms``: this process's own cost per request (its calibration), taken off the
        judge's clock around the first warm-up call to tell a slow candidate (cut after a few
        calls) from a fast one whose request is mostly drawing inputs and the round trip."""
        call_limit = TC.phase_limit_s(ref_ms, 1, self._floor_s) if ref_ms else opts.load_timeout_s
        seed = self._seeds(opts, 1, 1000)[0]
        t0 = _perf()
        self._ask(link, {"op": "warm", "seed": seed, "calls": 1}, call_limit + 2.0, ev, cancel_fd, "warm-up")
        request = (_perf() - t0) * 1e3  # what a timed request will cost, about
        one = TC.call_estimate_ms(request, overhead_ms)  # what the call alone costs
        if ref_ms is not None and TC.is_slow(one, ref_ms):
            # one request is one sample: the first call after the trials can meet an idle GPU's low
            # clocks (seen on the H200 cutting a fast candidate to 3 calls); slow only if a second says so
            t0 = _perf()
            self._ask(link, {"op": "warm", "seed": seed, "calls": 1}, call_limit + 2.0, ev, cancel_fd, "warm-up")
            again = (_perf() - t0) * 1e3
            request, one = min(request, again), min(one, TC.call_estimate_ms(again, overhead_ms))
        slow = ref_ms is not None and TC.is_slow(one, ref_ms)
        if not slow:
            calls = int(min(50, max(2, opts.warmup_ms / max(one, 1e-3))))
            limit = (TC.phase_limit_s(ref_ms, calls, self._floor_s) if ref_ms else opts.load_timeout_s) + 2.0
            self._ask(link, {"op": "warm", "seed": seed, "calls": calls}, limit, ev, cancel_fd, "warm-up")
        ev.mark("warm-up")
        if slow:
            n = TC.SLOW_REPS
        elif self.is_gpu:
            n = TC.reps_for(request, opts.reps, opts.time_budget_s)  # the budget holds whole requests
        else:
            n = max(1, opts.cpu_reps)
        rep_seeds = self._seeds(opts, n, 5000)
        # new digest signs for every call, secret until its request (``digest.py``: signs known
        # ahead would let a candidate forge the digest of a linear task without its work)
        projs = [self._rng.randrange(1, 2**31) for _ in range(n)]
        checked: dict[int, tuple[list[list[float]], list[float]]] = {}
        if role == "candidate":  # the reference digests of a few calls, chosen in secret, before any is timed
            for i in self._rng.sample(range(n), min(max(1, opts.verified_reps), n)):
                _, out = self._reference_outputs(ref, rep_seeds[i], param_seed)
                bounds = [D.bound([o], *tolerance_for(getattr(o, "dtype", None), atol, rtol))[0] for o in out]
                checked[i] = (D.digest(out, projs[i]), bounds)
                del out
            ev.mark("reference digests")
        per_call_s = max(request, ref_ms or 0.0) / 1000.0
        rep_limit = max(call_limit, 20 * per_call_s) + 2.0  # one call plus drawing inputs, the flush and the digest
        phase_end = _perf() + n * rep_limit
        samples, walls = [], []
        claimed: dict[int, Any] = {}  # the digests of the checked calls, as the process sent them
        steps: dict[str, list[float]] = {k: [] for k in REP_STEPS}
        for i in range(n):
            t0 = _perf()  # the judge's clock: drawing the inputs, the flush, the call, the syncs, the digest
            reply = self._ask(link, {"op": "rep", "seed": rep_seeds[i], "proj": projs[i], "flush": opts.flush_l2},
                              max(0.1, min(rep_limit, phase_end - t0)), ev, cancel_fd, f"timed call {i + 1}")
            w = (_perf() - t0) * 1e3
            self._raise_on_error(reply, ev, link, role=role)
            try:
                e = checked_number(reply, "ms", 0.0, 1e7)
            except ChannelError as err:
                ev.cheats.append(Cheat("channel", str(err)))
                raise _Verdict(ev.result(Status.CHEAT, f"timed call {i + 1}: {err}", cheats=ev.cheats,
                                         output=link.output_tail())) from None
            if i in checked:  # compared after the loop: no call is answered sooner or later for being checked
                claimed[i] = reply.get("digest")
            samples.append(e)
            walls.append(w)
            for k, v in rep_steps(reply).items():
                steps[k].append(v)
        for i in sorted(claimed):
            why = D.agrees(claimed[i], *checked[i])
            if why and "NaN/inf counts" in why:  # fp16 overflow, log(0) on a seed no trial drew: a wrong answer
                raise _Verdict(ev.result(
                    Status.INCORRECT, f"on the inputs of timed call {i + 1} (seed {rep_seeds[i]}): {why}",
                    output=link.output_tail()))
            if why:
                ev.cheats.append(Cheat("wrong_while_timed", f"timed call {i + 1}: {why}"))
                raise _Verdict(ev.result(
                    Status.CHEAT, f"a timed call's output was wrong (results cached, or work skipped while timed): "
                                  f"call {i + 1}, {why}", cheats=ev.cheats, output=link.output_tail()))
        timing = summarize(samples, walls)
        timing.steps_ms = {k: round(statistics.median(v), 4) for k, v in steps.items() if v}
        return _Timed(timing, samples, walls, slow)

    def _calibrate(self, link: CandidateLink, ref_out: list[Any], opts: EvalOptions, ev: _Eval,
                   cancel_fd: int | None) -> tuple[list[float], list[float]]:
        """This process's own overhead per timed call, measured before candidate code exists in
        it: calls that do nothing, answered with a digest of outputs shaped like the reference's.
        The candidate's calls are compared with these, in the same process (same allocator, same
        clocks), so what the judge's clock sees beyond them is work hidden from the call."""
        shapes = [{"shape": list(o.shape), "dtype": str(o.dtype).replace("torch.", "")}
                  for o in ref_out if isinstance(o, torch.Tensor)]
        n, skip = (12, 2) if self.is_gpu else (5, 1)
        samples, walls = [], []
        for i, seed in enumerate(self._seeds(opts, n, 7000)):
            t0 = _perf()
            reply = self._ask(link, {"op": "calib", "outputs": shapes, "proj": self._rng.randrange(1, 2**31),
                                     "seed": seed, "flush": opts.flush_l2}, 30.0, ev, cancel_fd, "calibration")
            w = (_perf() - t0) * 1e3
            if "error" in reply:  # nothing of the candidate's has run yet: the evaluator's own failure
                err = reply["error"] if isinstance(reply["error"], dict) else {}
                raise _Verdict(ev.result(Status.CRASHED, f"calibration failed: {err.get('message', '?')}"))
            if i >= skip:
                samples.append(checked_number(reply, "ms", 0.0, 1e7))
                walls.append(w)
        return samples, walls

    def _time_reference(self, spec: TaskSpec, ref: Reference, opts: EvalOptions, param_seed: int,
                        cancel_fd: int | None) -> _RefTiming:
        """The reference (and torch.compile of it), timed in their own fresh processes by the
        same protocol as candidates; once per task and settings."""
        key = (spec.task_id(), param_seed, opts.reps, opts.cpu_reps, opts.flush_l2, opts.compile_baseline,
               opts.time_budget_s, opts.warmup_ms, (spec.harness or spec.path).stat().st_mtime_ns)
        if key in self._ref_timing:
            return self._ref_timing[key]
        ev = _Eval(CompileReport(ok=True), [], [])
        _, out = self._reference_outputs(ref, self._seeds(opts, 1, 0)[0], param_seed)
        out_bytes = sum(aligned(o.numel() * o.element_size()) for o in out if isinstance(o, torch.Tensor))
        del out
        timed: dict[str, _Timed] = {}
        note = ""
        roles = ("reference", "compiled") if opts.compile_baseline and self.is_gpu else ("reference",)
        for role in roles:
            link = self._take(out_bytes + (1 << 20), profiler=False)
            try:
                self._ask(link, None, READY_LIMIT_S, ev, cancel_fd, "start")
                reply = self._ask(link, {"op": "load", "task": spec.to_dict(), "role": role, "param_seed": param_seed},
                                  opts.load_timeout_s, ev, cancel_fd, f"loading the {role}")
                self._raise_on_error(reply, ev, link, role=role)
                timed[role] = self._time(link, ref, opts, param_seed, None, ev, cancel_fd, role=role)
            except _Verdict as v:
                if role == "reference":
                    raise _Verdict(EvalResult(Status.TASK_ERROR, f"the reference could not be timed: {v.result.message}",
                                              output=v.result.output)) from None
                note = f"torch.compile baseline unavailable: {v.result.message}"
            finally:
                link.close()
                try:
                    if self.zygote is not None:
                        self.zygote.prepare_next(self._profiler_next and role == roles[-1])  # a baseline next: no profiler
                except (SandboxError, OSError):  # the next take starts a new zygote
                    self.close()
        r = timed["reference"]
        compiled = timed.get("compiled")
        rt = _RefTiming(r.timing, r.samples, r.walls, compiled=compiled.timing if compiled else None, note=note)
        self._ref_timing[key] = rt
        return rt

    def _floor(self, ref: Reference, spec: TaskSpec, opts: EvalOptions, param_seed: int) -> Floor | None:
        if self.ceilings is None:
            return None
        key = (spec.task_id(), param_seed)
        if key not in self._floors:
            try:
                inputs, outs = self._reference_outputs(ref, self._seeds(opts, 1, 7000)[0], param_seed)
                self._floors[key] = task_floor(self.ceilings, ref.reference_fn(param_seed), clone_inputs(inputs), outs)
            except Exception:  # noqa: BLE001 - a floor is a bonus, never a failure
                self._floors[key] = None
        return self._floors[key]


REP_STEPS = ("draw", "flush", "call", "digest")


def rep_steps(reply: dict[str, Any]) -> dict[str, float]:
    """The step times a timed request's reply claims (``Timing.steps_ms``): known keys with
    finite, non-negative values under an hour; anything else is left out (a claim, not a check)."""
    raw = reply.get("steps")
    if not isinstance(raw, dict):
        return {}
    out = {}
    for k in REP_STEPS:
        v = raw.get(k)
        if finite_number(v) and 0.0 <= float(v) < 3.6e6:
            out[k] = float(v)
    return out


def _cuda_kernels(source: str) -> list[str]:
    """The kernels of ``source`` only the profiler can see (CUDA's; Triton's counter sees the rest)."""
    tri = set(triton_kernel_names(source))
    return [k for k in custom_kernel_names(source) if k not in tri]


def _unstored(ref_out: list[Any], outs: list[Any]) -> str:
    """Why an output that did not fit the shared buffer cannot be right ('' when all fit)."""
    for i, c in enumerate(outs):
        if isinstance(c, torch.Tensor) and c.is_meta:
            r = ref_out[i] if i < len(ref_out) else None
            if isinstance(r, torch.Tensor) and tuple(r.shape) != tuple(c.shape):
                return f"output {i}: shape {tuple(c.shape)}, expected {tuple(r.shape)}"
            if isinstance(r, torch.Tensor) and r.dtype != c.dtype:
                return f"output {i}: dtype {str(c.dtype)[6:]}, expected {str(r.dtype)[6:]}"
            return f"output {i}: {tuple(c.shape)} {str(c.dtype)[6:]} is more than the reference returns"
    return ""


def _strings(v: Any) -> list[str]:
    return [clean_text(x, 300) for x in v if isinstance(x, str)][:500] if isinstance(v, list) else []


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 40 else None


def _diagnostics(raw: Any) -> list[Diagnostic]:
    out = []
    for d in raw if isinstance(raw, list) else []:
        if not isinstance(d, dict):
            continue
        line, col = _int(d.get("line")), _int(d.get("column"))
        sev = d.get("severity") if d.get("severity") in ("error", "warning", "note") else "error"
        out.append(Diagnostic(message=clean_text(d.get("message"), 2000), line=line, column=col, severity=sev,
                              file=clean_text(d.get("file"), 300) if isinstance(d.get("file"), str) else None))
    return out[:20]

