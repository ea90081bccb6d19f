"""The budget buys new work, and the winner is re-timed: a model the built-in team cannot lower
ends the search at once with its reason and spends nothing; "nothing new" and duplicates are free;
the leaders are evaluated again in turn with the root and the median (with its range) is what the
search reports."""

from __future__ import annotations

import dataclasses
import itertools
import textwrap
import threading

import pytest

from fakes import FakeEvaluator, FakeTeam, make_fake_task
from stark_lsp.agents.builtin import make_builtin_team
from stark_lsp.evaluate.evaluator import Evaluator
from stark_lsp.evaluate.options import EvalOptions
from stark_lsp.search import Search, SearchConfig, TreeStore
from stark_lsp.search.node import ROOT
from stark_lsp.search.retime import Retimed, retime_options, summarize
from stark_lsp.tasks.spec import load_task

pytestmark = pytest.mark.timeout(300)


class NoisyEvaluator(FakeEvaluator):
    """The fake verdict, with the candidate's time scaled by a repeating factor per evaluation of
    one source: the first (search) evaluation of each source is the luckiest."""

    FACTORS = (0.5, 1.0, 1.1, 0.9)

    def __init__(self):
        super().__init__()
        self.per_source: dict[str, itertools.cycle] = {}
        self.lock = threading.Lock()

    def evaluate(self, task, source, options=None):
        r = super().evaluate(task, source, options)
        if r.runtime is None:
            return r
        with self.lock:
            f = next(self.per_source.setdefault(source, itertools.cycle(self.FACTORS)))
        cand = dataclasses.replace(r.runtime.candidate, median_ms=r.runtime.candidate.median_ms * f)
        return dataclasses.replace(r, runtime=dataclasses.replace(r.runtime, candidate=cand,
                                                                  speedup=r.runtime.speedup / f))


def test_leaders_are_retimed_in_turn_with_the_root_and_the_median_is_reported(tmp_path):
    task = make_fake_task(tmp_path)
    ev = NoisyEvaluator()
    progress = []
    with TreeStore.open(tmp_path / ".stark" / "tree.sqlite") as store:
        best = Search(task, store, ev, FakeTeam(factor=1.3), SearchConfig(budget=6, concurrency=1, retime_top=2,
                      retime_rounds=3), on_progress=progress.append).run()
        nodes = store.nodes(task.task_id())
        retimed = [n for n in nodes if n.retimed and n.kind != ROOT]
        assert len(retimed) == 2
        root = next(n for n in nodes if n.kind == ROOT)  # your kernel's medians of the same rounds are kept too
        assert Retimed.from_dict(root.retimed).rounds == 3 and Retimed.from_dict(root.retimed).vs_root is None
        searched = sum(1 for n in nodes if n.evaluated and n.duplicate_of is None)
        assert ev.calls == searched + 3 * (2 + 1)  # 3 rounds of (2 leaders, then the root)
        for n in retimed:
            r = Retimed.from_dict(n.retimed)
            # rounds see factors 1.0, 1.1, 0.9 (the 0.5 of the search's own run is gone): median 1.0
            assert r.rounds == 3 and r.speedup == pytest.approx(n.speedup * 0.5)
            assert r.speedup_low < r.speedup < r.speedup_high
            assert r.vs_root is not None and not r.cpu
            assert r.vs_root == pytest.approx(r.speedup / root.retimed["speedup"])  # as the table divides them
        assert best.id == max(retimed, key=lambda n: n.retimed["speedup"]).id == store.best(task.task_id()).id
    messages = [p.message for p in progress]
    assert any(m.startswith("re-timed: best #") and "over 3 rounds" in m for m in messages)
    assert progress[-1].done and "re-timed" not in progress[-1].message


def test_retiming_off_and_the_options_it_uses(tmp_path):
    task = make_fake_task(tmp_path)
    ev = FakeEvaluator()
    with TreeStore.open(tmp_path / ".stark" / "tree.sqlite") as store:
        Search(task, store, ev, FakeTeam(), SearchConfig(budget=3, concurrency=1, retime_top=0)).run()
        assert not any(n.retimed for n in store.nodes(task.task_id()))
    o = retime_options(EvalOptions(trials=5, reps=100, time_budget_s=3.0))
    assert o.trials == 1 and o.reps == 200 and o.time_budget_s == 6.0
    assert summarize([], []) is None


def test_the_retimed_line_labels_every_speedup():
    r = Retimed(rounds=3, speedup=2.31, speedup_low=2.25, speedup_high=2.4, runtime_ms=1.0, vs_root=1.8)
    assert r.text() == "2.31× eager (2.25–2.40 over 3 rounds), 1.80× your kernel"
    cpu = dataclasses.replace(r, speedup=0.0064, speedup_low=0.0061, speedup_high=0.0064, vs_root=None, cpu=True)
    assert cpu.text() == "0.0064× eager (0.0061–0.0064 over 3 rounds) (CPU interpreter: for checking, not speed)"


KB_CONV = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3)

        def forward(self, x):
            return self.conv(x)


    def get_inputs():
        return [torch.randn(1, 3, 8, 8)]


    def get_init_inputs():
        return []
    """)


@pytest.mark.parametrize("policy", ["stark", "sampling", "greedy", "reflexion"])
def test_a_model_the_team_cannot_lower_ends_at_once_and_spends_nothing(tmp_path, policy):
    path = tmp_path / "conv.py"
    path.write_text(KB_CONV)
    task = load_task(path)
    progress = []
    with Evaluator(workers=1, cache_dir=tmp_path / "cache") as ev, \
            TreeStore.open(tmp_path / ".stark" / "tree.sqlite") as store:
        s = Search(task, store, ev, make_builtin_team(), SearchConfig(budget=30, policy=policy, concurrency=2),
                   on_progress=progress.append)
        s.run()
        attempts = [n for n in store.nodes(task.task_id()) if n.kind != ROOT]
    assert attempts and not any(n.spends_budget for n in attempts)
    assert len(attempts) <= 2  # the attempts already in flight when the first answer came
    last = progress[-1]
    assert last.done and last.attempt == 0
    assert "nothing to expand" in last.message and "only library operations (self.conv)" in last.message


def test_when_the_retimed_leaders_are_slower_than_the_root_the_root_stays_best(tmp_path):
    task = make_fake_task(tmp_path)
    with TreeStore.open(tmp_path / ".stark" / "tree.sqlite") as store:
        Search(task, store, FakeEvaluator(), FakeTeam(factor=0.5), SearchConfig(budget=3, concurrency=1,
                                                                                 retime_top=2)).run()
        nodes = store.nodes(task.task_id())
        assert any(n.retimed for n in nodes)
        assert store.best(task.task_id()).kind == ROOT
