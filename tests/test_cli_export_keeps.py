"""stark export -o FILE keeps what it writes over as optimize's --out does (issue 24): it overwrote an unrelated
file with no backup. The same rule and words (overwrite.keep_previous): a file no tree holds is moved aside to
FILE.N.bak; a node of a tree is named with the command that brings it back, which is pasted back here."""

from __future__ import annotations

import shlex

import pytest

from fakes import FakeEvaluator, FakeTeam, make_fake_task
from stark_lsp import cli, exit_codes
from stark_lsp.commands import optimize_cmd
from stark_lsp.search import TreeStore

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def searched(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda args, warm_for=None: FakeEvaluator())
    monkeypatch.setattr(optimize_cmd, "team_from_args", lambda args: FakeTeam())
    (tmp_path / "sub").mkdir()
    task = make_fake_task(tmp_path / "sub")
    (tmp_path / "mine.py").write_text("my own notes\n")
    assert cli.main(["optimize", "sub/k.py", "--budget", "2", "--concurrency", "1", "--store", "st",
                     "--out", "mine.py"]) == exit_codes.OK
    said = capsys.readouterr().out
    assert "wrote mine.py (the file it replaces, which no search tree holds, is kept as mine.py.1.bak)" in said, said
    store = TreeStore.open(tmp_path / "st" / "tree.sqlite", readonly=True)
    return tmp_path, {n.id: n.source for n in store.nodes(task.task_id())}


def test_export_moves_an_unrelated_file_aside_as_optimize_does(searched, capsys):
    root, sources = searched
    (root / "notes.py").write_text("not a kernel: my notes\n")
    assert cli.main(["export", "sub/k.py", "1", "-o", "notes.py", "--store", "st"]) == exit_codes.OK
    err = capsys.readouterr().err
    assert "to notes.py (the file it replaces, which no search tree holds, is kept as notes.py.1.bak)" in err, err
    assert (root / "notes.py.1.bak").read_text() == "not a kernel: my notes\n"
    assert (root / "notes.py").read_text() == sources[1]


def test_export_over_a_node_names_the_command_that_brings_it_back(searched, capsys):
    root, sources = searched
    assert cli.main(["export", "sub/k.py", "1", "-o", "n.py", "--store", "st"]) == exit_codes.OK  # a new file
    assert "(" not in capsys.readouterr().err.split(" to n.py")[1]  # nothing replaced, nothing said
    assert cli.main(["export", "sub/k.py", "2", "-o", "n.py", "--store", "st"]) == exit_codes.OK
    err = capsys.readouterr().err
    hint = "stark export sub/k.py 1 -o n.py --store st"
    assert f"to n.py (it replaces node #1 of this tree: {hint} brings it back)" in err, err
    assert (root / "n.py").read_text() == sources[2] and not list(root.glob("n.py.*.bak"))
    assert cli.main(shlex.split(hint)[1:]) == exit_codes.OK  # pasted as printed
    assert (root / "n.py").read_text() == sources[1]
