"""The judge's side of one evaluation's talk with one candidate process.

``Conversation.ask`` sends one request and returns the checked reply, within
the request's own limit and the whole evaluation's deadline (the user's
``--timeout``: a hard cap). Every way a candidate process can misbehave
becomes a ``Verdict`` here, never an exception in the judge: no answer in
time (killed, ``timeout``), a dead process (``crashed``), a broken or
malformed message (``cheat: channel``, whatever part of the reply it was in),
an error it reports (``compile_error``, ``runtime_error``). ``EvalState`` is
what the evaluation has gathered so far, so every verdict carries it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

import torch

from stark_lsp.evaluate.judge import replies as R
from stark_lsp.evaluate.judge import trace
from stark_lsp.evaluate.judge.link import CandidateLink, StartFailed
from stark_lsp.evaluate.result import (Cheat, CompileReport, Correctness, EvalResult, KernelResources, Status,
                                       TaskIO)
from stark_lsp.evaluate.wire.channel import ChannelError, Deadline, Interrupted, PeerClosed, check_output_headers
from stark_lsp.output_names import output_name
from stark_lsp.safe_text import first_line

_perf = time.perf_counter
_PIN_FROM = 4 << 20  # output bytes from which pinning the judge's mapping pays (a few ms once per process)
T = TypeVar("T")


# what a check of a reply (``replies.py``, ``check_output_headers``) may raise on a malformed one: its own
# ``ChannelError``, or a type it did not foresee reaching an operation (a list as a dict key raised TypeError out of
# the judge, "evaluator error" and its traceback, until the review of session 31): the candidate broke the protocol
MALFORMED = (ChannelError, TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError)


def malformed(e: BaseException) -> str:
    return str(e) if isinstance(e, ChannelError) else f"a malformed reply: {type(e).__name__}"


class Cancelled(Exception):
    """The caller stopped the evaluation (``cancel()``, Ctrl-C, a wall-time limit)."""


class Verdict(Exception):
    """The evaluation ends here with this result."""

    def __init__(self, result: EvalResult, capped: bool = False):
        self.result = result
        self.capped = capped  # the evaluation's own time limit ended it (not a call's: a hang)


@dataclass
class EvalState:
    """What one evaluation has gathered so far (for the verdict and its failure paths)."""

    compile: CompileReport
    resources: list[KernelResources]
    flags: list[str]
    correctness: Correctness | None = None
    io: TaskIO | None = None
    cheats: list[Cheat] = field(default_factory=list)
    phases: dict[str, float] = field(default_factory=dict)
    degenerate: str = ""
    memory: dict[str, list[float]] = field(default_factory=dict)  # each phase's GPU memory peak, GiB (trace)
    on_mark: Any = None  # called with each phase's name as it ends (judge/process.py: a progress line)
    _since: float = field(default_factory=lambda: _perf())

    def mark(self, phase: str) -> None:
        """The time since the last mark goes to ``phase`` (seconds, the judge's clock)."""
        now = _perf()
        self.phases[phase] = round(self.phases.get(phase, 0.0) + now - self._since, 4)
        self._since = now
        if self.on_mark is not None:
            self.on_mark(phase)
        if trace.enabled() and torch.cuda.is_initialized():  # the judge's own GPU memory in each phase: its peak
            self.memory[phase] = [round(torch.cuda.max_memory_allocated() / 2**30, 3),
                                  round(torch.cuda.max_memory_reserved() / 2**30, 3)]
            torch.cuda.reset_peak_memory_stats()  # the next phase's peak is its own

    def result(self, status: Status, message: str, **kw: Any) -> EvalResult:
        if self.memory:  # the judge's GPU memory by phase, each phase's own peak: [allocated, reserved] GiB
            trace.write({"judge_memory_gib": self.memory, "status": status.value, "pid": os.getpid()})
        return EvalResult(status, message, compile=self.compile, correctness=self.correctness, resources=self.resources,
                          flags=self.flags, io=self.io, phases=dict(self.phases), degenerate=self.degenerate, **kw)

    def cheat(self, kind: str, message: str, output: str = "", message_detail: str = "") -> Verdict:
        """The verdict for a broken rule (``kind``), with what the record of it keeps."""
        self.cheats.append(Cheat(kind, f"{message} ({message_detail})" if message_detail else message))
        return Verdict(self.result(Status.CHEAT, message, cheats=self.cheats, output=output))


class Conversation:
    def __init__(self, link: CandidateLink, state: EvalState, *, deadline: float, timeout_s: float,
                 cancel_fd: int | None, on_kill: Callable[[], None], how_it_ended: Callable[[CandidateLink], str],
                 device: torch.device, role: str, paused: Callable[[], float] | None = None):
        self.link = link
        self.state = state
        self.deadline = deadline  # time.monotonic() by which the whole evaluation must be done, but for pauses
        self._paused = paused  # seconds the judge waited at the GPU's gate so far: not the evaluation's time
        self.timeout_s = timeout_s
        self.cancel_fd = cancel_fd
        self._on_kill = on_kill
        self._how_it_ended = how_it_ended
        self.device = device
        self.role = role  # "candidate", "reference" or "compiled": whose errors these are
        self.chain = "host"  # how batches chain their calls: "host" (wire/chain.py) or "device" (wire/device_chain.py)
        self.outputs_n = 1  # the reference's outputs: the device chain's digest table has 4 columns for each

    def output(self) -> str:
        return self.link.output_tail()

    def kill(self) -> None:
        self.link.close()
        self._on_kill()

    def left_s(self) -> float:
        return self.deadline + (self._paused() if self._paused is not None else 0.0) - time.monotonic()

    def ask(self, msg: dict[str, Any] | None, limit_s: float, phase: str, parse: Callable[[dict[str, Any]], T] | None = None,
            *, launched_limit: float | None = None, progress_limit: float | None = None,
            on_compile: Callable[[str], float] | None = None) -> Any:
        """One request; the reply checked by ``parse`` (``replies.py``), after any error it reports
        became a verdict. Any misbehaviour, in the reply or around it, ends the evaluation."""
        left = self.left_s()
        capped = left < limit_s
        limit = max(0.05, min(limit_s, left))
        try:
            if msg is None:
                self.link.wait_ready(limit, self.cancel_fd)
                return {}
            reply = self.link.request(msg, limit, launched_limit_s=launched_limit, progress_limit_s=progress_limit,
                                      cancel_fd=self.cancel_fd, on_compile=on_compile)
        except Interrupted:
            self.kill()
            raise Cancelled() from None
        except Deadline:
            self.kill()
            why = (f"the evaluation's time limit ({self.timeout_s:g} s, --timeout) passed" if capped
                   else f"no answer within its time limit ({self.link.last_limit_s:.1f} s)")
            raise Verdict(self.state.result(Status.TIMEOUT, f"{phase}: {why}: killed", output=self.output()),
                          capped=capped) from None
        except StartFailed as e:
            self.kill()
            raise Verdict(self.state.result(Status.RUNTIME_ERROR, f"{phase}: {e} (before any candidate code ran in "
                                            f"it: not the candidate's doing)", output=self.output())) from None
        except PeerClosed:
            how = self._how_it_ended(self.link)
            self.kill()
            raise Verdict(self.state.result(Status.CRASHED, f"{phase}: the candidate process died{how}",
                                            output=self.output())) from None
        except ChannelError as e:
            self.kill()
            raise self.state.cheat("channel", f"{phase}: the candidate process broke the protocol ({e})",
                                   self.output()) from None
        self.raise_on_error(reply)
        if parse is None:
            return reply
        try:
            return parse(reply)
        except MALFORMED as e:
            self.kill()
            raise self.state.cheat("channel", f"{phase}: the candidate process broke the protocol ({malformed(e)})",
                                   self.output()) from None

    def raise_on_error(self, reply: dict[str, Any]) -> None:
        err = R.error_of(reply)
        if err is None:
            return
        status = {"compile_error": Status.COMPILE_ERROR, "task_error": Status.TASK_ERROR}.get(err.status,
                                                                                            Status.RUNTIME_ERROR)
        if self.role == "candidate" and status is Status.TASK_ERROR:
            status = Status.RUNTIME_ERROR  # the judge loaded the task: failing it there is the candidate's doing
        st = self.state
        if status is Status.COMPILE_ERROR:
            st.compile.ok = False
            st.compile.diagnostics = st.compile.diagnostics + err.diagnostics
            st.compile.log = (st.compile.log + "\n" + err.log).strip()
            raise Verdict(st.result(status, first_line(err.message), output=self.output()))
        raise Verdict(st.result(status, err.message, diagnostics=err.diagnostics, output=self.output()))

    def read_outputs(self, headers: Any) -> list[Any]:
        """The outputs a reply describes, copied out of the shared buffer (headers checked first)."""
        try:
            checked = check_output_headers(headers, self.link.capacity)
        except MALFORMED as e:
            self.kill()
            raise self.state.cheat("channel", f"the candidate process sent invalid outputs ({malformed(e)})",
                                   self.output()) from None
        outs: list[Any] = []
        gpu = self.device.type == "cuda"
        if gpu and any(h["kind"] == "tensor" and h["stored"] and h["nbytes"] >= _PIN_FROM for h in checked):
            self.link.pin_buffer()
        for i, h in enumerate(checked):
            if h["kind"] == "other":
                raise Verdict(self.state.result(Status.INCORRECT, f"{output_name(i)} is a {h['type']}, not a tensor or a "
                                                                  f"number", output=self.output()))
            if h["kind"] == "scalar":
                outs.append(h["value"])
            elif not h["stored"]:  # did not fit a buffer sized for the reference's outputs
                outs.append(torch.empty(h["shape"], dtype=getattr(torch, h["dtype"]), device="meta"))
            else:
                dtype = getattr(torch, h["dtype"])
                t = torch.empty(h["nbytes"], dtype=torch.uint8, device=self.device)
                if h["nbytes"]:  # one copy, from the shared buffer to the device: the snapshot the judge keeps
                    view = torch.frombuffer(self.link.buffer, dtype=torch.uint8, count=h["nbytes"], offset=h["offset"])
                    try:
                        t.copy_(view)
                    finally:
                        del view  # the buffer is unmapped when the link closes: no view may outlive it
                outs.append(t.view(dtype).reshape(h["shape"]))
        return outs
