"""What a newcomer meets first: every bad input gets one line naming the problem
and the fix, a documented exit code (stark_lsp/exit_codes.py), and no traceback.

Each case runs the real command, ``python -m stark_lsp ...``, in a subprocess.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stark_lsp import cli, exit_codes
from stark_lsp.commands import eval_cmd
from stark_lsp.evaluate.evaluator import gpu_present

pytestmark = pytest.mark.timeout(300)

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
NO_GPU = pytest.mark.skipif(gpu_present(), reason="checks the refusal on a machine without an NVIDIA GPU")
NVCC = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")


def stark(*args: str, cwd: Path, env: dict | None = None, python_flags: tuple[str, ...] = (),
          prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """``python -m stark_lsp ARGS`` in ``cwd``; ``prefix``: a command that runs it (e.g. in a mount namespace)."""
    full = {k: v for k, v in os.environ.items() if k not in ("STARK_SMALL", "STARK_DEBUG")}
    full["PYTHONPATH"] = os.pathsep.join([str(ROOT), full.get("PYTHONPATH", "")])
    full.update(env or {})
    return subprocess.run([*prefix, sys.executable, *python_flags, "-m", "stark_lsp", *args], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=240)


def refused(r: subprocess.CompletedProcess, *words: str, code: int = exit_codes.USAGE) -> str:
    """The command exited ``code`` with one line on stderr, containing ``words``, and no traceback."""
    out = r.stdout + r.stderr
    assert r.returncode == code, out
    assert "Traceback" not in out, out
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, r.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def ws(tmp_path):
    (tmp_path / ".git").mkdir()  # the workspace root: the store would go to tmp_path/.stark
    return tmp_path


# --- a file that is not a kernel -------------------------------------------------------------

@pytest.mark.parametrize("command", [["eval"], ["optimize"], ["show"], ["export", "--", "best"]])
def test_a_directory_is_refused(ws, command):
    args = [command[0], str(ws)] + command[1:]
    line = refused(stark(*args, cwd=ws), "is a directory", "give one kernel file")
    assert line.startswith(f"stark {command[0]}: ")
    assert not (ws / ".stark").exists()


def test_a_binary_cu_is_refused(ws):
    (ws / "k.cu").write_bytes(bytes(range(256)) * 4)
    refused(stark("eval", "k.cu", cwd=ws), "k.cu is not text", "kernel's source")
    refused(stark("optimize", "k.cu", cwd=ws), "k.cu is not text")


def test_a_python_file_with_a_syntax_error_says_so_and_where(ws):
    (ws / "k.py").write_text("import torch\n\ndef forward(x:\n    return x\n")
    refused(stark("eval", "k.py", cwd=ws), "k.py:3: syntax error", "fix it first")


def test_a_missing_file_and_a_missing_candidate(ws):
    refused(stark("eval", "nope.py", cwd=ws), "nope.py: no such file")
    refused(stark("eval", str(SAMPLES / "kernelbench" / "relu.py"), "cand.py", cwd=ws), "candidate cand.py: no such file")


# --- outputs ---------------------------------------------------------------------------------

def test_export_into_a_missing_folder_is_refused_before_anything_is_read(ws):
    refused(stark("export", str(SAMPLES / "kernelbench" / "relu.py"), "best", "-o", "no/such/dir/k.py", cwd=ws),
            "the folder no/such/dir does not exist", "mkdir -p")


def test_optimize_out_into_a_missing_folder_or_onto_the_task_is_refused(ws):
    task = SAMPLES / "mistuned" / "swish_add.py"
    refused(stark("optimize", str(task), "--out", "missing/best.py", cwd=ws), "does not exist")
    refused(stark("optimize", str(task), "--out", str(task), cwd=ws), "the task's own file")


@pytest.mark.parametrize("budget", ["0", "-1", "x"])
def test_a_budget_below_one_is_an_argparse_error(ws, budget):
    r = stark("optimize", str(SAMPLES / "mistuned" / "swish_add.py"), "--budget", budget, cwd=ws)
    assert r.returncode == exit_codes.USAGE and "Traceback" not in r.stderr
    assert "argument --budget" in r.stderr.splitlines()[-1]
    assert not (ws / ".stark").exists() and not list(ws.glob("*.best.py"))


# --- this machine cannot do it ---------------------------------------------------------------

@NO_GPU
@pytest.mark.parametrize("command", ["eval", "optimize", "bench"])
def test_device_cuda_without_a_gpu_is_refused(ws, command):
    extra = ["--out", str(ws / "b")] if command == "bench" else []
    refused(stark(command, str(SAMPLES / "triton" / "softmax.py"), "--device", "cuda", *extra, cwd=ws),
            "--device cuda: this machine has no NVIDIA GPU", "--device cpu")


def test_missing_torch_names_torch_and_the_install_command(ws):
    # -S: no site-packages, as after a base install without torch
    r = stark("eval", str(SAMPLES / "mistuned" / "swish_add.py"), cwd=ws, python_flags=("-S",))
    line = refused(r, "torch", "not installed", "-m pip install torch")
    assert sys.executable in line
    refused(stark("optimize", str(SAMPLES / "mistuned" / "swish_add.py"), cwd=ws, python_flags=("-S",)),
            "-m pip install torch")


def test_a_cpu_timeout_without_stark_small_hints_at_it(ws):
    r = stark("eval", str(SAMPLES / "triton" / "softmax.py"), "--device", "cpu", "--timeout", "1", cwd=ws)
    assert r.returncode == exit_codes.FAILED, r.stdout + r.stderr
    assert "TIMEOUT" in r.stdout and "Traceback" not in r.stdout + r.stderr
    assert "set STARK_SMALL=1" in r.stderr and "raise --timeout" in r.stderr


@NVCC
@NO_GPU
def test_optimize_and_bench_refuse_cuda_without_a_gpu_before_spending_budget(ws):
    for f in ("sum_dim1.cu", "sum_dim1.harness.py"):
        shutil.copy(SAMPLES / "cuda" / f, ws / f)
    refused(stark("optimize", "sum_dim1.cu", "--budget", "30", cwd=ws),
            "sum_dim1.cu needs an NVIDIA GPU: nvcc compiled your kernel, but nothing can be run or timed here")
    assert not (ws / ".stark").exists() and not (ws / "sum_dim1.best.cu").exists()
    r = stark("bench", "sum_dim1.cu", "--out", str(ws / "b"), cwd=ws)
    assert r.returncode == exit_codes.USAGE and "Traceback" not in r.stderr
    assert "needs an NVIDIA GPU: nothing can be run or timed here" in r.stderr.splitlines()[-1]
    assert not (ws / "b").exists()


@NVCC
@NO_GPU
def test_eval_of_cuda_without_a_gpu_compiles_but_never_reports_success(ws):
    for f in ("sum_dim1.cu", "sum_dim1.harness.py"):
        shutil.copy(SAMPLES / "cuda" / f, ws / f)
    r = stark("eval", "sum_dim1.cu", cwd=ws)
    assert r.returncode == exit_codes.FAILED and "NOT_RUN" in r.stdout and "compile:     ok" in r.stdout
    assert "device:      none: no NVIDIA GPU here" in r.stdout and "interpreter" not in r.stdout  # not the CPU's line
    assert "not run: sum_dim1.cu needs an NVIDIA GPU" in r.stderr and "--compile-only" in r.stderr
    r = stark("eval", "sum_dim1.cu", "--compile-only", cwd=ws)
    assert r.returncode == exit_codes.OK and "compile:     ok" in r.stdout, r.stdout + r.stderr


def test_a_harness_calling_a_missing_launcher_fails(ws):
    for f in ("sum_dim1.cu", "sum_dim1.harness.py"):
        shutil.copy(SAMPLES / "cuda" / f, ws / f)
    h = ws / "sum_dim1.harness.py"
    h.write_text(re.sub(r"\blib\.(\w+)\(", "lib.sum_dim1_launch_missing(", h.read_text(), count=1))
    refused(stark("eval", "sum_dim1.cu", cwd=ws), "calls lib.sum_dim1_launch_missing",
            'sum_dim1.cu has no extern "C" sum_dim1_launch_missing')


def test_a_harness_calling_a_launcher_with_the_wrong_arguments_is_refused_even_for_compile_only(ws):
    for f in ("sum_dim1.cu", "sum_dim1.harness.py"):
        shutil.copy(SAMPLES / "cuda" / f, ws / f)
    h = ws / "sum_dim1.harness.py"
    h.write_text(re.sub(r"\blib\.(\w+)\((\w+), ", r"lib.\1(", h.read_text(), count=1))  # one argument fewer
    for extra in ((), ("--compile-only",)):
        refused(stark("eval", "sum_dim1.cu", *extra, cwd=ws), "sum_dim1.harness.py's line", "arguments (", ", got ")


def test_a_compile_error_names_the_users_file_not_a_hashed_one(ws):
    for f in ("softmax.py", "softmax.harness.py"):
        shutil.copy(SAMPLES / "triton" / f, ws / f)
    cand = ws / "mine.py"
    cand.write_text(re.sub(r"^(def \w+\(.*\):)$", r"\1\n    y = )", (ws / "softmax.py").read_text(), count=1,
                           flags=re.M))
    r = stark("eval", "softmax.py", "mine.py", cwd=ws, env={"STARK_SMALL": "1"})
    assert r.returncode == exit_codes.FAILED and "COMPILE_ERROR" in r.stdout, r.stdout + r.stderr
    assert "mine.py" in r.stdout.split("\n", 1)[1]  # in the messages, not only the header
    assert not re.search(r"c[0-9a-f]{20}\.py", r.stdout), r.stdout
    r = stark("eval", "softmax.py", "mine.py", "--json", cwd=ws, env={"STARK_SMALL": "1"})
    assert not re.search(r"c[0-9a-f]{20}\.py", r.stdout)


# --- the guard -------------------------------------------------------------------------------

def test_an_unexpected_error_is_one_line_and_exit_internal(monkeypatch, capsys, tmp_path):
    def broken(args):
        raise KeyError("boom")

    monkeypatch.setattr(eval_cmd, "run", broken)
    assert cli.main(["eval", str(tmp_path)]) == exit_codes.INTERNAL
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "internal error: KeyError: 'boom'" in err and "run again with --debug" in err
    for argv in (["--debug", "eval", str(tmp_path)], ["eval", str(tmp_path), "--debug"]):
        assert cli.main(argv) == exit_codes.INTERNAL
        assert "Traceback" in capsys.readouterr().err


def test_the_evaluator_failing_to_start_is_exit_5(monkeypatch, capsys, tmp_path):
    from stark_lsp.evaluate.evaluator import EvaluatorUnavailable

    def no_workers(args, **kw):
        raise EvaluatorUnavailable("evaluation worker unavailable: evaluation workers could not start")

    monkeypatch.setattr(eval_cmd, "evaluator_from_args", no_workers)
    code = cli.main(["eval", str(SAMPLES / "mistuned" / "swish_add.py")])
    assert code == exit_codes.EVALUATOR_UNAVAILABLE
    assert "could not start" in capsys.readouterr().err


def test_no_command_prints_help_and_exit_usage(capsys):
    assert cli.main([]) == exit_codes.USAGE
    assert "optimize" in capsys.readouterr().out


def test_llm_candidates_without_a_sandbox_are_refused_with_exit_5(ws):
    shutil.copy(SAMPLES / "triton" / "softmax.py", ws / "softmax.py")
    shutil.copy(SAMPLES / "triton" / "softmax.harness.py", ws / "softmax.harness.py")
    env = {"STARK_SANDBOX": "none", "STARK_API_KEY": "sk-cli-test-000000", "TRITON_INTERPRET": "1", "STARK_SMALL": "1"}
    r = stark("optimize", "softmax.py", "--llm", "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
              "--budget", "2", cwd=ws, env=env)
    out = r.stdout + r.stderr
    assert r.returncode == exit_codes.EVALUATOR_UNAVAILABLE, out
    assert "no sandbox can be made here" in out and "--unsafe-no-sandbox" in out and "Traceback" not in out
    assert not list(ws.glob("softmax.best.*"))


# --- a broken task is a task error, never the user's kernel's fault ----------------------------

BROKEN_REFERENCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return (x * 2).view(3, -1, 7)


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
'''


def test_a_reference_that_raises_is_a_task_error_naming_its_line(ws):
    (ws / "broken.py").write_text(BROKEN_REFERENCE)
    r = stark("eval", "broken.py", cwd=ws, env={"STARK_SMALL": "1"})
    out = r.stdout + r.stderr
    assert r.returncode == exit_codes.USAGE and "TASK_ERROR" in r.stdout, out
    assert "Traceback" not in out and "broken.py, line 7" in out, out
    r = stark("optimize", "broken.py", "--budget", "3", cwd=ws, env={"STARK_SMALL": "1"})
    out = r.stdout + r.stderr
    assert r.returncode == exit_codes.USAGE and "the task is broken" in r.stderr, out
    assert "Traceback" not in out and "broken.py, line 7" in r.stderr, out
    assert "attempt 1/" not in r.stderr  # nothing of the budget spent


@pytest.mark.parametrize("what, old, new, line", [
    ("get_inputs()", "    return [torch.randn(64, 64)]", "    sizes = {}\n    return [torch.randn(sizes['n'], 64)]",
     "broken.py, line 12: return [torch.randn(sizes['n'], 64)]"),
    ("get_init_inputs()", "def get_init_inputs():\n    return []", "def get_init_inputs():\n    return [1 / 0]",
     "broken.py, line 15: return [1 / 0]"),
    ("importing it", "class Model", "scale = undefined_name\n\n\nclass Model", "broken.py, line 5: scale = undefined_name"),
])
def test_the_task_s_own_input_functions_that_raise_name_their_line_as_the_reference_does(ws, what, old, new, line):
    """get_inputs, get_init_inputs and the file's own top level: a failure is a task error naming the user's
    line, as a failing reference's is (harness.task_code_failure), in stark eval and in stark optimize."""
    (ws / "broken.py").write_text(BROKEN_REFERENCE.replace("(x * 2).view(3, -1, 7)", "x * 2").replace(old, new))
    r = stark("eval", "broken.py", cwd=ws, env={"STARK_SMALL": "1"})
    out = r.stdout + r.stderr
    assert r.returncode == exit_codes.USAGE and "TASK_ERROR" in r.stdout, out
    assert f"{what} raised " in r.stderr and f"({line})" in r.stderr, out
    assert "Traceback" not in out and "stark_lsp" not in out, out
    r = stark("optimize", "broken.py", "--budget", "3", cwd=ws, env={"STARK_SMALL": "1"})
    out = r.stdout + r.stderr
    assert r.returncode == exit_codes.USAGE and "the task is broken" in r.stderr and f"({line})" in r.stderr, out
    assert "attempt 1/" not in r.stderr and "Traceback" not in out, out


def test_a_harness_s_input_function_that_raises_names_the_harness_line(ws):
    shutil.copy(SAMPLES / "mistuned" / "swish_add.py", ws / "swish_add.py")
    harness = (SAMPLES / "mistuned" / "swish_add.harness.py").read_text()
    (ws / "swish_add.harness.py").write_text(harness.replace("    n = _n()", "    n = _n() // 0"))
    r = stark("eval", "swish_add.py", cwd=ws, env={"STARK_SMALL": "1"})
    out = r.stdout + r.stderr
    assert r.returncode == exit_codes.USAGE and "TASK_ERROR" in r.stdout, out
    assert "get_inputs() raised ZeroDivisionError" in r.stderr, out
    assert "(swish_add.harness.py, line 19: n = _n() // 0)" in r.stderr and "Traceback" not in out, out


def test_a_harness_calling_its_reference_with_the_wrong_inputs_names_the_def_line(ws):
    """`reference(x)` while get_inputs() gives two: no frame of the harness ran, so its def line is named."""
    shutil.copy(SAMPLES / "triton" / "softmax.py", ws / "softmax.py")
    (ws / "softmax.harness.py").write_text('import torch\n\nENTRY = "softmax"\n\n\ndef reference(x):\n'
                                           '    return torch.softmax(x, dim=-1)\n\n\ndef get_inputs():\n'
                                           '    return [torch.randn(64, 384), torch.randn(64, 384)]\n')
    r = stark("eval", "softmax.py", cwd=ws, env={"STARK_SMALL": "1"})
    out = r.stdout + r.stderr
    assert r.returncode == exit_codes.USAGE and "TASK_ERROR" in r.stdout, out
    assert "softmax.harness.py, line 6: def reference; get_inputs() gives 2 inputs" in r.stderr, out
    assert "task error: task error" not in out and "broken: task error" not in out and "Traceback" not in out, out


TOO_BIG = BROKEN_REFERENCE.replace("(x * 2).view(3, -1, 7)", "x + torch.empty(1 << 46, 1 << 4)[:1, :1].sum()")


def test_a_task_too_large_for_this_machine_is_a_task_error_with_the_fix(ws):
    """A reference whose allocation fails (here 4 PiB; on the CPU the judge's own memory is capped at 3/4 of
    RAM, so a real full-size task fails the same way instead of waking the kernel's OOM killer) is the
    task's problem, said with the fix, not a crashed judge blamed on your kernel."""
    (ws / "big.py").write_text(TOO_BIG)
    r = stark("eval", "big.py", cwd=ws)
    out = r.stdout + r.stderr
    assert r.returncode == exit_codes.USAGE and "TASK_ERROR" in r.stdout, out
    assert "do not fit this machine's memory" in r.stderr and "STARK_SMALL=1" in r.stderr, out
    assert "big.py, line 7" in r.stderr and "Traceback" not in out and "SIGKILL" not in out, out


def test_the_store_is_found_beside_the_task_from_any_folder(ws, tmp_path_factory):
    for f in ("swish_add.py", "swish_add.harness.py"):
        shutil.copy(SAMPLES / "mistuned" / f, ws / f)
    r = stark("optimize", "swish_add.py", "--budget", "1", "--concurrency", "1", cwd=ws, env={"STARK_SMALL": "1"})
    assert r.returncode in (exit_codes.OK, exit_codes.NO_IMPROVEMENT), r.stdout + r.stderr
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    r = stark("show", str(ws / "swish_add.py"), cwd=elsewhere)
    assert r.returncode == exit_codes.OK and "run optimize first" not in r.stdout + r.stderr, r.stdout + r.stderr
    assert not (elsewhere / ".stark").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through read-only modes")
def test_a_read_only_workspace_is_refused_with_the_fix(ws, tmp_path_factory):
    for f in ("swish_add.py", "swish_add.harness.py"):
        shutil.copy(SAMPLES / "mistuned" / f, ws / f)
    out = tmp_path_factory.mktemp("out")
    os.chmod(ws, 0o555)
    try:
        r = stark("optimize", "swish_add.py", "--budget", "1", "--out", str(out / "best.py"), cwd=ws)
    finally:
        os.chmod(ws, 0o755)
    refused(r, "use --store DIR")


def test_an_unwritable_store_is_refused_with_the_fix(ws):
    for f in ("swish_add.py", "swish_add.harness.py"):
        shutil.copy(SAMPLES / "mistuned" / f, ws / f)
    (ws / "blocked").write_text("a file where the store's folder would go")
    r = stark("optimize", "swish_add.py", "--budget", "1", "--store", str(ws / "blocked" / "store"), cwd=ws)
    refused(r, "use --store DIR")


@pytest.mark.parametrize("args,words", [(["eval", "k.py", "--atol", "-1"], "--atol"),
                                        (["optimize", "k.py", "--base-url", "notaurl"], "--base-url")])
def test_bad_numbers_and_urls_are_refused_up_front(ws, args, words):
    (ws / "k.py").write_text(BROKEN_REFERENCE)
    r = stark(*args, cwd=ws)
    assert r.returncode == exit_codes.USAGE and words in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_eval_timeout_is_one_hard_number_for_the_whole_evaluation(ws):
    """`--timeout 4` on a candidate that takes 3 s a call: the evaluation ends near 4 s (not at the phases' own
    limits, 60 s a load and 120 s a run), says it was --timeout's limit, and no empty '0/0 trials' line."""
    import time as _time

    shutil.copy(ROOT / "tests/data/evaluator/add_task.py", ws / "add_task.py")
    shutil.copy(ROOT / "tests/data/attacks/slow_calls.py", ws / "slow_calls.py")
    t0 = _time.monotonic()
    r = stark("eval", "add_task.py", "slow_calls.py", "--timeout", "4", cwd=ws, env={"STARK_SMALL": "1"})
    spent = _time.monotonic() - t0
    out = r.stdout + r.stderr
    assert r.returncode == exit_codes.FAILED and "TIMEOUT" in out and "--timeout" in out and "4 s" in out, out
    assert "0/0 trials" not in out and "atol None" not in out and "Traceback" not in out, out
    assert spent < 4 + 60, out  # the cap, its grace and stark's own start on a loaded machine; 240 s before


def test_cache_dir_with_a_cluster_is_refused_not_ignored(ws):
    for f in ("swish_add.py", "swish_add.harness.py"):
        shutil.copy(SAMPLES / "mistuned" / f, ws / f)
    r = stark("optimize", "swish_add.py", "--cluster", "auto", "--cache-dir", str(ws / "c"), cwd=ws,
              env={"STARK_SMALL": "1"})
    refused(r, "--cache-dir", "--cluster", "STARK_CACHE_DIR")


def test_more_trials_than_fit_the_time_limit_are_cut_at_it_and_say_which_flags_fit_them(ws):
    """`--trials 100000` ran past the evaluation's time limit; now the limit holds and the one line names the
    trials that ran, --trials and --timeout (docs/EVALUATOR.md)."""
    for f in ("swish_add.py", "swish_add.harness.py"):
        shutil.copy(SAMPLES / "mistuned" / f, ws / f)
    r = stark("eval", "swish_add.py", "--trials", "100000", "--timeout", "8", cwd=ws, env={"STARK_SMALL": "1"})
    out = r.stdout + r.stderr
    assert r.returncode == exit_codes.FAILED and "TIMEOUT" in r.stdout, out
    line = r.stdout.splitlines()[0]
    assert re.search(r"the trials: the evaluation's time limit \(8 s\) passed after \d+ of the 100000 trials asked "
                     r"for \((it|all \d+) passed\): ask fewer with --trials, or give more time with --timeout", line), out
    assert "Traceback" not in out, out
