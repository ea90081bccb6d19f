"""``AgentContext.seen``: the built-in agents never propose a source the tree
holds while they have an alternative; the context carries the digests; the
policies stop choosing a node an agent found exhausted; the engine asks the
agents again when a concurrent attempt made the same source meanwhile."""

import threading
from pathlib import Path

import pytest

from fakes import FakeEvaluator, _SPEED, fake_source, make_fake_task
from stark_lsp.agents.base import (AgentContext, AgentError, CodeResult, Exchange, NothingNew, PlanResult,
                                   Team)
from stark_lsp.context_window import Window, WindowEntry
from stark_lsp.agents.builtin import make_builtin_team
from stark_lsp.agents.builtin.plan import BuiltinPlanner
from stark_lsp.markers.syntax import apply_replacements
from stark_lsp.search import Search, SearchConfig, TreeStore, build_context
from stark_lsp.source_digest import NOTHING_NEW, source_digest
from stark_lsp.search.node import ABANDONED, AGENT_ERROR, PLAN_CODE, ROOT, RUNNING, Node
from stark_lsp.search.policies import make_policy
from stark_lsp.search.tree_store import source_hash
from stark_lsp.tasks.spec import load_task

SAMPLES = Path(__file__).resolve().parent.parent / "samples" / "mistuned"
ALL = ["swish_add.py", "row_softmax.py", "row_sum.cu", "bias_relu2d.cu"]


def ctx_for(name, source=None, seen=frozenset(), seed=0, summary="#1 root: ok, 1.00x", diagnostics="", items=None):
    task = load_task(SAMPLES / name)
    src = task.root_source() if source is None else source
    if items is None:
        items = [WindowEntry("root", 0, "#0 root: ok, 1.00x", task.root_source())]
    return AgentContext(task, 1, src, summary, diagnostics, Window(history=tuple(items)), seed=seed, seen=frozenset(seen))


def implement(ctx, plan):
    code = make_builtin_team().coder.code(ctx, plan.marked_source)
    return apply_replacements(plan.marked_source, code.replacements)


def test_the_digest_is_the_store_hash():
    assert source_digest("abc") == source_hash("abc") == \
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


@pytest.mark.parametrize("name", ALL)
def test_planner_never_proposes_a_seen_source_while_an_alternative_exists(name):
    planner = BuiltinPlanner()
    for seed in range(4):
        base = ctx_for(name, seed=seed)
        # every source the planner could make from this node, in its order
        reachable = [s for s in (planner.implemented(base, planner.mark(base, t, v).marked_source)
                                 for t, v in planner.ranked(base)) if s is not None]
        assert len(reachable) >= 3
        seen = {source_digest(base.node_source)}
        for _ in range(len(reachable) + 1):
            ctx = ctx_for(name, seed=seed, seen=seen)
            left = [s for s in reachable if source_digest(s) not in seen]
            if not left:
                with pytest.raises(AgentError, match=NOTHING_NEW):
                    planner.plan(ctx)
                break
            new = implement(ctx, planner.plan(ctx))
            assert source_digest(new) not in seen
            assert new == left[0]  # the next-best one, not any one
            seen.add(source_digest(new))
        else:
            pytest.fail("the planner never ran out")


def test_with_nothing_seen_the_plan_is_the_first_ranked_option():
    for name in ALL:
        for seed in range(6):
            planner = BuiltinPlanner()
            ctx = ctx_for(name, seed=seed)
            t, v = planner.ranked(ctx)[0]
            assert planner.plan(ctx).marked_source == planner.mark(ctx, t, v).marked_source


def test_the_seen_best_move_gives_way_to_the_next_best():
    planner = BuiltinPlanner(explore=0.0, noise=0.0)
    ctx = ctx_for("row_sum.cu")
    first = planner.plan(ctx)
    assert first.summary == "set THREADS to 256 (was 32)"
    seen = {source_digest(implement(ctx, first))}
    second = planner.plan(ctx_for("row_sum.cu", seen=seen))
    assert second.summary != first.summary and source_digest(implement(ctx, second)) not in seen


def failed_ctx(name, source, message, seen=(), status="compile_error"):
    return ctx_for(name, source=source, seen=seen, summary=f"#3 plan_code: {status}: {message}",
                   diagnostics=message)


def test_debugger_skips_repairs_the_tree_holds_and_says_when_none_is_left():
    root = load_task(SAMPLES / "swish_add.py").root_source()
    node = root.replace("BLOCK_SIZE = 32", "BLOCK_SIZE = 4096")
    msg = "out of resource: shared memory, Required: 262144, Hardware limit: 232448"
    team = make_builtin_team()
    first = team.debugger.debug(failed_ctx("swish_add.py", node, msg))
    assert "BLOCK_SIZE = 2048" in first.source  # the gentlest step down
    seen = {source_digest(first.source)}
    made = [first.source]
    while True:
        try:
            fix = team.debugger.debug(failed_ctx("swish_add.py", node, msg, seen))
        except AgentError as e:
            assert NOTHING_NEW in str(e)
            break
        assert source_digest(fix.source) not in seen
        seen.add(source_digest(fix.source))
        made.append(fix.source)
    assert len(made) >= 5 and len(set(made)) == len(made)


def test_debugger_revert_takes_the_next_tunable_when_the_first_revert_is_seen():
    root = load_task(SAMPLES / "row_sum.cu").root_source()
    assert "#define THREADS 32" in root
    node = root.replace("#define THREADS 32", "#define THREADS 512")
    assert "// stark-nvcc-flags: -O3\n" in node
    node = node.replace("// stark-nvcc-flags: -O3\n", "// stark-nvcc-flags: -O3 --use_fast_math\n")
    team = make_builtin_team()
    ctx = failed_ctx("row_sum.cu", node, "trial 1: mismatch", status="incorrect")
    first = team.debugger.debug(ctx)
    assert "#define THREADS 32" in first.source  # furthest from the root first
    second = team.debugger.debug(failed_ctx("row_sum.cu", node, "trial 1: mismatch", {source_digest(first.source)},
                                            status="incorrect"))
    assert "#define THREADS 512" in second.source and "--use_fast_math" not in second.source
    with pytest.raises(AgentError, match=NOTHING_NEW):
        team.debugger.debug(failed_ctx("row_sum.cu", node, "trial 1: mismatch",
                                       {source_digest(first.source), source_digest(second.source)}, status="incorrect"))


# -- the context -------------------------------------------------------------
def _node(i, parent, status, source, kind=PLAN_CODE, speedup=None):
    return Node(id=i, task_id="t", parent_id=parent, kind=kind, status=status, source=source, speedup=speedup)


def test_context_seen_holds_every_source_in_the_tree_in_flight_too_abandoned_not(tmp_path):
    task = make_fake_task(tmp_path)
    nodes = [
        _node(1, None, "ok", fake_source(1.0), ROOT, 1.0),
        _node(2, 1, "ok", fake_source(2.0), speedup=2.0),
        _node(3, 1, "compile_error", fake_source(3.0, "compile_error")),
        _node(4, 2, RUNNING, fake_source(4.0)),  # in flight, being evaluated
        _node(5, 2, RUNNING, ""),  # in flight, no source yet
        _node(6, 1, ABANDONED, fake_source(6.0)),
        _node(7, 1, AGENT_ERROR, ""),
    ]
    for agent in ("plan", "code", "debug"):
        ctx = build_context(agent, task, nodes, 2)
        assert ctx.seen == {source_digest(fake_source(s, st)) for s, st in
                            ((1.0, "ok"), (2.0, "ok"), (3.0, "compile_error"), (4.0, "ok"))}


# -- the policies ---------------------------------------------------------------
def _tree_with_exhausted_best():
    return [
        _node(1, None, "ok", "r", ROOT, 1.0),
        _node(2, 1, "ok", "a", speedup=3.0),
        _node(3, 1, "ok", "b", speedup=2.0),
        _node(4, 2, AGENT_ERROR, ""),
    ]


def test_policies_never_choose_an_exhausted_node():
    import random

    nodes = _tree_with_exhausted_best()
    nodes[3].error = f"plan agent: {NOTHING_NEW}: all 6 option(s) give a source already in the tree"
    nodes[3].nothing_new = True
    for name in ("stark", "greedy"):
        picks = {make_policy(name).select(nodes, random.Random(k)).node_id for k in range(20)}
        assert 2 not in picks and 3 in picks, (name, picks)
    # another agent error (not exhaustion) does not stop the best node being exploited
    other = _tree_with_exhausted_best()
    other[3].error = "plan agent: the endpoint timed out"
    assert make_policy("greedy").select(other, random.Random(0)).node_id == 2


def test_every_node_exhausted_means_nothing_to_expand():
    import random

    nodes = [_node(1, None, "ok", "r", ROOT, 1.0), _node(2, 1, AGENT_ERROR, "")]
    nodes[1].error = f"plan agent: {NOTHING_NEW}"
    nodes[1].nothing_new = True
    for name in ("stark", "greedy", "sampling", "reflexion"):
        assert make_policy(name).select(nodes, random.Random(0)) is None, name


# -- the engine: two attempts that plan at once ------------------------------------------
class SeenAwareTeam(Team):
    """Marks the SPEED lines; sets SPEED to the smallest integer >= 2 whose
    source is not in ``ctx.seen``. The first two Code calls wait for each
    other, so they were given the same ``seen`` and make the same source."""

    def __init__(self):
        self.barrier = threading.Barrier(2, timeout=10)
        self.codes = 0
        self.lock = threading.Lock()
        super().__init__("seen-aware", self, self, self)

    def plan(self, ctx):
        lines = ctx.node_source.split("\n")
        i = next(k for k, line in enumerate(lines) if line.startswith("SPEED = "))
        marked = lines[:i] + ["# @stark begin s1: retune"] + lines[i:i + 2] + ["# @stark end s1"] + lines[i + 2:]
        return PlanResult("\n".join(marked), "retune", [Exchange("plan", "", "", )])

    def code(self, ctx, marked_source):
        with self.lock:
            self.codes += 1
            n = self.codes
        if n <= 2:
            self.barrier.wait()
        status_line = 'STATUS = "ok"\n'
        for speed in range(2, 100):
            text = f"SPEED = {float(speed)}\n{status_line}"
            if source_digest(apply_replacements(marked_source, {"s1": text})) not in ctx.seen:
                return CodeResult({"s1": text}, [Exchange("code", "", text)])
        raise NothingNew(NOTHING_NEW)


@pytest.mark.timeout(60)
def test_a_race_between_two_attempts_is_retried_not_evaluated_twice(tmp_path):
    task = make_fake_task(tmp_path)
    ev = FakeEvaluator()
    team = SeenAwareTeam()
    with TreeStore.open(tmp_path / "tree.sqlite") as store:
        Search(task, store, ev, team, SearchConfig(budget=4, concurrency=2, policy="sampling", retime_top=0)).run()
        nodes = [n for n in store.nodes(task.task_id()) if n.kind != ROOT]
    assert len(nodes) == 4 and all(n.duplicate_of is None for n in nodes)
    assert len(ev.sources) == len(set(ev.sources)) == 5
    speeds = sorted(float(_SPEED.search(n.source).group(1)) for n in nodes)
    assert speeds == [2.0, 3.0, 4.0, 5.0]
    # the attempt that lost the forced race asked its agents twice, and both rounds are on
    # record; later attempts may race too (timing), but every round is plan + code
    counts = sorted(len(n.exchanges) for n in nodes)
    assert counts[0] == 2 and counts[-1] >= 4 and all(c % 2 == 0 for c in counts), counts
