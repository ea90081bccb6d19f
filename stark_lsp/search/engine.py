"""The search loop: select a node, call the agents, evaluate, record, repeat.

The decisions (``policies``, ``context``) are pure; this module adds the
threads, the store and the evaluator. Selection and node creation happen on
the thread that called ``run``; the agents and the evaluator run on a pool of
``concurrency`` workers, so agent calls overlap with evaluations. With
``profile_top`` > 0 one more thread profiles (ncu) the leading correct nodes,
one at a time, and stores the reports on the nodes; the Plan agent sees them.
"""

from __future__ import annotations

import random
import threading
from pathlib import Path
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from concurrent.futures import TimeoutError as FuturesTimeout
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any, Callable, Iterator

from stark_lsp.agents.base import AgentCancelled, AgentError, AgentsUnavailable, Exchange, NothingNew, Team
from stark_lsp.evaluate import phases, protocol as evaluator_protocol
from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.evaluate.out_of_memory import task_error_fix
from stark_lsp.search.pace import time_left
from stark_lsp.evaluate.result import EvalResult, Status
from stark_lsp.tasks.spec import TaskSpec

from stark_lsp.tasks.describe import describe_task

from .context import build_context
from .given_plan import GivenPlan
from stark_lsp.source_digest import source_digest
from .hardware_card import hardware_facts
from .lock import tree_lock
from .node import ABANDONED, AGENT_ERROR, DEBUG, PLAN_CODE, ROOT, RUNNING, Node, had_nothing_new, outcome_fields
from .policies import DEBUG as ROUTE_DEBUG, Selection, leaderboard, make_policy
from .retime import retime_options, screen_options, summarize
from .root_failure import MACHINE, unjudgeable
from .usage import budget_spent
from .tree_store import TreeStore, source_hash
from .tree_view import TreeView


RACE_RETRIES = 3  # agents asked again when a concurrent attempt made the same source meanwhile


@dataclass
class SearchConfig:
    budget: int = 30  # attempts: plan+code, or one debug
    policy: str = "stark"
    epsilon: float = 0.35
    n_root: int = 5
    n_child: int = 3
    leaderboard: int = 5
    concurrency: int = 2
    wall_time_s: float | None = None
    seed: int = 0
    context_tokens: int = 12000
    eval_options: EvalOptions = field(default_factory=EvalOptions)
    # a candidate clearly slower than the best so far is timed only until that is clear (``EvalOptions.race_ms``):
    # its figure stays the judge's, known less precisely; the best and the re-timing are timed in full
    race: bool = True
    # while the search runs, a candidate (not the root) is timed to ``retime.SCREEN_NOISE`` within
    # ``retime.SCREEN_BUDGET_S``: enough to rank it, as its top candidates are re-timed in full at the end
    # (``retime_top``); without re-timing every candidate is timed in full
    screen: bool = True
    profile_top: int = 0  # profile (ncu) the top-K correct nodes in the background; 0: off
    profile_exclusive: bool = True  # no evaluation runs while ncu does (its replays would disturb the timing)
    retime_top: int = 3  # when the search ends, re-time its top K correct candidates ... (0: off)
    retime_rounds: int = 3  # ... this many times each, in turn with the root (search/retime.py)
    require_correct_root: bool = False  # the user's kernel fails to build or verify: stop, no search (the editor)
    # the task's files vanish mid-search: stop it at once (the CLI); the editor watches them itself, waiting a
    # moment for the editor's own report of a rename, which carries the search to the new name
    stop_when_files_go: bool = True
    # a KernelBench model on a GPU: torch.compile of it is timed as a baseline for every candidate, and the
    # root's evaluation brings back what Inductor wrote for it, which the built-in team starts from
    # (``agents/builtin/inductor_seed.py``)
    compiled_seed: bool = True
    # the LLM team's tokens (prompt + completion, ``usage.py``, the whole tree's): no attempt is started once
    # they reach it, those in flight finish (``--token-budget``); None: no limit
    token_budget: int | None = None


@dataclass
class Progress:
    task_id: str
    attempt: int  # finished attempts
    budget: int
    best_speedup: float | None  # the best against eager (node.eager: re-timed first, speedups.vs_eager)
    best_node_id: int | None
    failures: int  # finished attempts that spent budget and failed (agent errors included)
    correct: int  # finished attempts that are correct
    running: int  # attempts in flight
    done: bool
    message: str = ""
    free: int = 0  # finished attempts that spent no budget: an agent's "nothing new", a duplicate source
    root_speedup: float | None = None  # the user's kernel against eager
    best_vs_yours: float | None = None  # the best against the user's kernel (TreeView.gain)
    best_is_root: bool = False  # nothing has beaten the user's kernel yet
    best_is_reference: bool = False  # ... and that kernel is the KernelBench reference itself
    cpu: bool = False  # the best's timings come from the CPU (interpreter), not a GPU
    # what the evaluations in flight are doing (evaluate/phases.py), in the order an evaluation goes:
    # (("building", 1), ("queued", 2), ...); words for a person, never a figure
    doing: tuple[tuple[str, int], ...] = ()
    lasting: bool = False  # ``message`` is a notice to keep (a terminal prints it on its own line), not a passing state
    time_left_s: float | None = None  # at this run's pace (``pace.time_left``); None until it can be told


# a stopped attempt's note: its budget slot is redone by the next run of the search, which then says so
REDONE_LATER = ": redone when the search continues"
REDONE_NOW = ": its attempt was redone when the search continued"


class EvaluatorFailed(RuntimeError):
    """The evaluator itself raised (not a bad candidate: a broken evaluator).
    The search stops; the node is abandoned and redone on resume."""


class TaskBroken(EvaluatorFailed):
    """The task itself is broken (its harness or reference fails): no candidate
    can be judged, so the search stops with the evaluator's message."""


# -- the task-gone rule ----------------------------------------------------------------------------------
# One rule, two ways of knowing that the files went: an evaluation that failed once the task's file or harness
# was deleted or moved failed because of that, not on the candidate's merits: the attempt is cut short (abandoned,
# redone if the task comes back), never recorded as a failed candidate. The search applies it as it evaluates when
# it watches the files itself (``Search._task_gone``, the CLI); a caller that watches them (the editor:
# ``stop_when_files_go`` off, server/file_events.py) applies it once the search stopped (``void_after_task_gone``).


def gone_file(task: TaskSpec) -> Path | None:
    """The task's file or harness that is not on disk any more (deleted or moved), if one is."""
    return next((Path(p) for p in (task.path, task.harness) if p is not None and not Path(p).exists()), None)


def cut_short(why: str) -> dict[str, str]:
    """What the task-gone rule makes of an attempt (``TreeStore.update_node``'s fields): abandoned, so that it
    is redone when the search continues, with why (``why``: the file gone, or the editor's own words)."""
    return {"status": ABANDONED, "error": f"cut short: {why}"}


def void_after_task_gone(store: TreeStore, task_id: str, gone_since: float, why: str) -> list[int]:
    """The task-gone rule applied after the fact, by a caller that saw the task's files go while a search
    of ``task_id`` ran (``gone_since``: time.time(), at the latest when they went): every evaluation that
    failed since then (``Node.failed``, the user's kernel included, as ``Search._task_gone`` cuts it short
    too) is cut short. Verdicts that passed, agent errors and attempts already abandoned stay as they are.
    Call it once the search has stopped. Returns the ids of the nodes cut short."""
    ids = [n.id for n in store.nodes(task_id) if n.failed and n.updated >= gone_since]
    for node_id in ids:
        store.update_node(node_id, **cut_short(why))
    return ids


class GpuGate:
    """Evaluations share the GPU; a profiler takes it alone. A waiting
    profiler keeps new evaluations out until it has had its turn."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            while self._exclusive or self._waiting:
                self._cond.wait()
            self._shared += 1
        try:
            yield
        finally:
            with self._cond:
                self._shared -= 1
                self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._waiting += 1
            while self._exclusive or self._shared:
                self._cond.wait()
            self._waiting -= 1
            self._exclusive = True
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()


class AnyEvent:
    """Set when any of the events is set (read-only)."""

    def __init__(self, *events: threading.Event):
        self.events = events

    def is_set(self) -> bool:
        return any(e.is_set() for e in self.events)


def default_profiler(evaluator: Any) -> tuple[Any, str]:
    """(an NcuProfiler sharing the evaluator's cache and CUDA builder, '') or
    (None, why profiling cannot work here)."""
    from stark_lsp.evaluate.evaluator import gpu_present
    from stark_lsp.profile.ncu import NcuProfiler, find_ncu

    if find_ncu() is None:
        return None, "ncu not found (PATH, $NCU, /opt/nvidia/nsight-compute/*/ncu, /usr/local/cuda/bin/ncu)"
    if not gpu_present():
        return None, "no GPU on this machine"
    return NcuProfiler(**evaluator_protocol.profiler_parts(evaluator)), ""


def _default_markers() -> ModuleType:
    from stark_lsp.markers import syntax

    return syntax


def attempt_seed(seed: int, attempt: int) -> int:
    return seed * 1_000_003 + attempt


def agent_error_text(stage: str, error: BaseException) -> str:
    """A node's error for an agent that failed at ``stage``: ``plan agent: ...``. An LLM agent
    names itself already (``plan agent (model): ...``), so its message is kept as it is: not twice."""
    said = str(error)
    return said if said.startswith(f"{stage} agent") else f"{stage} agent: {said}"


class Search:
    def __init__(
        self,
        task: TaskSpec,
        store: TreeStore,
        evaluator: evaluator_protocol.Evaluator,
        team: Team,
        config: SearchConfig | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        on_node: Callable[[Node], None] | None = None,
        markers: ModuleType | None = None,
        profiler: Any = None,
    ):
        self.task = task
        self.task_id = task.task_id()
        self.store = store
        self.evaluator = evaluator
        self.team = team
        self.config = config or SearchConfig()
        if self.config.compiled_seed and task.kind == "kernelbench" and not self.config.eval_options.compile_baseline:
            # one baseline setting for the whole search (the root's, every candidate's, the re-timing's)
            self.config = replace(self.config, eval_options=replace(self.config.eval_options, compile_baseline=True))
        self.on_progress = on_progress
        self.on_node = on_node  # called from worker threads too
        self.markers = markers or _default_markers()
        self.policy = make_policy(self.config.policy, epsilon=self.config.epsilon,
                                  n_root=self.config.n_root, n_child=self.config.n_child)
        self._nodes: dict[int, Node] = {}
        self._lock = threading.Lock()
        self._doing: dict[int, str] = {}  # node id -> what its evaluation in flight is doing (phases.py)
        self._hardware = ""
        self._hardware_info: dict[str, Any] = {}
        self._facts: Any = None  # tasks.describe.TaskFacts, read once per run
        self._cancel = threading.Event()
        self._stop_was = ""  # why the search stopped itself ("cancelled", "wall time reached"), once it did
        self.retiming = False  # the search has ended and its leaders are being re-timed (what a cancel cuts)
        self._pace: tuple[float, int] | None = None  # this run's attempts: when they began, how many were spent before
        self._abort = threading.Event()  # the search stops on an error: agents waiting for answers give up
        self._evaluating: dict[str, threading.Event] = {}  # source hash -> set when its verdict is stored
        self._claim_lock = threading.Lock()  # a candidate source is checked and recorded as one step
        # background profiling (config.profile_top > 0): ``profiler.profile(task, source, cancel)``
        # returns a ProfileReport (stark_lsp.profile); None: an NcuProfiler made in run()
        self.profiler = profiler
        self._profiling = False
        self._gate = GpuGate()
        self._prof_pool: ThreadPoolExecutor | None = None
        self._prof_future: Future | None = None
        self._prof_tried: set[int] = set()
        self._prof_stop = threading.Event()  # stops the profile in flight (the search stopped)

    # -- bookkeeping -------------------------------------------------------
    def _record(self, node: Node) -> Node:
        with self._lock:
            self._nodes[node.id] = node
        if self.on_node:
            self.on_node(node)
        return node

    def _update(self, node_id: int, **fields: Any) -> Node:
        return self._record(self.store.update_node(node_id, **fields))

    def _snapshot(self) -> list[Node]:
        with self._lock:
            return sorted(self._nodes.values(), key=lambda n: n.id)

    def _attempts(self) -> list[Node]:
        return [n for n in self._snapshot() if n.kind != ROOT and n.status != ABANDONED]

    def _finished(self) -> int:
        """Attempts that spent the budget (``Node.spends_budget``)."""
        return sum(1 for n in self._attempts() if n.spends_budget)

    def _free_left(self) -> bool:
        """Free attempts (nothing new, duplicates) are capped at one budget more, so that an agent
        that keeps finding nothing new cannot keep the search going."""
        free = sum(1 for n in self._attempts() if n.completed and not n.spends_budget)
        return free < self.config.budget

    def _nothing_new_reason(self) -> str:
        """The reason of the latest "nothing new to try" from the root, if the root has no other child."""
        nodes = self._snapshot()
        root = next((n for n in nodes if n.parent_id is None), None)
        kids = [n for n in nodes if root is not None and n.parent_id == root.id and n.status != ABANDONED]
        if kids and all(had_nothing_new(n) for n in kids):
            return kids[-1].error
        return ""

    def _next_attempt(self) -> int:
        used = {n.attempt for n in self._attempts()}
        k = 1
        while k in used:
            k += 1
        return k

    def progress(self, done: bool = False, message: str = "") -> Progress:
        attempts = self._attempts()
        snapshot = self._snapshot()
        # the best and its figures as `stark show` gives them: the tree view's rule, the re-timed figures first
        view = TreeView.of((n for n in snapshot if n.duplicate_of is None), self.task_id)
        best, root = view.best, view.root
        spent = sum(1 for n in attempts if n.spends_budget)
        left_s = None
        if self._pace is not None and not done:  # at the pace of this run's attempts (search/pace.py)
            began, before = self._pace
            elapsed = time.monotonic() - began
            wall = self.config.wall_time_s
            left_s = time_left(spent - before, self.config.budget - spent, elapsed,
                               None if wall is None else wall - elapsed)
        return Progress(
            task_id=self.task_id,
            attempt=spent,
            budget=self.config.budget,
            best_speedup=best.eager if best else None,
            best_node_id=best.id if best else None,
            failures=sum(1 for n in attempts if n.spends_budget and n.unsuccessful),
            free=sum(1 for n in attempts if n.completed and not n.spends_budget),
            correct=sum(1 for n in attempts if n.correct),
            running=sum(1 for n in attempts if n.in_flight),
            done=done,
            message=message,
            root_speedup=root.speedup if root else None,
            best_vs_yours=view.gain(best) if best else None,
            best_is_root=best is not None and best.parent_id is None,
            best_is_reference=best is not None and best.is_reference_itself,
            cpu=best is not None and best.cpu_timed,
            doing=self._doing_counts(),
            time_left_s=left_s,
        )

    def _doing_counts(self) -> tuple[tuple[str, int], ...]:
        with self._lock:
            now = list(self._doing.values())
        return tuple((p, now.count(p)) for p in phases.ORDER if p in now)

    def _evaluation_done(self, node_id: int) -> None:
        with self._lock:
            self._doing.pop(node_id, None)

    def _evaluation_phase(self, node_id: int, phase: str) -> None:
        """An evaluation in flight moved on (``evaluate/phases.py``): the progress line says so."""
        with self._lock:
            if self._doing.get(node_id) == phase:
                return
            self._doing[node_id] = phase
        self._emit()

    def _emit(self, done: bool = False, message: str = "", lasting: bool = False) -> None:
        if self.on_progress:
            self.on_progress(replace(self.progress(done, message), lasting=lasting) if lasting else
                             self.progress(done, message))

    # -- the loop ----------------------------------------------------------
    def run(self, cancel: threading.Event | None = None) -> Node | None:
        """Search until the budget, the wall time or ``cancel``; returns the
        best node. Resumes a tree that exists (in-flight nodes left by a
        killed run are marked abandoned and their attempts redone)."""
        self._cancel = cancel or threading.Event()
        self._abort = threading.Event()
        with tree_lock(self.store.path, self.task_id):
            archived = self._archive_if_changed()
            self.store.create_tree(self.task)
            abandoned = self.store.abandon_in_flight(self.task_id)
            for n in self.store.nodes(self.task_id):
                if n.status == ABANDONED and (n.error or "").endswith(REDONE_LATER):  # this run redoes its slot
                    n = self.store.update_node(n.id, error=n.error[: -len(REDONE_LATER)] + REDONE_NOW)
                self._record(n)
            self._read_machine()
            note = f"resumed: {len(abandoned)} unfinished node(s) abandoned" if abandoned else archived
            if archived:  # said whether or not the new tree's root is evaluated yet
                self._emit(message=archived, lasting=True)
            root = self._ensure_root("" if note == archived else note)
            if root is not None and not root.correct:
                self._stop_if_unjudgeable(root)
            if root is not None and self.config.require_correct_root and not root.correct:
                self._emit(done=True, message=f"your kernel did not pass ({root.status}): no search")
                root = None
            if root is not None:
                self._start_profiling()
                self._loop(time.monotonic())
        return self.store.best(self.task_id)

    def _read_machine(self) -> None:
        """What the agents' context says of the machine and the task, read once per run."""
        try:
            self._hardware = str(self.evaluator.hardware())
        except Exception:
            self._hardware = ""
        self._hardware_info = hardware_facts(self.evaluator)
        self._facts = describe_task(self.task)

    # -- re-timing the leaders (search/retime.py) -------------------------------------
    def _retime(self) -> None:
        """Evaluate the top ``retime_top`` correct attempts and the root ``retime_rounds`` times,
        in turn, and store each candidate's median and range (``Node.retimed``). Stops at a
        cancel; an evaluator failure ends the re-timing, not the search."""
        cfg = self.config
        if cfg.retime_top <= 0 or cfg.retime_rounds <= 0 or self._cancel.is_set():
            return
        nodes = self._snapshot()
        leaders = leaderboard([n for n in nodes if n.kind != ROOT], cfg.retime_top)
        root = next((n for n in nodes if n.parent_id is None), None)
        if not leaders:
            return
        options = retime_options(cfg.eval_options.pinned_baselines())
        runs: dict[int, list[EvalResult]] = {n.id: [] for n in leaders}
        roots: list[EvalResult | None] = []
        # a KernelBench root is the reference itself: each evaluation's "× eager" is its "× your kernel"
        # (retime.summarize), so the root is not timed again against itself
        root_is_eager = root is not None and root.correct and root.is_reference_itself
        timed_root = [root] if root is not None and root.correct and not root_is_eager else []
        self._emit(message=f"re-timing the top {len(leaders)} ({cfg.retime_rounds} rounds, in turn with your kernel)")
        self.retiming = True
        # a round's evaluations run ``concurrency`` at once, as the search's attempts do: each one's start, load
        # and trials overlap another's timing (the evaluator's GPU gate still times one alone); the rounds
        # follow one another, so each round's figures come from one stretch of time
        order = leaders + timed_root
        pool = ThreadPoolExecutor(max_workers=max(1, min(cfg.concurrency, len(order))), thread_name_prefix="stark-retime")
        try:
            for _ in range(cfg.retime_rounds):
                if self._cancel.is_set():
                    break
                futures = [pool.submit(self._retime_one, n.source, options) for n in order]
                for n, fut in zip(order, futures):
                    r = self._await_retime(fut)
                    if r is None:  # cut
                        break
                    if n is root:
                        roots.append(r)
                    else:
                        runs[n.id].append(r)
                if not timed_root:
                    roots.append(None)
        except Exception as e:  # the figures of the search stand; re-timing is a refinement
            self._emit(message=f"re-timing stopped: the evaluator failed: {type(e).__name__}: {e}", lasting=True)
            return
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            self.retiming = False
        if self._cancel.is_set():  # cut (Ctrl-C, Cancel, a signal), even after its last evaluation: nothing kept
            self._emit(message="re-timing cut: the rounds timed so far are dropped", lasting=True)
            return
        yours = summarize([r for r in roots if r is not None], []) if timed_root else None
        if yours is not None:  # your kernel's medians of the same rounds: the table's "× eager" and ms of the root,
            self._update(root.id, retimed=yours.to_dict())  # which every re-timed "× your kernel" divides by
        done = []
        for n in leaders:
            figures = summarize(runs[n.id], roots, root_is_eager=root_is_eager)
            if figures is not None:
                self._update(n.id, retimed=figures.to_dict())
                done.append((figures, n))
        if done:
            figures, n = max(done, key=lambda fn: (fn[0].speedup, -fn[1].id))
            best = self.store.best(self.task_id)
            if best is None or best.id == n.id:
                self._emit(message=f"re-timed: best #{n.id} {figures.text()}", lasting=True)
            else:  # the fastest re-timed candidate did not win (slower than yours, or within the noise): it
                # was called 'best #N' beside the line's 'best your kernel'
                stays = "your kernel stays the best" if best.parent_id is None else f"the best stays #{best.id}"
                self._emit(message=f"re-timed: the fastest candidate #{n.id} {figures.text()}; {stays}",
                           lasting=True)

    def _retime_one(self, source: str, options: EvalOptions) -> EvalResult | None:
        """One re-timing evaluation (on the re-timing's pool); None when the re-timing was cut first."""
        if self._cancel.is_set():
            return None
        with self._gate.shared():
            return self.evaluator.evaluate(self.task, source, options)

    def _await_retime(self, fut: Future) -> EvalResult | None:
        """``fut``'s evaluation; None once the re-timing is cut (Ctrl-C, Cancel, a signal), whose evaluations
        in flight are stopped rather than waited for."""
        while True:
            try:
                return fut.result(timeout=0.2)
            except FuturesTimeout:
                if self._cancel.is_set():
                    evaluator_protocol.cancel_all(self.evaluator)
                    return None

    # -- background profiling -----------------------------------------------------
    def _start_profiling(self) -> None:
        if self.config.profile_top <= 0:
            return
        why = ""
        if self.profiler is None:
            self.profiler, why = default_profiler(self.evaluator)
        if not why:
            available = getattr(self.profiler, "available", None)
            why = available() if callable(available) else ""
        if why:
            self._emit(message=f"profiling off: {why}", lasting=True)
            return
        self._profiling = True
        self._prof_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stark-profile")

    def _collect_profile(self, block: bool) -> bool:
        """Emit the result of the profile in flight once it is done (waiting
        for it when ``block``); True when none is in flight any more."""
        fut = self._prof_future
        if fut is None:
            return True
        if not block and not fut.done():
            return False
        wait([fut])
        self._prof_future = None
        try:
            msg = fut.result()
        except Exception as e:  # a bug in the profiler: the search goes on without it
            msg = f"profiling failed: {type(e).__name__}: {e}"
        if msg:
            self._emit(message=msg)
        return True

    def _maybe_profile(self) -> None:
        """On the loop thread: collect a finished profile; start the next one
        (at most one at a time) for the best of the top ``profile_top``
        correct nodes that has none yet. Never waits."""
        if not self._profiling or not self._collect_profile(block=False):
            return
        if self._cancel.is_set() or self._prof_pool is None:
            return
        top = leaderboard(self._snapshot(), self.config.profile_top)
        todo = [n for n in top if n.profile is None and n.id not in self._prof_tried]
        if todo:
            self._prof_tried.add(todo[0].id)
            self._prof_future = self._prof_pool.submit(self._profile, todo[0].id)

    def _profile(self, node_id: int) -> str:
        """On the profiling thread: profile one node, store the report."""
        node = self._nodes[node_id]
        stop = AnyEvent(self._cancel, self._prof_stop)
        if self.config.profile_exclusive:
            with self._gate.exclusive():
                report = self.profiler.profile(self.task, node.source, stop)
        else:
            report = self.profiler.profile(self.task, node.source, stop)
        if stop.is_set() and not report.ok:
            return ""  # cut short: profiled again on resume
        self._update(node_id, profile=report.to_dict())
        return f"#{node_id} profiled: {report.summary()}"

    def _stop_profiling(self, wait_for_it: bool) -> None:
        """Let the profile in flight finish and record it (``wait_for_it``), or
        stop it; start no other."""
        if self._prof_pool is None:
            return
        if not wait_for_it:
            self._prof_stop.set()
        self._collect_profile(block=True)
        self._prof_pool.shutdown(wait=True)
        self._prof_pool = None

    def _archive_if_changed(self) -> str:
        """A stored tree whose root is not the task's code any more (``TreeStore.changed``) is archived,
        and a new tree starts from the file as it is now; returns a note, or ""."""
        what = self.store.changed(self.task)
        if not what:
            return ""
        kept = self.store.archive_tree(self.task_id)
        return f"the {what} changed since the stored tree began: that tree is kept as {kept}; starting a new one"

    def _ensure_root(self, note: str) -> Node | None:
        root = self.store.root(self.task_id)
        if root is None:
            root = self._record(self.store.add_node(
                self.task_id, None, ROOT, RUNNING, source=self.task.root_source(), summary="the original kernel"))
        elif root.evaluated:
            if note:
                self._emit(message=note, lasting=True)
            return root
        else:
            root = self._update(root.id, status=RUNNING)
        self._emit(message=(note + "; " if note else "") + "evaluating the original kernel", lasting=bool(note))
        if self._cancel.is_set():
            self._update(root.id, status=ABANDONED)
            self._emit(done=True, message="cancelled")
            return None
        self._evaluate(root)
        return self._nodes[root.id]

    def _stop_if_unjudgeable(self, root: Node) -> None:
        """A root whose failure is the machine's or the task's (``root_failure.py``) stops the search before
        the budget is spent on refusals: it is abandoned (judged again by the next run) and the search raises."""
        failure = unjudgeable(root.status, root.error or "", root.is_reference_itself)
        if failure is None:
            return
        self._update(root.id, status=ABANDONED, error=failure.message)
        raise (EvaluatorFailed if failure.kind == MACHINE else TaskBroken)(failure.message)

    def _stop_reason(self, started: float) -> str:
        if self._cancel.is_set():
            return "cancelled"
        wt = self.config.wall_time_s
        if wt is not None and time.monotonic() - started >= wt:
            return "wall time reached"
        return budget_spent(self._snapshot(), self.config.token_budget)

    def _loop(self, started: float) -> None:
        cfg = self.config
        self._stopping = False
        self._stop_was = ""
        self._pace = (started, sum(1 for n in self._attempts() if n.spends_budget))
        inflight: dict[Future, int] = {}
        error: BaseException | None = None
        message = ""
        announced = ""  # the stop already said while attempts were still in flight
        pool = ThreadPoolExecutor(max_workers=max(1, cfg.concurrency), thread_name_prefix="stark-search")
        try:
            while True:
                self._maybe_profile()
                stop = self._stop_reason(started) if error is None else "stopped by an error"
                while not stop and len(inflight) < max(1, cfg.concurrency) and \
                        self._finished() + len(inflight) < cfg.budget and self._free_left():
                    attempt = self._next_attempt()
                    sel = self.policy.select(self._snapshot(), random.Random(f"{cfg.seed}:{attempt}"))
                    if sel is None:
                        why = self._nothing_new_reason()
                        stop = f"nothing to expand: {why}" if why else "nothing to expand"
                        break
                    node = self._start_attempt(sel, attempt)
                    inflight[pool.submit(self._expand, node.id, sel)] = node.id
                    self._emit(message=f"attempt {attempt}: {sel.action} #{sel.node_id} ({sel.reason})")
                if stop and inflight and stop != "cancelled" and stop != announced:
                    announced = stop  # said once, on its own line: the live line goes on while they end
                    k = len(inflight)
                    verb = (("is" if k == 1 else "are") + " stopped" if stop == "wall time reached"
                            else ("finishes" if k == 1 else "finish") + " first")
                    self._emit(message=f"{stop}; the {k} attempt{'s' * (k != 1)} in flight {verb}", lasting=True)
                if not inflight:
                    message = stop or ("budget spent" if self._free_left() else
                                       "stopped: as many attempts found nothing new as the budget allows")
                    break
                if stop in ("cancelled", "wall time reached") and not self._stopping:
                    self._stopping = True  # evaluations in flight are stopped too, not waited for
                    self._stop_was = stop
                    evaluator_protocol.cancel_all(self.evaluator)
                done, _ = wait(list(inflight), timeout=0.2, return_when=FIRST_COMPLETED)
                for fut in done:
                    nid = inflight.pop(fut)
                    try:
                        fut.result()
                    except BaseException as e:  # the evaluator, the store or the agents' endpoint failed
                        error = error or e
                        self._abort.set()  # agents waiting for answers give up
                        if self._nodes[nid].in_flight:
                            self._update(nid, status=ABANDONED, error=f"search stopped: {e}")
                    n = self._nodes[nid]
                    self._emit(message=f"#{n.id} attempt {n.attempt}: {n.outcome()}")
            self._stop_profiling(wait_for_it=error is None)  # the one in flight, if any: no new one
            if error is None:
                self._retime()
        except BaseException:  # e.g. KeyboardInterrupt: in-flight attempts stop at their next stage
            self._cancel.set()
            raise
        finally:
            pool.shutdown(wait=True)
            self._stop_profiling(wait_for_it=False)
        self._emit(done=True, message=message)
        if error is not None:
            raise error

    def _start_attempt(self, sel: Selection, attempt: int) -> Node:
        kind = DEBUG if sel.action == ROUTE_DEBUG else PLAN_CODE
        return self._record(self.store.add_node(
            self.task_id, sel.node_id, kind, RUNNING,
            attempt=attempt, seed=attempt_seed(self.config.seed, attempt)))

    # -- one attempt (worker thread) ------------------------------------------
    def _context(self, agent: str, node_id: int, attempt_node: Node | None, plan: tuple[str, str] | None = None):
        """The agent's context for the attempt that fills ``attempt_node`` (None: a given plan's, not a node yet:
        seed and attempt 0)."""
        seed, attempt = (attempt_node.seed, attempt_node.attempt) if attempt_node is not None else (0, 0)
        ctx = build_context(
            agent, self.task, self._snapshot(), node_id,
            leaderboard_size=self.config.leaderboard, token_budget=self.config.context_tokens,
            hardware=self._hardware, seed=seed, hardware_info=self._hardware_info,
            facts=self._facts, attempt=attempt, attempt_node_id=attempt_node.id if attempt_node else None, plan=plan,
            cancel=AnyEvent(self._cancel, self._abort), search_seed=self.config.seed,
        )
        ctx.on_wait = lambda line: self._emit(message=line)  # a streamed answer's progress: the CLI's and the editor's
        ctx.on_notice = lambda line: self._emit(message=line, lasting=True)  # kept on its own line
        return ctx

    def _abandon(self, node_id: int, exchanges: list[Exchange]) -> None:
        self._update(node_id, status=ABANDONED, exchanges=exchanges, error="cancelled")

    def _propose(self, node_id: int, parent: Node, sel: Selection, exchanges: list[Exchange],
                 stage: list[str]) -> tuple[str, frozenset[str]] | None:
        """One round of agents: (source, the ``seen`` they were given), or
        None when cancelled between Plan and Code. Appends to ``exchanges``,
        keeps the current stage in ``stage[0]``; raises what the agents raise."""
        node = self._nodes[node_id]
        if sel.action == ROUTE_DEBUG:
            stage[0] = "debug"
            ctx = self._context("debug", parent.id, node)
            fix = self.team.debugger.debug(ctx)
            exchanges += fix.exchanges
            if not fix.source.strip():
                raise AgentError("the Debug agent returned an empty source")
            self._update(node_id, summary=fix.summary, exchanges=exchanges)
            return self._unmarked(fix.source, "Debug"), ctx.seen
        stage[0] = "plan"
        ctx = self._context("plan", parent.id, node)
        plan = self.team.planner.plan(ctx)
        exchanges += plan.exchanges
        self._update(node_id, plan=plan.marked_source, summary=plan.summary, exchanges=exchanges)
        self.markers.check_plan(parent.source, plan.marked_source)
        if self._cancel.is_set():
            return None
        stage[0] = "code"
        code = self.team.coder.code(self._context("code", parent.id, node, (plan.marked_source, plan.summary)),
                                    plan.marked_source)
        exchanges += code.exchanges
        source = self.markers.apply_replacements(plan.marked_source, code.replacements)
        return self._unmarked(source, "Code"), ctx.seen

    def _unmarked(self, source: str, agent: str) -> str:
        """A candidate never keeps ``@stark`` marker lines (nor does a best file)."""
        has = getattr(self.markers, "has_markers", None)
        if has is not None and has(source):
            line = next((i for i, l in enumerate(source.split("\n"), 1) if "@stark" in l), 0)
            raise AgentError(f"the {agent} agent's candidate still contains '@stark' marker lines (line {line}); "
                             f"a candidate must not keep them")
        return source

    def _claim(self, node_id: int, source: str, seen: frozenset[str], exchanges: list[Exchange], last: bool) -> bool:
        """Record the candidate source unless another attempt made the same
        source while these agents worked (it was not in the ``seen`` they
        were given: a race, not the agents' choice); then False, so the
        agents try again with the tree as it is now. Atomic across attempts."""
        digest = source_digest(source)
        with self._claim_lock:
            raced = not last and digest not in seen and any(
                n.source == source for n in self._snapshot() if n.id != node_id and n.status != ABANDONED)
            if not raced:
                self._update(node_id, source=source, exchanges=exchanges)
        return not raced

    def _expand(self, node_id: int, sel: Selection) -> None:
        parent = self._nodes[sel.node_id]
        exchanges: list[Exchange] = []
        box = ["debug" if sel.action == ROUTE_DEBUG else "plan"]  # the stage, for error messages
        source: str | None = None
        try:
            for round_ in range(1 + RACE_RETRIES):
                if self._cancel.is_set():
                    return self._abandon(node_id, exchanges)
                got = self._propose(node_id, parent, sel, exchanges, box)
                if got is None:  # cancelled between Plan and Code
                    return self._abandon(node_id, exchanges)
                source, seen = got
                if self._claim(node_id, source, seen, exchanges, last=round_ == RACE_RETRIES):
                    break
        except AgentCancelled as e:
            exchanges.extend(e.exchanges)
            return self._abandon(node_id, exchanges)
        except AgentsUnavailable as e:  # the endpoint cannot serve the search: stop it, redo this on resume
            exchanges.extend(e.exchanges)
            self._abort.set()
            self._update(node_id, status=ABANDONED, error=agent_error_text(box[0], e), exchanges=exchanges)
            raise
        except AgentError as e:
            stage = box[0]
            if e.exchanges:
                exchanges.extend(e.exchanges)
            elif e.raw or e.usage.calls:
                exchanges.append(Exchange(stage, "", e.raw, e.usage))
            self._update(node_id, status=AGENT_ERROR, error=agent_error_text(stage, e), exchanges=exchanges,
                         nothing_new=isinstance(e, NothingNew))
            return
        except self.markers.MarkerError as e:
            stage = box[0]
            self._update(node_id, status=AGENT_ERROR, error=f"{stage} broke the marker rules: {e}", exchanges=exchanges)
            return
        except Exception as e:  # a bug in an agent: recorded, the search goes on
            stage = box[0]
            self._update(node_id, status=AGENT_ERROR, error=f"{stage} agent raised {type(e).__name__}: {e}",
                         exchanges=exchanges)
            return
        assert source is not None
        if self._cancel.is_set():
            return self._abandon(node_id, exchanges)
        self._judge(self._nodes[node_id])

    def _judge(self, node: Node) -> None:
        """The candidate's verdict: a source the tree already judged reuses its verdict (also one being
        evaluated by another attempt now), any other is evaluated (``_evaluate``)."""
        key = source_hash(node.source)
        while True:
            same = self.store.find_evaluated(self.task_id, node.source)
            if same is not None and same.result is not None:
                status, speed, runtime, err = outcome_fields(same.result)
                speed = same.speedup if same.correct else speed  # the stored figure (1 for the reference itself)
                self._update(node.id, status=status, result=same.result, speedup=speed, runtime_ms=runtime,
                             error=err, duplicate_of=same.duplicate_of or same.id)
                return
            with self._lock:
                other = self._evaluating.get(key)
                if other is None:
                    self._evaluating[key] = threading.Event()
                    break
            other.wait()  # the same source is being evaluated by another attempt: reuse its verdict
        try:
            self._evaluate(node)
        finally:
            with self._lock:
                self._evaluating.pop(key).set()

    # -- one attempt on a given plan (the editor's marker) -------------------------------
    def attempt(self, plan: GivenPlan) -> Node:
        """One plan+code attempt from the root on a plan the search did not make (``given_plan.py``), on
        the tree as it stands: no lock taken, nothing archived or abandoned (as the editor's marker did before
        it came here). Not yet safe beside a search of the same tree in another Search: a search that starts
        meanwhile marks this attempt's running node abandoned, and a search stopped meanwhile stops this
        evaluation too (they share the evaluator);
        the root evaluated first where the tree has none. The Code agent gets the context a search's
        Code agent gets (``_context``: task card, hardware card, window, ``seen``), and the candidate
        is judged as a search's are (``_judge``: its verdict reused, or evaluated through the GPU gate),
        timed in full: nothing re-times it. The node is recorded once the Code agent's answer fits
        (``GivenPlan.candidate``); raises what the agent raises (``AgentError``), ``MarkerError``, and
        ``EvaluatorFailed`` / ``TaskBroken`` as a search does. Returns the node."""
        from stark_lsp.markers.syntax import apply_replacements, strip_markers

        self.config = replace(self.config, screen=False, race=False)
        self.store.create_tree(self.task)
        for n in self.store.nodes(self.task_id):
            self._record(n)
        self._read_machine()
        root = self.store.root(self.task_id)
        if root is None:  # a baseline first, so the candidate has something to beat
            root = self._record(self.store.add_node(
                self.task_id, None, ROOT, RUNNING, source=self.task.root_source(), summary="the original kernel"))
            self._evaluate(root)
        ctx = replace(self._context("code", root.id, None, (plan.marked, plan.summary)),
                      node_source=strip_markers(plan.marked))  # the source the plan marks
        code = self.team.coder.code(ctx, plan.marked)
        make = plan.candidate or (lambda reps: apply_replacements(plan.marked, reps))
        source = make(code.replacements)
        node = self._record(self.store.add_node(
            self.task_id, root.id, PLAN_CODE, RUNNING, source=source, plan=plan.plan or plan.marked,
            summary=plan.summary, exchanges=list(code.exchanges)))
        self._judge(node)
        return self._nodes[node.id]

    def _task_gone(self, node: Node) -> None:
        """The task-gone rule (``cut_short``), where the search watches the task's files itself
        (``stop_when_files_go``): the task's file or harness was deleted or moved mid-search, so every later
        candidate would fail for it, not for itself; the attempt in hand is cut short and the search stops.
        A caller that watches the files itself (the editor) applies the same rule once the search stopped:
        ``void_after_task_gone``."""
        if not self.config.stop_when_files_go:
            return
        gone = gone_file(self.task)
        if gone is not None:
            self._update(node.id, **cut_short(f"{gone.name} is gone"))
            raise TaskBroken(f"{gone.name} is gone (deleted or moved during the search): the search stopped")

    def _options(self, node: Node) -> EvalOptions:
        """A candidate's settings: the search's, with the baselines' pinned (one timing of them serves the
        whole search), screened (``retime.screen_options``) when the leaders will be re-timed, and with the
        figure to beat (``TreeView.best_so_far``, the task card's best) when racing. The root is timed in
        full: it is what "x your kernel" divides by."""
        cfg = self.config
        opts = cfg.eval_options.pinned_baselines()
        if node.parent_id is None and cfg.compiled_seed and self.task.kind == "kernelbench":
            opts = replace(opts, compiled_code=True)  # what Inductor wrote, kept with the root (the team's seed)
        if cfg.screen and node.parent_id is not None and cfg.retime_top > 0 and cfg.retime_rounds > 0:
            opts = screen_options(opts)
        if not cfg.race:
            return opts
        best = TreeView.of(self._snapshot(), self.task_id).best_so_far  # the one rule: tree_view.py's
        if best is None or not best.runtime_ms:
            return opts
        return replace(opts, race_ms=best.runtime_ms)

    def _evaluate(self, node: Node) -> None:
        self._task_gone(node)
        try:
            with self._gate.shared(), phases.listening(lambda p: self._evaluation_phase(node.id, p)):
                result: EvalResult = self.evaluator.evaluate(self.task, node.source, self._options(node))
        except Exception as e:
            self._update(node.id, status=ABANDONED, error=f"the evaluator failed: {type(e).__name__}: {e}")
            raise EvaluatorFailed(f"the evaluator failed on node #{node.id}: {type(e).__name__}: {e}") from e
        finally:
            self._evaluation_done(node.id)
        if result.status.failed:
            self._task_gone(node)  # it went while this evaluation ran: the failure is not the candidate's
        if result.status is Status.TASK_ERROR:
            self._update(node.id, status=ABANDONED, error=result.message)
            raise TaskBroken(f"{result.message} ({task_error_fix(result.message)})")
        if result.stopped:  # cut by the search's own stop: no verdict on the candidate; redone if the search goes on
            why = "the run's --wall-time passed" if self._stop_was == "wall time reached" else "stopped by Ctrl-C / Cancel / a signal"
            self._update(node.id, status=ABANDONED, error=f"{why}{REDONE_LATER}")
            return
        status, speed, runtime, err = outcome_fields(result)
        if node.is_reference_itself and speed is not None:
            speed = 1.0  # the KernelBench reference timed against itself: 1 by construction, the rest is noise
        self._update(node.id, status=status, result=result, speedup=speed, runtime_ms=runtime, error=err)
