"""The evaluation actor: a local one-worker ``Evaluator`` inside a Ray actor.

Plain Python (no Ray import): ``ray_evaluator`` wraps it with ``ray.remote``.
The actor keeps its evaluation worker (and on a GPU its CUDA context) warm
between candidates; candidate code still runs in that worker's sandbox, never
in the actor. Tasks travel as file contents, so a node without the caller's
files (no shared file system) evaluates from copies in its cache directory.
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from stark_lsp.cluster.env import drop_secrets
from stark_lsp.evaluate.sandbox.policy import scrubbed_env


def task_payload(task: Any) -> dict[str, Any]:
    """What an actor needs to rebuild ``task``: its dict and the files' contents."""
    files = {"path": task.path.read_text()}
    if task.harness is not None and task.harness != task.path:
        files["harness"] = task.harness.read_text()
    return {"task": task.to_dict(), "files": files}


def materialize_task(payload: dict[str, Any], root: Path) -> Any:
    """The ``TaskSpec`` of ``payload`` on this node: the original files when
    they are here with the same contents, else copies under ``root``."""
    from stark_lsp.tasks.spec import TaskSpec

    d, files = payload["task"], payload["files"]
    task = TaskSpec.from_dict(d)
    harness_same = task.harness is None or task.harness == task.path or _same(task.harness, files.get("harness"))
    if _same(task.path, files["path"]) and harness_same:
        return task
    digest = hashlib.sha256(repr(sorted(files.items())).encode() + repr(sorted(d.items())).encode()).hexdigest()[:16]
    where = Path(root) / "tasks" / digest
    where.mkdir(parents=True, exist_ok=True)
    path = _write(where / task.path.name, files["path"])
    harness = None
    if task.harness is not None:
        if task.harness == task.path:
            harness = path
        else:
            sub = where if task.harness.name != task.path.name else where / "harness"
            sub.mkdir(exist_ok=True)
            harness = _write(sub / task.harness.name, files["harness"])
    return TaskSpec(kind=task.kind, path=path, harness=harness)


def _same(path: Path | None, text: str | None) -> bool:
    try:
        return path is not None and text is not None and path.read_text() == text
    except OSError:
        return False


def _write(path: Path, text: str) -> Path:
    if not _same(path, text):  # unchanged copies keep their mtime (the worker caches the reference by it)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return path


class EvalActor:
    """One evaluation slot: a warm ``Evaluator(workers=1)`` on one GPU (or CPU)."""

    def __init__(self, device: str = "auto", cache_dir: str | None = None, memory_fraction: float = 0.0,
                 sandbox: str = "auto"):
        drop_secrets()
        from stark_lsp.evaluate.evaluator import Evaluator

        self._evaluator = Evaluator(workers=1, device=device, cache_dir=Path(cache_dir) if cache_dir else None,
                                    memory_fraction=memory_fraction, sandbox=sandbox)
        self._tasks: dict[str, Any] = {}
        self._pgids = self._evaluator.cache_dir / "workers" / f"actor-{os.getpid()}.pgids"
        self._pgids.parent.mkdir(parents=True, exist_ok=True)
        self._watchdog = subprocess.Popen(
            [sys.executable, "-m", "stark_lsp.cluster.watchdog", str(os.getpid()), str(self._pgids)],
            env=scrubbed_env({"PYTHONPATH": str(Path(__file__).resolve().parents[2])}), start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def _note_workers(self) -> None:
        """The evaluation workers' process groups, for the watchdog (they lead their own sessions)."""
        workers = getattr(self._evaluator.pool, "_all", set())  # read only; the pool has no public list
        pgids = " ".join(str(w.proc.pid) for w in list(workers))
        tmp = self._pgids.with_suffix(".tmp")
        tmp.write_text(pgids)
        os.replace(tmp, self._pgids)

    def ready(self) -> dict[str, Any]:
        """Waits for the warm worker; its hardware, and where this actor runs."""
        info = dict(self._evaluator.hardware_info())  # raises WorkerStartError when no worker starts
        info.update(label=self._evaluator.hardware(), pid=os.getpid(), host=socket.gethostname(),
                    gpus=os.environ.get("CUDA_VISIBLE_DEVICES"))
        return info

    def evaluate(self, payload: dict[str, Any], source: str, options: dict[str, Any]) -> dict[str, Any]:
        from stark_lsp.evaluate.options import EvalOptions

        key = hashlib.sha256(repr(payload).encode()).hexdigest()
        task = self._tasks.get(key)
        if task is None:
            task = self._tasks[key] = materialize_task(payload, self._evaluator.cache_dir)
        self._note_workers()
        result = self._evaluator.evaluate(task, source, EvalOptions.from_dict(options))
        return result.to_dict()

    def environment(self) -> dict[str, str]:
        """This actor's environment (for checks that no secret arrived)."""
        raw = Path("/proc/self/environ")
        launched = raw.read_bytes().decode(errors="replace").split("\0") if raw.exists() else []
        return {"current": "\0".join(f"{k}={v}" for k, v in os.environ.items()), "launched": "\0".join(launched)}

    def close(self) -> None:
        self._evaluator.close()
        self._watchdog.kill()
        self._watchdog.wait(10)
        self._pgids.unlink(missing_ok=True)
