"""Issue 24's hostile new-user pass over the CLI: edges a newcomer pushes on, each one line and a documented exit."""

from __future__ import annotations

import shutil
from pathlib import Path

from stark_lsp import cli, exit_codes
from stark_lsp.commands import eval_cmd

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"


class SourceRecorder:
    """An evaluator double: records the source it is asked to judge, and says it compiled nothing."""

    def __init__(self):
        self.sources: list[str] = []

    def evaluate(self, task, source, opts):
        from stark_lsp.evaluate.result import EvalResult, Status

        self.sources.append(source)
        return EvalResult(Status.COMPILE_ERROR, "recorded")

    def hardware(self):
        return "test double"

    def close(self, wait=True):
        pass


def test_a_kernelbench_task_given_as_its_own_candidate_is_judged_as_with_no_candidate(tmp_path, monkeypatch):
    from stark_lsp.tasks.spec import load_task

    task_file = tmp_path / "relu.py"
    shutil.copy(SAMPLES / "kernelbench" / "relu.py", task_file)
    recorder = SourceRecorder()
    monkeypatch.setattr(eval_cmd, "evaluator_from_args", lambda args, warm_for=None: recorder)
    monkeypatch.chdir(tmp_path)
    cli.main(["eval", "relu.py", str(task_file)])
    cli.main(["eval", "relu.py"])
    root = load_task(task_file).root_source()
    assert recorder.sources == [root, root]  # not the file's text, whose Model has no ModelNew to judge
    assert "class ModelNew" in root


def test_bench_on_an_empty_folder_or_one_of_harnesses_says_what_a_task_is(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    (tmp_path / "harnesses").mkdir()
    shutil.copy(SAMPLES / "mistuned" / "swish_add.harness.py", tmp_path / "harnesses")
    for folder in ("empty", "harnesses"):
        assert cli.main(["bench", str(tmp_path / folder)]) == exit_codes.USAGE
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"no tasks in {tmp_path / folder}: give KernelBench .py files" in err
