"""The commands the CLI prints for the user to run next can be pasted (issue 24): they name the task as the
user gave it (a path from the folder they ran in, never the bare file name), quoted for the shell, with the
--store and --harness the user gave. Each hint is pasted back into stark here and must work."""

from __future__ import annotations

import shlex

import pytest

from fakes import FakeEvaluator, FakeTeam, make_fake_task
from stark_lsp import cli, exit_codes
from stark_lsp.commands import optimize_cmd

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def spaced(tmp_path, monkeypatch):
    """A task in 'sub dir/k.py' under the folder the user runs in, its tree in the store 'st dir'."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda args, warm_for=None: FakeEvaluator())
    monkeypatch.setattr(optimize_cmd, "team_from_args", lambda args: FakeTeam())
    (tmp_path / "sub dir").mkdir()
    return make_fake_task(tmp_path / "sub dir")


def paste(hint: str, said: str) -> int:
    """The hint is in what the command said, word for word; run it as the shell would split it."""
    assert hint in said, said
    words = shlex.split(hint)
    assert words[0] == "stark"
    return cli.main(words[1:])


def test_hints_name_the_path_as_given_quoted_with_the_store_and_paste_as_they_are(spaced, capsys):
    task_arg, store = "sub dir/k.py", ["--store", "st dir"]
    assert cli.main(["optimize", task_arg, "--budget", "2", "--concurrency", "1", *store]) in (0, 3)
    capsys.readouterr()
    assert cli.main(["optimize", task_arg, "--budget", "2", "--concurrency", "1", "--fresh", *store]) in (0, 3)
    err = capsys.readouterr().err
    # optimize --fresh: where the earlier tree went
    hint = "stark show 'sub dir/k.py' --archived --store 'st dir'"
    assert f"({hint} lists it)" in err, err
    assert paste(hint, err) == exit_codes.OK
    listed = capsys.readouterr().out
    # show --archived: how to show one, and how to export a node
    assert "(stark show 'sub dir/k.py' --archived N --store 'st dir' shows one; " \
           "stark export 'sub dir/k.py' NODE_ID --store 'st dir' writes a node)" in listed, listed
    assert paste("stark show 'sub dir/k.py' --archived 1 --store 'st dir'",
                 listed.replace("--archived N", "--archived 1")) == exit_codes.OK
    capsys.readouterr()
    # export of a bad node id: where the ids are
    assert cli.main(["export", task_arg, "x", *store]) == exit_codes.USAGE
    assert paste("stark show 'sub dir/k.py' --store 'st dir'", capsys.readouterr().err) == exit_codes.OK
    capsys.readouterr()
    # show without the store the search used: the command that searches names the task as given
    assert cli.main(["show", task_arg]) == exit_codes.USAGE
    assert "run stark optimize 'sub dir/k.py' first" in capsys.readouterr().err


def test_a_kernelbench_file_given_to_stark_harness_is_sent_to_stark_eval_by_its_path(tmp_path, monkeypatch, capsys):
    import shutil
    from pathlib import Path

    monkeypatch.chdir(tmp_path)
    (tmp_path / "kb dir").mkdir()
    shutil.copy(Path(__file__).resolve().parents[1] / "samples" / "kernelbench" / "relu.py", tmp_path / "kb dir")
    assert cli.main(["harness", "kb dir/relu.py"]) == exit_codes.USAGE
    assert "(stark eval 'kb dir/relu.py' times it)" in capsys.readouterr().err


class NotRun:
    """An evaluator double: the kernel compiled, and there is no GPU to run it (as stark eval of CUDA on the CPU)."""

    def evaluate(self, task, source, options=None):
        from stark_lsp.evaluate.result import CompileReport, EvalResult, Status

        return EvalResult(Status.NOT_RUN, "compiled; not run: no GPU", compile=CompileReport(ok=True))

    def hardware(self):
        return "none: no NVIDIA GPU here"

    def close(self, wait=True):
        pass


def test_eval_not_run_names_the_compile_only_command_with_the_task(tmp_path, monkeypatch, capsys):
    import shutil
    from pathlib import Path

    from stark_lsp.commands import eval_cmd

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(eval_cmd, "evaluator_from_args", lambda args, warm_for=None: NotRun())
    (tmp_path / "cu dir").mkdir()
    for f in ("sum_dim1.cu", "sum_dim1.harness.py"):
        shutil.copy(Path(__file__).resolve().parents[1] / "samples" / "cuda" / f, tmp_path / "cu dir" / f)
    assert cli.main(["eval", "cu dir/sum_dim1.cu"]) == exit_codes.FAILED
    err = capsys.readouterr().err
    assert "; stark eval 'cu dir/sum_dim1.cu' --compile-only checks compilation alone" in err, err


def test_bench_stopped_by_stop_after_names_its_dated_folder_in_the_command_that_goes_on(tmp_path, monkeypatch,
                                                                                       capsys):
    """Without --out a bench writes to a new dated folder: 'continue with --resume' ran the same command, which
    made another folder; the printed command names the folder, and pasted, goes on with it."""
    import sys

    from fakes import fake_source
    from stark_lsp.commands import bench_cmd

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(bench_cmd, "evaluator_from_args", lambda args, warm_for=None: FakeEvaluator())
    monkeypatch.setattr(bench_cmd, "team_from_args", lambda args: FakeTeam())
    (tmp_path / "my tasks").mkdir()
    body = "ENTRY = 'entry'\n\n\ndef reference():\n    pass\n\n\ndef entry():\n    pass\n\n\n"
    for name in ("a", "b"):
        (tmp_path / "my tasks" / f"{name}.py").write_text(fake_source(1.0, body=body))
    argv = ["bench", "my tasks", "--budget", "1", "--retime-top", "0", "--stop-after", "0.000001"]
    monkeypatch.setattr(sys, "argv", ["stark", *argv])  # the command line the resume line is made of
    assert cli.main(argv) == exit_codes.OK
    last = capsys.readouterr().err.rstrip().splitlines()[-1]
    assert "s reached: " in last and "; to go on: stark bench 'my tasks' " in last, last
    hint = last.split("; to go on: ")[1]
    words = shlex.split(hint)
    out = words[words.index("--out") + 1]
    assert out.startswith("bench-results/") and words[-1] == "--resume"
    monkeypatch.setattr(sys, "argv", words)
    cli.main(words[1:])
    assert f"stark bench: resuming {out}" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "bench-results").iterdir()] == [out.split("/", 1)[1]]
