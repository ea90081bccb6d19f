"""Files that move: deletes and renames of kernels and harnesses, mid-search or not.

The editor reports them (``workspace/didDeleteFiles``, ``workspace/didRenameFiles``,
registered for ``.cu``/``.cuh``/``.py`` files and folders); a running search
also watches its own files, so a terminal ``rm`` or ``mv`` (or a client that
reports nothing) is seen within a second.

* A deleted kernel or harness stops its search at once; the tree stays in
  ``.stark/``.
* A renamed kernel (or harness, or folder) stops its search and carries the
  tree to the new name: the tree is re-keyed to the new task
  (``TreeStore.move_tree``) as soon as the new name is a task again (at once
  when the harness moved with it or is found by a ``stark-harness:`` comment;
  else when its harness is renamed too: "Rename foo.harness.py to
  bar.harness.py" is offered). If that happens within ``RESUME_S``, the search
  goes on under the new name with the same budget.
* A search that saw its file vanish before the editor said why is treated
  the same way: a rename reported a moment later still carries it.
* The attempts that failed once the files went failed because of that: they
  are cut short, not failures, by the search's own task-gone rule
  (``search/engine.py``: ``void_after_task_gone``), which ``optimize_jobs``
  applies when the search has stopped, from ``Job.files_moved_at``.

What waits meanwhile (carries, orphaned harnesses) is ``host.moves``, a
``file_moves.FileMoves``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path, to_fs_path

from stark_lsp.server.documents import resolve_task
from stark_lsp.server.file_moves import Carry
from stark_lsp.server.host import Host
from stark_lsp.server.optimize_jobs import launch
from stark_lsp.server.optimize_state import Job
from stark_lsp.server.progress import PHASE_WORKER
from stark_lsp.tasks.spec import CUDA_SUFFIXES, default_harness_path

log = logging.getLogger(__name__)
RESUME_S = 30.0  # a search stopped by a rename goes on under the new name if that is a task within this time
EVENT_LAG_S = 2.0  # how long before the editor's report a delete or rename may have happened
WATCHED_GLOB = "**/*.{cu,cuh,py}"


def _path(uri: str) -> Path | None:
    fs = to_fs_path(uri)
    return Path(fs).resolve() if fs else None


def _moved(path: Path, pairs: list[tuple[Path, Path]]) -> Path:
    """Where ``path`` is after the renames (files or folders)."""
    for old, new in pairs:
        if path == old:
            return new
        if old in path.parents:
            return new / path.relative_to(old)
    return path


def _affected(path: Path, olds: list[Path]) -> bool:
    return any(path == o or o in path.parents for o in olds)


def _is_kernel_file(p: Path) -> bool:
    return (p.suffix in CUDA_SUFFIXES or p.suffix == ".py") and not p.name.endswith(".harness.py")


def _carry(host: Host, job: Job, to: Path, resume: bool) -> None:
    host.moves.carries[to] = Carry(job.task_id, job.kernel, job.budget if resume else None,
                             time.monotonic() + RESUME_S, host.store_path_for(job.path), job.cpu)


# -- what the editor reports ------------------------------------------------------------------


def file_gone(host: Host, job: Job, path: Path, since: float) -> None:
    """A running search's file vanished (seen by its watcher; it was there at ``since``)."""
    if job.cancel.is_set():
        return
    host.jobs.stop(job, f"{path.name} is gone (deleted or moved): its search stopped; the tree is kept in .stark/",
                   files_moved_since=since)
    _carry(host, job, job.path, resume=True)  # a rename reported a moment later still carries it
    job.then = lambda: complete_carries(host)
    host.say(job.stop_reason, types.MessageType.Warning)
    host.searches_changed()


async def files_deleted(host: Host, uris: list[str]) -> None:
    paths = [p for p in map(_path, uris) if p is not None]
    for job in host.jobs.all():
        hit = next((p for p in paths if _affected(job.path, [p]) or
                    (job.task.harness and _affected(Path(job.task.harness).resolve(), [p]))), None)
        if hit is not None and not job.cancel.is_set():
            host.jobs.stop(job, f"{hit.name} was deleted: its search stopped; the tree is kept in .stark/",
                           files_moved_since=time.time() - EVENT_LAG_S)
            host.say(job.stop_reason, types.MessageType.Warning)
    carries, orphans = host.moves.carries, host.moves.orphans
    for key in [k for k in carries if _affected(k, paths)]:
        carries.pop(key, None)
    for key in [k for k in orphans if _affected(k, paths) or _affected(orphans[k], paths)]:
        orphans.pop(key, None)
    host.searches_changed()
    await _reresolve(host, paths)


async def files_renamed(host: Host, renames: list[tuple[str, str]]) -> None:
    pairs = [(o, n) for o, n in ((_path(a), _path(b)) for a, b in renames) if o is not None and n is not None]
    if not pairs:
        return
    olds = [o for o, _ in pairs]
    for job in host.jobs.all():
        paths = [job.path] + ([Path(job.task.harness).resolve()] if job.task.harness else [])
        if not any(_affected(p, olds) for p in paths):
            continue
        to = _moved(job.path, pairs)
        if job.cancel.is_set():
            continue
        what = f"{job.path.name} was renamed to {to.name}" if to != job.path else \
            f"its harness {Path(job.task.harness).name} was renamed"
        host.jobs.stop(job, f"{what}: the search moves with it", files_moved_since=time.time() - EVENT_LAG_S)
        _carry(host, job, to, resume=True)
        job.then = lambda: complete_carries(host)
    for key in list(host.moves.carries):  # carries waiting under an old name follow it
        to = _moved(key, pairs)
        if to != key:
            host.moves.carries[to] = host.moves.carries.pop(key)
    for old, new in pairs:
        if _is_kernel_file(new):
            left = default_harness_path(old)
            if not _affected(left, olds) and await asyncio.to_thread(left.exists) and \
                    not await asyncio.to_thread(default_harness_path(new).exists):
                host.moves.orphans[new] = left
    orphans = host.moves.orphans
    for key in [k for k in orphans if _affected(orphans[k], olds) or _affected(k, olds)]:
        orphans.pop(key, None)
    host.searches_changed()
    await complete_carries(host)
    await _reresolve(host, olds + [n for _, n in pairs])


async def _reresolve(host: Host, paths: list[Path]) -> None:
    """Resolve again the open documents whose task read one of ``paths`` or
    that are not a task yet (a harness may have appeared)."""
    for state in list(host.docs.values()):
        task = state.task
        used = [state.path] if state.path else []
        if task is not None and task.harness:
            used.append(Path(task.harness).resolve())
        if task is None or any(_affected(u, paths) for u in used):
            await host.resolve(state)


# -- moving trees -------------------------------------------------------------------------------


async def complete_carries(host: Host) -> None:
    """Move each waiting tree to its new name once that name is a task; resume
    its search when it was stopped by the move a moment ago."""
    for path, c in list(host.moves.carries.items()):
        if any(j.task_id == c.old_task_id for j in host.jobs.all()):
            continue  # still stopping: its end calls this again
        if host.moves.carries.get(path) is not c:
            continue  # another pass (the editor's rename event, the search's end) has it
        host.moves.carries.pop(path)  # claimed before the wait below: two passes never move one tree twice
        resolved = await asyncio.to_thread(resolve_task, path)
        task = resolved.task
        if task is None:
            host.moves.carries.setdefault(path, c)  # not a task yet (its harness is missing or unfilled): wait
            continue
        new_store = host.store_path_for(task.path)
        if new_store != c.store_path:
            host.say(f"{path.name} moved to another workspace: its tree stays in {c.store_path.parent}",
                     types.MessageType.Warning)
            continue

        def move(task: Any = task, c: Carry = c) -> str:
            store = host.backend.open_store(c.store_path)
            if not store.has_tree(c.old_task_id):
                return "none"
            if store.has_tree(task.task_id()):
                return "exists"
            store.move_tree(c.old_task_id, task)
            return "moved"

        try:
            moved = await asyncio.to_thread(move)
        except Exception as e:
            log.warning("moving the tree to %s: %s", path, e)
            host.say(f"the search tree could not follow {path.name}: {e}", types.MessageType.Warning)
            continue
        host.cache.forget(c.old_task_id)
        for state in list(host.docs.values()):
            if state.path == path:
                await host.resolve(state)
        uri = from_fs_path(str(path))
        if moved == "exists":
            host.say(f"{path.name} already has a search tree: the one of its old name stays in .stark/ as it was")
        resume = c.budget is not None and time.monotonic() <= c.deadline and moved != "exists"
        if resume and host.jobs.running(task.task_id()) is None:
            job = Job(task, uri, c.kernel, c.budget, cpu=c.cpu, phase=PHASE_WORKER)
            launch(host, job, c.store_path)
            host.say(f"the search of {c.kernel} moved to {path.name} and goes on")
        elif moved == "moved":
            host.say(f"the search tree of {c.kernel} moved to {path.name}")


async def rename_harness(host: Host, uri: str) -> dict[str, Any]:
    """Quick fix: the harness left under the kernel's old name gets the new name."""
    state = host.docs.get(uri)
    path = state.path if state else _path(uri)
    old = host.moves.orphans.get(path) if path else None
    if path is None or old is None:
        return host.fail("no harness left under an old name of this file", types.MessageType.Info)
    new = default_harness_path(path)
    if await asyncio.to_thread(new.exists):
        return host.fail(f"{new.name} already exists: not overwritten", types.MessageType.Warning)
    edit = types.WorkspaceEdit(document_changes=[types.RenameFile(
        old_uri=from_fs_path(str(old)), new_uri=from_fs_path(str(new)),
        options=types.RenameFileOptions(overwrite=False, ignore_if_exists=False))])
    applied = False
    try:
        applied = (await host.apply_edit(edit, f"STARK: rename {old.name}")).applied
    except Exception as e:  # the client cannot rename files: do it here
        log.info("workspace/applyEdit rename: %s", e)
    if not applied:
        try:
            await asyncio.to_thread(old.rename, new)
        except OSError as e:
            return host.fail(f"could not rename {old.name}: {e}")
    host.moves.orphans.pop(path, None)
    await files_renamed(host, [(from_fs_path(str(old)), from_fs_path(str(new)))])
    return {"renamed": from_fs_path(str(new))}


async def watch_job(host: Host, job: Job, every_s: float = 1.0) -> None:
    """Stop the search when its files go away without the editor saying so."""
    paths = [job.path] + ([Path(job.task.harness)] if job.task.harness else [])
    seen = time.time()  # every file was there then
    while not job.cancel.is_set():
        await asyncio.sleep(every_s)
        checked = time.time()
        for p in paths:
            if not await asyncio.to_thread(p.exists):
                # the editor's own report of a delete or rename may be on its way: give it a moment
                await asyncio.sleep(every_s)
                if not job.cancel.is_set():
                    file_gone(host, job, p, seen)
                return
        seen = checked
