import random

from stark_lsp.search.node import AGENT_ERROR, DEBUG, RUNNING
from stark_lsp.search.policies import make_policy

from test_policy_stark import mk


def test_sampling_always_expands_the_root():
    nodes = [mk(1, speedup=1.0), mk(2, 1, speedup=5.0), mk(3, 2, speedup=9.0)]
    for s in range(20):
        sel = make_policy("sampling").select(nodes, random.Random(s))
        assert (sel.node_id, sel.action) == (1, "plan")


def test_sampling_debugs_a_failed_root():
    sel = make_policy("sampling").select([mk(1, status="compile_error")], random.Random(0))
    assert (sel.node_id, sel.action) == (1, "debug")


def test_reflexion_refines_the_last_evaluated_attempt():
    pol = make_policy("reflexion")
    nodes = [mk(1, speedup=1.0), mk(2, 1, speedup=2.0), mk(3, 2, status="incorrect")]
    assert (pol.select(nodes, random.Random(0)).node_id, pol.select(nodes, random.Random(0)).action) == (3, "debug")
    nodes += [mk(4, 3, speedup=0.9, kind=DEBUG), mk(5, 4, status=AGENT_ERROR), mk(6, 4, status=RUNNING, speedup=None)]
    sel = pol.select(nodes, random.Random(0))
    assert (sel.node_id, sel.action) == (4, "plan")  # agent errors and in-flight nodes are skipped


def test_greedy_takes_the_best_node_whatever_the_seed():
    nodes = [mk(1, speedup=1.0), mk(2, 1, speedup=2.0), mk(3, 1, speedup=1.5), mk(4, 2, status="crashed")]
    assert {make_policy("greedy").select(nodes, random.Random(s)).node_id for s in range(30)} == {2}


def test_greedy_without_a_correct_node_debugs_the_newest_failure():
    nodes = [mk(1, status="compile_error"), mk(2, 1, status="runtime_error", kind=DEBUG)]
    sel = make_policy("greedy").select(nodes, random.Random(0))
    assert (sel.node_id, sel.action) == (2, "debug")


def test_baselines_wait_for_the_root():
    for name in ("sampling", "reflexion", "greedy"):
        assert make_policy(name).select([mk(1, status=RUNNING, speedup=None)], random.Random(0)) is None
