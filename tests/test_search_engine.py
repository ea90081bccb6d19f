import threading

import pytest

from fakes import FakeEvaluator, FakeTeam, fake_source, make_fake_task
from stark_lsp.search import EvaluatorFailed, Search, SearchBusy, SearchConfig, TreeStore
from stark_lsp.search.lock import tree_lock
from stark_lsp.search.node import ABANDONED, AGENT_ERROR, DEBUG, PLAN_CODE, ROOT

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def env(tmp_path):
    task = make_fake_task(tmp_path)
    store = TreeStore.open(tmp_path / ".stark" / "tree.sqlite")
    yield task, store
    store.close()


def search(env, team=None, ev=None, **cfg):
    task, store = env
    progress = []
    s = Search(task, store, ev or FakeEvaluator(), team or FakeTeam(fail_rate=0.3),
               SearchConfig(**{"concurrency": 1, "retime_top": 0, **cfg}), on_progress=progress.append)
    return s, progress


def attempts(store, task):
    return [n for n in store.nodes(task.task_id()) if n.kind != ROOT and n.status != ABANDONED]


def test_a_search_spends_exactly_its_budget(env):
    task, store = env
    s, progress = search(env, budget=8, concurrency=2)
    best = s.run()
    nodes = store.nodes(task.task_id())
    assert nodes[0].kind == ROOT and nodes[0].source == fake_source(1.0) and nodes[0].status == "ok"
    done = attempts(store, task)
    assert sorted(n.attempt for n in done) == list(range(1, len(done) + 1))
    assert all(n.completed for n in done)
    assert sum(1 for n in done if n.spends_budget) == 8  # duplicates (free) may come on top
    assert all(n.duplicate_of is not None for n in done if not n.spends_budget)
    assert best.id == store.best(task.task_id()).id and best.speedup >= 1.0
    last = progress[-1]
    assert last.done and last.attempt == 8 and last.running == 0
    assert last.correct + last.failures == len(done) and last.best_node_id == best.id


def test_plan_code_nodes_record_plan_source_and_exchanges(env):
    task, store = env
    search(env, budget=3, team=FakeTeam())[0].run()
    for n in attempts(store, task):
        assert n.kind == PLAN_CODE
        assert "@stark begin s1" in n.plan and "@stark" not in n.source
        assert [e.agent for e in n.exchanges] == ["plan", "code"] and n.usage.calls == 2
        assert n.result is not None and n.seed != 0


def test_same_seed_same_tree(tmp_path):
    shapes = []
    for run in ("a", "b"):
        d = tmp_path / run
        d.mkdir()
        task = make_fake_task(d)
        store = TreeStore.open(d / "tree.sqlite")
        Search(task, store, FakeEvaluator(), FakeTeam(fail_rate=0.3), SearchConfig(budget=10, concurrency=1, seed=5)).run()
        shapes.append([(n.id, n.parent_id, n.kind, n.status, n.speedup) for n in store.nodes(task.task_id())])
    assert shapes[0] == shapes[1]
    assert len({p for _, p, *_ in shapes[0]}) > 2  # not a star: the policy went deeper


def test_a_failed_root_is_debugged_first(tmp_path):
    task = make_fake_task(tmp_path, status="compile_error")
    store = TreeStore.open(tmp_path / "tree.sqlite")
    team = FakeTeam()
    Search(task, store, FakeEvaluator(), team, SearchConfig(budget=3, concurrency=1)).run()
    nodes = store.nodes(task.task_id())
    assert nodes[0].status == "compile_error"
    assert (nodes[1].kind, nodes[1].parent_id, nodes[1].status) == (DEBUG, nodes[0].id, "ok")
    assert team.contexts[0][0] == "debug" and "fake compile_error" in team.contexts[0][1].node_diagnostics


def test_agent_errors_are_recorded_and_count_toward_the_budget(env):
    task, store = env
    s, progress = search(env, budget=4, team=FakeTeam(plan_error_rate=1.0))
    assert s.run().kind == ROOT
    done = attempts(store, task)
    assert len(done) == 4 and all(n.status == AGENT_ERROR for n in done)
    assert all(n.error == "plan agent: fake planner gave up" for n in done)
    assert all(n.exchanges[0].response == "I cannot" for n in done)  # the raw answer is kept
    assert progress[-1].failures == 4


def test_a_plan_that_breaks_the_marker_rules_is_an_agent_error(env):
    task, store = env
    search(env, budget=2, team=FakeTeam(bad_plan_rate=1.0))[0].run()
    done = attempts(store, task)
    assert all(n.status == AGENT_ERROR and "marker rules" in n.error for n in done)
    assert all(n.plan and not n.source for n in done)


def test_a_crashing_agent_does_not_crash_the_search(env):
    task, store = env
    team = FakeTeam()

    def boom(ctx, marked):
        raise KeyError("oops")

    team.coder.code = boom
    search(env, budget=2, team=team)[0].run()
    assert all(n.status == AGENT_ERROR and "KeyError" in n.error for n in attempts(store, task))


def test_identical_candidates_are_not_evaluated_twice(env):
    task, store = env
    ev = FakeEvaluator()
    search(env, budget=4, team=FakeTeam(factor=2.0), ev=ev, policy="sampling")[0].run()
    done = attempts(store, task)
    first = done[0]
    assert first.duplicate_of is None and first.status == "ok"
    assert all(n.duplicate_of == first.id and n.speedup == first.speedup for n in done[1:])
    assert ev.calls == 2  # the root and the first candidate


def test_evaluations_overlap_with_concurrency_two(env):
    ev = FakeEvaluator(barrier=threading.Barrier(2, timeout=20))
    search(env, budget=2, concurrency=2, ev=ev)[0].run()  # BrokenBarrierError unless two evaluations overlap
    assert ev.calls == 3


def test_cancel_stops_cleanly_and_a_second_run_finishes_the_budget(env):
    task, store = env
    cancel = threading.Event()
    s, _ = search(env, budget=6, concurrency=2)
    s.on_progress = lambda p: cancel.set() if p.attempt >= 2 else None
    s.run(cancel)
    nodes = store.nodes(task.task_id())
    assert not any(n.in_flight for n in nodes)
    finished = [n for n in attempts(store, task) if n.completed]
    assert 2 <= len(finished) < 6
    search(env, budget=6, concurrency=2)[0].run()
    done = attempts(store, task)
    # exactly the budget spent, every attempt finished, none numbered twice; a duplicate source (free: which
    # parent an attempt meets depends on the two in flight, so on timing) adds free attempts
    assert sum(1 for n in done if n.spends_budget) == 6 and all(n.completed for n in done)
    numbers = sorted(n.attempt for n in done)
    assert len(set(numbers)) == len(numbers) and numbers[:6] == list(range(1, 7))
    assert [n.id for n in done[: len(finished)]] == [n.id for n in finished]


def test_cancel_before_the_root_leaves_nothing_running(env):
    task, store = env
    cancel = threading.Event()
    cancel.set()
    assert search(env, budget=3)[0].run(cancel) is None
    assert [n.status for n in store.nodes(task.task_id())] == [ABANDONED]
    search(env, budget=1)[0].run()
    assert store.root(task.task_id()).status == "ok"


def test_zero_wall_time_evaluates_only_the_root(env):
    task, store = env
    s, progress = search(env, budget=5, wall_time_s=0.0)
    s.run()
    assert [n.kind for n in store.nodes(task.task_id())] == [ROOT]
    assert progress[-1].done and progress[-1].message == "wall time reached"


def test_an_evaluator_failure_stops_the_search_and_abandons_the_node(env):
    task, store = env
    with pytest.raises(EvaluatorFailed) as info:
        search(env, budget=5, ev=FakeEvaluator(raise_on=3))[0].run()
    assert isinstance(info.value.__cause__, OSError)
    nodes = store.nodes(task.task_id())
    assert not any(n.in_flight for n in nodes)
    broken = [n for n in nodes if n.status == ABANDONED]
    assert len(broken) == 1 and "evaluator failed" in broken[0].error
    search(env, budget=5)[0].run()
    assert sorted(n.attempt for n in attempts(store, task)) == [1, 2, 3, 4, 5]


def test_running_again_with_the_budget_spent_does_nothing(env):
    task, store = env
    search(env, budget=3)[0].run()
    before = [(n.id, n.updated) for n in store.nodes(task.task_id())]
    ev = FakeEvaluator()
    search(env, budget=3, ev=ev)[0].run()
    assert [(n.id, n.updated) for n in store.nodes(task.task_id())] == before and ev.calls == 0


def test_on_node_sees_every_write(env):
    task, store = env
    seen = []
    s, _ = search(env, budget=2)
    s.on_node = seen.append
    s.run()
    final = {n.id: n.status for n in store.nodes(task.task_id())}
    last = {}
    for n in seen:
        last[n.id] = n.status
    assert last == final and any(n.status == "running" for n in seen)


def test_a_second_search_on_the_same_tree_is_refused(env):
    task, store = env
    with tree_lock(store.path, task.task_id()):
        with pytest.raises(SearchBusy):
            search(env, budget=1)[0].run()


def test_the_plan_agent_sees_the_leaderboard_and_code_gets_marked_source(env):
    task, store = env
    team = FakeTeam()
    search(env, budget=6, team=team, leaderboard=2, policy="greedy")[0].run()
    plans = [c for a, c in team.contexts if a == "plan"]
    assert any(any(i.section == "leader" for i in c.window.history) for c in plans)
    assert all(c.hardware == "Fake GPU" for _, c in team.contexts)
    assert all(len([i for i in c.window.history if i.section == "leader"]) <= 2 for c in plans)


def test_unknown_policy_is_refused_up_front(env):
    with pytest.raises(ValueError):
        search(env, policy="nope")


def test_the_same_source_in_flight_twice_is_evaluated_once(env):
    task, store = env
    ev = FakeEvaluator(hang_after=1)  # the root passes; candidates wait for release

    def on_node(n):
        with_source = [x for x in s._snapshot() if x.kind != ROOT and x.source]
        if len(with_source) == 2:
            ev.release.set()

    s, progress = search(env, budget=2, concurrency=2, team=FakeTeam(factor=2.0), ev=ev, policy="sampling")
    s.on_node = on_node
    s.run()
    assert "found nothing new" in progress[-1].message
    done = attempts(store, task)
    dups = [n for n in done if n.duplicate_of is not None]
    assert dups and not any(n.spends_budget for n in dups)  # reused, not evaluated again, and free
    assert ev.calls == 1 + sum(1 for n in done if n.duplicate_of is None and n.evaluated)
    # this team only ever makes that one source: after as many free repeats as the budget, the search stops
    assert sum(1 for n in done if n.spends_budget) == 1 and len(dups) == 2


class BrokenTaskEvaluator(FakeEvaluator):
    """Answers like the real evaluator when the task's harness fails."""

    def evaluate(self, task, source, options=None):
        from stark_lsp.evaluate.result import EvalResult, Status

        self.calls += 1
        return EvalResult(Status.TASK_ERROR, "task error: get_inputs() failed: ZeroDivisionError: division by zero")


def test_a_broken_task_stops_the_search_instead_of_debugging_the_kernel(env):
    from stark_lsp.search import TaskBroken

    task, store = env
    ev = BrokenTaskEvaluator()
    with pytest.raises(TaskBroken) as info:
        search(env, budget=5, ev=ev)[0].run()
    assert "get_inputs() failed" in str(info.value)
    assert ev.calls == 1  # no attempt was spent on it
    [root] = store.nodes(task.task_id())
    assert root.status == ABANDONED and "ZeroDivisionError" in root.error
    search(env, budget=2)[0].run()  # once the task is fixed, the root is judged again
    assert store.root(task.task_id()).status == "ok"


def test_a_changed_task_file_starts_a_new_tree_and_keeps_the_old(env):
    task, store = env
    search(env, budget=3)[0].run()
    old = store.nodes(task.task_id())
    assert len(old) == 4
    task.path.write_text(fake_source(2.0))  # the user edited and saved the kernel
    s, progress = search(env, budget=2)
    s.run()
    tid = task.task_id()
    assert store.root(tid).source == fake_source(2.0)
    assert sorted(n.attempt for n in attempts(store, task)) == [1, 2]
    assert [n.id for n in store.nodes(tid + "~1")] == [n.id for n in old]  # kept, not deleted
    assert any("kept as " + tid + "~1" in p.message for p in progress)
    task.path.write_text(fake_source(3.0))
    search(env, budget=1)[0].run()
    assert store.has_tree(tid + "~2") and store.root(tid).source == fake_source(3.0)


def test_an_unchanged_task_file_resumes_the_same_tree(env):
    task, store = env
    search(env, budget=2)[0].run()
    search(env, budget=3)[0].run()
    assert not store.has_tree(task.task_id() + "~1")
    assert sorted(n.attempt for n in attempts(store, task)) == [1, 2, 3]


class DeletingEvaluator(FakeEvaluator):
    """Deletes the task's file after its second evaluation, as a user might from a terminal."""

    def evaluate(self, task, source, options=None):
        r = super().evaluate(task, source, options)
        if self.calls == 2:
            task.path.unlink()
        return r


def test_a_task_file_deleted_mid_search_stops_it_with_a_clear_line(env):
    from stark_lsp.search import TaskBroken

    task, store = env
    ev = DeletingEvaluator()
    with pytest.raises(TaskBroken) as info:
        search(env, budget=6, ev=ev)[0].run()
    assert "is gone (deleted or moved during the search)" in str(info.value) and task.path.name in str(info.value)
    assert ev.calls == 2  # nothing evaluated after it went


class StoppingEvaluator(FakeEvaluator):
    """Holds its second evaluation until the search is cancelled, then answers as the real evaluator does
    for an evaluation the caller stopped (``cancel()``)."""

    def __init__(self):
        super().__init__()
        self.stop = threading.Event()

    def cancel(self):
        self.stop.set()

    def evaluate(self, task, source, options=None):
        from stark_lsp.evaluate.result import EvalResult, Status

        r = super().evaluate(task, source, options)
        if self.calls == 1:
            return r
        self.stop.wait(10)
        return EvalResult(Status.TIMEOUT, "stopped before it finished (the search was stopped)", stopped=True)


def test_an_attempt_the_search_stopped_is_not_a_failure_and_is_redone(env):
    task, store = env
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()  # Ctrl-C while the attempt is being evaluated
    search(env, budget=3, ev=StoppingEvaluator(), concurrency=1)[0].run(cancel)
    cut = [n for n in store.nodes(task.task_id()) if n.parent_id is not None and n.status == ABANDONED]
    assert cut and all("redone when the search continues" in n.error for n in cut)
    assert not any(n.failed for n in store.nodes(task.task_id()))
    search(env, budget=3, ev=FakeEvaluator(), concurrency=1)[0].run()  # the search continues: the slot is redone
    again = [n for n in store.nodes(task.task_id()) if n.id in {c.id for c in cut}]
    assert again and all(n.error.endswith("its attempt was redone when the search continued") for n in again)
    done = [n for n in store.nodes(task.task_id()) if n.parent_id is not None and n.status != ABANDONED]
    assert len([n for n in done if n.spends_budget]) == 3


def test_each_candidate_races_the_best_so_far_and_the_re_timing_does_not(env):
    task, store = env
    ev = FakeEvaluator()
    s, _ = search(env, ev=ev, team=FakeTeam(fail_rate=0.0), budget=6)
    s.run()
    best_ms = []  # the best runtime before each evaluation, from the verdicts as they came
    shown = [o.race_ms for o in ev.settings]
    runtimes = [verdict_ms(src) for src in ev.sources]
    for i in range(len(runtimes)):
        seen = [r for r in runtimes[:i] if r is not None]
        best_ms.append(min(seen) if seen else None)
    assert shown[0] is None  # the root: nothing to beat yet
    assert shown == best_ms
    assert any(x is not None for x in shown[1:])


class SlowBaselineEvaluator(FakeEvaluator):
    """The fake's verdicts with every speedup kept and each candidate's runtime its speedup in ms (the
    reference's timing varying with it, as on a machine whose baseline drifts): the fastest runtime is the
    lowest speedup, so a "best" worked out from runtimes disagrees with the tree view's rule. At each
    evaluation it records the tree view's best so far over the nodes ``on_node`` has seen."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.seen: dict = {}
        self.view_best: list = []  # TreeView.best_so_far before each evaluation
        self.lowest: list = []  # the lowest runtime so far, a rule that is not the product's

    def evaluate(self, task, source, options=None):
        from dataclasses import replace

        from fakes import _timing
        from stark_lsp.search.tree_view import TreeView

        self.view_best.append(TreeView.of(self.seen.values()).best_so_far)
        ms = [n.runtime_ms for n in self.seen.values() if n.correct and n.runtime_ms and n.duplicate_of is None]
        self.lowest.append(min(ms) if ms else None)
        r = super().evaluate(task, source, options)
        if r.runtime is None:
            return r
        s = r.runtime.speedup
        return replace(r, runtime=replace(r.runtime, candidate=_timing(s), reference=_timing(s * s)))


def test_the_race_figure_is_the_tree_views_best_so_far(env):
    ev = SlowBaselineEvaluator()
    s, _ = search(env, ev=ev, team=FakeTeam(fail_rate=0.2), budget=8)
    s.on_node = lambda n: ev.seen.__setitem__(n.id, n)
    s.run()
    shown = [o.race_ms for o in ev.settings]
    assert shown == [b.runtime_ms if b is not None else None for b in ev.view_best]
    assert shown[0] is None and any(x is not None for x in shown[1:])
    assert shown != ev.lowest  # the speedup's rule, not the lowest runtime's: on this machine the two differ


def test_racing_can_be_turned_off(env):
    ev = FakeEvaluator()
    s, _ = search(env, ev=ev, team=FakeTeam(fail_rate=0.0), budget=4, race=False)
    s.run()
    assert all(o.race_ms is None for o in ev.settings)


def test_the_re_timing_times_in_full():
    from stark_lsp.evaluate.options import EvalOptions
    from stark_lsp.search.retime import retime_options

    assert retime_options(EvalOptions(race_ms=0.5)).race_ms is None


def verdict_ms(source):
    from fakes import verdict

    r = verdict(source)
    return r.runtime.candidate.median_ms if r.runtime else None


def test_candidates_are_screened_while_the_root_and_the_re_timing_are_timed_in_full(env):
    from stark_lsp.evaluate.options import EvalOptions
    from stark_lsp.search.retime import SCREEN_BUDGET_S, SCREEN_NOISE

    ev = FakeEvaluator()
    base = EvalOptions()
    s, _ = search(env, ev=ev, team=FakeTeam(fail_rate=0.0), budget=4, retime_top=2, retime_rounds=1,
                  eval_options=base)
    s.run()
    root, *rest = ev.settings
    retimed = [o for o in rest if o.trials == 1]
    screened = [o for o in rest if o.trials != 1]
    assert root.time_budget_s == base.time_budget_s and root.noise_target == base.noise_target
    assert screened and all(o.time_budget_s == SCREEN_BUDGET_S and o.noise_target == SCREEN_NOISE for o in screened)
    assert retimed and all(o.time_budget_s > base.time_budget_s for o in retimed)
    # every evaluation of the search divides by the same baselines: one timing of them serves it all
    assert len({(o.for_baselines().time_budget_s, o.for_baselines().reps, o.for_baselines().noise_target)
                for o in ev.settings}) == 1


def test_without_re_timing_every_candidate_is_timed_in_full(env):
    from stark_lsp.evaluate.options import EvalOptions

    ev = FakeEvaluator()
    s, _ = search(env, ev=ev, team=FakeTeam(fail_rate=0.0), budget=3, eval_options=EvalOptions())
    s.run()
    assert all(o.time_budget_s == EvalOptions().time_budget_s for o in ev.settings)


def test_the_baselines_settings_follow_the_candidates_unless_pinned():
    from stark_lsp.evaluate.options import EvalOptions
    from stark_lsp.search.retime import screen_options

    o = EvalOptions(time_budget_s=2.0, reps=50, noise_target=0.01, race_ms=3.0)
    b = o.for_baselines()
    assert (b.time_budget_s, b.reps, b.noise_target, b.race_ms) == (4.0, 50, 0.01, None)
    assert EvalOptions.from_dict(o.pinned_baselines().to_dict()).for_baselines() == b
    assert screen_options(o).for_baselines() != b  # unpinned: screening would time the baselines again
    assert screen_options(o.pinned_baselines()).for_baselines() == b
    # screening never asks for more than the search did
    tight = screen_options(EvalOptions(time_budget_s=0.2, reps=10, noise_target=0.1))
    assert (tight.time_budget_s, tight.reps, tight.noise_target) == (0.2, 10, 0.1)


def test_an_agents_notice_reaches_the_progress_as_a_lasting_message(env):
    """What an agent must tell the user once (``ctx.on_notice``: a prompt over its budget) comes to the
    progress listener marked lasting, so a terminal keeps it; a streamed answer's state does not."""
    team = FakeTeam(fail_rate=0.0)
    planner_plan = team.planner.plan

    def plan(ctx):
        ctx.on_notice("the prompt for the plan agent is over its budget")
        ctx.on_wait("waiting for the plan agent (1 s, 3 tokens)")
        return planner_plan(ctx)

    team.planner.plan = plan
    s, progress = search(env, team=team, budget=1)
    s.run()
    said = {p.message: p.lasting for p in progress if p.message}
    assert said["the prompt for the plan agent is over its budget"] is True
    assert said["waiting for the plan agent (1 s, 3 tokens)"] is False
