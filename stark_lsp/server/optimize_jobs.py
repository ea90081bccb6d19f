"""stark.optimize / stark.continueSearch / stark.stop: background searches, one per task (file).

Before a search starts:

* a task that cannot run here (a CUDA kernel, and no GPU) is not searched:
  the user's kernel is compiled once (nvcc's errors go on their lines) and
  the answer is "needs an NVIDIA GPU: nvcc compiled your kernel, but nothing
  can be run or timed here";
* a Triton or KernelBench task on a machine without a GPU runs under the CPU
  interpreter, and the user is told its figures are for checking, not speed;
* an API key given for one LLM endpoint is not sent to another without asking;
* a spent budget continues (+N attempts) instead of ending at once.

The search then runs in a worker thread (``Search.run`` blocks); the user's
kernel is checked first, and if it does not build or verify, no search
starts (``SearchConfig.require_correct_root``) and its errors go on its lines.
Progress shows phases, then "attempt k/N" with the best so far; the user can
cancel it from the progress UI or with "Stop optimizing".

A job ends in exactly one way (budget spent, stopped and why, the user's
kernel failing, or an error shown to the user); the progress bar is ended,
the tree re-read, the diagnostics republished and the job forgotten,
whatever happened. ``Job.then`` runs after that (a rename resumes the search
under the new name).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from lsprotocol import types

from stark_lsp.agents.base import AgentsUnavailable
from stark_lsp.agents.llm.failures import run_failure
from stark_lsp.agents.llm.in_flight import in_flight_for_server
from stark_lsp.evaluate.unavailable import EvaluatorUnavailable
from stark_lsp.search import EvaluatorFailed, SearchBusy, TaskBroken
from stark_lsp.search.engine import void_after_task_gone
from stark_lsp.server.backend import BackendUnavailable
from stark_lsp.server.diagnostics import CODE_NEEDS_GPU, CODE_RUN_FAILED, TaskProblem, same_text
from stark_lsp.server.documents import DocState
from stark_lsp.server.host import Host
from stark_lsp.server.labels import best_text
from stark_lsp.server.optimize_state import Inbox, Job
from stark_lsp.server.progress import PHASE_CHECK, PHASE_ROOT, PHASE_WORKER, WorkDone, final_text, progress_text
from stark_lsp.search.node import IN_FLIGHT, outcome_fields
from stark_lsp.search.node_view import node_view
from stark_lsp.speedups import CPU_NOTE as SPEED_CPU_NOTE
from stark_lsp.tasks.gpu_need import LOAD_INLINE, gpu_need
from stark_lsp.tasks.spec import TaskError

log = logging.getLogger(__name__)
_tokens = itertools.count(1)

GPU_NEEDED = "needs an NVIDIA GPU: nvcc compiled your kernel, but nothing can be run or timed here"
CPU_NOTE = f"runs on the CPU here (no GPU): Triton under its interpreter, PyTorch on the CPU ({SPEED_CPU_NOTE})"


def _disk_text(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def _token() -> str:
    return f"stark-optimize-{next(_tokens)}"


# -- starting -------------------------------------------------------------------------------


async def start_optimize(host: Host, uri: str, kernel: str, extra: int | None = None,
                         state: DocState | None = None) -> dict[str, Any]:
    """``extra``: continue the tree with that many more attempts (else the budget setting). ``state``: the
    file's, read from disk, when it is not open (a helper module's user: ``helper_search.py``)."""
    state = state or host.docs.get(uri)
    if state is None:
        return host.fail(f"{uri} is not a CUDA or Triton kernel file the server knows")
    await host.ready(state)
    if all(k.name != kernel for k in state.kernels):
        return host.fail(f"no kernel named {kernel} in {state.path.name if state.path else uri}")
    if state.task is None:
        msg = state.problem.message if state.problem else "this file is not a task"
        return host.fail(f"cannot optimize {kernel}: {msg}", types.MessageType.Warning)
    task = state.task
    running = host.jobs.running(task.task_id())
    if running is not None:
        return host.fail(f"{running.kernel} is already being optimized (one search per file): "
                         f"{progress_text(running.progress, host.cache.get(running.task_id), running.phase)[0]}",
                         types.MessageType.Info)
    await host.settings_ready()
    settings = host.settings
    gpu = host.backend.gpu_available(settings)
    if not gpu and gpu_need(task):
        return await refuse_without_gpu(host, state, kernel)
    refusal = await check_api_key(host)
    if refusal:
        return host.fail(refusal, types.MessageType.Warning)
    saved = await asyncio.to_thread(_disk_text, task.path)
    if saved is None:
        return host.fail(f"cannot read {task.path.name} from disk")
    if saved != host.document_text(uri):
        host.say(f"{task.path.name} has unsaved changes: optimizing the saved version", types.MessageType.Warning)
    done = await finished_attempts(host, state, saved)
    if extra is not None:
        budget = done + max(1, int(extra))
    elif done >= settings.budget:
        budget = done + settings.budget
        host.say(f"{kernel}: the {done} attempts of the last search are spent: continuing with {settings.budget} "
                 f"more (“Continue search”)")
    else:
        budget = settings.budget
    if not gpu:
        host.say(f"{kernel} {CPU_NOTE}", types.MessageType.Info)
    state.run_error = None
    state.checked_root = None
    job = Job(task, uri, kernel, budget, cpu=not gpu, phase=PHASE_WORKER)
    token = launch(host, job, state.store_path)
    host.publish(uri)
    return {"started": True, "task_id": job.task_id, "budget": budget, "token": token}


def launch(host: Host, job: Job, store_path: Path | None) -> str:
    """Register the job, make its progress bar and start it."""
    host.jobs.jobs[job.task_id] = job
    title = f"Optimizing {job.kernel}" + (f" ({SPEED_CPU_NOTE})" if job.cpu else "")
    token = _token()
    job.ui = WorkDone(host, token, title, on_cancel=lambda: _cancelled_from_ui(host, job))
    job.handle = asyncio.get_running_loop().create_task(_run_job(host, job, store_path))
    host.searches_changed()
    return token


def _cancelled_from_ui(host: Host, job: Job) -> None:
    host.jobs.stop(job, "cancelled")
    _report(host, job)
    host.searches_changed()


async def finished_attempts(host: Host, state: DocState, saved: str) -> int:
    """Attempts already in the tree the next search continues (0 when the
    search will start a new tree: the file or the harness changed)."""
    tree = host.cache.get(state.task_id)
    root = tree.root if tree is not None else None
    if root is None or not same_text(saved, root.source) or state.store_path is None:
        return 0
    task, store_path = state.task, state.store_path

    def harness_unchanged() -> bool:
        from stark_lsp.search.tree_store import harness_digest

        stored = host.backend.open_store(store_path).harness_digest(task.task_id())
        return stored is None or stored == harness_digest(task)

    try:
        same = await asyncio.to_thread(harness_unchanged)
    except Exception as e:  # a broken store: the search will say so
        log.info("reading the tree's harness digest: %s", e)
        same = True
    return tree.finished if same else 0


async def check_api_key(host: Host) -> str | None:
    """A key given for one endpoint goes to another only if the user says so."""
    settings, key = host.settings, host.api_key
    if settings.llm != "openai" or not key or key.url == settings.base_url:
        return None
    given = key.url or "the default endpoint (OpenAI)"
    target = settings.base_url or "the default endpoint (OpenAI)"
    answer = await host.ask(f"STARK: send the API key you gave for {given} to {target}?", ["Send it", "Don't send"])
    if answer == "Send it":
        key.rebind(settings.base_url)
        return None
    return (f"the API key was given for {given}, and stark.baseUrl is now {target}: not sent. "
            f"Set the key again (stark.setApiKey) to use it there")


async def refuse_without_gpu(host: Host, state: DocState, kernel: str) -> dict[str, Any]:
    """No search: compile the user's kernel once, then say why nothing can run here."""
    task = state.task
    if gpu_need(task) == LOAD_INLINE:
        msg = f"{kernel} needs an NVIDIA GPU (its ModelNew builds CUDA with load_inline): nothing can be run or timed here"
        state.run_error = TaskProblem(msg, code=CODE_NEEDS_GPU)
        host.publish(state.uri)
        return host.fail(msg, types.MessageType.Warning)
    ui = WorkDone(host, _token(), f"Checking {kernel}", on_cancel=None)
    try:
        await ui.begin(PHASE_CHECK)
    except Exception as e:
        log.info("progress: %s", e)
    settings = host.settings
    try:
        result = await asyncio.to_thread(host.backend.check_root, task, settings)
    except Exception as e:
        ui.end("could not compile it")
        return host.fail(f"{kernel} {GPU_NEEDED.split(':')[0]}, and its compile check could not run: {type(e).__name__}: {e}")
    node = node_view(_CheckedRoot(task.root_source() if task.path.exists() else "", result))
    state.checked_root = node
    if result.status.value == "compile_error":
        first = result.message or (node.problems[0].message if node.problems else "compile error")
        where = " (the errors are on their lines)" if any(p.line for p in node.problems) else ""
        msg = f"{kernel} needs an NVIDIA GPU, and nvcc could not compile it either: {first}{where}"
        state.run_error = None if where else TaskProblem(msg, code=CODE_NEEDS_GPU)
    else:
        msg = f"{kernel} {GPU_NEEDED}"
        state.run_error = TaskProblem(msg, code=CODE_NEEDS_GPU)
    ui.end(msg)
    host.publish(state.uri)
    return host.fail(msg, types.MessageType.Warning)


class _CheckedRoot:
    """A root node made from a check's result (no tree is written)."""

    def __init__(self, source: str, result: Any):
        self.id, self.parent_id, self.kind, self.attempt = 0, None, "root", 0
        self.status, self.speedup, self.runtime_ms, self.error = outcome_fields(result)  # as the search writes a node's
        self.source, self.result, self.summary, self.plan = source, result, "your kernel", ""
        self.duplicate_of, self.profile = None, None


# -- running ---------------------------------------------------------------------------------


async def _run_job(host: Host, job: Job, store_path: Path | None) -> None:
    loop = asyncio.get_running_loop()
    settings, api_key, backend = host.settings, host.api_key, host.backend
    try:
        await job.ui.begin(PHASE_WORKER)
    except Exception as e:  # no progress bar: carry on
        log.info("progress: %s", e)
    inbox = Inbox(loop, lambda nodes, p, notices: _updates(host, job, nodes, p, notices))
    watch = host.watch_job(job)

    def blocking() -> Any:
        store = backend.open_store(store_path)
        evaluator = backend.evaluator(settings, warm_for=job.task)
        try:
            evaluator.hardware()  # starts the worker (a no-op once it runs)
        except Exception as e:  # the search reports an evaluator that cannot start
            log.info("evaluator hardware: %s", e)
        loop.call_soon_threadsafe(_phase, host, job, PHASE_ROOT)
        team = backend.make_team(settings, api_key)
        run_settings = settings
        if getattr(team, "probe", None):  # a dead endpoint: found before the kernel is timed, as in the CLI
            for notice in team.probe():
                loop.call_soon_threadsafe(host.say, f"STARK: {notice}", types.MessageType.Info)
            fitted = in_flight_for_server(team, choose="stark.concurrency") if settings.concurrency is None else None
            if fitted:  # the server said how many requests it answers at a time: as many writing, one judged
                run_settings = replace(settings, concurrency=fitted[0])
                loop.call_soon_threadsafe(host.say, f"STARK: {fitted[1]}", types.MessageType.Info)
        job.nodes_before = max((n.id for n in store.nodes(job.task_id)), default=0)  # this run's are newer
        search = backend.make_search(job.task, store, evaluator, team, run_settings, inbox.progress, inbox.node,
                                     budget=job.budget)
        return search.run(job.cancel)

    reason, kind = "done", types.MessageType.Info
    try:
        await asyncio.to_thread(blocking)
    except Exception as e:
        reason, kind = _failure(host, job, e)
    finally:
        watch.cancel()
        inbox.drain()
        if job.files_moved_at is not None and store_path is not None:
            await asyncio.to_thread(_void_after_move, backend, store_path, job)
        host.jobs.jobs.pop(job.task_id, None)
        await _refresh(host, job)
        if any(p is not None and not Path(p).exists() for p in (job.path, job.task.harness)):
            for state in _states(host, job):  # its files went away: the open tabs say so, not its old figures
                await host.resolve(state)
        tree = host.cache.get(job.task_id)
        if reason == "done":
            reason, kind = _outcome(host, job, tree)
        end = final_text(job.progress, tree, reason)
        if job.ui is not None:
            job.ui.end(end)
        host.tree_changed(job.task_id, force=True)
        host.searches_changed()
    _tell(host, job, reason, end, kind)
    if job.then is not None:
        try:
            result = job.then()
            if asyncio.iscoroutine(result):
                await result
        except Exception as e:  # resuming elsewhere failed: say so, the tree is kept
            log.exception("after the search of %s", job.kernel)
            host.say(f"{job.kernel}: {type(e).__name__}: {e}", types.MessageType.Error)


def _void_after_move(backend: Any, store_path: Path, job: Job) -> None:
    """The search's task-gone rule (``search.engine.void_after_task_gone``) for a search whose files the
    editor saw go (``Job.files_moved_at``; the editor's searches run with ``stop_when_files_go`` off, so
    the rule is applied here, once the search stopped, with the words the user was told)."""
    try:
        void_after_task_gone(backend.open_store(store_path), job.task_id, job.files_moved_at,
                             job.stop_reason or "the task's files were deleted or moved")
    except Exception as e:  # the tree stays as it is; the search's end is reported all the same
        log.warning("marking the attempts cut short by a file move: %s", e)


def _failure(host: Host, job: Job, e: Exception) -> tuple[str, types.MessageType]:
    if isinstance(e, AgentsUnavailable):  # the LLM endpoint cannot serve the team: nothing was spent
        return f"stopped: the LLM agents are unavailable: {str(e).splitlines()[0]}", types.MessageType.Error
    if isinstance(e, TaskBroken):
        for state in _states(host, job):
            state.run_error = TaskProblem(f"the task is broken, so nothing can be judged: {e}", code=CODE_RUN_FAILED)
        return f"stopped: the task is broken: {e}", types.MessageType.Error
    if isinstance(e, (EvaluatorFailed, EvaluatorUnavailable)):  # a Ray actor set gone is one of them too;
        host.backend.drop_evaluator(host.settings)  # start a fresh one next time (none was made if its import failed)
    if job.stop_reason is not None and isinstance(e, (FileNotFoundError, TaskError)):
        return job.stop_reason, types.MessageType.Info  # the file went away under the search: already said why
    text = str(e) if isinstance(e, (BackendUnavailable, SearchBusy, EvaluatorFailed, EvaluatorUnavailable)) \
        else f"{type(e).__name__}: {e}"
    return f"stopped by an error: {text}", types.MessageType.Error


def _outcome(host: Host, job: Job, tree: Any) -> tuple[str, types.MessageType]:
    if job.stop_reason is not None:
        return job.stop_reason, types.MessageType.Info
    root = tree.root if tree is not None else None
    if root is not None and root.status == "not_run":
        return f"{job.kernel} {GPU_NEEDED}", types.MessageType.Warning
    if root is not None and not root.correct and root.status not in IN_FLIGHT:
        detail = root.error or (root.problems[0].message if root.problems else root.status)
        return (f"your kernel does not pass ({root.status.replace('_', ' ')}): {detail}; no search was started. "
                f"The error is on its line: fix it, save, and optimize again", types.MessageType.Warning)
    if tree is not None and host.settings.llm != "builtin":  # as the CLI's exit 4: the model answered, nothing usable
        failure = run_failure(n for n in tree.nodes if n.id > job.nodes_before)
        if failure is not None:
            return f"stopped: the LLM team made no candidate: {failure.line}", types.MessageType.Error
    return "done", types.MessageType.Info


def _tell(host: Host, job: Job, reason: str, end: str, kind: types.MessageType) -> None:
    tree = host.cache.get(job.task_id)
    if reason == "done":
        best = tree.best_candidate if tree is not None else None
        tail = "; apply it with “Apply best candidate”" if best is not None else ""
        host.say(f"{job.kernel}: {end}{tail}", kind)
    elif reason.startswith("your kernel") or reason.startswith("stopped"):
        host.say(f"optimizing {job.kernel}: {reason}", kind)
    else:
        host.say(f"{job.kernel}: {end}", kind)


def _states(host: Host, job: Job) -> list[DocState]:
    return [s for s in host.docs.values() if s.task_id == job.task_id]


async def _refresh(host: Host, job: Job) -> None:
    for state in _states(host, job)[:1]:
        await host.refresh_tree(state)


def _phase(host: Host, job: Job, phase: str) -> None:
    if job.phase is not None:
        job.phase = phase
        _report(host, job)


def _report(host: Host, job: Job) -> None:
    if job.ui is not None:
        msg, pct = progress_text(job.progress, host.cache.get(job.task_id), job.phase, job.cancel.is_set())
        job.ui.report(msg, pct)


def _updates(host: Host, job: Job, nodes: list[Any], progress: Any, notices: Sequence[str] = ()) -> None:
    """A batch from the search's threads, on the loop; each lasting notice is said to the user (the
    progress notification's text is overwritten by the next step, as a terminal's live line is)."""
    for notice in notices:
        host.say(f"STARK · {job.path.name}: {notice}")
    changed = False
    if nodes and job.replay:
        job.replay = False
        host.cache.forget(job.task_id)  # the search replays its tree first: the cache follows it
        changed = True
    changed = host.cache.put_nodes(job.task_id, nodes) or changed
    if any(n.parent_id is None and n.status not in IN_FLIGHT for n in nodes):
        job.phase = None  # the user's kernel is evaluated: attempts from now on
    if progress is not None:
        job.progress = progress
        if progress.attempt or progress.running:
            job.phase = None
    _report(host, job)
    if changed:
        host.tree_changed(job.task_id)


# -- stopping --------------------------------------------------------------------------------


def stop_optimize(host: Host, uri: str | None, kernel: str | None) -> dict[str, Any]:
    """Stop the search of ``uri`` however the file is named now; no uri: every search."""
    if not uri:
        jobs = host.jobs.all()
        for job in jobs:
            host.jobs.stop(job, "cancelled")
            _report(host, job)
        host.searches_changed()
        if jobs:
            host.say(f"stopping {len(jobs)} search{'es' if len(jobs) != 1 else ''} after the attempts in flight")
        return {"stopping": len(jobs)}
    state = host.docs.get(uri)
    from pygls.uris import to_fs_path

    fs = to_fs_path(uri)
    job = host.jobs.find(uri, state.task_id if state else None, Path(fs) if fs else None)
    if job is None:
        return host.fail(f"{kernel or 'this file'} is not being optimized", types.MessageType.Info)
    host.jobs.stop(job, "cancelled")
    _report(host, job)
    host.searches_changed()
    host.say(f"stopping the search for {job.kernel} after the attempts in flight")
    return {"stopping": 1}


def searches_payload(host: Host) -> dict[str, Any]:
    """The ``stark/searches`` notification: what runs, as the status bar shows it."""
    out = []
    for job in host.jobs.all():
        tree = host.cache.get(job.task_id)
        out.append({
            "uri": job.uri,
            "kernel": job.kernel,
            "task_id": job.task_id,
            "progress": progress_text(job.progress, tree, job.phase, job.cancel.is_set())[0],
            "best": best_text(tree) if tree is not None else None,
            "stopping": job.cancel.is_set(),
        })
    return {"searches": out}
