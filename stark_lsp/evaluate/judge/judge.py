"""The judge: one evaluation, decided in a process where no candidate code ever runs.

The judge holds the task's reference, draws the seeds, computes the
reference's outputs, checks, times, and writes the verdict. The candidate
runs in its own fresh process inside the sandbox (``candidate/process.py``,
forked by the zygote), and everything it says is checked. The phases, each
in its own module:

1. **The task** (``task_sanity.py``): once per task, the reference is run on
   several inputs; a task whose outputs do not depend on its inputs is
   *degenerate* (any constant passes) and every result on it says so.
2. **Baselines** (``timed_calls.py``): the reference, and torch.compile of it,
   each in its own fresh process (no candidate code), by the same protocol
   as candidates; once per task and settings. On the CPU eager is timed in
   turn with each candidate instead, in the candidate's process before the
   candidate loads (``reference_in_turn``).
3. **Calibration** (``timed_calls.calibrate``): before the candidate is
   loaded, batches of calls that do nothing measure what the protocol costs
   in this very process.
4. **Load**: the candidate's source (and CUDA library) sent to the process,
   which writes them into its private folder and imports them.
5. **Trials** (``batches.py``): one batch of calls, each on inputs chained to
   the output before it; every output compared element by element.
6. **Launch check** (``launch_rule.py``): the kernels the source launches ran.
7. **Timing** (``timed_calls.py``, ``timing.py``): batches on the judge's
   clock, every call's digest checked and some calls, chosen after they ran,
   compared in full. The runtime is the judge's figure, or the process's own
   where the judge's clock bounds it; the speedup is computed here.

The GPU's gate (``gpu_lock.py``) is held exclusive for the calibrations and
the timed batches, shared for every other phase that runs on the GPU, and
not at all while only the CPU works (a Triton compile, ``torch.compile``'s
compile, each said by the process): other judges' builds, loads and checks
run beside this one's, never beside its timing. Time spent waiting at the
gate is not the candidate's.

Every request has a limit scaled from the reference's time, and the whole
evaluation a hard cap (``run_timeout_s``, the user's ``--timeout``); a candidate
that misses one is killed (its whole sandbox is cleared) and reported.
"""

from __future__ import annotations

import numbers
import os
import secrets
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import torch

from stark_lsp.evaluate.gpu_limits import gpu_limits
from stark_lsp.evaluate.harness import (HarnessError, Reference, clone_inputs, load_reference, shapes_only, storages,
                                        task_code_failure)
from stark_lsp.evaluate.judge import baseline_cache as BC
from stark_lsp.evaluate.judge import replies as R
from stark_lsp.evaluate.judge import build_cache, task_sanity, trace
from stark_lsp.evaluate.judge import timing as TM
from stark_lsp.evaluate.judge.batches import Checker, Pending, Seeds, output_bytes, run_batch, transfer_s
from stark_lsp.evaluate.judge.calibrations import Calibrations, key as calibration_key
from stark_lsp.evaluate.judge.conversation import Cancelled, Conversation, EvalState, Verdict
from stark_lsp.evaluate.judge.gpu_lock import EXCLUSIVE, SHARED, GpuGate
from stark_lsp.evaluate.judge.launch_rule import launched_kernel_names, missing_launches, source_flags, uses_cuda_graph
from stark_lsp.evaluate.judge.link import CandidateLink, SandboxedZygote, SandboxError
from stark_lsp.evaluate.judge.roofline import Ceilings, task_floor
from stark_lsp.evaluate.judge.timed_calls import (PENDING_BYTES, ReadBacks, Timed, calibrate, memory_calls,
                                                 output_shapes, time_calls)
from stark_lsp.evaluate.out_of_memory import ran_out_of_memory
from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.evaluate.result import (REFERENCE_IN_TURN, CompileReport, Correctness, EvalResult, Floor,
                                       KernelResources, Runtime, Status, TaskIO, Trial, ValueInfo, build_dataclass)
from stark_lsp.evaluate.sandbox.policy import Layout, Sandbox, llm_refusal, make_layout, probe, root_refusal, unchanged
from stark_lsp.evaluate.sandbox.triton_launchers import valid_signatures
from stark_lsp.evaluate.wire import device_chain as DC
from stark_lsp.evaluate.wire.channel import aligned
from stark_lsp.output_names import output_name
from stark_lsp.safe_text import first_line
from stark_lsp.speedups import ratio_text, speedup_text
from stark_lsp.tasks.kernel_names import defined_kernel_names, triton_kernel_names
from stark_lsp.tasks.spec import TaskSpec

READY_LIMIT_S = 120.0
# STARK_EVAL_CANDIDATE_GATE=none: a candidate's load and first call hold no gate, as before session 25 (for
# benchmarks/gate_ab.py, which measures what holding it costs and saves; docs/EVALUATOR.md)
_CANDIDATE_GATE = os.environ.get("STARK_EVAL_CANDIDATE_GATE", "shared")
PROGRESS_SLACK_S = 15.0  # a first call's time after a kernel launched (module loads, the next compile)
CALIBRATION_LIMIT_S = 30.0  # one call that does nothing
RELEASE_BYTES = 256 << 20  # a call's inputs and outputs of this much or more: the judge's cache is emptied after its draw


def _compiled_on_cpu(opts: EvalOptions) -> bool:
    """torch.compile's baseline timed on the CPU (``STARK_EVAL_COMPILED_BASELINE_CPU=1``: tests): the task's
    baselines are timed as on a GPU, once per task (eager's figure beside it, though not divided by)."""
    return opts.compile_baseline and os.environ.get("STARK_EVAL_COMPILED_BASELINE_CPU") == "1"


def reference_in_turn(is_gpu: bool) -> bool:
    """Whether an evaluation times the reference in turn with its candidate: on the CPU, in the candidate's own
    process, after its calibration and before any candidate code is loaded (``Judge._reference_in_turn``), and
    divides by that figure. On the CPU a figure moves with whatever else the machine's few cores run (other
    judges, the search, the editor): eager timed once per task, in another process minutes before, divided every
    later candidate's figure by the load of that one moment (with 3 busy processes on 2 cores the KernelBench GELU
    sample's reference read 4.28 ms as the baseline and 0.57-2.76 ms as a candidate: 1.6-7.5x itself; issue 24 saw
    19 ms and 0.09 ms in one run). A GPU keeps its once-per-task baselines (timing holds the GPU alone); so does
    the CPU with ``STARK_EVAL_BASELINE_CACHE_CPU=1`` (the baseline cache's tests, the GPU's rule on the CPU) or
    ``STARK_EVAL_CPU_REFERENCE=once`` (to compare the two)."""
    if is_gpu:
        return False
    return (os.environ.get("STARK_EVAL_BASELINE_CACHE_CPU") != "1"
            and os.environ.get("STARK_EVAL_CPU_REFERENCE", "in turn") != "once")


class SandboxUnavailable(RuntimeError):
    """The policy requires a sandbox and none can be made here."""


def _value_info(v: Any) -> ValueInfo:
    if isinstance(v, torch.Tensor):
        return ValueInfo(shape=list(v.shape), dtype=str(v.dtype).replace("torch.", ""))
    return ValueInfo(value=repr(v)[:200])


COMPILED_CODE_UNREAD = "torch.compile's code could not be read"


class _Baselines:
    """The reference's timing (and torch.compile's) for one task and its settings."""

    def __init__(self, reference: Timed | None, compiled: Timed | None, note: str, measured_at: str = "",
                 compiled_code: dict[str, Any] | None = None):
        # eager's: None where it is timed in turn with each candidate instead (``reference_in_turn``: the CPU)
        self.reference, self.compiled, self.note = reference, compiled, note
        self.measured_at = measured_at  # set when they came from the baseline cache (``baseline_cache.py``)
        # what Inductor wrote for a KernelBench model (``replies.compiled_code``), for the built-in team
        self.compiled_code = compiled_code


class Judge:
    def __init__(self, device: str = "auto", env: dict[str, str] | None = None):
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        self.is_gpu = self.device.type == "cuda"
        self.env = dict(env or {})
        self.session_seed = secrets.randbits(31)  # model parameters: unknown to any candidate source
        self._refs: dict[tuple[Any, ...], Reference] = {}
        self._sanity: dict[tuple[Any, ...], task_sanity.Sanity] = {}
        self._baselines: dict[tuple[Any, ...], _Baselines] = {}
        self.calibrations = Calibrations()  # the candidates' calibrations, kept per task (``calibrations.py``)
        self._floors: dict[tuple[Any, ...], Floor | None] = {}
        self.ceilings = Ceilings(self.device) if self.is_gpu else None
        self.zygote: SandboxedZygote | None = None
        self._zygote_shows: list[str] = []  # the folders the zygote was made to show (``_zygote_for``)
        self._sandbox: Sandbox | None = None
        self._sandbox_probed = False
        self._probe_lock = threading.Lock()
        self._profiler_next = False  # whether the candidate processes started ahead start the profiler
        self._device_chain_ok: bool | None = None  # whether the device chain's kernels work here (checked once)
        self._launchers: list[tuple[str, ...]] = []  # Triton launcher signatures for the zygote to build
        self._zygote_args: tuple[list[str], str] = ([], "auto")  # what the last zygote was made for
        self._hide: list[str] = []  # folders the sandbox covers beyond the usual (the evaluator's cache)
        self.gate = GpuGate("")  # the GPU's gate (process.py gives the machine-wide one): none here
        self.on_phase: Callable[[str], None] | None = None  # each phase's name as it ends (process.py: a line)
        self._starting: tuple[threading.Thread, dict[str, BaseException]] | None = None  # a zygote on its way

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
            "limits": gpu_limits(p),  # per SM and per block, for the agents' hardware card
            "sandbox": sb.describe() if sb else "none",
        }

    def sandbox(self) -> Sandbox | None:
        with self._probe_lock:  # probed once, though a zygote may be starting in a thread meanwhile
            if not self._sandbox_probed:
                sb = probe()
                self._sandbox = sb if sb.available else None
                self._sandbox_reason = sb.reason
                self._sandbox_probed = True
        return self._sandbox

    def close(self) -> None:
        self._await_start()
        self._close_zygote()

    def _close_zygote(self) -> None:
        if self.zygote is not None:
            self.zygote.close()
            self.zygote = None

    def _arch(self) -> int:
        """The GPU's architecture as Triton names it (90 for sm_90); 0 on the CPU."""
        if not self.is_gpu:
            return 0
        major, minor = torch.cuda.get_device_capability(self.device)
        return major * 10 + minor

    def _zygote_for(self, paths: list[str], policy: str, hide: list[str] | None = None) -> SandboxedZygote:
        """A zygote whose sandbox shows ``paths`` and no other task's folders (restarted for another task's)."""
        sandbox = None if policy == "off" else self.sandbox()
        refused = llm_refusal(sandbox, self._sandbox_reason) if policy == "required" else None
        if refused:
            raise SandboxUnavailable(refused)
        hide = list(hide if hide is not None else self._hide)
        self._hide = hide
        z = self.zygote
        sandboxed = sandbox is not None
        # (a dot-file made in a shown folder since the zygote started is covered by a new one: ``unchanged``)
        # made for these folders alone: a zygote kept the folders of every task it showed before, and a candidate
        # of a task in projB read projA's files once the same judge had evaluated a task there (session 30's
        # review); another project's task now costs a zygote's start instead
        shows = sorted(set(paths))
        reuse = (z is not None and z.alive() and (z.sandbox is not None) == sandboxed and z.covers(paths)
                 and unchanged(z.layout) and (not sandboxed or self._zygote_shows == shows))
        if reuse:
            layout = z.layout
        else:
            layout = make_layout(expose=paths, hide=hide) if sandboxed else Layout(hidden=())
        root = root_refusal(sandbox, layout) if policy == "required" else None
        if root:
            raise SandboxUnavailable(root)
        self._zygote_args = (paths, policy)
        if reuse:
            return z
        self._close_zygote()  # (never ``close``: this may run in ``start_zygote_soon``'s thread)
        self._zygote_shows = shows
        arch = self._arch()
        self.zygote = SandboxedZygote(sandbox, layout, self.device.type, self.env, arch=arch,
                                      builds=build_cache.open_for(arch) if sandbox is not None else None)
        return self.zygote

    def start_zygote_soon(self, paths: list[str], policy: str, hide: list[str]) -> None:
        """Start the zygote a job needs in a thread, where the one there does not do: its imports and
        builds (seconds of the CPU's, 8 s on a new machine) go on while the judge loads and checks
        the task. ``_await_start`` waits for it; the job's own ``_zygote_for`` then finds it ready."""
        z = self.zygote
        # as ``_zygote_for`` reuses one: a sandboxed zygote made for another task's folders is restarted there, and
        # one that shows them all the same (a task in a folder below the last one's, or outside the hidden folders)
        # left that restart to the job's own thread, its seconds no longer beside the task's load
        if self._starting is not None or (z is not None and z.alive() and z.covers(paths)
                                          and (z.sandbox is None or self._zygote_shows == sorted(set(paths)))):
            return
        box: dict[str, BaseException] = {}

        def start() -> None:
            try:
                self._zygote_for(paths, policy, hide)
            except BaseException as e:  # noqa: BLE001 - raised again in the job's own thread
                box["error"] = e

        t = threading.Thread(target=start, name="zygote-start", daemon=True)
        self._starting = (t, box)
        t.start()

    def _await_start(self) -> BaseException | None:
        """Wait for a zygote started by ``start_zygote_soon``; what stopped it, if anything did."""
        if self._starting is None:
            return None
        t, box = self._starting
        t.join()
        self._starting = None
        return box.get("error")

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
        self._await_start()
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

    def _let_go(self, inputs: list[Any], outputs: list[Any]) -> None:
        """After the judge's own draw of a task's inputs and outputs (``RELEASE_BYTES`` or more, their forms
        kept): the GPU's cached memory given back before a process draws its own, not held beside it."""
        if self.is_gpu and output_bytes(inputs) + output_bytes(outputs) >= RELEASE_BYTES:
            torch.cuda.empty_cache()

    def release_memory(self) -> None:
        """Give the GPU's cached memory back (between evaluations, and before one that ran out of
        memory is tried again): judges that share a GPU must not sit on what another needs."""
        import gc

        gc.collect()
        if self.is_gpu:
            torch.cuda.empty_cache()

    def _kill_all(self) -> None:
        if self.zygote is not None:
            try:
                self.zygote.kill_all()
            except (SandboxError, OSError):
                self.close()

    def _how_it_ended(self, link: CandidateLink) -> str:
        return self.zygote.how_it_ended(link) if self.zygote is not None else ""

    def _talk(self, link: CandidateLink, state: EvalState, role: str, deadline: float, timeout_s: float,
              cancel_fd: int | None) -> Conversation:
        return Conversation(link, state, deadline=deadline, timeout_s=timeout_s, cancel_fd=cancel_fd,
                            on_kill=self._kill_all, how_it_ended=self._how_it_ended, device=self.device, role=role,
                            paused=lambda: self.gate.waited_s)

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
            ref.fresh_inputs = not (storages(a) & storages(b))  # no tensor kept between draws (a module's global)
            del a, b
            self._refs[key] = ref
        return self._refs[key]

    def _outputs(self, ref: Reference, inputs: list[Any], param_seed: int, owned: bool = False) -> list[Any]:
        """The reference's outputs on ``inputs``; a reference that raises is the task's fault
        (``HarnessError``: a task error naming the user's line), never the candidate's. ``owned``: the
        caller drew ``inputs`` for this call alone and drops them after, so where the task draws new
        tensors every time they are not copied first (a reference may change its inputs in place)."""
        from stark_lsp.evaluate.harness import as_outputs

        fn = None
        try:
            fn = ref.reference_fn(param_seed)
            uncopied = owned and ref.fresh_inputs
            with torch.no_grad():
                out = fn(*(inputs if uncopied else clone_inputs(inputs)))
            if self.is_gpu:
                torch.cuda.synchronize(self.device)
        except HarnessError:
            raise
        except Exception as e:  # noqa: BLE001 - the user's code: said in one line, with its place
            raise HarnessError(reference_failure(e, ref, fn=fn, inputs=len(inputs))) from None
        outs = [o.detach() if isinstance(o, torch.Tensor) else o for o in as_outputs(out)]
        if len(outs) > R.MAX_OUTPUTS:  # a reply describes at most that many: every process would break the protocol
            raise HarnessError(f"the reference returns {len(outs)} outputs; the evaluator compares at most "
                               f"{R.MAX_OUTPUTS} (return fewer: one tensor stacked or concatenated from them)")
        odd = next((i for i, o in enumerate(outs) if not isinstance(o, (torch.Tensor, numbers.Real))), None)
        if odd is not None:  # a NumPy array, None, text: no candidate could match it (judged an "other" output)
            raise HarnessError(f"the reference's {output_name(odd)} is a {type(outs[odd]).__name__[:60]}, not a "
                               f"tensor or a number")
        if uncopied and storages(outs) & storages(inputs):  # an input returned as an output (``x.add_(y)``): its
            # own copy, so that no later draw into the same storage (a task's buffer refilled) can change it
            shared = storages(inputs)
            outs = [o.clone() if isinstance(o, torch.Tensor) and storages([o]) & shared else o for o in outs]
        return outs

    def _choose_chain(self, conv: Conversation, inputs: list[Any], outputs: list[Any], ref: Reference) -> None:
        """The device chain (``wire/device_chain.py``) where the task allows it and its kernels work in
        this judge (checked once); else the host chain. The same for a task's every process. A task whose
        get_inputs() hands out the same tensors again gets the host chain: the device chain perturbs a
        call's inputs in place, so such a task's tensors would drift from draw to draw."""
        forced = os.environ.get("STARK_EVAL_DEVICE_CHAIN") == "1"  # also on the CPU (Triton's interpreter): tests
        conv.outputs_n = max(1, len(outputs))
        usable = ref.fresh_inputs and DC.usable(inputs, outputs, self.device, any_device=forced)
        conv.chain = "device" if self._device_chain_works() and usable else "host"

    def _device_chain_works(self) -> bool:
        """Whether the device chain's kernels run in this judge (checked once)."""
        forced = os.environ.get("STARK_EVAL_DEVICE_CHAIN") == "1"
        if self._device_chain_ok is None:
            self._device_chain_ok = False
            if (self.is_gpu or forced) and os.environ.get("STARK_EVAL_HOST_CHAIN") != "1":
                try:
                    x = torch.ones(8, device=self.device)
                    dig = torch.zeros((1, 4), dtype=torch.float64, device=self.device)
                    DC.perturb_(x, None, -1, 5, 0)
                    DC.digest_into([x], dig, 0, 7)
                    if self.is_gpu:
                        torch.cuda.synchronize(self.device)
                    self._device_chain_ok = True
                except Exception as e:  # noqa: BLE001 - the host chain then: slower, as safe
                    sys.stderr.write(f"judge: device chain unavailable ({type(e).__name__}: {first_line(str(e))}); "
                                     "batches chain on the host\n")
        return bool(self._device_chain_ok)

    def _task_sanity(self, spec: TaskSpec, ref: Reference, opts: EvalOptions, param_seed: int) -> task_sanity.Sanity:
        atol = opts.atol if opts.atol is not None else ref.atol
        rtol = opts.rtol if opts.rtol is not None else ref.rtol
        key = (spec.task_id(), param_seed, atol, rtol, (spec.harness or spec.path).stat().st_mtime_ns)
        if key not in self._sanity:
            seeds = Seeds(opts.seed).draw(task_sanity.SEEDS, 9000)
            self._sanity[key] = task_sanity.check(lambda x: self._outputs(ref, x, param_seed, owned=True),
                                                  ref.inputs, seeds, atol, rtol)
            self.release_memory()  # the check's draws are not kept from the processes that come next
        return self._sanity[key]

    # ------------------------------------------------------------------
    def evaluate(self, job: dict[str, Any], cancel_fd: int | None = None) -> EvalResult:
        spec = TaskSpec.from_dict(job["task"])
        opts = EvalOptions.from_dict(job.get("options"))
        cand_file = Path(job["candidate_file"])
        source = cand_file.read_text()  # read for its kernel names, and sent to the process: the judge never runs it
        compile_report = build_dataclass(CompileReport, job["compile"]) if job.get("compile") else CompileReport(ok=True)
        state = EvalState(compile_report, [KernelResources(**r) for r in job.get("resources", [])], source_flags(source))
        state.on_mark = self.on_phase
        self._profiler_next = bool(self.is_gpu and opts.profile_launches and _profiled(source))
        timeout_s = opts.run_timeout_s + (opts.compile_timeout_s if job.get("load_inline") else 0.0)
        if opts.cap_s is not None:  # --timeout: the whole evaluation, what the build before the judge spent included
            spent = job.get("spent_s")
            timeout_s = max(0.5, opts.cap_s - (float(spent) if isinstance(spent, (int, float)) else 0.0))
        deadline = time.monotonic() + timeout_s - self.gate.waited_s  # waits at the gate are not the candidate's
        if opts.cap_s is not None:
            timeout_s = opts.cap_s  # from here on only the messages' figure: the user's own number
        paths = [str(p) for p in job.get("expose", [])]
        policy, hide = job.get("sandbox", "auto"), [str(p) for p in job.get("hide", [])]
        before = self.zygote
        self.start_zygote_soon(paths, policy, hide)  # meanwhile the task is loaded and checked here
        try:
            ref = self._reference(spec)
            sanity = self._task_sanity(spec, ref, opts, self._param_seed(opts))
        except HarnessError as e:
            return state.result(Status.TASK_ERROR, f"task error: {e}")
        state.mark("the task's check")
        state.degenerate = sanity.degenerate
        state.flags.extend(sanity.flags)
        param_seed = self._param_seed(opts)
        try:
            failed = self._await_start()
            if failed is not None:
                raise failed
            z = self._zygote_for(paths, policy, hide)
            state.mark("sandbox")  # what the zygote's start took beyond the task's check
            if z is not before:  # a new zygote: its Triton compiles apart from "sandbox" (imports, the sandbox)
                for key, name in (("warm_s", "sandbox: Triton's warm-up"), ("chain_s", "sandbox: the chain's kernels")):
                    spent = z.info.get(key)
                    if isinstance(spent, (int, float)) and 0 < spent <= state.phases.get("sandbox", 0.0):
                        state.phases[name] = round(float(spent), 4)
                        state.phases["sandbox"] = round(state.phases["sandbox"] - spent, 4)
            if reference_in_turn(self.is_gpu) and not _compiled_on_cpu(opts):
                base = _Baselines(None, None, "")  # eager: timed in turn with the candidate, in its process
            else:
                base = self._time_baselines(spec, ref, opts, param_seed, cancel_fd, deadline, timeout_s)
            state.mark("reference timing")
            return self._evaluate(spec, opts, ref, base, param_seed, source, job, state, cancel_fd, deadline,
                                  timeout_s, may_change=sanity.changes_inputs)
        except Verdict as v:
            return v.result
        except Cancelled:
            return state.result(Status.TIMEOUT, "stopped before it finished (the search was stopped)", stopped=True)
        except HarnessError as e:  # the reference, on the inputs of a call: the task's own code
            return state.result(Status.TASK_ERROR, f"task error: {e}")
        except torch.OutOfMemoryError as e:  # the judge's own work (the reference, the checks): the machine's state
            return state.result(Status.RUNTIME_ERROR, f"out of GPU memory in the judge: {first_line(str(e))}")
        finally:
            self._prepare_next()

    def _prepare_next(self) -> None:
        """Once the candidate's process is let go of: the launcher stubs it showed go to the zygote, and
        the zygote starts the next process (killing everything this one left first), in the background."""
        if self.zygote is not None and self.zygote.alive():
            try:
                if self._launchers:
                    self.zygote.add_launchers(self._launchers)
                    self._launchers = []
                self.zygote.prepare_next(self._profiler_next)
            except Exception:  # noqa: BLE001 - a zygote that misbehaves is replaced, never trusted
                self.close()

    def _compile_step(self, phase: str, step: str) -> float:
        """A candidate's load or first call, or the torch.compile baseline's (``phase``), says a compile is
        under way (``compiling``: the gate is let go of, compiling is the CPU's work) or ended (``compiled``:
        the gate is taken shared again before the kernel runs); the seconds waited for it."""
        before = self.gate.waited_s
        if step == "compiling":
            self.gate.switch(None, f"{phase}: compiling")
        else:
            self.gate.switch(SHARED, phase)
        return self.gate.waited_s - before

    def _compiles(self, phase: str) -> Callable[[str], float] | None:
        """What a request of ``phase`` does when the candidate says a compile (``link.Link.request``):
        nothing unless the gate is held shared around the process's code."""
        if not self.gate.active or self.gate.mode != SHARED:
            return None
        return lambda step: self._compile_step(phase, step)

    def _param_seed(self, opts: EvalOptions) -> int:
        return self.session_seed if opts.seed is None else opts.seed

    def _evaluate(self, spec: TaskSpec, opts: EvalOptions, ref: Reference, base: _Baselines, param_seed: int,
                  source: str, job: dict[str, Any], state: EvalState, cancel_fd: int | None, deadline: float,
                  timeout_s: float, may_change: tuple[int, ...] = ()) -> EvalResult:
        ref_ms = base.reference.figure.median_ms if base.reference is not None else None
        seeds = Seeds(opts.seed)
        drawn = ref.inputs(seeds.draw(1, 0)[0])
        inputs0 = shapes_only(drawn)  # their forms only, from here on (taken before a reference reshapes any)
        ref_out0 = shapes_only(self._outputs(ref, drawn, param_seed, owned=True))
        del drawn
        self._let_go(inputs0, ref_out0)
        out_bytes = sum(aligned(o.numel() * o.element_size()) for o in ref_out0 if isinstance(o, torch.Tensor))
        in_bytes = output_bytes(inputs0)
        keep = memory_calls(in_bytes, out_bytes, self.is_gpu)  # calls one batch may keep alive, at most
        state.io = TaskIO(inputs=[_value_info(v) for v in inputs0], outputs=[_value_info(v) for v in ref_out0])
        library = Path(job["library"]).read_bytes() if job.get("library") else b""
        state.mark("reference outputs")
        link = self._take(max(out_bytes, len(library)) + (1 << 20), self._profiler_next)
        conv = self._talk(link, state, "candidate", deadline, timeout_s, cancel_fd)
        self._choose_chain(conv, inputs0, ref_out0, ref)
        try:
            # the process's start (the CPU's, and CUDA's context) and the task's harness (trusted code) hold
            # nothing; the calibration holds the gate exclusive; from then on candidate code runs, and every
            # step of it that may use the GPU holds it shared (its load, its first call) except its Triton
            # compiles, the CPU's work, which the process says before and after (``_compile_step``): no
            # candidate code runs beside another judge's timing unless it lies about compiling
            with self.gate.hold(None, "process start"):
                t_ready = time.monotonic()
                conv.ask(None, READY_LIMIT_S, "start")
                if trace.enabled():  # how far ahead the process was asked for, how long it was still waited for,
                    # and what the zygote and the process said their start's steps took
                    trace.write({"candidate_start_s": {"asked ahead": round(t_ready - link.asked, 4),
                                                       "waited": round(time.monotonic() - t_ready, 4),
                                                       **link.start_s}})
                state.mark("process start")
                conv.ask({"op": "task", "task": spec.to_dict()}, opts.load_timeout_s, "loading the task")
                # the task's kept calibration where the reference is timed once (``calibrations.py``): one wait
                # for the gate's exclusive hold an evaluation, not two
                in_turn = reference_in_turn(self.is_gpu)
                ckey = calibration_key(spec.task_id(), (spec.harness or spec.path).stat().st_mtime_ns, keep,
                                       conv.chain, link.profiler)
                ov = None if in_turn else self.calibrations.reuse(ckey)
                if ov is not None and trace.enabled():
                    trace.write({"calibration": "kept", "reused": self.calibrations.reused, "kept": vars(ov)})
                if ov is None:
                    self.gate.switch(EXCLUSIVE, "candidate calibration")  # batches follow one another, as timed ones
                    ov = calibrate(conv, ref_out0, seeds, self.is_gpu, CALIBRATION_LIMIT_S, max_calls=keep)
                    if not in_turn:
                        self.calibrations.add(ckey, ov)
                state.mark("calibration")
                reference = base.reference
                if in_turn:  # the CPU: eager in this very process, before the candidate
                    reference = self._reference_in_turn(conv, spec, opts, ov, seeds, ref_out0, keep, param_seed,
                                                        in_bytes + out_bytes)
                    ref_ms = reference.figure.median_ms
                    state.mark("reference in turn")
                assert reference is not None  # timed once per task (``_time_baselines``) where not in turn
                # straight on, never a moment without the gate held; a load_inline candidate's CUDA build (the
                # CPU's work, tens of seconds) is said as a compile (``extension_builds.py``), as Triton's are
                held = None if _CANDIDATE_GATE == "none" else SHARED
                self.gate.switch(held, "load")
                self._load_candidate(conv, spec, job, source, library, param_seed, opts, self._compiles("load"))
                state.mark("load")
                call_limit = TM.batch_limit_s(1, ref_ms, ov, self.is_gpu, opts.load_timeout_s)

                # trials: the first call, then batches of the rest (as many calls as memory_calls allows); every
                # call compared element by element
                # the first call compiles Triton kernels (it says after each launch); a CUDA
                # candidate's library is loaded already: its first call gets no compile time
                first_limit = (min(opts.load_timeout_s, call_limit + PROGRESS_SLACK_S)
                               if spec.kind == "cuda" and not job.get("load_inline") else opts.load_timeout_s)
                n = max(1, opts.trials)
                trials: list[Trial] = []
                atol = opts.atol if opts.atol is not None else ref.atol
                rtol = opts.rtol if opts.rtol is not None else ref.rtol
                state.correctness = Correctness(passed=False, trials=trials, atol=atol, rtol=rtol)
                after = call_limit + transfer_s(ref_out0)  # once the first call returned, its reply
                self.gate.switch(held, "first call")
                ran = run_batch(conv, seeds, 1, first_limit, "the first call", launched_limit=after,
                                progress_limit=call_limit + PROGRESS_SLACK_S,
                                on_compile=self._compiles("first call"))
                state.mark("first call")
            checker = Checker(conv, ref, param_seed, atol, rtol, may_change)
            checker.check(ran, [0], trial=True, label="trial", trials=trials)
            done = 1
            try:
                while done < n:  # the other trials: batches of their own (as many calls as the memory allows),
                    k = min(n - done, keep)  # every call compared element by element
                    rest = TM.batch_limit_s(k, ref_ms, ov, self.is_gpu, opts.load_timeout_s) + (k + 1) * transfer_s(ref_out0)
                    ran = run_batch(conv, seeds, k, rest, "the trials")
                    checker.check(ran, list(range(k)), trial=True, label="trial", trials=trials, number_from=done + 1)
                    done += k
            except Verdict as v:  # the evaluation's limit passed in the trials: as many as asked did not fit
                if not v.capped:
                    raise
                raise Verdict(state.result(Status.TIMEOUT, trials_cut(done, n, conv.timeout_s), output=conv.output()),
                              capped=True) from None
            state.correctness.passed = True
            state.mark("trials")

            self._launch_check(conv, source, spec, opts, seeds, call_limit)
            state.mark("launch check")

            checks = Pending(checker, PENDING_BYTES[self.is_gpu])
            try:
                with self.gate.hold(EXCLUSIVE, "candidate timing"):
                    timed = time_calls(conv, seeds, ov, opts, is_gpu=self.is_gpu, ref_ms=ref_ms, keep_calls=keep,
                                       checks=checks, shapes=output_shapes(ref_out0),
                                       protocol_cap_ms=reference.protocol_ms,
                                       fixed_cap_ms=reference.fixed_ms,
                                       shared=lambda: self.gate.hold(SHARED, "timing's checks"))
            except Verdict:  # it hung or died while timed: a batch before that which was wrong is the verdict
                checks.flush()  # (what it reads back was read already: no request to the process)
                raise
            state.mark("timing")
            if not state.resources:
                state.resources = self._resources(conv, source)
            output = conv.output()
            state.mark("resources")
            # the last request to the process: it is let go of, and the next one started (the zygote kills
            # this one first), while the judge checks what it read back
            link.close()
            self._prepare_next()
            checks.flush()  # the timed batches' checks, the gate held shared (the outer hold): no figure before
            state.mark("timing's checks")
        finally:
            link.close()
        return self._verdict(state, opts, base, timed, ref, spec, param_seed, output, reference)

    def _reference_in_turn(self, conv: Conversation, spec: TaskSpec, opts: EvalOptions, ov: TM.Overhead,
                           seeds: Seeds, ref_out: list[Any], keep: int, param_seed: int, call_bytes: int) -> Timed:
        """The reference timed in the candidate's own process (``reference_in_turn``: the CPU), after its
        calibration and before any candidate code exists in it, as the candidate is then timed: its load, its
        first call, the warm-up, the candidate's number of timed batches, the same read-backs between them
        (``ReadBacks``), against the same calibration, each figure by the candidate's rule. Right after each
        timed batch an empty one (trusted: no candidate code yet): their least caps what both figures subtract
        for the protocol (the candidate's through ``protocol_ms``), so a calibration taken while the machine was
        busy cannot subtract more than the protocol then cost (without the cap the same code read 19x-1000x
        itself). The figure every ratio of this evaluation divides by, taken seconds from the candidate's in
        the same process: what else the machine runs slows both alike. The process drops the reference before
        the candidate loads (``CandidateProcess.op_load``); nothing the candidate does can reach a figure taken
        before it existed. A reference that fails here is the task's (as its baseline's would be)."""
        conv.role = "reference"
        try:
            conv.ask({"op": "load", "task": spec.to_dict(), "role": "reference", "param_seed": param_seed},
                     opts.load_timeout_s, "loading the reference")
            run_batch(conv, seeds, 1, opts.load_timeout_s, "the reference's first call")
            return time_calls(conv, seeds, ov, replace(opts, race_ms=None), is_gpu=self.is_gpu, ref_ms=None,
                              keep_calls=keep, checks=ReadBacks(conv), shapes=output_shapes(ref_out),
                              role="reference in turn", empty_after=True)
        except Verdict as v:
            status = Status.TIMEOUT if v.result.status is Status.TIMEOUT else Status.TASK_ERROR
            why = v.result.message
            if ran_out_of_memory(why):
                why += memory_note(call_bytes, None)
            raise Verdict(conv.state.result(status, f"the reference could not be timed: {why}",
                                            output=v.result.output)) from None
        finally:
            conv.role = "candidate"

    def _load_candidate(self, conv: Conversation, spec: TaskSpec, job: dict[str, Any], source: str, library: bytes,
                        param_seed: int, opts: EvalOptions, on_compile: Callable[[str], float] | None = None) -> None:
        """The candidate's files go to the process by value: its source in the request, a CUDA library's
        bytes in the shared buffer (the process writes both into its own folder). No path into the
        evaluator's cache reaches the sandbox, so no candidate can read another."""
        if library:
            conv.link.buffer[:len(library)] = library
        job_name = Path(job["candidate_file"]).name  # as the caller named it (commands/eval_cmd.py renames it back)
        load_limit = opts.load_timeout_s + (opts.compile_timeout_s if job.get("load_inline") else 0.0)
        t0 = time.perf_counter()
        conv.ask({"op": "load", "task": spec.to_dict(), "role": "candidate", "source": source,
                  "name": job_name, "library_bytes": len(library), "param_seed": param_seed,
                  **({"compile_gate": True} if on_compile is not None else {}),
                  **({"builds": True} if job.get("load_inline") else {})}, load_limit, "loading",
                 on_compile=on_compile)
        if spec.kind != "cuda":
            conv.state.compile.seconds += time.perf_counter() - t0

    def _verdict(self, state: EvalState, opts: EvalOptions, base: _Baselines, timed: Timed, ref: Reference,
                 spec: TaskSpec, param_seed: int, output: str, reference: Timed | None = None) -> EvalResult:
        """``reference``: eager's figure this evaluation divides by (timed in turn with the candidate on the
        CPU: ``reference_in_turn``); the task's baseline where None."""
        reference = reference or base.reference
        assert reference is not None
        fig, rfig = timed.figure, reference.figure
        cand_t, ref_t = TM.as_timing(fig, timed.chain), TM.as_timing(rfig, reference.chain)
        speedup = rfig.median_ms / fig.median_ms if fig.median_ms > 0 else float("inf")
        compiled = TM.as_timing(base.compiled.figure, base.compiled.chain) if base.compiled else None
        runtime = Runtime(
            device=self.hardware()["device"], is_gpu=self.is_gpu, candidate=cand_t, reference=ref_t,
            speedup=speedup, compiled_reference=compiled,
            speedup_vs_compiled=(compiled.median_ms / fig.median_ms) if compiled and fig.median_ms > 0 else None,
            note="" if self.is_gpu else "CPU timing (Triton interpreter / eager CPU): for checking, not a GPU figure",
        )
        runtime.floor = self._floor(ref, spec, opts, param_seed)
        notes = [n for n in (runtime.note, base.note) if n]
        if reference is not base.reference:
            notes.append(REFERENCE_IN_TURN)
        if base.measured_at and reference is base.reference:
            notes.append(f"{'eager and torch.compile' if base.compiled else 'eager'} timed {base.measured_at} "
                         f"(the baseline cache: STARK_EVAL_BASELINE_CACHE= times them afresh)")
        if timed.raced:
            notes.append(f"timed until clearly slower than the search's best ({opts.race_ms:.4g} ms): {fig.batches} "
                         f"batches, {fig.calls} calls")
        if timed.slow:
            notes.append(f"slower than {TM.SLOW_FACTOR:g}x the reference ({fig.median_ms:.4g} ms vs "
                         f"{rfig.median_ms:.4g} ms): timed over {fig.calls} calls only")
        runtime.note = "; ".join(notes)
        if fig.unconfirmed:
            state.flags.append(
                f"the judge's clock confirms this runtime only to +-{fig.bound_ms:.3g} ms at {fig.median_ms:.4g} "
                f"ms a call (its noise, and the share of its own protocol's cost it leaves in every figure): the "
                f"speedup could be off by as much")
        if speedup > opts.review_speedup:
            state.flags.append(f"speedup {speedup_text(speedup, 'eager')} is over {ratio_text(opts.review_speedup)}: "
                               "review before trusting it")
        if state.cheats:
            res = state.result(Status.CHEAT, state.cheats[0].message, runtime=runtime, cheats=state.cheats,
                               output=output)
        else:
            res = state.result(Status.OK, "", runtime=runtime, output=output)
        if opts.compiled_code and base.compiled_code is not None:  # asked for the root: the built-in team's seed
            res.compiled_code = base.compiled_code
        return res

    # ------------------------------------------------------------------
    def _launch_check(self, conv: Conversation, source: str, spec: TaskSpec, opts: EvalOptions, seeds: Seeds,
                      call_limit: float) -> None:
        custom = defined_kernel_names(source)
        if spec.kind == "cuda" and not self.is_gpu:
            return
        profile = bool(self.is_gpu and opts.profile_launches and _profiled(source))  # Triton's counter sees the rest
        reply = conv.ask({"op": "launches", "seed": seeds.draw(1, 3000)[0], "profile": profile}, call_limit + 30.0,
                         "the launch check")
        # a Triton kernel's launches are Triton's counter's to say (every launch of the process, a CUDA graph's
        # capture included); the profiler names every kernel of a call, PyTorch's own among them, so it speaks only
        # for kernels no counter sees (CUDA's): a never-launched Triton kernel named like PyTorch's elementwise
        # kernel passed beside a PyTorch fallback once a word of CUDA graphs sent its source to the profiler
        ran = (launched_kernel_names(R.strings(reply.get("triton")))
               | (launched_kernel_names(R.strings(reply.get("profiled"))) & set(_cuda_kernels(source))))
        if self.is_gpu:
            self._launchers = valid_signatures(reply.get("launchers"))
        reached = set(R.strings(reply.get("reached")))
        if not custom:  # kernels the source scan cannot see (``@jit`` imported under another name, ...)
            custom = R.strings(reply.get("created"))[:64]
            if not custom:
                return
        if (not self.is_gpu or not opts.profile_launches) and spec.kind == "cuda":
            return  # only Triton's counter: CUDA kernels cannot be seen without the profiler
        missing = missing_launches(source, custom, ran, reached)
        if missing:
            how = ("reached but never launched (a failed launch behind a fallback)" if set(missing) & reached
                   else "defined but never launched (dead code or a fallback to PyTorch)")
            raise conv.state.cheat("kernel_not_launched", f"kernel(s) {', '.join(missing)} {how}", conv.output(),
                                   message_detail=f"defined: {custom}; ran: {sorted(ran)[:10]}")

    def _resources(self, conv: Conversation, source: str) -> list[KernelResources]:
        names = defined_kernel_names(source)
        if not self.is_gpu or not names:
            return []
        reply = conv.ask({"op": "resources", "kernels": names}, 30.0, "resources")
        out = []
        raw = reply.get("resources")
        for r in raw[:64] if isinstance(raw, list) else []:
            if isinstance(r, dict) and isinstance(r.get("kernel"), str) and r.get("kernel") in names:
                out.append(KernelResources(kernel=str(r["kernel"]), registers=R.small_int(r.get("registers")),
                                           shared_bytes=R.small_int(r.get("shared_bytes")),
                                           spill_stores=R.small_int(r.get("spill_stores"))))
        return out

    # ------------------------------------------------------------------
    def _time_baselines(self, spec: TaskSpec, ref: Reference, opts: EvalOptions, param_seed: int,
                        cancel_fd: int | None, deadline: float, timeout_s: float) -> _Baselines:
        """The reference (and torch.compile of it), timed in their own fresh processes by the
        same protocol as candidates; once per task and the baselines' settings (``EvalOptions.for_baselines``:
        every ratio divides by them, so by default twice the candidates' budget, as the re-timing's)."""
        opts = opts.for_baselines()
        key = (spec.task_id(), param_seed, opts.reps, opts.cpu_reps, opts.compile_baseline, opts.time_budget_s,
               opts.warmup_ms, opts.noise_target, (spec.harness or spec.path).stat().st_mtime_ns)
        if key in self._baselines:
            return self._baselines[key]
        state = EvalState(CompileReport(ok=True), [], [])
        seeds = Seeds(opts.seed)
        drawn = ref.inputs(seeds.draw(1, 0)[0])
        inputs = shapes_only(drawn)  # their forms only, as drawn (a reference may reshape its inputs in place)
        out = shapes_only(self._outputs(ref, drawn, param_seed, owned=True))  # the processes draw their own
        del drawn
        self._let_go(inputs, out)
        out_bytes = sum(aligned(o.numel() * o.element_size()) for o in out if isinstance(o, torch.Tensor))
        keep = memory_calls(output_bytes(inputs), out_bytes, self.is_gpu)
        disk = self._baseline_parts(spec, opts, inputs, out)
        if disk is not None:
            got = BC.load(BC.key(disk))
            if got is not None:
                self._baselines[key] = _Baselines(*got[:4], compiled_code=got[4])
                return self._baselines[key]
        timed: dict[str, Timed] = {}
        note = ""
        compiled_code: dict[str, Any] | None = None
        # torch.compile's baseline on a GPU; on the CPU too with STARK_EVAL_COMPILED_BASELINE_CPU=1 (tests)
        on_cpu = os.environ.get("STARK_EVAL_COMPILED_BASELINE_CPU") == "1"
        roles = ("reference", "compiled") if opts.compile_baseline and (self.is_gpu or on_cpu) else ("reference",)
        for role in roles:
            link = self._take(out_bytes + (1 << 20), profiler=False)
            conv = self._talk(link, state, role, deadline, timeout_s, cancel_fd)
            self._choose_chain(conv, inputs, out, ref)
            try:
                conv.ask(None, READY_LIMIT_S, "start")
                conv.ask({"op": "task", "task": spec.to_dict()}, opts.load_timeout_s, f"loading the {role}")
                with self.gate.hold(EXCLUSIVE, f"{role} calibration"):
                    ov = calibrate(conv, out, seeds, self.is_gpu, CALIBRATION_LIMIT_S, max_calls=keep)  # batches follow one another
                # the load and the first call run on the GPU: shared. torch.compile's first call is its compile,
                # the CPU's work (trusted code: 5-40 s, other judges use the GPU meanwhile), but for the GPU's
                # work Inductor runs in it (each graph, each kernel's autotuning); its process says the compile
                # around that work (candidate/compile_stretch.py; its load's torch.compile(), seconds of
                # imports, too), under the baseline's own limits (``link.trust_compiles``): the gate is let go
                # of for the CPU's work alone
                said = role == "compiled"
                if said:
                    link.trust_compiles()
                with self.gate.hold(SHARED, f"{role} load and first call"):
                    on_load = self._compiles(f"{role} load") if said else None
                    conv.ask({"op": "load", "task": spec.to_dict(), "role": role, "param_seed": param_seed,
                              **({"compile_gate": True} if on_load is not None else {})},
                             opts.load_timeout_s, f"loading the {role}", on_compile=on_load)
                    # its first call may compile (torch.compile): the load limit, then the call's
                    first = run_batch(conv, seeds, 1, opts.load_timeout_s, f"the {role}'s first call",
                                      on_compile=self._compiles(f"{role} first call") if said else None)
                    del first
                with self.gate.hold(EXCLUSIVE, f"{role} timing"):
                    timed[role] = time_calls(conv, seeds, ov, opts,
                                             is_gpu=self.is_gpu, ref_ms=None, keep_calls=keep,
                                             checks=None, shapes=output_shapes(out), role=role)
                if role == "compiled" and spec.kind == "kernelbench":
                    compiled_code = self._compiled_code(conv)
            except Verdict as v:
                if role == "reference":
                    status = Status.TIMEOUT if v.result.status is Status.TIMEOUT else Status.TASK_ERROR
                    why = v.result.message
                    if ran_out_of_memory(why):
                        why += memory_note(output_bytes(inputs) + out_bytes, self.device if self.is_gpu else None)
                    raise Verdict(EvalResult(status, f"the reference could not be timed: {why}",
                                             output=v.result.output)) from None
                note = f"torch.compile baseline unavailable: {v.result.message}"
            finally:
                link.close()
                try:
                    if self.zygote is not None:
                        self.zygote.prepare_next(self._profiler_next and role == roles[-1])  # a baseline next: no profiler
                except (SandboxError, OSError):  # the next take starts a new zygote
                    self.close()
        b = _Baselines(timed["reference"], timed.get("compiled"), note, compiled_code=compiled_code)
        unread = bool(compiled_code and str(compiled_code.get("error", "")).startswith(COMPILED_CODE_UNREAD))
        if disk is not None and not note and not unread:  # a torch.compile that failed is tried again next session
            BC.store(BC.key(disk), b.reference, b.compiled, note, disk, compiled_code)
        if not ran_out_of_memory(note):  # out of memory beside other judges: tried again next evaluation
            self._baselines[key] = b
        return b

    def _compiled_code(self, conv: Conversation) -> dict[str, Any]:
        """What Inductor wrote for the model, from the torch.compile baseline's process once it is timed
        (``replies.compiled_code``); a process that cannot say costs the baseline nothing."""
        try:
            return conv.ask({"op": "compiled_code"}, 30.0, "reading torch.compile's code", R.compiled_code)
        except Verdict as v:
            return {"error": f"{COMPILED_CODE_UNREAD}: {v.result.message}"[:500]}  # not kept on disk: tried again

    def _baseline_parts(self, spec: TaskSpec, opts: EvalOptions, inputs: list[Any], out: list[Any]
                        ) -> dict[str, Any] | None:
        """The key of the task's baselines in the baseline cache (``baseline_cache.py``), or None when
        it is off (no folder; on the CPU, unless ``STARK_EVAL_BASELINE_CACHE_CPU=1``: tests)."""
        if BC.directory() is None or not (self.is_gpu or os.environ.get("STARK_EVAL_BASELINE_CACHE_CPU") == "1"):
            return None
        try:
            files = BC.file_digest([p for p in (spec.path, spec.harness) if p is not None])
            machine = self._machine()
        except Exception:  # noqa: BLE001 - a part of the key not known here: no cache, the baselines timed
            return None
        return {"format": BC.FORMAT, "code": BC.code_digest(), "files": files, "kind": spec.kind,
                "entry": getattr(spec, "entry", None),
                "inputs": [_value_info(v).__dict__ for v in inputs], "outputs": [_value_info(v).__dict__ for v in out],
                "options": [opts.reps, opts.cpu_reps, opts.compile_baseline, opts.time_budget_s, opts.warmup_ms,
                            opts.noise_target],
                "chain_env": [os.environ.get("STARK_EVAL_HOST_CHAIN", ""),
                              os.environ.get("STARK_EVAL_DEVICE_CHAIN", "")],
                "env": BC.environment(), "device_chain": self._device_chain_works(),
                "machine": machine}

    def _machine(self) -> dict[str, Any]:
        """``hardware()`` (the GPU, its SMs, memory and torch) less the sandbox, with the versions and
        the driver a baseline's figure also depends on."""
        m = {k: v for k, v in self.hardware().items() if k != "sandbox"}
        m["cuda"] = torch.version.cuda
        try:
            import triton

            m["triton"] = triton.__version__
        except ImportError:
            m["triton"] = None
        if self.is_gpu:
            m["uuid"] = str(getattr(torch.cuda.get_device_properties(self.device), "uuid", ""))
            m["driver"] = torch._C._cuda_getDriverVersion() if hasattr(torch._C, "_cuda_getDriverVersion") else None
        return m

    def _floor(self, ref: Reference, spec: TaskSpec, opts: EvalOptions, param_seed: int) -> Floor | None:
        if self.ceilings is None:
            return None
        key = (spec.task_id(), param_seed)
        if key not in self._floors:
            try:
                seed = Seeds(opts.seed).draw(1, 7000)[0]
                outs = self._outputs(ref, ref.inputs(seed), param_seed, owned=True)
                inputs = ref.inputs(seed) if ref.fresh_inputs else clone_inputs(ref.inputs(seed))  # drawn again
                self._floors[key] = task_floor(self.ceilings, ref.reference_fn(param_seed), inputs, outs)
            except Exception:  # noqa: BLE001 - a floor is a bonus, never a failure
                self._floors[key] = None
        return self._floors[key]


def memory_note(call_bytes: int, device: torch.device | None) -> str:
    """What a task's call needs beside what the GPU has, for a message that says it ran out of memory:
    " (a call's inputs and outputs: 8.6 GB; the GPU: 79.2 GB)"."""
    gb = lambda n: f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.0f} MB"  # noqa: E731
    text = f" (a call's inputs and outputs: {gb(call_bytes)}"
    if device is not None:
        try:
            text += f"; the GPU: {gb(torch.cuda.get_device_properties(device).total_memory)}"
        except Exception:  # noqa: BLE001 - a note, never a failure
            pass
    return text + ")"


def trials_cut(done: int, asked: int, limit_s: float) -> str:
    """The one line for trials the evaluation's time limit cut: what ran, and the two flags that fit it."""
    return (f"the trials: the evaluation's time limit ({limit_s:g} s) passed after {done} of the {asked} trials "
            f"asked for ({'it' if done == 1 else f'all {done}'} passed): ask fewer with --trials, or give more "
            f"time with --timeout; killed")


def reference_failure(e: BaseException, ref: Reference, fn: Any = None, inputs: int | None = None) -> str:
    """``the reference raised TypeError: ... (foo.harness.py, line 12: ...)``: ``harness.task_code_failure``,
    the one way every failure of the task's own code is said."""
    return task_code_failure("the reference", e, ref.spec, fn=fn, inputs=inputs)


def _profiled(source: str) -> bool:
    """Whether a candidate's launch check needs the profiler: CUDA kernels, or a CUDA graph's replay
    (Triton's counter sees only launches from Python)."""
    return bool(_cuda_kernels(source)) or uses_cuda_graph(source)


def _cuda_kernels(source: str) -> list[str]:
    """The kernels of ``source`` only the profiler can see (CUDA's; Triton's counter sees the rest)."""
    tri = set(triton_kernel_names(source))
    return [k for k in defined_kernel_names(source) if k not in tri]
