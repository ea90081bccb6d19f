import random

import pytest

from stark_lsp.search.node import AGENT_ERROR, DEBUG, PLAN_CODE, ROOT, RUNNING, Node
from stark_lsp.search.policies import StarkPolicy, leaderboard, make_policy


def mk(id, parent=None, status="ok", speedup=None, kind=None, dup=None):
    if status == "ok" and speedup is None:
        speedup = 1.0
    return Node(id=id, task_id="t", parent_id=parent, kind=kind or (ROOT if parent is None else PLAN_CODE),
                status=status, speedup=speedup, duplicate_of=dup, source=f"src{id}")


def picks(policy, nodes, seeds=range(200)):
    return [policy.select(nodes, random.Random(s)) for s in seeds]


def test_only_the_root_ok_goes_to_plan():
    sel = StarkPolicy().select([mk(1)], random.Random(0))
    assert (sel.node_id, sel.action, sel.fallback) == (1, "plan", False)


def test_a_failed_root_goes_to_debug():
    for s in picks(StarkPolicy(), [mk(1, status="compile_error")]):
        assert (s.node_id, s.action) == (1, "debug")


def test_nothing_is_selected_before_the_root_has_a_verdict():
    assert StarkPolicy().select([mk(1, status=RUNNING)], random.Random(0)) is None
    assert StarkPolicy().select([], random.Random(0)) is None


def test_exploit_takes_the_best_correct_node():
    nodes = [mk(1), mk(2, 1, speedup=1.5), mk(3, 1, speedup=2.5), mk(4, 2, status="incorrect"), mk(5, 3, speedup=0.7)]
    for s in picks(StarkPolicy(epsilon=0.0), nodes):
        assert (s.node_id, s.action) == (3, "plan") and s.reason.startswith("exploit")


def test_explore_picks_uniformly_among_expandable_leaves_and_routes_failures_to_debug():
    nodes = [mk(1), mk(2, 1, speedup=1.5), mk(3, 1, speedup=2.5), mk(4, 2, status="incorrect"),
             mk(5, 3, speedup=0.7), mk(6, 3, status=AGENT_ERROR)]
    sels = picks(StarkPolicy(epsilon=1.0), nodes)
    assert {s.node_id for s in sels} == {4, 5}  # leaves with a verdict; agent errors are not candidates
    assert all(s.action == ("debug" if s.node_id == 4 else "plan") for s in sels)
    assert 60 < sum(s.node_id == 4 for s in sels) < 140


def test_epsilon_mixes_explore_and_exploit():
    nodes = [mk(1), mk(2, 1, speedup=3.0), mk(3, 2, speedup=0.5)]
    sels = picks(StarkPolicy(epsilon=0.35), nodes, range(400))
    explored = sum(s.reason.startswith("explore") for s in sels)
    assert 90 < explored < 190  # about 140 of 400
    assert {s.node_id for s in sels if s.reason.startswith("exploit")} == {2}


def test_the_root_takes_at_most_n_root_children_in_flight_ones_included():
    root_kids = [mk(i, 1, speedup=0.5) for i in range(2, 6)]
    nodes = [mk(1, speedup=1.0)] + root_kids
    assert StarkPolicy(epsilon=0.0, n_root=5).select(nodes, random.Random(0)).node_id == 1
    full = nodes + [mk(6, 1, status=RUNNING, speedup=None)]
    sel = StarkPolicy(epsilon=0.0, n_root=5).select(full, random.Random(0))
    assert sel.node_id in {2, 3, 4, 5} and not sel.fallback


def test_a_node_takes_at_most_n_child_children_in_flight_ones_included():
    base = [mk(1, speedup=1.0), mk(2, 1, speedup=2.0)]
    pol = StarkPolicy(epsilon=0.0, n_child=3)
    two = [mk(3, 2, speedup=0.5), mk(4, 2, status="incorrect")]
    assert pol.select(base + two, random.Random(0)).node_id == 2  # 2 children: room for one more
    three = two + [mk(5, 2, speedup=0.7)]
    sel = pol.select(base + three, random.Random(0))
    assert sel.node_id != 2 and not sel.fallback  # full, though one child is correct
    pending = two + [mk(5, 2, status=RUNNING, speedup=None)]
    assert pol.select(base + pending, random.Random(0)).node_id != 2  # an attempt in flight counts
    abandoned = two + [mk(5, 2, status="abandoned", speedup=None)]
    assert pol.select(base + abandoned, random.Random(0)).node_id == 2  # an abandoned one does not
    assert StarkPolicy(epsilon=0.0, n_child=4).select(base + three, random.Random(0)).node_id == 2


def test_a_full_node_whose_children_all_failed_is_pruned_from_the_fallbacks():
    # node 2 (3x) has three failed children; node 3 (2x) three children, one correct; the root is full
    nodes = [mk(1, speedup=1.0), mk(2, 1, speedup=3.0), mk(3, 1, speedup=2.0)]
    nodes += [mk(i, 1, status=AGENT_ERROR) for i in (4, 5, 6)]
    nodes += [mk(i, 2, status="compile_error", kind=DEBUG) for i in (7, 8, 9)]
    nodes += [mk(10, 3, speedup=0.5), mk(11, 3, status=AGENT_ERROR), mk(12, 3, status=AGENT_ERROR)]
    # every leaf that could be expanded is full of failures
    nodes += [mk(200 + 10 * i + j, i, status=AGENT_ERROR, kind=DEBUG) for i in (7, 8, 9, 10) for j in range(3)]
    pol = StarkPolicy(epsilon=0.0, n_root=5, n_child=3)
    view_sel = pol.select(nodes, random.Random(0))
    assert view_sel.fallback and view_sel.node_id == 3  # 2 is the best, but a dead end
    from stark_lsp.search.policies import PolicyTree
    view = PolicyTree(nodes)
    assert view.pruned(view.nodes[2], 3) and not view.pruned(view.nodes[3], 3)


def test_everything_pruned_falls_back_to_the_best_node_and_says_so():
    nodes = [mk(1, speedup=1.0)] + [mk(i, 1, status="incorrect") for i in range(2, 7)]
    # every leaf is an agent error (no candidate), every inner node pruned, the root full
    nodes += [mk(100 + i * 10 + j, i, status=AGENT_ERROR, kind=DEBUG) for i in range(2, 7) for j in range(4)]
    sel = StarkPolicy(epsilon=0.0, n_root=5, n_child=3).select(nodes, random.Random(0))
    assert sel.fallback and "pruned" in sel.reason
    assert (sel.node_id, sel.action) == (1, "plan")


def test_everything_pruned_with_a_failed_root_falls_back_to_debugging_it():
    nodes = [mk(1, status="compile_error")] + [mk(i, 1, status="compile_error", kind=DEBUG) for i in range(2, 6)]
    nodes += [mk(10 + i * 10 + j, i, status=AGENT_ERROR, kind=DEBUG) for i in range(2, 6) for j in range(4)]
    sel = StarkPolicy(epsilon=0.5, n_child=3).select(nodes, random.Random(3))
    assert sel.fallback and (sel.node_id, sel.action) == (1, "debug")


def test_without_any_correct_node_exploit_debugs_the_newest_failure():
    nodes = [mk(1, status="compile_error"), mk(2, 1, status="incorrect", kind=DEBUG)]
    sel = StarkPolicy(epsilon=0.0).select(nodes, random.Random(0))
    assert (sel.node_id, sel.action) == (2, "debug")


def test_duplicates_are_never_selected():
    nodes = [mk(1, speedup=1.0), mk(2, 1, speedup=2.0), mk(3, 1, speedup=2.0, dup=2)]
    assert {s.node_id for s in picks(StarkPolicy(epsilon=1.0), nodes)} == {2}


def test_abandoned_nodes_are_invisible():
    nodes = [mk(1, speedup=1.0)] + [mk(i, 1, status="abandoned", speedup=None) for i in range(2, 8)]
    sel = StarkPolicy(epsilon=0.0, n_root=5).select(nodes, random.Random(0))
    assert sel.node_id == 1 and not sel.fallback


def test_same_seed_same_choices():
    nodes = [mk(1)] + [mk(i, 1, speedup=0.5 + i / 10) for i in range(2, 5)] + [mk(5, 2, status="timeout")]
    a = [(s.node_id, s.action) for s in picks(StarkPolicy(), nodes, range(50))]
    b = [(s.node_id, s.action) for s in picks(StarkPolicy(), nodes, range(50))]
    assert a == b and len(set(a)) > 1


def test_leaderboard_is_top_k_correct_by_speedup_without_duplicates():
    nodes = [mk(1, speedup=1.0), mk(2, 1, speedup=3.0), mk(3, 1, speedup=2.0), mk(4, 1, status="cheat", speedup=50.0),
             mk(5, 1, speedup=3.0, dup=2), mk(6, 1, speedup=3.0)]
    assert [n.id for n in leaderboard(nodes, 3)] == [2, 6, 3]


def test_make_policy_by_name_and_validation():
    p = make_policy("stark", epsilon=0.2, n_root=4, n_child=2)
    assert (p.epsilon, p.n_root, p.n_child) == (0.2, 4, 2)
    assert make_policy("greedy").name == "greedy"
    with pytest.raises(ValueError, match="unknown policy"):
        make_policy("mcts")
    with pytest.raises(ValueError):
        make_policy("stark", epsilon=1.5)
