"""stark show --node N of a node in an archived tree (issue 24): it said 'no node #N in this tree' with no
word of --archived; now it says which archived tree holds it and the exact command that shows it, which is
pasted back here. The reverse (--archived K --node N of a node of the current tree) names the current tree."""

from __future__ import annotations

import shlex

import pytest

from fakes import FakeEvaluator, FakeTeam, make_fake_task
from stark_lsp import cli, exit_codes
from stark_lsp.commands import optimize_cmd

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def two_trees(tmp_path, monkeypatch, capsys):
    """sub/k.py searched twice with --store st, the second time --fresh: tree 1 archived (nodes 1-3),
    the current tree nodes 4-6."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda args, warm_for=None: FakeEvaluator())
    monkeypatch.setattr(optimize_cmd, "team_from_args", lambda args: FakeTeam())
    (tmp_path / "sub").mkdir()
    make_fake_task(tmp_path / "sub")
    for fresh in ([], ["--fresh"]):
        assert cli.main(["optimize", "sub/k.py", "--budget", "2", "--concurrency", "1", "--store", "st",
                         *fresh]) in (0, 3)
    capsys.readouterr()


def test_show_node_of_an_archived_tree_names_the_tree_and_the_command(two_trees, capsys):
    assert cli.main(["show", "sub/k.py", "--node", "2", "--store", "st"]) == exit_codes.USAGE
    err = capsys.readouterr().err
    hint = "stark show sub/k.py --archived 1 --node 2 --store st"
    assert "node #2 is in archived tree 1 of k.py" in err and f": {hint} shows it" in err, err
    assert len(err.strip().splitlines()) == 1
    assert cli.main(shlex.split(hint)[1:]) == exit_codes.OK  # pasted as printed
    assert capsys.readouterr().out.startswith("#2 ")


def test_show_node_keeps_json_and_names_the_current_tree_the_other_way(two_trees, capsys):
    assert cli.main(["show", "sub/k.py", "--node", "1", "--json", "--store", "st"]) == exit_codes.USAGE
    assert "stark show sub/k.py --archived 1 --node 1 --json --store st shows it" in capsys.readouterr().err
    assert cli.main(["show", "sub/k.py", "--archived", "1", "--node", "5", "--store", "st"]) == exit_codes.USAGE
    err = capsys.readouterr().err
    assert "node #5 is in the current tree of k.py, not archived tree 1: stark show sub/k.py --node 5 --store st " \
           "shows it" in err, err
    # a node of no tree of the task: as before, the tree's ids
    assert cli.main(["show", "sub/k.py", "--node", "99", "--store", "st"]) == exit_codes.USAGE
    assert "no node #99 in this tree (nodes: 4-6)" in capsys.readouterr().err
