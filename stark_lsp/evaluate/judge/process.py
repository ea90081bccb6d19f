"""The judge process: long-lived, warm, trusted; started by ``pool.py``.

    python -m stark_lsp.evaluate.judge.process --fd-in N --fd-out M --device D --log FILE

It imports torch and creates its CUDA context once, starts the sandbox's
zygote, and then judges one evaluation at a time (``judge.py``). It never
imports or runs candidate code. It talks JSON lines over two inherited pipe
descriptors; its own stdout/stderr go to a log file.

Messages in:  {"op": "evaluate", "job": {...}} | {"op": "cancel"} | {"op": "exit"}
Messages out: {"ready": true, "hardware": {...}} once, then per job
              {"started": true} when it begins, {"waiting": mode} before a phase waits
              for the GPU's gate (gpu_lock.py: another process's timing, or others'
              work while this one would time) and {"resumed": true, "waited_s": s}
              once it passed (the pool does not count the wait against the limit),
              {"restarted": true} when it evaluates the job again with the GPU to itself
              (it ran out of GPU memory beside other judges: out_of_memory),
              and {"result": EvalResult-dict, "recycle": bool} or {"unavailable": reason}.
A "cancel" that arrives while a job runs stops it (the candidate is killed);
the job is answered as stopped.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

EXIT_LIMIT_S = 20.0  # the judge's clean-up once told to exit (its zygote, the sandbox): then SIGALRM ends it


def _redirect_output(log_path: str) -> None:
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)


class _Lines:
    """Reads JSON lines from a descriptor without buffering past what it returns, so the
    same descriptor can be watched for a cancel request while a job runs."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buf = b""

    def next(self) -> dict | None:
        while b"\n" not in self.buf:
            data = os.read(self.fd, 1 << 16)
            if not data:
                return None
            self.buf += data
        line, _, self.buf = self.buf.partition(b"\n")
        try:
            msg = json.loads(line)
        except ValueError:
            return {}
        return msg if isinstance(msg, dict) else {}

    def pending(self) -> bool:
        return b"\n" in self.buf or bool(select.select([self.fd], [], [], 0)[0])


def out_of_memory(result: Any) -> bool:
    """Whether an evaluation ended because the GPU's memory ran out (whoever's code asked for it)."""
    from stark_lsp.evaluate.out_of_memory import ran_out_of_memory

    return result.status.value != "ok" and ran_out_of_memory(result.message or "")


# evaluations of one task a judge does again alone when the failure's words are a candidate's (its process's
# error text, which it writes): each holds every other judge on the GPU off for a whole evaluation, so a candidate
# that only says "out of memory" may not buy that for every attempt of a search (session 29's review). A failure
# of the judge's own (the reference's, the baselines': a task error) is done again alone whenever it says so.
MAX_ALONE_FOR_CANDIDATES = 3


def may_go_alone(result: Any, task: str, spent: dict[str, int]) -> bool:
    """Whether an evaluation of ``task`` that ran out of memory is done again alone; counts it in ``spent``."""
    if result.status.value == "task_error":
        return True
    if spent.get(task, 0) >= MAX_ALONE_FOR_CANDIDATES:
        return False
    spent[task] = spent.get(task, 0) + 1
    return True


def _task_key(job: dict[str, Any]) -> str:
    task = job.get("task") or {}
    return str(task.get("path") or task.get("name") or "") if isinstance(task, dict) else str(task)


def _profiled(fn: Any, *args: Any, **kw: Any) -> Any:
    """``fn(*args, **kw)``; with ``STARK_EVAL_PROFILE=DIR`` (for studying the judge's own cost), under
    cProfile, its statistics appended to DIR, one file a job."""
    out = os.environ.get("STARK_EVAL_PROFILE")
    if not out:
        return fn(*args, **kw)
    import cProfile

    prof = cProfile.Profile()
    try:
        return prof.runcall(fn, *args, **kw)
    finally:
        Path(out).mkdir(parents=True, exist_ok=True)
        prof.dump_stats(str(Path(out) / f"judge-{os.getpid()}-{time.time_ns()}.prof"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fd-in", type=int, required=True)
    ap.add_argument("--fd-out", type=int, required=True)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--log", required=True)
    ap.add_argument("--memory-fraction", type=float, default=0.0)
    ap.add_argument("--warm", default="", help='JSON {"sandbox", "expose", "hide"}: start the zygote for '
                                               "such jobs at once, before the first arrives")
    args = ap.parse_args(argv)

    from stark_lsp.evaluate.sandbox.limits import apply_limits, limit_judge_memory

    apply_limits()
    _redirect_output(args.log)
    rx = _Lines(args.fd_in)
    tx = os.fdopen(args.fd_out, "w", buffering=1)

    def send(msg: dict) -> None:
        tx.write(json.dumps(msg) + "\n")
        tx.flush()

    try:
        import torch

        from stark_lsp.evaluate.judge import trace
        from stark_lsp.evaluate.judge.gpu_lock import SHARED, GpuGate, gpu_key
        from stark_lsp.evaluate.judge.judge import Judge, SandboxUnavailable
        from stark_lsp.evaluate.result import EvalResult, Status

        judge = Judge(args.device, env={k: v for k, v in os.environ.items()})
        if args.warm:  # the zygote's imports and builds go on while this judge starts CUDA and says it is ready
            warm = json.loads(args.warm)
            judge.start_zygote_soon([str(p) for p in warm.get("expose", [])], str(warm.get("sandbox", "auto")),
                                    [str(p) for p in warm.get("hide", [])])
        if judge.is_gpu and args.memory_fraction:
            torch.cuda.set_per_process_memory_fraction(args.memory_fraction)
        if not judge.is_gpu:  # a task too large for this machine fails an allocation here, not the machine
            limit_judge_memory()
        lock_key = os.environ.get("STARK_EVAL_LOCK_NAME") or (gpu_key(torch, judge.device) if judge.is_gpu else "")

        def waiting(mode: str, waited: float | None) -> None:
            send({"waiting": mode} if waited is None else {"resumed": True, "waited_s": round(waited, 4)})
            if waited is None and judge.is_gpu:  # about to wait anyway: the other judges on this GPU get the
                torch.cuda.empty_cache()  # memory this one's allocator keeps cached but does not use now

        judge.gate = GpuGate(lock_key, on_wait=waiting)  # one per GPU, machine-wide
        judge.on_phase = lambda phase: send({"phase": phase})  # for the progress lines (evaluate/phases.py)
        send({"ready": True, "hardware": judge.hardware(), "pid": os.getpid()})
    except Exception as e:  # the judge cannot start: say why, then exit
        send({"ready": False, "error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()[-4000:]})
        return 1

    alone_spent: dict[str, int] = {}  # a task's candidates evaluated again alone (``may_go_alone``)
    try:
        while True:
            msg = rx.next()
            if msg is None or msg.get("op") == "exit":
                break
            if msg.get("op") != "evaluate":
                continue  # a cancel for a job that already ended
            job = msg.get("job", {})
            recycle = False
            if b"\n" in rx.buf:  # a cancel that was sent before this job was read
                pending = rx.next()
                if pending and pending.get("op") == "cancel":
                    send({"result": EvalResult(Status.TIMEOUT, "stopped before it started (the search was stopped)",
                                               stopped=True).to_dict(), "recycle": False})
                    continue
                if pending is None or pending.get("op") == "exit":
                    break
            sent = False  # one answer per job, whatever fails after it went out
            try:
                send({"started": True})
                waited0 = judge.gate.waited_s
                # the judge's phases switch it to exclusive or none as they go
                with judge.gate.hold(SHARED, "evaluation"):
                    result = _profiled(judge.evaluate, job, cancel_fd=args.fd_in)
                    oom = judge.gate.active and out_of_memory(result)
                    if oom and not may_go_alone(result, _task_key(job), alone_spent):
                        result.message += (f" (beside other evaluations; not evaluated alone again: that is done "
                                           f"for at most {MAX_ALONE_FOR_CANDIDATES} candidates of a task)")
                    elif oom:
                        # beside other judges' processes the GPU's memory ran out: not the task's fault, nor
                        # the candidate's. Once more, with the GPU to itself (its gate held exclusive throughout)
                        judge.release_memory()
                        judge.gate.alone = True
                        send({"restarted": True})  # the pool's limit starts again
                        judge.gate.switch(SHARED)
                        first = result.message
                        result = judge.evaluate(job, cancel_fd=args.fd_in)
                        result.phases["evaluated alone"] = 1.0
                        if out_of_memory(result):
                            result.message += " (out of GPU memory with the GPU to itself too)"
                        else:
                            result.flags.append(f"evaluated again with the GPU to itself: beside other "
                                                f"evaluations it ran out of GPU memory ({first[:160]})")
                    if judge.gate.waited_s > waited0:  # other judges' timing, or their work while this one timed
                        result.phases["waiting for the GPU"] = round(judge.gate.waited_s - waited0, 4)
                    while rx.pending():  # a cancel that came in as the job ended
                        extra = rx.next()
                        if extra is None or extra.get("op") == "exit":
                            send({"result": result.to_dict(), "recycle": True})
                            return 0
                    send({"result": result.to_dict(), "recycle": False})
                    sent = True
                    # the verdict is out; the GPU is held until the candidate is gone (cleared away
                    # by the zygote, its failure to do so replacing it), not by the next evaluation
                    t_settle = time.perf_counter()
                    judge.settle()
                    judge.gate.alone = False
                t_release = time.perf_counter()
                judge.release_memory()  # an idle judge keeps no GPU memory from other judges' evaluations
                if trace.enabled():  # the judge's work after a verdict, before it reads the next job
                    trace.write({"after_verdict_s": {"settle": round(t_release - t_settle, 4),
                                                     "release memory": round(time.perf_counter() - t_release, 4)},
                                 "pid": os.getpid()})
                continue
            except SandboxUnavailable as e:
                judge.gate.alone = False  # (raised in an evaluation done again alone: the next job is no longer)
                if not sent:
                    send({"unavailable": str(e)})
                continue
            except Exception as e:  # a bug in the evaluator itself: report, and start afresh
                if sent:
                    break
                result = EvalResult(Status.RUNTIME_ERROR, f"evaluator error: {type(e).__name__}: {e}")
                result.output = traceback.format_exc()[-4000:]
                recycle = True
            send({"result": result.to_dict(), "recycle": recycle})
            if recycle:
                break
    finally:
        # the caller may not wait for the clean-up (``WorkerPool.close(wait=False)``): it cannot outlast this
        signal.alarm(int(EXIT_LIMIT_S))
        judge.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
