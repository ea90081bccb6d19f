"""The running searches, as data: one ``Job`` per task (file), and the inbox
through which a search's threads hand their updates to the event loop.

A search thread calls back for every node change and every progress step.
Handing each one to the loop as its own callback would queue hovers and
code actions behind the bookkeeping, so updates go into an ``Inbox``: the
first update of a burst schedules one drain ``BATCH_S`` later, and the drain
takes everything that arrived meanwhile (of the progress, only the last).
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from stark_lsp.tasks.spec import TaskSpec

BATCH_S = 0.05


@dataclass
class Job:
    task: TaskSpec
    uri: str
    kernel: str
    budget: int
    cancel: threading.Event = field(default_factory=threading.Event)
    progress: Any = None  # the last stark_lsp.search.engine.Progress
    phase: str | None = None  # before the first attempt: what the search is doing
    ui: Any = None  # the WorkDone progress
    handle: asyncio.Task | None = None
    stop_reason: str | None = None  # why it is being stopped: "cancelled", "x.cu was deleted", ...
    files_moved_at: float | None = None  # when its files were deleted or moved (time.time()): verdicts after it are void
    then: Callable[[], Any] | None = None  # run once it has stopped (e.g. resume under a new name)
    replay: bool = True  # the search replays the tree's nodes first: the cache starts afresh from them
    cpu: bool = False  # timed on the CPU (Triton interpreter), not a GPU
    nodes_before: int = 0  # the tree's last node id when this run started: its own attempts come after

    task_id: str = ""  # TaskSpec.task_id() of ``task`` (it resolves paths: computed once)

    def __post_init__(self) -> None:
        self.task_id = self.task.task_id()

    @property
    def path(self) -> Path:
        return Path(self.task.path)

    def uses(self, path: Path) -> bool:
        """Whether the search reads ``path`` (its kernel file or its harness)."""
        p = Path(path).resolve()
        return p == self.path.resolve() or (self.task.harness is not None and p == Path(self.task.harness).resolve())


class OptimizeJobs:
    def __init__(self) -> None:
        self.jobs: dict[str, Job] = {}

    def running(self, task_id: str | None) -> Job | None:
        return self.jobs.get(task_id) if task_id else None

    def all(self) -> list[Job]:
        return list(self.jobs.values())

    def for_document(self, state: Any) -> Job | None:
        """The search running for a document (a ``DocState``), as its hover and code actions show it: its
        task's, or, while the file is no task (a syntax error saved mid-search), the one started from it, so
        that it can still be seen and stopped."""
        return self.running(state.task_id) or (self.find(state.uri) if state.task is None else None)

    def find(self, uri: str | None, task_id: str | None = None, path: Path | None = None) -> Job | None:
        """The job of a document, however it is named now: by task id, by its
        document's uri, or by a file it reads."""
        job = self.running(task_id)
        if job is not None:
            return job
        for j in self.jobs.values():
            if uri is not None and j.uri == uri:
                return j
        if path is not None:
            for j in self.jobs.values():
                if j.uses(path):
                    return j
        return None

    def using(self, path: Path) -> list[Job]:
        return [j for j in self.jobs.values() if j.uses(path)]

    def stop(self, job: Job, reason: str, files_moved_since: float | None = None) -> None:
        """``files_moved_since``: the search's files were deleted or moved, at the
        latest then (time.time()); verdicts after that are void."""
        if job.stop_reason is None:
            job.stop_reason = reason
        if files_moved_since is not None and job.files_moved_at is None:
            job.files_moved_at = files_moved_since
        job.cancel.set()

    def stop_all(self, reason: str = "the server is shutting down") -> None:
        for job in self.jobs.values():
            self.stop(job, reason)

    async def wait(self, job: Job, timeout: float) -> None:
        if job.handle is not None and not job.handle.done():
            await asyncio.wait([job.handle], timeout=timeout)

    async def wait_all(self, timeout: float) -> None:
        handles = [j.handle for j in self.jobs.values() if j.handle is not None]
        if handles:
            await asyncio.wait(handles, timeout=timeout)


class Inbox:
    """Thread-safe: ``node`` and ``progress`` from any thread; ``drain(nodes,
    progress, notices)`` runs on the loop, at most every ``BATCH_S``: the nodes that
    arrived, the last progress, and every lasting notice (``Progress.lasting``: the
    token budget spent, the re-timing's result...), which a later progress must not
    overwrite."""

    def __init__(self, loop: asyncio.AbstractEventLoop, drain: Callable[[list[Any], Any, list[str]], None],
                 batch_s: float = BATCH_S):
        self.loop = loop
        self._drain_to = drain
        self.batch_s = batch_s
        self._lock = threading.Lock()
        self._nodes: list[Any] = []
        self._progress: Any = None
        self._notices: list[str] = []
        self._scheduled = False

    def node(self, n: Any) -> None:
        self._put(n, None)

    def progress(self, p: Any) -> None:
        self._put(None, p)

    def _put(self, node: Any, progress: Any) -> None:
        with self._lock:
            if node is not None:
                self._nodes.append(node)
            if progress is not None:
                self._progress = progress
                if getattr(progress, "lasting", False) and getattr(progress, "message", ""):
                    self._notices.append(progress.message)
            if self._scheduled:
                return
            self._scheduled = True
        self.loop.call_soon_threadsafe(self._later)

    def _later(self) -> None:
        self.loop.call_later(self.batch_s, self.drain)

    def drain(self) -> None:
        """Hand over what arrived (also called once the search has ended)."""
        with self._lock:
            nodes, progress, notices = self._nodes, self._progress, self._notices
            self._nodes, self._progress, self._notices, self._scheduled = [], None, [], False
        if nodes or progress is not None:
            self._drain_to(nodes, progress, notices)
