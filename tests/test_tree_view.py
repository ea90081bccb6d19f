"""One tree view (search/tree_view.py) for every surface: the same root, best, outcomes, "× your kernel"
and counts over the store's Nodes (the CLI, the bench, the search's progress) as over the server's
NodeView copies (issue 26). Pure: no pygls, no torch."""

from __future__ import annotations

from stark_lsp.evaluate.result import EvalResult, Runtime, Status, Timing
from stark_lsp.search.node import AGENT_ERROR, Node, had_nothing_new, speedup_vs_yours
from stark_lsp.search.tree_store import TreeStore
from stark_lsp.search.tree_view import TreeView, best_node, outcome, tree_view
from stark_lsp.source_digest import NOTHING_NEW


def _timing(ms: float) -> Timing:
    return Timing(median_ms=ms, mean_ms=ms, min_ms=ms, max_ms=ms, iqr_ms=0.0, std_ms=0.0, reps=10)


def ok(id: int, parent: int | None, speed: float, retimed: dict | None = None, **kw) -> Node:
    ref = 1.0
    result = EvalResult(Status.OK, runtime=Runtime("GPU", True, _timing(ref / speed), _timing(ref), speed))
    return Node(id=id, task_id="t", parent_id=parent, kind="root" if parent is None else "plan_code", status="ok",
                attempt=0 if parent is None else id, source=f"s{id}", result=result, speedup=speed,
                runtime_ms=ref / speed, retimed=retimed, **kw)


def other(id: int, parent: int, status: str, **kw) -> Node:
    return Node(id=id, task_id="t", parent_id=parent, kind="plan_code", status=status, attempt=id, **kw)


def retimed(speedup: float, vs_root: float) -> dict:
    return {"rounds": 3, "speedup": speedup, "speedup_low": speedup, "speedup_high": speedup, "runtime_ms": 1 / speedup,
            "vs_root": vs_root, "vs_root_low": vs_root, "vs_root_high": vs_root}


def nodes() -> list[Node]:
    return [
        ok(1, None, 1.0),
        ok(2, 1, 2.0),
        other(3, 1, "compile_error", error="boom"),
        ok(4, 2, 0.5),
        other(5, 2, AGENT_ERROR, error=f"{NOTHING_NEW}: every move is in the tree", nothing_new=True),
        other(6, 1, AGENT_ERROR, error="the plan agent broke the marker rules"),
        ok(7, 1, 2.0, duplicate_of=2),
        other(8, 1, "running"),
        other(9, 1, "abandoned"),
    ]


def facts(view: TreeView) -> tuple:
    return (view.root.id, view.best.id, view.best_candidate.id, view.spent, view.finished, view.correct, view.failed,
            view.running, view.counts, [n.id for n in view.ranked_candidates()],
            {n.id: (outcome(view, n), view.gain(n)) for n in view.nodes})


def test_the_view_over_nodes_and_over_their_copies_says_the_same():
    over_nodes, over_copies = TreeView.of(nodes(), "t"), tree_view("t", nodes())
    assert facts(over_nodes) == facts(over_copies)
    root, best, _, spent, finished, correct, failed, running, counts, ranked, each = facts(over_nodes)
    assert (root, best, spent, finished, correct, failed, running) == (1, 2, 4, 6, 3, 2, 1)
    assert counts == "4 attempts, 3 correct, 2 free (nothing new, or duplicates)"  # #5 nothing new, #7 a duplicate
    assert ranked == [2, 4]
    assert each[5] == ("nothing_new", None) and each[3] == ("failed", None) and each[6] == ("failed", None)
    assert each[2] == ("faster", 2.0) and each[4] == ("slower", 0.5) and each[1] == ("root", 1.0)
    assert each[8] == ("running", None) and each[9] == ("abandoned", None)


def test_nothing_new_is_the_flag_on_an_agent_error_only():
    flagged_but_evaluated = other(10, 1, "compile_error", nothing_new=True)
    assert not had_nothing_new(flagged_but_evaluated) and had_nothing_new(nodes()[4])
    view = tree_view("t", [nodes()[0], flagged_but_evaluated])
    assert not view.get(10).nothing_new and outcome(view, view.get(10)) == "failed"


def test_the_re_timed_best_and_a_root_that_was_faster_in_the_same_rounds():
    lead = [ok(1, None, 1.0), ok(2, 1, 3.0, retimed(1.5, 1.4)), ok(3, 1, 2.0, retimed(2.5, 2.2))]
    for view in (TreeView.of(lead), tree_view("t", lead)):
        assert view.best.id == 3 and view.gain(view.get(3)) == 2.2  # the re-timed figures, not the single run
    slower = [ok(1, None, 1.0), ok(2, 1, 3.0, retimed(1.5, 0.9))]
    for view in (TreeView.of(slower), tree_view("t", slower)):
        assert view.best.id == 1 and view.best_candidate is None  # the root, timed in the same rounds, was faster
    assert best_node(slower).id == 1 and best_node(lead[1:]).id == 3


def test_one_adapter_for_your_kernel_over_nodes_and_views():
    tree = nodes()
    root, best = tree[0], tree[1]
    copies = tree_view("t", tree)
    assert speedup_vs_yours(best, root) == speedup_vs_yours(copies.get(2), copies.root) == 2.0
    assert TreeView.of(tree).gain(best) == copies.gain(copies.get(2)) == 2.0


def test_the_store_gives_the_view(tmp_path):
    from fakes import make_fake_task

    with TreeStore.open(tmp_path / ".stark" / "tree.sqlite") as store:
        tid = store.create_tree(make_fake_task(tmp_path))
        root = store.add_node(tid, None, "root", "running", source="a")
        store.update_node(root.id, status="ok", speedup=1.0, runtime_ms=1.0)
        kid = store.add_node(tid, root.id, "plan_code", "running", source="b", attempt=1)
        store.update_node(kid.id, status="ok", speedup=2.0, runtime_ms=0.5)
        view = store.view(tid)
        assert view.task_id == tid and view.root.id == root.id and view.best.id == kid.id == store.best(tid).id
        assert view.gain(view.best) == 2.0 and view.spent == 1
