"""The evaluation worker: a long-lived process that keeps a warm CUDA context.

Started by ``pool.py`` as ``python -m stark_lsp.evaluate.worker``. It talks
JSON lines over two inherited pipe descriptors, never over stdout/stderr: those
go to a log file, so whatever candidate code prints cannot corrupt the
protocol (the tail of it comes back with each result).

Messages in:  {"op": "evaluate", "job": {...}} | {"op": "exit"}
Messages out: {"ready": true, "hardware": {...}} once, then per job
              {"started": true, "waited_s": s} when it holds the GPU (gpu_lock.py)
              and {"result": EvalResult-dict, "recycle": bool}.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from contextlib import nullcontext


def _redirect_output(log_path: str) -> None:
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)


def _tail(path: str, offset: int, limit: int = 4000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except OSError:
        return ""
    text = data.decode(errors="replace")
    return text if len(text) <= limit else "...\n" + text[-limit:]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fd-in", type=int, required=True)
    ap.add_argument("--fd-out", type=int, required=True)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--log", required=True)
    ap.add_argument("--memory-fraction", type=float, default=0.0)
    args = ap.parse_args(argv)

    from stark_lsp.evaluate.sandbox import apply_limits

    apply_limits()
    _redirect_output(args.log)
    rx = os.fdopen(args.fd_in, "r", buffering=1)
    tx = os.fdopen(args.fd_out, "w", buffering=1)

    def send(msg: dict) -> None:
        tx.write(json.dumps(msg) + "\n")
        tx.flush()

    try:
        import torch  # noqa: F401  (the slow part: do it once, before any job)

        from stark_lsp.evaluate.result import EvalResult, Status
        from stark_lsp.evaluate.runner import Runner

        runner = Runner(args.device)
        if runner.is_gpu and args.memory_fraction:
            torch.cuda.set_per_process_memory_fraction(args.memory_fraction)
        from stark_lsp.evaluate.gpu_lock import GpuLock, gpu_key

        lock_key = os.environ.get("STARK_EVAL_LOCK_NAME") or (gpu_key(torch, runner.device) if runner.is_gpu else "")
        send({"ready": True, "hardware": runner.hardware(), "pid": os.getpid()})
    except Exception as e:  # the worker cannot start: say why, then exit
        send({"ready": False, "error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()[-4000:]})
        return 1

    for line in rx:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("op") == "exit":
            break
        job = msg.get("job", {})
        offset = os.lseek(1, 0, os.SEEK_END)
        cwd = job.get("workdir")
        if cwd:
            os.makedirs(cwd, exist_ok=True)
            os.chdir(cwd)
        try:
            with GpuLock(lock_key) if lock_key else nullcontext() as lock:  # one evaluation per GPU, machine-wide
                send({"started": True, "waited_s": getattr(lock, "waited_s", 0.0)})
                result, recycle = runner.evaluate(job)
        except Exception as e:  # a bug in the evaluator itself: report, and start afresh
            result = EvalResult(Status.RUNTIME_ERROR, f"evaluator error: {type(e).__name__}: {e}")
            result.output = traceback.format_exc()[-4000:]
            recycle = True
        sys.stdout.flush()
        sys.stderr.flush()
        printed = _tail(args.log, offset)
        if printed:
            result.output = (result.output + "\n" + printed).strip()
        send({"result": result.to_dict(), "recycle": recycle})
        if recycle:
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
