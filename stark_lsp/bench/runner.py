"""Run a bench schedule: one evaluator and one team for the whole bench, a
fresh tree per run, and a record after every run.

With one evaluator per GPU the tasks are shared out (``run``). Where several
evaluators share a GPU (``--jobs``) and the bench knows the GPU's memory, each
task is admitted to its GPU by its estimated memory (``memory_admission.py``):
one that does not fit beside the tasks running there waits, and no later task
starts on that GPU meanwhile. A run that
fails (the evaluator gives up, an agent crashes the search, the
store breaks) becomes a record with ``outcome == "error"``; the bench goes on.
``cancel`` (Ctrl-C) stops the run in flight at its next attempt boundary and
starts no other; that run is recorded as ``cancelled``.
"""

from __future__ import annotations

import re
import shutil
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from stark_lsp.evaluate import protocol as evaluator_protocol
from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.search.engine import Progress, Search, SearchConfig
from stark_lsp.search.tree_store import TreeStore
from stark_lsp.tasks.spec import TaskSpec

from .call_size import CallSize, io_call_size, read_call_size
from .memory_admission import MemoryGate, Ticket, budget_gib, estimate_gib
from .plan import BenchConfig, RunKey, schedule
from .record import CANCELLED, DONE, ERROR, RunRecord, build_record

ProgressFn = Callable[[int, int, RunKey, Progress], None]  # run index, runs, run, search progress
StartFn = Callable[[int, int, RunKey], None]
RecordFn = Callable[[RunRecord, int, int], None]  # record, run index, runs
MemoryWaitFn = Callable[[int, int, RunKey, float, float, float], None]  # its first run; need, free, budget (GiB)


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "task"


def tree_dir(out_dir: Path, task_name: str, key: RunKey) -> Path:
    return out_dir / "trees" / safe_name(task_name) / f"{key.policy}-r{key.repeat}"


def eval_options(config: BenchConfig) -> EvalOptions:
    return EvalOptions(compile_baseline=config.compile_baseline, trials=config.trials)


class BenchRunner:
    def __init__(self, tasks: list[TaskSpec], names: list[str], config: BenchConfig,
                 evaluator: evaluator_protocol.Evaluator | list[evaluator_protocol.Evaluator], team: Any,
                 out_dir: Path, on_record: RecordFn | None = None, on_progress: ProgressFn | None = None,
                 on_start: StartFn | None = None, cancel: threading.Event | None = None,
                 options: EvalOptions | None = None, gpu_memory_gib: float | None = None,
                 on_memory_wait: MemoryWaitFn | None = None):
        """``gpu_memory_gib``: each GPU's total memory, where the evaluators run on GPUs: the jobs sharing
        a GPU then share it by their tasks' estimates (None: no admission, as on the CPU)."""
        self.tasks, self.names, self.config = tasks, names, config
        self.evaluators = list(evaluator) if isinstance(evaluator, (list, tuple)) else [evaluator]
        self.evaluator, self.team = self.evaluators[0], team
        self.out_dir = Path(out_dir)
        self.on_record, self.on_progress, self.on_start = on_record, on_progress, on_start
        self.on_memory_wait = on_memory_wait
        self.cancel = cancel or threading.Event()
        self.options = options or eval_options(config)
        self._task_options: dict[int, tuple[EvalOptions, str]] = {}
        self.stopped_early = False  # run() reached its deadline with runs left
        self.gates = self._memory_gates(gpu_memory_gib)  # GPU -> its gate, where jobs share a GPU
        self.memory_need: dict[int, float] = {}  # task index -> its estimate, GiB (measured once known)

    def run(self, done: set[tuple[str, str, int]] | None = None, deadline: float | None = None) -> list[RunRecord]:
        """Every scheduled run not in ``done`` (task key, policy, repeat); their records. No run
        starts after ``deadline`` (``time.monotonic()``): a batch of a resumable bench.

        With several evaluators (one per GPU), each takes the next task and
        runs all of that task's runs on its GPU, so every comparison between
        policies of a task is still made on one device in one process."""
        keys = schedule(self.tasks, self.config)
        todo = [(i, k) for i, k in enumerate(keys)
                if not (done and (self.tasks[k.task].task_id(), k.policy, k.repeat) in done)]
        records: list[RunRecord] = []
        lock = threading.Lock()
        groups: dict[int, list[tuple[int, RunKey]]] = {}
        for i, k in todo:
            groups.setdefault(k.task, []).append((i, k))
        queue = list(groups.values())
        if self.gates:  # every task's estimate read before any lane takes the lock (a task file is read once)
            for group in queue:
                self._need(group[0][1].task)

        def stop() -> bool:
            return self.cancel.is_set() or deadline is not None and time.monotonic() >= deadline

        def lane(evaluator: evaluator_protocol.Evaluator, gpu: int | None) -> None:
            gate = self.gates.get(evaluator_protocol.gpu_index(evaluator))
            while not self.cancel.is_set():
                if gate is not None and not gate.wait_for_turn(stop):  # another task waits for this GPU's memory
                    self.stopped_early = self.stopped_early or not self.cancel.is_set()
                    return
                ticket = None
                with lock:
                    if not queue:
                        return
                    if gate is not None and gate.waiting():
                        continue  # another job of this GPU took a task that waits: its turn first
                    group = queue.pop(0)
                    if gate is not None:
                        task = group[0][1].task
                        ticket = gate.request(self._need(task), self.names[task])
                try:  # the ticket is given back however this ends, a wait that raised included
                    if gate is not None and ticket is not None and \
                            not self._admitted(gate, ticket, group, len(keys), stop):
                        self.stopped_early = self.stopped_early or not self.cancel.is_set()
                        return
                    ev = evaluator
                    if gate is not None and ticket is not None:
                        ev = _SizeWatch(evaluator, lambda size, g=gate, t=ticket, k=group[0][1].task:
                                        self._measured(g, t, k, size))
                    for i, key in group:
                        if stop():
                            self.stopped_early = self.stopped_early or not self.cancel.is_set()
                            return
                        if self.on_start:
                            with lock:
                                self.on_start(i, len(keys), key)
                        rec = self._guarded_run(key, i, len(keys), ev)
                        rec.gpu = gpu
                        with lock:
                            records.append(rec)
                            if self.on_record:
                                self.on_record(rec, i, len(keys))
                finally:
                    if gate is not None:
                        gate.release(ticket)

        if len(self.evaluators) == 1:
            lane(self.evaluators[0], evaluator_protocol.gpu_index(self.evaluators[0]))
        else:
            threads = [threading.Thread(target=lane, args=(ev, evaluator_protocol.gpu_index(ev, n)), name=f"bench-gpu{n}", daemon=True)
                       for n, ev in enumerate(self.evaluators)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        return records

    # memory admission -------------------------------------------------------------------------------
    def _memory_gates(self, gpu_memory_gib: float | None) -> dict[Any, MemoryGate]:
        """One gate per GPU that several evaluators (jobs) share; none without the GPUs' memory."""
        if not gpu_memory_gib or gpu_memory_gib <= 0:
            return {}
        jobs: dict[Any, int] = {}
        for ev in self.evaluators:
            gpu = evaluator_protocol.gpu_index(ev)
            jobs[gpu] = jobs.get(gpu, 0) + 1
        return {gpu: MemoryGate(budget_gib(gpu_memory_gib)) for gpu, n in jobs.items() if n > 1}

    def _need(self, task: int) -> float:
        """The task's estimate (GiB): from its files until an evaluation measured it."""
        if task not in self.memory_need:
            try:
                size = read_call_size(self.tasks[task])
            except Exception:  # noqa: BLE001 - an estimate, never a failure: the floor then
                size = None
            self.memory_need[task] = estimate_gib(size, self.config.workers)
        return self.memory_need[task]

    def _admitted(self, gate: MemoryGate, ticket: Ticket, group: list[tuple[int, RunKey]], total: int,
                  stop: Callable[[], bool]) -> bool:
        first, key = group[0]
        told = None
        if self.on_memory_wait is not None:
            def told(need: float, free: float, budget: float) -> None:
                self.on_memory_wait(first, total, key, need, free, budget)
        return gate.wait(ticket, stop, told)

    def _measured(self, gate: MemoryGate, ticket: Ticket, task: int, size: CallSize) -> None:
        """An evaluation reported the task's inputs and outputs: its share is resized to the exact estimate."""
        self.memory_need[task] = estimate_gib(size, self.config.workers)
        gate.resize(ticket, self.memory_need[task])

    def _guarded_run(self, key: RunKey, index: int, total: int, evaluator: Any) -> RunRecord:
        try:
            return self.run_one(key, index, total, evaluator)
        except Exception as e:  # noqa: BLE001 - even a bug here must not end the bench
            task = self.tasks[key.task]
            return RunRecord(task=self.names[key.task], task_key=task.task_id(), kind=task.kind, policy=key.policy,
                             repeat=key.repeat, seed=key.seed, budget=self.config.budget, outcome=ERROR,
                             error=f"{type(e).__name__}: {e}")

    def options_for(self, index: int, evaluator: Any = None) -> tuple[EvalOptions, str]:
        """The task's evaluation options, and a note. With the torch.compile baseline on a GPU, the
        root is first evaluated once: if timing the compiled reference breaks the evaluation, the
        task goes on without the baseline (the note says why) rather than failing every candidate."""
        evaluator = evaluator or self.evaluator
        if index not in self._task_options:
            opts, note = self.options, ""
            if opts.compile_baseline and _is_gpu(evaluator):
                task = self.tasks[index]
                with_baseline = _evaluator_error(evaluator, task, replace(opts, trials=1))
                if with_baseline and not _evaluator_error(evaluator, task, replace(opts, trials=1, compile_baseline=False)):
                    opts, note = replace(opts, compile_baseline=False), f"no torch.compile baseline: {with_baseline}"
            self._task_options[index] = (opts, note)
        return self._task_options[index]

    def run_one(self, key: RunKey, index: int = 0, total: int = 1, evaluator: Any = None) -> RunRecord:
        evaluator = evaluator or self.evaluator
        task, name = self.tasks[key.task], self.names[key.task]
        options, note = self.options_for(key.task, evaluator)
        cfg = SearchConfig(budget=self.config.budget, policy=key.policy, seed=key.seed,
                           concurrency=self.config.concurrency, wall_time_s=self.config.wall_time_s,
                           eval_options=options, retime_top=self.config.retime_top,
                           retime_rounds=self.config.retime_rounds, screen=self.config.screen,
                           context_tokens=self.config.context_tokens, compiled_seed=options.compile_baseline,
                           token_budget=self.config.token_budget)
        directory = tree_dir(self.out_dir, name, key)
        if directory.exists():
            shutil.rmtree(directory)  # a run always starts from a fresh tree
        directory.mkdir(parents=True)
        outcome, error = DONE, ""
        nodes: list[Any] = []
        t0 = time.perf_counter()
        store = None
        try:
            store = TreeStore.open(directory / "tree.sqlite")
            progress = (lambda p: self.on_progress(index, total, key, p)) if self.on_progress else None
            Search(task, store, evaluator, self.team, cfg, on_progress=progress).run(self.cancel)
        except Exception as e:  # noqa: BLE001 - one run's failure never ends the bench
            outcome, error = ERROR, f"{type(e).__name__}: {e}"
        wall = time.perf_counter() - t0
        if outcome == DONE and self.cancel.is_set():
            outcome = CANCELLED
        try:
            if store is not None:
                nodes = store.nodes(task.task_id())
        except Exception as e:  # noqa: BLE001
            outcome, error = ERROR, error or f"cannot read the tree: {type(e).__name__}: {e}"
        finally:
            if store is not None:
                store.close()
        rec = build_record(nodes, task=name, task_key=task.task_id(), kind=task.kind, policy=key.policy,
                           repeat=key.repeat, seed=key.seed, budget=self.config.budget, wall_s=wall,
                           outcome=outcome, error=error)
        rec.note = note
        return rec


class _SizeWatch:
    """The evaluator a task's runs use while the task holds GPU memory: the first evaluation that reports
    the task's inputs and outputs (``EvalResult.io``) tells ``on_size``. Everything else is the evaluator's."""

    def __init__(self, inner: Any, on_size: Callable[[CallSize], None]):
        self._inner, self._on_size, self._told = inner, on_size, False

    def evaluate(self, task: TaskSpec, source: str, options: EvalOptions | None = None) -> Any:
        result = self._inner.evaluate(task, source, options)
        if not self._told:
            size = io_call_size(getattr(result, "io", None))
            if size is not None:
                self._told = True
                self._on_size(size)
        return result

    def hardware(self) -> str:
        return self._inner.hardware()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _is_gpu(evaluator: Any) -> bool:
    return evaluator_protocol.is_gpu(evaluator)


def _evaluator_error(evaluator: Any, task: TaskSpec, options: EvalOptions) -> str:
    """The evaluator's own error on the task's root under these options, or ''."""
    try:
        r = evaluator.evaluate(task, task.root_source(), options)
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {e}"
    return r.message if r.status.value == "runtime_error" and r.message.startswith("evaluator error") else ""
