"""stark.optimize / stark.stop: background searches, one per task (file).

A search is blocking (``Search.run``), so it runs in a worker thread; the
event loop keeps answering hovers and code actions. The search calls back
from its threads; every callback hops to the loop with
``loop.call_soon_threadsafe`` before touching the server or the client.

A job ends in exactly one way (budget spent, cancelled, or an error shown to
the user); the progress bar is ended, the tree re-read, the diagnostics
republished and the job forgotten, whatever happened.

Several kernels at once: each file's search is its own job. The search works
on the whole (saved) file, so the kernels of one file share one job.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from stark_lsp.server.progress import WorkDone, final_text, progress_text

if TYPE_CHECKING:
    from stark_lsp.server.server import StarkServer

log = logging.getLogger(__name__)
_tokens = itertools.count(1)


@dataclass
class Job:
    task_id: str
    uri: str
    kernel: str
    cancel: threading.Event = field(default_factory=threading.Event)
    progress: Any = None  # the last stark_lsp.search.engine.Progress
    ui: WorkDone | None = None
    task: asyncio.Task | None = None

    def line(self) -> str:
        return progress_text(self.progress)[0] if self.progress is not None else "starting"


class OptimizeJobs:
    def __init__(self) -> None:
        self.jobs: dict[str, Job] = {}

    def running(self, task_id: str | None) -> Job | None:
        return self.jobs.get(task_id) if task_id else None

    def stop(self, task_id: str | None) -> bool:
        job = self.running(task_id)
        if job is None:
            return False
        job.cancel.set()
        return True

    def stop_all(self) -> None:
        for job in self.jobs.values():
            job.cancel.set()

    async def wait_all(self, timeout: float) -> None:
        tasks = [j.task for j in self.jobs.values() if j.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)


def _disk_text(path: Any) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


async def start_optimize(ls: "StarkServer", uri: str, kernel: str) -> dict[str, Any]:
    state = ls.docs.get(uri)
    if state is None:
        return ls.fail(f"{uri} is not a CUDA or Triton kernel file the server knows")
    await ls.ready(state)
    if all(k.name != kernel for k in state.kernels):
        return ls.fail(f"no kernel named {kernel} in {state.path.name if state.path else uri}")
    if state.task is None:
        msg = state.problem.message if state.problem else "this file is not a task"
        return ls.fail(f"cannot optimize {kernel}: {msg}", types.MessageType.Warning)
    task_id = state.task_id
    running = ls.jobs.running(task_id)
    if running is not None:
        return ls.fail(f"{running.kernel} is already being optimized (one search per file): {running.line()}",
                       types.MessageType.Info)
    await ls.settings_ready()
    saved = await asyncio.to_thread(_disk_text, state.task.path)
    doc = ls.workspace.get_text_document(uri)
    if saved is not None and saved != doc.source:
        ls.say(f"{state.task.path.name} has unsaved changes: optimizing the saved version", types.MessageType.Warning)

    job = Job(task_id, uri, kernel)
    ls.jobs.jobs[task_id] = job
    job.ui = WorkDone(ls, f"stark-optimize-{next(_tokens)}", f"Optimizing {kernel}", on_cancel=job.cancel.set)
    job.task = asyncio.get_running_loop().create_task(_run_job(ls, state, job))
    return {"started": True, "task_id": task_id}


async def _run_job(ls: "StarkServer", state: Any, job: Job) -> None:
    loop = asyncio.get_running_loop()
    settings, api_key, backend = ls.settings, ls.api_key, ls.backend
    try:
        await job.ui.begin()
    except Exception as e:  # no progress bar: carry on
        log.info("progress: %s", e)

    def on_progress(p: Any) -> None:
        loop.call_soon_threadsafe(_progress, ls, job, p)

    def on_node(n: Any) -> None:
        loop.call_soon_threadsafe(_node, ls, job, n)

    def blocking() -> Any:
        store = backend.open_store(state.store_path)
        evaluator = backend.evaluator(settings)
        team = backend.make_team(settings, api_key)
        search = backend.make_search(state.task, store, evaluator, team, settings, on_progress, on_node)
        return search.run(job.cancel)

    reason = "done"
    try:
        await asyncio.to_thread(blocking)
        reason = "cancelled" if job.cancel.is_set() else "done"
    except Exception as e:
        reason = "stopped by an error"
        name = type(e).__name__
        if "Evaluator" in name or "evaluator" in str(e):
            backend.drop_evaluator(settings)  # start a fresh one next time
        ls.say(f"optimizing {job.kernel} stopped: {e if name in ('BackendUnavailable', 'SearchBusy') else f'{name}: {e}'}",
               types.MessageType.Error)
    finally:
        ls.jobs.jobs.pop(job.task_id, None)
        end = final_text(job.progress, reason)
        if job.ui is not None:
            job.ui.end(end)
        await ls.refresh_tree(state)
        ls.tree_changed(job.task_id, force=True)
    if reason == "done":
        tree = ls.cache.get(job.task_id)
        best = tree.best_candidate if tree else None
        if best is not None:
            ls.say(f"{job.kernel}: {end}; best candidate #{best.id} ({best.speedup:.2f}×) is ready to apply")
        else:
            ls.say(f"{job.kernel}: {end}")


def _progress(ls: "StarkServer", job: Job, p: Any) -> None:
    job.progress = p
    if job.ui is not None:
        msg, pct = progress_text(p)
        job.ui.report(msg, pct)


def _node(ls: "StarkServer", job: Job, node: Any) -> None:
    if ls.cache.put_node(job.task_id, node):
        ls.tree_changed(job.task_id)


def stop_optimize(ls: "StarkServer", uri: str, kernel: str) -> dict[str, Any]:
    state = ls.docs.get(uri)
    task_id = state.task_id if state else None
    if not ls.jobs.stop(task_id):
        return ls.fail(f"{kernel} is not being optimized", types.MessageType.Info)
    ls.say(f"stopping the search for {kernel} after the attempts in flight")
    return {"stopping": True}
