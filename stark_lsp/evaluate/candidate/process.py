"""The candidate process: one fresh process per candidate, forked by the zygote.

It is the only place candidate code runs, and it decides nothing. It loads
the candidate (or, for the judge's own baselines, the reference), then
answers the judge's requests one at a time on its private channel
(``wire/channel.py``):

    task       load the task's harness alone (before any candidate code)
    calib      a batch whose calls do nothing (before the candidate loads):
               the judge's measure of this process's own cost per batch
    load       the candidate's source (sent by the judge; it is written into
               this process's private folder and imported from there) or
               its CUDA library (its bytes in the shared buffer); or the
               reference / torch.compile of it
    run        a batch of k calls in a row: call i draws its inputs from a
               seed chained to call i-1's output (``wire/chain.py``), calls,
               and commits to its output with a digest (``wire/digest.py``),
               its dtypes and shapes; the outputs and inputs are kept until
               the next batch. Trials, warm-up and timing are all this one
               request: nothing in it says which calls the judge will check
    fetch      write the outputs of call j of the last batch into the shared
               buffer, for the judge to compare element by element
    launches   which kernels ran (Triton launch counter; the profiler on a GPU)
    resources  registers / shared memory / spills of its own Triton kernels
    compiled_code  (the torch.compile baseline only) what Inductor wrote for the
               model (``compiled_capture.py``): a proposal the built-in team
               may start from, judged later like any candidate

Everything it sends is a claim: the judge checks every digest against the
reference's on the same inputs, compares fetched outputs in full, times
every batch on its own clock, and computes every verdict (``judge/``).
"""

from __future__ import annotations

import collections
import gc
import numbers
import os
import socket
import sys
import threading
import time
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import torch

from stark_lsp.evaluate.candidate.compile_stretch import CompileStretch
from stark_lsp.evaluate.candidate.compiled_capture import CompiledCapture
from stark_lsp.evaluate.candidate.errors import call_failure, error_reply, load_diagnostics
from stark_lsp.evaluate.candidate.extension_builds import say_builds
from stark_lsp.evaluate.candidate.guards import LaunchCounter, poison_cached_memory, profiled_kernel_names, same_tensors
from stark_lsp.evaluate.candidate.load import CandidateLoadError, load_candidate
from stark_lsp.evaluate.candidate.own_outputs import owned
from stark_lsp.evaluate.harness import HarnessError, as_outputs, load_reference
from stark_lsp.evaluate.sandbox.triton_launchers import log_signatures
from stark_lsp.evaluate.wire import device_chain as DC
from stark_lsp.evaluate.wire import output_hash as OH
from stark_lsp.evaluate.wire.chain import next_seed
from stark_lsp.evaluate.wire.channel import Channel, PeerClosed, aligned, map_buffer
from stark_lsp.evaluate.wire.digest import digest
from stark_lsp.evaluate.wire.pinned import pin
from stark_lsp.safe_text import first_line
from stark_lsp.tasks.spec import TaskSpec

_KEEP_CPU = 1 << 30  # inputs kept alive so that new ones take new storage (bytes)
_KEEP_GPU = 8 << 30
_synchronize = torch.cuda.synchronize


def describe(values: list[Any]) -> list[dict[str, Any]]:
    out = []
    for v in values:
        if isinstance(v, torch.Tensor):
            out.append({"shape": list(v.shape), "dtype": str(v.dtype).replace("torch.", "")})
        else:
            out.append({"value": repr(v)[:200]})
    return out


def output_meta(outputs: list[Any]) -> list[list[Any]]:
    """What a call returned, as the judge checks it on every call: ``[dtype, shape]`` per tensor,
    ``["scalar"]`` per number, ``["other", type name]`` for anything else."""
    meta: list[list[Any]] = []
    for o in outputs:
        if isinstance(o, torch.Tensor):
            meta.append([str(o.dtype).replace("torch.", ""), list(o.shape)])
        elif isinstance(o, numbers.Real):
            meta.append(["scalar"])
        else:
            meta.append(["other", type(o).__name__[:60]])
    return meta


class CandidateProcess:
    def __init__(self, chan: Channel, buffer_fd: int, device: str, warm_profiler: bool = False,
                 workdir: str | None = None):
        self.chan = chan
        self.buf = map_buffer(buffer_fd)
        self.capacity = len(self.buf)
        self.workdir = Path(workdir or os.getcwd())
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        self.is_gpu = self.device.type == "cuda"
        if not self.is_gpu:
            # one thread on the CPU: a pool of threads woken after each idle gap (the judge checks
            # every batch between two) made the same call take 0.1 ms or 6 ms; the reference's process
            # runs the same way, so the figures compare
            torch.set_num_threads(1)
        # what this start spent, by step (trusted code, before any task or candidate: for the trace only)
        self.start_s: dict[str, float] = {}
        if self.is_gpu:
            t = time.perf_counter()
            torch.cuda.init()
            torch.ones(1, device=self.device).add_(1)  # the context, now, not in the first trial
            t = self._step("cuda context", t)
            if warm_profiler:  # its one-time start (about a second), now, not in the launch check
                profiled_kernel_names(lambda: torch.ones(1, device=self.device).add_(1), [])
                t = self._step("profiler", t)
            pin(self.buf)  # outputs copied straight from the GPU (its pages are made now, not in a trial)
            t = self._step("buffer pinned", t)
            self._warm_protocol()
            self._step("protocol's kernels", t)
        self._compile_thread = 0  # the thread whose Triton compiles are said to the judge (``_compiles_said``)
        self.launches = LaunchCounter()
        self.launches.install()  # before any candidate code is imported
        self.launcher_signatures: list[list[str]] = []  # Triton's launcher stubs made here (a claim)
        if self.is_gpu:
            log_signatures(self.launcher_signatures)
        self.ref = None
        self.role = ""  # what was loaded: "candidate", "reference" or "compiled" (torch.compile of the reference)
        self.fn: Callable[..., Any] | None = None
        self.capture: CompiledCapture | None = None
        self.cand_file: Path | None = None
        self.source = ""
        self.calls = 0
        self.kept: list[tuple[int, list[Any], list[Any]]] = []  # the last batch: (input seed, inputs, outputs)
        self.handed: collections.deque[tuple[list[Any], int]] = collections.deque()  # inputs kept alive
        self.handed_bytes = 0
        self.keep_bytes = _KEEP_CPU if not self.is_gpu else min(
            _KEEP_GPU, torch.cuda.mem_get_info(self.device)[0] // 4)
        self.cal_out: list[Any] | None = None
        self.prepared: list[tuple[int, list[Any]]] = []  # the next device-chain batch's inputs
        self.kept_dig: tuple[torch.Tensor, int] | None = None  # the last real device-chain batch's table and nonce

    def _step(self, name: str, since: float) -> float:
        now = time.perf_counter()
        self.start_s[name] = round(now - since, 4)
        return now

    def _warm_protocol(self) -> None:
        """One call's own steps, once, on data of ours, before any task or candidate: the first
        use of each of their GPU kernels (random draws, the events, the digest) loads it, which
        would otherwise land in the calibration's first batches."""
        g = torch.Generator(device=self.device).manual_seed(1)
        x = torch.randn(1 << 16, device=self.device) + torch.rand(1 << 16, generator=g, device=self.device)
        y = x * 2.0
        self._sync()
        digest([y, x.half(), x.to(torch.bfloat16)], 1)
        OH.commit([[y]], OH.scheme_for(self.device))

    def draw(self, seed: int) -> list[Any]:
        """The inputs of ``seed``, in storage the candidate has never seen: every set handed
        out stays alive (within ``keep_bytes``), so no later set can take its addresses and
        a cache keyed on storage only ever misses."""
        assert self.ref is not None
        inputs = self.ref.inputs(seed)
        size = sum(t.numel() * t.element_size() for t in inputs if isinstance(t, torch.Tensor))
        self.handed.append((inputs, size))
        self.handed_bytes += size
        while self.handed_bytes > self.keep_bytes and len(self.handed) > 1:
            self.handed_bytes -= self.handed.popleft()[1]
        return inputs

    # ------------------------------------------------------------------
    def serve(self) -> None:
        self.chan.send({"ready": True, "pid": os.getpid(), "start_s": self.start_s})
        while True:
            try:
                msg = self.chan.recv()
            except PeerClosed:
                return
            op = msg.get("op")
            if op == "exit":
                return
            handler = getattr(self, f"op_{op}", None) if isinstance(op, str) else None
            try:
                reply = handler(msg) if handler else error_reply("runtime_error", f"unknown request {op!r}")
            except Exception as e:  # noqa: BLE001 - every failure is an answer
                reply = self._failure(e, first=self.calls == 0)
            self.chan.send(reply)

    def _failure(self, e: BaseException, first: bool) -> dict[str, Any]:
        if isinstance(e, HarnessError):
            return error_reply("task_error", f"task error: {e}")
        reply = call_failure(e, self.cand_file, self.source, first)
        if self.fn is None:
            reply["error"]["log"] = traceback.format_exc()[-4000:]
        return reply

    def _sync(self) -> None:
        if self.is_gpu:
            _synchronize()  # the whole device: side streams included

    # ------------------------------------------------------------------
    def op_task(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The task's harness alone (trusted code), so the calibration can draw its inputs."""
        self.ref = load_reference(TaskSpec.from_dict(msg["task"]), self.device)
        return {"task": True}

    def op_load(self, msg: dict[str, Any]) -> dict[str, Any]:
        spec = TaskSpec.from_dict(msg["task"])
        if self.ref is None or self.ref.spec.to_dict() != spec.to_dict():
            self.ref = load_reference(spec, self.device)
        role, seed = msg.get("role", "candidate"), int(msg["param_seed"])
        if role == "candidate" and self.fn is not None:
            self._drop_reference()
        self.role = role if isinstance(role, str) else ""
        if role == "candidate":
            self.cand_file, library = self._write_candidate(msg)
            self.source = str(msg.get("source", ""))
            if msg.get("builds") is True:  # a source that names load_inline: its CUDA build said as a compile
                say_builds(self.launches)
            try:
                with self._compiles_said(msg.get("compile_gate") is True):  # a Triton kernel warmed up as it loads
                    self.fn = load_candidate(self.ref, self.cand_file, library, seed)
            except CandidateLoadError as e:
                cause = e.__cause__ or e
                diags = load_diagnostics(cause, self.cand_file, self.source)
                return error_reply("compile_error", first_line(str(e)), diags, log=str(e))
        elif role in ("reference", "compiled"):
            fn = self.ref.reference_fn(seed)  # the model built (on the GPU): before any compile is said
            self.fn = fn
            if role == "compiled":  # torch.compile's own imports (seconds of the CPU's): said as a compile
                with self._compiles_said(msg.get("compile_gate") is True, whole=True):
                    if isinstance(fn, torch.nn.Module):  # Inductor's code kept (compiled_capture.py)
                        self.capture = CompiledCapture(fn, on_compiled=self._compiled)
                        self.fn = self.capture.first
                    else:
                        self.fn = torch.compile(fn)
        else:
            return error_reply("runtime_error", f"unknown role {role!r}")
        return {"loaded": True}

    def _drop_reference(self) -> None:
        """Before a candidate loads where the reference was timed first (on the CPU the judge times eager in
        the candidate's own process, before any candidate code exists in it: ``Judge._reference_in_turn``):
        nothing of the reference's run stays for the candidate: its model, its last batch's outputs, its
        launches, its calls (the candidate's first call is the process's first, as everywhere else)."""
        self.fn = None
        self.capture = None
        self.kept, self.kept_dig = [], None
        if self.ref is not None:
            self.ref.forget_models()
        self.launches.reset()
        self.calls = 0  # (no gc.collect(): a tenth of a second in this process, and the model goes by its count)

    def _compiled(self, fn: Callable[..., Any]) -> None:
        self.fn = fn  # after its first call: torch.compile's callable alone on the timed path

    def op_compiled_code(self, msg: dict[str, Any]) -> dict[str, Any]:
        """What Inductor wrote for the reference (role ``compiled``, after its first call)."""
        if self.capture is None:
            return {"compiled_code": {"error": "the reference is not a model compiled in this process"}}
        return {"compiled_code": self.capture.export()}

    def _write_candidate(self, msg: dict[str, Any]) -> tuple[Path, str | None]:
        """The candidate's files, as the judge sent them, in this process's own folder: the
        source from the message, a CUDA library from the shared buffer. No other candidate's
        files are visible here (the evaluator's cache is hidden from the sandbox)."""
        folder = self.workdir / "candidate"
        folder.mkdir(parents=True, exist_ok=True)
        name = os.path.basename(str(msg.get("name") or "candidate.py")) or "candidate.py"
        path = folder / name
        path.write_text(str(msg.get("source", "")))
        n = msg.get("library_bytes")
        if not isinstance(n, int) or n <= 0:
            return path, None
        lib = folder / "lib.so"
        with open(lib, "wb") as f:
            f.write(self.buf[:n])
        return path, str(lib)

    def _call(self, inputs: list[Any]) -> list[Any]:
        assert self.fn is not None
        with torch.no_grad():
            out = self.fn(*inputs)
        self.calls += 1
        try:
            outs = as_outputs(out)
        except HarnessError as e:  # what the call returned (a list that holds itself): the candidate's, not the task's
            raise ValueError(str(e)) from None
        detached = [o.detach() if isinstance(o, torch.Tensor) else o for o in outs]
        del out, outs
        return owned(detached)  # a buffer the candidate writes again next call: copied now (``own_outputs.py``)

    def _batch(self, msg: dict[str, Any], call: Callable[[list[Any]], list[Any]], calibration: bool = False
               ) -> dict[str, Any]:
        """k calls in a row, each on inputs chained to the output before it (``wire/chain.py``):
        the judge's clock around this request times the k calls. Per call the reply carries the
        digest and the dtypes and shapes of the outputs (every call's are checked); no time (the
        judge's clock is the only one)."""
        calls = msg.get("calls")
        if not isinstance(calls, list) or not calls:
            return error_reply("runtime_error", "a batch needs its calls")
        gc_was = gc.isenabled()
        gc.disable()  # no collector pause inside a batch (the judge's clock runs): it collects between them
        try:
            return self._calls(msg, calls, call, calibration)
        finally:
            if gc_was:
                gc.enable()

    def _calls(self, msg: dict[str, Any], calls: list[Any], call: Callable[[list[Any]], list[Any]],
               calibration: bool) -> dict[str, Any]:
        scheme = msg.get("hash")
        if scheme not in OH.SCHEMES:
            return error_reply("runtime_error", "a batch needs the scheme its outputs are hashed with")
        if msg.get("chain") == "device":
            return self._device_calls(msg, calls, call, calibration, scheme)
        kept: list[tuple[int, list[Any], list[Any]]] = []
        if not calibration:  # the calls the judge may fetch are the last real batch's, never an empty one's
            self.kept, self.kept_dig = kept, None
        prev: Any = int(msg.get("nonce", 0))
        replies = []
        for c in calls:
            seed = next_seed(int(c[0]), prev)
            inputs = self.draw(seed)
            out = self._one_call(call, inputs, first=self.calls == 0 and not calibration,
                                 gate=msg.get("compile_gate") is True)
            self._sync()  # every stream's work, not only the current stream's, before the digest reads it
            dg = digest(out, int(c[1]))  # the next call's inputs wait for it (the chain)
            kept.append((seed, inputs, out))
            replies.append({"digest": dg, "meta": output_meta(out)})
            prev = dg
        for r, h in zip(replies, OH.commit([out for _, _, out in kept], scheme)):
            r["hash"] = h
        return {"calls": replies}

    def _one_call(self, call: Callable[[list[Any]], list[Any]], inputs: list[Any], first: bool,
                  gate: bool = False) -> list[Any]:
        """One call of a batch. The first of the process: its memory poisoned before (an output that is never
        written reads as NaN), each Triton launch said as it happens (a long compile shows how far it got),
        each Triton compile too when the judge asked (``gate``: ``_compile_gate``; the torch.compile
        baseline's compile, all but the GPU's work in it: ``compile_stretch.py``), and its return said
        before any synchronization (a kernel that then hangs is killed within the call's limit)."""
        if not first:
            return call(inputs)
        if self.is_gpu:
            poison_cached_memory(self.device)
        self._compile_thread = threading.get_ident()
        self.launches.on_launch = self._progress
        try:
            with self._compiles_said(gate, whole=self.role == "compiled", frames=True):
                out = call(inputs)
            self.chan.send({"launched": True})
        finally:
            self.launches.on_launch = None
        return out

    @contextmanager
    def _compiles_said(self, gate: bool, whole: bool = False, frames: bool = False) -> Iterator[None]:
        """While a request the judge asked it of runs (``compile_gate``: a candidate's load and first
        call, the torch.compile baseline's load and first call), each Triton compile of this thread is said
        to the judge (``_compile_gate``); with ``whole`` (torch.compile's: its imports, its compile), torch's
        compile is said instead (``compile_stretch.py``): the whole block (the load: imports) or, with
        ``frames`` (the first call), each compile of a frame by Dynamo, but for the GPU's work Inductor runs
        in it."""
        if not gate:
            yield
            return
        self._compile_thread = threading.get_ident()
        if whole:  # Triton's compiles in it are inside torch's: never said on their own
            stretch = CompileStretch(self._compile_gate)
            with stretch.in_frame_compiles() if frames else stretch.as_compile():
                yield
            return
        self.launches.on_compile = self._compile_gate
        try:
            yield
        finally:
            self.launches.on_compile = None

    def _progress(self, name: str) -> None:
        """A launch of the first call went through: said by the thread that made the request only (the
        channel is one conversation; another thread's words could interleave with its own)."""
        if threading.get_ident() == self._compile_thread:
            self.chan.send({"progress": name})

    def _compile_gate(self, step: str, name: str) -> bool:
        """A Triton compile: the judge is told before it (it lets go of the GPU's gate, as compiling is
        the CPU's work; the GPU's queue drained first, so none of this process's work runs on beside
        another judge's timing) and after it, and the kernel runs only once the judge says the gate is
        held again (shared). Only the thread that made the request says its compiles (the channel is
        one conversation): another's compile under the gate held shared, as any other work. True when
        it was said."""
        if threading.get_ident() != self._compile_thread:
            return False
        if self.is_gpu and torch.cuda.is_current_stream_capturing():
            return False  # a CUDA graph being captured: nothing runs until it is replayed, and no sync is allowed
        if step == "compiling" and self.is_gpu:
            self._sync()
        self.chan.send({step: name})
        if step == "compiled":
            msg = self.chan.recv()
            if msg.get("go") is not True:
                raise RuntimeError(f"the judge answered a compile with {sorted(msg)!r}, not go")
        return True

    def op_prepare(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The inputs of the next batch on the device chain (``wire/device_chain.py``), drawn before the
        judge's clock starts: one set per seed, in new storage, completed on the device."""
        seeds = msg.get("seeds")
        if self.ref is None or not isinstance(seeds, list) or not seeds:
            return error_reply("runtime_error", "a batch's inputs need the task and their seeds")
        self.prepared = [(int(s), [x.contiguous() if isinstance(x, torch.Tensor) else x for x in self.draw(int(s))])
                         for s in seeds]
        self._sync()
        return {"prepared": len(self.prepared)}

    def _device_calls(self, msg: dict[str, Any], calls: list[Any], call: Callable[[list[Any]], list[Any]],
                      calibration: bool, scheme: str) -> dict[str, Any]:
        """k calls on the device chain: call i's inputs (drawn by ``prepare``) perturbed on the device from
        call i-1's digest there, each output's digest added up on the device; one synchronization."""
        prepared, self.prepared = self.prepared, []
        if len(prepared) != len(calls):
            return error_reply("runtime_error", f"{len(calls)} calls asked, {len(prepared)} prepared")
        outputs = max(1, int(msg.get("outputs_n", 1)))
        dig = torch.zeros((len(calls), 4 * outputs), dtype=torch.float64, device=self.device)
        nonce = int(msg.get("nonce", 0))
        kept: list[tuple[int, list[Any], list[Any]]] = []
        if not calibration:
            self.kept = kept
        self.kept_dig = (dig, nonce) if not calibration else self.kept_dig
        metas = []
        for i, (c, (seed, inputs)) in enumerate(zip(calls, prepared)):
            DC.perturb_inputs(inputs, dig, i - 1, nonce)
            out = self._one_call(call, inputs, first=self.calls == 0 and not calibration,
                                 gate=msg.get("compile_gate") is True)
            DC.digest_into(out, dig, i, int(c[1]))
            kept.append((seed, inputs, out))
            metas.append(output_meta(out))
        self._sync()  # every stream's work: the table is complete, the outputs final
        hashes = OH.commit([out for _, _, out in kept], scheme)
        table = DC.rows(dig, outputs)
        return {"calls": [{"digest": d, "meta": m, "hash": h} for d, m, h in zip(table, metas, hashes)]}

    def op_calib(self, msg: dict[str, Any]) -> dict[str, Any]:
        """A batch whose calls do nothing, on outputs shaped like the reference's: the judge's measure of
        this process's own cost per batch (drawing the inputs, the digest, the synchronizations, the round
        trip); before any candidate code is loaded, and then beside each timed batch (where the judge
        takes it only as an upper bound: a candidate that slowed it would lower its own figure)."""
        if self.ref is None or (self.cal_out is None and (self.calls or self.fn is not None)):
            return error_reply("runtime_error", "calibration needs the task loaded and no candidate yet")
        if self.cal_out is None:
            g = torch.Generator(device=self.device).manual_seed(int(msg.get("nonce", 1)))
            self.cal_out = [torch.rand(o["shape"], generator=g, device=self.device).to(getattr(torch, o["dtype"]))
                            for o in msg["outputs"]]
        out = self.cal_out
        return self._batch(msg, lambda inputs: out, calibration=True)

    def op_run(self, msg: dict[str, Any]) -> dict[str, Any]:
        if self.ref is None or self.fn is None:
            return error_reply("runtime_error", "nothing is loaded")
        return self._batch(msg, self._call)

    def op_fetch(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The outputs of one call of the last batch, into the shared buffer; and whether the call
        changed its inputs in place (against a fresh draw of the same seed), but for those the judge says
        the reference itself changes (``may_change``)."""
        j = msg.get("index")
        if not isinstance(j, int) or not 0 <= j < len(self.kept):
            return error_reply("runtime_error", f"no call {j!r} in the last batch")
        assert self.ref is not None
        seed, inputs, out = self.kept[j]
        self._sync()
        fresh = self.ref.inputs(seed)
        if self.kept_dig is not None:  # the device chain: as the call saw them, perturbed
            fresh = [x.contiguous() if isinstance(x, torch.Tensor) else x for x in fresh]
            DC.perturb_inputs(fresh, self.kept_dig[0], j - 1, self.kept_dig[1])
        skip = msg.get("may_change")
        skip = {i for i in skip if isinstance(i, int)} if isinstance(skip, list) else set()
        return {"outputs": self._store(out), "inputs_changed": same_tensors(fresh, inputs, skip),
                "inputs": describe(inputs)}

    def _store(self, outputs: list[Any]) -> list[dict[str, Any]]:
        headers, offset = [], 0
        for o in outputs:
            if not isinstance(o, torch.Tensor):
                if not isinstance(o, numbers.Real):  # None, a string, a list...: the judge says incorrect
                    headers.append({"kind": "other", "type": type(o).__name__[:60]})
                    continue
                v = o if isinstance(o, (bool, int)) else float(o)  # numpy scalars too
                if isinstance(v, float) and v != v:
                    v = "nan"
                elif isinstance(v, float) and v in (float("inf"), float("-inf")):
                    v = "inf" if v > 0 else "-inf"
                headers.append({"kind": "scalar", "value": v if v is not None else repr(o)[:100]})
                continue
            t = o.contiguous()
            nbytes = t.numel() * t.element_size()
            h = {"kind": "tensor", "dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape),
                 "nbytes": nbytes, "stored": False}
            if offset + nbytes <= self.capacity:
                if nbytes:
                    dst = torch.frombuffer(self.buf, dtype=torch.uint8, count=nbytes, offset=offset)
                    dst.copy_(t.reshape(-1).view(torch.uint8))
                h.update(stored=True, offset=offset)
                offset = aligned(offset + nbytes)
            headers.append(h)
        return headers

    def op_launches(self, msg: dict[str, Any]) -> dict[str, Any]:
        assert self.ref is not None
        profiled: list[str] = []
        if self.is_gpu and msg.get("profile", True):
            profiled = profiled_kernel_names(self.fn, self.draw(int(msg["seed"])))
        own = str(self.cand_file) if self.cand_file else None
        created = sorted({n for n, f in self.launches.created if own and f == own})
        return {"triton": sorted(self.launches.launches), "reached": sorted(self.launches.reached), "created": created,
                "profiled": profiled[:200], "launchers": self.launcher_signatures[:64]}

    def op_resources(self, msg: dict[str, Any]) -> dict[str, Any]:
        wanted = set(msg.get("kernels") or [])
        return {"resources": triton_resources(wanted) if self.is_gpu else []}


def triton_resources(wanted: set[str]) -> list[dict[str, Any]]:
    """Registers, shared memory and spills of this process's Triton kernels named in ``wanted``."""
    out: list[dict[str, Any]] = []
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
                    name = getattr(md, "name", None) or getattr(getattr(obj, "fn", None), "__name__", "?")
                    if name in wanted:
                        out.append({"kernel": name, "registers": getattr(k, "n_regs", None),
                                    "spill_stores": getattr(k, "n_spills", None), "shared_bytes": getattr(md, "shared", None)})
    return out[-16:]


def child_main(sock_fd: int, buffer_fd: int, output_fd: int, device: str, warm_profiler: bool = False) -> int:
    """Entry in a freshly forked child of the zygote: never returns to the zygote's code."""
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    if output_fd > 2:
        os.close(output_fd)
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False, errors="replace")
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False, errors="replace")
    chan = Channel(socket.socket(fileno=sock_fd))
    try:
        proc = CandidateProcess(chan, buffer_fd, device, warm_profiler=warm_profiler)
    except Exception as e:  # noqa: BLE001 - the judge hears why, then the process ends
        try:
            chan.send({"ready": False, "error": f"{type(e).__name__}: {first_line(str(e))}"})
        except PeerClosed:
            pass
        return 1
    proc.serve()
    return 0

