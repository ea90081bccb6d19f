"""The judge's handles on the sandbox: the zygote, and one candidate process at a time.

``SandboxedZygote`` starts the zygote (``zygote.py``) inside the sandbox
(``sandbox.py``) and asks it for candidate processes. For each one the judge
makes the three things that process may touch of the outside world: a socket
pair for its channel, a sealed shared buffer for its outputs, and a pipe for
what it prints; it keeps one end of each and sends the others along. Nothing
else connects the candidate to the judge.

``CandidateLink`` is one such process seen from the judge: requests with
deadlines, its output tail (drained by a thread so it can never block on a
full pipe), its buffer, and ``kill``. One process is started ahead, so the
next evaluation finds a process whose CUDA context already exists.
"""

from __future__ import annotations

import json
import math
import os
import select
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from typing import Any, Callable

from stark_lsp.safe_text import clean_text
from stark_lsp.evaluate.judge.build_cache import Exchange
from stark_lsp.evaluate.wire.channel import Channel, ChannelError, Deadline, PeerClosed, create_buffer, map_buffer
from stark_lsp.evaluate.wire.pinned import pin, unpin
from stark_lsp.evaluate.sandbox import cgroup
from stark_lsp.evaluate.sandbox.policy import Layout, Sandbox, scrubbed_env

READY_TIMEOUT_S = 240.0
COMPILE_GRACE_S = 0.2  # a compile said that ends sooner (a hit in Triton's disk cache) keeps the gate held
MAX_COMPILES = 1024  # compiles one request may let go of the gate for (an autotuner's configs, each a compile)
UNGATED_S = 60.0  # how long one process's compiles may have the gate let go of, in all (the longest honest
# compile seen: 42 s, a Triton reduction at BLOCK_X_0 = 1024 on level 2's 37_, docs/benchmarks.md session 25)
# The torch.compile baseline's process (``trust_compiles``) has other limits. The two above are against a
# candidate that lies about compiling to run beside another judge's timing; that process runs no candidate
# code, only the task's reference under torch.compile, whose compile it says as one stretch broken by each
# graph and kernel Inductor runs on the GPU (candidate/compile_stretch.py): one honest compile of a 3-D conv
# model takes 40 s and more, and graph breaks add more compiles. Its time without the gate is bounded by its
# request's own limit (the first call's: the process is killed past it), and its count by one stretch a
# graph or kernel run; past either the gate is kept held, as for any process: never a failure of the baseline.
BASELINE_UNGATED_S = math.inf
BASELINE_MAX_COMPILES = 1 << 16


def _credit(waited: float, credited: float, cap: float) -> tuple[float, float]:
    """What of a wait at the gate a request is credited, and its credit after it: at most ``cap`` in all,
    and exactly ``cap`` once spent (added up, the floats could fall short of it by a rounding step)."""
    left = max(0.0, cap - credited)
    return (left, cap) if waited >= left else (waited, credited + waited)


_LET_GO, _KEPT = math.inf, -math.inf  # a compile under way with the gate let go of, or kept held
OUTPUT_KEEP = 64 << 10


class StartFailed(RuntimeError):
    """A fresh process from the zygote said it could not start (CUDA out of memory, say): it had
    no candidate code in it yet, so this is the machine's state, not anyone's verdict."""


class SandboxError(RuntimeError):
    """The sandbox or its zygote could not be started or stopped answering."""


class _OutputTail(threading.Thread):
    """Drains a candidate's stdout/stderr pipe, keeping the last bytes."""

    def __init__(self, fd: int):
        super().__init__(daemon=True, name="stark-candidate-output")
        self.fd = fd
        self.chunks: deque[bytes] = deque()
        self.size = 0
        self.total = 0
        self.lock = threading.Lock()

    def run(self) -> None:
        try:
            while True:
                data = os.read(self.fd, 1 << 16)
                if not data:
                    break
                with self.lock:
                    self.chunks.append(data)
                    self.size += len(data)
                    self.total += len(data)
                    while self.size > OUTPUT_KEEP and len(self.chunks) > 1:
                        self.size -= len(self.chunks.popleft())
        except OSError:
            pass
        finally:
            try:
                os.close(self.fd)
            except OSError:
                pass

    def text(self, limit: int = 4000) -> str:
        with self.lock:
            data = b"".join(self.chunks)
        return clean_text(data.decode("utf-8", "replace"), limit)


class CandidateLink:
    def __init__(self, zygote: "SandboxedZygote", chan: Channel, buffer_fd: int, output: _OutputTail, pid: int):
        self.zygote = zygote
        self.chan = chan
        self.buffer_fd = buffer_fd
        self.buffer = map_buffer(buffer_fd)
        self.capacity = len(self.buffer)
        self.output = output
        self.pid = pid  # as the sandbox numbers it
        self.ready = False
        self.dead = False
        self.last_limit_s = 0.0  # the limit the last request ran under (for the message when it passed)
        self.profiler = False  # whether it started the profiler at its start
        self.asked = time.monotonic()  # when the zygote was asked for this process
        self.pinned = 0  # the judge's mapping of the buffer, page-locked for the GPU (``pin_buffer``)
        self.pin_tried = False
        self.sent_at = 0.0
        self.ungated_s = 0.0  # how long this process's compiles have had the GPU's gate let go of, in all
        self.ungated_cap_s, self.compiles_cap = UNGATED_S, MAX_COMPILES  # a candidate's (``trust_compiles``)
        self.start_s: dict[str, float] = {}  # what the zygote and the process said their start took (trace only)

    def trust_compiles(self) -> None:
        """This process runs no candidate code (the torch.compile baseline's): the compiles it says may have
        the gate let go of for its requests' own limits, and as many as torch.compile's first call says."""
        self.ungated_cap_s, self.compiles_cap = BASELINE_UNGATED_S, BASELINE_MAX_COMPILES

    def wait_ready(self, limit_s: float, cancel_fd: int | None = None) -> None:
        if self.ready:
            return
        msg = self.request(None, limit_s, cancel_fd=cancel_fd)
        if msg.get("ready") is not True:  # before any candidate code was in it: never the candidate's doing
            raise StartFailed(f"the process did not start: {clean_text(msg.get('error'), 300)}")
        self.ready = True
        self.start_s.update(step_times(msg.get("start_s")))

    def request(self, msg: dict[str, Any] | None, limit_s: float, *, launched_limit_s: float | None = None,
                progress_limit_s: float | None = None, cancel_fd: int | None = None,
                on_compile: Callable[[str], float] | None = None) -> dict[str, Any]:
        """Send ``msg`` (if any) and return the reply, within ``limit_s``.

        ``launched_limit_s``: once the process says its call returned
        (``{"launched": true}``), the reply must come within this.
        ``progress_limit_s``: after each ``{"progress": kernel}`` (a launch went
        through in a first call), the next word must come within this: a call
        that hangs after its kernels compiled is killed in seconds, while one
        that compiles many kernels keeps its whole ``limit_s``.
        ``on_compile``: the process says ``{"compiling": kernel}`` before a Triton
        compile and ``{"compiled": kernel}`` after it (a load or a first call the
        judge asked that of). A compile that is not over within
        ``COMPILE_GRACE_S`` (Triton's disk cache answers in milliseconds) has
        ``on_compile("compiling")`` let go of the GPU's gate, and its end
        ``on_compile("compiled")`` take it again; both return the seconds waited,
        which the limits do not count, up to ``limit_s`` in all. Once that credit,
        or ``UNGATED_S`` of compiles without the gate in this process, or
        ``MAX_COMPILES`` compiles in this request are spent (the torch.compile
        baseline's: ``trust_compiles``), later compiles keep
        the gate held (a process that lies about compiling gains no more time
        without it). Each compile is answered ``{"go": true}`` without waiting: a
        process that does not read its answers, a compile said twice or ended
        unsaid, or an answer while a compile is under way broke the protocol.
        Without ``on_compile``, such a message is an answer like any other (and
        no answer the request expects). Every send has the request's deadline: a
        process that reads nothing cannot keep the judge waiting to send.
        """
        self.sent_at = time.perf_counter()  # the judge's clock around this request starts here
        hard = time.monotonic() + limit_s
        if msg is not None:
            self.chan.send(msg, deadline=hard)
        deadline = hard
        self.last_limit_s = limit_s
        watch = (cancel_fd,) if cancel_fd is not None else ()
        # the compile said last: None (none under way), when its grace ends (a float), _LET_GO (the gate let
        # go of, since ``released``) or _KEPT (the gate kept held throughout)
        compiling: float | None = None
        released = 0.0
        ungated_until = math.inf  # while the gate is let go of: when this process's time without it is spent
        compiles, credited = 0, 0.0
        while True:
            try:
                until = ungated_until if compiling == _LET_GO else compiling
                reply = self.chan.recv(deadline if compiling is None or compiling < 0 else min(deadline, until),
                                       watch)
            except Deadline:
                if compiling is None or compiling < 0 or time.monotonic() >= deadline:
                    raise
                assert on_compile is not None
                if compiling == _LET_GO:  # one compile held open past what the process may have without the gate
                    # (it was looked at only when a compile's grace ended): taken back now, the compile goes on
                    self.ungated_s += time.monotonic() - released
                    waited, credited = _credit(on_compile("compiled"), credited, limit_s)
                    hard += waited
                    deadline, compiling = hard, _KEPT
                    continue
                if credited >= limit_s or self.ungated_s >= self.ungated_cap_s or compiles > self.compiles_cap:
                    compiling = _KEPT  # what a process may have without the gate is spent: compiled with it held
                    continue
                waited, credited = _credit(on_compile("compiling"), credited, limit_s)  # a long compile: the CPU's
                hard += waited
                deadline, compiling, released = hard, _LET_GO, time.monotonic()
                ungated_until = released + max(0.0, self.ungated_cap_s - self.ungated_s)
                continue
            step_name = next(iter(reply), "") if len(reply) == 1 else ""
            if on_compile is not None and step_name in ("compiling", "compiled") and isinstance(reply[step_name], str):
                if (step_name == "compiling") != (compiling is None):
                    raise ChannelError(f"a compile {'said twice' if compiling is not None else 'ended unsaid'}")
                if step_name == "compiling":
                    compiles += 1
                    compiling = time.monotonic() + COMPILE_GRACE_S
                    deadline, self.last_limit_s = hard, limit_s  # a compile may take what is left of the limit
                    continue
                if compiling == _LET_GO:  # taken again before the kernel runs
                    self.ungated_s += time.monotonic() - released
                    waited, credited = _credit(on_compile("compiled"), credited, limit_s)
                    hard += waited
                compiling = None
                if progress_limit_s is not None and time.monotonic() + progress_limit_s < hard:
                    deadline, self.last_limit_s = time.monotonic() + progress_limit_s, progress_limit_s
                else:
                    deadline, self.last_limit_s = hard, limit_s
                self.chan.send_now({"go": True})
                continue
            if len(reply) == 1 and (reply.get("launched") is True or isinstance(reply.get("progress"), str)):
                step = launched_limit_s if "launched" in reply else progress_limit_s
                if step is not None and compiling is None:  # a compile under way keeps what is left of the limit
                    deadline = min(hard, time.monotonic() + step)
                    self.last_limit_s = step
                continue
            if compiling is not None:
                raise ChannelError("an answer before the compile it said ended")
            return reply

    def wall_ms(self) -> float:
        """The judge's clock around the last request: from just before it was sent to the arrival
        of the last byte of its answer (decoding and checking the answer are not in it)."""
        return (self.chan.received_at - self.sent_at) * 1e3

    def pin_buffer(self) -> None:
        """Page-lock the judge's mapping of the buffer for its copies to the GPU (once; the judge
        process only, after CUDA started there); unpinned in ``close``."""
        if not self.pin_tried and not self.dead:
            self.pin_tried = True  # a refusal is not asked again for every output read
            self.pinned = pin(self.buffer)

    def read_bytes(self, offset: int, nbytes: int) -> bytes:
        return bytes(self.buffer[offset: offset + nbytes])  # a snapshot: the process may keep writing

    def output_tail(self, limit: int = 4000) -> str:
        return self.output.text(limit)

    def close(self) -> None:
        """Forget this process; the zygote kills it (and all it started) before the next one."""
        if self.dead:
            return
        self.dead = True
        try:
            self.chan.sock.close()
        except OSError:
            pass
        if self.pinned:
            unpin(self.pinned)
            self.pinned = 0
        try:
            self.buffer.close()
        except (BufferError, ValueError):
            pass
        try:
            os.close(self.buffer_fd)
        except OSError:
            pass


def step_times(raw: object, prefix: str = "", most: int = 8) -> dict[str, float]:
    """A start's steps and their seconds, as a process said them: for the trace alone, never a figure
    or a limit. Anything but a small dict of short names and plain numbers is dropped."""
    if not isinstance(raw, dict) or len(raw) > most:
        return {}
    out: dict[str, float] = {}
    for k, v in raw.items():
        if isinstance(k, str) and len(k) <= 40 and type(v) in (int, float) and 0 <= v < 1e6:
            out[prefix + clean_text(k, 40)] = round(float(v), 4)
    return out


class _PendingSpawn:
    """The judge's ends of a candidate process asked for, until the zygote answers."""

    def __init__(self, judge_end: socket.socket, buffer_fd: int, out_r: int, profiler: bool):
        self.judge_end, self.buffer_fd, self.out_r, self.profiler = judge_end, buffer_fd, out_r, profiler
        self.asked = time.monotonic()  # when the zygote was asked for it (the trace: how far ahead)

    def discard(self) -> None:
        self.judge_end.close()
        for fd in (self.buffer_fd, self.out_r):
            try:
                os.close(fd)
            except OSError:
                pass


class SandboxedZygote:
    """The zygote process (in the sandbox, or plainly when ``sandbox`` is None)."""

    def __init__(self, sandbox: Sandbox | None, layout: Layout, device: str, env: dict[str, str],
                 buffer_bytes: int = 64 << 20, arch: int = 0, builds: Exchange | None = None):
        self.sandbox = sandbox
        self.layout = layout
        self.device = device
        self.buffer_bytes = buffer_bytes
        self._next: CandidateLink | None = None
        self._pending: _PendingSpawn | None = None  # a spawn asked for, its answer not read yet
        self._launchers: set[tuple[str, ...]] = set()
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.ctrl = parent
        argv = [sys.executable, "-m", "stark_lsp.evaluate.sandbox.zygote", "--fd", str(child.fileno()), "--device", device,
                "--arch", str(arch)]
        if builds is not None:  # the judge's cache of the zygote's own builds (judge/build_cache.py)
            if builds.seed_fd is not None:
                argv += ["--seed-fd", str(builds.seed_fd)]
            argv += ["--built-fd", str(builds.built_fd)]
        self._group = None  # its cgroup: the memory of all sandboxes of this process, bounded together
        self._ooms_seen = 0  # the group's processes killed for memory that a verdict has named already
        if sandbox is not None:
            argv += ["--sandboxed", "--wipe", *(h for h in layout.hidden if h not in layout.sealed)]
            argv = sandbox.wrap(argv, layout)
            self._group = cgroup.group("candidate")
            if self._group is not None:
                argv = self._group.argv(argv)
        try:
            self.proc = subprocess.Popen(argv, pass_fds=(child.fileno(), *(builds.fds() if builds else ())),
                                         env=scrubbed_env(env), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.PIPE, start_new_session=True)
        finally:
            child.close()
            if builds is not None:
                builds.passed()
        self._stderr = _OutputTail(self.proc.stderr.fileno())  # type: ignore[union-attr]
        self._stderr.start()
        try:
            hello = self._recv(READY_TIMEOUT_S)
        except SandboxError:
            if builds is not None:
                builds.discard()
            self._drop_group()
            raise
        if hello.get("ready") is not True:
            if builds is not None:
                builds.discard()
            self.close()
            raise SandboxError(f"the sandbox did not start: {hello.get('error') or self._why()}")
        if builds is not None:  # written before the zygote said it is ready: before any candidate
            hello["builds_kept"] = builds.keep(sandboxed=sandbox is not None)
        self.info = hello

    def _why(self) -> str:
        time.sleep(0.1)
        tail = self._stderr.text(600).strip().splitlines()
        return tail[-1] if tail else f"exit code {self.proc.poll()}"

    def _recv(self, timeout: float) -> dict[str, Any]:
        r, _, _ = select.select([self.ctrl], [], [], timeout)
        if not r:
            raise SandboxError(f"the zygote did not answer within {timeout:.0f} s")
        try:
            data = self.ctrl.recv(1 << 16)
        except OSError as e:
            raise SandboxError(f"the zygote is gone ({e}): {self._why()}") from None
        if not data:
            raise SandboxError(f"the zygote is gone: {self._why()}")
        return json.loads(data)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def covers(self, paths: list[str]) -> bool:
        return all(self.layout.covers(p) for p in paths)

    def _request_spawn(self, profiler: bool = False) -> "_PendingSpawn":
        """Ask the zygote for a new candidate process (it first clears away the last one: its
        exit, the reaping, the wipe), without waiting for the answer."""
        judge_end, cand_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        buffer_fd = create_buffer(self.buffer_bytes)
        out_r, out_w = os.pipe()
        pending = _PendingSpawn(judge_end, buffer_fd, out_r, profiler)
        try:
            socket.send_fds(self.ctrl, [json.dumps({"op": "spawn", "profiler": profiler}).encode()],
                            [cand_end.fileno(), buffer_fd, out_w])
        except OSError as e:
            pending.discard()
            raise SandboxError(f"the zygote is gone ({e}): {self._why()}") from None
        finally:
            cand_end.close()
            os.close(out_w)
        return pending

    def _finish_spawn(self, pending: "_PendingSpawn") -> CandidateLink:
        try:
            reply = self._recv(60.0)
        except SandboxError:
            pending.discard()
            raise
        if "spawned" not in reply:
            pending.discard()
            raise SandboxError(f"the zygote could not start a candidate process: {reply.get('error')}")
        tail = _OutputTail(pending.out_r)
        tail.start()
        link = CandidateLink(self, Channel(pending.judge_end), pending.buffer_fd, tail, int(reply["spawned"]))
        link.profiler, link.asked = pending.profiler, pending.asked
        link.start_s.update(step_times(reply.get("steps_s"), prefix="zygote: "))
        return link

    def _spawn(self, profiler: bool = False) -> CandidateLink:
        return self._finish_spawn(self._request_spawn(profiler))

    def settle(self) -> None:
        """Collect the process asked for ahead (``prepare_next``): the zygote's cleanup of the
        last one is done when this returns; raises ``SandboxError`` when it could not. Answers
        come in order, so every other request on the control socket settles first."""
        pending, self._pending = self._pending, None
        if pending is not None:
            self._next = self._finish_spawn(pending)

    def take(self, buffer_bytes: int, profiler: bool = False) -> CandidateLink:
        """A fresh candidate process whose buffer holds ``buffer_bytes`` (the one started
        ahead when there is one; ``profiler``: start the profiler in a new one)."""
        self.settle()
        link = self._next
        self._next = None
        # a process that started the profiler is never handed to a role that did not ask for one
        # (the reference's timing must not depend on what the last candidate's source named)
        if link is None or link.capacity < buffer_bytes or link.profiler != profiler:
            if link is not None:
                link.close()
            self.buffer_bytes = max(self.buffer_bytes, buffer_bytes)
            link = self._spawn(profiler)
        return link

    def prepare_next(self, profiler: bool = False) -> None:
        """Have the zygote kill whatever ran, clean up, and start the next candidate process,
        and return at once: the process creates its CUDA context, and with ``profiler`` starts
        the profiler once (the launch check of CUDA kernels needs it), while the judge answers
        and the caller does other work (an agent's turn, a build). ``take`` collects it."""
        if self._next is None and self._pending is None:
            self._pending = self._request_spawn(profiler)

    def add_launchers(self, signatures: list[tuple[str, ...]]) -> None:
        """Have the zygote build Triton launcher stubs for these signatures (checked ones:
        ``triton_launchers.valid_signatures``) for the candidate processes it starts next."""
        new = [list(s) for s in signatures if s not in self._launchers]
        if new:
            self.settle()
            if self._next is not None:  # the zygote kills every process before it builds
                self._next.close()
                self._next = None
            self._launchers.update(tuple(s) for s in new)
            socket.send_fds(self.ctrl, [json.dumps({"op": "launchers", "signatures": new}).encode()], [])

    def how_it_ended(self, link: "CandidateLink") -> str:
        """" (SIGSEGV)", " (exit code 3)", or "" when the zygote cannot tell."""
        try:
            self.settle()
            socket.send_fds(self.ctrl, [json.dumps({"op": "wait", "pid": link.pid}).encode()], [])
            msg = self._recv(10.0)
        except (OSError, SandboxError, ValueError):
            return ""
        if "signal" in msg:
            ooms = self._group.oom_kills() if self._group is not None else 0
            if msg["signal"] == "SIGKILL" and ooms > self._ooms_seen:
                self._ooms_seen = ooms
                return f" (SIGKILL: out of memory, the sandboxes' cap of {cgroup.cap_text()} was reached)"
            return f" ({msg['signal']})"
        if "exit" in msg:
            return f" (exit code {msg['exit']})"
        return ""

    def kill_all(self) -> None:
        self.settle()
        if self._next is not None:
            self._next.close()
            self._next = None
        socket.send_fds(self.ctrl, [json.dumps({"op": "kill"}).encode()], [])
        self._recv(120.0)

    def close(self) -> None:
        if self._pending is not None:
            self._pending.discard()
            self._pending = None
        if self._next is not None:
            self._next.close()
            self._next = None
        try:
            self.ctrl.send(json.dumps({"op": "exit"}).encode())
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 9)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait(timeout=10)
        self.ctrl.close()
        self._drop_group()

    def _drop_group(self) -> None:
        """Its cgroup emptied (what is left of the sandbox is killed) and removed."""
        if self._group is not None:
            self._group.close()
            self._group = None


__all__ = ["CandidateLink", "SandboxedZygote", "SandboxError", "Deadline", "PeerClosed", "ChannelError"]
