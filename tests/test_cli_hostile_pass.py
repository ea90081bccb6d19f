"""Issue 24's hostile new-user pass over the CLI: edges a newcomer pushes on, each one line and a documented exit."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from stark_lsp import cli, exit_codes
from stark_lsp.commands import eval_cmd

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"

pytestmark = pytest.mark.timeout(120)  # a read that blocks (a pipe) fails, never hangs


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


def test_a_cache_dir_that_cannot_be_written_is_refused_before_anything_runs(tmp_path, capsys, monkeypatch):
    for name in ("swish_add.py", "swish_add.harness.py"):
        shutil.copy(SAMPLES / "mistuned" / name, tmp_path / name)
    (tmp_path / ".stark").mkdir()
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("")
    monkeypatch.setenv("STARK_SMALL", "1")
    task = str(tmp_path / "swish_add.py")
    for argv in (["eval", task], ["optimize", task, "--budget", "1"], ["bench", task, "--budget", "1"]):
        assert cli.main([*argv, "--cache-dir", str(blocker)]) == exit_codes.USAGE, argv
        err = capsys.readouterr().err
        assert f"--cache-dir {blocker} is a file, not a folder" in err and err.count("\n") == 1, err
    monkeypatch.setenv("STARK_CACHE_DIR", str(blocker))
    assert cli.main(["eval", task]) == exit_codes.USAGE
    assert "$STARK_CACHE_DIR" in capsys.readouterr().err
    from stark_lsp.commands import refusal

    monkeypatch.setattr(refusal, "writable_folder", lambda folder: False)  # a read-only file system, as for root
    monkeypatch.delenv("STARK_CACHE_DIR")
    assert cli.main(["eval", task, "--cache-dir", str(tmp_path / "cache")]) == exit_codes.USAGE
    assert "is not writable (builds and candidates are cached there)" in capsys.readouterr().err
    assert not list(tmp_path.glob("swish_add.best.*"))


def test_show_sources_without_json_is_refused_not_silently_ignored(tmp_path, capsys):
    shutil.copy(SAMPLES / "kernelbench" / "relu.py", tmp_path / "relu.py")
    assert cli.main(["show", str(tmp_path / "relu.py"), "--sources"]) == exit_codes.USAGE
    err = capsys.readouterr().err
    assert "--sources needs --json" in err and err.count("\n") == 1


def test_serve_refuses_a_bad_address_backend_or_log_file_in_one_line(tmp_path, capsys):
    import socket

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    (tmp_path / "broken.py").write_text("def f(:\n")
    cases = {
        ("--tcp", "bogus"): "expected HOST:PORT",
        ("--tcp", "127.0.0.1:99999"): "a port from 1 to 65535",
        ("--tcp", f"127.0.0.1:{port}"): "cannot listen there",
        ("--backend", str(tmp_path / "missing.py") + ":X"): "give MODULE:FACTORY",
        ("--backend", "os:nope"): "module 'os' has no attribute 'nope'",
        ("--backend", str(tmp_path / "broken.py") + ":X"): "invalid syntax",
        ("--log-file", str(tmp_path / "no" / "x.log")): "does not exist: create it first",
        ("--log-file", str(tmp_path)): f"is a directory: give a file name, e.g. {tmp_path / 'stark.log'}",
    }
    try:
        for argv, words in cases.items():
            try:
                code = cli.main(["serve", *argv])
            except SystemExit as e:  # argparse's refusal
                code = e.code
            err = capsys.readouterr().err
            assert code == exit_codes.USAGE and words in err, (argv, err)
            assert "internal error" not in err and "Traceback" not in err
    finally:
        taken.close()


def test_llm_flags_given_to_the_builtin_team_are_said_to_be_ignored(capsys):
    from stark_lsp.commands.agent_team import team_from_args

    parser = cli.build_parser()
    for command in ("optimize", "bench"):
        args = parser.parse_args([command, "t.py", "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
                                  "--temperature", "0.5"])
        assert team_from_args(args).name == "builtin"
        err = capsys.readouterr().err
        assert err == (f"stark {command}: --model, --base-url, --temperature are ignored: the built-in team calls "
                       f"no LLM (--llm openai uses one)\n")
    team_from_args(parser.parse_args(["optimize", "t.py"]))
    assert capsys.readouterr().err == ""  # nothing given, nothing said


def test_a_pipe_or_a_symlink_loop_is_refused_not_read_forever_or_a_bug(tmp_path, capsys):
    import os

    os.mkfifo(tmp_path / "fifo.py")  # a read of it would block for ever
    (tmp_path / "loop1.py").symlink_to(tmp_path / "loop2.py")
    (tmp_path / "loop2.py").symlink_to(tmp_path / "loop1.py")
    task = str(SAMPLES / "mistuned" / "swish_add.py")
    cases = {
        ("eval", str(tmp_path / "fifo.py")): "is not a regular file (a pipe, socket or device)",
        ("eval", task, "--harness", str(tmp_path / "fifo.py")): "give the harness file",
        ("harness", str(tmp_path / "fifo.py")): "is not a regular file",
        ("show", str(tmp_path / "fifo.py")): "is not a regular file",
        ("bench", str(tmp_path / "fifo.py"), "--dry-run"): "is not a regular file",
        ("optimize", str(tmp_path / "loop1.py")): "cannot follow the link",
    }
    for argv, words in cases.items():
        assert cli.main(list(argv)) == exit_codes.USAGE, argv
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1 and "internal error" not in err, err


def test_a_candidate_may_come_through_a_pipe_with_a_writer(tmp_path, monkeypatch):
    import os
    import threading

    os.mkfifo(tmp_path / "candidate.py")  # as stark eval TASK <(make_candidate) gives it
    text = (SAMPLES / "mistuned" / "swish_add.py").read_text().replace("BLOCK_SIZE = 32", "BLOCK_SIZE = 64")
    writer = threading.Thread(target=lambda: (tmp_path / "candidate.py").write_text(text), daemon=True)
    writer.start()
    recorder = SourceRecorder()
    monkeypatch.setattr(eval_cmd, "evaluator_from_args", lambda args, warm_for=None: recorder)
    cli.main(["eval", str(SAMPLES / "mistuned" / "swish_add.py"), str(tmp_path / "candidate.py")])
    writer.join(timeout=10)
    assert recorder.sources == [text]


def test_an_interrupted_bench_says_how_to_go_on_with_resume_not_the_same_command(capsys):
    import signal
    import threading

    from stark_lsp.commands import bench_cmd
    from stark_lsp.commands.interrupt import Interrupts

    out = Path("bench-results/20261206-153256")
    assert bench_cmd.resume_argv(["t.py", "--budget", "3"], out) == ["t.py", "--budget", "3", "--out", str(out),
                                                                     "--resume"]
    assert bench_cmd.resume_argv(["t.py", "--out", "o", "--resume"], Path("o")) == ["t.py", "--out", "o", "--resume"]
    cancel = threading.Event()
    with Interrupts(cancel, "bench", again="when you go on with --resume"):
        signal.getsignal(signal.SIGINT)(signal.SIGINT, None)  # the first Ctrl-C
    assert cancel.is_set()
    assert "redone when you go on with --resume" in capsys.readouterr().err


def test_optimize_checks_a_harness_named_by_hand_as_eval_does(tmp_path, capsys, monkeypatch):
    """A KernelBench file given a Triton harness by hand (--harness) ran as a Triton task, spent its budget
    and exited 3; stark eval refused the same pair. Both now refuse it, in one line, before anything runs."""
    from stark_lsp.commands import optimize_cmd

    shutil.copy(SAMPLES / "kernelbench" / "relu.py", tmp_path / "relu.py")
    shutil.copy(SAMPLES / "mistuned" / "swish_add.harness.py", tmp_path / "other.harness.py")
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda *a, **k: pytest.fail("nothing may run"))
    code = cli.main(["optimize", str(tmp_path / "relu.py"), "--harness", str(tmp_path / "other.harness.py"),
                     "--budget", "1"])
    err = capsys.readouterr().err
    assert code == exit_codes.USAGE, err
    assert "defines no entry function 'swish_add'" in err and len(err.strip().splitlines()) == 1, err


def test_optimize_refuses_an_entry_the_kernel_does_not_define_as_eval_does(tmp_path, capsys, monkeypatch):
    """A harness whose ENTRY the kernel does not define: stark eval refused it (exit 2), while stark optimize
    spent its budget on Debug attempts and exited 3. Both now refuse it in one line, before anything runs."""
    from stark_lsp.commands import optimize_cmd

    shutil.copy(SAMPLES / "mistuned" / "swish_add.py", tmp_path / "swish_add.py")
    harness = (SAMPLES / "mistuned" / "swish_add.harness.py").read_text()
    (tmp_path / "swish_add.harness.py").write_text(harness.replace('ENTRY = "swish_add"', 'ENTRY = "nosuch"'))
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda *a, **k: pytest.fail("nothing may run"))
    for argv in (["eval", str(tmp_path / "swish_add.py")],
                 ["optimize", str(tmp_path / "swish_add.py"), "--budget", "1"]):
        code = cli.main(argv)
        err = capsys.readouterr().err
        assert code == exit_codes.USAGE, (argv, err)
        assert "defines no entry function 'nosuch'" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / ".stark").exists()


@pytest.mark.parametrize("command, flag", [("optimize", "--leaderboard"), ("optimize", "--profile-top"),
                                           ("bench", "--retime-top"), ("bench", "--retime-rounds")])
def test_a_negative_count_is_refused_up_front_not_silently_taken(tmp_path, capsys, monkeypatch, command, flag):
    """`--leaderboard -1`, `--profile-top -1` and bench's `--retime-top -1` / `--retime-rounds -2` ran a whole
    search (read as 0 or worse): exit 2 now."""
    from stark_lsp.commands import optimize_cmd

    shutil.copy(SAMPLES / "mistuned" / "swish_add.py", tmp_path / "swish_add.py")
    shutil.copy(SAMPLES / "mistuned" / "swish_add.harness.py", tmp_path / "swish_add.harness.py")
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda *a, **k: pytest.fail("nothing may run"))
    with pytest.raises(SystemExit) as e:
        cli.main([command, str(tmp_path / "swish_add.py"), flag, "-1"])
    assert e.value.code == exit_codes.USAGE
    assert f"argument {flag}: must be 0 or more, got -1" in capsys.readouterr().err


@pytest.mark.parametrize("argv, words", [
    (["optimize", "k.py", "--budget", "0"], "stark optimize: error: argument --budget: must be at least 1, got 0"),
    # a negative batch limit was taken: '--stop-after -1 s reached: 0 of 4 run(s) done', exit 0 (second pass)
    (["bench", "k.py", "--stop-after", "-1"], "stark bench: error: argument --stop-after: must be more than 0, got -1"),
    (["eval"], "stark eval: error: the following arguments are required: task"),
    (["frob"], "stark: error: argument COMMAND: invalid choice: 'frob'"),
])
def test_a_bad_flag_is_one_line_not_the_whole_usage_first(capsys, argv, words):
    """argparse printed the whole usage (20 lines for stark optimize) before the error: one line now."""
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == exit_codes.USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(words) and "--help" in err and "usage:" not in err, err


def test_a_long_failing_line_is_shown_cut_with_a_mark_not_as_if_whole(tmp_path, capsys, monkeypatch):
    """The harness template's own reference line, 92 characters, was shown as '...in this har)'."""
    monkeypatch.setenv("STARK_SMALL", "1")
    shutil.copy(SAMPLES / "mistuned" / "swish_add.py", tmp_path / "swish_add.py")
    harness = (SAMPLES / "mistuned" / "swish_add.harness.py").read_text()
    long_line = '    raise NotImplementedError("write the PyTorch reference for swish_add in this harness, please")'
    (tmp_path / "swish_add.harness.py").write_text(
        harness.replace("    return x * torch.sigmoid(x) + y", long_line))
    assert cli.main(["eval", str(tmp_path / "swish_add.py")]) == exit_codes.USAGE
    err = capsys.readouterr().err
    assert 'line 15: raise NotImplementedError("write the PyTorch reference for swish_add in this ha…)' in err, err


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="no /proc here")
def test_a_cache_dir_no_one_can_make_is_refused_not_a_bug(tmp_path, capsys, monkeypatch):
    """STARK_CACHE_DIR=/proc/x: /proc may be written by root (os.access), but no folder can be made there;
    exit 70 (the evaluator's mkdir: FileNotFoundError), now exit 2 in one line."""
    for name in ("swish_add.py", "swish_add.harness.py"):
        shutil.copy(SAMPLES / "mistuned" / name, tmp_path / name)
    monkeypatch.setenv("STARK_SMALL", "1")
    monkeypatch.setenv("STARK_CACHE_DIR", "/proc/stark-cache-test")
    task = str(tmp_path / "swish_add.py")
    for argv in (["eval", task], ["optimize", task, "--budget", "1"], ["bench", task, "--budget", "1"]):
        assert cli.main(argv) == exit_codes.USAGE, argv
        err = capsys.readouterr().err
        assert "$STARK_CACHE_DIR /proc/stark-cache-test is not" in err and "give --cache-dir DIR" in err, err
        assert err.count("\n") == 1 and "internal error" not in err, err


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="no /proc here")
def test_an_output_where_no_file_can_be_made_is_refused_before_anything_runs(tmp_path, capsys, monkeypatch):
    """Root may write /proc by os.access, but no file can be made there: optimize --out ran the search and
    then exited 2 at the write; bench --out and serve --log-file exited 70 (FileNotFoundError)."""
    from stark_lsp.commands import optimize_cmd

    for name in ("swish_add.py", "swish_add.harness.py"):
        shutil.copy(SAMPLES / "mistuned" / name, tmp_path / name)
    (tmp_path / "a_file").write_text("")
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda *a, **k: pytest.fail("nothing may run"))
    monkeypatch.setenv("STARK_CACHE_DIR", str(tmp_path / "cache"))
    task = str(tmp_path / "swish_add.py")
    cases = [(["optimize", task, "--budget", "1", "--out", "/proc/x.py"], "the folder /proc is not writable"),
             (["bench", task, "--budget", "1", "--out", "/proc/bench"], "--out /proc/bench is not"),
             (["bench", task, "--budget", "1", "--out", str(tmp_path / "a_file")], "is a file, not a folder"),
             (["serve", "--log-file", "/proc/x.log"], "the folder /proc is not writable")]
    for argv, words in cases:
        assert cli.main(argv) == exit_codes.USAGE, argv
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1 and "internal error" not in err, err
    assert not (tmp_path / "cache").exists() and not (tmp_path / ".stark").exists()


def test_the_builtin_team_spends_no_budget_on_a_failure_of_your_kernel_itself(tmp_path, capsys, monkeypatch):
    """A harness whose run() calls the entry with one input too few: the built-in Debug agent has nothing to
    revert to, and refused once per attempt ('the root source is not in the context'): 30 failed attempts
    for --budget 30. Its refusal is 'nothing new' now: free, and the search stops at once."""
    monkeypatch.setenv("STARK_SMALL", "1")
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    shutil.copy(SAMPLES / "mistuned" / "swish_add.py", tmp_path / "swish_add.py")
    harness = (SAMPLES / "mistuned" / "swish_add.harness.py").read_text()
    (tmp_path / "swish_add.harness.py").write_text(
        harness.replace('ENTRY = "swish_add"', "def run(mod, x, y):\n    return mod.swish_add(x)"))
    code = cli.main(["optimize", "swish_add.py", "--budget", "30", "--concurrency", "1"])
    out, err = capsys.readouterr()
    assert code == exit_codes.NO_IMPROVEMENT, out + err
    assert "your kernel fails the evaluation" in out and "this failure is your kernel's own" in out, out
    assert "root source is not in the context" not in out and "budget spent" not in err, out + err
    assert out.count(" debug ") <= 2, out


def test_a_candidate_in_the_other_language_is_refused_not_judged(tmp_path, capsys, monkeypatch):
    """A .cu candidate for a Triton task was judged as Python ('COMPILE_ERROR - SyntaxError: invalid decimal
    literal', exit 1); a .py one for a CUDA task as CUDA. Refused in one line, nothing run."""
    for f in ("mistuned/swish_add.py", "mistuned/swish_add.harness.py", "cuda/bias_gelu.cu",
              "cuda/bias_gelu.harness.py", "kernelbench/relu.py"):
        shutil.copy(SAMPLES / f, tmp_path / Path(f).name)
    monkeypatch.setattr(eval_cmd, "evaluator_from_args", lambda *a, **k: pytest.fail("nothing may run"))
    for task, cand, words in (("swish_add.py", "bias_gelu.cu", "is a CUDA file, and swish_add.py is a Triton task"),
                              ("relu.py", "bias_gelu.cu", "and relu.py is a KernelBench task: give a .py candidate"),
                              ("bias_gelu.cu", "swish_add.py", "is a Python file, and bias_gelu.cu is a CUDA task")):
        assert cli.main(["eval", str(tmp_path / task), str(tmp_path / cand)]) == exit_codes.USAGE
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1, err


def test_export_refuses_to_write_a_node_over_the_harness(tmp_path, capsys, monkeypatch):
    """`stark export TASK 1 -o TASK.harness.py` wrote the kernel over the harness, exit 0 (optimize --out refused
    it): no tree keeps a harness, so it was lost."""
    from fakes import FakeEvaluator, FakeTeam, make_fake_task
    from stark_lsp.commands import optimize_cmd

    (tmp_path / ".git").mkdir()
    task = make_fake_task(tmp_path)
    harness = tmp_path / "k.harness.py"
    harness.write_text('ENTRY = "entry_kernel"\n\n\ndef reference():\n    return []\n\n\ndef get_inputs():\n    return []\n')
    before = harness.read_text()
    monkeypatch.setattr(optimize_cmd, "evaluator_from_args", lambda args, warm_for=None: FakeEvaluator())
    monkeypatch.setattr(optimize_cmd, "team_from_args", lambda args: FakeTeam())
    cli.main(["optimize", str(task.path), "--budget", "1", "--concurrency", "1"])
    capsys.readouterr()
    assert cli.main(["export", str(task.path), "1", "-o", str(harness)]) == exit_codes.USAGE
    err = capsys.readouterr().err
    assert "is the task's harness: name another file" in err and err.count("\n") == 1, err
    assert harness.read_text() == before


@pytest.mark.parametrize("stdin", ["/dev/null", "a file"])
def test_serve_with_stdin_that_is_no_pipe_is_refused_not_a_traceback_and_a_hang(tmp_path, stdin):
    """`stark serve </dev/null` printed asyncio's PermissionError traceback (epoll takes no file or /dev/null)
    and then waited forever."""
    import subprocess
    import sys

    source = Path(stdin) if stdin.startswith("/") else tmp_path / "input.txt"
    if not source.exists():
        source.write_text("Content-Length: 2\r\n\r\n{}")
    with open(source, "rb") as f:
        r = subprocess.run([sys.executable, "-m", "stark_lsp", "serve"], stdin=f, capture_output=True, text=True,
                           timeout=60, cwd=ROOT)
    assert r.returncode == exit_codes.USAGE, r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1 and "not a pipe" in r.stderr, r.stderr


@pytest.mark.parametrize("how", ["env", "flag"])
def test_a_relative_cache_folder_is_the_one_beside_the_command_not_a_failure(tmp_path, how):
    """STARK_CACHE_DIR=rel or --cache-dir rel: the evaluator's workers run in folders of their own, where the
    relative path named another place, and `stark eval` exited 5 ('evaluation workers could not start')."""
    import os
    import subprocess
    import sys

    for name in ("swish_add.py", "swish_add.harness.py"):
        shutil.copy(SAMPLES / "mistuned" / name, tmp_path / name)
    env = {**os.environ, "STARK_SMALL": "1"}
    argv = [sys.executable, "-m", "stark_lsp", "eval", "swish_add.py"]
    if how == "env":
        env["STARK_CACHE_DIR"] = "rel"
    else:
        env.pop("STARK_CACHE_DIR", None)
        argv += ["--cache-dir", "rel"]
    r = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=110)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "rel" / "candidates").is_dir()


def test_a_harness_that_is_not_utf8_is_refused_in_one_line_not_a_bug(tmp_path, capsys):
    """A harness with a byte that is not UTF-8 was 'internal error: UnicodeDecodeError' (exit 70) from eval,
    optimize and bench alike (second pass); the kernel file's own case was refused already."""
    for name in ("swish_add.py", "swish_add.harness.py"):
        shutil.copy(SAMPLES / "mistuned" / name, tmp_path / name)
    with open(tmp_path / "swish_add.harness.py", "ab") as f:
        f.write(b"\n# \xff\n")
    for command in (["eval"], ["optimize", "--budget", "1"]):
        code = cli.main([command[0], str(tmp_path / "swish_add.py"), *command[1:]])
        err = capsys.readouterr().err
        assert code == exit_codes.USAGE, (command, err)
        assert "swish_add.harness.py: not UTF-8 text" in err and "internal error" not in err, err


def test_a_kernel_whose_harness_name_would_be_too_long_is_refused_in_one_line(tmp_path, capsys):
    """A 248-character kernel name fits the file system, its '.harness.py' name does not: eval, optimize, show
    and export were 'internal error: OSError: [Errno 36] File name too long' (exit 70; second pass)."""
    kernel = tmp_path / ("k" * (255 - len(".py")) + ".py")
    shutil.copy(SAMPLES / "mistuned" / "swish_add.py", kernel)
    for argv in (["eval", str(kernel)], ["optimize", str(kernel), "--budget", "1"], ["show", str(kernel)],
                 ["export", str(kernel), "best"]):
        code = cli.main(argv)
        err = capsys.readouterr().err
        assert code == exit_codes.USAGE, (argv, err)
        assert "its harness's name would be" in err and "stark-harness" in err and "internal error" not in err, err
