"""The re-timing's evaluations run as many at once as the search's attempts do (``concurrency``): each
round's starts, loads and trials overlap another's timing, and the rounds still follow one another, so a
round's figures come from one stretch of time. A cut (Ctrl-C, Cancel, a signal) stops the evaluations in
flight through the evaluator's ``cancel`` instead of waiting for them, and keeps none of the rounds."""

from __future__ import annotations

import threading
import time

import pytest

from fakes import FakeEvaluator, FakeTeam, make_fake_task
from stark_lsp.search import Search, SearchConfig, TreeStore
from stark_lsp.search.node import ROOT

pytestmark = pytest.mark.timeout(120)


def retiming(options) -> bool:
    return options is not None and options.trials == 1 and options.race_ms is None


class RoundsEvaluator(FakeEvaluator):
    """Records, for each re-timing evaluation, when it began and ended, and how many ran at once. Each
    one waits until a second one has begun (or a short while), so overlap shows whatever the threads'
    timing; ``hold``: re-timing evaluations block until ``cancel`` is called."""

    def __init__(self, hold: bool = False):
        super().__init__()
        self.hold = hold
        self.spans: list[tuple[str, float, float]] = []
        self.running = 0
        self.most = 0
        self.cancelled = threading.Event()
        self.started = threading.Event()
        self.second = threading.Event()
        self.guard = threading.Lock()

    def cancel(self) -> None:
        self.cancelled.set()

    def evaluate(self, task, source, options=None):
        if not retiming(options):
            return super().evaluate(task, source, options)
        with self.guard:
            self.running += 1
            self.most = max(self.most, self.running)
            if self.running >= 2:
                self.second.set()
        self.started.set()
        t0 = time.monotonic()
        try:
            if self.hold:
                self.cancelled.wait(60)
            else:
                self.second.wait(0.5)
            return super().evaluate(task, source, options)
        finally:
            with self.guard:
                self.running -= 1
                self.second.clear()
                self.spans.append((source, t0, time.monotonic()))


def test_a_rounds_evaluations_overlap_and_the_rounds_follow_one_another(tmp_path):
    task = make_fake_task(tmp_path)
    ev = RoundsEvaluator()
    with TreeStore.open(tmp_path / ".stark" / "tree.sqlite") as store:
        Search(task, store, ev, FakeTeam(factor=1.3),
               SearchConfig(budget=5, concurrency=2, retime_top=2, retime_rounds=3)).run()
        nodes = store.nodes(task.task_id())
    assert sum(1 for n in nodes if n.retimed and n.kind != ROOT) == 2
    assert len(ev.spans) == 9  # 3 rounds of 2 leaders and the root
    assert ev.most == 2  # never more than the search's concurrency, and two did run at once
    spans = sorted(ev.spans, key=lambda s: s[1])
    rounds = [spans[i:i + 3] for i in range(0, 9, 3)]
    for before, after in zip(rounds, rounds[1:]):
        assert max(end for _, _, end in before) <= min(start for _, start, _ in after)  # a round ends first
        assert {s for s, _, _ in before} == {s for s, _, _ in after}  # each round times every one once


def test_a_cut_stops_the_evaluations_in_flight_and_keeps_no_round(tmp_path):
    task = make_fake_task(tmp_path)
    ev = RoundsEvaluator(hold=True)
    cancel = threading.Event()
    with TreeStore.open(tmp_path / ".stark" / "tree.sqlite") as store:
        search = Search(task, store, ev, FakeTeam(factor=1.3),
                        SearchConfig(budget=5, concurrency=2, retime_top=2, retime_rounds=3))
        threading.Thread(target=lambda: (ev.started.wait(60), cancel.set()), daemon=True).start()
        search.run(cancel)
        assert ev.cancelled.is_set()  # stopped through the evaluator, not waited for (it would wait 60 s)
        assert not any(n.retimed for n in store.nodes(task.task_id()))
    assert len(ev.spans) <= 2  # the round in flight only; no later round began
