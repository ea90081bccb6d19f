"""Warm judge processes, with time limits and replacement after any fault.

A judge (``judge/process.py``) costs seconds to start (import torch, create a
CUDA context, start the sandbox's zygote), so judges are kept warm and
reused. They never run candidate code themselves: each candidate runs in a
fresh sandboxed process that the judge kills when it misbehaves. A judge that
stops answering is killed (its whole process group) when the job's overall
limit passes; one that dies is noticed by the closed pipe; either way the job
gets a clean failed result and a fresh judge is started in the background.
``cancel()`` stops the jobs in flight (the judges kill their candidates and
answer "stopped").
"""

from __future__ import annotations

import json
import os
import queue
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stark_lsp.evaluate import phases
from stark_lsp.evaluate.sandbox.policy import SandboxRefused, scrubbed_env

READY_TIMEOUT_S = 240.0


class WorkerStartError(RuntimeError):
    pass


@dataclass
class Reply:
    result: dict[str, Any] | None  # EvalResult dict, or None on a fault
    fault: str = ""  # "timeout" | "crashed" with the reason in message
    message: str = ""
    output: str = ""


@dataclass(eq=False)
class _Worker:
    proc: subprocess.Popen[bytes]
    tx: Any
    rx_fd: int
    log: Path
    hardware: dict[str, Any] = field(default_factory=dict)
    buf: bytes = b""
    jobs: int = 0

    def read_line(self, deadline: float) -> bytes | None:
        """One line from the worker, or None on timeout; b"" when the pipe closed."""
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([self.rx_fd], [], [], min(left, 1.0))
            if not r:
                continue
            chunk = os.read(self.rx_fd, 1 << 16)
            if not chunk:
                return b""
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for f in (self.tx,):
            try:
                f.close()
            except OSError:
                pass
        try:
            os.close(self.rx_fd)
        except OSError:
            pass


def _progress(line: bytes) -> str | None:
    """"started", "waiting", "resumed", "restarted" or "phase" for the judge's progress lines (process.py);
    None for a reply."""
    try:
        msg = json.loads(line)
    except ValueError:
        return None
    if not isinstance(msg, dict) or "result" in msg:
        return None
    if msg.get("started") is True:
        return "started"
    if isinstance(msg.get("waiting"), str):
        return "waiting"
    if msg.get("resumed") is True:
        return "resumed"
    if msg.get("restarted") is True:
        return "restarted"
    if "phase" in msg:
        return "phase"
    return None


def _signal_name(rc: int | None) -> str:
    if rc is None:
        return "still running"
    if rc < 0:
        try:
            return signal.Signals(-rc).name
        except ValueError:
            return f"signal {-rc}"
    return f"exit code {rc}"


LOCK_WAIT_S = 1800.0  # how long a worker may wait for its GPU before the evaluation counts as hung


class WorkerPool:
    def __init__(self, size: int = 1, device: str = "auto", workdir: Path | None = None,
                 env: dict[str, str] | None = None, memory_fraction: float = 0.0, warm: dict[str, Any] | None = None):
        self.size = max(1, size)
        self.warm = warm  # the jobs expected (their sandbox, folders): each judge starts its zygote for them at once
        self.device = device
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="stark-workers-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.extra_env = dict(env or {})
        self.memory_fraction = memory_fraction
        self._idle: queue.Queue[_Worker | BaseException] = queue.Queue()
        self._closed = False
        self._hardware: dict[str, Any] | None = None
        self._hw_event = threading.Event()
        self._all: set[_Worker] = set()
        self._busy: set[_Worker] = set()
        self._lock = threading.Lock()
        self._counter = 0
        for _ in range(self.size):
            self._spawn_async()

    # ------------------------------------------------------------------
    def hardware(self, timeout: float = READY_TIMEOUT_S) -> dict[str, Any]:
        if not self._hw_event.wait(timeout):
            raise WorkerStartError("no evaluation worker became ready")
        if self._hardware is None:
            raise WorkerStartError("evaluation workers could not start")
        return self._hardware

    def cancel(self) -> None:
        """Stop every evaluation in flight; each is answered as stopped."""
        with self._lock:
            busy = list(self._busy)
        for w in busy:
            try:
                w.tx.write(json.dumps({"op": "cancel"}) + "\n")
                w.tx.flush()
            except (OSError, ValueError):
                pass

    def run(self, job: dict[str, Any], timeout_s: float) -> Reply:
        phases.report(phases.QUEUED)  # until a judge takes it
        worker = self._acquire()
        with self._lock:
            self._busy.add(worker)
        try:
            return self._run(worker, job, timeout_s)
        finally:
            with self._lock:
                self._busy.discard(worker)

    def _run(self, worker: "_Worker", job: dict[str, Any], timeout_s: float) -> Reply:
        job = dict(job)
        job.setdefault("workdir", str(self.workdir / f"job-{worker.proc.pid}"))
        log_offset = worker.log.stat().st_size if worker.log.exists() else 0
        try:
            worker.tx.write(json.dumps({"op": "evaluate", "job": job}) + "\n")
            worker.tx.flush()
        except (BrokenPipeError, OSError):
            return self._fault(worker, "crashed", "the worker was gone before the job started", log_offset)
        # the time limit counts only while the judge works: not while it waits at its GPU's gate (gpu_lock.py)
        left = timeout_s
        waiting = True  # until it says it started
        doing = phases.STARTING  # what the judge does, for the progress lines
        running_until = 0.0
        while True:
            line = worker.read_line(time.monotonic() + LOCK_WAIT_S + left if waiting else running_until)
            if line is None:
                if waiting:
                    return self._fault(worker, "timeout", f"the GPU stayed busy (other evaluations held it) for over "
                                                          f"{LOCK_WAIT_S:.0f} s: killed", log_offset)
                return self._fault(worker, "timeout", f"the judge gave no result within {timeout_s:.0f} s: restarted",
                                   log_offset)
            mark = _progress(line)
            if mark is None:
                break
            if mark == "phase":  # words for the progress lines (phases.py); no limit changes
                doing = phases.after(json.loads(line).get("phase")) or doing
                phases.report(doing)
                continue
            phases.report(phases.QUEUED if mark == "waiting" else doing)
            now = time.monotonic()
            if mark == "restarted":  # the judge evaluates the job again (alone, after running out of memory)
                left = timeout_s
                mark = "started"
            if mark == "waiting":
                if not waiting:
                    left = max(0.0, running_until - now)
                waiting = True
            else:  # started, or resumed after a wait
                waiting = False
                running_until = now + left
        if line == b"":
            worker.proc.wait(timeout=10)
            why = _signal_name(worker.proc.returncode)
            return self._fault(worker, "crashed", f"the judge process died ({why})", log_offset)
        try:
            msg = json.loads(line)
        except ValueError:
            return self._fault(worker, "crashed", "the worker sent garbage", log_offset)
        if "unavailable" in msg:
            self._idle.put(worker)
            raise SandboxRefused(str(msg["unavailable"]))
        worker.jobs += 1
        if msg.get("recycle"):
            self._replace(worker)
        else:
            self._idle.put(worker)
        return Reply(result=msg["result"])

    def close(self, wait: bool = True) -> None:
        """Tell every worker to exit; wait for each (at most 5 s, then it is killed), or, with ``wait``
        false (a command about to return), leave them to clean up alone: a judge told to exit ends
        itself within ``process.EXIT_LIMIT_S``."""
        self._closed = True
        with self._lock:
            workers = list(self._all)
        for w in workers:
            try:
                w.tx.write(json.dumps({"op": "exit"}) + "\n")
                w.tx.flush()
            except OSError:
                pass
        if not wait:
            return
        deadline = time.monotonic() + 5
        for w in workers:
            try:
                w.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            w.kill()

    # ------------------------------------------------------------------
    def _acquire(self) -> _Worker:
        while True:
            item = self._idle.get(timeout=READY_TIMEOUT_S * 2)
            if isinstance(item, BaseException):
                if not self._closed:
                    self._spawn_async()  # try again for the next caller
                raise WorkerStartError(str(item)) from item
            if item.proc.poll() is None:
                return item
            self._replace(item)

    def _fault(self, worker: _Worker, fault: str, message: str, log_offset: int) -> Reply:
        output = _read_tail(worker.log, log_offset)
        self._replace(worker)
        return Reply(result=None, fault=fault, message=message, output=output)

    def _replace(self, worker: _Worker) -> None:
        worker.kill()
        with self._lock:
            self._all.discard(worker)
        if not self._closed:
            self._spawn_async()

    def _spawn_async(self) -> None:
        threading.Thread(target=self._spawn, daemon=True, name="stark-worker-spawn").start()

    def _spawn(self) -> None:
        try:
            w = self._start_worker()
        except BaseException as e:  # noqa: BLE001 - surfaced to the caller waiting for a worker
            self._hw_event.set()
            self._idle.put(e)
            return
        if self._closed:
            w.kill()
            return
        with self._lock:
            self._all.add(w)
        if self._hardware is None:
            self._hardware = w.hardware
        self._hw_event.set()
        self._idle.put(w)

    def _start_worker(self) -> _Worker:
        with self._lock:
            self._counter += 1
            n = self._counter
        p2c_r, p2c_w = os.pipe()
        c2p_r, c2p_w = os.pipe()
        log = self.workdir / f"worker-{n}.log"
        env = scrubbed_env(self.extra_env)
        pkg_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_root, env.get("PYTHONPATH", "")) if p)
        env.setdefault("HOME", str(self.workdir))
        env["TMPDIR"] = str(self.workdir)
        cmd = [sys.executable, "-m", "stark_lsp.evaluate.judge.process", "--fd-in", str(p2c_r), "--fd-out", str(c2p_w),
               "--device", self.device, "--log", str(log)]
        if self.memory_fraction:
            cmd += ["--memory-fraction", str(self.memory_fraction)]
        if self.warm:
            cmd += ["--warm", json.dumps(self.warm)]
        proc = subprocess.Popen(cmd, pass_fds=(p2c_r, c2p_w), env=env, cwd=str(self.workdir),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        os.close(p2c_r)
        os.close(c2p_w)
        w = _Worker(proc=proc, tx=os.fdopen(p2c_w, "w", buffering=1), rx_fd=c2p_r, log=log)
        line = w.read_line(time.monotonic() + READY_TIMEOUT_S)
        if not line:
            w.kill()
            raise WorkerStartError(f"the evaluation worker did not start ({_signal_name(proc.returncode)}): "
                                   f"{_read_tail(log, 0)[-1500:]}")
        msg = json.loads(line)
        if not msg.get("ready"):
            w.kill()
            raise WorkerStartError(f"the evaluation worker failed to start: {msg.get('error')}")
        w.hardware = msg["hardware"]
        return w


def _read_tail(path: Path, offset: int, limit: int = 4000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    return text[-limit:]
