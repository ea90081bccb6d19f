"""Issue 24, third hostile pass: what a new user met that the first two passes left (through cli.main)."""

from __future__ import annotations

import re
import shlex

import pytest

from stark_lsp import cli, exit_codes


@pytest.mark.parametrize("argv", [["optimize", "t.py"], ["show", "t.py"], ["export", "t.py", "best"],
                                  ["eval", "t.py"], ["bench", "t.py"], ["harness", "t.py"], ["serve"]])
def test_an_unknown_flag_after_a_command_names_that_command_and_its_help(argv, capsys):
    command = argv[0]
    with pytest.raises(SystemExit) as e:
        cli.main([*argv, "--bogus"])
    assert e.value.code == exit_codes.USAGE
    err = capsys.readouterr().err
    assert err == (f"stark {command}: error: unrecognized arguments: --bogus "
                   f"(see stark {command} --help)\n")  # was 'stark: error: ... (see stark --help)'


def test_an_unknown_flag_before_any_command_stays_the_top_level_error(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--bogus"])
    assert e.value.code == exit_codes.USAGE
    assert capsys.readouterr().err == "stark: error: unrecognized arguments: --bogus (see stark --help)\n"


@pytest.fixture
def searched(tmp_path, monkeypatch, capsys):
    """sub/k.py searched with --store st twice, the second time --fresh (tree 1 archived)."""
    from fakes import FakeEvaluator, FakeTeam, make_fake_task
    from stark_lsp.commands import optimize_cmd

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda args, warm_for=None: FakeEvaluator())
    monkeypatch.setattr(optimize_cmd, "team_from_args", lambda args: FakeTeam())
    (tmp_path / "sub").mkdir()
    make_fake_task(tmp_path / "sub")
    for fresh in ([], ["--fresh"]):
        assert cli.main(["optimize", "sub/k.py", "--budget", "2", "--concurrency", "1", "--store", "st",
                         *fresh]) in (0, 3)
    capsys.readouterr()
    assert cli.main(["show", "sub/k.py", "--store", "st"]) == exit_codes.OK
    out = capsys.readouterr().out
    return tmp_path, out


def test_a_task_moved_from_the_shell_keeps_its_tree_for_show_export_and_optimize(searched, capsys):
    tmp_path, before = searched
    (tmp_path / "moved").mkdir()
    (tmp_path / "sub" / "k.py").rename(tmp_path / "moved" / "m.py")  # mv, outside the editor
    # show said 'no search tree for m.py ... run stark optimize moved/m.py first'
    assert cli.main(["show", "moved/m.py", "--store", "st"]) == exit_codes.OK
    cap = capsys.readouterr()
    assert cap.out.splitlines()[1:] == before.splitlines()[1:]  # the same nodes and figures
    assert "the search tree of" in cap.err and "sub/k.py (no longer there; the same kernel and harness) is " \
           "carried over to moved/m.py" in cap.err, cap.err
    assert cli.main(["show", "moved/m.py", "--archived", "--store", "st"]) == exit_codes.OK  # its archived tree too
    assert "1" in capsys.readouterr().out
    assert cli.main(["export", "moved/m.py", "best", "--store", "st"]) in (exit_codes.OK, 1)
    assert "carried" not in capsys.readouterr().err  # once
    # optimize goes on in that tree (already spent its budget of 2), not a new one
    assert cli.main(["optimize", "moved/m.py", "--budget", "2", "--concurrency", "1", "--store", "st"]) in (0, 3)
    assert "this tree already spent a budget of 2" in capsys.readouterr().err


def test_optimize_of_a_moved_task_carries_the_tree_and_two_candidates_are_not_guessed(searched, capsys):
    tmp_path, _ = searched
    (tmp_path / "sub" / "k.py").rename(tmp_path / "m.py")
    assert cli.main(["optimize", "m.py", "--budget", "2", "--concurrency", "1", "--store", "st"]) in (0, 3)
    err = capsys.readouterr().err
    assert "is carried over to m.py" in err and "this tree already spent a budget of 2" in err, err
    # a copy whose original is still there is another task: its own tree
    (tmp_path / "copy.py").write_text((tmp_path / "m.py").read_text())
    assert cli.main(["show", "copy.py", "--store", "st"]) == exit_codes.USAGE
    assert "no search tree for copy.py" in capsys.readouterr().err


def test_the_re_timed_line_calls_no_slower_candidate_best_beside_your_kernel(tmp_path, monkeypatch, capsys):
    """Every candidate slower than yours: the live line said 'best your kernel ... | re-timed: best #3 ...,
    0.47× your kernel' (the fastest re-timed candidate called best beside the line's best, your kernel)."""
    from fakes import FakeEvaluator, FakeTeam, make_fake_task
    from stark_lsp.commands import optimize_cmd

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda args, warm_for=None: FakeEvaluator())
    monkeypatch.setattr(optimize_cmd, "team_from_args", lambda args: FakeTeam(factor=0.5))
    make_fake_task(tmp_path)
    assert cli.main(["optimize", "k.py", "--budget", "2", "--concurrency", "1"]) == exit_codes.NO_IMPROVEMENT
    err = capsys.readouterr().err
    assert "re-timed: best #" not in err, err
    line = next(x for x in err.splitlines() if "| re-timed: the fastest candidate #" in x)
    assert "best your kernel" in line and line.endswith("; your kernel stays the best"), line


def test_export_names_the_nodes_figures_as_show_node_does_your_kernel_included(tmp_path, monkeypatch, capsys):
    """'wrote node #3 (ok, 0.013× eager, 10.16 ms)' gave no '× your kernel' of the node optimize called
    13.0× your kernel; now the same words as stark show --node."""
    from fakes import FakeEvaluator, FakeTeam, make_fake_task
    from stark_lsp.commands import optimize_cmd

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda args, warm_for=None: FakeEvaluator())
    monkeypatch.setattr(optimize_cmd, "team_from_args", lambda args: FakeTeam(factor=2.0))
    make_fake_task(tmp_path)
    assert cli.main(["optimize", "k.py", "--budget", "2", "--concurrency", "1", "--out", "best.py"]) == exit_codes.OK
    best = capsys.readouterr().out.split("best: node #", 1)[1].split(",", 1)[0]
    assert cli.main(["show", "k.py", "--node", best]) == exit_codes.OK
    shown = capsys.readouterr().out.splitlines()[0].split(": ", 1)[1]  # 'ok, 0.5 ms, 2.00× your kernel, ...'
    assert "× your kernel" in shown
    assert cli.main(["export", "k.py", "best", "-o", "out.py"]) == exit_codes.OK
    assert capsys.readouterr().err == f"wrote node #{best} ({shown}) to out.py\n"


def test_harness_of_a_file_with_two_kernels_says_which_it_aimed_at(tmp_path, monkeypatch, capsys):
    """It picked the first entry silently ('wrote two.harness.py: write reference() in it, ...')."""
    from pathlib import Path

    src = (Path(__file__).resolve().parents[1] / "samples" / "mistuned" / "swish_add.py").read_text()
    second = src[src.index("@triton.jit"):].replace("swish_add_kernel", "scale_kernel").replace(
        "def swish_add(", "def scale(")
    (tmp_path / "two.py").write_text(src + "\n\n" + second)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["harness", "two.py"]) == exit_codes.OK
    assert capsys.readouterr().err == (
        "wrote two.harness.py for swish_add, the first entry of two.py (its kernels: swish_add_kernel, "
        "scale_kernel; --kernel NAME aims at another): write reference() in it, then stark eval two.py\n")
    assert cli.main(["harness", "two.py", "--kernel", "scale_kernel", "-o", "s.harness.py"]) == exit_codes.OK
    assert capsys.readouterr().err.startswith("wrote s.harness.py: write reference()")  # asked: nothing to add
    assert "mod.scale(" in (tmp_path / "s.harness.py").read_text()


@pytest.mark.parametrize("argv, flag", [
    (["show", ""], "task"),  # read as '.': 'stark show: task  is a directory'
    (["eval", ""], "task"),
    (["export", "k.py", "best", "-o", ""], "-o/--out"),  # taken as no -o: the source went to stdout
    (["optimize", "k.py", "--harness", ""], "--harness"),  # taken as no --harness: a whole search ran
    (["optimize", "k.py", "--out", ""], "--out"),
    (["bench", "tasks", ""], "PATH"),
    (["serve", "--log-file", ""], "--log-file"),
])
def test_an_empty_argument_is_refused_by_name(argv, flag, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == exit_codes.USAGE
    assert capsys.readouterr().err == (f"stark {argv[0]}: error: argument {flag}: an empty value ('') "
                                       f"(see stark {argv[0]} --help)\n")


def test_a_task_deleted_mid_search_names_the_best_so_far_and_how_to_reach_it(tmp_path, monkeypatch, capsys):
    """'the search stopped before its end: nothing written', of a tree whose node beat your kernel 2×."""
    from fakes import FakeEvaluator, FakeTeam, make_fake_task
    from stark_lsp.commands import optimize_cmd

    class DeletesTheTask(FakeEvaluator):
        def evaluate(self, task, source, options=None):
            r = super().evaluate(task, source, options)
            if self.calls == 3:
                (tmp_path / "sub" / "k.py").unlink()  # rm, mid-search
            return r

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda args, warm_for=None: DeletesTheTask())
    monkeypatch.setattr(optimize_cmd, "team_from_args", lambda args: FakeTeam(factor=2.0))
    (tmp_path / "sub").mkdir()
    make_fake_task(tmp_path / "sub")
    kept = (tmp_path / "sub" / "k.py").read_text()
    assert cli.main(["optimize", "sub/k.py", "--budget", "6", "--concurrency", "1"]) == exit_codes.USAGE
    cap = capsys.readouterr()
    line = cap.out.strip().splitlines()[-1]
    said = re.fullmatch(r"the search stopped before its end: the best so far is node #(\d+), [\d.]+× your kernel "
                        r"\(one measurement, not yet timed in turn with yours\); nothing written "
                        r"\((stark export sub/k.py \d+ -o sub/k.best.py) writes it\)", line)
    assert said, line
    assert "stark optimize: k.py is gone: the tree keeps its nodes" in cap.err
    (tmp_path / "sub" / "k.py").write_text(kept)  # put back: the printed command writes it
    assert cli.main(shlex.split(said.group(2))[1:]) == exit_codes.OK
    assert (tmp_path / "sub" / "k.best.py").exists()
